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
"""The figures the documentation quotes, generated from the code.

``python -m resq_nova.evaluation.docfigures`` runs the evaluation's own
functions on their embedded defaults (what ``resq-evaluate`` and ``tox -e
bench -- profiler`` run) and writes what the docs quote as one JSON tree,
``doc/source/figures.json``. The docs take every figure from that file
through the ``:num:`` role of ``doc/source/_exts/resq_figures.py``, and
``--check`` regenerates the tree and fails, naming each path that differs,
when the committed file no longer matches a run.

Figures a seeded run reproduces exactly come from here. Those that depend
on the machine (seconds, MB, pass rates under a time limit) come from a
recorded benchmark run instead: ``python -m benchmarks NAME --record``
writes ``doc/source/figures/bench-<name>.json`` with the run's date,
commit and machine, and the docs quote it under ``bench/<name>`` (see
``doc/source/_exts/resq_figures.py``).

Each entry of :data:`SOURCES` fills one top-level key; adding a source is
one line there.

The figures are computed with NumPy's and OpenBLAS's kernels up to AVX2
(:data:`PORTABLE_KERNELS`): both pick AVX-512 kernels at run time on the
CPUs that have them, and those round differently in the last bits, enough
to move a model's fit and so a figure in the fourth digit, or a count of
runs by one. ``main`` runs itself again with those settings when they are
missing; the unit tests' environment (``tox.ini``) sets them.
"""

import argparse
import json
import os
import statistics
import sys

from oslo_config import cfg

from resq_nova.cmd import evaluate as evaluate_cmd
from resq_nova import conf as nova_conf
from resq_nova.evaluation import chains as chains_mod
from resq_nova.evaluation import cluster
from resq_nova.evaluation import dobrescu
from resq_nova.evaluation import prediction
from resq_nova.evaluation import run
from resq_nova.evaluation import schemes as schemes_mod
from resq_nova.evaluation import slosets
from resq_profiler import accuracy
from resq_profiler import budget
from resq_profiler import catalog
from resq_profiler import conf as prof_conf
from resq_profiler import nfmodel
from resq_profiler.slomo import accuracy as slomo_accuracy
from resq_profiler import truth

# The kernels the figures are computed with, on every x86-64 machine with
# AVX2: NumPy's run-time dispatch without its AVX-512 targets (numpy 2.4's
# targets above AVX2; figures-constraints.txt pins the release) and
# OpenBLAS's Haswell kernels (NumPy's and SciPy's OpenBLAS pick SkylakeX on
# an AVX-512 CPU).
PORTABLE_KERNELS = {
    'NPY_DISABLE_CPU_FEATURES': 'X86_V4 AVX512_ICL AVX512_SPR',
    'OPENBLAS_CORETYPE': 'Haswell',
}


def _has_avx512(cpuinfo='/proc/cpuinfo'):
    try:
        with open(cpuinfo) as f:
            return any(line.startswith('flags') and ' avx512f' in line
                       for line in f)
    except OSError:
        return False


def portable_kernels_missing(environ=None, cpuinfo='/proc/cpuinfo'):
    """The settings of :data:`PORTABLE_KERNELS` missing here, sorted.

    None are missing on a CPU without AVX-512 (the kernels are those
    already).
    """
    environ = os.environ if environ is None else environ
    if not _has_avx512(cpuinfo):
        return []
    return sorted(k for k, v in PORTABLE_KERNELS.items()
                  if environ.get(k) != v)


# Where the docs read the figures, relative to the repository root.
DEFAULT_OUTPUT = os.path.join('doc', 'source', 'figures.json')

# Floats are stored with this many decimals, so that a rerun compares
# equal unless a figure really moved.
DIGITS = 4

# The schemes whose servers other schemes are compared with.
GREEDIES = ('resq_greedy', 'resq_greedy_paper')

# The ResQ schemes, whose violations the robustness runs report.
RESQ_SCHEMES = ('resq_greedy_paper', 'resq_greedy', 'resq_optimal')

