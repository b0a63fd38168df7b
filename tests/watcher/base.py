#    Licensed under the Apache License, Version 2.0 (the "License"); you may
#    not use this file except in compliance with the License. You may obtain
#    a copy of the License at
#
#         http://www.apache.org/licenses/LICENSE-2.0
#
#    Unless required by applicable law or agreed to in writing, software
#    distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
#    WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
#    License for the specific language governing permissions and limitations
#    under the License.
"""The Watcher strategy on Watcher's own test machinery.

The compute model is a Watcher ``ModelRoot`` loaded from an XML scenario
as Watcher's ``FakerModelCollector`` loads its own (``data/``), patched
in as Watcher's strategy tests do; Placement is a real one, in process
(Placement's functional fixture), holding the cache-domain providers and
allocations the agent and Nova would; Nova's server groups and zones come
from a stub of the project's compute client.
"""

import os
from unittest import mock

from placement.tests.functional.fixtures import placement as placement_fx
from watcher.common import utils as w_utils
from watcher.decision_engine.strategy import strategies
from watcher.tests.unit import base as w_base
from watcher.tests.unit.decision_engine.model import faker_cluster_state

from resq_common import cache_domain
from resq_common.clients import placement as placement_client
from resq_common import extra_specs
from resq_nova.watcher import strategy as resq_strategy

DATA = os.path.join(os.path.dirname(__file__), 'data')
A = '73b09e16-35b7-4922-804e-e8f5d9b740fc'
B = 'a4cab39b-9828-413a-bf88-f76921bf1517'
C = 'c4cab39b-9828-413a-bf88-f76921bf1517'
PROJECT = '91fffe30-78a0-4152-acd2-8310ff274dc9'


class Collector(faker_cluster_state.FakerModelCollector):
    """Watcher's faker collector, reading this directory's scenarios."""

    def load_data(self, filename):
        with open(os.path.join(DATA, filename), 'rb') as f:
            return f.read()


class FakeNova:
    """What the strategy asks Nova for that Watcher's model lacks."""

    def __init__(self, groups=(), zones=None):
        self.groups = list(groups)
        self.zones = zones or {}

    def list_compute_services(self):
        return [{'host': h, 'zone': z} for h, z in self.zones.items()]

    def list_server_groups(self):
        return self.groups

    def list_aggregates(self):
        return []


class StrategyTestBase(w_base.TestCase):
    scenario = 'resq_scenario_3_nodes.xml'

    def setUp(self):
        super().setUp()
        # What the strategy needs in watcher.conf: flavor extra specs in
        # the model.
        self.flags(enable_extended_attributes=True, group='compute_model')
        fixture = self.useFixture(placement_fx.PlacementFixture())
        self.placement = placement_client.PlacementClient.for_endpoint(
            fixture.endpoint)
        self.model = Collector().load_model(self.scenario)
        p_model = mock.patch.object(strategies.BaseStrategy,
                                    'compute_model',
                                    new_callable=mock.PropertyMock)
        self.m_model = p_model.start()
        self.addCleanup(p_model.stop)
        self.m_model.return_value = self.model
        self.nova = FakeNova()
        self.strategy = resq_strategy.CacheConsolidation(
            config=mock.Mock(datasources=None))
        self.strategy.placement = self.placement
        self.strategy.nova = self.nova
        self.strategy.input_parameters = w_utils.Struct(time_limit=5.0)

    def add_host(self, node_uuid, name, domains=2, ways=11, clos=4,
                 cores=8):
        """A compute node and its cache domains, as the agent makes them."""
        self.placement.ensure_provider(node_uuid, name)
        self.placement.set_inventories(
            node_uuid, {'PCPU': {'total': cores * domains}})
        for d in range(domains):
            rp = cache_domain.provider_uuid(node_uuid, d)
            self.placement.ensure_provider(
                rp, cache_domain.provider_name(name, d), node_uuid)
            self.placement.set_inventories(rp, {
                extra_specs.RC_LLC_WAY: {'total': ways, 'reserved': 1},
                extra_specs.RC_LLC_CLOS: {'total': clos}})
            self.placement.set_traits(
                rp, ['%s%d' % (cache_domain.TRAIT_CORES_PREFIX, cores)])

    def allocate(self, uuid, node_uuid, domain, ways, cores=2):
        """What Nova allocates for a ResQ instance (or other consumer)."""
        allocs = {}
        if ways:
            rp = cache_domain.provider_uuid(node_uuid, domain)
            allocs[rp] = {'resources': {extra_specs.RC_LLC_WAY: ways,
                                        extra_specs.RC_LLC_CLOS: 1}}
        if cores:
            allocs[node_uuid] = {'resources': {'PCPU': cores}}
        body = {'allocations': allocs,
                'project_id': PROJECT, 'user_id': PROJECT,
                'consumer_generation': None}
        self.placement._call('PUT', '/allocations/%s' % uuid,
                             placement_client.MV_ALLOCATIONS, body,
                             ok=(204,))

    def seed(self, ways=4):
        """Each node in Placement; each instance in domain 0 of its node."""
        for node in self.model.get_all_compute_nodes().values():
            self.add_host(node.uuid, node.hostname)
            for inst in self.model.get_node_instances(node):
                self.allocate(inst.uuid, node.uuid, 0, ways)

    def migrations(self, solution):
        self.assertTrue(all(a['action_type'] == 'migrate'
                            for a in solution.actions))
        return [(a['input_parameters']['resource_id'],
                 a['input_parameters']['source_node'],
                 a['input_parameters']['destination_node'])
                for a in solution.actions]

    def hosts_after(self, moves):
        where = {i.uuid: self.model.get_node_by_instance_uuid(i.uuid)
                 .hostname for i in self.model.get_all_instances().values()}
        for uuid, source, dest in moves:
            self.assertEqual(source, where[uuid])
            where[uuid] = dest
        return where

    def indicators(self, solution):
        return {i.name: i.value for i in solution.efficacy_indicators}
