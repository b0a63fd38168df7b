"""Adaptive sampling of a monotone curve under measurement noise (ResQ §5.2).

ResQ measures a curve's ends and midpoint and splits an interval while
linear interpolation misses its measured midpoint by more than the
tolerance. This sampler keeps the tolerance and changes how measurements
are spent.

Where the curve bends. Every interval between measured points gets an
estimate of the interpolation error left in it; the interval with the
largest estimate is split next, at the grid point where that error is
largest, until no estimate exceeds the tolerance. When the caller says the
curve is concave or convex the estimate is a bound: the curve lies between
an interval's chord and the extensions of its neighbours' chords, so the
chord cannot miss it by more than their gap. The bound catches a sharp
knee near one end of a long interval that a midpoint test passes (IPsec's
throughput, flat from two ways on, is the example in the catalog); for a
smooth curve it is about four times the real error, so intervals with a
neighbour on both sides count half of it. Without a shape the estimate is
the error of the midpoint checks next to the interval, as in ResQ.

Where the measurements disagree. ``probe`` measures the last grid point
again after the first midpoint: identical readings mean a noiseless
testbed, and nothing is ever repeated unless the shape is contradicted.
Otherwise the sampler learns the noise (a few more repeats until the
estimate has ``MIN_DOF`` degrees of freedom) and plans with its 99% upper
confidence bound. A point on the wrong side of its neighbours' chord (a dip
in a concave curve, a bump in a convex one) by more than half the tolerance
contradicts the shape: the point of the three with the fewest measurements
is measured again, up to ``max_repeats`` times each. From three
measurements on, a reading more than three tolerances from its point's
median is rejected as an outlier; a point's value is the mean of the rest.
Under noise the bound adds two standard deviations of the chord and of the
extension (extrapolating a noisy chord amplifies its noise); an interval
that fails only because of that margin gets its points measured again
before it is split (and comes after those the curve itself fails), and
every point kept is measured until its standard error is a third of the
tolerance, as far as ``max_repeats`` allows. Finally the values are fitted
by weighted least squares to the shape (and monotone), which evens out what
noise is left where it contradicts the shape.

Every measurement counts, repeats included, against ``max_points``. The
result states how far off the curve may still be
(:attr:`Result.reported_error_pct`): the worst estimate of an interval
kept, at least the worst check that failed and was left so (the budget ran
out), plus two standard errors of the least repeated point under noise.
Pure: the caller passes the measuring function.
"""

import collections
import dataclasses
import math
import statistics

from resq_common import profile

Check = collections.namedtuple(
    'Check', ['x', 'predicted', 'measured', 'error_pct', 'outcome'])
# outcome: 'pass' (within tolerance), 'split' (the interval was refined),
# 'unresolved' (over the tolerance and left so: the budget ran out).


@dataclasses.dataclass
class Result:
    points: list          # sorted (x, y): y is the point's estimate
    checks: list          # a Check per interval test
    budget_exhausted: bool
    # The worst interpolation error estimate of an interval left above the
    # tolerance: the interpolation there may still be that far off.
    unresolved_error_pct: float = 0.0
    # The worst error estimate of any interval the curve keeps.
    error_estimate_pct: float = 0.0
    measurements: int = 0     # calls of the measuring function
    repeats: int = 0          # of which repeated a measured point
    noise_pct: float = 0.0    # relative standard deviation of repeats
    noise_dof: int = 0        # degrees of freedom behind noise_pct
    # Two standard errors of the least repeated point kept: how far off
    # the noise alone may leave the curve's values.
    noise_error_pct: float = 0.0
    samples: dict = dataclasses.field(default_factory=dict)  # x -> values
    rejected: list = dataclasses.field(default_factory=list)

    @property
    def max_check_error_pct(self):
        return max((c.error_pct for c in self.checks), default=0.0)

    @property
    def reported_error_pct(self):
        """The error a profile should state for this curve."""
        failed = [c.error_pct for c in self.checks
                  if c.outcome == 'unresolved']
        return max([self.error_estimate_pct, self.unresolved_error_pct]
                   + failed) + self.noise_error_pct


