import math
import random
import statistics

from resq_common import profile
from resq_profiler import adaptive
from resq_profiler import bound
from resq_profiler import catalog
from resq_profiler import curvefit
from resq_profiler import modelfit
from resq_profiler import nfmodel
from resq_profiler import profiler
from tests import base

WAYS = list(range(1, 21))
LEVELS = [round(0.1 + 0.075 * i, 3) for i in range(13)]


def _worst(points, truth):
    return max(curvefit.rel_err_pct(profile.interpolate(points, x), y)
               for x, y in truth)


class _Counter:
    def __init__(self, f, noise_pct=0.0, seed=0):
        self.f = f
        self.calls = []
        self.noise = noise_pct / 100.0
        self.rng = random.Random(seed)

    def __call__(self, x):
        self.calls.append(x)
        value = self.f(x)
        if self.noise:
            value *= 1.0 + self.rng.gauss(0.0, self.noise)
        return value


class ShapeModelTest(base.TestCase):

    def test_throughput_model_holds_every_catalog_nf(self):
        # Four points pin the model down for every NF whose working set
        # is larger than one way; each curve's family is the model's.
        m = curvefit.SaturatingThroughput()
        for name in catalog.names():
            nf = nfmodel.NFModel(catalog.get(name))
            xs = [WAYS[i] for i in m.initial(WAYS)] + [2, 13]
            params = m.fit(xs, [nf.throughput_mpps(w) for w in xs])
            for w in WAYS:
                self.assertAlmostEqual(
                    nf.throughput_mpps(w), float(m.value(params, [w])[0]),
                    delta=1e-6 * nf.throughput_mpps(w), msg=(name, w))

    def test_latency_model_holds(self):
        m = curvefit.QueueingLatency()
        nf = nfmodel.NFModel(catalog.get('Stats'))
        xs = [LEVELS[i] for i in m.initial(LEVELS)]
        params = m.fit(xs, [nf.latency_p95_us(x) for x in xs])
        self.assertAlmostEqual(0.95, params[2], places=6)
        for x in LEVELS:
            self.assertAlmostEqual(nf.latency_p95_us(x),
                                   float(m.value(params, [x])[0]), places=6)

    def test_leverage_falls_with_measurements(self):
        m = curvefit.QueueingLatency()
        params = [10.0, 1.0, 0.95]
        few = curvefit.leverage(m, params, [0.1, 0.55, 1.0], LEVELS)
        more = curvefit.leverage(m, params, [0.1, 0.55, 1.0] * 4, LEVELS)
        for a, b in zip(few, more):
            self.assertAlmostEqual(a / 2.0, b, places=6)
        self.assertGreater(max(few), 0.5)


