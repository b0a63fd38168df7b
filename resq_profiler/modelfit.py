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
"""Sampling a curve by fitting its shape model (issue 13 item 5).

ResQ §5.2 measures a curve until *linear interpolation* of the measured
points is within the tolerance. This sampler measures until a fitted
:mod:`shape model <resq_profiler.curvefit>` is, and falls back to ResQ's
adaptive sampling (:func:`resq_profiler.adaptive.sample`) when the
measurements contradict the model.

1. Measure the model's first design (as many points as it has
   parameters; a measurement passed in as ``known`` counts).
2. Fit the model to every measurement (repeats are observations of their
   own, so a least-squares fit averages them). Then, by what the
   residuals show:

   * **noiseless and exact**: the fit goes through every point (residuals
     within a millionth of the tolerance). Each new point is a *check*:
     the fit before it predicts it. The curve is done after two checks in
     a row within half the tolerance.
   * **noiseless, not exact**: residuals show but a repeated measurement
     is identical (the first time residuals show, the point farthest from
     the fit is measured again to tell noise from misfit). The same
     checks, and every measured point within half the tolerance of the
     fit; after ``2 * nparams + 3`` points the model is given up.
   * **noisy**: the noise is the residuals' standard deviation (pooled with
     ``noise_pct`` when given). The fitted curve's standard error at every
     grid point is the noise times its leverage
     (:func:`resq_profiler.curvefit.leverage`); the curve is done once
     ``Z`` of them, scaled up to the 95% upper confidence bound of the
     noise estimate, is within the tolerance everywhere and at least
     ``SPREAD`` distinct points per parameter were measured (a model's
     standard errors hold near its fit only: with as many points as
     parameters a knee between them goes unseen). Measurements go to
     unmeasured points first, then where the standard error is largest
     (repeats included, at most ``max_repeats`` per point). Once points
     have been repeated, a lack-of-fit F test (99.9%) against the spread
     of the repeats tells a wrong model from noise.

3. Every measurement counts against ``max_points``. The stated error
   (:attr:`CurveResult.reported_error_pct`): under noise ``Z`` standard
   errors of the curve (as above); otherwise the larger of the last two
   checks' errors and the worst residual of a measured point, and when
   the budget ran out before two checks in a row passed, at least every
   failed check and how far the model and the measured points' chords
   part. When the model is given up it is the fallback's
   :attr:`~resq_profiler.adaptive.Result.reported_error_pct`.

The result carries the model's values at every grid point (derived points)
for consumers that interpolate linearly between whole ways or load levels.
"""

import dataclasses
import math

import numpy
from scipy import stats

from resq_common import profile
from resq_profiler import adaptive
from resq_profiler import bound
from resq_profiler import curvefit

# Standard errors of the fitted curve the stated error includes.
Z = 2.5
# A residual within this fraction of the tolerance is no residual: the
# measurements are exact and the model holds.
NEGLIGIBLE = 1e-6
# Checks (predictions of a new point) in a row that must pass, and the
# fraction of the tolerance they pass within.
CHECKS = 2
CHECK_FRACTION = 0.5
# Degrees of freedom the noise estimate needs before the bound is
# believed.
MIN_DOF = 3
# Under noise, distinct points per model parameter measured before any
# point is measured again.
SPREAD = 2
# Confidence of the lack-of-fit F test.
LACK_OF_FIT = 0.999
# With the testbed's noise known, distinct points per model parameter
# measured before the curve may be done (a knee between as many points as
# parameters goes unseen), rounded up.
KNOWN_SPREAD = {'saturating-miss': 2.0, 'queueing': 1.0}


@dataclasses.dataclass
class CurveResult:
    points: list            # (x, y) stored in the profile, sorted
    measured: list          # (x, mean value, measurements) per point
    kind: str               # curvefit model name, or 'linear'
    params: dict            # the model's parameters (empty for linear)
    measurements: int       # calls of the measuring function
    repeats: int            # of which repeated a point
    noise_pct: float
    noise_dof: int
    reported_error_pct: float
    budget_exhausted: bool
    checks: list = dataclasses.field(default_factory=list)
    fallback: str = ''      # why the model was given up, if it was

    @property
    def derived(self):
        return self.kind != 'linear'


def _ucb95(dof):
    if dof < 1:
        return math.inf
    return math.sqrt(dof / stats.chi2.ppf(0.05, dof))


