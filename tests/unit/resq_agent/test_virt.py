import threading

from resq_agent import virt
from tests import base
from tests.fixtures import libvirt as libvirt_fixture

U1 = 'aaaaaaaa-0000-0000-0000-000000000001'
U2 = 'aaaaaaaa-0000-0000-0000-000000000002'


class ParseTest(base.TestCase):

    def test_nova_metadata(self):
        inst = virt.parse_domain(libvirt_fixture.nova_domain_xml(
            U1, (4, 5), ways=3, packet_bytes=64))
        self.assertEqual(U1, inst.uuid)
        self.assertEqual('resq.small', inst.flavor)
        self.assertEqual((4, 5), inst.cpus)
        self.assertEqual({0: (4,), 1: (5,)}, inst.vcpu_pins)
        self.assertEqual(64, inst.packet_bytes)
        self.assertEqual(3, inst.llc_ways)

    def test_not_nova_or_not_pinned(self):
        self.assertIsNone(virt.parse_domain(
            "<domain type='test'><name>x</name><uuid>%s</uuid></domain>"
            % U1))
        inst = virt.parse_domain(libvirt_fixture.nova_domain_xml(
            U1, (4, 5), pinned=False))
        self.assertEqual((), inst.cpus)
        self.assertIsNone(inst.packet_bytes)
        self.assertIsNone(inst.llc_ways)

    def test_cachetune_edit(self):
        xml = libvirt_fixture.nova_domain_xml(U1, (4, 5), ways=3)
        new = virt.with_cachetune(xml, [0, 1], 1, 3 * 1536 * 1024)
        self.assertEqual([((0, 1), 1, 3 * 1536 * 1024)],
                         virt.cachetune_of(new))
        self.assertIn("level=\"3\"", new)
        # Replaces, not appends; keeps the pins and the Nova metadata.
        again = virt.with_cachetune(new, [0, 1], 0, 1536 * 1024, cdp=True)
        self.assertEqual([((0, 1), 0, 1536 * 1024)],
                         virt.cachetune_of(again))
        self.assertIn('type="code"', again)
        self.assertEqual((4, 5), virt.parse_domain(again).cpus)
        self.assertEqual([], virt.cachetune_of(virt.with_cachetune(
            again, [0, 1], 0, 0)))


class HypervisorTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.doms = self.useFixture(libvirt_fixture.NovaDomains())
        self.hyp = virt.Hypervisor(libvirt_fixture.URI)

    def test_instances_and_cachetune(self):
        self.doms.add(U1, (2, 3), ways=4)
        self.doms.add(U2, (9,), ways=2, start=False)
        found = {i.uuid: i for i in self.hyp.instances()}
        # The driver's own 'test' domain has no Nova metadata; U2 is off.
        self.assertEqual([U1], list(found))
        self.assertIsNone(self.hyp.instance(U2))
        self.assertIsNone(self.hyp.instance(
            'ffffffff-0000-0000-0000-000000000000'))
        self.assertTrue(self.hyp.set_cachetune(U1, [0, 1], 0, 4 << 20))
        self.assertFalse(self.hyp.set_cachetune(U1, [0, 1], 0, 4 << 20))
        self.assertEqual([((0, 1), 0, 4 << 20)],
                         virt.cachetune_of(self.doms.xml(U1)))
        # The running domain is untouched: libvirt cannot change it live.
        self.assertEqual([], virt.cachetune_of(self.doms.xml(U1, False)))

    def test_lifecycle_events(self):
        seen = []
        started = threading.Event()

        def callback(uuid, event):
            seen.append((uuid, event))
            if event == 'stopped':
                started.set()

        watcher = virt.EventWatcher(libvirt_fixture.URI, callback)
        watcher.start()
        self.addCleanup(watcher.stop)
        self.doms.add(U1, (2,), ways=1)
        self.doms.remove(U1)
        self.assertTrue(started.wait(30))
        events = [e for u, e in seen if u == U1]
        self.assertEqual(['defined', 'started', 'stopped'], events[:3])