# For a smooth curve the neighbour-chord bound is about four times the
# chord's real error (the chord is 1/8 h^2 f'' off, the extensions 3/8 on
# the other side); inside the curve half the bound still leaves a factor
# two. The first and last intervals keep the whole bound: that is where a
# knee hides behind one neighbour (IPsec). Under noise every interval keeps
# the whole bound.
INTERIOR_FACTOR = 0.5
# A point on the wrong side of its neighbours' chord by more than this
# fraction of the tolerance contradicts the shape: measure again.
CONTRADICTION = 0.5
# Under noise a point is precise once its standard error is at most this
# fraction of the tolerance (as far as max_repeats allows).
PRECISION = 1.0 / 3.0
# Standard deviations of the gap between a chord and a neighbour's
# extension added to the bound under noise.
MARGIN = 2.0
# Degrees of freedom of the noise estimate needed before trusting it.
MIN_DOF = 3
# A repeat farther than this many tolerances from its point's median is an
# outlier.
OUTLIER = 3.0
# Repeats that agree to this fraction of the tolerance are identical: the
# testbed is noiseless (the model driver without noise).
NEGLIGIBLE = 1e-6
# Weight, in degrees of freedom, of a noise figure passed in without one.
PRIOR_DOF = 4
# sqrt(dof / chi2_0.01(dof)): the 99% upper confidence bound of a standard
# deviation estimated with dof degrees of freedom, relative to the
# estimate. Planning with it keeps a chance agreement of a few repeats
# from passing for a quiet testbed.
_UCB99 = {1: 79.8, 2: 9.97, 3: 5.11, 4: 3.67, 5: 3.0, 6: 2.62, 7: 2.38,
          8: 2.2, 9: 2.08, 10: 1.98}


def _ucb_factor(dof):
    dof = int(round(dof))
    if dof < 1:
        return 0.0
    # Beyond the table 1 + 3/sqrt(dof) stays above the exact factor.
    return _UCB99.get(dof, 1.0 + 3.0 / math.sqrt(dof))


class _Budget(Exception):
    pass


def _err_pct(predicted, measured):
    if measured == 0:
        return 0.0 if predicted == 0 else float('inf')
    return abs(predicted - measured) / abs(measured) * 100.0


def _line_at(p, q, x):
    return p[1] + (q[1] - p[1]) * (x - p[0]) / (q[0] - p[0])


def _spread(p, q, x, se):
    """Variance (in %^2) of the line through p and q evaluated at x."""
    wp = (q[0] - x) / (q[0] - p[0])
    return (se[p[0]] * wp) ** 2 + (se[q[0]] * (1.0 - wp)) ** 2


def _bound(pts, k, shape, inner, se=None, z=0.0):
    """Bound on the chord's error between pts[k] and pts[k+1].

    :param inner: the grid points strictly between them.
    :param se: ``{x: standard error in %}`` of the points' values; the
        bound then adds ``z`` standard deviations of the gap between the
        chord and the extension (extrapolating a noisy chord amplifies its
        noise).
    :returns: ``(bound in %, x where it is reached)``.
    """
    a, b = pts[k], pts[k + 1]
    lines = []
    if k >= 1:
        lines.append((pts[k - 1], a))
    if k + 2 < len(pts):
        lines.append((b, pts[k + 2]))
    if not lines:
        return float('inf'), (a[0] + b[0]) / 2.0
    xs = list(inner)
    if len(lines) == 2:
        (p1, q1), (p2, q2) = lines
        s1 = (q1[1] - p1[1]) / (q1[0] - p1[0])
        s2 = (q2[1] - p2[1]) / (q2[0] - p2[0])
        if s1 != s2:
            x = (p2[1] - p1[1] + s1 * p1[0] - s2 * p2[0]) / (s1 - s2)
            if xs[0] < x < xs[-1]:
                xs.append(x)
    worst, where = 0.0, (a[0] + b[0]) / 2.0
    xs = [x for x in xs if a[0] < x < b[0]]
    for x in xs:
        ext = [_line_at(p, q, x) for p, q in lines]
        chord = _line_at(a, b, x)
        if shape == 'concave':
            pick = min(range(len(ext)), key=ext.__getitem__)
            gap = ext[pick] - chord
        else:
            pick = max(range(len(ext)), key=ext.__getitem__)
            gap = chord - ext[pick]
        if not chord:
            continue
        gap = gap / abs(chord) * 100.0
        if se and z:
            gap += z * math.sqrt(_spread(a, b, x, se)
                                 + _spread(*lines[pick], x, se))
        if gap > worst:
            worst, where = gap, x
    return worst, where


