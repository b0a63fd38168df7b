from resq_agent.ondemand import model
from resq_agent.ondemand import mrc
from tests import base

MB = 1 << 20


def flat(rate, top=64 * MB):
    """A curve missing ``rate`` bytes/s whatever it holds (streaming)."""
    return mrc.Curve([0.0, top], [rate, rate])


class CurveTest(base.TestCase):

    def test_bad_points_are_refused_with_the_reason(self):
        e = self.assertRaises(ValueError, mrc.Curve, [0.0], [1.0])
        self.assertIn('at least two', str(e))
        e = self.assertRaises(ValueError, mrc.Curve, [1.0, 2.0], [1, 1])
        self.assertIn('start at 0 bytes', str(e))
        self.assertRaises(ValueError, mrc.Curve, [0.0, 2.0, 2.0],
                          [1, 1, 1])

    def test_constant_miss_rate_fills_linearly(self):
        c = flat(1e6)
        self.assertAlmostEqual(3e6, float(c.footprint(3.0)), delta=1.0)
        # A rising curve is flattened: holding more never misses more.
        c = mrc.Curve([0, MB, 2 * MB], [5e8, 1e8, 3e8])
        self.assertEqual(1e8, c.miss_bw(2 * MB))

    def test_footprint_grows_slower_as_misses_fall(self):
        c = mrc.power_law(1e9, 8 * MB, 2.0)
        f = [float(c.footprint(t)) for t in (1e-4, 1e-3, 1e-2, 1e-1)]
        self.assertEqual(sorted(f), f)
        self.assertLess(f[-1], 8 * MB * 1.01)
        # HOTL: the footprint grows at the miss rate it holds at, so the
        # time to fill c is the integral of dc / M(c), here in closed
        # form: W / (A (beta - 1)) ((1 - c/W)**(1 - beta) - 1).
        for frac in (0.2, 0.5, 0.8, 0.95):
            t = 8 * MB / 1e9 * ((1 - frac) ** -1.0 - 1.0)
            self.assertAlmostEqual(frac * 8 * MB, float(c.footprint(t)),
                                   delta=0.03 * frac * 8 * MB)


class ComposeTest(base.TestCase):

    def test_shares_add_up_and_follow_the_miss_rates(self):
        # Two streams: each holds what it inserted over the same window,
        # so in proportion to its miss rate.
        held = mrc.compose([flat(3e8), flat(1e8)], 8 * MB)
        self.assertAlmostEqual(8 * MB, sum(held), delta=1e3)
        self.assertAlmostEqual(6 * MB, held[0], delta=0.02 * MB)
        same = mrc.compose([mrc.power_law(1e9, 4 * MB, 2.0)] * 2, 3 * MB)
        self.assertAlmostEqual(same[0], same[1], delta=1.0)
        self.assertEqual([5.0], mrc.compose([flat(1.0)], 5.0))

    def test_extra_misses_charge_who_loses(self):
        hot = mrc.power_law(2e9, 6 * MB, 3.0)     # steep: cache-sensitive
        stream = flat(3e9)
        # A stream next to a cache-sensitive NF takes most of the class.
        cost = mrc.extra_misses([hot, stream], 4 * MB)
        alone = hot.miss_bw(2 * MB)
        held = mrc.compose([hot, stream], 4 * MB)[0]
        self.assertLess(held, 2 * MB)
        self.assertAlmostEqual(hot.miss_bw(held) - alone, cost,
                               delta=cost * 1e-6)
        # Weights scale each member's loss; one member costs nothing.
        self.assertAlmostEqual(3 * cost, mrc.extra_misses(
            [hot, stream], 4 * MB, [3.0, 1.0]), delta=cost * 1e-6)
        self.assertEqual(0.0, mrc.extra_misses([hot], 4 * MB))
        # A class that holds both working sets costs nothing.
        small = mrc.power_law(1e9, 1 * MB, 2.0)
        self.assertEqual(0.0, mrc.extra_misses([small, small], 4 * MB))

    def test_vectorised_extension_equals_one_by_one(self):
        curves = [mrc.power_law(1e9, 4 * MB, 2.0),
                  mrc.power_law(1e8, 2 * MB, 3.0),
                  mrc.power_law(5e8, 1 * MB, 1.5), flat(2e9)]
        comp = mrc.Composer(curves)
        w = [1.0, 2.0, 1.0, 1.0]
        got = comp.extra_with([0, 1], 5 * MB, [2, 3], w)
        for u, value in zip((2, 3), got):
            self.assertAlmostEqual(
                comp.extra([0, 1, u], 5 * MB, [w[0], w[1], w[u]]), value,
                delta=1e-6 * max(value, 1.0))


