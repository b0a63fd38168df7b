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
(``with_colocations``), reported beside the main figures.

Query time: one SLOMO prediction (composition and the ensemble's walk)
from contentiousness already measured, without the predictor's memo.

``tox -e bench -- prediction`` prints :func:`run`'s result
(``benchmarks/prediction.py``); the documentation quotes
:func:`error_figures`, the part a seeded run reproduces
(:func:`resq_nova.evaluation.docfigures.prediction_figures`).
"""

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
    """Each query's absolute error, in percent of the observed Mpps."""
    return [abs(predict(n, c) - obs) / obs * 100.0 for n, c, obs in qs]


def p95(values):
    """The 95th percentile of ``values`` (nearest rank, no interpolation)."""
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
    """Train both predictors, judge them on the held-out co-locations.

    :param sets: co-locations drawn, half of them held out.
    :param runs: SLOMO's contention runs per NF.
    :param with_colocations: also judge SLOMO trained on the measured
        training half (``errors["slomo_with_colocations"]``).
    :returns: ``{"errors": {predictor: [% per query]}, "query_ms",
        "test_queries", "train_sets", "test_sets", "slomo_training_s",
        "slomo_profiling_runs", "prediction_profiling_runs"}``.
    """
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
                extra=rows.get(name, ()), draws=slomo_pred.draws))

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
        figures['%s_p95_error_pct' % name] = round(p95(errs), 3)
        figures['%s_max_error_pct' % name] = round(max(errs), 3)
    figures['slomo_to_prediction_mean_error'] = round(
        figures['slomo_mean_error_pct']
        / max(figures['prediction_mean_error_pct'], 1e-9), 4)
    for key in ('test_queries', 'train_sets', 'test_sets',
                'slomo_profiling_runs', 'prediction_profiling_runs'):
        figures[key] = res[key]
    return figures