def _dev_pct(pts, k):
    """Signed % by which pts[k] lies above the chord of its neighbours."""
    p, m, q = pts[k - 1], pts[k], pts[k + 1]
    chord = _line_at(p, q, m[0])
    if not chord:
        return 0.0
    return (m[1] - chord) / abs(chord) * 100.0


def _keep(values, band_pct):
    """The values of one point that are not outliers.

    From three measurements on, a value farther than ``band_pct`` from
    their median is an outlier; the rest are kept.
    """
    if len(values) < 3:
        return list(values)
    med = statistics.median(values)
    return [v for v in values if _err_pct(v, med) <= band_pct] or [med]


def _estimate(values, band_pct):
    kept = _keep(values, band_pct)
    return sum(kept) / len(kept)


def check_curve(grid, tolerance_pct, too_short):
    """Raise ValueError unless ``grid`` and the tolerance make a curve.

    :param too_short: the message when the grid has fewer than two
        points.
    """
    if len(grid) < 2:
        raise ValueError(too_short)
    if any(b <= a for a, b in zip(grid, grid[1:])):
        raise ValueError('grid must be strictly increasing: %s' % grid)
    if tolerance_pct <= 0:
        raise ValueError('tolerance must be positive, got %s' % tolerance_pct)


class Measurements:
    """The measurements of one curve on a grid, against a budget.

    Shared by this sampler and :func:`resq_profiler.modelfit.sample`:
    ``raw`` maps a grid index to the values measured there (measurements
    passed in as ``known`` first); :meth:`take` measures a grid point,
    counting every measurement against ``max_points``.
    """

    def __init__(self, measure, grid, known, max_points, progress,
                 cast=None, check=None):
        """Start from the ``known`` measurements.

        :param cast: applied to the x and y of a known measurement (the
            x before it is looked up on the grid).
        :param check: ``(x, y) -> y`` applied to every new measurement
            before it counts; it may raise.
        """
        self.measure = measure
        self.grid = grid
        self.max_points = max_points
        self.progress = progress
        self.check = check
        self.count = 0
        self.repeats = 0
        self.raw = {}
        for x, ys in (known or {}).items():
            key = x if cast is None else cast(x)
            if key not in grid:
                raise ValueError('known measurement at x=%s is not on the '
                                 'grid %s' % (x, grid))
            if not ys:
                raise ValueError('known measurement at x=%s has no value' % x)
            self.raw[grid.index(key)] = (list(ys) if cast is None
                                         else [cast(y) for y in ys])

    def take(self, i):
        """Measure grid point ``i``; ``_Budget`` when none is left."""
        if self.max_points is not None and self.count >= self.max_points:
            raise _Budget()
        y = self.measure(self.grid[i])
        if self.check is not None:
            y = self.check(self.grid[i], y)
        self.count += 1
        if i in self.raw:
            self.repeats += 1
        self.raw.setdefault(i, []).append(y)
        if self.progress:
            self.progress(self.grid[i], y, self.count)
        return y

    def least_measured(self, indices):
        """The one of ``indices`` measured the fewest times (the first)."""
        return min(indices, key=lambda i: len(self.raw[i]))

    def run(self, first, step):
        """Measure ``first`` (those not known), then while ``step()`` is true.

        :returns: whether the budget ran out.
        """
        try:
            for i in first:
                if i not in self.raw:
                    self.take(i)
            while step():
                pass
        except _Budget:
            return True
        return False