def _pooled_sigma(resid, dof, noise_pct, noise_dof):
    """The relative noise from a fit's residuals and an earlier estimate.

    :returns: ``(sigma, degrees of freedom)``; sigma is infinite with no
        degree of freedom.
    """
    num = float(numpy.sum(resid ** 2))
    den = dof
    if noise_pct:
        num += noise_dof * (noise_pct / 100.0) ** 2
        den += noise_dof
    return (math.sqrt(num / den) if den > 0 else math.inf), den


def _positive(x, y):
    """The measurement ``y`` at ``x`` as a float; ValueError unless > 0."""
    y = float(y)
    if not y > 0 or not math.isfinite(y):
        raise ValueError('measurement at x=%s gave %r; a curve needs '
                         'positive values' % (x, y))
    return y


def sample(measure, grid, model, tolerance_pct=1.0, max_points=None,
           progress=None, known=None, noise_pct=None,
           noise_dof=adaptive.PRIOR_DOF, max_repeats=4, shape=None,
           dense=None, noise_known=False):
    """Sample ``measure`` on ``grid`` by fitting ``model``.

    :param model: a :class:`resq_profiler.curvefit.Model`.
    :param shape: ``'concave'``/``'convex'`` for the fallback.
    :param dense: x values to store the model's curve at besides the grid
        (the profile's derived points); default the grid.
    :param noise_known: ``noise_pct`` is the testbed's known run-to-run
        noise (``[resq_profiler] noise_pct``), not an estimate: the
        stopping rule takes it as is (no upper confidence bound), the
        measurements go where they lower the curve's largest standard
        error most (:func:`next_point`), as often as that asks, and the
        curve is done once ``Z`` standard errors are within the
        tolerance and ``KNOWN_SPREAD`` distinct points per parameter were
        measured. Residuals that contradict the figure (a chi-square test
        at ``LACK_OF_FIT``) make the noise an estimate again.
    Other parameters as :func:`resq_profiler.adaptive.sample`.
    :returns: a :class:`CurveResult`.
    """
    grid = [float(x) for x in grid]
    adaptive.check_curve(grid, tolerance_pct,
                         'a curve needs at least two grid points')
    if max_points is not None and max_points < 3:
        raise ValueError('max_points must be at least 3, got %s'
                         % max_points)
    meas = adaptive.Measurements(measure, grid, known, max_points, progress,
                                 cast=float, check=_positive)
    sampler = _ModelSampler(meas, model, tolerance_pct, noise_pct,
                            noise_dof, max_repeats,
                            noise_known=bool(noise_known and noise_pct))
    exhausted = meas.run(model.initial_known(grid) if sampler.noise_known
                         else model.initial(grid), sampler.step)
    if sampler.fallback:
        return _fall_back(measure, grid, tolerance_pct, max_points, progress,
                          meas, shape, noise_pct, noise_dof,
                          sampler.fallback, sampler.checks)
    return sampler.result(exhausted, dense)


