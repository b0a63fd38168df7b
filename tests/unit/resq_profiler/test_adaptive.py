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
        self.assertRaises(ValueError, adaptive.sample, abs, [1, 2, 3], 1.0,
                          max_points=2)

    def test_probe_comes_after_the_first_midpoint(self):
        calls = []

        def f(w):
            calls.append(w)
            return 5.0 * (1 - math.exp(-w / 3.0))

        # With the smallest budget the interpolation is still tested once.
        res = adaptive.sample(f, range(1, 21), 1.0, max_points=3,
                              shape='concave', probe=1)
        self.assertEqual([1, 20, 10], calls)
        self.assertEqual(1, len(res.checks))
        self.assertTrue(res.budget_exhausted)
        self.assertGreater(res.reported_error_pct, 1.0)


class NoiseAndCurvatureTest(base.TestCase):
    """Measurements go where the curve bends; noise is caught and paid."""

    def test_points_gather_at_the_knee(self):
        # Concave, linear up to a knee at 6 ways, flat after it.
        def f(w):
            return min(w, 6.0)

        grid = list(range(1, 21))
        res = adaptive.sample(f, grid, 1.0, shape='concave')
        xs = [x for x, _ in res.points]
        self.assertIn(6, xs)
        # The flat part after the knee is one line: it needs no point
        # between 10 ways and the end of the grid.
        self.assertEqual([], [x for x in xs if 10 < x < 19])
        self.assertLessEqual(adaptive.max_error_pct(
            res.points, [(w, f(w)) for w in grid]), 1.0)
        self.assertEqual(0, res.repeats)

    def test_a_dip_against_the_shape_is_measured_again(self):
        calls = []

        def f(w):
            calls.append(w)
            # The first measurement at 10 ways is an outlier 5% low: a dip
            # that no concave curve through the ends has.
            if w == 10 and calls.count(10) == 1:
                return 21.0 * 0.95
            return 2.0 * w + 1

        res = adaptive.sample(f, range(1, 21), 1.0, shape='concave')
        # The three points of the contradiction were measured again (the
        # sampler cannot tell which one is off), the dip a third time, and
        # the median rule dropped the outlier.
        self.assertEqual(3, calls.count(10))
        self.assertEqual(2, calls.count(1))
        self.assertEqual(2, calls.count(20))
        self.assertEqual([(10, 21.0 * 0.95)], res.rejected)
        self.assertEqual([(1, 3.0), (10, 21.0), (20, 41.0)], res.points)
        # Every call counts, the repeats too.
        self.assertEqual(len(calls), res.measurements)
        self.assertEqual(4, res.repeats)
        self.assertEqual(0.0, res.noise_pct)

    def test_noise_is_learnt_and_every_kept_point_repeated(self):
        import random
        rng = random.Random(3)
        calls = []

        def f(w):
            calls.append(w)
            return (4.0 - 3.0 / w) * (1 + rng.gauss(0, 0.005))

        seen = []
        res = adaptive.sample(f, range(1, 21), 1.0, shape='concave',
                              probe=1, progress=lambda x, y, n: seen.append(n))
        self.assertGreater(res.noise_pct, 0.0)
        self.assertEqual(list(range(1, len(calls) + 1)), seen)
        self.assertEqual(len(calls), res.measurements)
        self.assertEqual(res.measurements - len(res.points), res.repeats)
        # Under noise every point the curve keeps was measured more than
        # once (the precision rule); its value is the mean of its readings,
        # fitted to the shape with the readings as weights.
        means, weights = [], []
        for x, values in res.samples.items():
            self.assertGreater(len(values), 1, x)
            kept = [v for v in values if (x, v) not in res.rejected]
            means.append((x, sum(kept) / len(kept)))
            weights.append(len(kept))
        fitted = adaptive.shape_fit(means, weights, 'concave')
        for (x, y), (fx, fy) in zip(res.points, fitted):
            self.assertEqual(fx, x)
            self.assertAlmostEqual(fy, y)
        # The stated error carries the noise: two standard errors.
        self.assertGreater(res.noise_error_pct, 0.0)
        self.assertGreaterEqual(res.reported_error_pct, res.noise_error_pct)

    def test_shape_fit(self):
        shaped = [(1, 1.0), (2, 2.0), (3, 2.5), (4, 2.6)]
        self.assertEqual(shaped, adaptive.shape_fit(shaped, [1] * 4,
                                                    'concave'))
        # A dip in a concave curve is evened out with its neighbours, the
        # more measured point moving less.
        dip = [(1, 1.0), (2, 2.0), (3, 2.0), (4, 3.0)]
        fit = adaptive.shape_fit(dip, [1, 3, 1, 1], 'concave')
        ys = [y for _, y in fit]
        for k in (1, 2):
            self.assertGreaterEqual(
                ys[k] + 1e-9, (ys[k - 1] + ys[k + 1]) / 2.0)
        self.assertLess(abs(ys[1] - 2.0), abs(ys[2] - 2.0))
        # Weighted least squares keeps the weighted mean.
        self.assertAlmostEqual(sum(w * y for w, y in zip([1, 3, 1, 1], ys)),
                               sum(w * y for w, (_, y) in
                                   zip([1, 3, 1, 1], dip)))
        # Convex and nondecreasing: a drop is pooled.
        drop = [(0.1, 10.0), (0.5, 9.8), (1.0, 20.0)]
        ys = [y for _, y in adaptive.shape_fit(drop, [1, 1, 1], 'convex')]
        self.assertLessEqual(ys[0], ys[1] + 1e-9)

    def test_noiseless_probe_costs_one_measurement(self):
        res = adaptive.sample(lambda x: 2 * x + 1, range(1, 21), 1.0,
                              shape='concave', probe=1)
        self.assertEqual(0.0, res.noise_pct)
        self.assertEqual(1, res.repeats)
        self.assertEqual(len(res.points) + 1, res.measurements)

    def test_known_points_are_used_not_counted(self):
        calls = []

        def f(x):
            calls.append(x)
            return 10 + 1 / (1 - 0.95 * x)

        grid = [0.1 + 0.075 * i for i in range(13)]
        res = adaptive.sample(f, grid, 1.0, shape='convex',
                              known={grid[-1]: [f(grid[-1])]})
        calls.pop(0)       # the known measurement, taken "elsewhere"
        self.assertNotIn(grid[-1], calls)
        self.assertEqual(len(calls), res.measurements)
        self.assertEqual(grid[-1], res.points[-1][0])
        self.assertRaises(ValueError, adaptive.sample, f, grid, 1.0,
                          known={0.5: [1.0]})
        self.assertRaises(ValueError, adaptive.sample, f, grid, 1.0,
                          known={grid[0]: []})

    def test_reported_error_is_never_below_a_failed_check(self):
        def f(w):
            return 5.0 * (1 - math.exp(-w / 2.0))

        for budget in range(3, 9):
            res = adaptive.sample(f, range(1, 41), 0.5, max_points=budget,
                                  shape='concave')
            self.assertTrue(res.budget_exhausted, budget)
            failed = [c.error_pct for c in res.checks
                      if c.outcome == 'unresolved']
            self.assertGreaterEqual(res.reported_error_pct,
                                    max(failed + [0.0]), budget)
            self.assertGreater(res.reported_error_pct, 0.5, budget)
            self.assertGreaterEqual(res.reported_error_pct,
                                    res.unresolved_error_pct)
        done = adaptive.sample(f, range(1, 41), 0.5, shape='concave')
        self.assertFalse(done.budget_exhausted)
        self.assertLessEqual(done.reported_error_pct, 0.5)
        self.assertEqual([], [c for c in done.checks
                              if c.outcome == 'unresolved'])
