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
"""The fewest runs a profile can take: a Cramér-Rao bound over designs.

A curve of the profiler's model family (:mod:`resq_profiler.curvefit`:
``p = 4`` parameters for throughput against ways, 3 for latency against
load) is measured at points of its grid (the ways 1-20, the configured
load levels), every run with relative Gaussian noise of standard
deviation ``s``: ``y = f(x; theta) (1 + e)``, ``e ~ N(0, s^2)``. The
profile is judged on the same grid.

**Fisher information.** One run at ``x`` carries ``(1/s^2 + 2) J(x)
J(x)^T`` about ``theta``, ``J(x)`` the gradient of ``log f(x; theta)``
(the ``+ 2`` is the information in the spread of a measurement whose
standard deviation scales with its mean: ``1/s^2`` dominates it 40,000
to 1 at 0.5% noise). ``n`` runs placed with design weights ``w`` (the
fraction of the runs at each grid point) carry ``n (1/s^2 + 2) M(w)``,
``M(w) = sum_x w(x) J(x) J(x)^T``; a design chosen as the runs go (an
adaptive profiler) carries the expectation of that, which is again
``n (1/s^2 + 2) M(w)`` for the average design ``w``.

**Cramér-Rao.** Any unbiased estimator of ``log f(x)`` then has variance
at least ``d(x, w) / (n (1/s^2 + 2))``, ``d(x, w) = J(x)^T M(w)^-1
J(x)`` (relative errors are log errors to first order).

**Over designs.** ``sum_x w(x) d(x, w) = trace(M^-1 M) = p``: the
weighted mean of ``d`` is ``p``, so its maximum over the grid is at least
``p`` for *every* design, and the Kiefer-Wolfowitz equivalence theorem
says the G-optimal (= D-optimal) design reaches it. The error target,
``z`` standard errors within the tolerance ``t`` at every grid point
(``z`` = :data:`Z`, the profiler's own stopping rule's: a
per-point chance of 1.2% to be further off), therefore needs::

    n >= z^2 p / (t^2 (1/s^2 + 2))          and n >= p

runs for one curve, whatever its parameters and whatever the design,
adaptive or not: :func:`runs_for_curve`. A profile needs the sum over its
two curves (:func:`runs_lower_bound`).

The bound is not always reachable with whole runs: with ``p`` support
points at ``n/p`` runs each, every support point needs ``n_i >= z^2 /
(t^2 (1/s^2 + 2))`` runs. :func:`exact_design` finds, for given
parameters, the fewest runs a fixed design of whole runs needs (the
oracle that knows the curve and where to measure it), and
:func:`simulate` checks what a least-squares fit on that design
achieves against the Cramér-Rao standard error.

Everything here is pure: parameters in, numbers out.
"""

import math

import numpy

from resq_profiler import curvefit

# The standard errors within the tolerance at every grid point: the
# profiler's stopping rule's (resq_profiler.modelfit.Z, tested equal).
Z = 2.5
# The profile's two curves, in the order a profile measures them.
MODELS = (curvefit.SaturatingThroughput(), curvefit.QueueingLatency())


def _check(noise_pct, tolerance_pct, z):
    if isinstance(noise_pct, bool) or not noise_pct >= 0.0 or not (
            math.isfinite(noise_pct)):
        raise ValueError('noise is a relative standard deviation in '
                         'percent, 0 or more; got %r' % (noise_pct,))
    if not tolerance_pct > 0.0 or not math.isfinite(tolerance_pct):
        raise ValueError('the tolerance is a positive percentage, got %r'
                         % (tolerance_pct,))
    if not z > 0.0 or not math.isfinite(z):
        raise ValueError('z (standard errors within the tolerance) must be '
                         'positive, got %r' % (z,))


def information_per_run(noise_pct):
    """Fisher information of one run about ``log f``, per unit ``J J^T``.

    ``1/s^2 + 2`` for relative Gaussian noise of ``noise_pct`` percent;
    infinite without noise.
    """
    _check(noise_pct, 1.0, 1.0)
    if noise_pct == 0:
        return math.inf
    s = noise_pct / 100.0
    return 1.0 / s ** 2 + 2.0


def required_information(tolerance_pct=1.0, z=Z):
    """``z^2 / t^2``: the inverse variance the target asks for, per point."""
    _check(0.0, tolerance_pct, z)
    return (z / (tolerance_pct / 100.0)) ** 2