class ModelSampleTest(base.TestCase):

    def test_noiseless_curve_in_the_family_needs_six_points(self):
        nf = nfmodel.NFModel(catalog.get('LPM'))
        f = _Counter(nf.throughput_mpps)
        res = modelfit.sample(f, WAYS, curvefit.SaturatingThroughput(), 1.0)
        self.assertEqual('saturating-miss', res.kind)
        self.assertTrue(res.derived)
        self.assertEqual(WAYS, [x for x, _ in res.points])
        self.assertLessEqual(len(f.calls), 6)
        self.assertEqual(len(set(f.calls)), len(f.calls))   # no repeats
        self.assertEqual(0, res.repeats)
        self.assertLess(_worst(res.points, [(w, nf.throughput_mpps(w))
                                            for w in WAYS]), 1e-4)
        self.assertLess(res.reported_error_pct, 1e-3)
        # Two checks in a row predicted the point before it was measured.
        self.assertEqual(['pass', 'pass'],
                         [c.outcome for c in res.checks[-2:]])

    def test_checks_find_a_knee_the_first_points_miss(self):
        # Efficuts is flat from three ways on; 1, 3, 8, 20 do not say
        # where the knee is, so the checks go there.
        nf = nfmodel.NFModel(catalog.get('Efficuts'))
        f = _Counter(nf.throughput_mpps)
        res = modelfit.sample(f, WAYS, curvefit.SaturatingThroughput(), 1.0)
        self.assertIn(2, f.calls)
        self.assertLess(_worst(res.points, [(w, nf.throughput_mpps(w))
                                            for w in WAYS]), 0.01)

    def test_latency_uses_what_it_knows(self):
        nf = nfmodel.NFModel(catalog.get('Snort'))
        f = _Counter(nf.latency_p95_us)
        res = modelfit.sample(f, LEVELS, curvefit.QueueingLatency(), 1.0,
                              known={1.0: [nf.latency_p95_us(1.0)]},
                              dense=[0.9625])
        self.assertNotIn(1.0, f.calls)
        self.assertLessEqual(len(f.calls), 4)
        self.assertIn(0.9625, [x for x, _ in res.points])
        self.assertAlmostEqual(nf.latency_p95_us(0.9625),
                               dict(res.points)[0.9625], places=6)

    def test_noiseless_misfit_falls_back_to_linear(self):
        # A step the model cannot follow: the measured points are kept and
        # interpolated linearly, as ResQ does, within the tolerance.
        def f(w):
            return 2.0 if w < 10 else 3.0 + 0.01 * w

        calls = _Counter(f)
        res = modelfit.sample(calls, WAYS, curvefit.SaturatingThroughput(),
                              1.0, shape='concave')
        self.assertEqual('linear', res.kind)
        self.assertFalse(res.derived)
        self.assertIn('saturating-miss', res.fallback)
        for x, y in res.points:
            self.assertEqual(f(x), y)
        self.assertEqual(res.measurements, len(calls.calls))

    def test_noisy_curve_fits_within_tolerance_with_fewer_runs(self):
        nf = nfmodel.NFModel(catalog.get('Stats'))
        truth = [(w, nf.throughput_mpps(w)) for w in WAYS]
        runs, errs, old_runs = [], [], []
        for seed in range(3):
            f = _Counter(nf.throughput_mpps, 0.5, seed)
            res = modelfit.sample(f, WAYS, curvefit.SaturatingThroughput(),
                                  1.0, max_points=40, shape='concave')
            self.assertEqual('saturating-miss', res.kind)
            self.assertGreater(res.noise_pct, 0.0)
            self.assertLessEqual(res.reported_error_pct, 1.0)
            self.assertFalse(res.budget_exhausted)
            runs.append(res.measurements)
            errs.append(_worst(res.points, truth))
            g = _Counter(nf.throughput_mpps, 0.5, seed)
            old = adaptive.sample(g, WAYS, 1.0, max_points=40,
                                  shape='concave', probe=1)
            old_runs.append(old.measurements)
        self.assertLessEqual(max(errs), 1.0)
        self.assertLess(statistics.median(runs),
                        statistics.median(old_runs))

    def test_budget_cut_curve_states_its_error(self):
        nf = nfmodel.NFModel(catalog.get('Stats'))
        res = modelfit.sample(nf.throughput_mpps, WAYS,
                              curvefit.SaturatingThroughput(), 1.0,
                              max_points=3)
        self.assertTrue(res.budget_exhausted)
        self.assertGreater(res.reported_error_pct, 1.0)
        self.assertTrue(math.isfinite(res.reported_error_pct))

    def test_bad_input(self):
        m = curvefit.QueueingLatency()
        self.assertRaises(ValueError, modelfit.sample, abs, [1.0], m)
        self.assertRaises(ValueError, modelfit.sample, abs, [2.0, 1.0], m)
        self.assertRaises(ValueError, modelfit.sample, abs, [1.0, 2.0], m,
                          tolerance_pct=0)
        self.assertRaises(ValueError, modelfit.sample, abs, [1.0, 2.0], m,
                          known={3.0: [1.0]})
        exc = self.assertRaises(ValueError, modelfit.sample,
                                lambda x: -1.0, [1.0, 2.0, 3.0], m)
        self.assertIn('positive', str(exc))


