"""The agent on a compute host that looks like a CAT host, with real guests.

libvirtd runs in a private mount namespace over the FUSE resctrl file
system and the fake cache's sysfs (:mod:`resq_fake.host`); guests are
real QEMU processes (KVM where ``/dev/kvm`` opens). The agent is the real
AgentManager on libvirt's lifecycle events, writing through the mount, so
every ``mkdir`` and mask passes the fake kernel's rules as it would pass
the kernel's. Nothing here knows the file system is not the kernel's.
"""

import os
import time
import xml.etree.ElementTree as ET

import fixtures
import libvirt
from prometheus_client import parser
import requests

from resq_agent import discovery
from resq_agent import enforcer
from resq_agent import manager
from resq_agent import metrics as agent_metrics
from resq_agent import monitor
from resq_agent import virt
from resq_common import cbm
from resq_common import metrics
from resq_common import resctrl
from tests import base
from tests.fixtures import compute_host


class FakeHostTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.host = self.useFixture(compute_host.ComputeHost())
        if self.host.accel != 'kvm':
            self.addDetail('accel', fixtures.content.text_content(
                'no /dev/kvm here: the guests run on QEMU TCG'))
        self.root = self.host.paths.resctrl
        self.useFixture(base.PrivsepInProcess(self.conf))
        self.flags('resq_agent', resctrl_root=self.root,
                   sysfs_root=self.host.paths.sysfs, state_dir=self.tmp)
        self.logs = self.useFixture(fixtures.FakeLogger(level='INFO'))
        self.rt = resctrl.Resctrl(self.root)

    def make(self):
        topo = discovery.discover(self.root, self.host.paths.sysfs)
        return manager.AgentManager(
            self.conf, topo, enforcer.ResctrlEnforcer(self.root),
            virt.Hypervisor(self.host.uri),
            monitor=monitor.Monitor(self.root, 0))

    def wait_for(self, predicate, what, seconds=60):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if predicate():
                return
            time.sleep(0.2)
        self.fail('%s never happened:\n%s' % (what, self.logs.output))

    def group_of(self, uid):
        for g in self.rt.owned_groups():
            if g == 'resq-' + uid:
                return g
            if g.startswith('resq-cos') and 'resq-' + uid in (
                    self.rt.mon_groups(g)):
                return g
        return None

    def read(self, *parts):
        with open(os.path.join(self.root, *parts)) as f:
            return f.read()

    def test_libvirt_sees_a_cat_host(self):
        caps = ET.fromstring(self.host.conn.getCapabilities())
        bank = caps.find('./host/cache/bank')
        self.assertEqual(('3', 'both', '0-1'), (
            bank.get('level'), bank.get('type'), bank.get('cpus')))
        control = bank.find('control')
        self.assertEqual(str(self.host.num_closids), control.get('maxAllocs'))
        # 20 ways of 2304 KiB, as the fake cache's sysfs and cbm_mask say.
        self.assertEqual(('2304', 'KiB'),
                         (control.get('granularity'), control.get('unit')))
        self.assertEqual(('45', 'MiB'), (bank.get('size'), bank.get('unit')))
        self.assertIsNotNone(caps.find('./host/cache/monitor'))

    def test_a_guest_is_partitioned_then_released(self):
        mgr = self.make()
        mgr.reconcile()
        mgr.start(watch_libvirt=True)
        self.addCleanup(mgr.stop)
        uid, dom = self.host.boot((1,), ways=4, packet_bytes=64)
        self.assertTrue(dom.isActive())
        self.wait_for(lambda: self.group_of(uid), 'the guest\'s group')
        group = self.group_of(uid)
        mask = resctrl.parse_schemata(self.read(group, 'schemata'))['L3'][0]
        self.assertEqual(4, cbm.bits(mask))
        self.assertEqual('1\n', self.read(group, 'cpus_list'))
        # The kernel's side moved CPU 1 out of the default group, and the
        # default group no longer shares the guest's ways.
        self.assertEqual('0\n', self.read('cpus_list'))
        default = resctrl.parse_schemata(self.read('schemata'))['L3'][0]
        self.assertEqual(0, default & mask)
        # The guest is a real QEMU process, still running.
        self.assertEqual(1, dom.info()[0])
        dom.destroy()
        self.wait_for(lambda: self.group_of(uid) is None,
                      'the release of the guest\'s ways')
        self.assertEqual('0-1\n', self.read('cpus_list'))

    def test_a_guests_cache_occupancy_reaches_the_agents_metrics(self):
        mgr = self.make()
        mgr.start(watch_libvirt=True)
        self.addCleanup(mgr.stop)
        uid, _dom = self.host.boot((1,), ways=4)
        self.wait_for(lambda: self.group_of(uid), 'the guest\'s group')
        group = self.group_of(uid)
        mon = (os.path.join(group, 'mon_groups', 'resq-' + uid)
               if group.startswith('resq-cos') else group)
        # What the kernel would count for the guest's RMID: written into
        # the backing tree, read by the agent through the mount.
        counter = os.path.join(self.host.paths.backing, mon, 'mon_data',
                               'mon_L3_00', 'llc_occupancy')
        self.assertTrue(os.path.exists(counter), counter)
        with open(counter, 'w') as f:
            f.write('7340032\n')
        server = metrics.serve('127.0.0.1:0', agent_metrics.AgentCollector(
            mgr))
        self.addCleanup(server.shutdown)
        url = 'http://127.0.0.1:%d/metrics' % server.server_address[1]

        def occupancy():
            mgr.reconcile()
            for family in parser.text_string_to_metric_families(
                    requests.get(url, timeout=10).text):
                for sample in family.samples:
                    if (sample.name == 'resq_instance_llc_occupancy_bytes'
                            and sample.labels.get('server_uuid') == uid):
                        return sample.value
            return None

        self.wait_for(lambda: occupancy() == 7340032,
                      'the guest\'s occupancy on /metrics')

    def test_a_restarted_agent_adopts_running_guests_and_writes_nothing(self):
        mgr = self.make()
        mgr.start(watch_libvirt=True)
        uid, _dom = self.host.boot((1,), ways=6)
        self.wait_for(lambda: self.group_of(uid), 'the guest\'s group')
        mgr.stop()
        group = self.group_of(uid)
        backing = self.host.paths.backing

        def written():
            """When the kernel's side last took each file's write."""
            return {path: os.stat(os.path.join(backing, path)).st_mtime_ns
                    for path in (os.path.join(group, 'schemata'),
                                 os.path.join(group, 'cpus_list'),
                                 'schemata')}

        before = written()
        summary = self.make().reconcile()
        self.assertEqual([], summary['written'], summary)
        self.assertEqual(before, written())
        self.assertEqual(group, self.group_of(uid))

    def test_a_guest_without_resq_specs_is_untouched(self):
        mgr = self.make()
        mgr.start(watch_libvirt=True)
        self.addCleanup(mgr.stop)
        plain, _ = self.host.boot((0,), pinned=False)
        uid, _ = self.host.boot((1,), ways=2)
        self.wait_for(lambda: self.group_of(uid), 'the ResQ guest\'s group')
        self.assertIsNone(self.group_of(plain))
        self.assertEqual([self.group_of(uid)], self.rt.owned_groups())


