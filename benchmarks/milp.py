"""The optimal schedule at ResQ's scale and beyond (issue 3).

For the paper-scale mixed set (200 terms, targets at 90% of solo, about
30-50 servers) and for 2,000 terms, and for "heterogeneous" variants whose
every term has its own target (0.3x to 3x solo throughput, so no two terms
can be grouped): model build time, time to a schedule no worse than the
greedy's (the warm start), time to a proven 1% gap, and the gap after 60 s
(10 minutes for 2,000 terms) including model build. Also the greedy-to-
optimal server ratio for every paper set.

``--small`` leaves out the two 2,000-term cases (up to 40 minutes of
solver time between them); their figures are then ``null``.
"""

import json
import random
import time

from oslo_config import cfg

from resq_nova.admission import greedy
from resq_nova.evaluation import run
from resq_nova.evaluation import schemes
from resq_nova.evaluation import slosets
from resq_profiler import conf as prof_conf


def _heterogeneous(profiles, terms, seed):
    rng = random.Random('heterogeneous/%d' % seed)
    names = sorted(profiles)
    result = []
    for i in range(terms):
        prof = profiles[rng.choice(names)]
        result.append(greedy.SLOTerm(
            'h-%04d' % i, prof, prof.peak_mpps * rng.uniform(0.3, 3.0),
            prof.latency_at(1.0)))
    return result


def _solve(terms, limit, gap):
    """One solve; returns (servers, gap_pct, seconds, greedy servers)."""
    stats = {}
    started = time.monotonic()
    placed = schemes.resq_optimal(terms, 9, 18, time_limit=limit,
                                  mip_gap=gap, stats=stats)
    elapsed = time.monotonic() - started
    return {'servers': len({p.server for p in placed}),
            'gap_pct': round(stats['gap_pct'], 3),
            'lower_bound': stats['lower_bound'],
            'seconds': round(elapsed, 3),
            'solver_seconds': stats['solver_only_s'],
            'greedy_servers': stats['greedy_servers']}


def case(name, terms, limit):
    print('... %s (%d terms)' % (name, len(terms)), flush=True)
    to_1pct = _solve(terms, limit, 0.01)
    final = _solve(terms, limit, 0.0)
    return {
        'case': name, 'terms': len(terms),
        'greedy_servers': final['greedy_servers'],
        'servers': final['servers'], 'lower_bound': final['lower_bound'],
        # The greedy schedule is the warm start: a schedule that good
        # exists as soon as the greedy ran and the model is built and
        # handed to HiGHS.
        'seconds_to_greedy_quality': final['seconds'] - final[
            'solver_seconds'],
        'seconds_to_gap_1pct': (to_1pct['seconds']
                                if to_1pct['gap_pct'] <= 1.0 else None),
        'gap_pct_final': final['gap_pct'],
        'seconds_final': final['seconds'],
        'time_limit_s': limit,
    }


def main(argv):
    conf = cfg.ConfigOpts()
    prof_conf.register_opts(conf)
    conf([], project='resq')
    profiles = run.profile_catalog(conf)
    # Warm up (imports, solver load) so that the first case is not charged.
    _solve(slosets.make('mixed', profiles, 20, 1), 60.0, 0.0)
    rows = []
    for set_name in ('sensitive', 'insensitive', 'mixed'):
        rows.append(case('paper-' + set_name,
                         slosets.make(set_name, profiles, 200, 0), 60.0))
    small = '--small' in argv
    if not small:
        rows.append(case('paper-mixed-2000',
                         slosets.make('mixed', profiles, 2000, 0), 600.0))
    rows.append(case('heterogeneous-200', _heterogeneous(profiles, 200, 0),
                     60.0))
    if not small:
        rows.append(case('heterogeneous-2000',
                         _heterogeneous(profiles, 2000, 0), 600.0))
    print('MILP (Pyomo + HiGHS, configuration/pattern formulation)')
    print('%-20s %6s %7s %7s %6s %9s %9s %8s' % (
        'case', 'terms', 'greedy', 'optimal', 'bound', 'to 1% s',
        'final s', 'gap%'))
    for r in rows:
        print('%-20s %6d %7d %7d %6d %9s %9.2f %8.3f' % (
            r['case'], r['terms'], r['greedy_servers'], r['servers'],
            r['lower_bound'],
            '-' if r['seconds_to_gap_1pct'] is None
            else '%.2f' % r['seconds_to_gap_1pct'],
            r['seconds_final'], r['gap_pct_final']))
    # The online greedy's own cost: every term of the mixed set admitted
    # one at a time (best of three runs).
    terms = slosets.make('mixed', profiles, 200, 0)
    per_term = []
    for _ in range(3):
        started = time.monotonic()
        schemes._greedy_schedule(terms, 9, 18)
        per_term.append((time.monotonic() - started) / len(terms) * 1000)
    print('greedy: %.3f ms per term (200 terms)' % min(per_term))
    # Batch admission: the mixed set arriving as chains of three terms,
    # each chain admitted jointly on top of the earlier ones.
    servers = greedy.make_cluster(len(terms), 9, 18)
    started = time.monotonic()
    hows = []
    for i in range(0, len(terms), 3):
        _, how = greedy.admit_batch(terms[i:i + 3], servers, time_limit=10)
        hows.append(how)
    batch_s = time.monotonic() - started
    batch_servers = sum(1 for s in servers if s.used_cores)
    print('batch admission (chains of 3): %d servers, %.1f ms per chain, '
          '%d of %d chains by the MILP' % (
              batch_servers, batch_s / len(hows) * 1000,
              hows.count('milp'), len(hows)))
    by = {r['case']: r for r in rows}
    none = {'gap_pct_final': None, 'seconds_final': None}
    for name in ('paper-mixed-2000', 'heterogeneous-2000'):
        by.setdefault(name, none)
    mixed = by['paper-mixed']
    figures = {
        'benchmark': 'milp',
        'gap_pct_at_60s': mixed['gap_pct_final'],
        'seconds_to_gap_1pct': mixed['seconds_to_gap_1pct'],
        'seconds_to_greedy_quality': round(
            mixed['seconds_to_greedy_quality'], 3),
        'gap_pct_2000_terms': by['paper-mixed-2000']['gap_pct_final'],
        'seconds_2000_terms': by['paper-mixed-2000']['seconds_final'],
        'gap_pct_heterogeneous_200': by['heterogeneous-200']['gap_pct_final'],
        'gap_pct_heterogeneous_2000':
            by['heterogeneous-2000']['gap_pct_final'],
        'seconds_heterogeneous_2000':
            by['heterogeneous-2000']['seconds_final'],
        'greedy_ms_per_term': round(min(per_term), 3),
        'batch_servers_mixed': batch_servers,
        'batch_to_optimal_mixed': round(batch_servers / mixed['servers'], 4),
        'small': small,
        'batch_ms_per_chain': round(batch_s / len(hows) * 1000, 1),
        'greedy_to_optimal': {
            s: round(by['paper-' + s]['greedy_servers']
                     / by['paper-' + s]['servers'], 4)
            for s in ('sensitive', 'insensitive', 'mixed')},
        'cases': rows,
    }
    print(json.dumps(figures, sort_keys=True))
    return 0
