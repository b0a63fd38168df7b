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
"""How well SLOMO predicts NFs sharing a class of service, on the testbed.

Every catalog NF is trained the SLOMO way through the model driver on the
simulated testbed (:mod:`resq_profiler.truth`), with measurement noise.
Then mixes of 2 to 5 catalog NFs are confined to one class of ``N`` ways
(from way 0 up, as the agent's classes and the command driver's masks)
and every instance's predicted throughput is compared with what the
testbed gives it there:

* **class error** (:func:`class_error`): per class size, the mean absolute
  error in percent of the observed throughput, the mean signed error
  (positive: optimistic) and the worst instance;
* **I/O-heavy mixes** (:func:`io_mixes`): 1 to 3 NFs of the mixes' kinds
  next to 1 or 2 catalog NFs forwarding 1518-byte packets into DPDK's
  default rings (2 x 2048 descriptors, not sized to DDIO), whose buffers
  overflow DDIO's ways: the leak to DRAM is the chokepoint the I/O
  counters have to reveal. Only the 64-byte NFs are predicted.

``class_error`` also reports what the same models predict when asked about
the whole LLC instead of the class (``whole_llc_bias_pct``): the error of
a predictor that ignores the class's size.

:func:`over_seeds` repeats :func:`class_error` over seeds (each seed its
training draws, measurement noise and test mixes) and reports each class
size's mean and worst seed: a target is judged on the worst seed.
"""

import random
import statistics

from oslo_config import cfg

from resq_profiler import catalog
from resq_profiler import conf as prof_conf
from resq_profiler import drivers
from resq_profiler import nfmodel
from resq_profiler.slomo import document
from resq_profiler.slomo import training
from resq_profiler import truth

WAYS = (2, 4, 8, 20)
# Class sizes and seeds of over_seeds() (tox -e bench -- seeds).
SEED_WAYS = (2, 4, 8, 12, 16, 20)
SEEDS = 10
MIXES = 30
MIX_SIZES = (2, 5)
# I/O-heavy competitors: large packets, DPDK's default rings (unsized).
IO_TRAFFIC = nfmodel.Traffic(1518)
IO_DMA_BUFFERS = 2 * 2048


def mixes(count=MIXES, seed=0, names=None):
    """``count`` mixes of 2 to 5 catalog NFs (deterministic per seed)."""
    names = sorted(names or catalog.names())
    rng = random.Random('slomo-accuracy/%d' % seed)
    return [tuple(sorted(rng.choice(names) for _ in range(
        rng.randint(*MIX_SIZES)))) for _ in range(count)]


def io_mixes(count=MIXES, seed=0, names=None):
    """``(NFs at 64 B, I/O-heavy NFs at 1518 B)`` mixes, 1 to 3 of each."""
    names = sorted(names or catalog.names())
    rng = random.Random('slomo-accuracy-io/%d' % seed)
    return [(tuple(sorted(rng.choice(names) for _ in range(
        rng.randint(1, 3)))), tuple(sorted(rng.choice(names) for _ in range(
            rng.randint(1, 2))))) for _ in range(count)]


def _conf(noise_pct, seed):
    conf = cfg.ConfigOpts()
    prof_conf.register_opts(conf)
    conf([], project='resq', default_config_files=[],
         default_config_dirs=[])
    conf.set_override('model_truth', 'testbed', 'resq_profiler')
    conf.set_override('model_noise_pct', noise_pct, 'resq_profiler')
    conf.set_override('model_seed', seed, 'resq_profiler')
    return conf


class Models:
    """SLOMO models of catalog NFs trained on the testbed, on first use."""

    def __init__(self, noise_pct=0.5, seed=0, runs=training.DEFAULT_RUNS,
                 draws=training.DEFAULT_DRAWS):
        if noise_pct < 0:
            raise ValueError('measurement noise must not be negative, got '
                             '%r%%' % noise_pct)
        self.conf = _conf(noise_pct, seed)
        self.seed = seed
        self.runs = runs
        self.draws = draws
        self._models = {}
        self._io = {}

    def model(self, name):
        name = catalog.get(name).name
        if name not in self._models:
            driver = drivers.load('model', self.conf, name,
                                  nfmodel.Traffic())
            self._models[name] = document.Model(training.train(
                driver, 'accuracy-%s' % name.lower(), runs=self.runs,
                seed=self.seed, draws=self.draws))
        return self._models[name]

    def io_contentiousness(self, name):
        """An I/O-heavy NF's contentiousness (1518 B, unsized rings)."""
        name = catalog.get(name).name
        if name not in self._io:
            driver = drivers.load('model', self.conf, name, IO_TRAFFIC)
            driver.dma_buffers = IO_DMA_BUFFERS
            self._io[name] = training.nf_contentiousness(driver)[1]
        return self._io[name]