def sample(measure, grid, tolerance_pct=1.0, max_points=None,
           progress=None, shape=None, known=None, max_repeats=3,
           noise_pct=None, noise_dof=PRIOR_DOF, probe=0):
    """Sample ``measure`` on ``grid`` adaptively.

    :param measure: callable ``x -> y``.
    :param grid: strictly increasing candidate x values (at least 2).
    :param tolerance_pct: largest accepted interpolation error, in percent
        of the curve's value.
    :param max_points: most calls of ``measure``, repeats included.
    :param progress: optional callable ``(x, y, count)`` after each
        measurement; ``count`` counts every measurement.
    :param shape: ``'concave'``, ``'convex'`` or ``None`` (see the module
        docstring).
    :param known: ``{x: [y, ...]}`` measurements taken elsewhere, ``x`` on
        the grid: first measurements of those points, not counted here.
    :param max_repeats: most measurements of one point.
    :param noise_pct: relative standard deviation of a measurement known
        from elsewhere (another curve of the same run); the curve's own
        repeats refine it.
    :param noise_dof: the degrees of freedom ``noise_pct`` was estimated
        with.
    :param probe: measure the last grid point this many more times, after
        the first midpoint, to learn the noise.
    :returns: a :class:`Result`.
    """
    grid = list(grid)
    check_curve(grid, tolerance_pct,
                'an adaptive sample needs at least two grid points')
    if shape not in (None, 'concave', 'convex'):
        raise ValueError('shape must be concave, convex or None: %r' % shape)
    if max_repeats < 1:
        raise ValueError('max_repeats must be at least 1, got %s'
                         % max_repeats)
    if max_points is not None and max_points < 3:
        raise ValueError('max_points must be at least 3 (both ends and a '
                         'midpoint), got %s' % max_points)
    meas = Measurements(measure, grid, known, max_points, progress)
    sampler = _Sampler(meas, tolerance_pct, shape, max_repeats, noise_pct,
                       noise_dof, probe)
    exhausted = meas.run((0, len(grid) - 1), sampler.step)
    return sampler.result(exhausted)


class CurveSampler:
    """What a sampler of one curve works from: measurements and checks.

    The base of this module's sampler and of
    :func:`resq_profiler.modelfit.sample`'s.
    """

    def __init__(self, meas, tolerance_pct, max_repeats, noise_pct,
                 noise_dof):
        self.meas = meas
        self.grid = meas.grid
        self.raw = meas.raw
        self.tol = tolerance_pct
        self.max_repeats = max_repeats
        self.noise_pct = noise_pct
        self.noise_dof = noise_dof
        self.checks = []


