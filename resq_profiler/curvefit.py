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
"""Shape models of the profile curves, fitted by least squares.

A piecewise-linear curve needs 11-14 measured points per curve to stay
within 1% everywhere (issue 13); under noise each of them must also be
repeated. A model with the curve's shape needs as many points as it has
parameters plus a few to check it, and a least-squares fit to a dozen
noisy points averages their noise.

* Throughput against ways (:class:`SaturatingThroughput`): the cycles a
  packet costs are a fixed part plus misses times their penalty, and the
  miss ratio falls as a power of the part of the working set the cache
  does not hold, to the compulsory misses once it holds all of it (ResQ
  §2; the same family as the footprint miss-ratio curves): ``1 / T(w) = a
  + b * max(0, 1 - w / W) ** q`` with ``a, b >= 0``, ``W`` the working set
  in ways and ``q`` its skew.
* p95 latency against offered load (:class:`QueueingLatency`): a pipeline
  latency plus a queue's sojourn that grows as the load approaches what
  the NF can serve: ``L(x) = a + b / (1 - c * x)``, ``c * x < 1`` on the
  grid.

The fit minimises relative residuals (noise is relative). :func:`leverage`
gives, per grid point, the standard error of the fitted curve there in
units of one measurement's relative noise; the sampler in
:mod:`resq_profiler.modelfit` spends measurements where it is largest.
"""

import math

import numpy
from scipy import optimize

_FIT_TOL = 1e-15


class Model:
    """A parametric curve family ``value(params, x)`` (positive values)."""

    name = None
    nparams = 0

    def initial(self, grid):
        """Grid indices to measure first (``nparams`` of them)."""
        raise NotImplementedError

    def initial_known(self, grid):
        """The first design when the testbed's noise is known."""
        return self.initial(grid)

    def value(self, params, x):
        raise NotImplementedError

    def _starts(self, xs, ys):
        """Candidate parameter vectors, the best first."""
        raise NotImplementedError

    def bounds(self, xs):
        raise NotImplementedError

    def fit(self, xs, ys):
        """Least-squares parameters (relative residuals) for the data.

        :param xs: x of every observation (repeats appear more than once).
        :param ys: the observations, positive.
        :returns: a numpy array of parameters.
        """
        xs = numpy.asarray(xs, dtype=float)
        ys = numpy.asarray(ys, dtype=float)
        lo, hi = self.bounds(xs)

        def resid(p):
            return self.value(p, xs) / ys - 1.0

        best = None
        for start in self._starts(xs, ys)[:3]:
            start = numpy.clip(start, lo, hi)
            try:
                res = optimize.least_squares(
                    resid, start, bounds=(lo, hi), method='trf',
                    x_scale='jac', ftol=_FIT_TOL, xtol=_FIT_TOL,
                    gtol=_FIT_TOL, max_nfev=400 * self.nparams)
                cand, cost = res.x, float(numpy.sum(res.fun ** 2))
            except (ValueError, FloatingPointError):
                cand = start
                cost = float(numpy.sum(resid(start) ** 2))
            start_cost = float(numpy.sum(resid(start) ** 2))
            if start_cost < cost:
                cand, cost = start, start_cost
            if best is None or cost < best[1]:
                best = (cand, cost)
        return best[0]

    def params_dict(self, params):
        raise NotImplementedError


def _wls_many(shapes, ys):
    """Relative least squares ``a + b * g ~ ys``, ``a, b >= 0``, per ``g``.

    One problem per row ``g`` of ``shapes``, minimising the squared
    relative residuals ``(a + b * g) / ys - 1``, all solved at once by
    their normal equations; where the unconstrained solution has a
    negative coefficient (or the equations are singular), the better of
    the two one-column fits with a nonnegative coefficient, as a
    nonnegative least-squares solver finds.

    :returns: ``(coef, cost)``: arrays of shape ``(m, 2)`` and ``(m,)``.
    """
    c0 = 1.0 / ys
    c1 = shapes / ys[None, :]
    n = float(len(ys))
    s00 = float(c0 @ c0)
    s01 = c1 @ c0
    s11 = numpy.einsum('ij,ij->i', c1, c1)
    t0 = float(c0.sum())
    t1 = c1.sum(axis=1)
    det = s00 * s11 - s01 ** 2
    ok = det > 1e-12 * s00 * numpy.maximum(s11, 1e-300)
    with numpy.errstate(all='ignore'):
        a = numpy.where(ok, (s11 * t0 - s01 * t1) / det, -1.0)
        b = numpy.where(ok, (s00 * t1 - s01 * t0) / det, -1.0)
        both = ok & (a >= 0) & (b >= 0)
        cost_both = n - 2 * (a * t0 + b * t1) + (
            a * a * s00 + 2 * a * b * s01 + b * b * s11)
        a_only = max(t0 / s00, 0.0)
        cost_a = n - 2 * a_only * t0 + a_only ** 2 * s00
        b_only = numpy.where(s11 > 0, numpy.maximum(t1, 0.0) / s11, 0.0)
        cost_b = n - 2 * b_only * t1 + b_only ** 2 * s11
    use_a = cost_a <= cost_b
    coef = numpy.column_stack([
        numpy.where(both, a, numpy.where(use_a, a_only, 0.0)),
        numpy.where(both, b, numpy.where(use_a, 0.0, b_only))])
    cost = numpy.where(both, cost_both, numpy.minimum(cost_a, cost_b))
    return coef, numpy.maximum(cost, 0.0)