class _ModelSampler(adaptive.CurveSampler):
    """The state of one :func:`sample`: measurements, checks and fit."""

    def __init__(self, meas, model, tolerance_pct, noise_pct, noise_dof,
                 max_repeats, noise_known=False):
        super().__init__(meas, tolerance_pct, max_repeats, noise_pct,
                         noise_dof)
        self.noise_known = noise_known
        self.model = model
        self.regime = None
        self.fallback = ''
        self.params = None
        self.cap = 2 * model.nparams + 3

    def observations(self):
        """``(xs, ys)`` arrays of every measurement, by grid point."""
        xs, ys = [], []
        for i in sorted(self.raw):
            xs += [self.grid[i]] * len(self.raw[i])
            ys += self.raw[i]
        return numpy.array(xs), numpy.array(ys)

    def pure_error(self):
        """(sum of squares, dof) of repeats about their means (relative)."""
        ss, dof = 0.0, 0
        for values in self.raw.values():
            if len(values) > 1:
                mean = sum(values) / len(values)
                ss += sum((v / mean - 1.0) ** 2 for v in values)
                dof += len(values) - 1
        return ss, dof

    def checked(self, i, params):
        """Measure grid[i] as a check of the fit ``params``."""
        predicted = float(self.model.value(params, [self.grid[i]])[0])
        y = self.meas.take(i)
        err = curvefit.rel_err_pct(predicted, y)
        self.checks.append(adaptive.Check(self.grid[i], predicted, y, err,
                                          'pass' if err <= self.tol
                                          * CHECK_FRACTION else 'fail'))

    def passed_in_a_row(self):
        """How many of the last checks passed, in a row."""
        run = 0
        for c in reversed(self.checks):
            if c.outcome != 'pass':
                break
            run += 1
        return run

    def step(self):
        """Fit, then measure the next point; False when the curve is done."""
        grid, raw, model = self.grid, self.raw, self.model
        xs, ys = self.observations()
        if len(raw) < min(model.nparams, len(grid)):
            i = next(i for i in range(len(grid)) if i not in raw)
            self.meas.take(i)
            return True
        self.params = model.fit(xs, ys)
        resid = model.value(self.params, xs) / ys - 1.0
        worst_resid = float(numpy.max(numpy.abs(resid))) * 100.0
        lev = curvefit.leverage(model, self.params, xs, grid)
        dof = len(ys) - model.nparams
        ss_pure, dof_pure = self.pure_error()
        unmeasured = [i for i in range(len(grid)) if i not in raw]
        regime = self.regime_of(worst_resid, dof, unmeasured, ss_pure,
                                dof_pure)
        if regime is None:
            # Residuals show (or every grid point is measured and the
            # fit goes through them): noise or a wrong model? Measure
            # the point farthest from the fit again.
            far = int(numpy.argmax(numpy.abs(resid)))
            self.meas.take(grid.index(float(xs[far])))
            return True
        self.regime = regime
        if regime in ('exact', 'deterministic'):
            return self.step_noiseless(worst_resid, unmeasured, lev)
        return self.step_noisy(resid, dof, ss_pure, dof_pure, lev)

    def regime_of(self, worst_resid, dof, unmeasured, ss_pure, dof_pure):
        """'exact', 'deterministic', 'noisy', or None: repeat to tell."""
        # A fit through as many points as it has parameters says
        # nothing of noise or of the model: exact needs a point more,
        # or one left to check the fit with.
        exact = (dof >= 1 or unmeasured) and (
            worst_resid <= self.tol * NEGLIGIBLE)
        if self.noise_pct:
            return 'noisy'
        if exact:
            return 'exact'
        if dof_pure and ss_pure <= (self.tol * NEGLIGIBLE / 100.0) ** 2:
            return 'deterministic'
        if dof_pure:
            return 'noisy'
        return None

    def step_noiseless(self, worst_resid, unmeasured, lev):
        """Check the fit at a new point; False when done or given up."""
        if (self.passed_in_a_row() >= CHECKS
                and worst_resid <= self.tol * CHECK_FRACTION):
            return False
        if not unmeasured:
            if self.regime == 'deterministic':
                # Every grid point is measured and exact: the
                # measurements themselves are the curve.
                self.fallback = ('every grid point was measured on a '
                                 'noiseless testbed: the measurements '
                                 'are the curve')
            return False
        if self.regime == 'deterministic' and len(self.raw) >= self.cap:
            self.fallback = ('the %s model misses measured points by up '
                             'to %.3g%% on a noiseless testbed'
                             % (self.model.name, worst_resid))
            return False
        nxt = max(unmeasured, key=lambda i: (lev[i], -i))
        self.checked(nxt, self.params)
        return True

    def step_known(self, resid, dof, lev, xs):
        """The noise is known: measure where it helps most; False when done.

        Done once ``Z`` standard errors of the fitted curve are within the
        tolerance at every grid point and ``KNOWN_SPREAD`` distinct points
        per parameter were measured; until then the next measurement goes
        where it lowers the largest standard error most
        (:func:`next_point`), an unmeasured point while too few are.
        """
        grid, raw, model = self.grid, self.raw, self.model
        sigma = self.noise_pct / 100.0
        ss = float(numpy.sum(resid ** 2))
        if dof >= MIN_DOF and ss > sigma ** 2 * stats.chi2.ppf(
                LACK_OF_FIT, dof):
            # The residuals are noisier than the testbed is said to be:
            # a wrong figure or a wrong model. Learn the noise, the
            # figure kept as a prior of a few runs.
            self.noise_known = False
            self.noise_dof = adaptive.PRIOR_DOF
            return True
        spread = KNOWN_SPREAD.get(model.name, SPREAD)
        distinct = min(int(math.ceil(spread * model.nparams)), len(grid))
        bound = Z * sigma * float(numpy.max(lev)) * 100.0
        if bound <= self.tol and len(raw) >= distinct:
            return False
        candidates = list(range(len(grid)))
        if len(raw) < distinct:
            candidates = [i for i in candidates if i not in raw]
        self.meas.take(next_point(model, self.params, xs, grid, candidates,
                                  {i: len(v) for i, v in raw.items()}))
        return True

    def step_noisy(self, resid, dof, ss_pure, dof_pure, lev):
        """Measure where the curve is least certain; False when done."""
        if self.noise_known:
            return self.step_known(resid, dof, lev, self.observations()[0])
        grid, raw, model = self.grid, self.raw, self.model
        sigma, dof_total = _pooled_sigma(resid, dof, self.noise_pct,
                                         self.noise_dof)
        if (dof_pure >= 2 and dof - dof_pure > 0 and ss_pure > 0):
            ss_lof = max(float(numpy.sum(resid ** 2)) - ss_pure, 0.0)
            f = (ss_lof / (dof - dof_pure)) / (ss_pure / dof_pure)
            if f > stats.f.ppf(LACK_OF_FIT, dof - dof_pure, dof_pure):
                self.fallback = ('the %s model does not fit the '
                                 'measurements (lack-of-fit F test, %.1f%%)'
                                 % (model.name, LACK_OF_FIT * 100))
                return False
        bound = Z * sigma * _ucb95(dof_total) * float(
            numpy.max(lev)) * 100.0
        spread = len(raw) >= min(SPREAD * model.nparams, len(grid))
        if dof_total >= MIN_DOF and bound <= self.tol and spread:
            return False
        order = sorted(range(len(grid)), key=lambda i: (-lev[i], i))
        open_ = [i for i in order
                 if len(raw.get(i, ())) < self.max_repeats]
        if len(raw) < min(SPREAD * model.nparams, len(grid)):
            # A model's standard errors hold near its fit only: with
            # as many points as parameters a knee between them goes
            # unseen. Spread the measurements first.
            open_ = [i for i in order if i not in raw]
        if not open_:
            return False
        self.meas.take(open_[0])
        return True

    def result(self, exhausted, dense):
        """The :class:`CurveResult` of the model phase."""
        raw, model, meas = self.raw, self.model, self.meas
        xs, ys = self.observations()
        measured = [(self.grid[i], sum(raw[i]) / len(raw[i]), len(raw[i]))
                    for i in sorted(raw)]
        params = self.params
        if params is None or len(raw) < model.nparams:
            params = model.fit(xs, ys) if len(raw) >= 2 else None
        if params is None:
            return CurveResult(
                points=[(x, m) for x, m, _ in measured], measured=measured,
                kind='linear', params={}, measurements=meas.count,
                repeats=meas.repeats, noise_pct=0.0, noise_dof=0,
                reported_error_pct=math.inf, budget_exhausted=exhausted,
                checks=self.checks,
                fallback='too few measurements for a model')
        xs_out = sorted(set(self.grid) | set(float(x) for x in (dense or ())))
        values = model.value(params, xs_out)
        error, noise, noise_dof_out = self.stated_error(
            params, xs, ys, measured, xs_out, values)
        return CurveResult(
            # Twelve significant digits: far below any measurement's, and
            # values a rounding error apart (a flat stretch) become equal.
            points=[(x, float('%.12g' % v)) for x, v in zip(xs_out, values)],
            measured=measured, kind=model.name,
            params=model.params_dict(params), measurements=meas.count,
            repeats=meas.repeats, noise_pct=noise,
            noise_dof=int(noise_dof_out), reported_error_pct=error,
            budget_exhausted=exhausted, checks=self.checks)

    def stated_error(self, params, xs, ys, measured, xs_out, values):
        """``(stated error %, noise %, its degrees of freedom)``."""
        model, checks = self.model, self.checks
        resid = model.value(params, xs) / ys - 1.0
        worst_resid = float(numpy.max(numpy.abs(resid))) * 100.0
        ss_pure, dof_pure = self.pure_error()
        linear = [(x, m) for x, m, _ in measured]
        # How far the model and the measured points' linear interpolation
        # part: the error a curve the measurements did not pin down may have.
        spread = max(curvefit.rel_err_pct(float(v), profile.interpolate(
            linear, x)) for x, v in zip(xs_out, values)) if len(linear) > 1 \
            else math.inf
        failed = [c.error_pct for c in checks if c.outcome != 'pass']
        if self.regime == 'noisy' and self.noise_known:
            lev = curvefit.leverage(model, params, xs, self.grid)
            error = Z * self.noise_pct * float(numpy.max(lev))
            noise = (math.sqrt(ss_pure / dof_pure) * 100.0 if dof_pure
                     else self.noise_pct)
            noise_dof_out = dof_pure or self.noise_dof
        elif self.regime == 'noisy':
            dof = len(ys) - model.nparams
            sigma, dof_total = _pooled_sigma(resid, dof, self.noise_pct,
                                             self.noise_dof)
            lev = curvefit.leverage(model, params, xs, self.grid)
            error = Z * sigma * _ucb95(dof_total) * float(
                numpy.max(lev)) * 100.0
            noise = math.sqrt(ss_pure / dof_pure) * 100.0 if dof_pure else (
                sigma * 100.0)
            noise_dof_out = dof_pure or max(int(dof_total), 0)
        else:
            recent = [c.error_pct for c in checks[-CHECKS:]]
            error = max(recent + [worst_resid])
            if self.passed_in_a_row() < CHECKS:
                # Cut short (the budget ran out) before the model was
                # checked: it may be as far off as the failed checks, or as
                # the measured points' chords.
                error = max(failed + [error, spread])
            noise, noise_dof_out = 0.0, dof_pure
        if not math.isfinite(error):
            error = max(failed + [spread])
        return error, noise, noise_dof_out


