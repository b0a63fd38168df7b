"""On-demand NFs through the whole agent: libvirt's test driver, a
resctrl-shaped tree, the scripted latency source, no Placement."""

import os

from resq_agent.ondemand import host
from resq_agent.ondemand import latency
from resq_agent.ondemand.sources import scripted
from resq_common import cbm
from tests.unit.resq_agent import test_manager

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
        self.assertEqual('3,4', self.rt.read_cpus('resq-od0-0'))
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
