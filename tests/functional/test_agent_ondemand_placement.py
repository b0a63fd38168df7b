"""The agent's on-demand lease in a real (in-process) Placement."""

from placement.tests.functional.fixtures import placement as placement_fixture

from resq_agent import discovery
from resq_agent import inventory
from resq_common import cache_domain
from resq_common.clients import placement as placement_client
from tests import base
from tests.fixtures import resctrl as resctrl_fixture
from tests.fixtures import sysfs as sysfs_fixture
from tests.functional import test_agent_placement


class AgentLeaseInventoryTest(base.TestCase):

    def test_lease_is_reported_reserved_with_lease_cores(self):
        fixture = self.useFixture(placement_fixture.PlacementFixture())
        client = placement_client.PlacementClient.for_endpoint(
            fixture.endpoint)
        root = client.ensure_provider(
            '6f2b4c1e-0000-4000-8000-000000000002', 'cn1')['uuid']
        sysfs = self.useFixture(sysfs_fixture.SysfsTree(
            domains=test_agent_placement.DUAL, ways=20))
        tree = self.useFixture(resctrl_fixture.ResctrlTree(
            ways=20, domains=(0, 1)))
        inv = inventory.Inventory(client, 'cn1', 1, lease_ways=6,
                                  lease_classes=4, lease_cores=3)
        rps = inv.report(discovery.discover(tree.root, sysfs.root))
        self.assertEqual({0, 1}, set(rps))
        for dom_id, rp in rps.items():
            self.assertEqual(cache_domain.provider_uuid(root, dom_id), rp)
            got = client.get_inventories(rp)
            # 2 DDIO + 1 default + 6 leased ways are out of reach of
            # reserved SLOs.
            self.assertEqual((20, 9), (got['CUSTOM_LLC_WAY']['total'],
                                       got['CUSTOM_LLC_WAY']['reserved']))
            self.assertEqual(3, got['CUSTOM_RESQ_ONDEMAND_CORE']['total'])
            # 16 classes, one held by the tree's foreign group: 1
            # default, 4 leased in each of the two domains (each a
            # host-wide group), 6 in each domain (a class serves one
            # reserved instance in every domain).
            self.assertEqual(6 + 1, got['CUSTOM_LLC_CLOS']['total'])
            self.assertIn('CUSTOM_RESQ_ONDEMAND_WAYS_6',
                          client.get_traits(rp))
        # Without a lease nothing of it is reported.
        plain = inventory.Inventory(client, 'cn1', 1)
        rps = plain.report(discovery.discover(tree.root, sysfs.root))
        got = client.get_inventories(rps[0])
        self.assertEqual(3, got['CUSTOM_LLC_WAY']['reserved'])
        self.assertNotIn('CUSTOM_RESQ_ONDEMAND_CORE', got)
        self.assertFalse([t for t in client.get_traits(rps[0])
                          if 'ONDEMAND' in t])
