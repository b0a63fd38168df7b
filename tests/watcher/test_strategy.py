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
"""ResQ's strategy run as Watcher runs it: ``execute`` to a solution."""

from watcher.common import exception as w_exception
from watcher.common import utils as w_utils
from watcher.decision_engine.goal.efficacy import specs as w_specs
from watcher.decision_engine.loading import default as w_loading
from watcher.decision_engine.solution import efficacy as w_efficacy

from resq_nova.watcher import cluster
from resq_nova.watcher import goal as resq_goal
from resq_nova.watcher import planner as resq_planner
from resq_nova.watcher import strategy as resq_strategy
from tests.watcher import base

A, B, C = base.A, base.B, base.C


class ConsolidationTest(base.StrategyTestBase):

    def test_three_hosts_become_one_with_live_migrations(self):
        self.seed(ways=4)
        solution = self.strategy.execute()
        moves = self.migrations(solution)
        self.assertEqual(2, len(moves))
        for action in solution.actions:
            self.assertEqual('live',
                             action['input_parameters']['migration_type'])
        where = self.hosts_after(moves)
        self.assertEqual(1, len(set(where.values())))
        self.assertEqual({'compute_nodes_count': 3,
                          'released_compute_nodes_count': 2,
                          'instance_migrations_count': 2,
                          'proven_gap': 0.0}, self.indicators(solution))
        ratio = solution.global_efficacy[0]
        self.assertEqual('released_nodes_ratio', ratio.name)
        self.assertAlmostEqual(200.0 / 3, ratio.value)
        self.assertEqual('resq_sequential', self.strategy.planner)

    def test_ways_not_vcpus_decide_what_fits(self):
        # 6 of a domain's 10 usable ways each: two cannot share a domain,
        # so a host (2 domains) takes two although its 40 vCPUs would
        # take all three.
        self.seed(ways=6)
        solution = self.strategy.execute()
        moves = self.migrations(solution)
        self.assertEqual(1, len(moves))
        self.assertEqual(2, len(set(self.hosts_after(moves).values())))
        self.assertEqual(1, self.indicators(solution)[
            'released_compute_nodes_count'])

    def test_a_full_domain_is_not_a_destination(self):
        # hostname_0's domains are full (10 of 10 usable ways held by
        # another consumer), so nothing may move onto it.
        self.seed(ways=4)
        node0 = self.model.get_node_by_name('hostname_0')
        for d in (0, 1):
            self.allocate('0000000%d-0000-4000-8000-000000000000' % d,
                          node0.uuid, d, 10 if d else 6, cores=0)
        moves = self.migrations(self.strategy.execute())
        self.assertNotIn('hostname_0', [dest for _, _, dest in moves])

    def test_excluded_instance_stays(self):
        self.model.get_instance_by_uuid(A).watcher_exclude = True
        self.model.get_instance_by_uuid(B).watcher_exclude = True
        self.seed(ways=4)
        solution = self.strategy.execute()
        moves = self.migrations(solution)
        moved = {uuid for uuid, _, _ in moves}
        self.assertEqual({C}, moved)
        snap = cluster.snapshot_from(self.model, self.placement)
        self.assertEqual(cluster.EXCLUDED, snap.instance(A).reason)
        self.assertFalse(snap.instance(A).migratable)

    def test_anti_affinity_from_nova_is_kept(self):
        self.nova.groups = [{'id': 'g1', 'policy': 'anti-affinity',
                             'members': [A, B, C]}]
        self.seed(ways=4)
        solution = self.strategy.execute()
        self.assertEqual([], solution.actions)
        self.assertEqual(0, self.indicators(solution)[
            'released_compute_nodes_count'])

    def test_min_hosts_freed_not_reached_moves_nothing(self):
        self.seed(ways=4)
        self.strategy.input_parameters = w_utils.Struct(
            time_limit=5.0, min_hosts_freed=3)
        solution = self.strategy.execute()
        self.assertEqual([], solution.actions)
        self.assertEqual({'compute_nodes_count': 3,
                          'released_compute_nodes_count': 0,
                          'instance_migrations_count': 0,
                          # 3 in use where 1 suffices.
                          'proven_gap': 66.667}, self.indicators(solution))
        self.assertIn('min_hosts_freed is 3', self.strategy.plan['reason'])

    def test_disabled_node_receives_nothing(self):
        self.model.get_node_by_name('hostname_0').status = 'disabled'
        self.seed(ways=4)
        moves = self.migrations(self.strategy.execute())
        self.assertEqual(2, len(moves))
        self.assertNotIn('hostname_0', [dest for _, _, dest in moves])
        self.assertIn('hostname_0', [src for _, src, _ in moves])

    def test_node_without_cache_domains_is_left_out(self):
        for name in ('hostname_0', 'hostname_1'):
            node = self.model.get_node_by_name(name)
            self.add_host(node.uuid, name)
            for inst in self.model.get_node_instances(node):
                self.allocate(inst.uuid, node.uuid, 0, 4)
        solution = self.strategy.execute()
        moves = self.migrations(solution)
        self.assertEqual(1, len(moves))
        self.assertNotIn(C, [uuid for uuid, _, _ in moves])
        self.assertEqual(2, self.indicators(solution)['compute_nodes_count'])

    def test_over_committed_placement_fails_the_audit(self):
        self.seed(ways=4)
        node = self.model.get_node_by_name('hostname_1')
        # Another consumer pins the 14 PCPUs hostname_1 has free: B's 2 cores
        # no longer fit its domain, a state the optimizer refuses to plan
        # from.
        self.allocate('00000009-0000-4000-8000-000000000000', node.uuid, 0,
                      0, cores=14)
        exc = self.assertRaises(w_exception.WatcherException,
                                self.strategy.execute)
        self.assertIn('ResQ could not plan', str(exc))

    def test_model_without_extra_specs_fails_the_audit(self):
        # Watcher's default: instances without their flavor's extra specs,
        # which would hide every ResQ instance and plan nothing.
        self.seed(ways=4)
        self.flags(enable_extended_attributes=False, group='compute_model')
        self.model.extended_attributes_enabled = None
        exc = self.assertRaises(w_exception.WatcherException,
                                self.strategy.execute)
        self.assertIn('[compute_model] enable_extended_attributes', str(exc))

    def test_placement_down_fails_the_audit(self):
        self.strategy.placement = base.placement_client.PlacementClient \
            .for_endpoint('http://127.0.0.1:9', timeout=2)
        self.assertRaises(w_exception.WatcherException,
                          self.strategy.execute)


