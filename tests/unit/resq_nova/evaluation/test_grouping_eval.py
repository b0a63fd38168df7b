from resq_nova.evaluation import grouping
from tests import base

SMALL = (('6nf-2cls', 6, 2),)


class GroupingScenarioTest(base.TestCase):

    def test_every_scenario_merges(self):
        for name, n, k in grouping.SCENARIOS:
            self.assertGreater(n, k, name)
        e = self.assertRaises(ValueError, grouping.evaluate, seeds=[0],
                              scenarios=(('4nf-4cls', 4, 4),))
        self.assertIn('more NFs than classes', str(e))
        self.assertRaises(ValueError, grouping.evaluate, seeds=[])

    def test_policies_split_every_nf_into_balanced_classes(self):
        scen = grouping.scenario(6, 0)
        self.assertEqual(6, len(scen['nfs']))
        for policy in grouping.POLICIES:
            groups = grouping.groups_of(policy, scen, 2, 0)
            self.assertEqual(list(range(6)),
                             sorted(i for g in groups for i in g), policy)
            if policy == 'isolated':
                self.assertEqual([1] * 6, [len(g) for g in groups])
            else:
                self.assertEqual([3, 3], [len(g) for g in groups], policy)
        # Round-robin deals in uuid order; heaviest-together puts the
        # three highest memory bandwidths first.
        self.assertEqual([[0, 2, 4], [1, 3, 5]],
                         grouping.groups_of('roundrobin', scen, 2, 0))
        bw = [scen['readings'][n.uuid].miss_bw for n in scen['nfs']]
        heavy = grouping.groups_of('heaviest', scen, 2, 0)[0]
        self.assertEqual(sorted(bw, reverse=True)[:3],
                         sorted((bw[i] for i in heavy), reverse=True))
        e = self.assertRaises(ValueError, grouping.groups_of, 'nope', scen,
                              2, 0)
        self.assertIn('unknown grouping policy', str(e))

    def test_isolated_loses_no_capacity_and_merging_does(self):
        scen = grouping.scenario(6, 0)
        _, total, lost = grouping.measure(
            scen, grouping.groups_of('isolated', scen, 2, 0), 0)
        self.assertEqual(6 * grouping.PERIODS, total)
        self.assertEqual(0.0, lost)
        _, _, rr = grouping.measure(
            scen, grouping.groups_of('roundrobin', scen, 2, 0), 0)
        _, _, ours = grouping.measure(
            scen, grouping.groups_of('netcontainer', scen, 2, 0), 0)
        self.assertGreater(rr, 0.0)
        # On this scenario the min-cost flow loses less than dealing.
        self.assertLess(ours, rr)

    def test_document_and_table(self):
        doc = grouping.evaluate(seeds=[0], scenarios=SMALL,
                                policies=('netcontainer', 'roundrobin',
                                          'isolated'))
        s = doc['scenarios']['6nf-2cls']
        self.assertEqual((6, 2), (s['nfs'], s['classes']))
        for p, f in s['policies'].items():
            self.assertEqual([f['violation_pct']], f['per_seed'], p)
            self.assertGreaterEqual(f['violation_pct'], 0.0)
            self.assertLessEqual(f['violation_pct'], 100.0)
        self.assertEqual(
            {'6nf-2cls': s['policies']['netcontainer']['violation_pct']},
            doc['netcontainer_violation_pct'])
        self.assertEqual(
            {'6nf-2cls': s['policies']['roundrobin']['violation_pct']},
            doc['roundrobin_violation_pct'])
        lines = grouping.table(doc)
        self.assertEqual(3, len(lines))
        self.assertIn('roundrobin', lines[1])
        self.assertTrue(lines[2].startswith('6nf-2cls'))
        self.assertEqual([], grouping.table({'scenarios': {}}))
        # Deterministic for a seed.
        self.assertEqual(doc, grouping.evaluate(
            seeds=[0], scenarios=SMALL,
            policies=('netcontainer', 'roundrobin', 'isolated')))