def runs_for_curve(nparams, noise_pct, tolerance_pct=1.0, z=Z):
    """Fewest runs any unbiased estimator needs for one curve.

    :param nparams: the curve model's parameters, ``p``.
    :returns: ``max(p, ceil(z^2 p / (t^2 (1/s^2 + 2))))``; ``p`` without
        noise (as many runs as parameters pin an exact curve).
    """
    if isinstance(nparams, bool) or not isinstance(nparams, int) or (
            nparams < 1):
        raise ValueError('nparams must be a positive integer, got %r'
                         % (nparams,))
    _check(noise_pct, tolerance_pct, z)
    if noise_pct == 0:
        return nparams
    need = (required_information(tolerance_pct, z) * nparams
            / information_per_run(noise_pct))
    # A rounding error must not add a run: 7.000000001 runs are 7.
    return max(nparams, int(math.ceil(need - 1e-9)))


def runs_lower_bound(noise_pct, tolerance_pct=1.0, z=Z, models=MODELS):
    """Fewest runs of a whole profile: :func:`runs_for_curve` per curve.

    Each run measures one curve (see the profiler-budget documentation for
    why the full-load latency a saturating run reads is not counted for
    the latency curve under noise).
    """
    return sum(runs_for_curve(m.nparams, noise_pct, tolerance_pct, z)
               for m in models)


# Singular values of the (scaled) Jacobian below this fraction of the
# largest are directions the grid does not see: a throughput curve flat
# from its first or second way has fewer identifiable parameters on the
# grid than the model has.
RANK_RTOL = 1e-6


def jacobian(model, params, grid):
    """``J(x)`` per grid point, reduced to the identifiable directions.

    The gradient of ``log f`` with respect to the parameters (each scaled
    by its magnitude: scaling does not change ``d``), projected on the
    right singular vectors whose singular values are above
    :data:`RANK_RTOL` of the largest. Rows are grid points; the columns
    are the curve's identifiable parameters on the grid (:func:`rank`).
    """
    jac = curvefit._gradients(model, params,
                              numpy.asarray(grid, dtype=float))
    _, sv, vt = numpy.linalg.svd(jac, full_matrices=False)
    keep = sv > RANK_RTOL * sv[0] if sv.size and sv[0] > 0 else sv > 0
    return jac @ vt[keep].T


def rank(model, params, grid):
    """The parameters of ``model`` the grid identifies at ``params``."""
    return int(jacobian(model, params, grid).shape[1])


def variance_function(jac, counts):
    """``d(x) = J(x)^T (sum_i n_i J_i J_i^T)^-1 J(x)`` at every grid point.

    :param counts: runs (or design weights) per grid point.
    :returns: an array, or None when the design does not identify the
        parameters (its information matrix is singular).
    """
    jac = numpy.asarray(jac, dtype=float)
    counts = numpy.asarray(counts, dtype=float)
    m = jac.T @ (counts[:, None] * jac)
    # Judge singularity on the matrix scaled to unit diagonal.
    diag = numpy.sqrt(numpy.clip(numpy.diag(m), 1e-300, None))
    scaled = m / numpy.outer(diag, diag)
    if numpy.linalg.cond(scaled) > 1e12:
        return None
    inv = numpy.linalg.inv(scaled) / numpy.outer(diag, diag)
    return numpy.einsum('ij,jk,ik->i', jac, inv, jac)


def optimal_weights(jac, max_iter=20000, gap=1e-4):
    """The D- (and by Kiefer-Wolfowitz, G-) optimal design on the grid.

    Titterington's multiplicative algorithm: ``w <- w d(x, w) / p``.

    :returns: ``(weights, max_x d(x, weights))``; the maximum tends to
        ``p`` (the rank of the Jacobian), stopping within ``gap`` of it.
    """
    jac = numpy.asarray(jac, dtype=float)
    p = jac.shape[1]
    w = numpy.full(len(jac), 1.0 / len(jac))
    d = variance_function(jac, w)
    if d is None:
        raise ValueError('the model\'s parameters are not identifiable on '
                         'this grid at these parameters')
    for _ in range(max_iter):
        if d.max() <= p * (1.0 + gap):
            break
        w = w * d / p
        w /= w.sum()
        d = variance_function(jac, w)
    return w, float(d.max())


def _worst(jac, counts):
    d = variance_function(jac, counts)
    return math.inf if d is None else float(d.max())