class KnownNoiseTest(base.TestCase):
    """``noise_known``: the testbed's noise given, not learnt."""

    def _sample(self, seed, noise, known, told=None):
        nf = nfmodel.NFModel(catalog.get('Stats'))
        f = _Counter(nf.throughput_mpps, noise, seed)
        res = modelfit.sample(f, WAYS, curvefit.SaturatingThroughput(), 1.0,
                              max_points=60, shape='concave',
                              noise_pct=told or noise, noise_known=known)
        truth = [(w, nf.throughput_mpps(w)) for w in WAYS]
        return res, _worst(res.points, truth)

    def test_comes_near_the_bound(self):
        lower = bound.runs_for_curve(4, 0.5)
        for seed in range(3):
            res, err = self._sample(seed, 0.5, True)
            learnt, _ = self._sample(seed, 0.5, False)
            self.assertEqual('saturating-miss', res.kind)
            # At least the bound and two distinct points per parameter;
            # within the best whole-run design's 8 and the spread's 2.
            self.assertGreaterEqual(res.measurements, lower)
            self.assertGreaterEqual(len(res.measured), 8)
            self.assertLessEqual(res.measurements, 12)
            self.assertLess(res.measurements, learnt.measurements)
            self.assertLessEqual(res.reported_error_pct, 1.0)
            self.assertLess(err, 1.0)

    def test_a_wrong_figure_is_found_out(self):
        # The testbed is six times noisier than it is said to be: the
        # residuals say so and the noise is learnt after all.
        res, _ = self._sample(0, 3.0, True, told=0.5)
        self.assertGreater(res.noise_pct, 1.5)
        told, _ = self._sample(0, 0.5, True)
        self.assertGreater(res.measurements, told.measurements)

    def test_latency_starts_where_the_optimal_design_is(self):
        m = curvefit.QueueingLatency()
        self.assertEqual([0, 11, 12], m.initial_known(LEVELS))
        self.assertEqual([0, 6, 12], m.initial(LEVELS))
        thr = curvefit.SaturatingThroughput()
        self.assertEqual(thr.initial(WAYS), thr.initial_known(WAYS))

    def test_next_point_fills_the_optimal_design(self):
        m = curvefit.QueueingLatency()
        params = [10.0, 0.5, 0.95]
        obs = [LEVELS[0], LEVELS[11], LEVELS[12], LEVELS[0], LEVELS[12]]
        counts = {0: 2, 11: 1, 12: 2}
        # The optimal design has a third of the runs at each of these:
        # the next goes to the one below its share.
        self.assertEqual(11, modelfit.next_point(
            m, params, obs, LEVELS, range(len(LEVELS)), counts))
        # Among unmeasured points only, the one the design wants most.
        self.assertIn(modelfit.next_point(
            m, params, obs, LEVELS, [1, 5, 10], counts), (10,))

    def test_z_is_the_bounds(self):
        self.assertEqual(modelfit.Z, bound.Z)


class ProfileRecordsTheFitTest(base.TestCase):

    def test_profile_says_which_points_are_derived(self):
        prof = profiler.run(self.conf, 'MazuNAT', nfmodel.Traffic())
        fit = prof.measurement['fit']
        self.assertEqual('saturating-miss', fit['throughput']['model'])
        self.assertTrue(fit['throughput']['derived_points'])
        self.assertEqual('queueing', fit['latency']['model'])
        self.assertEqual(prof.measurement['points']['throughput'],
                         len(fit['throughput']['measured']))
        self.assertEqual(20, len(prof.throughput))
        # Every measured point is on the stored curve (noiseless, exact).
        for w, y, n in fit['throughput']['measured']:
            self.assertAlmostEqual(y, prof.throughput_at(w), places=6)
            self.assertEqual(1, n)
        self.assertIn('working_set_ways', fit['throughput']['params'])
        # The record survives the store's round trip.
        again = type(prof).from_json(prof.to_json())
        self.assertEqual(fit, again.measurement['fit'])
        self.assertEqual(prof.throughput, again.throughput)

    def test_schema_checks_the_fit_record(self):
        from resq_profiler import exception
        doc = profiler.run(self.conf, 'LPM', nfmodel.Traffic()).to_dict()
        doc['measurement']['fit']['latency']['measured'][0][2] = 0
        exc = self.assertRaises(exception.InvalidProfile,
                                profile.Profile.from_dict, doc)
        self.assertIn('measurement.fit.latency.measured[0][2]', str(exc))
