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
   Synthetic`) spanning access rates and buffer sizes, half of them doing
   packet I/O (packet rates and sizes, DMA buffers that may overflow
   DDIO's ways), each measured the same way (alone, and next to the
   probe), so their contentiousness is read exactly as an NF's would be.
3. Runs of the NF saturated next to sets of 0 to 8 palette competitors,
   all confined to one class of service of a few ways up to the whole
   LLC (:func:`class_sizes`); each gives one training row: the set's
   composed contentiousness with the class's size, and the NF's
   throughput relative to solo (alone, whole LLC).
4. A gradient-boosting fit (:mod:`.ensemble`) of those rows.
5. Steps 1-4 again for every further training draw (:data:`DEFAULT_DRAWS`
   in all): each draw has its own palette and plan (draw 0 is the seed's
   own, as before draws), and the model is the mean of the draws' fits
   (:func:`ensemble.mean`), stored as one ensemble. One draw of 32
   competitors covers the contention space unevenly, and the fit's error
   on catalog mixes depended on the draw more than on the mixes (with one
   draw, seed 3's models were off by more than 7% on average at 20 ways
   where the mean over seeds 0-11 was under 4%, ``tox -e bench --
   seeds``); averaging draws (bagging) keeps what each fit learns and
   cuts that variance.

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

DEFAULT_RUNS = 240
# Training draws per model: each its own palette, plan and fit, the model
# their mean (so DEFAULT_DRAWS x DEFAULT_RUNS contention runs per NF).
DEFAULT_DRAWS = 5
PALETTE_SIZE = 32
MAX_COMPETITORS = 8
# Class sizes trained at, as fractions of the LLC's ways (2, 3, 4, 6, 8,
# 12, 16 and 20 of 20 ways).
CLASS_FRACTIONS = (0.1, 0.15, 0.2, 0.3, 0.4, 0.6, 0.8, 1.0)
# A heavy streaming competitor, 120M LLC references/s over 48 MiB (more
# than the LLC): next to it an NF shows how much cache and memory
# bandwidth it still claims under contention. A milder probe (40M over
# 32 MiB) halved the readings' value for crowded co-locations of
# cache-sensitive NFs (tox -e bench -- prediction).
# The probe also forwards 5 Mpps of 64-byte packets into 4096 DMA buffers
# (512 KiB): next to it a reading shows how much DMA buffer space the NF or
# competitor holds, as the packet data it leaks to DRAM (the DDIO
# chokepoint). A probe filling most of DDIO (32768 buffers) read NFs whose
# buffers are sized for DDIO as leaky and made the catalog mixes'
# predictions pessimistic (resq_profiler.slomo.accuracy measures it).
PROBE = truth.Synthetic(refs_per_s=1.2e8, buffer_bytes=48 * 2 ** 20,
                        name='probe', packet_mpps=5.0, packet_bytes=64,
                        dma_buffers=4096)
# The palette spans 1M-200M references/s and 256 KiB-80 MiB buffers
# (log-uniform), beyond what the catalog's NFs issue and hold.
RATE_RANGE = (1e6, 2e8)
BUFFER_RANGE = (256 * 2 ** 10, 80 * 2 ** 20)
# Packet I/O of the competitors that do it: 0.5-15 Mpps of 64-1518 byte
# packets into 512-8192 DMA buffers (a DPDK port's default rings of 2 x
# 2048 descriptors are in the range, and overflow DDIO at large packets).
PACKET_RATE_RANGE = (5e-1, 15.0)
PACKET_SIZES = (64, 128, 256, 512, 1024, 1518)
DMA_BUFFER_RANGE = (512, 8192)


def _log_uniform(rng, lo, hi):
    return lo * (hi / lo) ** rng.random()


def _rng(what, seed, draw):
    """The random stream of ``what`` for a seed's training draw."""
    if isinstance(draw, bool) or not isinstance(draw, int) or draw < 0:
        raise ValueError('a training draw is a whole number >= 0, got %r'
                         % (draw,))
    if draw == 0:
        # The seed's own stream, as before there were draws.
        return random.Random('slomo-%s/%d' % (what, seed))
    return random.Random('slomo-%s/%d/%d' % (what, seed, draw))


def palette(seed=0, size=PALETTE_SIZE, draw=0):
    """Synthetic competitors of varying pressure.

    Deterministic per seed and draw. Every other one does packet I/O, so
    the DDIO counters and the leak of overflowing DMA buffers vary over
    the training set.
    """
    rng = _rng('palette', seed, draw)
    kinds = []
    for i in range(size):
        refs = _log_uniform(rng, *RATE_RANGE)
        buf = _log_uniform(rng, *BUFFER_RANGE)
        io = {}
        if i % 2:
            io = {'packet_mpps': _log_uniform(rng, *PACKET_RATE_RANGE),
                  'packet_bytes': rng.choice(PACKET_SIZES),
                  'dma_buffers': int(_log_uniform(rng, *DMA_BUFFER_RANGE))}
        kinds.append(truth.Synthetic(refs_per_s=refs, buffer_bytes=buf,
                                     name='synthetic-%d' % i, **io))
    return kinds


def class_sizes(llc_ways, min_ways=1):
    """The class sizes (ways) training runs at, smallest first."""
    if llc_ways < max(min_ways, 1):
        raise ValueError('a platform of %r ways has no class of at least %r'
                         % (llc_ways, min_ways))
    return sorted({min(max(int(round(f * llc_ways)), min_ways, 1), llc_ways)
                   for f in CLASS_FRACTIONS})


def plan(runs, seed=0, size=PALETTE_SIZE, max_competitors=MAX_COMPETITORS,
         sizes=(20,), draw=0):
    """``runs`` runs as ``(class ways, [palette indexes])``.

    The first runs put the NF alone in each class size (how the class's
    size alone slows it); the rest draw a size and 1 to
    ``max_competitors`` competitors.
    """
    if runs < 1:
        raise ValueError('SLOMO training needs at least one run, got %d'
                         % runs)
    sizes = list(sizes)
    if not sizes:
        raise ValueError('SLOMO training needs at least one class size')
    rng = _rng('plan', seed, draw)
    out = [(ways, []) for ways in sizes[:runs]]
    while len(out) < runs:
        out.append((rng.choice(sizes), [rng.randrange(size) for _ in range(
            rng.randint(1, max_competitors))]))
    return out


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
         palette_size=PALETTE_SIZE, draw=0):
    """Measure the training set of one draw.

    :returns: ``(solo Mpps, NF contentiousness, rows, targets)``.
    """
    platform = driver.platform()
    sizes = class_sizes(platform['llc_ways'], driver.way_range()[0])
    way_bytes = platform['way_size_bytes']
    sets = plan(runs, seed, palette_size, sizes=sizes, draw=draw)
    kinds = palette(seed, palette_size, draw)
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

    xs = [metrics.compose([], platform['llc_ways'], way_bytes)]
    ys = [1.0]
    for n, (ways, chosen) in enumerate(sets, 1):
        mpps, _, _ = driver.contention_run([kinds[i] for i in chosen],
                                           ways=ways)
        xs.append(metrics.compose([of(i) for i in chosen], ways, way_bytes))
        ys.append(mpps / solo_mpps)
        if progress and n % 20 == 0:
            progress('%s: %d/%d contention runs' % (driver.nf, n, runs))
    return solo_mpps, mine, xs, ys


def _mean_contentiousness(readings):
    """The mean of repeated measurements of one NF's contentiousness."""
    return metrics.Contentiousness(*(
        {name: sum(getattr(r, cond)[name] for r in readings) / len(readings)
         for name in metrics.COUNTERS} for cond in metrics.CONDITIONS))


def train(driver, profile_id, runs=DEFAULT_RUNS, seed=0, params=None,
          probe=PROBE, progress=None, extra=(), palette_size=PALETTE_SIZE,
          draws=DEFAULT_DRAWS):
    """Train the driver's NF and return its model document (sealed).

    :param profile_id: the profile the model belongs with.
    :param runs: contention runs per draw.
    :param extra: more ``(row, target)`` pairs to train on (e.g. measured
        co-locations with real NFs); a row of the whole-LLC features only
        (:data:`metrics.FEATURES_V1`) is taken as sharing the whole LLC.
        Every draw's fit gets them.
    :param draws: training draws (each its palette, plan and fit; the NF's
        solo throughput and contentiousness measured again in each); the
        model is the mean of their fits, the solo throughput and
        contentiousness the mean of their measurements. One draw is the
        model of before draws.
    """
    if isinstance(draws, bool) or not isinstance(draws, int) or draws < 1:
        raise ValueError('SLOMO training needs at least one draw, got %r'
                         % (draws,))
    platform = driver.platform()
    extra_rows, extra_targets = [], []
    for row, target in extra:
        row = list(row)
        if len(row) == len(metrics.FEATURES_V1):
            row = metrics.with_class(row, platform['llc_ways'],
                                     platform['way_size_bytes'])
        extra_rows.append(row)
        extra_targets.append(target)
    solos, readings, fits, xs, ys = [], [], [], [], []
    for draw in range(draws):
        if progress and draws > 1:
            progress('%s: training draw %d of %d' % (driver.nf, draw + 1,
                                                     draws))
        solo_mpps, mine, dx, dy = rows(driver, runs, seed, probe, progress,
                                       palette_size, draw)
        dx += extra_rows
        dy += extra_targets
        fits.append(ensemble.fit(dx, dy, params))
        solos.append(solo_mpps)
        readings.append(mine)
        xs += dx
        ys += dy
    solo_mpps = sum(solos) / len(solos)
    mine = _mean_contentiousness(readings)
    fitted = ensemble.mean(fits)
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
            'contention_runs': runs * draws, 'draws': draws,
            'extra_rows': len(extra),
            'palette_size': palette_size,
            'max_competitors': MAX_COMPETITORS,
            'class_ways': class_sizes(driver.platform()['llc_ways'],
                                      driver.way_range()[0]),
            'library': library,
            'params': dict(ensemble.DEFAULT_PARAMS, **(params or {})),
            'fit_mean_error_pct': round(sum(fit_err) / len(fit_err), 3),
            'created_at': datetime.datetime.now(
                datetime.timezone.utc).isoformat(timespec='seconds'),
        },
        'ensemble': fitted,
    }
    return document.seal(doc)
