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
"""Run the evaluation: profile, build SLO sets, place, measure, report."""

import time

from resq_nova.evaluation import chains as chains_mod
from resq_nova.evaluation import cluster
from resq_nova.evaluation import dobrescu
from resq_nova.evaluation import ondemand
from resq_nova.evaluation import schemes as schemes_mod
from resq_nova.evaluation import slomo
from resq_nova.evaluation import slosets
from resq_profiler import catalog
from resq_profiler import nfmodel
from resq_profiler import profiler


# Measurement noise of the profiling runs on the simulated testbed.
DEFAULT_NOISE_PCT = 0.5


def profile_catalog(conf, packet_bytes=64, progress=None, noise_pct=None):
    """Profile every catalog NF on the simulated testbed.

    What the schedulers see: the model driver measuring
    :mod:`resq_profiler.truth`.

    :param noise_pct: measurement noise in percent; ``None`` keeps
        ``[resq_profiler] model_noise_pct``.
    :returns: ``{nf name: Profile}``.
    """
    group = 'resq_profiler'
    conf.set_override('model_truth', 'testbed', group)
    if noise_pct is not None:
        conf.set_override('model_noise_pct', noise_pct, group)
    try:
        profiles = {}
        names = catalog.names()
        for i, name in enumerate(names, 1):
            profiles[name] = profiler.run(conf, name,
                                          nfmodel.Traffic(packet_bytes),
                                          driver_name='model')
            if progress:
                progress('profiled %s (%d/%d)' % (name, i, len(names)))
    finally:
        conf.clear_override('model_truth', group)
        if noise_pct is not None:
            conf.clear_override('model_noise_pct', group)
    return profiles


def prediction_error(placed, outcomes):
    """How far a prediction-based schedule's predictions were from truth.

    Per instance, the predicted throughput where it stands against the
    capacity the testbed gives it there, in percent of the latter
    (positive: the predictor was pessimistic).

    :returns: ``(mean, worst absolute)`` in percent, or ``None`` when the
        scheme predicts nothing.
    """
    errs = [100.0 * (o.capacity_mpps - p.predicted_mpps) / o.capacity_mpps
            for p, o in zip(placed, outcomes)
            if p.predicted_mpps is not None]
    if not errs:
        return None
    return (round(sum(errs) / len(errs), 2),
            round(max(abs(e) for e in errs), 2))


