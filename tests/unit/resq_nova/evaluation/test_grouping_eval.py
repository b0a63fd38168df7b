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
