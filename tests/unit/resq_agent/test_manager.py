"""AgentManager on a resctrl tree, libvirt's test driver, no Placement.

Without Placement the agent takes the flavor's LLC request in the cache
domain of the pinned CPUs (its fallback while Placement is away); the
functional tests cover Placement's allocations.
"""

import os
import time
from unittest import mock

import fixtures

from resq_agent import discovery
from resq_agent import enforcer
from resq_agent import manager
from resq_agent import monitor
import resq_agent.privsep.resctrl
from resq_agent import virt
from resq_common import cbm
from resq_common import resctrl
from tests import base
from tests.fixtures import libvirt as libvirt_fixture
from tests.fixtures import resctrl as resctrl_fixture
from tests.fixtures import sysfs as sysfs_fixture

A = 'bbbbbbbb-0000-0000-0000-00000000000a'
B = 'bbbbbbbb-0000-0000-0000-00000000000b'
C = 'bbbbbbbb-0000-0000-0000-00000000000c'
DUAL = {0: tuple(range(0, 8)), 1: tuple(range(8, 16))}


class Crash(Exception):
    """Stands for the agent dying between two privileged writes."""


class ManagerTestBase(base.TestCase):

    ways = 20
    cpus = DUAL

    def setUp(self):
        super().setUp()
        self.useFixture(base.PrivsepInProcess(self.conf))
        self.logs = self.useFixture(fixtures.FakeLogger(level='INFO'))
        self.sysfs = self.useFixture(sysfs_fixture.SysfsTree(
            domains=self.cpus, ways=self.ways))
        self.tree = self.useFixture(resctrl_fixture.ResctrlTree(
            ways=self.ways, domains=tuple(self.cpus),
            foreign=('other-app',)))
        self.flags('resq_agent', resctrl_root=self.tree.root)
        self.doms = self.useFixture(libvirt_fixture.NovaDomains())
        self.rt = resctrl.Resctrl(self.tree.root)

    def make(self, **kw):
        topo = discovery.discover(self.tree.root, self.sysfs.root)
        return manager.AgentManager(
            self.conf, topo, enforcer.ResctrlEnforcer(self.tree.root),
            virt.Hypervisor(libvirt_fixture.URI),
            monitor=monitor.Monitor(self.tree.root, 0), **kw)

    def masks(self):
        result = {}
        for g in self.rt.owned_groups():
            try:
                result[g[5:]] = self.rt.read_schemata(g)['L3']
            except (FileNotFoundError, KeyError):
                # Being written by the worker right now (a copied tree has
                # no schemata until the first write, then a partial one).
                pass
        return result

    def default(self):
        return resctrl.parse_schemata(self.tree.read('schemata'))['L3']


