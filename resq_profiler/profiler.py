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
   driver can make (concave).
2. p95 latency against offered load at the allocation that maximised
   throughput (ResQ: the worst-case latency curve), sampled adaptively over
   the configured load levels (convex).
"""

import datetime
import time

from oslo_log import log as logging

from resq_profiler import adaptive
from resq_profiler import drivers
from resq_profiler import profile as profile_mod

LOG = logging.getLogger(__name__)


def run(conf, nf, traffic, config_text='', driver_name=None,
        progress=None, profile_id=None, description=None):
    """Profile ``nf`` and return a :class:`~resq_profiler.profile.Profile`.

    :param conf: ``ConfigOpts`` with ``[resq_profiler]`` registered.
    :param traffic: a :class:`resq_profiler.nfmodel.Traffic`.
    :param config_text: the NF's configuration; its digest goes into the
        profile, which is valid for that configuration only.
    :param progress: callable ``(curve, x, y, count)`` per measurement.
    """
    opts = conf.resq_profiler
    driver_name = driver_name or opts.driver
    tol = opts.max_interpolation_error_pct
    started = time.monotonic()
    drv = drivers.load(driver_name, conf, nf, traffic)
    try:
        platform = drv.platform()

        def report(curve):
            if progress is None:
                return None
            return lambda x, y, n: progress(curve, x, y, n)

        thr = adaptive.sample(drv.throughput, drv.way_range(), tol,
                              max_points=opts.max_measurements_per_curve,
                              progress=report('throughput'),
                              shape='concave')
        best_ways, peak = max(thr.points, key=lambda p: (p[1], -p[0]))
        best_ways = int(best_ways)
        lat = adaptive.sample(
            lambda x: drv.latency(best_ways, x, peak),
            sorted(opts.latency_load_levels), tol,
            max_points=opts.max_measurements_per_curve,
            progress=report('latency'), shape='convex')
    finally:
        drv.close()
    # The error the stored curves keep: every check that was not refined
    # away, including those the budget stopped from being refined (so the
    # figure can exceed the tolerance, and then says by how much).
    accepted = [c[3] for c in thr.checks + lat.checks if c[3] <= tol]
    accepted += [thr.unresolved_error_pct, lat.unresolved_error_pct]
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
        'measurement': {
            'driver': driver_name,
            'points': {'throughput': len(thr.points),
                       'latency': len(lat.points)},
            'max_interpolation_error_pct': round(max(accepted, default=0.0),
                                                 4),
            'tolerance_pct': tol,
            'budget_exhausted': thr.budget_exhausted or lat.budget_exhausted,
            'created_at': datetime.datetime.now(
                datetime.timezone.utc).isoformat(timespec='seconds'),
            'duration_s': round(time.monotonic() - started, 3),
        },
    }
    prof = profile_mod.Profile.from_dict(doc)
    if thr.budget_exhausted or lat.budget_exhausted:
        LOG.warning('Profile %s hit max_measurements_per_curve before the '
                    'interpolation error fell below %s%%', prof.profile_id,
                    tol)
    return prof
