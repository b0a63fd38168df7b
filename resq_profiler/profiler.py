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
"""The adaptive profiler: one driver, two curves, one profile (ResQ §5.2).

1. Throughput against ways, sampled adaptively over every allocation the
   driver can make (concave). The largest allocation is measured twice to
   learn the testbed's noise.
2. p95 latency against offered load at the allocation that maximised
   throughput (ResQ: the worst-case latency curve), sampled adaptively over
   the configured load levels (convex), starting from what it knows: the
   noise, and the latency at full load if the saturating runs at that
   allocation reported it and the stored peak is the throughput they
   measured (one run, both curves; noise, or a fit that misses that
   point, moves the peak off the load those runs offered).

``max_measurements`` caps the runs of the whole profile
(:mod:`resq_profiler.budget` draws the runs-error trade-off with it).
"""

import datetime
import math
import time

from oslo_log import log as logging

from resq_common import profile as profile_mod
from resq_profiler import curvefit
from resq_profiler import drivers
from resq_profiler import modelfit

LOG = logging.getLogger(__name__)

# The error stated when the measurements bound nothing.
UNKNOWN_ERROR_PCT = 100.0
# The fitted peak and the measured throughput at its allocation are the
# same load within this fraction.
PEAK_MATCH = 1e-6
# The smallest budget of a whole profile: three measurements per curve.
MIN_PROFILE_BUDGET = 6


def run(conf, nf, traffic, config_text='', driver_name=None,
        progress=None, profile_id=None, description=None,
        max_measurements=None):
    """Profile ``nf`` and return a :class:`~resq_common.profile.Profile`.

    :param conf: ``ConfigOpts`` with ``[resq_profiler]`` registered.
    :param traffic: a :class:`resq_profiler.nfmodel.Traffic`.
    :param config_text: the NF's configuration; its digest goes into the
        profile, which is valid for that configuration only.
    :param progress: callable ``(curve, x, y, count)`` per measurement,
        repeats included; ``count`` counts the curve's measurements.
    :param max_measurements: most measurements of the whole profile, both
        curves and repeats included (at least ``MIN_PROFILE_BUDGET``),
        shared between the curves as their models' parameters (the
        latency curve gets at least three and what the throughput curve
        left). Default: only ``[resq_profiler]
        max_measurements_per_curve`` per curve.
    """
    if max_measurements is not None and max_measurements < MIN_PROFILE_BUDGET:
        raise ValueError('a profile needs a budget of at least %d '
                         'measurements (three per curve), got %r'
                         % (MIN_PROFILE_BUDGET, max_measurements))
    opts = conf.resq_profiler
    driver_name = driver_name or opts.driver
    tol = opts.max_interpolation_error_pct
    started = time.monotonic()
    drv = drivers.load(driver_name, conf, nf, traffic)
    try:
        platform = drv.platform()
        thr, lat, best_ways, known = _measure(drv, opts, tol, progress,
                                              max_measurements)
    finally:
        drv.close()
    digest = profile_mod.config_digest(config_text)
    nf_doc = {'name': nf, 'config_digest': digest}
    if description:
        nf_doc['description'] = description
    doc = {
        'schema_version': 1,
        'id': profile_id or profile_mod.make_profile_id(
            nf, traffic.as_dict(), digest),
        'nf': nf_doc,
        'traffic': traffic.as_dict(),
        'platform': platform,
        'throughput': {'unit': 'Mpps',
                       'points': [[int(w), t] for w, t in thr.points]},
        'latency': {'unit': 'us', 'percentile': 95, 'ways': best_ways,
                    'points': [[x, y] for x, y in lat.points]},
        'measurement': _measurement_doc(driver_name, thr, lat, known, tol,
                                        started),
    }
    prof = profile_mod.Profile.from_dict(doc)
    _warn(prof, thr, lat, tol)
    return prof


