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
"""The adaptive profiler against its noiseless truth, for every catalog NF.

:func:`run` profiles each catalog NF with the model driver at one
measurement noise and seed, on the analytic model or the simulated
testbed (``[resq_profiler] model_truth``), and returns a row per NF: the
measurements the profile took (repeats included, the full-load latency
shared between the curves counted once), the points it kept, and the
worst interpolation error of its curves against the driver's noiseless
values on the dense grid: every allocation of 1-20 ways for throughput and
the configured load levels for latency (as in the ResQ authors' code),
measured points included (their stored value carries the noise).

``tox -e bench -- profiler`` prints and judges these rows
(``benchmarks/profiler.py``), and the documentation quotes them
(:func:`resq_nova.evaluation.docfigures.profiler_figures`).
"""

from oslo_config import cfg

from resq_profiler import adaptive
from resq_profiler import catalog
from resq_profiler import conf as prof_conf
from resq_profiler import nfmodel
from resq_profiler import profiler
from resq_profiler import truth

# Measurement noise levels, in percent, the profiler is judged at.
NOISE_LEVELS = (0.0, 0.5, 1.0)


def _truth(kind, name, traffic, latency_ways, peak_mpps):
    """The noiseless curves the profile is judged against.

    :param peak_mpps: the profile's throughput where its latency curve was
        measured. The latency curve's load is a fraction of it: a
        consumer offers ``x * throughput_at(ways)`` for load ``x``, so the
        truth is the latency at that rate.
    :returns: ``(throughput at 1-20 ways, latency as a function of the
        load fraction)``.
    """
    if kind == 'testbed':
        spec = catalog.get(name)
        thr = [(w, truth.solo(spec, w, traffic).capacity_mpps)
               for w in range(1, 21)]
        return thr, lambda x: truth.solo(spec, latency_ways, traffic,
                                         x * peak_mpps).latency_p95_us
    model = nfmodel.NFModel(catalog.get(name))
    return ([(w, model.throughput_mpps(w, traffic)) for w in range(1, 21)],
            lambda x: model.latency_p95_us(x, traffic))


def load_error_pct(points, latency):
    """The latency curve's error along the load axis, in points of load.

    For each stored ``(x, y)`` at half load or more, the load ``x'`` at
    which the truth has latency ``y`` (bisection: latency grows with
    load), and the worst ``|x' - x|`` in points of the NF's capacity.
    Admission reads the curve this way (the largest load whose latency
    meets a target); near saturation a small error in load is a large one
    in latency. Below half load the curve is nearly flat and a latency
    error there moves no target that binds.
    """
    worst = 0.0
    for x, y in points:
        if x < 0.5:
            continue
        lo, hi = 0.0, 1.5
        for _ in range(60):
            mid = (lo + hi) / 2
            if latency(mid) < y:
                lo = mid
            else:
                hi = mid
        worst = max(worst, abs(lo - x) * 100.0)
    return worst


def run(noise_pct=0.0, seed=0, kind='nfmodel', known_noise=False):
    """Profile every catalog NF and judge it against the noiseless truth.

    :param noise_pct: the model driver's measurement noise, in percent.
    :param seed: the model driver's noise seed.
    :param kind: the truth the driver measures, ``nfmodel`` or
        ``testbed``.
    :param known_noise: tell the profiler the noise (``[resq_profiler]
        known_noise_pct``) instead of letting it learn it.
    :returns: a row per NF, in catalog order: ``{"nf", "sensitivity",
        "throughput_points", "latency_points", "measurements",
        "curve_measurements", "repeats", "throughput_error_pct",
        "latency_error_pct", "latency_load_error_pct",
        "reported_error_pct", "exhaustive_points"}``.
    """
    conf = cfg.ConfigOpts()
    prof_conf.register_opts(conf)
    conf([], project='resq')
    conf.set_override('model_noise_pct', noise_pct, group='resq_profiler')
    conf.set_override('model_seed', seed, group='resq_profiler')
    conf.set_override('model_truth', kind, group='resq_profiler')
    if known_noise and noise_pct:
        conf.set_override('known_noise_pct', noise_pct,
                          group='resq_profiler')
    rows = []
    traffic = nfmodel.Traffic()
    for name in catalog.names():
        prof = profiler.run(conf, name, traffic, driver_name='model')
        truth_thr, latency = _truth(kind, name, traffic, prof.latency_ways,
                                    prof.throughput_at(prof.latency_ways))
        levels = conf.resq_profiler.latency_load_levels
        truth_lat = [(x, latency(x)) for x in levels]
        stored = dict(prof.latency)
        m = prof.measurement
        rows.append({
            'nf': name,
            'sensitivity': catalog.get(name).sensitivity,
            'throughput_points': m['points']['throughput'],
            'latency_points': m['points']['latency'],
            'measurements': (m['measurements']['throughput']
                             + m['measurements']['latency']),
            'curve_measurements': max(m['measurements']['throughput'],
                                      m['measurements']['latency']),
            'repeats': m['measurements']['repeats'],
            'throughput_error_pct': adaptive.max_error_pct(
                list(prof.throughput), truth_thr),
            'latency_error_pct': adaptive.max_error_pct(
                list(prof.latency), truth_lat),
            'latency_load_error_pct': load_error_pct(
                [(x, stored[x]) for x in levels if x in stored]
                or list(prof.latency), latency),
            'reported_error_pct': m['max_interpolation_error_pct'],
            'exhaustive_points': len(truth_thr) + len(truth_lat),
        })
    return rows
