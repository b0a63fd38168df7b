"""On-demand NFs through the whole agent: libvirt's test driver, a
resctrl-shaped tree, the scripted latency source, no Placement."""

import os
from unittest import mock

from resq_agent import monitor
from resq_agent.ondemand import host
from resq_agent.ondemand import latency
from resq_agent.ondemand.sources import scripted
import resq_agent.privsep.resctrl
from resq_common import cbm
from resq_common import exception
from tests.unit.resq_agent import test_manager
from tests.unit.resq_agent import test_mon_groups

A = test_manager.A
X = 'cccccccc-0000-0000-0000-00000000000a'
Y = 'cccccccc-0000-0000-0000-00000000000b'
ONDEMAND = {'resq:slo': 'on-demand', 'resq:latency_p95_us': '50'}


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


class OnDemandHostTest(test_manager.ManagerTestBase):

    def setUp(self):
        super().setUp()
        # 20 ways, DDIO in none (the fake tree reports no shareable bits,
        # ddio_ways 2 at the top), 1 default way; 8 leased.
        self.flags('resq_agent', ondemand_ways=8, ondemand_classes=4,
                   ondemand_settle_s=10, ondemand_high_miss_mbps=0,
                   ondemand_latency_max_age_s=30)
        self.clock = Clock()
        self.script = {X: [40], Y: [40]}

    def make_od(self, lend=True):
        self.flags('resq_agent', ondemand_lend_spare=lend)
        src = scripted.ScriptedSource(script=self.script, clock=self.clock)
        self.od = host.OnDemandHost(
            self.conf, latency.Checked(src, 30, 100, self.clock),
            clock=self.clock)
        return self.make(ondemand=self.od)

    def play(self, uuid, *steps):
        self.script[uuid] = list(steps)
        self.od.source.source.script[uuid] = list(steps)
        self.od.source.source.calls[uuid] = 0

    def od_masks(self):
        return {g: m for g, m in self.masks().items() if g.startswith('od')}

    def kernel_counts(self, group, occupancy, mbm):
        d = os.path.join(self.tree.root, 'resq-' + group, 'mon_data',
                         'mon_L3_00')
        os.makedirs(d, exist_ok=True)
        for name, value in (('llc_occupancy', occupancy),
                            ('mbm_total_bytes', mbm),
                            ('mbm_local_bytes', mbm)):
            with open(os.path.join(d, name), 'w') as f:
                f.write('%d\n' % value)

    def test_nfs_start_in_one_class_over_the_lease(self):
        self.doms.add(A, (1,), ways=4)
        self.doms.add(X, (3,), extra_specs=ONDEMAND)
        self.doms.add(Y, (4,), extra_specs=ONDEMAND)
        mgr = self.make_od()
        summary = mgr.reconcile()
        self.assertEqual([], summary['errors'])
        od = self.od_masks()
        self.assertEqual(['od0-0'], list(od))
        lease = od['od0-0'][0]
        # Lent: every way after A's 4 up to the default way and DDIO.
        self.assertEqual(cbm.make(4, 13), lease)
        # The kernel reads a CPU list back in its range form.
        self.assertEqual('3-4', self.rt.read_cpus('resq-od0-0'))
        self.assertEqual(0, lease & self.masks()[A][0])
        self.assertEqual(0, lease & self.default()[0])
        self.assertEqual(self.tree.default_schemata,
                         self.tree.read('other-app', 'schemata'))
        st = mgr.status()['ondemand']['0']
        self.assertEqual('reset', st['state'])
        # The classes are no instances: libvirt and hooks never see them.
        self.assertEqual([A], [i['uuid'] for i in mgr.status()['instances']])

    def test_lease_without_lending_is_exactly_ondemand_ways(self):
        self.doms.add(X, (3,), extra_specs=ONDEMAND)
        mgr = self.make_od(lend=False)
        mgr.reconcile()
        lease = self.od_masks()['od0-0'][0]
        # capacity = 20 - 2 DDIO - 1 default - 8 leased = 9 ways.
        self.assertEqual(cbm.make(9, 8), lease)

    def test_violator_is_isolated_and_escalated_when_that_fails(self):
        self.doms.add(X, (3,), extra_specs=ONDEMAND)
        self.doms.add(Y, (4,), extra_specs=ONDEMAND)
        mgr = self.make_od()
        mgr.reconcile()
        self.kernel_counts('od0-0', 2 << 20, 10 << 30)
        self.play(X, 90)
        self.play(Y, 20)
        self.clock.now += 5
        mgr.reconcile()
        self.assertEqual(['od0-0'], list(self.od_masks()))   # settling
        self.clock.now += 10
        mgr.reconcile()
        od = self.od_masks()
        self.assertEqual(2, len(od), od)
        st = mgr.status()['ondemand']['0']
        self.assertEqual('replanned', st['state'])
        iso = [c for c in st['classes'] if c['nfs'] == [X]]
        self.assertEqual(1, len(iso))
        # The class's group holds X's CPU only; masks never overlap.
        gid = [g for g, m in od.items()
               if '%x' % m[0] == iso[0]['mask']][0]
        self.assertEqual('3', self.rt.read_cpus('resq-' + gid))
        a, b = od.values()
        self.assertEqual(0, a[0] & b[0])
        # Still violating once isolated and settled: escalated, once.
        self.clock.now += 11
        mgr.reconcile()
        self.assertEqual([X], [e['instance_uuid'] for e in
                               self.od.take_escalations()])
        self.clock.now += 11
        mgr.reconcile()
        self.assertEqual([], self.od.take_escalations())
        # What /metrics shows: each NF's last latency against its target,
        # and the passes that found X over it (Y never was).
        self.assertEqual(90, self.od.latency_of[X][0])
        self.assertEqual(20, self.od.latency_of[Y][0])
        self.assertGreaterEqual(self.od.violations[X], 2)
        self.assertEqual(0, self.od.violations[Y])
        # A gone NF's series go with it.
        self.doms.remove(Y)
        self.clock.now += 11
        mgr.reconcile()
        self.assertNotIn(Y, self.od.latency_of)

    def test_reserved_arrival_shrinks_the_lease(self):
        self.doms.add(A, (1,), ways=4)
        self.doms.add(X, (3,), extra_specs=ONDEMAND)
        mgr = self.make_od()
        mgr.reconcile()
        self.assertEqual(13, cbm.bits(self.od_masks()['od0-0'][0]))
        # A reserved SLO arrives and takes 5 of the lent ways.
        B = test_manager.B
        self.doms.add(B, (2,), ways=5)
        summary = mgr.reconcile()
        self.assertEqual([], summary['refused'])
        lease = self.od_masks()['od0-0'][0]
        self.assertEqual(cbm.make(9, 8), lease)
        self.assertEqual(0, lease & self.masks()[B][0])
        self.assertEqual('reset', mgr.status()['ondemand']['0']['state'])
        self.assertIn('lease', mgr.status()['ondemand']['0']['reason'])

    def test_failed_source_keeps_masks_and_names_the_source(self):
        self.doms.add(X, (3,), extra_specs=ONDEMAND)
        self.doms.add(Y, (4,), extra_specs=ONDEMAND)
        mgr = self.make_od()
        mgr.reconcile()
        before = self.od_masks()
        self.play(X, float('nan'))
        self.play(Y, 90)
        self.clock.now += 20
        summary = mgr.reconcile()
        self.assertEqual([], summary['written'])
        self.assertEqual(before, self.od_masks())
        self.assertIn('latency source failed', self.logs.output)
        self.assertIn('scripted for instance %s' % X, self.logs.output)
        # Silence: after max age the source counts as stopped.
        self.play(X, None)
        self.clock.now += 40
        mgr.reconcile()
        self.assertEqual(before, self.od_masks())
        self.assertIn('the source stopped', self.logs.output)

    def test_on_demand_without_target_is_refused_with_a_reason(self):
        self.doms.add(X, (3,), extra_specs={'resq:slo': 'on-demand'})
        mgr = self.make_od()
        summary = mgr.reconcile()
        self.assertEqual({}, self.od_masks())
        self.assertIn('latency target', summary['refused'][0]['reason'])