class SaturatingThroughput(Model):
    """``1 / T(w) = a + b * max(0, 1 - w / W) ** q`` (see module doc)."""

    name = 'saturating-miss'
    nparams = 4

    def initial(self, grid):
        n = len(grid)
        if n <= self.nparams:
            return list(range(n))
        # Both ends, and two inside spaced so that a knee near either end
        # is not missed (for 1-20 ways: 1, 3, 8, 20).
        picks = [0, n - 1]
        for frac in (0.1, 0.37):
            i = min(max(int(round(frac * (n - 1))), 1), n - 2)
            while i in picks and i < n - 2:
                i += 1
            if i not in picks:
                picks.append(i)
        return sorted(picks)

    def value(self, params, x):
        a, b, w, q = params
        u = numpy.clip(1.0 - numpy.asarray(x, dtype=float) / w, 0.0, None)
        return 1.0 / (a + b * u ** q)

    def bounds(self, xs):
        top = float(numpy.max(xs))
        return (numpy.array([1e-12, 0.0, 1e-3, 0.2]),
                numpy.array([numpy.inf, numpy.inf, top * 1e3, 500.0]))

    def _starts(self, xs, ys):
        top = float(numpy.max(xs))
        lo = float(numpy.min(xs))
        ws, qs = numpy.meshgrid(numpy.geomspace(lo * 0.5, top * 40.0, 48),
                                numpy.geomspace(0.3, 120.0, 36),
                                indexing='ij')
        ws, qs = ws.ravel(), qs.ravel()
        shapes = numpy.clip(1.0 - xs[None, :] / ws[:, None], 0.0,
                            None) ** qs[:, None]
        coef, cost = _wls_many(shapes, 1.0 / ys)
        out = []
        for j in numpy.argsort(cost, kind='stable')[:3]:
            out.append(numpy.array([coef[j, 0] if coef[j, 0] > 0 else 1e-9,
                                    coef[j, 1], ws[j], qs[j]],
                                   dtype=float))
        return out

    def params_dict(self, params):
        a, b, w, q = (float(v) for v in params)
        return {'a': a, 'b': b, 'working_set_ways': w, 'skew': q}


class QueueingLatency(Model):
    """``L(x) = a + b / (1 - c * x)`` (see module doc)."""

    name = 'queueing'
    nparams = 3

    def initial(self, grid):
        n = len(grid)
        if n <= self.nparams:
            return list(range(n))
        return [0, n // 2, n - 1]

    def initial_known(self, grid):
        """The first design when the noise is known.

        The lowest load and the two highest, where the optimal design's
        runs go (the queue's steepness is learnt at the top;
        :mod:`resq_profiler.bound`).
        """
        n = len(grid)
        if n <= self.nparams:
            return list(range(n))
        return [0, n - 2, n - 1]

    def value(self, params, x):
        a, b, c = params
        return a + b / (1.0 - c * numpy.asarray(x, dtype=float))

    def bounds(self, xs):
        top = float(numpy.max(xs))
        return (numpy.array([0.0, 0.0, 0.0]),
                numpy.array([numpy.inf, numpy.inf, 0.9995 / top]))

    def _starts(self, xs, ys):
        top = float(numpy.max(xs))
        cs = (1.0 - numpy.geomspace(5e-4, 1.0, 200)) / top
        shapes = 1.0 / (1.0 - cs[:, None] * xs[None, :])
        coef, cost = _wls_many(shapes, ys)
        return [numpy.array([coef[j, 0], coef[j, 1], cs[j]])
                for j in numpy.argsort(cost, kind='stable')[:3]]

    def params_dict(self, params):
        a, b, c = (float(v) for v in params)
        return {'a': a, 'b': b, 'c': c}


MODELS = {m.name: m for m in (SaturatingThroughput(), QueueingLatency())}


def _gradients(model, params, xs):
    """d log value / d (scaled) params at xs: rows per x."""
    params = numpy.asarray(params, dtype=float)
    base = numpy.log(model.value(params, xs))
    rows = numpy.zeros((len(xs), len(params)))
    for j, p in enumerate(params):
        scale = max(abs(p), 1e-6)
        step = 1e-6 * scale
        up = params.copy()
        up[j] += step
        down = params.copy()
        down[j] = p - step
        with numpy.errstate(all='ignore'):
            vu = numpy.log(model.value(up, xs))
            vd = numpy.log(model.value(down, xs))
        d = (vu - vd) / (2.0 * step)
        if not numpy.all(numpy.isfinite(d)):
            d = (vu - base) / step
        rows[:, j] = numpy.nan_to_num(d) * scale
    return rows


def leverage(model, params, obs_x, grid):
    """Standard error of the fitted curve's log at each grid point.

    In units of one observation's relative standard deviation: multiply
    by the noise (as a fraction) to get the relative standard error of
    the curve there.

    :param obs_x: x of every observation the fit used (repeats included).
    """
    j = _gradients(model, params, numpy.asarray(obs_x, dtype=float))
    g = _gradients(model, params, numpy.asarray(grid, dtype=float))
    cov = numpy.linalg.pinv(j.T @ j, rcond=1e-10)
    var = numpy.einsum('ij,jk,ik->i', g, cov, g)
    return numpy.sqrt(numpy.clip(var, 0.0, None))


def rel_err_pct(predicted, measured):
    if measured == 0:
        return 0.0 if predicted == 0 else math.inf
    return abs(predicted - measured) / abs(measured) * 100.0
