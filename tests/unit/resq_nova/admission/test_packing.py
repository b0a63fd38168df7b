import itertools

from resq_nova.admission import packing
from tests import base

CAP = {1: 0.56, 2: 0.67, 3: 0.77, 4: 0.86, 5: 0.92, 6: 0.96, 7: 0.98,
       8: 1.0}


def _meets(config, target):
    return sum(CAP[w] for w in config) >= target - 1e-9


class ConfigurationsTest(base.TestCase):

    def test_minimal_configurations_are_exactly_the_minimal_ones(self):
        target = 1.5
        found = set(packing.configurations(CAP, target))
        brute = set()
        for k in range(1, 4):
            for combo in itertools.combinations_with_replacement(
                    sorted(CAP, reverse=True), k):
                c = tuple(sorted(combo, reverse=True))
                if not _meets(c, target):
                    continue
                if len(c) > 1 and _meets(c[:-1], target):
                    continue
                smaller = [c[:i] + (c[i] - 1,) + c[i + 1:]
                           for i in range(len(c)) if c[i] > 1]
                if any(_meets(s, target) for s in smaller):
                    continue
                brute.add(c)
        self.assertEqual(brute, found)
        self.assertIn((1, 1, 1), found)
        self.assertIn((6, 1), found)
        self.assertNotIn((8, 4), found)  # 7 ways would do for the 8

    def test_single_instance_and_impossible_targets(self):
        self.assertEqual([(1,)], packing.configurations(CAP, 0.5))
        self.assertEqual([(5,), (1, 1)], packing.configurations(CAP, 0.9))
        self.assertRaises(packing.TooManyConfigurations,
                          packing.configurations, CAP, 3.0, limit=10)
        self.assertRaises(packing.TooManyConfigurations,
                          packing.configurations, CAP, 50.0)

    def test_patterns(self):
        pats = packing.patterns(9, 18)
        self.assertEqual(318, len(pats))  # partitions of 18, <= 9 parts
        self.assertTrue(all(sum(p) == 18 and len(p) <= 9 for p in pats))
        self.assertIn((2,) * 9, pats)
        self.assertIn((18,), pats)
        self.assertEqual([(2, 2), (3, 1)], sorted(packing.patterns(2, 4,
                                                                   [1, 2, 3])))

    def test_assign_largest_to_largest(self):
        got = packing.assign([('a', 1), ('b', 5), ('c', 2)],
                             [(4, 1), (6,)])
        self.assertEqual([('b', 5, 1), ('c', 2, 0), ('a', 1, 0)], got)
        self.assertRaises(ValueError, packing.assign, [('a', 5)], [(4,)])
        self.assertRaises(ValueError, packing.assign, [('a', 1)] * 3,
                          [(1, 1)])