class _Sampler(CurveSampler):
    """The state of one :func:`sample`: what it measured and checked."""

    def __init__(self, meas, tolerance_pct, shape, max_repeats, noise_pct,
                 noise_dof, probes):
        super().__init__(meas, tolerance_pct, max_repeats, noise_pct,
                         noise_dof)
        self.shape = shape
        self.probes = probes

    def noise(self):
        """Relative standard deviation of repeated points, in percent."""
        return self.pooled()[0]

    def pooled(self):
        """``(noise in %, degrees of freedom)`` of the repeats and prior."""
        num = den = 0
        if self.noise_pct is not None:
            num, den = (self.noise_dof * (self.noise_pct / 100.0) ** 2,
                        self.noise_dof)
        for values in self.raw.values():
            kept = _keep(values, self.band())
            if len(kept) > 1:
                mean = sum(kept) / len(kept)
                num += sum(((v - mean) / mean) ** 2 for v in kept)
                den += len(kept) - 1
        return (math.sqrt(num / den) * 100.0 if den else 0.0), den

    def caution(self):
        """The noise to plan with: the 90% upper confidence bound."""
        sigma, dof = self.pooled()
        if sigma <= self.tol * NEGLIGIBLE:
            return 0.0
        return sigma * _ucb_factor(dof)

    def band(self):
        """The outlier band, in %.

        A repeat this far from its point's median is noise that the shape
        contradicted, not a sample of it.
        """
        return self.tol * OUTLIER

    def current(self):
        """``(grid indices measured, their (x, estimate) points)``."""
        idx = sorted(self.raw)
        return idx, [(self.grid[i], _estimate(self.raw[i], self.band()))
                     for i in idx]

    def gap_estimates(self, idx, pts):
        """[(estimate %, k, x of the worst error)] per splittable gap."""
        out = []
        sigma = self.noise()
        se = {self.grid[i]: sigma / math.sqrt(len(self.raw[i])) for i in idx}
        for k in range(len(idx) - 1):
            if idx[k + 1] - idx[k] < 2:
                continue
            inner = self.grid[idx[k] + 1:idx[k + 1]]
            if self.shape:
                est, where = _bound(pts, k, self.shape, inner, se, MARGIN)
                base = (_bound(pts, k, self.shape, inner)[0] if sigma
                        else est)
                if 0 < k < len(pts) - 2 and not self.caution():
                    est *= INTERIOR_FACTOR
                    base *= INTERIOR_FACTOR
            else:
                devs = [abs(_dev_pct(pts, j)) for j in (k, k + 1)
                        if 0 < j < len(pts) - 1]
                est = base = max(devs) if devs else float('inf')
                where = (pts[k][0] + pts[k + 1][0]) / 2.0
            out.append((est, k, where, base))
        return out

    def needs_repeat(self, i, sigma):
        """Whether point ``i`` is not precise yet and may be repeated."""
        n = len(self.raw[i])
        return n < self.max_repeats and sigma / math.sqrt(n) > (
            self.tol * PRECISION)

    def contradiction(self, idx, pts):
        """The grid index to measure again, or None."""
        if not self.shape:
            return None
        sign = 1.0 if self.shape == 'concave' else -1.0
        worst = None
        for k in range(1, len(pts) - 1):
            wrong = -sign * _dev_pct(pts, k)
            if wrong > self.tol * CONTRADICTION and (
                    worst is None or wrong > worst[0]):
                trio = [idx[k], idx[k - 1], idx[k + 1]]
                open_ = [i for i in trio
                         if len(self.raw[i]) < self.max_repeats]
                if open_:
                    worst = (wrong, self.meas.least_measured(open_))
        return worst[1] if worst else None

    def repeat_first(self, idx, pts):
        """A point to measure again before any split, or None.

        One the shape contradicts, or, when noise shows and is not known
        well enough yet, the least measured one.
        """
        again = self.contradiction(idx, pts)
        if again is not None:
            return again
        sigma_hat, dof = self.pooled()
        if sigma_hat > self.tol * NEGLIGIBLE and dof < MIN_DOF:
            # Noise shows: learn how much before relying on it.
            open_ = [i for i in idx if len(self.raw[i]) < self.max_repeats]
            if open_:
                return self.meas.least_measured(open_)
        return None

    def step(self):
        """Take the next measurement; False when the curve is done."""
        idx, pts = self.current()
        if self.probes and (len(idx) > 2 or len(self.grid) < 3):
            # After the first midpoint, so that a budget of three
            # still tests the interpolation once.
            self.probes -= 1
            self.meas.take(len(self.grid) - 1)
            return True
        again = self.repeat_first(idx, pts)
        if again is not None:
            self.meas.take(again)
            return True
        sigma = self.caution()
        # Intervals the curve itself fails come first, then those
        # only the noise margin fails; the largest estimate first.
        worst = max((g for g in self.gap_estimates(idx, pts)
                     if g[0] > self.tol),
                    key=lambda g: (g[3] > self.tol, g[0]),
                    default=None)
        if worst is not None:
            self.refine(idx, pts, worst, sigma)
            return True
        vague = [i for i in idx if self.needs_repeat(i, sigma)]
        if vague:
            self.meas.take(self.meas.least_measured(vague))
            return True
        return False

    def refine(self, idx, pts, worst, sigma):
        """Measure for the interval ``worst`` fails: repeat or split it."""
        est, k, where, base = worst
        # Under noise, make the points the estimate rests on
        # precise before believing it.
        near_idx = idx[max(k - 1, 0):k + 3]
        vague = [i for i in near_idx if self.needs_repeat(i, sigma)]
        if sigma and base <= self.tol:
            # The curve itself passes; its noise does not: measure
            # again rather than split.
            vague = [i for i in near_idx
                     if len(self.raw[i]) < self.max_repeats]
        if vague:
            self.meas.take(self.meas.least_measured(vague))
            return
        lo, hi = idx[k], idx[k + 1]
        grid = self.grid
        near = min(range(lo + 1, hi),
                   key=lambda i: (abs(grid[i] - where),
                                  abs(2 * i - lo - hi)))
        y = self.meas.take(near)
        predicted = _line_at(pts[k], pts[k + 1], grid[near])
        err = _err_pct(predicted, y)
        self.checks.append(Check(grid[near], predicted, y, err,
                                 'pass' if err <= self.tol else 'split'))

    def result(self, exhausted):
        """The :class:`Result` of what was measured."""
        idx, pts = self.current()
        gaps = self.gap_estimates(idx, pts)
        finite = [g[0] for g in gaps if math.isfinite(g[0])]
        checks, unresolved = self.unresolved(pts, gaps)
        raw, grid = self.raw, self.grid
        rejected = []
        for i, values in sorted(raw.items()):
            kept = _keep(values, self.band())
            rejected += [(grid[i], v) for v in values if v not in kept]
        if self.shape and self.noise() > 0:
            weights = [len(_keep(raw[i], self.band())) for i in idx]
            pts = shape_fit(pts, weights, self.shape)
        return Result(points=pts, checks=checks, budget_exhausted=exhausted,
                      unresolved_error_pct=unresolved,
                      error_estimate_pct=max(finite + [0.0]),
                      measurements=self.meas.count,
                      repeats=self.meas.repeats,
                      noise_pct=self.noise(),
                      noise_dof=int(self.pooled()[1]),
                      noise_error_pct=2.0 * self.noise() / math.sqrt(
                          min(len(raw[i]) for i in idx)),
                      samples={grid[i]: list(v)
                               for i, v in sorted(raw.items())},
                      rejected=rejected)

    def unresolved(self, pts, gaps):
        """``(checks, unresolved error %)`` given the gaps left.

        Over the tolerance and left so: the checks that split those
        intervals decided nothing; a gap without neighbours has no bound
        and falls back to the worst check.
        """
        checks = self.checks
        left = [g[0] for g in gaps if g[0] > self.tol]
        if not left:
            return checks, 0.0
        checks = [c._replace(outcome='unresolved')
                  if c.outcome == 'split' and _inside(c.x, pts, gaps, left)
                  else c for c in checks]
        unresolved = max(g for g in left if math.isfinite(g)) if any(
            math.isfinite(g) for g in left) else max(
            [c.error_pct for c in checks] + [0.0])
        return checks, unresolved


