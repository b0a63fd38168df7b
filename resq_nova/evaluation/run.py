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

from resq_nova.evaluation import cluster
from resq_nova.evaluation import ondemand
from resq_nova.evaluation import schemes as schemes_mod
from resq_nova.evaluation import slosets
from resq_profiler import catalog
from resq_profiler import nfmodel
from resq_profiler import profiler


def profile_catalog(conf, packet_bytes=64, progress=None):
    """Profile every catalog NF with the model driver (what schedulers see).

    :returns: ``{nf name: Profile}``.
    """
    profiles = {}
    names = catalog.names()
    for i, name in enumerate(names, 1):
        profiles[name] = profiler.run(conf, name,
                                      nfmodel.Traffic(packet_bytes),
                                      driver_name='model')
        if progress:
            progress('profiled %s (%d/%d)' % (name, i, len(names)))
    return profiles


def evaluate(conf, sets, schemes, terms=200, seed=0, cores=9, ways=18,
             packet_bytes=64, time_limit=60.0, mip_gap=0.0, config_limit=2000,
             slo_file=None, progress=None):
    """Place every SLO set with every scheme and measure the result.

    :returns: the JSON-ready document ``{"sets": {set: {scheme: {...}}},
        "ratios": ..., "config": ...}``.
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
    profiles = profile_catalog(conf, packet_bytes, progress)
    custom = slosets.load(slo_file, profiles) if slo_file else None
    if custom and slosets.CUSTOM not in sets:
        sets = list(sets) + [slosets.CUSTOM]
    doc = {'sets': {}, 'ratios': {}, 'config': {
        'terms': terms, 'seed': seed, 'cores': cores, 'ways': ways,
        'packet_bytes': packet_bytes, 'time_limit_s': time_limit,
        'violation_tolerance_pct': cluster.VIOLATION_TOLERANCE * 100}}
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
                config_limit=config_limit, stats=stats)
            outcome = cluster.ground_truth(placed, packet_bytes)
            row = {
                'servers': cluster.servers_used(placed),
                'instances': len(placed),
                'violation_pct': _pct(o.violated for o in outcome.values()),
                'throughput_violation_pct': _pct(
                    o.throughput_violated for o in outcome.values()),
                'latency_violation_pct': _pct(
                    o.latency_violated for o in outcome.values()),
                'seconds': round(time.monotonic() - started, 3),
            }
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
    doc['on_demand'] = ondemand.evaluate(seed=seed, progress=progress)
    return doc


def _pct(flags):
    flags = list(flags)
    return round(100.0 * sum(flags) / len(flags), 2) if flags else 0.0


def table(doc):
    """The results as a plain-text table."""
    lines = ['%-12s %-13s %8s %10s %9s %9s' % (
        'set', 'scheme', 'servers', 'violated%', 'thr viol%', 'lat viol%')]
    for set_name, rows in doc['sets'].items():
        for scheme, row in rows.items():
            extra = ''
            if 'gap_pct' in row:
                extra = '  (gap %.2f%%, bound %d)' % (
                    row['gap_pct'], row['lower_bound'])
            lines.append('%-12s %-13s %8d %10.1f %9.1f %9.1f%s' % (
                set_name, scheme, row['servers'], row['violation_pct'],
                row['throughput_violation_pct'],
                row['latency_violation_pct'], extra))
    for set_name, r in doc['ratios'].items():
        lines.append('%s: greedy uses %.2fx the servers of the optimal '
                     'schedule (MILP gap %.2f%%)' % (
                         set_name, r['greedy_to_optimal'], r['gap_pct']))
    return '\n'.join(lines)
