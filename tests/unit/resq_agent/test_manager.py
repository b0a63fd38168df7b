"""AgentManager on a resctrl tree, libvirt's test driver, no Placement.

Without Placement the agent takes the flavor's LLC request in the cache
domain of the pinned CPUs (its fallback while Placement is away); the
functional tests cover Placement's allocations.
"""

import os
import threading
import time
from unittest import mock

import fixtures
import libvirt
from oslo_privsep import comm

from resq_agent import discovery
from resq_agent import enforcer
from resq_agent import manager
from resq_agent import monitor
import resq_agent.privsep
import resq_agent.privsep.resctrl
from resq_agent import virt
from resq_common import cbm
from resq_common.clients import placement as placement_client
from resq_common import resctrl
from resq_common import resctrl_writer
from tests import base
from tests.fixtures import libvirt as libvirt_fixture
from tests.fixtures import resctrl as resctrl_fixture
from tests.fixtures import sysfs as sysfs_fixture

A = 'bbbbbbbb-0000-0000-0000-00000000000a'
B = 'bbbbbbbb-0000-0000-0000-00000000000b'
C = 'bbbbbbbb-0000-0000-0000-00000000000c'
DUAL = {0: tuple(range(0, 8)), 1: tuple(range(8, 16))}


class Crash(BaseException):
    """Stands for the agent (or its daemon) dying between two writes."""


class ManagerTestBase(base.TestCase):

    ways = 20
    cpus = DUAL
    # The resctrl tree: L3 monitoring, RMIDs, the fake kernel's rules.
    monitoring = True
    num_rmids = 224
    # The fake kernel's rules (CPUs in one group, RMIDs, classes, and
    # monitoring groups where instances share a class).
    kernel = True

    def setUp(self):
        super().setUp()
        self.useFixture(base.PrivsepInProcess(self.conf))
        self.logs = self.useFixture(fixtures.FakeLogger(level='INFO'))
        self.sysfs = self.useFixture(sysfs_fixture.SysfsTree(
            domains=self.cpus, ways=self.ways))
        self.tree = self.useFixture(resctrl_fixture.ResctrlTree(
            ways=self.ways, domains=tuple(self.cpus),
            foreign=('other-app',), monitoring=self.monitoring,
            num_rmids=self.num_rmids, kernel=self.kernel))
        self.flags('resq_agent', resctrl_root=self.tree.root)
        self.doms = self.useFixture(libvirt_fixture.NovaDomains())
        self.rt = resctrl.Resctrl(self.tree.root)

    def make(self, **kw):
        topo = discovery.discover(self.tree.root, self.sysfs.root)
        return manager.AgentManager(
            self.conf, topo, enforcer.ResctrlEnforcer(self.tree.root),
            virt.Hypervisor(libvirt_fixture.URI),
            monitor=monitor.Monitor(self.tree.root, 0), **kw)

    def groups_of(self):
        """``{instance uuid: resctrl group}`` as the tree says.

        An instance in a shared class (``resq-cos<k>``) is found by its
        monitoring group there, one in a group of its own by the group's
        name.
        """
        found = {}
        for g in self.rt.owned_groups():
            if not g.startswith('resq-cos'):
                found[g[5:]] = g
                continue
            for mon in self.rt.mon_groups(g):
                found[mon[5:]] = g
        return found

    def group(self, uuid):
        return self.groups_of()[uuid]

    def masks(self):
        """``{instance uuid: {domain: mask}}`` of the group holding each."""
        result = {}
        for uuid, g in self.groups_of().items():
            try:
                result[uuid] = self.rt.read_schemata(g)['L3']
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
        # One class of service serves both: A's ways in domain 0, B's in
        # domain 1; each is monitored on its own.
        self.assertEqual(['other-app', 'resq-cos1'], self.rt.groups())
        self.assertEqual((1, 2, 9), resctrl.parse_cpu_list(
            self.rt.read_cpus('resq-cos1')))
        self.assertEqual((1, 2), tuple(
            self.rt.read_mon_cpus('resq-cos1', 'resq-' + A)))
        self.assertEqual((9,), tuple(
            self.rt.read_mon_cpus('resq-cos1', 'resq-' + B)))
        self.assertEqual(0, self.default()[0] & masks[A][0])
        self.assertEqual(0, self.default()[1] & masks[B][1])
        self.assertEqual(self.tree.default_schemata,
                         self.tree.read('other-app', 'schemata'))
        # One owner: the agent's group; no <cachetune> for libvirt to make
        # a second group from when the domain starts again.
        self.assertEqual([], virt.cachetune_of(self.doms.xml(A)))
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
        # Both in domain 0: a class each; A's goes with it.
        self.assertEqual(['resq-cos1'], summary['removed'])
        self.assertEqual([B], list(self.masks()))
        self.assertEqual('resq-cos2', self.group(B))
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
        # The half-made group of A's own is removed; A is in a class.
        self.assertEqual(['other-app', 'resq-cos1'], self.rt.groups())
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
        # The writes of a pass go as one batch: the crash is in the
        # privileged side's writer, between two of its writes.
        mod = resctrl_writer.Writer
        names = ('create_group', 'write_l3_masks', 'assign_cpus',
                 'remove_group', 'write_default_l3_masks',
                 'create_mon_group', 'remove_mon_group')
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
        # Two in domain 0, one in domain 1: two classes serve all three.
        self.assertEqual(['other-app', 'resq-cos1', 'resq-cos2'],
                         self.rt.groups())
        self.assertEqual(0, masks[A][0] & masks[
            'bbbbbbbb-0000-0000-0000-00000000000d'][0])


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
        # The default group keeps its one way and stays out of the I/O
        # ways (0x600), as ResQ keeps every core out of DDIO's share.
        self.assertEqual(0x100, self.default()[0])