Z = 'cccccccc-0000-0000-0000-00000000000c'
GB = 10 ** 9


class _MonitoringBase(test_manager.ManagerTestBase):
    """Per-NF CMT/MBM: a monitoring group per NF sharing a class.

    The tree sits behind the fake kernel: mkdir makes a group's counters,
    a control group's new CPUs leave the monitoring groups of the others,
    and RMIDs run out at ``num_rmids`` (the default group, other-app and
    each class and monitoring group hold one).
    """

    kernel = True

    def setUp(self):
        super().setUp()
        # 1 GB/s of memory bandwidth is a high miss rate.
        self.flags('resq_agent', ondemand_ways=8, ondemand_classes=4,
                   ondemand_settle_s=10, ondemand_high_miss_mbps=1000,
                   ondemand_latency_max_age_s=30)
        self.clock = Clock()
        self.script = {X: [40], Y: [40], Z: [40]}
        self.totals = {}

    def make_od(self):
        src = scripted.ScriptedSource(script=self.script, clock=self.clock)
        self.od = host.OnDemandHost(
            self.conf, latency.Checked(src, 30, 100, self.clock),
            monitor=monitor.Monitor(self.tree.root, 0, clock=self.clock),
            clock=self.clock)
        return self.make(ondemand=self.od)

    def play(self, uuid, *steps):
        self.od.source.source.script[uuid] = list(steps)
        self.od.source.source.calls[uuid] = 0

    def mon_groups(self):
        """``{class group: {uuid: CPUs}}`` of the agent's classes."""
        out = {}
        for g in self.rt.owned_groups():
            out[g] = {m[5:]: self.rt.read_mon_cpus(g, m)
                      for m in self.rt.mon_groups(g)}
        return out

    def write_counters(self, path, occupancy, mbm):
        d = os.path.join(path, 'mon_data', 'mon_L3_00')
        for name, value in (('llc_occupancy', occupancy),
                            ('mbm_total_bytes', mbm),
                            ('mbm_local_bytes', mbm)):
            with open(os.path.join(d, name), 'w') as f:
                f.write('%d\n' % value)

    def run_nfs(self, seconds, rates):
        """Class ``resq-od0-0``'s NFs run ``seconds`` at ``rates``.

        ``rates``: bytes/s of memory bandwidth of each; 1 MiB of LLC each.

        Each NF's counters go to its monitoring group when it has one; the
        class's are the sum of its NFs', as the kernel reports them.
        """
        group = os.path.join(self.tree.root, 'resq-od0-0')
        class_mbm = 0
        for uuid, rate in rates.items():
            self.totals[uuid] = self.totals.get(uuid, 0) + int(
                rate * seconds)
            class_mbm += self.totals[uuid]
            mon = os.path.join(group, 'mon_groups', 'resq-' + uuid)
            if os.path.isdir(mon):
                self.write_counters(mon, 1 << 20, self.totals[uuid])
        self.write_counters(group, len(rates) << 20, class_mbm)

    def violate(self, mgr):
        """X violates with a high miss rate, Y and Z meet with a low one.

        Three periods: reset, settling, decision.
        """
        for uuid, cpu in ((X, 3), (Y, 4), (Z, 5)):
            self.doms.add(uuid, (cpu,), extra_specs=ONDEMAND)
        rates = {X: 1.5 * GB, Y: 0.1 * GB, Z: 0.1 * GB}
        first = mgr.reconcile()
        self.run_nfs(5, rates)
        self.play(X, 90)
        self.play(Y, 20)
        self.play(Z, 20)
        self.clock.now += 5
        mgr.reconcile()
        self.run_nfs(10, rates)
        self.clock.now += 10
        return first, mgr.reconcile()

    def classes(self, mgr):
        return sorted(c['nfs'] for c in
                      mgr.status()['ondemand']['0']['classes'])