# Below this many runs, a grid point's shortfall from its share of the
# optimal design counts as none (see next_point).
DEFICIT = 0.05


def next_point(model, params, obs_x, grid, candidates, counts=None):
    """The grid index among ``candidates`` to measure next.

    The optimal design for the current fit (:func:`resq_profiler.bound.
    optimal_weights`, D- and G-optimal) says what share of the runs each
    grid point should have; the next run goes to the candidate furthest
    below its share (``counts``: runs per grid index so far). Ties go to
    the candidate whose run lowers the fitted curve's largest standard
    error most, then to the lower index.
    """
    counts = counts or {}
    jac_grid = curvefit._gradients(model, params,
                                   numpy.asarray(grid, dtype=float))
    jac_obs = curvefit._gradients(model, params,
                                  numpy.asarray(obs_x, dtype=float))
    info = jac_obs.T @ jac_obs
    try:
        weights, _ = bound.optimal_weights(
            bound.jacobian(model, params, grid), max_iter=2000, gap=1e-3)
    except ValueError:
        weights = numpy.full(len(grid), 1.0 / len(grid))
    total = len(obs_x) + 1
    best = None
    for i in candidates:
        cov = numpy.linalg.pinv(info + numpy.outer(jac_grid[i], jac_grid[i]),
                                rcond=1e-10)
        worst = float(numpy.max(numpy.einsum('ij,jk,ik->i', jac_grid, cov,
                                             jac_grid)))
        deficit = weights[i] * total - counts.get(i, 0)
        # Shares of a twentieth of a run are the iteration's leftovers,
        # not the design's.
        deficit = round(float(deficit), 6) if deficit > DEFICIT else 0.0
        key = (-deficit, round(worst, 12), i)
        if best is None or key < best[0]:
            best = (key, i)
    return best[1]