class OneOwnerTest(ManagerTestBase):

    def test_domain_restart_keeps_the_agents_partition(self):
        # A definition with the <cachetune> an earlier release wrote.
        dom = self.doms.add(A, (1, 2), ways=3)
        xml = dom.XMLDesc(libvirt.VIR_DOMAIN_XML_INACTIVE)
        self.doms.conn.defineXML(virt.with_cachetune(xml, (0, 1), 0,
                                                     3 << 20))
        mgr = self.make()
        mgr.reconcile()
        self.assertEqual([], virt.cachetune_of(self.doms.xml(A)))
        self.assertIn('Removed <cachetune> from the libvirt definition',
                      self.logs.output)
        mask = self.masks()[A][0]
        mgr.start(watch_libvirt=True)
        self.addCleanup(mgr.stop)
        # The domain stops and starts again (a reboot from the host).
        dom = self.doms.conn.lookupByUUIDString(A)
        dom.destroy()
        dom.create()
        mgr.reconcile()
        self.assertEqual(mask, self.masks()[A][0])
        self.assertEqual((1, 2), tuple(self.rt.read_mon_cpus(
            self.group(A), 'resq-' + A)))
        self.assertEqual([], virt.cachetune_of(self.doms.xml(A)))


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

    def test_a_flood_is_dropped_counted_and_reconciled(self):
        self.flags('resq_agent', event_queue_size=16)
        mgr = self.make()
        threads = threading.active_count()
        self.doms.add(A, (1,), ways=2)
        # 2,000 forged events for unknown instances, the worker not
        # started yet: 16 queue, the rest are dropped and counted.
        for n in range(2000):
            mgr.instance_changed('00000000-0000-0000-0000-%012d' % n,
                                 'instance.create.end')
        self.assertEqual(threads, threading.active_count())
        self.assertEqual(1984, mgr.events_dropped)
        self.assertEqual(1984, mgr.status()['events_dropped'])
        self.assertIn('Instance events arrive faster than the agent '
                      'handles them (16 queued)', self.logs.output)
        self.assertEqual(1, self.logs.output.count('arrive faster'))
        calls = []
        real = mgr.reconcile

        def reconcile():
            calls.append(1)
            return real()

        with mock.patch.object(mgr, 'reconcile', reconcile):
            mgr.start(watch_libvirt=False)
            self.addCleanup(mgr.stop)
            mgr.wait_idle()
        # One reconcile instead of the dropped events; it found A.
        self.assertEqual([1], calls)
        self.assertIn(A, self.masks())
        # The agent's worker and the libvirt worker (a fixed one, whatever
        # the flood).
        self.assertEqual(threads + 2, threading.active_count())

    def test_rechecks_take_no_thread(self):
        mgr = self.make()
        mgr.start(watch_libvirt=False)
        self.addCleanup(mgr.stop)
        threads = threading.active_count()
        with mock.patch.object(mgr.hypervisor, 'instance',
                               lambda uuid: None):
            for n in range(200):
                mgr.instance_changed('00000000-0000-0000-0000-%012d' % n,
                                     'started')
            mgr.wait_idle()
            self.assertEqual(threads, threading.active_count())
            self.assertLessEqual(len(mgr._rechecks), 200)

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
        # Its own counters: its monitoring group in its class's group.
        base_dir = os.path.join(self.tree.root, 'resq-cos1', 'mon_groups',
                                'resq-' + A, 'mon_data', 'mon_L3_00')
        os.makedirs(base_dir, exist_ok=True)

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


def _libvirt_error(code, message):
    exc = libvirt.libvirtError(message)
    exc.err = (code, 0, message, 0, None, None, None, 0, 0)
    return exc