class PerNFMonitoringTest(_MonitoringBase):

    def test_high_miss_violator_isolated_low_miss_sharers_stay_shared(self):
        foreign = os.path.join(self.tree.root, 'other-app')
        before = test_mon_groups.snapshot(foreign)
        mgr = self.make_od()
        first, summary = self.violate(mgr)
        self.assertEqual([], first['errors'])
        self.assertEqual([], summary['errors'])
        # Per NF: X's own 1.5 GB/s is a high miss rate: isolated; Y and Z
        # keep sharing a class.
        self.assertEqual([[X], [Y, Z]], self.classes(mgr))
        st = mgr.status()['ondemand']['0']
        self.assertEqual('replanned', st['state'])
        self.assertEqual('per-nf', st['monitoring']['mode'])
        # X's class is its own (no monitoring group); Y and Z got theirs in
        # their new class, the ones in the old class are gone.
        shared = [c for c in st['classes'] if c['nfs'] == [Y, Z]][0]
        gid = [g for g, m in self.masks().items()
               if '%x' % m[0] == shared['mask']][0]
        self.assertEqual({'resq-' + gid: {Y: (4,), Z: (5,)}},
                         {g: m for g, m in self.mon_groups().items() if m})
        self.assertEqual(sorted('resq-%s/resq-%s' % (gid, u)
                                for u in (Y, Z)),
                         st['monitoring']['mon_groups'])
        # Nothing outside the agent's groups was written.
        self.assertEqual(before, test_mon_groups.snapshot(foreign))
        self.assertEqual([], os.listdir(os.path.join(self.tree.root,
                                                     'mon_groups')))
        self.assertNotIn('split evenly', self.logs.output)
        # Each NF's own figures, as the status shows what the pass used.
        nfs = st['monitoring']['nfs']
        self.assertEqual({X: 1.5 * GB, Y: 0.1 * GB, Z: 0.1 * GB},
                         {u: nfs[u]['mbm_total_bytes_per_s'] for u in nfs})
        self.assertEqual({'monitoring group'},
                         {f['measured_by'] for f in nfs.values()})
        self.assertEqual(1 << 20, nfs[X]['llc_occupancy_bytes'])

    def test_first_pass_gives_each_sharer_its_monitoring_group(self):
        for uuid, cpu in ((X, 3), (Y, 4)):
            self.doms.add(uuid, (cpu,), extra_specs=ONDEMAND)
        mgr = self.make_od()
        self.assertEqual([], mgr.reconcile()['errors'])
        self.assertEqual({'resq-od0-0': {X: (3,), Y: (4,)}},
                         self.mon_groups())
        self.assertEqual('per-nf',
                         mgr.status()['ondemand']['0']['monitoring']['mode'])
        # Idempotent: nothing made or removed again.
        ino = os.stat(os.path.join(self.tree.root, 'resq-od0-0',
                                   'mon_groups', 'resq-' + X)).st_ino
        self.assertEqual([], mgr.reconcile()['errors'])
        self.assertEqual(ino, os.stat(os.path.join(
            self.tree.root, 'resq-od0-0', 'mon_groups',
            'resq-' + X)).st_ino)
        # An NF that leaves loses its monitoring group; alone in its class,
        # the class's counters are its own.
        self.doms.remove(Y)
        self.assertEqual([], mgr.reconcile()['errors'])
        self.assertEqual({'resq-od0-0': {}}, self.mon_groups())
        self.assertEqual('per-nf',
                         mgr.status()['ondemand']['0']['monitoring']['mode'])

    def test_restart_removes_monitoring_groups_of_gone_nfs(self):
        for uuid, cpu in ((X, 3), (Y, 4), (Z, 5)):
            self.doms.add(uuid, (cpu,), extra_specs=ONDEMAND)
        self.make_od().reconcile()
        group = os.path.join(self.tree.root, 'resq-od0-0', 'mon_groups')
        ino = os.stat(os.path.join(group, 'resq-' + X)).st_ino
        # Left behind by a previous agent: an NF gone since, and a group
        # someone else made for their own measurements.
        dead = 'resq-dddddddd-0000-0000-0000-00000000000d'
        os.mkdir(os.path.join(group, dead))
        os.mkdir(os.path.join(group, 'operator-watch'))
        # The agent stops; Z goes away meanwhile; a new agent starts.
        self.doms.remove(Z)
        mgr = self.make_od()
        self.assertEqual([], mgr.reconcile()['errors'])
        self.assertEqual(sorted(['resq-' + X, 'resq-' + Y,
                                 'operator-watch']),
                         sorted(os.listdir(group)))
        # X's group was kept, not made again.
        self.assertEqual(ino, os.stat(os.path.join(group,
                                                   'resq-' + X)).st_ino)
        self.assertEqual((3,), self.rt.read_mon_cpus('resq-od0-0',
                                                     'resq-' + X))

    def test_failed_privileged_calls_are_reported_not_hidden(self):
        for uuid, cpu in ((X, 3), (Y, 4)):
            self.doms.add(uuid, (cpu,), extra_specs=ONDEMAND)
        mgr = self.make_od()
        mod = resq_agent.privsep.resctrl

        def timeout(group, mon, cpus):
            raise RuntimeError('privsep daemon timed out')

        with mock.patch.object(mod, 'create_mon_group', timeout):
            summary = mgr.reconcile()
        self.assertEqual(2, len(summary['errors']), summary['errors'])
        self.assertIn('monitoring group resq-od0-0/resq-%s: privsep daemon '
                      'timed out' % X, summary['errors'][0])
        st = mgr.status()['ondemand']['0']['monitoring']
        self.assertEqual('even-split', st['mode'])
        self.assertEqual({'resq-od0-0': {}}, self.mon_groups())
        # The kernel refusing for RMIDs in limbo is the fallback, said once.
        real = mod.create_mon_group

        def limbo(group, mon, cpus):
            raise exception.RmidsExhausted(reason='the kernel has no free '
                                           'RMID (Device or resource busy)')

        with mock.patch.object(mod, 'create_mon_group', limbo):
            self.assertEqual([], mgr.reconcile()['errors'])
            self.assertEqual([], mgr.reconcile()['errors'])
        self.assertEqual(1, self.logs.output.count('Device or resource '
                                                   'busy'))
        # Back to per-NF once the kernel has RMIDs again.
        with mock.patch.object(mod, 'create_mon_group', real):
            self.assertEqual([], mgr.reconcile()['errors'])
        self.assertEqual('per-nf',
                         mgr.status()['ondemand']['0']['monitoring']['mode'])
        self.assertIn('measured per NF again', self.logs.output)


