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

import numpy

from resq_profiler import bound
from resq_profiler import curvefit
from tests import base

WAYS = list(range(1, 21))
LEVELS = [round(0.1 + 0.075 * i, 3) for i in range(13)]


def _quadratic(n=11):
    """J of the linear model 1, x, x^2 on n points of [-1, 1]."""
    x = numpy.linspace(-1.0, 1.0, n)
    return numpy.column_stack([numpy.ones(n), x, x * x])


class RunsBoundTest(base.TestCase):

    def test_bound_per_curve(self):
        # z^2 p s^2 / t^2 (to a part in 40,000): 6.25 * 4 * 0.25 = 6.25.
        self.assertEqual(7, bound.runs_for_curve(4, 0.5))
        self.assertEqual(5, bound.runs_for_curve(3, 0.5))
        self.assertEqual(25, bound.runs_for_curve(4, 1.0))
        self.assertEqual(19, bound.runs_for_curve(3, 1.0))

    def test_profile_bound(self):
        self.assertEqual(12, bound.runs_lower_bound(0.5))
        self.assertEqual(44, bound.runs_lower_bound(1.0))
        # More noise, a tighter tolerance or more confidence cost runs.
        self.assertLess(bound.runs_lower_bound(1.0),
                        bound.runs_lower_bound(1.0, tolerance_pct=0.5))
        self.assertLess(bound.runs_lower_bound(1.0),
                        bound.runs_lower_bound(1.0, z=3.0))

    def test_never_fewer_than_the_parameters(self):
        self.assertEqual(4, bound.runs_for_curve(4, 0.0))
        self.assertEqual(4, bound.runs_for_curve(4, 0.1))
        self.assertEqual(7, bound.runs_lower_bound(0.0))

    def test_information_includes_the_spread_term(self):
        self.assertAlmostEqual(40002.0, bound.information_per_run(0.5))

    def test_rejects_nonsense(self):
        for args in ((4, -0.5), (0, 0.5), (4.0, 0.5), (True, 0.5)):
            self.assertRaises(ValueError, bound.runs_for_curve, *args)
        self.assertRaises(ValueError, bound.runs_for_curve, 4, 0.5,
                          tolerance_pct=0.0)
        self.assertRaises(ValueError, bound.runs_for_curve, 4, 0.5, z=0)


class DesignTest(base.TestCase):

    def test_weighted_mean_of_d_is_p_for_any_design(self):
        jac = _quadratic()
        rng = numpy.random.default_rng(3)
        for _ in range(5):
            w = rng.random(len(jac))
            w /= w.sum()
            d = bound.variance_function(jac, w)
            self.assertAlmostEqual(3.0, float(w @ d), places=9)
            self.assertGreaterEqual(d.max(), 3.0)

    def test_optimal_design_of_a_quadratic(self):
        # Kiefer-Wolfowitz: -1, 0, 1 with a third each, max d = p.
        w, worst = bound.optimal_weights(_quadratic())
        self.assertAlmostEqual(3.0, worst, delta=3e-4)
        for i in (0, 5, 10):
            self.assertAlmostEqual(1.0 / 3.0, w[i], delta=0.01)
        self.assertLess(w[1:5].sum() + w[6:10].sum(), 0.01)

    def test_singular_design(self):
        jac = _quadratic()
        counts = numpy.zeros(len(jac))
        counts[[0, 10]] = 5
        self.assertIsNone(bound.variance_function(jac, counts))
        self.assertIsNone(bound.crb_sd(jac, counts, 0.5))

    def test_exact_design_of_a_quadratic(self):
        # At 1% noise and a 2.5% tolerance with z 2.5 each support point
        # needs one run (z s / t = 1); at 0.5% tolerance 25.
        counts, _ = bound.exact_design(_quadratic(), 1.0, tolerance_pct=2.5)
        self.assertEqual([1, 1, 1], [int(counts[i]) for i in (0, 5, 10)])
        self.assertEqual(3, int(counts.sum()))
        counts, worst = bound.exact_design(_quadratic(), 1.0,
                                           tolerance_pct=0.5)
        self.assertEqual(75, int(counts.sum()))
        self.assertLessEqual(
            worst, bound.information_per_run(1.0)
            / bound.required_information(0.5))

    def test_flat_throughput_curve_has_fewer_parameters(self):
        model = curvefit.SaturatingThroughput()
        # Working set of 1.28 ways: the grid sees the first way and the
        # plateau only.
        self.assertEqual(2, bound.rank(model, [2.26, 5.05, 1.28, 3.3], WAYS))
        self.assertEqual(4, bound.rank(model, [0.27, 0.33, 13.3, 5.6], WAYS))

    def test_least_squares_on_the_optimal_design_approaches_the_bound(self):
        model = curvefit.QueueingLatency()
        params = numpy.array([10.0, 0.5, 0.95])
        jac = bound.jacobian(model, params, LEVELS)
        counts, _ = bound.exact_design(jac, 1.0)
        self.assertEqual(bound.runs_for_curve(3, 1.0) + 2, counts.sum())
        out = bound.simulate(model, params, LEVELS, counts, 1.0, draws=150,
                             seed=1)
        # An efficient estimator's RMSE is the Cramer-Rao standard error.
        self.assertLess(out['rmse_to_crb'], 1.2)
        self.assertGreater(out['rmse_to_crb_mean'], 0.85)
        self.assertLessEqual(out['crb_sd_pct'], 1.0 / bound.Z + 1e-9)