class _Dom:
    """A libvirt domain whose XMLDesc can be made to fail (injection)."""

    def __init__(self, dom, error=None, before=None):
        self._dom = dom
        self._error = error
        self._before = before

    def __getattr__(self, name):
        return getattr(self._dom, name)

    def XMLDesc(self, flags=0):
        if self._before is not None:
            self._before()
        if self._error is not None:
            raise self._error
        return self._dom.XMLDesc(flags)


class ResilienceTest(ManagerTestBase):
    """Each failure costs only what it touches; the agent recovers alone."""

    def wait_for(self, predicate, timeout=60):
        EventTest.wait_for(self, predicate, timeout)

    def _listing(self, mgr, wrap):
        """Make mgr's libvirt listing hand out wrapped domains."""
        conn = mgr.hypervisor._connection()
        real = conn.listAllDomains

        class Conn:
            def __getattr__(self, name):
                return getattr(conn, name)

            def listAllDomains(self, flags=0):
                return [wrap(d) for d in real(flags)]

        return mock.patch.object(mgr.hypervisor, '_connection',
                                 return_value=Conn())

    def test_instance_deleted_between_listing_and_xmldesc(self):
        self.doms.add(A, (1,), ways=2)
        self.doms.add(B, (9,), ways=3)
        mgr = self.make()

        def wrap(dom):
            if dom.UUIDString() == B:
                # B goes away after libvirt listed it, before its XML.
                return _Dom(dom, before=lambda: self.doms.remove(B))
            return dom

        with self._listing(mgr, wrap):
            summary = mgr.reconcile()
        self.assertNotIn('error', summary)
        self.assertEqual([], summary['errors'])
        self.assertEqual([A], list(self.masks()))

    def test_unreadable_domain_keeps_its_partition(self):
        self.doms.add(A, (1,), ways=2)
        self.doms.add(B, (9,), ways=3)
        mgr = self.make()
        mgr.reconcile()
        self.assertEqual({A, B}, set(self.masks()))
        err = _libvirt_error(libvirt.VIR_ERR_INTERNAL_ERROR,
                             'internal error: monitor went away')

        def wrap(dom):
            return _Dom(dom, error=err) if dom.UUIDString() == B else dom

        self.doms.remove(A)
        with self._listing(mgr, wrap):
            summary = mgr.reconcile()
        # A is gone, B could not be read: B keeps its partition.
        self.assertEqual([B], list(self.masks()))
        self.assertEqual(3, cbm.bits(self.masks()[B][1]))
        self.assertEqual([], summary['removed'][1:])
        self.assertIn('Cannot read domain %s from libvirt' % B,
                      self.logs.output)

    def test_bad_uuid_in_a_batch_costs_only_itself(self):
        self.doms.add(A, (1,), ways=2)
        self.doms.add(B, (9,), ways=3)
        mgr = self.make()
        real = mgr.hypervisor.instance

        def flaky(uuid):
            if uuid == C:
                raise _libvirt_error(libvirt.VIR_ERR_INTERNAL_ERROR,
                                     'internal error: boom')
            return real(uuid)

        # Queued before the worker starts: one batch.
        for uuid in ('not-a-uuid', A, C, B):
            mgr.instance_changed(uuid, 'instance.create.end')
        with mock.patch.object(mgr.hypervisor, 'instance', flaky):
            mgr.start(watch_libvirt=False)
            self.addCleanup(mgr.stop)
            mgr.wait_idle()
        self.assertEqual({A, B}, set(self.masks()))
        self.assertIn('Cannot read instance %s from libvirt' % C,
                      self.logs.output)
        self.assertNotIn('Handling instance events', self.logs.output)

    def test_privsep_timeout_fails_the_pass_not_the_agent(self):
        # Both in domain 0: a class each (A's is the first).
        self.doms.add(A, (1,), ways=2)
        self.doms.add(B, (2,), ways=3)
        mod = resq_agent.privsep.resctrl

        def timeout(ops):
            raise comm.PrivsepTimeout('Timeout while executing a command, '
                                      'timeout: 30')

        with mock.patch.object(mod, 'apply_ops', timeout):
            summary = self.make().reconcile()
        self.assertEqual({}, {u: m for u, m in self.masks().items() if m})
        # Each class's first write reports it; the pass goes on.
        self.assertEqual(['create resq-cos1', 'create resq-cos2'],
                         sorted(e.split(':')[0] for e in summary['errors']
                                if e.startswith('create')))
        self.assertTrue(all('privileged call failed: PrivsepTimeout' in e
                            for e in summary['errors']))
        # The next pass repairs it.
        self.assertEqual([], self.make().reconcile()['errors'])
        self.assertEqual(2, cbm.bits(self.masks()[A][0]))
        self.assertEqual(3, cbm.bits(self.masks()[B][0]))

    def test_privsep_timeout_comes_from_the_configuration(self):
        self.flags('resq_agent', privsep_timeout=7)
        resq_agent.privsep.init(self.conf)
        self.assertEqual(7, resq_agent.privsep.resctrl_pctxt.timeout)
        self.assertEqual(7, resq_agent.privsep.pqos_pctxt.timeout)

    def test_libvirt_down_at_start_then_back(self):
        # test:///<file> loads its host from a file: missing, libvirt
        # cannot be reached; written, it answers with the domain in it.
        node = os.path.join(self.tmp, 'node.xml')
        uri = 'test://' + node
        self.flags('resq_agent', libvirt_uri=uri, libvirt_retry_interval=1,
                   hypervisor_hostname='cn1', sysfs_root=self.sysfs.root)
        self.flags('placement', endpoint_override='http://127.0.0.1:9/')
        mgr = manager.AgentManager.from_conf(self.conf)
        mgr.inventory = None
        summary = mgr.reconcile()
        self.assertIn('libvirt', summary['error'])
        mgr.start(watch_libvirt=True)
        self.addCleanup(mgr.stop)
        self.assertFalse(mgr._watcher.connected.is_set())
        self.assertIn('Cannot watch libvirt events on %s' % uri,
                      self.logs.output)
        with open(node + '.tmp', 'w') as f:
            f.write('<node>%s</node>' % libvirt_fixture.nova_domain_xml(
                A, (1, 2), ways=3))
        os.rename(node + '.tmp', node)
        # Back: the watcher subscribes and the agent catches up.
        self.wait_for(lambda: A in self.masks())
        self.assertEqual(3, cbm.bits(self.masks()[A][0]))

    def test_libvirtd_restart_resubscribes(self):
        mgr = self.make()
        mgr.reconcile()
        mgr.start(watch_libvirt=True)
        self.addCleanup(mgr.stop)
        watcher = mgr._watcher
        self.assertEqual(1, watcher.subscriptions)
        # libvirt's close callback, as when libvirtd restarts.
        watcher._on_close(None, libvirt.VIR_CONNECT_CLOSE_REASON_EOF, None)
        self.wait_for(lambda: watcher.subscriptions == 2
                      and watcher.connected.is_set())
        # Events flow on the new subscription.
        self.doms.add(A, (1, 2), ways=3)
        self.wait_for(lambda: A in self.masks())
        self.assertIn('subscribing to its events again', self.logs.output)


