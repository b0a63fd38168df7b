"""Code and data prioritization through Nova, Placement and the filter.

Nova's own services (its functional harness) and the real Placement: a
flavor with ``resq:code_ways`` requires ``CUSTOM_RESQ_L3_CDP`` in its LLC
request group, so only cache domains of hosts whose kernel mounted resctrl
with ``cdp`` are offered (issue 46 item 2).
"""

from resq_common import cache_domain
from resq_common import extra_specs
from tests.functional import test_nova_scheduler


class CodeDataTest(test_nova_scheduler.ResQNovaTestBase):

    def setUp(self):
        super().setUp()
        # host1's kernel mounted resctrl with cdp (8 classes: the
        # kernel's info/L3CODE/num_closids, halved); host2's did not.
        self.rp1 = self.start_resq_compute('host1', domains=[
            cache_domain.CacheDomain(0, 11, io_ways=2, num_closids=4,
                                     cores=6, cdp=True)])[0]
        self.rp2 = self.start_resq_compute('host2', num_closids=8)[0]

    def test_code_ways_land_only_where_the_kernel_has_cdp(self):
        self.assertIn(extra_specs.TRAIT_CDP,
                      self.client.get_traits(self.rp1))
        self.assertNotIn(extra_specs.TRAIT_CDP,
                         self.client.get_traits(self.rp2))
        flavor = self.resq_flavor(ways=3, **{
            'resq:code_ways': '1',
            'trait_LLC:%s' % extra_specs.TRAIT_CDP: 'required'})
        for _ in range(2):
            server = self._create_server(flavor_id=flavor, networks='none')
            self.assertEqual('host1', self.host_of(server))
        self.assertEqual(6, self.llc_usage(self.rp1))
        # A third fills host1's 9 ways for instances and its 3 classes
        # (4 with cdp, one the default group's); a fourth has no host.
        full = self._create_server(flavor_id=flavor, networks='none')
        self.assertEqual('host1', self.host_of(full))
        over = self._create_server(flavor_id=flavor, networks='none',
                                   expected_state='ERROR')
        self.assertIn('No valid host', over['fault']['message'])
        # host2 still takes flavors without code ways.
        plain = self._create_server(
            flavor_id=self.resq_flavor(ways=3, name='plain'),
            networks='none')
        self.assertEqual('host2', self.host_of(plain))

    def test_code_ways_without_the_trait_are_refused(self):
        # Nova's validators see one key at a time; the filter refuses
        # every host, saying why in the scheduler's log.
        flavor = self.resq_flavor(ways=3, **{'resq:code_ways': '1'})
        server = self._create_server(flavor_id=flavor, networks='none',
                                     expected_state='ERROR')
        self.assertIn('No valid host', server['fault']['message'])
        self.assertIn('trait_LLC:CUSTOM_RESQ_L3_CDP=required',
                      self.stdlog.logger.output)