class PluginTest(base.StrategyTestBase):

    def test_entry_points_load(self):
        strategy = w_loading.DefaultStrategyLoader().load(
            'resq_cache_consolidation')
        self.assertIsInstance(strategy, resq_strategy.CacheConsolidation)
        self.assertEqual('resq_cache_consolidation', strategy.goal.name)
        goal = w_loading.DefaultGoalLoader().load('resq_cache_consolidation')
        self.assertIsInstance(goal, resq_goal.CacheConsolidation)
        names = [s.name for s in goal.efficacy_specification.indicators_specs]
        self.assertIn('proven_gap', names)
        planner = w_loading.DefaultPlannerLoader().load('resq_sequential')
        self.assertIsInstance(planner, resq_planner.SequentialPlanner)

    def test_server_consolidation_spec_refuses_the_proven_gap(self):
        # Why ResQ has a goal of its own (see resq_nova.watcher.goal).
        eff = w_efficacy.Efficacy(mock_goal(w_specs.ServerConsolidation()),
                                  self.strategy)
        eff.set_efficacy_indicators(compute_nodes_count=3,
                                    released_compute_nodes_count=2,
                                    instance_migrations_count=2,
                                    proven_gap=0.0)
        self.assertRaises(w_exception.GlobalEfficacyComputationError,
                          eff.compute_global_efficacy)

    def test_schema_refuses_unknown_parameters(self):
        import jsonschema
        schema = resq_strategy.CacheConsolidation.get_schema()
        jsonschema.validate({'min_hosts_freed': 2, 'time_limit': 3},
                            schema)
        self.assertRaises(jsonschema.ValidationError, jsonschema.validate,
                          {'min_hosts_freed': 0}, schema)
        self.assertRaises(jsonschema.ValidationError, jsonschema.validate,
                          {'ways': 3}, schema)


def mock_goal(spec):
    class Goal:
        name = 'server_consolidation'
        efficacy_specification = spec
    return Goal()


class _Action:
    def __init__(self, name):
        self.uuid = name
        self.parents = []


class SequentialPlannerTest(base.StrategyTestBase):

    def test_actions_form_one_chain_in_order(self):
        planner = resq_planner.SequentialPlanner(mock_config())
        nop = [_Action('nop-1')]
        migrations = [_Action('m-%d' % n) for n in range(5)]
        graph = planner.compute_action_graph(iter([(70, nop),
                                                   (30, migrations)]))
        chain = nop + migrations
        self.assertEqual(len(chain) - 1, graph.number_of_edges())
        for earlier, later in zip(chain, chain[1:]):
            self.assertEqual([earlier.uuid], later.parents)
            self.assertTrue(graph.has_edge(earlier, later))
        self.assertEqual([], chain[0].parents)

    def test_weight_planner_would_run_two_at_once(self):
        # What the planner is for: Watcher's default runs migrations in
        # pairs, which ResQ's order does not allow.
        from watcher.decision_engine.planner import weight
        planner = weight.WeightPlanner(mock_config())
        migrations = [_Action('m-%d' % n) for n in range(3)]
        planner.compute_action_graph(iter([(30, migrations)]))
        self.assertEqual([], migrations[1].parents)


def mock_config():
    from unittest import mock
    return mock.Mock(weights={'nop': 70, 'migrate': 30},
                     parallelization={'nop': 1, 'migrate': 2})
