"""Memory bandwidth through Nova, Placement and the ResQ filter.

Nova's own services (its functional harness) and the real Placement: a
flavor's ``CUSTOM_MEM_BW_MIBPS`` comes from the cache domain that gives its
ways, only hosts whose agent offers bandwidth get such a flavor, and
Placement never over-commits a domain's bandwidth (issue 46 item 1).
"""

from resq_agent import reporter
from resq_common import cache_domain
from resq_common import extra_specs
from resq_common import mba
from tests.functional import test_nova_scheduler

BW = extra_specs.RC_MEM_BW


class MemoryBandwidthTest(test_nova_scheduler.ResQNovaTestBase):

    def setUp(self):
        super().setUp()
        # host1's domain offers 10,000 MiB/s, 2,000 kept for the default
        # group; host2's kernel has no MBA.
        self.rp1 = self.start_resq_compute('host1', domains=[
            cache_domain.CacheDomain(
                0, 11, io_ways=2, num_closids=8, cores=6,
                mem_bw_mibps=10000, mem_bw_reserved_mibps=2000,
                mba_mode=mba.MODE_MBPS)])[0]
        self.rp2 = self.start_resq_compute('host2', num_closids=8)[0]

    def bw_flavor(self, mibps, ways=1):
        return self.resq_flavor(ways=ways, **{
            'resq:mem_bw_mibps': str(mibps),
            'resources_LLC:%s' % BW: str(mibps)})

    def bw_usage(self, rp):
        return self.client.get_usages(rp).get(BW, 0)

    def test_bandwidth_from_the_domain_never_over_committed(self):
        inv = self.client.get_inventories(self.rp1)[BW]
        self.assertEqual((10000, 2000), (inv['total'], inv['reserved']))
        self.assertIn('CUSTOM_RESQ_MBA_MBPS',
                      self.client.get_traits(self.rp1))
        self.assertNotIn(BW, self.client.get_inventories(self.rp2))
        flavor = self.bw_flavor(5000)
        first = self._create_server(flavor_id=flavor, networks='none')
        # Only host1 offers bandwidth, though both have ways and cores.
        self.assertEqual('host1', self.host_of(first))
        self.assertEqual(5000, self.bw_usage(self.rp1))
        self.assertEqual(1, self.llc_usage(self.rp1))
        # 3,000 MiB/s are left: a second 5,000 has no host, though host1
        # has ways, classes and cores for it.
        second = self._create_server(flavor_id=flavor, networks='none',
                                     expected_state='ERROR')
        self.assertIn('No valid host', second['fault']['message'])
        self.assertEqual(5000, self.bw_usage(self.rp1))
        # 3,000 fit.
        third = self._create_server(flavor_id=self.bw_flavor(3000),
                                    networks='none')
        self.assertEqual('host1', self.host_of(third))
        self.assertEqual(8000, self.bw_usage(self.rp1))
        # Flavors without bandwidth go on as before, on either host.
        plain = self._create_server(
            flavor_id=self.resq_flavor(ways=1, name='plain'),
            networks='none')
        self.assertIn(self.host_of(plain), ('host1', 'host2'))
        # A delete gives the bandwidth back.
        self._delete_server(first)
        self.assertEqual(3000, self.bw_usage(self.rp1))
        again = self._create_server(flavor_id=flavor, networks='none')
        self.assertEqual('host1', self.host_of(again))

    def test_no_host_offers_bandwidth(self):
        # Without [resq_agent] memory_bandwidth_mibps no domain offers any:
        # a bandwidth flavor is not scheduled anywhere.
        reporter.report(self.client, 'host1', [cache_domain.CacheDomain(
            0, 11, io_ways=2, num_closids=8, cores=6,
            mba_mode=mba.MODE_PERCENT)])
        self.assertNotIn(BW, self.client.get_inventories(self.rp1))
        server = self._create_server(flavor_id=self.bw_flavor(100),
                                     networks='none',
                                     expected_state='ERROR')
        self.assertIn('No valid host', server['fault']['message'])
