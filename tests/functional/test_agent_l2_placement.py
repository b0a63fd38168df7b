"""The agent's L2 report against a real Placement (in-process).

Discovery from the fake kernel's trees with L2 clusters, then the agent's
report: the L2 ladder lands on the compute node's provider beside the
traits others put there (issue 46 item 3).
"""

import os

import fixtures
from placement.tests.functional.fixtures import placement as placement_fixture

from resq_agent import discovery
from resq_agent import inventory
from resq_common.clients import placement as placement_client
from resq_common import extra_specs
from resq_fake import resctrl as fake_resctrl
from tests import base


class AgentL2PlacementTest(base.TestCase):

    def setUp(self):
        super().setUp()
        fixture = self.useFixture(placement_fixture.PlacementFixture())
        self.client = placement_client.PlacementClient.for_endpoint(
            fixture.endpoint)
        # Nova made the compute node provider and gave it its traits; an
        # operator added one of theirs.
        self.root = self.client.ensure_provider(
            '6f2b4c1e-0000-4000-8000-000000000002', 'cn1')['uuid']
        self.client.set_traits(self.root, ['COMPUTE_NODE', 'OWNER_NOVA',
                                           'CUSTOM_RACK_7'])
        self.others = {'COMPUTE_NODE', 'OWNER_NOVA', 'CUSTOM_RACK_7'}

    def topology(self, cluster, l2_ways=8, name='t'):
        root = os.path.join(self.tmp, name)
        cpus = tuple(range(8))
        l2 = fake_resctrl.l2_layout(cpus, cluster) if cluster else None
        fake_resctrl.build_sysfs(os.path.join(root, 'sys'), {0: cpus},
                                 memory_mb=1024, l2_domains=l2,
                                 l2_ways=l2_ways)
        fake_resctrl.build_resctrl(
            os.path.join(root, 'resctrl'), domains=(0,), cpus=cpus,
            resources={'L2': {'ways': l2_ways}} if l2 else None,
            l2_domains=l2)
        return discovery.discover(os.path.join(root, 'resctrl'),
                                  os.path.join(root, 'sys'), quiet=True)

    def traits(self):
        return set(self.client.get_traits(self.root))

    def test_ladder_beside_the_traits_of_others(self):
        inv = inventory.Inventory(self.client, 'cn1', 1,
                                  dedicated_cpus=tuple(range(2, 8)))
        inv.report(self.topology(2))
        ladder = {extra_specs.TRAIT_L2_CAT} | {
            extra_specs.l2_trait(n) for n in (1, 2, 3)}
        self.assertEqual(self.others | ladder, self.traits())
        # Every rung exists, so flavors asking for more find no host
        # rather than an unknown trait.
        for n in (4, 32):
            self.client._call('GET', '/traits/%s' % extra_specs.l2_trait(n),
                              placement_client.MV_TRAITS, ok=(204,))
        # Idempotent.
        inv.report(self.topology(2, name='again'))
        self.assertEqual(self.others | ladder, self.traits())
        # Clusters of 4: one way each; then no L2 CAT at all.
        inv.report(self.topology(4, name='four'))
        self.assertEqual(self.others | {extra_specs.TRAIT_L2_CAT,
                                        extra_specs.l2_trait(1)},
                         self.traits())
        inv.report(self.topology(0, name='none'))
        self.assertEqual(self.others, self.traits())

    def test_a_domain_too_small_publishes_nothing(self):
        logs = self.useFixture(fixtures.FakeLogger())
        inv = inventory.Inventory(self.client, 'cn1', 1)
        inv.report(self.topology(4, l2_ways=4))
        self.assertEqual(self.others, self.traits())
        self.assertIn('publishes no L2 ways per core: L2 domain 0 cannot '
                      'give each of its 4 CPUs', logs.output)
