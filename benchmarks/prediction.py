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

Targets (issue 15): SLOMO's mean error at most half the baseline's,
``query_ms`` < 1. Usage: ``python -m benchmarks prediction [--sets N]
[--runs R] [--with-colocations]``.
"""

import json
import random
import statistics
import time
import zlib

from resq_nova.evaluation import dobrescu
from resq_nova.evaluation import slomo
from resq_profiler import catalog
from resq_profiler import nfmodel
from resq_profiler.slomo import document
from resq_profiler.slomo import metrics
from resq_profiler.slomo import training
from resq_profiler import truth

NOISE_PCT = 0.5


def colocations(count, seed=0, largest=9):
    """``count`` distinct co-locations (sorted tuples of NF names)."""
    rng = random.Random('colocations/%d' % seed)
    names = catalog.names()
    seen = []
    while len(seen) < count:
        mix = tuple(sorted(rng.choice(names)
                           for _ in range(rng.randint(2, largest))))
        if mix not in seen:
            seen.append(mix)
    return seen


def split(mixes, seed=0):
    """Halves by competitor set: no set is in both."""
    order = list(mixes)
    random.Random('split/%d' % seed).shuffle(order)
    half = len(order) // 2
    return order[:half], order[half:]


def observe(mix, platform=nfmodel.Platform()):
    """The testbed's capacity of each instance of ``mix``."""
    ways = frozenset(range(platform.llc_ways))
    insts = [nfmodel.Instance(catalog.get(n), ways) for n in mix]
    return [o.capacity_mpps for o in truth.simulate_server(insts, platform)]


def queries(mixes):
    """``(target, competitors, observed Mpps)`` per distinct NF of a mix."""
    result = []
    for mix in mixes:
        caps = observe(mix)
        for i, name in enumerate(mix):
            if name in mix[:i]:
                continue
            result.append((name, mix[:i] + mix[i + 1:], caps[i]))
    return result


def errors(predict, qs):
    return [abs(predict(n, c) - obs) / obs * 100.0 for n, c, obs in qs]


def _p95(values):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def colocation_rows(predictor, qs, seed=0):
    """Training rows from measured co-locations (with noise)."""
    rows = {}
    for name, comps, obs in qs:
        noise = truth.Noise(NOISE_PCT, zlib.crc32(
            ('colo/%s/%s/%d' % (name, ','.join(comps), seed)).encode()))
        model = predictor.model(name)
        row = metrics.compose([predictor.model(c).contentiousness
                               for c in comps])
        rows.setdefault(name, []).append(
            (row, noise(obs) / model.solo_mpps))
    return rows


def run(sets=120, runs=training.DEFAULT_RUNS, with_colocations=False,
        seed=0):
    mixes = colocations(sets, seed)
    train_mixes, test_mixes = split(mixes, seed)
    test = queries(test_mixes)
    started = time.monotonic()
    slomo_pred = slomo.Predictor(NOISE_PCT, seed=seed, runs=runs)
    for name in catalog.names():
        slomo_pred.model(name)
    train_s = time.monotonic() - started
    baseline = dobrescu.Predictor(NOISE_PCT, seed=seed)
    result = {
        'slomo': errors(slomo_pred.predict, test),
        'prediction': errors(baseline.predict, test),
    }
    # Query time without the memo: compose and walk the trees.
    models = {n: slomo_pred.model(n) for n in catalog.names()}
    started = time.perf_counter()
    repeat = 5
    for _ in range(repeat):
        for name, comps, _ in test:
            models[name].predict_mpps([models[c].contentiousness
                                       for c in comps])
    query_ms = ((time.perf_counter() - started) * 1000.0
                / (repeat * len(test)))
    extra = {}
    if with_colocations:
        rows = colocation_rows(slomo_pred, queries(train_mixes), seed)
        tuned = {}
        for name in catalog.names():
            driver = slomo_pred.driver(name)
            tuned[name] = document.Model(training.train(
                driver, 'bench-%s' % name, runs=runs, seed=seed,
                extra=rows.get(name, ())))

        def predict(name, comps):
            return tuned[name].predict_mpps([tuned[c].contentiousness
                                             for c in comps])
        result['slomo_with_colocations'] = errors(predict, test)
    return {
        'errors': result, 'query_ms': query_ms, 'test_queries': len(test),
        'train_sets': len(train_mixes), 'test_sets': len(test_mixes),
        'slomo_training_s': train_s,
        'slomo_profiling_runs': slomo_pred.measurements,
        'prediction_profiling_runs': baseline.measurements, **extra}


def error_figures(res):
    """The run's figures that a seeded run reproduces exactly.

    Per predictor its mean, p95 and largest absolute error
    (``<name>_mean_error_pct``, ``_p95_error_pct``, ``_max_error_pct``),
    SLOMO's mean over the baseline's, and the
    counts of co-locations, predictions and profiling runs; no timings.
    """
    figures = {}
    for name, errs in res['errors'].items():
        figures['%s_mean_error_pct' % name] = round(statistics.fmean(errs), 3)
        figures['%s_p95_error_pct' % name] = round(_p95(errs), 3)
        figures['%s_max_error_pct' % name] = round(max(errs), 3)
    figures['slomo_to_prediction_mean_error'] = round(
        figures['slomo_mean_error_pct']
        / max(figures['prediction_mean_error_pct'], 1e-9), 4)
    for key in ('test_queries', 'train_sets', 'test_sets',
                'slomo_profiling_runs', 'prediction_profiling_runs'):
        figures[key] = res[key]
    return figures


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
    res = run(sets, runs, with_colocations)
    print('%d held-out co-locations, %d predictions; SLOMO training took '
          '%.1f s (%d profiling runs; the baseline %d)' % (
              res['test_sets'], res['test_queries'],
              res['slomo_training_s'], res['slomo_profiling_runs'],
              res['prediction_profiling_runs']))
    print('%-24s %10s %10s %10s' % ('predictor', 'mean err%', 'p95 err%',
                                    'max err%'))
    for name, errs in res['errors'].items():
        print('%-24s %10.2f %10.2f %10.2f' % (
            name, statistics.fmean(errs), _p95(errs), max(errs)))
    figures = error_figures(res)
    figures['query_ms'] = round(res['query_ms'], 4)
    figures['slomo_training_s'] = round(res['slomo_training_s'], 1)
    ratio = figures['slomo_to_prediction_mean_error']
    print('SLOMO mean error is %.2fx the baseline\'s (target <= 0.5); '
          '%.3f ms per query (target < 1)' % (ratio, figures['query_ms']))
    print(json.dumps(figures, sort_keys=True))
    return 0