def _errors(models, members, io_members, ways):
    """Signed errors (%) of every 64-byte member, and of the whole LLC."""
    part = frozenset(range(ways))
    insts = [nfmodel.Instance(catalog.get(n), part) for n in members]
    insts += [nfmodel.Instance(catalog.get(n), part, IO_TRAFFIC,
                               dma_buffers=IO_DMA_BUFFERS)
              for n in io_members]
    observed = truth.simulate_server(insts)
    io = [models.io_contentiousness(n) for n in io_members]
    out = []
    for i, name in enumerate(members):
        others = [models.model(o).contentiousness
                  for j, o in enumerate(members) if j != i] + io
        mine = models.model(name)
        obs = observed[i].capacity_mpps
        out.append((name,
                    (mine.predict_mpps(others, ways) - obs) / obs * 100.0,
                    (mine.predict_mpps(others) - obs) / obs * 100.0))
    return out


def _summary(rows):
    """``rows``: ``(mix, NF, signed error %, whole-LLC signed error %)``."""
    worst = max(rows, key=lambda r: abs(r[2]))
    return {
        'mean_abs_pct': round(statistics.fmean(abs(r[2]) for r in rows), 3),
        'bias_pct': round(statistics.fmean(r[2] for r in rows), 3),
        'max_abs_pct': round(abs(worst[2]), 3),
        'worst': {'mix': list(worst[0]), 'nf': worst[1],
                  'error_pct': round(worst[2], 3)},
        'whole_llc_bias_pct': round(statistics.fmean(r[3] for r in rows),
                                    3),
        'instances': len(rows),
    }


def _check_ways(ways):
    llc = nfmodel.Platform().llc_ways
    ways = list(ways)
    if not ways:
        raise ValueError('give at least one class size (ways)')
    for w in ways:
        if isinstance(w, bool) or not isinstance(w, int) or not (
                1 <= w <= llc):
            raise ValueError('class sizes must be whole numbers of ways '
                             'from 1 to %d, got %r' % (llc, w))
    return ways


def class_error(ways=WAYS, mixes=None, seed=0, noise_pct=0.5,
                runs=training.DEFAULT_RUNS, io=True, models=None,
                draws=training.DEFAULT_DRAWS):
    """SLOMO's error inside classes of ``ways`` ways against the testbed.

    :param ways: class sizes to measure at.
    :param mixes: tuples of catalog NF names sharing a class; default
        :func:`mixes` of ``seed``.
    :param seed: seed of the mixes, the training plan and the noise.
    :param noise_pct: measurement noise of every profiling run.
    :param runs: contention runs per NF model and training draw.
    :param io: also measure the I/O-heavy mixes (:func:`io_mixes`).
    :param models: a :class:`Models` to reuse (its noise, seed, runs and
        draws win).
    :param draws: training draws per NF model (their mean is the model).
    :returns: ``{"ways": {"<N>": summary}, "class_error_pct": {"<N>": mean
        absolute error %}, "io": summary, "io_error_pct": ...}``; each
        summary has ``mean_abs_pct``, ``bias_pct``, ``max_abs_pct``,
        ``worst`` and ``whole_llc_bias_pct``.
    :raises ValueError: for class sizes the platform cannot have, or a mix
        of unknown NFs.
    """
    ways = _check_ways(ways)
    if mixes is None:
        mixes = globals()['mixes'](seed=seed)
    mixes = [tuple(catalog.get(n).name for n in mix) for mix in mixes]
    if not mixes or any(not mix for mix in mixes):
        raise ValueError('every mix needs at least one NF')
    models = models or Models(noise_pct, seed, runs, draws)
    doc = {'ways': {}, 'class_error_pct': {}, 'mixes': len(mixes),
           'runs': models.runs, 'draws': models.draws,
           'noise_pct': noise_pct, 'seed': seed}
    for w in ways:
        rows = [(mix, name, err, whole) for mix in mixes
                for name, err, whole in _errors(models, mix, (), w)]
        doc['ways'][str(w)] = _summary(rows)
        doc['class_error_pct'][str(w)] = doc['ways'][str(w)]['mean_abs_pct']
    if io:
        rows = []
        names = sorted({n for mix in mixes for n in mix})
        for w in ways:
            for mine, heavy in io_mixes(len(mixes), seed, names):
                rows += [(mine + tuple('%s@1518B' % h for h in heavy), name,
                          err, whole)
                         for name, err, whole in _errors(models, mine, heavy,
                                                         w)]
        doc['io'] = _summary(rows)
        doc['io_error_pct'] = doc['io']['mean_abs_pct']
    return doc


