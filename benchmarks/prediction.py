"""Contention prediction error: SLOMO against the Dobrescu-style baseline.

Co-locations of the catalog's NFs (2 to 9 instances sharing a server's
whole LLC, drawn at random) are split by competitor set into halves. Both
predictors profile on the simulated testbed with 0.5% measurement noise,
against synthetic competitors only, so no co-location of catalog NFs
informs either; the held-out half is what they are judged on: for each NF
of a held-out co-location, the absolute error of its predicted saturation
throughput next to the others against the testbed's (noiseless) capacity,
in percent of the latter. The training half is kept for a variant that
adds its measured co-locations to SLOMO's training rows
(``--with-colocations``), reported beside the main figures.

Query time: one SLOMO prediction (composition and the ensemble's walk)
from contentiousness already measured, without the predictor's memo.

The co-locations, the predictors and their errors are
:mod:`resq_nova.evaluation.prediction`'s; this prints them. Targets
(issue 15): SLOMO's mean error at most half the baseline's,
``query_ms`` < 1. Usage: ``python -m benchmarks prediction [--sets N]
[--runs R] [--with-colocations]``.
"""

import json
import statistics

from resq_nova.evaluation import prediction
from resq_profiler.slomo import training


def main(argv):
    sets, runs = 120, training.DEFAULT_RUNS
    with_colocations = '--with-colocations' in argv
    if '--sets' in argv:
        sets = int(argv[argv.index('--sets') + 1])
    if '--runs' in argv:
        runs = int(argv[argv.index('--runs') + 1])
    if sets < 2 or runs < 1:
        print('--sets needs at least 2 co-locations and --runs at least 1',
              flush=True)
        return 2
    print('Training SLOMO (%d contention runs per NF) and profiling the '
          'baseline; %d co-locations, half held out ...' % (runs, sets),
          flush=True)
    res = prediction.run(sets, runs, with_colocations)
    print('%d held-out co-locations, %d predictions; SLOMO training took '
          '%.1f s (%d profiling runs; the baseline %d)' % (
              res['test_sets'], res['test_queries'],
              res['slomo_training_s'], res['slomo_profiling_runs'],
              res['prediction_profiling_runs']))
    print('%-24s %10s %10s %10s' % ('predictor', 'mean err%', 'p95 err%',
                                    'max err%'))
    for name, errs in res['errors'].items():
        print('%-24s %10.2f %10.2f %10.2f' % (
            name, statistics.fmean(errs), prediction.p95(errs), max(errs)))
    figures = prediction.error_figures(res)
    figures['query_ms'] = round(res['query_ms'], 4)
    figures['slomo_training_s'] = round(res['slomo_training_s'], 1)
    ratio = figures['slomo_to_prediction_mean_error']
    print('SLOMO mean error is %.2fx the baseline\'s (target <= 0.5); '
          '%.3f ms per query (target < 1)' % (ratio, figures['query_ms']))
    print(json.dumps(figures, sort_keys=True))
    return 0