def _improve(jac, counts):
    """Move single runs between grid points while the worst ``d`` falls."""
    counts = numpy.array(counts, dtype=int)
    best = _worst(jac, counts)
    while True:
        move = None
        for i in numpy.nonzero(counts)[0]:
            for j in range(len(counts)):
                if i == j:
                    continue
                counts[i] -= 1
                counts[j] += 1
                v = _worst(jac, counts)
                counts[i] += 1
                counts[j] -= 1
                if v < best * (1.0 - 1e-9):
                    best, move = v, (i, j)
        if move is None:
            return counts, best
        counts[move[0]] -= 1
        counts[move[1]] += 1


def exact_design(jac, noise_pct, tolerance_pct=1.0, z=Z, max_runs=400):
    """The fewest whole runs of a fixed design that meet the target.

    Searched from the lower bound up: the optimal weights rounded to ``n``
    runs, then single runs moved while that lowers the worst variance.
    (A search, not a proof: the design found meets the target; a design
    with fewer runs that also does would have to beat the exchange.)

    :returns: ``(runs per grid point, worst d)`` of the first ``n`` whose
        ``z`` standard errors are within the tolerance everywhere.
    :raises ValueError: when ``max_runs`` do not suffice.
    """
    jac = numpy.asarray(jac, dtype=float)
    p = int(jac.shape[1])
    w, _ = optimal_weights(jac)
    limit = (information_per_run(noise_pct)
             / required_information(tolerance_pct, z))
    start = runs_for_curve(p, noise_pct, tolerance_pct, z)
    for n in range(start, max_runs + 1):
        # Largest remainders: floor, then the biggest fractional parts.
        raw = w * n
        counts = numpy.floor(raw).astype(int)
        for i in numpy.argsort(-(raw - counts), kind='stable')[
                :n - counts.sum()]:
            counts[i] += 1
        counts, worst = _improve(jac, counts)
        # d is per run: the variance of n runs is d / information.
        if worst <= limit * (1.0 + 1e-12):
            return counts, worst
    raise ValueError('no design of at most %d runs meets %g%% at %g%% '
                     'noise' % (max_runs, tolerance_pct, noise_pct))


def crb_sd(jac, counts, noise_pct):
    """Cramér-Rao standard error of ``log f`` per grid point (fraction)."""
    d = variance_function(jac, counts)
    if d is None:
        return None
    return numpy.sqrt(d / information_per_run(noise_pct))


def simulate(model, params, grid, counts, noise_pct, draws=200, seed=0,
             tolerance_pct=1.0):
    """A least-squares fit on a fixed design against the Cramér-Rao bound.

    ``draws`` times: measure the curve at the design (``counts`` runs per
    grid point) with relative Gaussian noise, fit ``model`` as the profiler
    does (:meth:`resq_profiler.curvefit.Model.fit`) and take the log error
    at every grid point.

    :returns: ``{"rmse_to_crb": worst over the grid of the root mean
        square error over the Cramér-Rao standard error,
        "rmse_to_crb_mean": its mean over the grid, "worst_rmse_pct":
        the largest root mean square error in percent, "crb_sd_pct": the
        largest Cramér-Rao standard error in percent, "within_pct": the
        share of draws whose worst error over the grid is within the
        tolerance, in percent, "draws"}``.
    """
    grid = numpy.asarray(grid, dtype=float)
    counts = numpy.asarray(counts, dtype=int)
    if noise_pct <= 0:
        raise ValueError('simulate needs noise, got %r' % (noise_pct,))
    rng = numpy.random.default_rng(seed)
    xs = numpy.repeat(grid, counts)
    exact = model.value(params, xs)
    truth = model.value(params, grid)
    s = noise_pct / 100.0
    errors = numpy.empty((draws, len(grid)))
    for k in range(draws):
        ys = exact * (1.0 + rng.normal(0.0, s, len(xs)))
        fitted = model.value(model.fit(xs, ys), grid)
        errors[k] = numpy.log(fitted / truth)
    rmse = numpy.sqrt(numpy.mean(errors ** 2, axis=0))
    crb = crb_sd(jacobian(model, params, grid), counts, noise_pct)
    ratio = rmse / crb
    worst = numpy.max(numpy.abs(numpy.expm1(errors)), axis=1) * 100.0
    return {'rmse_to_crb': float(ratio.max()),
            'rmse_to_crb_mean': float(ratio.mean()),
            'worst_rmse_pct': float(rmse.max() * 100.0),
            'crb_sd_pct': float(crb.max() * 100.0),
            'within_pct': float(numpy.mean(worst <= tolerance_pct) * 100.0),
            'draws': int(draws)}