def _measure(drv, opts, tol, progress, budget=None):
    """Sample both curves with ``drv``.

    :param budget: most measurements of both curves together, or None.

    :returns: ``(throughput, latency, ways of the latency curve, known)``:
        two :class:`~resq_profiler.modelfit.CurveResult`, and the latency
        measurements the saturating runs gave (``{1.0: [us, ...]}``).
    """
    def report(curve):
        if progress is None:
            return None
        return lambda x, y, n: progress(curve, x, y, n)

    # A saturating run may report the latency at full load too: keep
    # it per allocation for the latency curve's last point.
    full_load = {}

    def saturate(ways):
        mpps, lat_us = drv.saturate(int(ways))
        if lat_us is not None:
            full_load.setdefault(int(ways), []).append(lat_us)
        return mpps

    per_curve = opts.max_measurements_per_curve
    thr_model, lat_model = (curvefit.SaturatingThroughput(),
                            curvefit.QueueingLatency())
    thr_cap = per_curve
    if budget is not None:
        # Split a profile's budget between the curves as their models'
        # parameters, the latency curve keeping at least three.
        reserve = max(3, budget * lat_model.nparams
                      // (thr_model.nparams + lat_model.nparams))
        thr_cap = min(per_curve, budget - reserve)
    # The testbed's noise, when the operator knows it: both curves plan
    # with it as is (resq_profiler.bound's assumption) instead of learning
    # it from each profile's residuals.
    known_noise = opts.known_noise_pct or None
    thr = modelfit.sample(saturate, drv.way_range(), thr_model, tol,
                          max_points=thr_cap,
                          progress=report('throughput'),
                          shape='concave', noise_pct=known_noise,
                          noise_known=known_noise is not None)
    best_ways, peak = _best_allocation(thr)
    levels = sorted(opts.latency_load_levels)
    known = {}
    # The saturating runs read the latency at the NF's real capacity; the
    # latency curve's full load is the profile's peak, the fitted value,
    # which noise or a model that misses the measured point moves off it.
    # Near saturation latency is steep (a 1% error in load is ~20% in p95
    # at full load), so the run is shared only when the two are one load.
    if (levels[-1] == 1.0 and full_load.get(best_ways)
            and _peak_is_measured(thr, best_ways, peak)):
        known[1.0] = full_load[best_ways]
    lat = modelfit.sample(
        lambda x: drv.latency(best_ways, x, peak), levels,
        lat_model, tol,
        max_points=(per_curve if budget is None else
                    min(per_curve, budget - thr.measurements)),
        progress=report('latency'), shape='convex', known=known,
        noise_pct=known_noise or thr.noise_pct, noise_dof=thr.noise_dof,
        dense=_dense(levels), noise_known=known_noise is not None)
    return thr, lat, best_ways, known


def _peak_is_measured(thr, ways, peak):
    """Whether ``peak`` is what the saturating runs at ``ways`` offered.

    True on a noiseless testbed when the stored curve goes through the
    measured throughput there (to a part in a million).
    """
    if thr.noise_pct:
        return False
    measured = {x: y for x, y, _ in thr.measured}.get(ways)
    return measured is not None and abs(peak - measured) <= (
        abs(measured) * PEAK_MATCH)


def _best_allocation(thr):
    """``(ways, throughput)`` of the best allocation measured.

    The best allocation among those measured (a saturating run there also
    read the latency at full load); the model's curve is flat past the
    working set, so this is its peak too. Values a rounding error apart
    are equal: the fewest such ways.
    """
    fitted = dict(thr.points)
    measured_ways = [x for x, _, _ in thr.measured]
    top = max(fitted[w] for w in measured_ways)
    best_ways = int(min(w for w in measured_ways
                        if fitted[w] >= top * (1.0 - 1e-9)))
    return best_ways, fitted[best_ways]


def _measurement_doc(driver_name, thr, lat, known, tol, started):
    """The profile's ``measurement`` section."""
    # The error the stored curves keep: the worst estimate of an interval
    # they keep, and every check that failed and was left so (the budget
    # ran out), so the figure can exceed the tolerance and then says by
    # how much.
    error = max(thr.reported_error_pct, lat.reported_error_pct)
    if not math.isfinite(error):
        # Nothing bounds it (too few measurements): say so with a figure
        # no consumer mistakes for a small error.
        error = UNKNOWN_ERROR_PCT
    return {
        'driver': driver_name,
        'points': {'throughput': len(thr.measured),
                   'latency': len(lat.measured)},
        'measurements': {'throughput': thr.measurements,
                         'latency': lat.measurements,
                         'repeats': thr.repeats + lat.repeats,
                         'shared': len(known.get(1.0, ()))},
        'noise_pct': round(max(thr.noise_pct, lat.noise_pct), 4),
        'max_interpolation_error_pct': round(error, 4),
        'tolerance_pct': tol,
        'budget_exhausted': thr.budget_exhausted or lat.budget_exhausted,
        'fit': {'throughput': _fit_doc(thr), 'latency': _fit_doc(lat)},
        'created_at': datetime.datetime.now(
            datetime.timezone.utc).isoformat(timespec='seconds'),
        'duration_s': round(time.monotonic() - started, 3),
    }


def _warn(prof, thr, lat, tol):
    """Log what the profile's curves fell short of."""
    for curve, res in (('throughput', thr), ('latency', lat)):
        if res.fallback:
            LOG.warning('Profile %s: %s; its %s curve interpolates the '
                        'measured points linearly', prof.profile_id,
                        res.fallback, curve)
    if thr.budget_exhausted or lat.budget_exhausted:
        LOG.warning('Profile %s hit max_measurements_per_curve before the '
                    'interpolation error fell below %s%%', prof.profile_id,
                    tol)


# Load levels between the configured ones at which a fitted latency curve
# is stored too, so that linear interpolation between stored points stays
# close to the model where the curve bends most (near saturation).
DENSE_LOAD_STEP = 0.025


def _dense(levels):
    lo, hi = levels[0], levels[-1]
    n = int((hi - lo) / DENSE_LOAD_STEP)
    return [round(lo + DENSE_LOAD_STEP * k, 6) for k in range(1, n + 1)
            if lo + DENSE_LOAD_STEP * k < hi]


def _fit_doc(res):
    """How a stored curve came about (``measurement.fit.<curve>``)."""
    doc = {'model': res.kind,
           'derived_points': res.derived,
           'measured': [[x, round(y, 9), n] for x, y, n in res.measured]}
    if res.params:
        doc['params'] = {k: round(v, 12) for k, v in res.params.items()}
    if res.fallback:
        doc['fallback'] = res.fallback
    return doc
