"""L2 ways per core through Nova, Placement and the filter.

Nova's own services (its functional harness) and the real Placement: the
agent publishes the L2 trait ladder on the compute node's provider, a
flavor with ``resq:l2_ways_per_core=<k>`` requires the ``k`` rung in its
unnamed request group, so only hosts whose dedicated cores each get ``k``
L2 ways are offered; Nova's resource tracker keeps the agent's traits
through its periodic updates, also when it writes the provider's traits
from a cache older than them (issue 46 item 3).
"""

import fixtures
from nova import context as nova_context
from nova import objects

from resq_agent import discovery
from resq_agent import inventory
from resq_common import cache_domain
from resq_common import extra_specs
from tests.functional import test_nova_scheduler

L2_2 = 'trait:%s' % extra_specs.l2_trait(2)


def topology(cluster, ways=8):
    """A host of 8 CPUs whose L2s are shared by ``cluster`` CPUs each."""
    doms = tuple(discovery.L2DomainInfo(
        id=i, cpus=tuple(range(first, first + cluster)), ways=ways,
        cbm_mask=(1 << ways) - 1, min_cbm_bits=1, shareable_bits=0,
        num_closids=4, usable_mask=(1 << ways) - 1)
        for i, first in enumerate(range(0, 8, cluster)))
    return discovery.HostTopology((), True, l2_domains=doms)


class L2WaysPerCoreTest(test_nova_scheduler.ResQNovaTestBase):

    def setUp(self):
        super().setUp()
        self.rp1 = self.start_resq_compute('host1')[0]
        self.rp2 = self.start_resq_compute('host2')[0]
        # host1's L2s are shared by pairs of CPUs: 3 ways each of 8 (one
        # stays with the default group); host2's by 4: 1 way each.
        self.root1 = self.publish('host1', topology(2))
        self.root2 = self.publish('host2', topology(4))

    def publish(self, hostname, topo):
        """Report as the agent does: its L2 ladder on the compute node."""
        inv = inventory.Inventory(self.client, hostname, 1,
                                  dedicated_cpus=tuple(range(6)))
        # The cache domain start_resq_compute reported: the LLC side as
        # before.
        llc = cache_domain.CacheDomain(0, 11, io_ways=2, num_closids=4,
                                       cores=6)
        self.patch_cache_domains(inv, [llc])
        inv.report(topo)
        return self.client.find_provider(hostname)['uuid']

    def patch_cache_domains(self, inv, doms):
        self.useFixture(fixtures.MockPatchObject(inv, 'cache_domains',
                                                 return_value=doms))

    def traits(self, root):
        return set(self.client.get_traits(root))

    def ladder(self, root):
        return sorted(t for t in self.traits(root)
                      if t.startswith(
                          extra_specs.TRAIT_L2_WAYS_PER_CORE_PREFIX))

    def test_agent_publishes_the_ladder_beside_novas_traits(self):
        self.assertEqual([extra_specs.l2_trait(n) for n in (1, 2, 3)],
                         self.ladder(self.root1))
        self.assertEqual([extra_specs.l2_trait(1)], self.ladder(self.root2))
        for root in (self.root1, self.root2):
            self.assertIn(extra_specs.TRAIT_L2_CAT, self.traits(root))
            self.assertIn('COMPUTE_NODE', self.traits(root))

    def test_flavor_lands_only_where_each_core_gets_its_ways(self):
        flavor = self.resq_flavor(ways=2, **{
            'resq:l2_ways_per_core': '2', L2_2: 'required'})
        for _ in range(3):
            server = self._create_server(flavor_id=flavor, networks='none')
            self.assertEqual('host1', self.host_of(server))
        # One way per core: either host.
        one = self.resq_flavor(ways=2, name='one', **{
            'resq:l2_ways_per_core': '1',
            'trait:%s' % extra_specs.l2_trait(1): 'required'})
        hosts = {self.host_of(self._create_server(flavor_id=one,
                                                  networks='none'))
                 for _ in range(2)}
        self.assertLessEqual(hosts, {'host1', 'host2'})
        # Without L2 ways per core, host2 is taken as before.
        plain = self._create_server(
            flavor_id=self.resq_flavor(ways=2, name='plain'),
            networks='none')
        self.assertIn(self.host_of(plain), ('host1', 'host2'))

    def test_no_host_with_the_rung_is_no_valid_host(self):
        flavor = self.resq_flavor(ways=2, **{
            'resq:l2_ways_per_core': '4',
            'trait:%s' % extra_specs.l2_trait(4): 'required'})
        server = self._create_server(flavor_id=flavor, networks='none',
                                     expected_state='ERROR')
        self.assertIn('No valid host', server['fault']['message'])

    def test_without_the_trait_the_filter_refuses_saying_why(self):
        flavor = self.resq_flavor(ways=2, **{'resq:l2_ways_per_core': '2'})
        server = self._create_server(flavor_id=flavor, networks='none',
                                     expected_state='ERROR')
        self.assertIn('No valid host', server['fault']['message'])
        self.assertIn('trait:CUSTOM_RESQ_L2_WAYS_PER_CORE_2=required',
                      self.stdlog.logger.output)

    def run_periodic(self, hostname):
        self.computes[hostname].manager.update_available_resource(
            nova_context.get_admin_context())

    def test_novas_periodic_updates_keep_the_agents_traits(self):
        before = self.traits(self.root1)
        self.run_periodic('host1')
        self.assertEqual(before, self.traits(self.root1))
        # Nova now has a trait of its own to change (the service was
        # disabled in the database, so only the periodic syncs
        # COMPUTE_STATUS_DISABLED) and writes the traits from its cache,
        # filled before the agent published: the generation the agent
        # bumped makes that write conflict, Nova reads the provider again
        # and keeps the ladder.
        ctx = nova_context.get_admin_context()
        service = objects.Service.get_by_compute_host(ctx, 'host1')
        service.disabled = True
        service.save()
        self.run_periodic('host1')
        after = self.traits(self.root1)
        self.assertIn('COMPUTE_STATUS_DISABLED', after)
        self.assertEqual(before | {'COMPUTE_STATUS_DISABLED'}, after)
        # The path taken: Nova's write at its cached generation was
        # refused, then redone from what Placement holds.
        self.assertIn('/resource_providers/%s/traits" status: 409'
                      % self.root1, self.stdlog.logger.output)

    def test_a_smaller_share_takes_the_upper_rungs_back(self):
        self.run_periodic('host1')
        nova_traits = {t for t in self.traits(self.root1)
                       if not t.startswith('CUSTOM_RESQ_L2')}
        self.publish('host1', topology(4))
        self.assertEqual([extra_specs.l2_trait(1)], self.ladder(self.root1))
        # L2 CAT gone (a kernel without info/L2): the agent's traits go,
        # Nova's stay.
        self.publish('host1', discovery.HostTopology((), True))
        self.assertEqual(nova_traits, self.traits(self.root1))
        self.run_periodic('host1')
        self.assertEqual(nova_traits, self.traits(self.root1))