def evaluate(conf, sets, schemes, terms=200, seed=0, cores=9, ways=18,
             packet_bytes=64, time_limit=60.0, mip_gap=0.0, config_limit=2000,
             slo_file=None, progress=None, noise_pct=DEFAULT_NOISE_PCT):
    """Place every SLO set with every scheme and measure the result.

    :returns: the JSON-ready document ``{"sets": {set: {scheme: {...}}},
        "ratios": ..., "config": ..., "chains": ...}``, ``chains`` from
        :func:`resq_nova.evaluation.chains.evaluate`.
    """
    if cores <= 0 or ways <= 0:
        raise ValueError('servers need at least one core and one way (got '
                         '%d cores, %d ways)' % (cores, ways))
    if ways > cluster.USABLE_WAYS:
        raise ValueError('at most %d ways per server are usable (the '
                         'platform has %d, DDIO takes %d)' % (
                             cluster.USABLE_WAYS, cluster.PLATFORM.llc_ways,
                             cluster.PLATFORM.io_ways))
    for name in schemes:
        if name not in schemes_mod.SCHEMES:
            raise ValueError('unknown scheme %r; choose from %s'
                             % (name, ', '.join(schemes_mod.NAMES)))
    for name in sets:
        if name == slosets.CUSTOM and slo_file:
            continue
        if name not in slosets.SETS:
            raise slosets.UnknownSet('unknown SLO set %r; choose from %s'
                                     % (name, ', '.join(sorted(
                                         slosets.SETS))))
    if time_limit is None or time_limit <= 0:
        raise ValueError('the solver time limit must be positive, got %r'
                         % time_limit)
    if noise_pct is not None and not 0 <= noise_pct <= 20:
        raise ValueError('measurement noise must be between 0 and 20%%, '
                         'got %s' % noise_pct)
    profiles = profile_catalog(conf, packet_bytes, progress, noise_pct)
    noise = (conf.resq_profiler.model_noise_pct if noise_pct is None
             else noise_pct)
    predictor = dobrescu.Predictor(noise, packet_bytes, seed)
    slomo_predictor = slomo.Predictor(noise, packet_bytes, seed)
    custom = slosets.load(slo_file, profiles) if slo_file else None
    if custom and slosets.CUSTOM not in sets:
        sets = list(sets) + [slosets.CUSTOM]
    doc = {'sets': {}, 'ratios': {}, 'config': {
        'terms': terms, 'seed': seed, 'cores': cores, 'ways': ways,
        'packet_bytes': packet_bytes, 'time_limit_s': time_limit,
        'violation_tolerance_pct': cluster.VIOLATION_TOLERANCE * 100,
        'noise_pct': (conf.resq_profiler.model_noise_pct
                      if noise_pct is None else noise_pct)}}
    for set_name in sets:
        if set_name == slosets.CUSTOM:
            slo_terms = custom
        else:
            slo_terms = slosets.make(set_name, profiles, terms, seed)
        doc['sets'][set_name] = {}
        for scheme in schemes:
            started = time.monotonic()
            stats = {}
            placed = schemes_mod.SCHEMES[scheme](
                slo_terms, cores, ways, packet_bytes=packet_bytes,
                time_limit=time_limit, mip_gap=mip_gap,
                config_limit=config_limit, stats=stats, predictor=predictor,
                slomo_predictor=slomo_predictor)
            outs = cluster.instance_outcomes(placed, packet_bytes)
            outcome = cluster.ground_truth(placed, packet_bytes, outs)
            row = {
                'servers': cluster.servers_used(placed),
                'instances': len(placed),
                'violation_pct': _pct(o.violated for o in outcome.values()),
                'throughput_violation_pct': _pct(
                    o.throughput_violated for o in outcome.values()),
                'latency_violation_pct': _pct(
                    o.latency_violated for o in outcome.values()),
                'latency_binding_violation_pct': _pct(
                    outcome[t.name].violated for t in slo_terms
                    if slosets.binding(t)),
                'seconds': round(time.monotonic() - started, 3),
            }
            error = prediction_error(placed, outs)
            if error is not None:
                row['prediction_error_pct'] = error[0]
                row['prediction_error_max_pct'] = error[1]
            if scheme == 'resq_optimal':
                row['gap_pct'] = round(stats['gap_pct'], 3)
                row['lower_bound'] = stats['lower_bound']
                row['solver_status'] = stats['status']
            doc['sets'][set_name][scheme] = row
            if progress:
                progress('%s / %s: %d servers, %.1f%% of terms violated'
                         % (set_name, scheme, row['servers'],
                            row['violation_pct']))
        rows = doc['sets'][set_name]
        if 'resq_greedy' in rows and 'resq_optimal' in rows:
            doc['ratios'][set_name] = {
                'greedy_to_optimal': round(rows['resq_greedy']['servers']
                                           / rows['resq_optimal']['servers'],
                                           4),
                'gap_pct': rows['resq_optimal']['gap_pct']}
    if 'prediction' in schemes:
        doc['predictor'] = dobrescu.figure10(predictor)
        doc['predictor']['profiling_runs'] = predictor.measurements
    if 'slomo' in schemes:
        # SLOMO judged as the baseline is (ResQ Figure 10's co-locations).
        doc['slomo_predictor'] = dobrescu.figure10(slomo_predictor)
        doc['slomo_predictor']['profiling_runs'] = (
            slomo_predictor.measurements)
    # NFVnice's mechanisms on service chains sharing a core.
    doc['chains'] = chains_mod.evaluate()
    doc['on_demand'] = ondemand.evaluate(seed=seed, progress=progress)
    return doc


def _pct(flags):
    flags = list(flags)
    return round(100.0 * sum(flags) / len(flags), 2) if flags else 0.0


def table(doc):
    """The results as a plain-text table."""
    lines = ['%-12s %-13s %8s %10s %9s %9s %9s' % (
        'set', 'scheme', 'servers', 'violated%', 'thr viol%', 'lat viol%',
        'pred err%')]
    for set_name, rows in doc['sets'].items():
        for scheme, row in rows.items():
            extra = ''
            if 'gap_pct' in row:
                extra = '  (gap %.2f%%, bound %d)' % (
                    row['gap_pct'], row['lower_bound'])
            pred = ('%9.1f' % row['prediction_error_pct']
                    if 'prediction_error_pct' in row else '%9s' % '-')
            lines.append('%-12s %-13s %8d %10.1f %9.1f %9.1f %s%s' % (
                set_name, scheme, row['servers'], row['violation_pct'],
                row['throughput_violation_pct'],
                row['latency_violation_pct'], pred, extra))
    for set_name, r in doc['ratios'].items():
        lines.append('%s: greedy uses %.2fx the servers of the optimal '
                     'schedule (MILP gap %.2f%%)' % (
                         set_name, r['greedy_to_optimal'], r['gap_pct']))
    if 'predictor' in doc:
        p = doc['predictor']
        lines.append('prediction baseline against the testbed (cf. ResQ '
                     'Figure 10): predicted minus observed drop %+.1f '
                     'points on average, %.1f at worst (%.0f%% of the '
                     'observed drop)' % (p['mean_pp'], p['max_abs_pp'],
                                         p['mean_relative_pct']))
    if 'slomo_predictor' in doc:
        p = doc['slomo_predictor']
        lines.append('SLOMO predictor against the testbed (same runs): '
                     'predicted minus observed drop %+.1f points on '
                     'average, %.1f at worst (%.0f%% of the observed drop)'
                     % (p['mean_pp'], p['max_abs_pp'],
                        p['mean_relative_pct']))
    if doc.get('chains'):
        lines.append(chains_mod.table(doc['chains']))
    return '\n'.join(lines)