class EvenSplitWhenRmidsRunOutTest(_MonitoringBase):
    """16 RMIDs for 16 classes of service.

    The agent keeps one RMID per class of service, none is left for
    monitoring groups: the class's figures split evenly.
    """

    num_rmids = 16

    def test_even_split_keeps_the_high_miss_violator_shared(self):
        mgr = self.make_od()
        self.violate(mgr)
        # Split evenly, X's 1.5 GB/s is 0.57 GB/s each, under the high miss
        # rate: X is not isolated (the per-NF figures isolate it).
        self.assertEqual([[X, Y, Z]], self.classes(mgr))
        st = mgr.status()['ondemand']['0']
        self.assertEqual([X], st['violating'])
        self.assertEqual('even-split', st['monitoring']['mode'])
        self.assertIn('num_rmids', st['monitoring']['reason'])
        self.assertEqual([], st['monitoring']['mon_groups'])
        self.assertEqual(1, self.logs.output.count(
            'split evenly, not their own'))
        self.assertIn('RMIDs run out: info/L3_MON/num_rmids is 16',
                      self.logs.output)
        nfs = st['monitoring']['nfs']
        self.assertEqual({u: 1.7 * GB / 3 for u in (X, Y, Z)},
                         {u: nfs[u]['mbm_total_bytes_per_s'] for u in nfs})
        self.assertEqual({'class split evenly'},
                         {f['measured_by'] for f in nfs.values()})

    def test_fallback_is_said_once_and_is_no_error(self):
        for uuid, cpu in ((X, 3), (Y, 4)):
            self.doms.add(uuid, (cpu,), extra_specs=ONDEMAND)
        mgr = self.make_od()
        # Not an error: the fallback, said once.
        self.assertEqual([], mgr.reconcile()['errors'])
        self.assertEqual([], mgr.reconcile()['errors'])
        self.assertEqual({'resq-od0-0': {}}, self.mon_groups())
        self.assertEqual('even-split',
                         mgr.status()['ondemand']['0']['monitoring']['mode'])
        self.assertEqual(1, self.logs.output.count(
            'split evenly, not their own'))