class LiveMigrationTest(base.TestCase):
    """Two compute hosts, each its own libvirtd, host UUID and resctrl.

    The guest moves by libvirt's own live migration (QEMU to QEMU over
    127.0.0.1), as nova-compute's libvirt driver asks for it; each host's
    agent then finds what it must enforce: the destination partitions the
    guest, the source releases it. The agents reconcile in turn (one
    process holds one privileged context, which reads one resctrl root).
    """

    def setUp(self):
        super().setUp()
        self.src = self.useFixture(compute_host.ComputeHost())
        self.dst = self.useFixture(compute_host.ComputeHost())
        self.useFixture(base.PrivsepInProcess(self.conf))
        self.logs = self.useFixture(fixtures.FakeLogger(level='INFO'))

    def reconcile(self, host):
        self.flags('resq_agent', resctrl_root=host.paths.resctrl,
                   sysfs_root=host.paths.sysfs, state_dir=host.state)
        topo = discovery.discover(host.paths.resctrl, host.paths.sysfs)
        mgr = manager.AgentManager(
            self.conf, topo, enforcer.ResctrlEnforcer(host.paths.resctrl),
            virt.Hypervisor(host.uri),
            monitor=monitor.Monitor(host.paths.resctrl, 0))
        return mgr.reconcile()

    def groups(self, host):
        rt = resctrl.Resctrl(host.paths.resctrl)
        return {g: rt.mon_groups(g) if g.startswith('resq-cos') else []
                for g in rt.owned_groups()}

    def test_the_partition_moves_with_the_guest(self):
        uid, dom = self.src.boot((1,), ways=4)
        self.addCleanup(self.dst._remove, uid)
        self.reconcile(self.src)
        [group] = self.groups(self.src)
        self.assertIn('resq-' + uid, [group] + self.groups(self.src)[group])
        moved = dom.migrate(
            self.dst.conn, libvirt.VIR_MIGRATE_LIVE
            | libvirt.VIR_MIGRATE_PERSIST_DEST
            | libvirt.VIR_MIGRATE_UNDEFINE_SOURCE,
            None, 'tcp://127.0.0.1', 0)
        self.assertTrue(moved.isActive())
        self.assertEqual([], self.src.conn.listAllDomains())
        summary = self.reconcile(self.dst)
        self.assertEqual(1, summary['instances'], summary)
        [group] = self.groups(self.dst)
        rt = resctrl.Resctrl(self.dst.paths.resctrl)
        self.assertEqual(4, cbm.bits(rt.read_schemata(group)['L3'][0]))
        self.assertEqual((1,), tuple(resctrl.parse_cpu_list(
            rt.read_cpus(group))))
        # The source's agent releases what the guest held there.
        self.reconcile(self.src)
        self.assertEqual({}, self.groups(self.src))
        with open(os.path.join(self.src.paths.resctrl, 'cpus_list')) as f:
            self.assertEqual('0-1\n', f.read())


class GuestCpuTimeTest(base.TestCase):
    """NFVnice's measured cost per packet starts from this reading."""

    def test_a_running_guests_cpu_time_grows(self):
        host = self.useFixture(compute_host.ComputeHost())
        uid, dom = host.boot((1,), ways=4, packet_bytes=64)
        hyp = virt.Hypervisor(host.uri)
        first = hyp.cpu_times([uid, 'f0000000-0000-0000-0000-00000000dead'])
        self.assertEqual([uid], list(first))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            time.sleep(0.5)
            if hyp.cpu_times([uid])[uid] > first[uid]:
                break
        else:
            self.fail('the guest\'s CPU time never grew')
        dom.destroy()
        self.assertEqual({}, hyp.cpu_times([uid]))