def _fall_back(measure, grid, tol, max_points, progress, meas, shape,
               noise_pct, noise_dof, reason, checks):
    """ResQ's adaptive sampling, from what the model phase measured."""
    raw = meas.raw
    left = None if max_points is None else max_points - meas.count
    offset = meas.count

    def report(x, y, n):
        if progress:
            progress(x, y, offset + n)

    known = {grid[i]: list(v) for i, v in raw.items()}
    if left is not None and left < 3:
        pts = [(grid[i], sum(v) / len(v)) for i, v in sorted(raw.items())]
        error = max([c.error_pct for c in checks] + [math.inf])
        return CurveResult(
            points=pts, measured=[(x, y, len(raw[grid.index(x)]))
                                  for x, y in pts],
            kind='linear', params={}, measurements=meas.count,
            repeats=meas.repeats, noise_pct=0.0, noise_dof=0,
            reported_error_pct=error, budget_exhausted=True,
            checks=checks, fallback=reason)
    res = adaptive.sample(measure, grid, tol, max_points=left,
                          progress=report, shape=shape, known=known,
                          noise_pct=noise_pct, noise_dof=noise_dof)
    measured = [(x, sum(v) / len(v), len(v))
                for x, v in sorted(res.samples.items())]
    return CurveResult(
        points=list(res.points), measured=measured, kind='linear',
        params={}, measurements=meas.count + res.measurements,
        repeats=meas.repeats + res.repeats, noise_pct=res.noise_pct,
        noise_dof=res.noise_dof, reported_error_pct=res.reported_error_pct,
        budget_exhausted=res.budget_exhausted, checks=checks + res.checks,
        fallback=reason)