class TopologyChangesTest(base.TestCase):
    """The log line of a rediscovered topology names what changed."""

    @staticmethod
    def topology(**domain):
        dom = dict(id=0, cpus=(0, 1), ways=20, way_size_bytes=1 << 20,
                   cbm_mask=0xfffff, min_cbm_bits=1, num_closids=16,
                   io_ways=2, shareable_bits=0, cdp=False, mba=False)
        dom.update(domain)
        return discovery.HostTopology(
            domains=(discovery.CacheDomainInfo(**dom),),
            resctrl_available=True)

    def test_a_field_that_is_not_in_the_summary_is_named(self):
        # A node's MemTotal moves (a balloon); the ways do not.
        self.assertEqual(
            'domain 0: memory_mb 11994 -> 11990',
            manager._changes(self.topology(memory_mb=11994),
                             self.topology(memory_mb=11990)))

    def test_several_changes_are_all_named(self):
        self.assertEqual(
            'domain 0: ways 20 -> 11, domain 0: cbm_mask 1048575 -> 2047',
            manager._changes(self.topology(),
                             self.topology(ways=11, cbm_mask=0x7ff)))

    def test_other_domains_are_summarised(self):
        lost = discovery.HostTopology(domains=(), resctrl_available=False,
                                      reason='resctrl is not mounted')
        self.assertEqual(
            'domain 0: 20 ways -> no CAT: resctrl is not mounted',
            manager._changes(self.topology(), lost))


class InventoryRefusedTest(ManagerTestBase):
    """Placement refusing the inventory report is in the pass's summary."""

    class Refusing:
        def report(self, topology):
            raise placement_client.PlacementError(
                method='PUT', url='/resource_providers/x/inventories',
                reason='409 Conflict')

    def test_summary_names_the_refusal(self):
        mgr = self.make(inventory=self.Refusing())
        summary = mgr.reconcile()
        self.assertEqual('Placement PUT /resource_providers/x/inventories '
                         'failed: 409 Conflict', summary['inventory_error'])
        self.assertNotIn('placement_error', summary)
        # The next pass starts clean.
        mgr.inventory = None
        self.assertNotIn('inventory_error', mgr.reconcile())
