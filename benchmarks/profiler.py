"""Adaptive profiler against the model's noiseless truth, for every NF.

For each catalog NF (model driver) and measurement noise of 0%, 0.5% and
1%: the measurements the profile took (repeats included, the full-load
latency shared between the curves counted once), the points it kept, and
the worst interpolation error of its curves against the model's noiseless
values on the dense grid: every allocation of 1-20 ways for throughput and
the 13 configured load levels for latency (as in the ResQ authors' code),
measured points included (their stored value carries the noise); the rows
are :func:`resq_profiler.accuracy.run`'s. Targets
(ResQ §5.2, issue 13): a median of at most 12 measurements per profile,
at most 1% error at 0.5% noise.

``--seeds N`` repeats the noisy levels with the model driver's seeds 0 to
N-1; the figures are then the worst error and the median over all of them.

Last, the runs-error trade-off on the simulated testbed
(:func:`resq_profiler.budget.tradeoff`, seeds 0-2): every profile capped
at a budget of runs, both curves and repeats included, and the worst
error against the noiseless truth; ``testbed_runs_median_by_noise`` and
``testbed_error_pct_by_noise`` are the profiler's own stopping rule,
``profiler_budget`` the whole trade-off.
"""

import argparse

import json
import statistics

from resq_profiler import accuracy
from resq_profiler import budget

NOISE_LEVELS = accuracy.NOISE_LEVELS


def _key(noise):
    return ('%g' % noise)


def _print_rows(noise, rows, seeds):
    print('Adaptive profiler at %g%% measurement noise (model driver, '
          '64 B, 100k flows, tolerance 1%%, %d seed(s)); errors against '
          'the noiseless model' % (noise, seeds))
    print('%-9s %-11s %5s %5s %5s %5s %9s %9s %9s' % (
        'NF', 'class', 'meas', 'rep', 'thr', 'lat', 'thr err%',
        'lat err%', 'stated%'))
    for r in rows:
        print('%-9s %-11s %5d %5d %5d %5d %9.3f %9.3f %9.3f' % (
            r['nf'], r['sensitivity'], r['measurements'], r['repeats'],
            r['throughput_points'], r['latency_points'],
            r['throughput_error_pct'], r['latency_error_pct'],
            r['reported_error_pct']))
    print()


def _testbed():
    """The profiler on the simulated testbed, at every noise level."""
    testbed = {'measurements_per_profile_median_by_noise': {},
               'max_error_pct_by_noise': {},
               'max_latency_load_error_pct_by_noise': {}}
    for noise in NOISE_LEVELS:
        tb_rows = accuracy.run(noise, 0, 'testbed')
        k = _key(noise)
        testbed['measurements_per_profile_median_by_noise'][k] = (
            statistics.median(r['measurements'] for r in tb_rows))
        testbed['max_error_pct_by_noise'][k] = round(max(
            max(r['throughput_error_pct'], r['latency_error_pct'])
            for r in tb_rows), 4)
        testbed['max_latency_load_error_pct_by_noise'][k] = round(max(
            r['latency_load_error_pct'] for r in tb_rows), 4)
        print('testbed, noise %4g%%: median %s measurements per profile, '
              'worst error %.3f%% against its noiseless truth (latency '
              'curve along the load axis above half load: %.3f points)' % (
                  noise, testbed['measurements_per_profile_median_by_noise'][
                      k], testbed['max_error_pct_by_noise'][k],
                  testbed['max_latency_load_error_pct_by_noise'][k]))
    return testbed


