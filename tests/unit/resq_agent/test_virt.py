import threading
from unittest import mock

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
        # An inactive definition has no id; a running domain's XML has.
        self.assertIsNone(inst.domain_id)
        running = libvirt_fixture.nova_domain_xml(U1, (4, 5)).replace(
            '<domain ', "<domain id='12' ", 1)
        self.assertEqual(12, virt.parse_domain(running).domain_id)

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
        self.doms.conn.defineXML(virt.with_cachetune(
            self.doms.xml(U1), [0, 1], 0, 4 << 20))
        self.assertTrue(self.hyp.drop_cachetune(U1))
        self.assertFalse(self.hyp.drop_cachetune(U1))
        self.assertEqual([], virt.cachetune_of(self.doms.xml(U1)))

    def test_drop_cachetune_never_overwrites_a_concurrent_change(self):
        self.doms.add(U1, (2, 3), ways=4)
        self.doms.conn.defineXML(virt.with_cachetune(
            self.doms.xml(U1), [0, 1], 0, 4 << 20))
        real = self.hyp._connection()
        dom = real.lookupByUUIDString(U1)
        reads = []

        class Dom:
            def __getattr__(self, name):
                return getattr(dom, name)

            def XMLDesc(self, flags=0):
                reads.append(flags)
                if len(reads) == 2:
                    # Nova redefines the domain between our read and write.
                    xml = dom.XMLDesc(flags)
                    real.defineXML(xml.replace('<memory unit=\'KiB\'>'
                                               '1048576</memory>',
                                               '<memory unit=\'KiB\'>'
                                               '2097152</memory>'))
                return dom.XMLDesc(flags)

        class Conn:
            def __getattr__(self, name):
                return getattr(real, name)

            def lookupByUUIDString(self, uuid):
                return Dom()

        with mock.patch.object(self.hyp, '_connection', return_value=Conn()):
            self.assertTrue(self.hyp.drop_cachetune(U1))
        xml = self.doms.xml(U1)
        self.assertEqual([], virt.cachetune_of(xml))
        # Nova's change survived: the edit started over from it.
        self.assertIn("<memory unit='KiB'>2097152</memory>", xml)
        self.assertGreater(len(reads), 3)

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