class ReconcileTest(ManagerTestBase):

    def test_dual_socket_reconcile(self):
        self.doms.add(A, (1, 2), ways=4, packet_bytes=64)
        self.doms.add(B, (9,), ways=6)
        hooked = []
        mgr = self.make(post_apply_hooks=[
            lambda topo, assigns: hooked.append(assigns)])
        summary = mgr.reconcile()
        self.assertEqual(2, summary['instances'], summary)
        masks = self.masks()
        self.assertEqual(4, cbm.bits(masks[A][0]))
        self.assertEqual(6, cbm.bits(masks[B][1]))
        self.assertEqual('1,2', self.rt.read_cpus('resq-' + A))
        self.assertEqual(0, self.default()[0] & masks[A][0])
        self.assertEqual(0, self.default()[1] & masks[B][1])
        self.assertEqual(self.tree.default_schemata,
                         self.tree.read('other-app', 'schemata'))
        # libvirt's persistent definition carries the cachetune.
        way = 30720 * 1024 // 20
        self.assertEqual([((0, 1), 0, 4 * way)],
                         virt.cachetune_of(self.doms.xml(A)))
        self.assertEqual({A: 64, B: None},
                         {a.instance_uuid: a.packet_bytes
                          for a in hooked[-1]})
        status = mgr.status()
        self.assertEqual({A, B}, {i['uuid'] for i in status['instances']})
        # Idempotent: nothing written the second time.
        self.assertEqual([], mgr.reconcile()['written'])

    def test_gone_instance_loses_its_group(self):
        self.doms.add(A, (1,), ways=4)
        self.doms.add(B, (2,), ways=4)
        mgr = self.make()
        mgr.reconcile()
        self.doms.remove(A)
        summary = mgr.reconcile()
        self.assertEqual(['resq-' + A], summary['removed'])
        self.assertEqual([B], list(self.masks()))
        self.assertIn('other-app', self.rt.groups())

    def test_bad_instances_are_refused_with_a_reason(self):
        self.doms.add(A, (1,), ways=10)
        self.doms.add(B, (2,), ways=10)          # over-commit: 17 ways
        self.doms.add(C, (3, 4), ways=2, pinned=False)
        mgr = self.make()
        first = dict((r['uuid'], r['reason'])
                     for r in mgr.reconcile()['refused'])
        self.assertIn('over-commit', first[B])
        self.assertIn('no pinned CPUs', first[C])
        self.assertEqual([A], list(self.masks()))
        self.assertIn('Not partitioning instance %s' % B, self.logs.output)
        status = mgr.status()
        self.assertEqual({B, C}, {r['uuid'] for r in status['refused']})

    def test_foreign_and_half_created_groups(self):
        os.mkdir(os.path.join(self.tree.root, 'resq-x'))
        os.mkdir(os.path.join(self.tree.root, 'resq-' + A))
        self.doms.add(A, (1,), ways=3)
        self.make().reconcile()
        self.assertEqual(sorted(['other-app', 'resq-' + A]),
                         self.rt.groups())
        self.assertEqual(3, cbm.bits(self.masks()[A][0]))

    def test_no_resctrl(self):
        self.doms.add(A, (1,), ways=3)
        topo = discovery.discover(os.path.join(self.tmp, 'none'),
                                  self.sysfs.root)
        self.flags('resq_agent', resctrl_root=self.tmp)
        mgr = manager.AgentManager(
            self.conf, topo, enforcer.ResctrlEnforcer(self.tmp),
            virt.Hypervisor(libvirt_fixture.URI))
        summary = mgr.reconcile()
        self.assertEqual([], summary['errors'])
        self.assertIn('run unpartitioned', self.logs.output)
        self.assertFalse(mgr.status()['resctrl_available'])

    def test_crash_between_any_two_writes_leaks_nothing(self):
        self.doms.add(A, (1,), ways=4)
        self.doms.add(B, (9,), ways=4)
        self.doms.add(C, (2,), ways=2)
        self.make().reconcile()
        self.doms.remove(C)
        self.doms.add('bbbbbbbb-0000-0000-0000-00000000000d', (3,), ways=5)
        mod = resq_agent.privsep.resctrl
        names = ('create_group', 'write_l3_masks', 'assign_cpus',
                 'remove_group', 'write_default_l3_masks')
        crashed_at = 0
        for n in range(1, 30):
            calls = []

            def counted(name, fn):
                def wrapper(*args):
                    calls.append(name)
                    if len(calls) == n:
                        raise Crash('killed at write %d' % n)
                    return fn(*args)
                return wrapper

            with mock.patch.multiple(mod, **{
                    name: counted(name, getattr(mod, name))
                    for name in names}):
                try:
                    self.make().reconcile()
                except Crash:
                    crashed_at = n
                    continue
            break
        self.assertGreater(crashed_at, 2)
        # A fresh start repairs everything.
        self.make().reconcile()
        masks = self.masks()
        self.assertEqual({A, B, 'bbbbbbbb-0000-0000-0000-00000000000d'},
                         set(masks))
        used0 = 0
        for uuid, ways, dom in ((A, 4, 0), (B, 4, 1),
                                ('bbbbbbbb-0000-0000-0000-00000000000d', 5,
                                 0)):
            self.assertEqual(ways, cbm.bits(masks[uuid][dom]))
            if dom == 0:
                self.assertEqual(0, used0 & masks[uuid][0])
                used0 |= masks[uuid][0]
        self.assertEqual(0, used0 & self.default()[0])
        self.assertEqual(['other-app'] + sorted('resq-' + u for u in masks),
                         self.rt.groups())