def doc_figures(doc):
    """The ``slomo`` figures of ``doc/source/figures.json`` from ``doc``.

    :param doc: what :func:`class_error` returned (with ``io``).
    :returns: the tree the documentation's ``:num:`slomo/...``` roles
        read: ``class_error_pct``, ``class_max_error_pct`` and
        ``whole_llc_bias_pct`` by ways, ``io_error_pct``,
        ``io_max_error_pct``, ``io_whole_llc_bias_pct``.
    """
    out = {'class_error_pct': dict(doc['class_error_pct']),
           'class_max_error_pct': {}, 'class_bias_pct': {},
           'whole_llc_bias_pct': {}}
    for ways, summary in doc['ways'].items():
        out['class_max_error_pct'][ways] = summary['max_abs_pct']
        out['class_bias_pct'][ways] = summary['bias_pct']
        out['whole_llc_bias_pct'][ways] = summary['whole_llc_bias_pct']
    if 'io' in doc:
        out['io_error_pct'] = doc['io']['mean_abs_pct']
        out['io_max_error_pct'] = doc['io']['max_abs_pct']
        out['io_whole_llc_bias_pct'] = doc['io']['whole_llc_bias_pct']
    return out


def _spread(values):
    """The mean and worst seed of ``{seed: value}``.

    :returns: ``{"mean", "worst_seed", "worst_seed_id", "by_seed"}``.
    """
    worst = max(values, key=lambda k: (values[k], -k))
    return {'mean': round(statistics.fmean(values.values()), 3),
            'worst_seed': values[worst], 'worst_seed_id': worst,
            'by_seed': [values[k] for k in sorted(values)]}


def _range(values):
    """The mean, lowest and highest of ``{seed: signed value}``."""
    return {'mean': round(statistics.fmean(values.values()), 3),
            'min': min(values.values()), 'max': max(values.values())}


def over_seeds(seeds=SEEDS, ways=SEED_WAYS, noise_pct=0.5,
               runs=training.DEFAULT_RUNS, draws=training.DEFAULT_DRAWS,
               io=True, progress=None, mix_count=MIXES):
    """:func:`class_error` of seeds 0 to ``seeds`` - 1: mean and worst.

    Each seed trains every catalog NF afresh (its training draws and
    measurement noise) and draws its own test mixes (:func:`mixes`), so
    the spread is that of the whole procedure.

    :param mix_count: test mixes per seed (and I/O-heavy mixes).

    :returns: ``{"seeds", "runs", "draws", "noise_pct", "mixes", "ways":
        {"<N>": spread}, "max_abs_pct": {"<N>": worst instance of any
        seed}, "io": spread}``; a spread is ``{"mean", "worst_seed",
        "worst_seed_id", "by_seed"}`` of the seeds' mean absolute errors
        (%); the I/O-heavy mixes are only in ``io``. ``bias_pct`` and
        ``whole_llc_bias_pct`` (``{"<N>": {"mean", "min", "max"}}``) are
        the seeds' mean signed errors, in the class and asked about the
        whole LLC.
    :raises ValueError: for fewer than one seed, or bad class sizes.
    """
    if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 1:
        raise ValueError('give at least one seed, got %r' % (seeds,))
    ways = _check_ways(ways)
    by_ways = {str(w): {} for w in ways}
    bias = {str(w): {} for w in ways}
    whole = {str(w): {} for w in ways}
    worst = {str(w): 0.0 for w in ways}
    by_io = {}
    mixes_count = None
    for seed in range(seeds):
        if progress:
            progress('SLOMO seed %d of %d' % (seed + 1, seeds))
        doc = class_error(ways, mixes(mix_count, seed), seed=seed,
                          noise_pct=noise_pct, runs=runs, io=io,
                          draws=draws)
        mixes_count = doc['mixes']
        for w, summary in doc['ways'].items():
            by_ways[w][seed] = summary['mean_abs_pct']
            bias[w][seed] = summary['bias_pct']
            whole[w][seed] = summary['whole_llc_bias_pct']
            worst[w] = max(worst[w], summary['max_abs_pct'])
        if io:
            by_io[seed] = doc['io_error_pct']
    out = {'seeds': seeds, 'runs': runs, 'draws': draws,
           'noise_pct': noise_pct, 'mixes': mixes_count,
           'ways': {w: _spread(v) for w, v in by_ways.items()},
           'bias_pct': {w: _range(v) for w, v in bias.items()},
           'whole_llc_bias_pct': {w: _range(v) for w, v in whole.items()},
           'max_abs_pct': worst}
    if io:
        out['io'] = _spread(by_io)
    return out
