import itertools

from resq_agent.ondemand import grouping
from resq_agent.ondemand import model
from tests import base

MB = 1 << 20


def nf(name):
    return model.NF(name, 10.0)


def total_cost(groups, readings):
    return sum(grouping.sharing_cost(readings[a.uuid], readings[b.uuid])
               for g in groups for a, b in itertools.combinations(g, 2))


class GroupingTest(base.TestCase):

    def test_sharing_cost_grows_with_misses_and_footprint(self):
        small = model.Reading(1, 1 * MB, 1e6)
        heavy = model.Reading(1, 8 * MB, 4e9)
        self.assertLess(grouping.sharing_cost(small, small),
                        grouping.sharing_cost(small, heavy))
        self.assertEqual(grouping.sharing_cost(small, heavy),
                         grouping.sharing_cost(heavy, small))

    def test_heavy_missers_end_up_apart(self):
        readings = {'h1': model.Reading(1, 8 * MB, 5e9),
                    'h2': model.Reading(1, 8 * MB, 5e9),
                    'l1': model.Reading(1, 1 * MB, 1e6),
                    'l2': model.Reading(1, 1 * MB, 1e6)}
        groups = grouping.group([nf(n) for n in sorted(readings)],
                                readings, 2)
        names = [sorted(n.uuid for n in g) for g in groups]
        for g in names:
            self.assertFalse({'h1', 'h2'} <= set(g), names)
        self.assertEqual(4, sum(len(g) for g in names))

    def test_flow_matches_brute_force_on_small_cases(self):
        readings = {'a': model.Reading(1, 6 * MB, 3e9),
                    'b': model.Reading(1, 2 * MB, 1e9),
                    'c': model.Reading(1, 4 * MB, 2e8),
                    'd': model.Reading(1, 1 * MB, 4e9),
                    'e': model.Reading(1, 3 * MB, 7e8),
                    'f': model.Reading(1, 5 * MB, 1e7)}
        nfs = [nf(n) for n in sorted(readings)]
        groups = grouping.group(nfs, readings, 3)
        self.assertEqual(3, len(groups))
        self.assertTrue(all(len(g) <= 2 for g in groups))
        # With two per class, each non-anchor's cost is the pair's cost:
        # the flow's total equals the best over every way to pair the
        # non-anchors with the anchors.
        heads = [g[0] for g in groups]
        others = [n for n in nfs if n not in heads]
        best = min(sum(grouping.sharing_cost(readings[o.uuid],
                                             readings[h.uuid])
                       for o, h in zip(perm, heads))
                   for perm in itertools.permutations(others))
        self.assertAlmostEqual(best, total_cost(groups, readings),
                               delta=best * 1e-6)

    def test_fewer_nfs_than_classes_each_alone(self):
        readings = {'a': model.Reading(1, MB, 1e9)}
        self.assertEqual([['a']], [[n.uuid for n in g] for g in
                                   grouping.group([nf('a')], readings, 4)])
        self.assertRaises(ValueError, grouping.group, [nf('a')], readings, 0)