# Variants of the evaluation the docs cite, each as ``resq-evaluate
# --noise-pct N --seed S --packet-bytes B --schemes ... --slo-targets
# binding`` would run it: (key, noise in percent, seed, packet bytes,
# schemes).
ROBUSTNESS_VARIANTS = (
    ('default', 0.5, 0, 64, ('agnostic',) + RESQ_SCHEMES),
    ('noise_1', 1.0, 0, 64, ('agnostic',) + RESQ_SCHEMES),
    ('noise_2', 2.0, 0, 64, ('agnostic',) + RESQ_SCHEMES),
    ('noise_5', 5.0, 0, 64, ('agnostic',) + RESQ_SCHEMES),
    ('seed_1', 0.5, 1, 64, ('agnostic',) + RESQ_SCHEMES),
    ('seed_2', 0.5, 2, 64, ('agnostic',) + RESQ_SCHEMES),
    ('packet_1518', 0.5, 0, 1518, ('agnostic', 'prediction')),
)


def _conf():
    """A configuration of the embedded defaults (no file is read)."""
    conf = cfg.ConfigOpts()
    prof_conf.register_opts(conf)
    nova_conf.register_opts(conf)
    conf([], project='resq', default_config_files=[])
    return conf


def _defaults():
    """``resq-evaluate``'s command-line defaults, by option name."""
    return {opt.dest: opt.default for opt in evaluate_cmd.cli_opts}


