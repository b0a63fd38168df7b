"""resq-optimizer on a live cloud whose cache domains offer memory bandwidth.

Nova's own services and the real Placement (as :mod:`test_optimizer`): the
agent's ``CUSTOM_MEM_BW_MIBPS`` inventories are read into the snapshot,
each server's bandwidth from its allocation, and no plan moves a server to
a domain whose bandwidth it would over-commit, though the ways, classes and
cores would take it (issue 46 item 4).
"""

from resq_common import cache_domain
from resq_common import extra_specs
from resq_common import mba
from resq_nova.optimizer import collect
from resq_nova.optimizer import execute
from tests.functional import test_optimizer

BW = extra_specs.RC_MEM_BW


def bw_domain(total, reserved=1000):
    return [cache_domain.CacheDomain(
        0, 11, io_ways=2, num_closids=8, cores=6, mem_bw_mibps=total,
        mem_bw_reserved_mibps=reserved, mba_mode=mba.MODE_MBPS)]


class BandwidthPlanTest(test_optimizer.OptimizerTestBase):

    def setUp(self):
        super().setUp()
        # host1 and host2 offer 7,000 MiB/s each (8,000 less 1,000 for the
        # default group); host3's kernel has no MBA.
        self.rps = {h: self.start_resq_compute(h, domains=bw_domain(8000))[0]
                    for h in ('host1', 'host2')}
        self.rps['host3'] = self.start_resq_compute('host3',
                                                    num_closids=8)[0]

    def boot_bw(self, host, ways, mibps, name):
        specs = {}
        if mibps:
            specs = {'resq:mem_bw_mibps': str(mibps),
                     'resources_LLC:%s' % BW: str(mibps)}
        flavor = self.resq_flavor(ways=ways, name='f-' + name, **specs)
        server = self._build_server(flavor_id=flavor, networks='none',
                                    host=host, name=name)
        server = self._wait_for_state_change(
            self.api.post_server({'server': server}), 'ACTIVE')
        self.assertEqual(host, self.host_of(server))
        return server

    def test_a_plan_never_over_commits_a_domains_bandwidth(self):
        # a and b would share one domain by their ways (2 + 2 of 9) and
        # cores, but not by their bandwidth (5,000 + 5,000 of 7,000); c
        # holds none and may go anywhere.
        a = self.boot_bw('host1', 2, 5000, 'a')
        b = self.boot_bw('host2', 2, 5000, 'b')
        c = self.boot_bw('host3', 2, 0, 'c')
        snap = collect.collect(self.client, self.compute)
        self.assertEqual(
            [7000, 7000, 0],
            [snap.host(h).domain(0).mem_bw_mibps
             for h in ('host1', 'host2', 'host3')])
        self.assertEqual(
            [5000, 5000, 0],
            [snap.instance(s['id']).mem_bw_mibps for s in (a, b, c)])

        plan, _ = self.optimizer.plan()
        self.assertTrue(plan['proposed'], plan['reason'])
        self.assertEqual(3, plan['hosts_used_before'])
        # One host freed: host3 (c moves); a and b stay apart.
        self.assertEqual(2, plan['hosts_used_after'])
        self.assertEqual([c['id']], [mv['uuid'] for mv in plan['moves']])
        self.assertIn(plan['moves'][0]['to_host'], ('host1', 'host2'))

        plan, _ = self.optimizer.apply(plan['id'])
        self.assertEqual(execute.APPLIED, plan['status'], plan['result'])
        for h in ('host1', 'host2'):
            usage = self.client.get_usages(self.rps[h]).get(BW, 0)
            inv = self.client.get_inventories(self.rps[h])[BW]
            self.assertLessEqual(usage, inv['total'] - inv['reserved'])
            self.assertEqual(5000, usage)
        # Nothing more to gain: the next plan proposes no move.
        plan, _ = self.optimizer.plan()
        self.assertFalse(plan['proposed'])

    def test_with_room_for_both_they_share_a_domain(self):
        a = self.boot_bw('host1', 2, 3000, 'a')
        b = self.boot_bw('host2', 2, 3000, 'b')
        plan, _ = self.optimizer.plan()
        self.assertTrue(plan['proposed'], plan['reason'])
        self.assertEqual(1, plan['hosts_used_after'])
        self.assertEqual(1, len(plan['moves']))
        self.assertIn(plan['moves'][0]['uuid'], (a['id'], b['id']))
        plan, _ = self.optimizer.apply(plan['id'])
        self.assertEqual(execute.APPLIED, plan['status'], plan['result'])
        kept = self.host_of(self.server(a['id']))
        self.assertEqual(kept, self.host_of(self.server(b['id'])))
        self.assertEqual(6000,
                         self.client.get_usages(self.rps[kept]).get(BW, 0))