class PartialRmidsTest(_MonitoringBase):
    """17 RMIDs for 16 classes of service.

    One monitoring group fits (X's, the first by name); Y and Z share what
    the class measured less X's.
    """

    num_rmids = 17

    def test_one_monitoring_group_still_isolates_the_violator(self):
        mgr = self.make_od()
        self.violate(mgr)
        self.assertEqual([[X], [Y, Z]], self.classes(mgr))
        st = mgr.status()['ondemand']['0']
        # Y and Z share their class; one monitoring group fits for them.
        self.assertEqual('even-split', st['monitoring']['mode'])
        self.assertEqual(1, len(st['monitoring']['mon_groups']))

    def test_sharers_without_one_split_the_rest_of_the_class(self):
        for uuid, cpu in ((X, 3), (Y, 4), (Z, 5)):
            self.doms.add(uuid, (cpu,), extra_specs=ONDEMAND)
        mgr = self.make_od()
        mgr.reconcile()
        self.assertEqual({'resq-od0-0': {X: (3,)}}, self.mon_groups())
        self.run_nfs(5, {X: GB, Y: GB, Z: GB})
        self.clock.now += 5
        mgr.reconcile()
        self.run_nfs(10, {X: 3 * GB, Y: GB, Z: 0.5 * GB})
        self.clock.now += 10
        self.assertEqual([], mgr.reconcile()['errors'])
        st = mgr.status()['ondemand']['0']['monitoring']
        self.assertEqual('even-split', st['mode'])
        self.assertIn('num_rmids is 17', st['reason'])
        # X: its own 3 GB/s; Y and Z: the class's 4.5 GB/s less X's.
        self.assertEqual(
            {X: (3 * GB, 'monitoring group'),
             Y: (0.75 * GB, 'class split evenly'),
             Z: (0.75 * GB, 'class split evenly')},
            {u: (f['mbm_total_bytes_per_s'], f['measured_by'])
             for u, f in st['nfs'].items()})
        self.assertEqual(1 << 20, st['nfs'][Y]['llc_occupancy_bytes'])


class EvenSplitWithoutL3MonTest(_MonitoringBase):
    """A CPU with CAT but without CMT/MBM: no info/L3_MON, no counters."""

    monitoring = False

    def test_fallback_names_the_missing_l3_mon(self):
        for uuid, cpu in ((X, 3), (Y, 4)):
            self.doms.add(uuid, (cpu,), extra_specs=ONDEMAND)
        mgr = self.make_od()
        self.assertEqual([], mgr.reconcile()['errors'])
        self.assertEqual([], mgr.reconcile()['errors'])
        st = mgr.status()['ondemand']['0']['monitoring']
        self.assertEqual('even-split', st['mode'])
        self.assertIn('no info/L3_MON', st['reason'])
        self.assertEqual(1, self.logs.output.count(
            'split evenly, not their own'))
        self.assertFalse(os.path.exists(os.path.join(
            self.tree.root, 'resq-od0-0', 'mon_groups')))