class GroupingOverSeedsTest(base.TestCase):
    """NetContainer against its baselines over seeds (issue 45)."""

    POLICIES = ('netcontainer', 'netcontainer-cmt', 'heaviest',
                'roundrobin')
    BASELINES = ('netcontainer-cmt', 'heaviest', 'roundrobin')

    def test_head_to_head(self):
        self.assertEqual(
            {'wins': 1, 'ties': 1, 'losses': 2, 'mean_diff_pts': 0.5},
            grouping.head_to_head([1.0, 2.0, 4.0, 3.0],
                                  [2.0, 2.0, 2.0, 2.0]))
        self.assertRaises(ValueError, grouping.head_to_head, [1.0], [])
        self.assertRaises(ValueError, grouping.head_to_head, [], [])

    def test_spread_is_the_mean_and_the_worst_seed(self):
        self.assertEqual({'mean': 2.0, 'worst_seed': 4.0,
                          'worst_seed_id': 2},
                         grouping._spread([1.0, 1.0, 4.0, 2.0]))
        # A tie names the lowest seed.
        self.assertEqual(0, grouping._spread([3.0, 3.0])['worst_seed_id'])

    def test_every_policy_over_the_seeds(self):
        doc = grouping.over_seeds(3, SMALL, self.POLICIES, self.BASELINES)
        self.assertEqual(3, doc['seeds'])
        s = doc['scenarios']['6nf-2cls']
        self.assertEqual((6, 2), (s['nfs'], s['classes']))
        self.assertEqual(set(self.POLICIES), set(s['violation_pct']))
        self.assertEqual(set(self.BASELINES), set(s['netcontainer_vs']))
        # Each seed is the evaluation's seed: the same NFs and loads.
        per = {p: [] for p in self.POLICIES}
        for seed in range(3):
            one = grouping.evaluate([seed], SMALL, self.POLICIES)
            for p in self.POLICIES:
                per[p] += one['scenarios']['6nf-2cls']['policies'][p][
                    'per_seed']
        self.assertEqual(per, s['by_seed'])
        for p, values in per.items():
            spread = s['violation_pct'][p]
            self.assertEqual(max(values), spread['worst_seed'])
            self.assertEqual(values[spread['worst_seed_id']],
                             spread['worst_seed'])
            self.assertAlmostEqual(sum(values) / 3, spread['mean'],
                                   delta=0.006)
        for b in self.BASELINES:
            h = s['netcontainer_vs'][b]
            self.assertEqual(3, h['wins'] + h['ties'] + h['losses'])
            self.assertEqual(grouping.head_to_head(per['netcontainer'],
                                                   per[b]), h)
            c = s['netcontainer_vs_capacity_loss'][b]
            self.assertEqual(3, c['wins'] + c['ties'] + c['losses'])
        text = '\n'.join(grouping.seeds_table(doc))
        self.assertIn('over 3 seeds', text)
        self.assertIn('netcontainer-cmt', text)
        self.assertEqual([], grouping.seeds_table({'seeds': 1,
                                                   'scenarios': {}}))

    def test_bad_arguments(self):
        self.assertRaises(ValueError, grouping.over_seeds, 0, SMALL)
        self.assertRaises(ValueError, grouping.over_seeds, True, SMALL)
        e = self.assertRaises(ValueError, grouping.over_seeds, 1, SMALL,
                              ('netcontainer', 'roundrobin'), ('heaviest',))
        self.assertIn('heaviest', str(e))

    def test_the_benchmark_compares_with_the_issues_baselines(self):
        self.assertGreaterEqual(grouping.SEEDS, 10)
        for b in ('netcontainer-cmt', 'heaviest', 'roundrobin'):
            self.assertIn(b, grouping.BASELINES)
            self.assertIn(b, grouping.POLICIES)
        names = [s[0] for s in grouping.SEED_SCENARIOS]
        for scen in grouping.SCENARIOS:
            self.assertIn(scen[0], names)