def shape_fit(points, weights, shape, monotone=True, sweeps=2000):
    """Weighted least-squares fit of ``points`` that has ``shape``.

    The closest values (in the weighted squared distance) that form a
    concave or convex sequence over the points' x, nondecreasing too when
    ``monotone``: Dykstra's alternating projections onto the half-spaces
    of the constraints. Points that already have the shape come back
    unchanged; under noise a dip or bump is evened out with its
    neighbours, in proportion to how often each was measured.
    """
    xs = [p[0] for p in points]
    z = [float(p[1]) for p in points]
    n = len(z)
    sign = 1.0 if shape == 'concave' else -1.0
    rows = []
    for k in range(1, n - 1):
        lam = (xs[k + 1] - xs[k]) / (xs[k + 1] - xs[k - 1])
        rows.append(((k - 1, k, k + 1),
                     (-sign * lam, sign, -sign * (1.0 - lam))))
    if monotone:
        rows += [((k, k + 1), (-1.0, 1.0)) for k in range(n - 1)]
    if not rows:
        return list(points)
    scale = max(abs(v) for v in z) or 1.0
    incr = [[0.0] * len(r[0]) for r in rows]
    for _ in range(sweeps):
        moved = 0.0
        for j, (cols, coef) in enumerate(rows):
            # Undo this constraint's last correction, project again.
            y = [z[c] + incr[j][t] for t, c in enumerate(cols)]
            dot = sum(a * v for a, v in zip(coef, y))
            norm = sum(a * a / weights[c] for a, c in zip(coef, cols))
            step = max(0.0, -dot) / norm
            new = [v + step * a / weights[c]
                   for v, a, c in zip(y, coef, cols)]
            for t, c in enumerate(cols):
                moved = max(moved, abs(new[t] - z[c]))
                incr[j][t] = y[t] - new[t]
                z[c] = new[t]
        if moved <= 1e-12 * scale:
            break
    return [(x, v) for x, v in zip(xs, z)]


def _inside(x, pts, gaps, left):
    """Whether ``x`` bounds or lies in a gap whose estimate is in left."""
    for est, k, _, _ in gaps:
        if est in left and pts[k][0] <= x <= pts[k + 1][0]:
            return True
    return False


def max_error_pct(points, reference):
    """Worst relative error of interpolating ``points`` at ``reference``.

    :param reference: ``(x, y)`` pairs of an exhaustive sweep.
    """
    return max((_err_pct(profile.interpolate(points, x), y)
                for x, y in reference), default=0.0)