def main(argv):
    parser = argparse.ArgumentParser(prog='benchmarks profiler')
    parser.add_argument('--seeds', type=int, default=1,
                        help='noise seeds per noisy level (default 1)')
    args = parser.parse_args(argv)
    if args.seeds < 1:
        parser.error('--seeds must be at least 1, got %d' % args.seeds)
    by_noise = {}
    per_seed = {}
    for noise in NOISE_LEVELS:
        by_noise[noise] = []
        per_seed[_key(noise)] = []
        for seed in range(args.seeds if noise else 1):
            rows = accuracy.run(noise, seed)
            by_noise[noise] += rows
            per_seed[_key(noise)].append(round(max(
                max(r['throughput_error_pct'], r['latency_error_pct'])
                for r in rows), 4))
    for noise, rows in by_noise.items():
        _print_rows(noise, rows, args.seeds if noise else 1)
    rows = by_noise[0.0]
    # Measurements (repeats included) of the costliest curve.
    max_pts = max(r['curve_measurements'] for r in rows)
    max_err = max(max(r['throughput_error_pct'], r['latency_error_pct'])
                  for r in rows)
    adaptive_total = sum(r['measurements'] for r in rows)
    exhaustive_total = sum(r['exhaustive_points'] for r in rows)
    median = {_key(n): statistics.median(r['measurements'] for r in rs)
              for n, rs in by_noise.items()}
    err_by_noise = {
        _key(n): round(max(max(r['throughput_error_pct'],
                               r['latency_error_pct']) for r in rs), 4)
        for n, rs in by_noise.items()}
    print('noiseless: worst %d measurements per curve, %.3f%% error; %d '
          'measurements in all against %d for the sweep'
          % (max_pts, max_err, adaptive_total, exhaustive_total))
    for n in NOISE_LEVELS:
        print('noise %4g%%: median %s measurements per profile, worst '
              'error %.3f%% against the noiseless truth'
              % (n, median[_key(n)], err_by_noise[_key(n)]))
    if args.seeds > 1:
        for n in NOISE_LEVELS[1:]:
            errs = per_seed[_key(n)]
            print('noise %4g%%, %d seeds: worst error per seed %.3f-%.3f%% '
                  '(median %.3f%%), above 1%% for %d' % (
                      n, len(errs), min(errs), max(errs),
                      statistics.median(errs), sum(e > 1.0 for e in errs)))
    # The same on the simulated testbed (resq_profiler.truth): its
    # throughput curves come from footprint theory, not from the family
    # the profiler's throughput model fits (the analytic model's), so
    # this is the check that the shape model is not merely its own.
    testbed = _testbed()
    print('targets: median <= 12 measurements per profile (noiseless), '
          '<= 1% error at 0.5% noise')
    trade = budget.tradeoff(noise_levels=NOISE_LEVELS, kind='testbed')
    _print_tradeoff(trade)
    figures = {
        'benchmark': 'profiler',
        'max_measurements_per_curve': max_pts,
        'max_interpolation_error_pct': round(max_err, 4),
        'total_measurements': adaptive_total,
        'exhaustive_measurements': exhaustive_total,
        'target_met': max_pts <= 12 and max_err <= 1.0,
        'measurements_per_profile_median': median['0'],
        'measurements_per_profile_median_by_noise': median,
        'max_error_pct_by_noise': err_by_noise,
        'noise_target_met': (median['0'] <= 12
                             and err_by_noise['0.5'] <= 1.0),
        'noise_seeds': args.seeds,
        'testbed': testbed,
        'max_error_pct_by_noise_per_seed': per_seed,
        'testbed_runs_median_by_noise': trade['runs_median_by_noise'],
        'testbed_error_pct_by_noise': trade['error_pct_by_noise'],
        'profiler_budget': trade,
        'per_nf': {r['nf']: {
            'throughput_points': r['throughput_points'],
            'latency_points': r['latency_points'],
            'measurements': r['measurements'],
            'throughput_error_pct': round(r['throughput_error_pct'], 4),
            'latency_error_pct': round(r['latency_error_pct'], 4)}
            for r in rows},
    }
    print(json.dumps(figures, sort_keys=True))
    return 0


def _print_tradeoff(trade):
    """The runs-error table of :func:`resq_profiler.budget.tradeoff`."""
    print()
    print('Runs against error on the testbed (seeds %s, %d NFs): runs per '
          'profile (both curves, repeats included) and error against the '
          'noiseless truth; budget "auto" is the profiler\'s own stopping '
          'rule' % (', '.join(str(s) for s in trade['seeds']),
                    len(trade['nfs'])))
    print('%6s %6s %8s %8s %10s %10s' % (
        'noise%', 'budget', 'runs med', 'runs max', 'err% med', 'err% max'))
    for noise, curve in trade['curve'].items():
        for b, p in curve.items():
            print('%6s %6s %8g %8d %10.3f %10.3f' % (
                noise, b, p['runs_median'], p['runs_max'],
                p['error_pct_median'], p['error_pct_max']))
    for noise, holds in trade['paper_claim_holds'].items():
        print('noise %4s%%: <= %d runs at <= %g%% error %s' % (
            noise, budget.PAPER_RUNS, budget.PAPER_ERROR_PCT,
            'holds (budget %s)' % trade['paper_claim_budget'][noise]
            if holds else 'does not hold'))