class SingleSocket11WayTest(ManagerTestBase):

    ways = 11
    cpus = {0: (0, 1, 2, 3)}

    def test_fill_the_cache(self):
        # 11 ways - 2 DDIO - 1 default: 8 for instances.
        self.doms.add(A, (1,), ways=5)
        self.doms.add(B, (2,), ways=3)
        self.doms.add(C, (3,), ways=1)
        mgr = self.make()
        summary = mgr.reconcile()
        self.assertEqual([C], [r['uuid'] for r in summary['refused']])
        self.assertEqual(0x700, self.default()[0])


class EventTest(ManagerTestBase):

    def test_libvirt_events_drive_enforcement(self):
        mgr = self.make()
        mgr.reconcile()
        mgr.start(watch_libvirt=True)
        self.addCleanup(mgr.stop)
        self.doms.add(A, (1, 2), ways=3)
        self.wait_for(lambda: A in self.masks())
        self.assertEqual(3, cbm.bits(self.masks()[A][0]))
        self.doms.remove(A)
        self.wait_for(lambda: A not in self.masks())

    def test_instance_changed_queues(self):
        mgr = self.make()
        mgr.start(watch_libvirt=False)
        self.addCleanup(mgr.stop)
        self.doms.add(A, (1,), ways=2)
        mgr.instance_changed(A.upper(), 'instance.create.end')
        mgr.wait_idle()
        self.assertIn(A, self.masks())

    def test_event_ahead_of_the_state_is_rechecked(self):
        mgr = self.make()
        mgr.start(watch_libvirt=False)
        self.addCleanup(mgr.stop)
        self.doms.add(A, (1,), ways=2)
        real = mgr.hypervisor.instance
        answers = [None]

        def late(uuid):
            # libvirt still says "not running" at the first look.
            return answers.pop() if answers else real(uuid)

        with mock.patch.object(mgr.hypervisor, 'instance', late):
            mgr.instance_changed(A, 'started')
            self.wait_for(lambda: A in self.masks())

    def wait_for(self, predicate, timeout=30):
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                self.fail('condition not reached; log:\n%s'
                          % self.logs.output)
            time.sleep(0.02)


class MonitorTest(ManagerTestBase):

    def test_status_shows_occupancy_and_bandwidth(self):
        clock = iter([100.0, 102.0]).__next__
        self.doms.add(A, (1,), ways=2)
        mgr = self.make()
        mgr.monitor = monitor.Monitor(self.tree.root, 0, clock=clock)
        mgr.reconcile()
        base_dir = os.path.join(self.tree.root, 'resq-' + A, 'mon_data',
                                'mon_L3_00')
        os.makedirs(base_dir)

        def put(occ, total, local):
            for name, value in (('llc_occupancy', occ),
                                ('mbm_total_bytes', total),
                                ('mbm_local_bytes', local)):
                with open(os.path.join(base_dir, name), 'w') as f:
                    f.write('%d\n' % value)

        put(1 << 20, 1000, 500)
        first = mgr.status()['instances'][0]
        self.assertEqual(1 << 20, first['llc_occupancy_bytes'])
        self.assertIsNone(first['mbm_total_bytes_per_s'])
        put(2 << 20, 5000, 2500)
        second = mgr.status()['instances'][0]
        self.assertEqual(2 << 20, second['llc_occupancy_bytes'])
        self.assertEqual(2000.0, second['mbm_total_bytes_per_s'])
        self.assertEqual(1000.0, second['mbm_local_bytes_per_s'])
