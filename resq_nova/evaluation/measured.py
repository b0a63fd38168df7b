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
"""The figures of the profiles the schedulers saw (``profiles`` in the
evaluation's document).

What the profiler measured on the simulated testbed, per NF: how many runs
it took, the curves it stored and how far they are from the testbed's own
noiseless curves, so that two seeds' measurements can be told apart and a
reader can see how good the schedulers' input was.
"""

import statistics

from resq_profiler import adaptive
from resq_profiler import catalog
from resq_profiler import nfmodel
from resq_profiler import truth

# Decimals of the stored curves in the document.
DIGITS = 4


def _truth_errors(prof, packet_bytes, load_levels):
    """Worst relative error of the stored curves against the testbed.

    Throughput at every whole way count the profile covers; latency at the
    configured load levels, for the load the latency curve's own peak
    defines (what a consumer offers for a load fraction).
    """
    spec = catalog.get(prof.name)
    traffic = nfmodel.Traffic(packet_bytes)
    thr = [(w, truth.solo(spec, w, traffic).capacity_mpps)
           for w in range(prof.min_ways, prof.max_ways + 1)]
    peak = prof.throughput_at(prof.latency_ways)
    lat = [(x, truth.solo(spec, prof.latency_ways, traffic,
                          x * peak).latency_p95_us)
           for x in load_levels]
    return (adaptive.max_error_pct(list(prof.throughput), thr),
            adaptive.max_error_pct(list(prof.latency), lat))


def figures(profiles, packet_bytes, load_levels):
    """The ``profiles`` document.

    :param profiles: ``{nf name: Profile}``.
    :param load_levels: the latency load levels the profiler sampled
        among (``[resq_profiler] latency_load_levels``).
    :returns: ``{"per_nf": {nf: {...}}, "runs_median", "runs_max",
        "throughput_error_max_pct", "latency_error_max_pct"}``; per NF
        ``runs`` (measurements of both curves, repeats included),
        ``repeats``, ``noise_pct`` (the noise the profiler estimated),
        ``reported_error_pct`` (the interpolation error it reports),
        ``budget_exhausted``, ``throughput_error_pct`` and
        ``latency_error_pct`` (worst error against the testbed),
        ``peak_mpps`` and the stored ``throughput`` and ``latency`` curves.
    """
    per_nf = {}
    for name, prof in sorted(profiles.items()):
        m = prof.measurement
        thr_err, lat_err = _truth_errors(prof, packet_bytes, load_levels)
        per_nf[name] = {
            'profile_id': prof.profile_id,
            'runs': m['measurements']['throughput']
            + m['measurements']['latency'],
            'repeats': m['measurements']['repeats'],
            'noise_pct': m['noise_pct'],
            'reported_error_pct': m['max_interpolation_error_pct'],
            'budget_exhausted': m['budget_exhausted'],
            'throughput_error_pct': round(thr_err, 3),
            'latency_error_pct': round(lat_err, 3),
            'peak_mpps': round(prof.peak_mpps, DIGITS),
            'throughput': [[int(w), round(t, DIGITS)]
                           for w, t in prof.throughput],
            'latency_ways': prof.latency_ways,
            'latency': [[x, round(y, DIGITS)] for x, y in prof.latency],
        }
    rows = list(per_nf.values())
    return {
        'per_nf': per_nf,
        'runs_median': statistics.median(r['runs'] for r in rows),
        'runs_max': max(r['runs'] for r in rows),
        'throughput_error_max_pct': max(r['throughput_error_pct']
                                        for r in rows),
        'latency_error_max_pct': max(r['latency_error_pct']
                                     for r in rows),
    }