class SourcesTest(base.TestCase):

    def test_profile_shapes_the_curve_and_the_reading_scales_it(self):
        # Throughput alone against ways: the loss 1/T - 1/T(peak) shapes.
        points = [(1, 1.0), (2, 1.6), (4, 1.9), (8, 2.0)]
        c = mrc.from_throughput(points, MB, 2 * MB, 6e8)
        self.assertEqual('profile', c.source)
        self.assertAlmostEqual(6e8, c.miss_bw(2 * MB), delta=1.0)
        loss = {w: 1 / t - 1 / 2.0 for w, t in points}
        self.assertAlmostEqual(loss[1] / loss[2],
                               c.miss_bw(MB) / c.miss_bw(2 * MB),
                               delta=1e-6)
        self.assertEqual(0.0, c.miss_bw(8 * MB))
        self.assertRaises(ValueError, mrc.from_throughput, [(1, 1.0)], MB,
                          MB, 1.0)
        self.assertRaises(ValueError, mrc.from_throughput,
                          [(1, 0.0), (2, 1.0)], MB, MB, 1.0)

    def test_readings_under_several_allocations_recover_the_curve(self):
        truth = mrc.power_law(2e9, 10 * MB, 3.0)
        points = [(o * MB, truth.miss_bw(o * MB)) for o in (1, 3, 5, 7)]
        c = mrc.from_readings(points)
        self.assertEqual('readings', c.source)
        for o in (2, 4, 6):
            self.assertAlmostEqual(truth.miss_bw(o * MB),
                                   c.miss_bw(o * MB),
                                   delta=0.1 * truth.miss_bw(o * MB))

    def test_one_reading_takes_the_prior_through_it(self):
        c = mrc.from_readings([(2 * MB, 4e8)])
        self.assertEqual('prior', c.source)
        self.assertAlmostEqual(4e8, c.miss_bw(2 * MB), delta=4e8 * 0.02)
        self.assertLess(c.miss_bw(3.9 * MB), 4e8 * 0.01)
        e = self.assertRaises(ValueError, mrc.from_readings, [(0.0, 1e8)])
        self.assertIn('positive LLC occupancy', str(e))

    def test_curve_for_prefers_the_profile(self):
        r = model.Reading(10.0, 2 * MB, 5e8)
        self.assertEqual('profile', mrc.curve_for(
            r, MB, throughput=[(1, 1.0), (4, 2.0)]).source)
        self.assertEqual('readings', mrc.curve_for(
            r, MB, history=[(4 * MB, 1e8)]).source)
        self.assertEqual('prior', mrc.curve_for(r, MB).source)
        # Nothing measured yet still gives a curve.
        self.assertEqual('prior', mrc.curve_for(model.Reading(1.0), MB)
                         .source)


class FastPathsTest(base.TestCase):
    """Curves made without the constructor's checks are the same curves."""

    def assertSameCurve(self, want, got):
        for field in ('nbytes', 'miss', '_lf'):
            self.assertEqual(getattr(want, field).tolist(),
                             getattr(got, field).tolist(), field)
        self.assertEqual((want.tail, want.source), (got.tail, got.source))

    def test_scaled_is_the_curve_of_the_scaled_misses(self):
        c = mrc.power_law(2e9, 5 * MB, 3.0)
        for k in (0.0, 0.5, 1.0, 3.7):
            self.assertSameCurve(mrc.Curve(c.nbytes, c.miss * k, c.source),
                                 c.scaled(k))
        self.assertRaises(ValueError, c.scaled, -1.0)

    def test_power_law_is_what_the_constructor_makes(self):
        u = mrc._U
        for amp, ws, beta in ((1e9, 8 * MB, 2.0), (3e6, 0.2 * MB, 6.0),
                              (0.0, MB, 1.25)):
            self.assertSameCurve(
                mrc.Curve(ws * (1.0 - u), amp * u ** beta, 'readings'),
                mrc.power_law(amp, ws, beta))