def rounded(tree):
    """``tree`` with every float rounded to :data:`DIGITS` decimals."""
    if isinstance(tree, dict):
        return {str(k): rounded(v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return [rounded(v) for v in tree]
    if isinstance(tree, float):
        return round(tree, DIGITS)
    return tree


def _pct_over(servers, base):
    """``servers`` against ``base`` in whole percent (``+100``: twice)."""
    return round(100.0 * (servers - base) / base)


def _setup_figures(setup):
    """One SLO setup: per set, each scheme's row, ratios and comparisons.

    ``vs_<greedy>_pct`` holds each scheme's extra servers over that
    greedy's on the set, in whole percent.
    """
    result = {}
    for set_name, rows in setup['sets'].items():
        entry = result[set_name] = {}
        for scheme, row in rows.items():
            entry[scheme] = run.without_timings(row)
        entry['ratios'] = setup['ratios'].get(set_name, {})
        for greedy in GREEDIES:
            if greedy in rows:
                entry['vs_%s_pct' % greedy] = {
                    scheme: _pct_over(row['servers'],
                                      rows[greedy]['servers'])
                    for scheme, row in rows.items()}
    return result


def _profile_summary(profiles):
    """The evaluation's ``profiles`` without the stored curves."""
    keep = ('runs', 'repeats', 'noise_pct', 'reported_error_pct',
            'budget_exhausted', 'throughput_error_pct', 'latency_error_pct')
    summary = {k: v for k, v in profiles.items() if k != 'per_nf'}
    summary['per_nf'] = {nf: {k: row[k] for k in keep}
                         for nf, row in profiles['per_nf'].items()}
    return summary


def evaluation_figures(progress=None):
    """``resq-evaluate`` on its defaults: what its text and JSON give.

    :returns: ``{"config", "binding", "paper", "profiles", "predictor",
        "slomo_predictor", "chains", "on_demand", "paper_reference",
        "grouping", "durner"}``;
        each setup is ``{set: {scheme: row, "ratios",
        "vs_resq_greedy_pct", "vs_resq_greedy_paper_pct"}}``.
    """
    conf, opts = _conf(), _defaults()
    doc = run.evaluate(
        conf, opts['sets'], opts['schemes'], terms=opts['terms'],
        seed=opts['seed'], cores=opts['cores'], ways=opts['ways'],
        packet_bytes=opts['packet_bytes'],
        time_limit=conf.resq_evaluation.time_limit,
        mip_gap=conf.resq_evaluation.mip_gap,
        config_limit=conf.resq_optimizer.max_configurations_per_term,
        progress=progress, noise_pct=opts['noise_pct'],
        slo_targets=opts['slo_targets'])
    result = {'config': {k: v for k, v in doc['config'].items()
                         if k != 'sub_seeds'}}
    for targets, setup in doc['setups'].items():
        result[targets] = _setup_figures(setup)
    result['profiles'] = _profile_summary(doc['profiles'])
    for key in ('predictor', 'slomo_predictor'):
        if key in doc:
            result[key] = dict(doc[key])
            result[key]['profiling_runs_per_nf'] = round(
                doc[key]['profiling_runs'] / len(doc[key]['per_nf']))
    for key in ('chains', 'on_demand', 'paper_reference'):
        result[key] = doc[key]
    result['grouping'] = {k: v for k, v in doc['grouping'].items()}
    result['durner'] = {k: v for k, v in doc['durner'].items()
                        if k != 'runs'}
    result['chains_compared'] = _chains_compared(doc['chains'])
    return result


def _chains_compared(chains):
    """What the chains' variants change, as :doc:`nfvnice` quotes it.

    Per chain, each variant's throughput over the default's
    (``throughput_gain_pct``); over both chains, by how much
    backpressure divides the wasted work (against the same shares
    without it) and the most throughput it costs.
    """
    pairs = (('default', 'backpressure'), ('rate_cost', 'nfvnice'))
    result = {}
    factors, losses = [], []
    for name, chain in chains.items():
        base = chain['default']['throughput_mpps']
        result[name] = {
            variant: {'throughput_gain_pct': round(
                100.0 * (row['throughput_mpps'] / base - 1), 1)}
            for variant, row in chain.items() if variant != 'config'}
        for without, with_bp in pairs:
            factors.append(chain[without]['wasted_work_pct']
                           / chain[with_bp]['wasted_work_pct'])
            losses.append(100.0 * (1 - chain[with_bp]['throughput_mpps']
                                   / chain[without]['throughput_mpps']))
    result['backpressure_wasted_work_factor_min'] = round(min(factors), 1)
    result['backpressure_wasted_work_factor_max'] = round(max(factors), 1)
    result['backpressure_throughput_loss_max_pct'] = round(max(losses), 2)
    return result


def _violated_by_nf(scheme, slo_terms, setup):
    """How many of ``slo_terms`` ``scheme`` violates, per NF."""
    placed = schemes_mod.SCHEMES[scheme](
        slo_terms, setup.cores, setup.ways, packet_bytes=setup.packet_bytes,
        time_limit=setup.time_limit, mip_gap=setup.mip_gap,
        config_limit=setup.config_limit, stats={})
    outcome = cluster.ground_truth(placed, setup.packet_bytes)
    counts = {}
    for term in slo_terms:
        if outcome[term.name].violated:
            nf = term.profile.name
            counts[nf] = counts.get(nf, 0) + 1
    return counts


def _variant(conf, opts, noise, seed, packet_bytes, schemes):
    """One robustness variant: every set, binding targets."""
    setup = run.Setup(opts['terms'], opts['cores'], opts['ways'],
                      packet_bytes, conf.resq_evaluation.time_limit,
                      conf.resq_evaluation.mip_gap,
                      conf.resq_optimizer.max_configurations_per_term,
                      noise, (slosets.BINDING,))
    profiles = run.profile_catalog(conf, packet_bytes, None, noise, seed)
    predictor = (dobrescu.Predictor(noise, packet_bytes, seed)
                 if 'prediction' in schemes else None)
    entry = {'noise_pct': noise, 'seed': seed, 'packet_bytes': packet_bytes}
    for set_name in opts['sets']:
        slo_terms = slosets.make(set_name, profiles, setup.terms, seed,
                                 slosets.BINDING)
        rows = entry[set_name] = {}
        for scheme in schemes:
            row = run.scheme_row(scheme, slo_terms, setup, predictor)
            rows[scheme] = {k: row[k] for k in (
                'servers', 'violation_pct', 'throughput_violation_pct',
                'latency_violation_pct')}
            rows[scheme]['violated_terms'] = round(
                row['violation_pct'] * len(slo_terms) / 100.0)
            if scheme == 'agnostic':
                rows[scheme]['violated_by_nf'] = _violated_by_nf(
                    scheme, slo_terms, setup)
    resq = [entry[s][r]['violation_pct'] for s in opts['sets']
            for r in RESQ_SCHEMES if r in entry[s]]
    if resq:
        entry['resq_violation_max_pct'] = max(resq)
    return entry


def robustness_figures(progress=None):
    """The evaluation at other noises, seeds and packet sizes.

    For each of :data:`ROBUSTNESS_VARIANTS`, the profiles measured at that
    noise and seed and every set placed with the binding targets by the
    variant's schemes; ``agnostic`` rows also count the violated terms per
    NF (``violated_by_nf``).

    :returns: ``{variant: {"noise_pct", "seed", "packet_bytes",
        "resq_violation_max_pct", set: {scheme: {"servers",
        "violation_pct", ...}}}}``.
    """
    conf, opts = _conf(), _defaults()
    result = {}
    for key, noise, seed, packet_bytes, schemes in ROBUSTNESS_VARIANTS:
        if progress:
            progress('robustness: %s' % key)
        result[key] = _variant(conf, opts, noise, seed, packet_bytes,
                               schemes)
    return result


def _profiler_level(rows):
    """``tox -e bench -- profiler``'s figures of one noise level."""
    runs = [r['measurements'] for r in rows]
    return {
        'runs_median': statistics.median(runs),
        'runs_min': min(runs), 'runs_max': max(runs),
        'error_max_pct': max(max(r['throughput_error_pct'],
                                 r['latency_error_pct']) for r in rows),
        'throughput_error_max_pct': max(r['throughput_error_pct']
                                        for r in rows),
        'latency_error_max_pct': max(r['latency_error_pct'] for r in rows),
        'latency_load_error_max_pct': max(r['latency_load_error_pct']
                                          for r in rows),
        'reported_error_max_pct': max(r['reported_error_pct']
                                      for r in rows),
        'per_nf': {r['nf']: {k: v for k, v in r.items()
                             if k not in ('nf', 'sensitivity')}
                   for r in rows},
    }


def profiler_figures(progress=None):
    """``tox -e bench -- profiler`` at seed 0: model and testbed truths.

    :returns: ``{"nfmodel": {noise: {...}}, "testbed": {noise: {...}}}``,
        noise keyed as the benchmark keys it (``"0"``, ``"0.5"``,
        ``"1"``).
    """
    result = {}
    for kind in ('nfmodel', 'testbed'):
        result[kind] = {}
        for noise in accuracy.NOISE_LEVELS:
            if progress:
                progress('profiler: %s at %g%% noise' % (kind, noise))
            result[kind]['%g' % noise] = _profiler_level(
                accuracy.run(noise, 0, kind))
    return result


# The sources of figures.json, in order: (top-level key, function
# returning its JSON-able tree, called with an optional ``progress``
# callable). Adding a source is one line; the docs then quote its
# figures by paths that start with its key, and the unit tests check it
# for drift (one test per source). doc/source/admin/profiler-budget.rst
# expects a ``profiler_budget`` source (resq_profiler/budget.py). The
# ``slomo`` source is one seed's class error (seed 0's models and mixes);
# doc/source/admin/slomo.rst quotes the mean and worst of ten seeds from
# the seeds benchmark's record (bench/seeds) instead.
def profiler_budget_figures(progress=None):
    """The adaptive profiler's runs against its error under noise."""
    return budget.tradeoff()


def slomo_figures(progress=None):
    """SLOMO's error inside classes of service against the testbed."""
    return slomo_accuracy.doc_figures(slomo_accuracy.class_error())


def prediction_figures(progress=None):
    """``tox -e bench -- prediction --with-colocations``'s errors.

    The held-out errors of SLOMO (also trained on the measured training
    half) and of the Dobrescu-style baseline, which a seeded run
    reproduces exactly; the query time, which it does not, is in the
    benchmark's record (``bench/prediction``).
    """
    if progress:
        progress('prediction: SLOMO against the baseline')
    return prediction.error_figures(prediction.run(with_colocations=True))


# The testbed's leaky-DMA case of doc/source/contributor/nf-model.rst
# (ResQ Table 2's setting): this many instances of one NF, each in a CAT
# partition of this many ways, with 1518-byte packets and unsized queues
# of this many buffers (two rings of 2,048).
LEAK_INSTANCES = 9
LEAK_WAYS = 2
LEAK_BUFFERS = 2 * 2048
LEAK_NFS = ('Stats', 'MazuNAT')


def _leak_case(spec, buffers):
    """The first instance's outcome and its solo throughput (testbed)."""
    big = nfmodel.Traffic(1518)
    insts = [nfmodel.Instance(
        spec, frozenset(range(LEAK_WAYS * i, LEAK_WAYS * (i + 1))), big,
        None, buffers) for i in range(LEAK_INSTANCES)]
    solo = truth.simulate_server([nfmodel.Instance(
        spec, insts[0].partition, big)])[0].throughput_mpps
    return truth.simulate_server(insts)[0], solo


# The model's leaky-DMA case (tests/unit/resq_profiler/test_nfmodel.py):
# the NF in one way, next to this many instances of the other NF of
# LEAK_NFS in the other ways, each offered this rate, all with 1518-byte
# packets and queues of 2,048 buffers.
MODEL_LEAK_COMPETITORS = 11
MODEL_LEAK_OFFERED_MPPS = 0.35


def _model_leak(spec, competitor):
    """The NF's loss (%) and the memory-bus load (%) in the model."""
    big = nfmodel.Traffic(1518)
    one, rest = frozenset({0}), frozenset(range(1, nfmodel.Platform(
    ).llc_ways))
    insts = [nfmodel.Instance(spec, one, big, None, 2048)]
    insts += [nfmodel.Instance(competitor, rest, big,
                               MODEL_LEAK_OFFERED_MPPS, 2048)
              for _ in range(MODEL_LEAK_COMPETITORS)]
    out = nfmodel.simulate_server(insts)[0]
    solo = nfmodel.simulate_server([nfmodel.Instance(
        spec, one, big)])[0].throughput_mpps
    return (100.0 * (1 - out.throughput_mpps / solo),
            100.0 * out.mem_bw_utilisation)


def calibration_figures(progress=None):
    """What the NF model's calibration gives (the contributor's page).

    ``two_way_pct``: per sensitivity class, the least and most throughput
    an NF keeps in two ways against the whole LLC (the model's curves).
    ``testbed_leak``: per NF of :data:`LEAK_NFS`, the throughput lost
    (``loss_pct``) and the memory-bus load (``mem_load_pct``) on the
    testbed with unsized queues, and the loss with buffers sized to DDIO
    (``sized_loss_pct``). ``model_leak``: per NF of :data:`LEAK_NFS`, its
    loss and the memory-bus load in the analytic model, next to the
    other NF's instances.
    """
    if progress:
        progress('calibration: two ways and the leaky DMA case')
    classes = {}
    for name in catalog.names():
        spec = catalog.get(name)
        model = nfmodel.NFModel(spec)
        kept = 100.0 * model.throughput_mpps(2) / model.throughput_mpps(
            nfmodel.Platform().llc_ways)
        classes.setdefault(spec.sensitivity, []).append(kept)
    result = {'two_way_pct': {c: {'min': min(v), 'max': max(v)}
                              for c, v in classes.items()},
              'testbed_leak': {}, 'model_leak': {}}
    for name, other in zip(LEAK_NFS, reversed(LEAK_NFS)):
        loss, load = _model_leak(catalog.get(name), catalog.get(other))
        result['model_leak'][name] = {'loss_pct': loss,
                                      'mem_load_pct': load}
    for name in LEAK_NFS:
        spec = catalog.get(name)
        leaky, solo = _leak_case(spec, LEAK_BUFFERS)
        sized, _ = _leak_case(spec, None)
        result['testbed_leak'][name] = {
            'loss_pct': 100.0 * (1 - leaky.throughput_mpps / solo),
            'mem_load_pct': 100.0 * leaky.mem_bw_utilisation,
            'sized_loss_pct': 100.0 * (1 - sized.throughput_mpps / solo)}
    return result


def nfvnice_figures(progress=None):
    """NFVnice's chains at the agent's periods; the paper's 3-NF chain.

    See :func:`resq_nova.evaluation.chains.doc_figures`.
    """
    if progress:
        progress('NFVnice chains at the agent\'s periods')
    return chains_mod.doc_figures()


SOURCES = [
    ('evaluation', evaluation_figures),
    ('robustness', robustness_figures),
    ('profiler', profiler_figures),
    ('profiler_budget', profiler_budget_figures),
    ('slomo', slomo_figures),
    ('prediction', prediction_figures),
    ('calibration', calibration_figures),
    ('nfvnice', nfvnice_figures),
]


def generate(keys=None, progress=None):
    """The tree of every source (or of ``keys``), rounded.

    :raises KeyError: for a key no source has.
    """
    known = dict(SOURCES)
    for key in keys or ():
        if key not in known:
            raise KeyError('no figures source %r; the sources are %s'
                           % (key, ', '.join(known)))
    return {key: rounded(fn(progress)) for key, fn in SOURCES
            if keys is None or key in keys}


def lookup(tree, path):
    """The value at ``path`` ('/'-separated keys) of ``tree``.

    :raises KeyError: naming the first key that is missing and the keys
        that exist there.
    """
    node = tree
    done = []
    for key in path.split('/'):
        if not isinstance(node, dict) or key not in node:
            have = ', '.join(sorted(node)) if isinstance(node, dict) else (
                'a value, not a mapping')
            raise KeyError('%s: no %r under %r (there: %s)' % (
                path, key, '/'.join(done) or 'the top level', have))
        node = node[key]
        done.append(key)
    return node


def differences(old, new, prefix=''):
    """The paths whose values differ between two trees, sorted.

    A path present in one tree only is a difference too.
    """
    if isinstance(old, dict) and isinstance(new, dict):
        paths = []
        for key in sorted(set(old) | set(new)):
            sub = '%s/%s' % (prefix, key) if prefix else key
            if key not in old or key not in new:
                paths.append(sub)
            else:
                paths += differences(old[key], new[key], sub)
        return paths
    return [] if old == new else [prefix or '/']


def dumps(tree):
    return json.dumps(tree, indent=1, sort_keys=True) + '\n'


def _progress(message):
    print('... %s' % message, file=sys.stderr, flush=True)


def _again_with_portable_kernels():
    """Run this command again with :data:`PORTABLE_KERNELS` set.

    (NumPy and OpenBLAS read them once, when they are loaded.)
    """
    env = dict(os.environ, **PORTABLE_KERNELS)
    args = [sys.executable, '-m', 'resq_nova.evaluation.docfigures']
    args += sys.argv[1:]
    os.execve(sys.executable, args, env)


def main(argv=None):
    if argv is None and portable_kernels_missing():
        _again_with_portable_kernels()
    parser = argparse.ArgumentParser(
        prog='python -m resq_nova.evaluation.docfigures',
        description='Generate the figures the documentation quotes.')
    parser.add_argument('--output', default=DEFAULT_OUTPUT,
                        help='the JSON file (default: %(default)s)')
    parser.add_argument('--check', action='store_true',
                        help='regenerate and compare with --output instead '
                             'of writing it; exit 1 naming each path that '
                             'differs')
    parser.add_argument('--only', action='append', metavar='SOURCE',
                        help='only this source (repeatable): %s' % ', '.join(
                            k for k, _ in SOURCES))
    args = parser.parse_args(argv)
    try:
        tree = generate(args.only, _progress)
    except (KeyError, RuntimeError) as exc:
        parser.error(str(exc))
    if args.check:
        return check(args.output, tree)
    if args.only and os.path.exists(args.output):
        with open(args.output) as f:
            merged = json.load(f)
        merged.update(tree)
        tree = merged
    with open(args.output, 'w') as f:
        f.write(dumps(tree))
    print('figures written to %s' % args.output)
    return 0


def check(path, tree):
    """Compare ``tree`` with the file at ``path``; 0 when they agree."""
    try:
        with open(path) as f:
            committed = json.load(f)
    except (OSError, ValueError) as exc:
        print('cannot read %s (%s); write it with python -m '
              'resq_nova.evaluation.docfigures' % (path, exc),
              file=sys.stderr)
        return 1
    committed = {k: v for k, v in committed.items() if k in tree}
    diff = differences(committed, tree)
    for p in diff:
        print('%s differs: %s has %s, a run gives %s' % (
            p, path, _at(committed, p), _at(tree, p)), file=sys.stderr)
    if diff:
        print('%d figure(s) drifted; regenerate with python -m '
              'resq_nova.evaluation.docfigures and review the docs'
              % len(diff), file=sys.stderr)
        return 1
    print('%s matches a run' % path)
    return 0


def _at(tree, path):
    try:
        return json.dumps(lookup(tree, path))
    except KeyError:
        return 'nothing'


if __name__ == '__main__':
    sys.exit(main())
