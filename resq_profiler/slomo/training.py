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
"""Training an NF's SLOMO model from runs against synthetic competitors.

1. The NF's own contentiousness: its counters alone and next to the
   probe (:data:`PROBE`).
2. A palette of synthetic competitors (:class:`resq_profiler.truth.
   Synthetic`) spanning access rates and buffer sizes, each measured the
   same way (alone, and next to the probe), so their contentiousness is
   read exactly as an NF's would be.
3. Runs of the NF saturated next to sets of 1 to 8 palette competitors;
   each gives one training row: the set's composed contentiousness and
   the NF's throughput relative to solo.
4. A gradient-boosting fit (:mod:`.ensemble`) of those rows.

Every run goes through a profiling driver's :meth:`contention_run`
(:mod:`resq_profiler.drivers`), so the model driver trains against the
simulated testbed and a hardware driver against the real thing.
"""

import datetime
import random

from resq_profiler.slomo import document
from resq_profiler.slomo import ensemble
from resq_profiler.slomo import metrics
from resq_profiler import truth

DEFAULT_RUNS = 80
PALETTE_SIZE = 24
MAX_COMPETITORS = 8
# A heavy streaming competitor, 120M LLC references/s over 48 MiB (more
# than the LLC): next to it an NF shows how much cache and memory
# bandwidth it still claims under contention. A milder probe (40M over
# 32 MiB) halved the readings' value for crowded co-locations of
# cache-sensitive NFs (benchmarks/prediction.py).
PROBE = truth.Synthetic(refs_per_s=1.2e8, buffer_bytes=48 * 2 ** 20,
                        name='probe')
# The palette spans 1M-200M references/s and 256 KiB-80 MiB buffers
# (log-uniform), beyond what the catalog's NFs issue and hold.
RATE_RANGE = (1e6, 2e8)
BUFFER_RANGE = (256 * 2 ** 10, 80 * 2 ** 20)


def _log_uniform(rng, lo, hi):
    return lo * (hi / lo) ** rng.random()


def palette(seed=0, size=PALETTE_SIZE):
    """Synthetic competitors of varying pressure (deterministic per seed)."""
    rng = random.Random('slomo-palette/%d' % seed)
    return [truth.Synthetic(refs_per_s=_log_uniform(rng, *RATE_RANGE),
                            buffer_bytes=_log_uniform(rng, *BUFFER_RANGE),
                            name='synthetic-%d' % i) for i in range(size)]


def plan(runs, seed=0, size=PALETTE_SIZE, max_competitors=MAX_COMPETITORS):
    """``runs`` competitor sets, as lists of palette indexes."""
    if runs < 1:
        raise ValueError('SLOMO training needs at least one run, got %d'
                         % runs)
    rng = random.Random('slomo-plan/%d' % seed)
    return [[rng.randrange(size) for _ in range(rng.randint(
        1, max_competitors))] for _ in range(runs)]


def competitor_contentiousness(driver, competitor, probe=PROBE):
    """A synthetic competitor's :class:`metrics.Contentiousness`."""
    _, _, (solo,) = driver.contention_run([competitor], with_nf=False)
    _, _, (pressured, _) = driver.contention_run([competitor, probe],
                                                 with_nf=False)
    return metrics.Contentiousness.from_counters(solo, pressured)


def nf_contentiousness(driver, probe=PROBE):
    """``(solo Mpps, Contentiousness)`` of the driver's NF."""
    mpps, solo, _ = driver.contention_run([])
    _, pressured, _ = driver.contention_run([probe])
    return mpps, metrics.Contentiousness.from_counters(solo, pressured)


def rows(driver, runs=DEFAULT_RUNS, seed=0, probe=PROBE, progress=None,
         palette_size=PALETTE_SIZE):
    """Measure the training set.

    :returns: ``(solo Mpps, NF contentiousness, rows, targets)``.
    """
    sets = plan(runs, seed, palette_size)
    kinds = palette(seed, palette_size)
    solo_mpps, mine = nf_contentiousness(driver, probe)
    if solo_mpps <= 0:
        raise ValueError('%s measured %r Mpps alone; cannot train a '
                         'sensitivity model from that' % (driver.nf,
                                                          solo_mpps))
    cache = {}

    def of(idx):
        if idx not in cache:
            cache[idx] = competitor_contentiousness(driver, kinds[idx],
                                                    probe)
        return cache[idx]

    xs = [metrics.compose([])]
    ys = [1.0]
    for n, chosen in enumerate(sets, 1):
        mpps, _, _ = driver.contention_run([kinds[i] for i in chosen])
        xs.append(metrics.compose([of(i) for i in chosen]))
        ys.append(mpps / solo_mpps)
        if progress and n % 20 == 0:
            progress('%s: %d/%d contention runs' % (driver.nf, n, runs))
    return solo_mpps, mine, xs, ys


def train(driver, profile_id, runs=DEFAULT_RUNS, seed=0, params=None,
          probe=PROBE, progress=None, extra=(), palette_size=PALETTE_SIZE):
    """Train the driver's NF and return its model document (sealed).

    :param profile_id: the profile the model belongs with.
    :param extra: more ``(row, target)`` pairs to train on (e.g. measured
        co-locations with real NFs).
    """
    solo_mpps, mine, xs, ys = rows(driver, runs, seed, probe, progress,
                                   palette_size)
    for row, target in extra:
        xs.append(list(row))
        ys.append(target)
    fitted = ensemble.fit(xs, ys, params)
    model = ensemble.Ensemble(fitted)
    fit_err = [abs(model.predict(x) - y) / max(y, 1e-9) * 100.0
               for x, y in zip(xs, ys)]
    try:
        import sklearn
        library = 'scikit-learn %s' % sklearn.__version__
    except ImportError:  # pragma: no cover - fit() needed it
        library = 'scikit-learn'
    doc = {
        'format': document.FORMAT,
        'format_version': document.FORMAT_VERSION,
        'nf': {'name': driver.nf, 'profile_id': profile_id},
        'platform': driver.platform(),
        'traffic': {'packet_bytes': driver.traffic.packet_bytes,
                    'flows': driver.traffic.flows},
        'solo_mpps': solo_mpps,
        'contentiousness': mine.as_dict(),
        'probe': {'refs_per_s': probe.refs_per_s,
                  'buffer_bytes': probe.buffer_bytes},
        'features': list(metrics.FEATURES),
        'target': document.TARGET,
        'training': {
            'driver': driver.name, 'runs': len(ys), 'seed': seed,
            'contention_runs': runs, 'extra_rows': len(extra),
            'palette_size': palette_size,
            'max_competitors': MAX_COMPETITORS,
            'library': library,
            'params': dict(ensemble.DEFAULT_PARAMS, **(params or {})),
            'fit_mean_error_pct': round(sum(fit_err) / len(fit_err), 3),
            'created_at': datetime.datetime.now(
                datetime.timezone.utc).isoformat(timespec='seconds'),
        },
        'ensemble': fitted,
    }
    return document.seal(doc)
