import math

from resq_profiler import adaptive
from tests import base


class AdaptiveSampleTest(base.TestCase):

    def test_linear_curve_needs_three_points(self):
        calls = []

        def f(x):
            calls.append(x)
            return 2 * x + 1

        res = adaptive.sample(f, range(1, 21), 1.0)
        self.assertEqual([1, 10, 20], sorted(calls))
        self.assertEqual([(1, 3), (10, 21), (20, 41)], res.points)
        self.assertFalse(res.budget_exhausted)

    def test_concave_curve_within_tolerance_of_sweep(self):
        def f(w):
            return 5.0 * (1 - math.exp(-w / 3.0))

        grid = list(range(1, 21))
        res = adaptive.sample(f, grid, 1.0, shape='concave')
        err = adaptive.max_error_pct(res.points, [(w, f(w)) for w in grid])
        self.assertLessEqual(err, 1.0)
        self.assertLess(len(res.points), len(grid))
        self.assertLessEqual(res.max_check_error_pct, float('inf'))

    def test_midpoint_rule_alone_misses_a_sharp_knee(self):
        def f(w):
            return 0.985 if w == 1 else 1.0

        grid = list(range(1, 21))
        sweep = [(w, f(w)) for w in grid]
        plain = adaptive.sample(f, grid, 1.0)
        self.assertGreater(adaptive.max_error_pct(plain.points, sweep), 1.0)
        bounded = adaptive.sample(f, grid, 1.0, shape='concave')
        self.assertLessEqual(adaptive.max_error_pct(bounded.points, sweep),
                             1.0)

    def test_convex_curve(self):
        grid = [0.1 + 0.075 * i for i in range(13)]

        def f(x):
            return 10 + 1 / (1 - 0.95 * x)

        res = adaptive.sample(f, grid, 1.0, shape='convex')
        self.assertLessEqual(adaptive.max_error_pct(
            res.points, [(x, f(x)) for x in grid]), 1.0)

    def test_budget_and_progress(self):
        seen = []
        res = adaptive.sample(lambda x: x ** 3, range(1, 100), 0.1,
                              max_points=5,
                              progress=lambda x, y, n: seen.append(n))
        self.assertEqual(5, len(res.points))
        self.assertTrue(res.budget_exhausted)
        self.assertEqual([1, 2, 3, 4, 5], seen)
        # The budget stopped the refinement: the error left is reported,
        # above the tolerance, not hidden.
        self.assertGreater(res.unresolved_error_pct, 0.1)
        worst_left = max(c[3] for c in res.checks if c[3] > 0.1)
        self.assertLessEqual(res.unresolved_error_pct, worst_left)
        done = adaptive.sample(lambda x: x ** 3, range(1, 100), 0.1)
        self.assertFalse(done.budget_exhausted)
        self.assertEqual(0.0, done.unresolved_error_pct)

    def test_bad_arguments(self):
        self.assertRaises(ValueError, adaptive.sample, abs, [1], 1.0)
        self.assertRaises(ValueError, adaptive.sample, abs, [2, 1], 1.0)
        self.assertRaises(ValueError, adaptive.sample, abs, [1, 2], 0)
        self.assertRaises(ValueError, adaptive.sample, abs, [1, 2, 3], 1.0,
                          shape='wavy')
