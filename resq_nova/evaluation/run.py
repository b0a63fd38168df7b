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

import dataclasses
import time

from resq_nova.evaluation import chains as chains_mod
from resq_nova.evaluation import cluster
from resq_nova.evaluation import dobrescu
from resq_nova.evaluation import durner
from resq_nova.evaluation import grouping as grouping_mod
from resq_nova.evaluation import measured
from resq_nova.evaluation import ondemand
from resq_nova.evaluation import papers
from resq_nova.evaluation import reference
from resq_nova.evaluation import schemes as schemes_mod
from resq_nova.evaluation import seeds as seeds_mod
from resq_nova.evaluation import slomo
from resq_nova.evaluation import slosets
from resq_profiler import catalog
from resq_profiler import nfmodel
from resq_profiler import profiler

# A period an agent holds with nfvnice_bridge (benchmarks/nfvnice_fastpath).
AGENT_PERIOD_US = 100000


# Measurement noise of the profiling runs on the simulated testbed.
DEFAULT_NOISE_PCT = 0.5


def profile_catalog(conf, packet_bytes=64, progress=None, noise_pct=None,
                    seed=None, names=None):
    """Profile every catalog NF on the simulated testbed.

    What the schedulers see: the model driver measuring
    :mod:`resq_profiler.truth`.

    :param noise_pct: measurement noise in percent; ``None`` keeps
        ``[resq_profiler] model_noise_pct``.
    :param seed: seed of that noise; ``None`` keeps ``[resq_profiler]
        model_seed``. The driver mixes it with the NF's name, so an NF's
        profile does not depend on which others are profiled.
    :param names: the NFs to profile (default: the whole catalog).
    :returns: ``{nf name: Profile}``.
    """
    group = 'resq_profiler'
    conf.set_override('model_truth', 'testbed', group)
    if noise_pct is not None:
        conf.set_override('model_noise_pct', noise_pct, group)
    if seed is not None:
        conf.set_override('model_seed', seed, group)
    try:
        profiles = {}
        names = sorted(names) if names is not None else catalog.names()
        for i, name in enumerate(names, 1):
            profiles[name] = profiler.run(conf, name,
                                          nfmodel.Traffic(packet_bytes),
                                          driver_name='model')
            if progress:
                progress('profiled %s (%d/%d)' % (name, i, len(names)))
    finally:
        conf.clear_override('model_truth', group)
        if noise_pct is not None:
            conf.clear_override('model_noise_pct', group)
        if seed is not None:
            conf.clear_override('model_seed', group)
    return profiles


def prediction_error(placed, outcomes):
    """How far a prediction-based schedule's predictions were from truth.

    Per instance, the predicted throughput where it stands against the
    capacity the testbed gives it there, in percent of the latter
    (positive: the predictor was pessimistic).

    :returns: ``(mean, worst absolute)`` in percent, or ``None`` when the
        scheme predicts nothing.
    """
    errs = [100.0 * (o.capacity_mpps - p.predicted_mpps) / o.capacity_mpps
            for p, o in zip(placed, outcomes)
            if p.predicted_mpps is not None]
    if not errs:
        return None
    return (round(sum(errs) / len(errs), 2),
            round(max(abs(e) for e in errs), 2))


@dataclasses.dataclass(frozen=True)
class Setup:
    """What every seed of a run shares: servers, traffic, solver limits."""

    terms: int = 200
    cores: int = 9
    ways: int = 18
    packet_bytes: int = 64
    time_limit: float = 60.0
    mip_gap: float = 0.0
    config_limit: int = 2000
    noise_pct: float = DEFAULT_NOISE_PCT
    slo_targets: tuple = (slosets.BINDING,)


# ``--slo-targets both``: the default setup, then the paper's.
BOTH = 'both'


def targets_of(slo_targets):
    """The setups ``slo_targets`` names, in order.

    A tuple of :data:`resq_nova.evaluation.slosets.TARGETS` keys; the
    first fills the document's top level.

    :param slo_targets: ``None`` (binding), ``'binding'``, ``'paper'``,
        ``'both'`` (binding, then paper) or a sequence of them.
    :raises ValueError: for anything else.
    """
    if slo_targets is None:
        return (slosets.BINDING,)
    if slo_targets == BOTH:
        return (slosets.BINDING, slosets.PAPER)
    if isinstance(slo_targets, str):
        slo_targets = (slo_targets,)
    result = tuple(slo_targets)
    for name in result:
        if name not in slosets.TARGETS:
            raise ValueError('unknown SLO targets %r; choose from %s' % (
                name, ', '.join(sorted(slosets.TARGETS) + [BOTH])))
    if not result or len(set(result)) != len(result):
        raise ValueError('SLO targets: name each setup once, got %r'
                         % (slo_targets,))
    return result


def _check(sets, schemes, setup, slo_file):
    """Refuse what cannot be evaluated, before anything runs."""
    if setup.cores <= 0 or setup.ways <= 0:
        raise ValueError('servers need at least one core and one way (got '
                         '%d cores, %d ways)' % (setup.cores, setup.ways))
    if setup.ways > cluster.USABLE_WAYS:
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
    if setup.time_limit is None or setup.time_limit <= 0:
        raise ValueError('the solver time limit must be positive, got %r'
                         % setup.time_limit)
    if setup.noise_pct is not None and not 0 <= setup.noise_pct <= 20:
        raise ValueError('measurement noise must be between 0 and 20%%, '
                         'got %s' % setup.noise_pct)


def evaluate(conf, sets, schemes, terms=200, seed=0, cores=9, ways=18,
             packet_bytes=64, time_limit=60.0, mip_gap=0.0, config_limit=2000,
             slo_file=None, progress=None, noise_pct=DEFAULT_NOISE_PCT,
             seeds=None, slo_targets=None):
    """Place every SLO set with every scheme and measure the result.

    :param seed: seeds every random draw (:mod:`resq_nova.evaluation.seeds`),
        the profiler's noise included.
    :param seeds: evaluate each of these seeds instead (a list, or
        ``--seeds``' text, e.g. ``"0-9"``); the document is the first
        seed's, with ``seed_spread``
        (:func:`resq_nova.evaluation.seeds.spread`).
    :param slo_targets: the SLO sets' latency targets (:func:`targets_of`):
        ``'binding'`` (the default), ``'paper'`` or ``'both'``; each setup
        places the same NFs with the same profiles and predictors.
    :returns: the JSON-ready document ``{"sets": {set: {scheme: {...}}},
        "ratios": ..., "setups": {targets: {"sets", "ratios",
        "description"}}, "paper_reference": ..., "config": ...,
        "profiles": ..., "chains": ...}``; ``sets`` and ``ratios`` are the
        first setup's, ``chains`` from
        :func:`resq_nova.evaluation.chains.evaluate`.
    """
    setup = Setup(terms, cores, ways, packet_bytes, time_limit, mip_gap,
                  config_limit, noise_pct, targets_of(slo_targets))
    _check(sets, schemes, setup, slo_file)
    if seeds is not None and not isinstance(seeds, (list, tuple)):
        seeds = seeds_mod.parse(seeds)
    if not seeds:
        return evaluate_seed(conf, sets, schemes, seed, setup, slo_file,
                             progress)
    docs = []
    for i, one in enumerate(seeds, 1):
        if progress:
            progress('seed %d (%d/%d)' % (one, i, len(seeds)))
        docs.append(evaluate_seed(conf, sets, schemes, one, setup, slo_file,
                                  progress))
    doc = docs[0]
    doc['config']['seeds'] = list(seeds)
    doc['seed_spread'] = seeds_mod.spread(docs, seeds)
    return doc


def evaluate_seed(conf, sets, schemes, seed, setup, slo_file=None,
                  progress=None):
    """:func:`evaluate` for one seed and a checked :class:`Setup`."""
    sub = seeds_mod.sub_seeds(seed)
    noise = (conf.resq_profiler.model_noise_pct if setup.noise_pct is None
             else setup.noise_pct)
    profiles = profile_catalog(conf, setup.packet_bytes, progress,
                               setup.noise_pct, sub['profiler_noise'],
                               _needed(sets, slo_file))
    predictor = dobrescu.Predictor(noise, setup.packet_bytes,
                                   sub['prediction_noise'])
    slomo_predictor = slomo.Predictor(noise, setup.packet_bytes, sub['slomo'])
    custom = slosets.load(slo_file, profiles) if slo_file else None
    doc = {'config': {
        'terms': setup.terms, 'seed': seed, 'sub_seeds': sub,
        'cores': setup.cores, 'ways': setup.ways,
        'packet_bytes': setup.packet_bytes, 'time_limit_s': setup.time_limit,
        'violation_tolerance_pct': cluster.VIOLATION_TOLERANCE * 100,
        'noise_pct': noise, 'slo_targets': list(setup.slo_targets)}}
    doc['profiles'] = measured.figures(
        profiles, setup.packet_bytes,
        conf.resq_profiler.latency_load_levels)
    doc['setups'] = {}
    for i, targets in enumerate(setup.slo_targets):
        # A file's terms carry their own targets: placed once, first.
        doc['setups'][targets] = place_sets(
            sets, schemes, profiles, setup, sub['slo_sets'], targets,
            (predictor, slomo_predictor), custom if i == 0 else None,
            progress if len(setup.slo_targets) == 1 else _prefixed(
                progress, targets))
    first = doc['setups'][setup.slo_targets[0]]
    doc['sets'], doc['ratios'] = first['sets'], first['ratios']
    doc['paper_reference'] = reference.document()
    if 'prediction' in schemes:
        doc['predictor'] = dobrescu.figure10(predictor)
        doc['predictor']['profiling_runs'] = predictor.measurements
    if 'slomo' in schemes:
        # SLOMO judged as the baseline is (ResQ Figure 10's co-locations).
        doc['slomo_predictor'] = dobrescu.figure10(slomo_predictor)
        doc['slomo_predictor']['profiling_runs'] = (
            slomo_predictor.measurements)
    # NFVnice's mechanisms on service chains sharing a core.
    doc['chains'] = chains_mod.evaluate()
    # The same chains with the agent's loop at an agent's period, not
    # NFVnice's per-batch reaction (admin/nfvnice.rst).
    doc['chains_at_period'] = chains_mod.evaluate_at_period(
        AGENT_PERIOD_US, chains_mod.SCENARIOS + (chains_mod.PAPER_3NF,))
    doc['on_demand'] = ondemand.evaluate(seed=sub['on_demand'],
                                         progress=progress)
    # NetContainer's grouping on scenarios that merge NFs into classes.
    base = sub['grouping']
    doc['grouping'] = grouping_mod.evaluate(
        seeds=(base * 3, base * 3 + 1, base * 3 + 2), progress=progress)
    # Durner et al.'s scheduler on the paper's own objective and setup.
    doc['durner'] = durner.evaluate(progress=progress,
                                    base=sub['durner'])
    return doc


def _prefixed(progress, targets):
    if progress is None:
        return None
    return lambda message: progress('%s: %s' % (
        slosets.TARGET_LABELS[targets], message))


def place_sets(sets, schemes, profiles, setup, seed, targets, predictors,
               custom=None, progress=None):
    """Every set placed by every scheme, with ``targets``' latency targets.

    :param predictors: ``(prediction baseline, SLOMO)``, shared by the
        setups (each caches what it measured).
    :param custom: the terms of ``--slo-file``, set ``custom``.
    :returns: ``{"sets": {set: {scheme: row}}, "ratios": {set: ...},
        "description": what the targets are}``.
    """
    result = {'description': slosets.TARGETS[targets], 'sets': {},
              'ratios': {}}
    if custom and slosets.CUSTOM not in sets:
        sets = list(sets) + [slosets.CUSTOM]
    for set_name in sets:
        if set_name == slosets.CUSTOM:
            if not custom:
                continue
            slo_terms = custom
        else:
            slo_terms = slosets.make(set_name, profiles, setup.terms, seed,
                                     targets)
        rows = result['sets'][set_name] = {}
        for scheme in schemes:
            rows[scheme] = scheme_row(scheme, slo_terms, setup,
                                      *predictors)
            if progress:
                progress('%s / %s: %d servers, %.1f%% of terms violated'
                         % (set_name, scheme, rows[scheme]['servers'],
                            rows[scheme]['violation_pct']))
        ratio = reference.ratios(rows)
        if ratio:
            result['ratios'][set_name] = ratio
    return result


def _needed(sets, slo_file):
    """The NFs the SLO sets name (a file may name any: all of them)."""
    if slo_file or any(slosets.SETS.get(s) is None for s in sets):
        return None
    return {n for s in sets for n in catalog.names(slosets.SETS[s])}


def scheme_row(scheme, slo_terms, setup, predictor=None,
               slomo_predictor=None):
    """Place ``slo_terms`` with ``scheme``; what the testbed says of it."""
    started = time.monotonic()
    stats = {}
    placed = schemes_mod.SCHEMES[scheme](
        slo_terms, setup.cores, setup.ways, packet_bytes=setup.packet_bytes,
        time_limit=setup.time_limit, mip_gap=setup.mip_gap,
        config_limit=setup.config_limit, stats=stats, predictor=predictor,
        slomo_predictor=slomo_predictor)
    outs = cluster.instance_outcomes(placed, setup.packet_bytes)
    outcome = cluster.ground_truth(placed, setup.packet_bytes, outs)
    row = {
        'servers': cluster.servers_used(placed),
        'instances': len(placed),
        'violation_pct': _pct(o.violated for o in outcome.values()),
        'throughput_violation_pct': _pct(
            o.throughput_violated for o in outcome.values()),
        'latency_violation_pct': _pct(
            o.latency_violated for o in outcome.values()),
        # None when no latency target binds (the paper's targets).
        'latency_binding_violation_pct': _pct(
            [outcome[t.name].violated for t in slo_terms
             if slosets.binding(t)], empty=None),
        'seconds': round(time.monotonic() - started, 3),
    }
    error = prediction_error(placed, outs)
    if error is not None:
        row['prediction_error_pct'] = error[0]
        row['prediction_error_max_pct'] = error[1]
    if scheme == 'resq_optimal':
        row['gap_pct'] = round(stats['gap_pct'], 3)
        row['lower_bound'] = stats['lower_bound']
        row['solver_status'] = stats['status']
    return row


# Keys of the document that time the run: they differ between two runs
# of the same seed, everything else is equal (:func:`without_timings`).
TIMING_KEYS = ('seconds',)


def without_timings(doc):
    """``doc`` without :data:`TIMING_KEYS`, at any depth (a copy)."""
    if isinstance(doc, dict):
        return {k: without_timings(v) for k, v in doc.items()
                if k not in TIMING_KEYS}
    if isinstance(doc, list):
        return [without_timings(v) for v in doc]
    return doc


def _pct(flags, empty=0.0):
    flags = list(flags)
    return round(100.0 * sum(flags) / len(flags), 2) if flags else empty


def table(doc):
    """The results as plain text.

    The first setup's table, each other setup's, the setups side by side
    with the paper's figures (:func:`resq_nova.evaluation.reference.
    side_by_side`), then the rest of the document.
    """
    setups = list(doc.get('setups', {}).items())
    lines = []
    if len(setups) > 1:
        lines.append('with %s:' % slosets.TARGETS[setups[0][0]])
    lines += _set_lines(doc)
    for targets, setup in setups[1:]:
        lines += ['', 'with %s:' % slosets.TARGETS[targets]]
        lines += _set_lines(setup)
    if setups:
        lines += ['', reference.side_by_side(doc), '']
    lines += _extra_lines(doc)
    return '\n'.join(lines)


def _set_lines(doc):
    """A line per set and scheme of ``doc['sets']``, then the ratios."""
    lines = ['%-12s %-17s %8s %10s %9s %9s %9s' % (
        'set', 'scheme', 'servers', 'violated%', 'thr viol%', 'lat viol%',
        'pred err%')]
    for set_name, rows in doc['sets'].items():
        for scheme, row in rows.items():
            extra = ''
            if 'gap_pct' in row:
                extra = '  (gap %.2f%%, bound %d)' % (
                    row['gap_pct'], row['lower_bound'])
            pred = ('%9.1f' % row['prediction_error_pct']
                    if 'prediction_error_pct' in row else '%9s' % '-')
            lines.append('%-12s %-17s %8d %10.1f %9.1f %9.1f %s%s' % (
                set_name, scheme, row['servers'], row['violation_pct'],
                row['throughput_violation_pct'],
                row['latency_violation_pct'], pred, extra))
    lines.extend(_ratio_lines(doc))
    return lines


def _extra_lines(doc):
    """Profiles, predictors, chains and the seeds' spread, as text."""
    lines = []
    if doc.get('profiles'):
        p = doc['profiles']
        lines.append('profiles the schedulers saw: %g runs per profile '
                     '(median), %d at most; worst error against the '
                     'testbed %.2f%% (throughput), %.2f%% (latency)' % (
                         p['runs_median'], p['runs_max'],
                         p['throughput_error_max_pct'],
                         p['latency_error_max_pct']))
    if 'predictor' in doc:
        p = doc['predictor']
        lines.append('prediction baseline against the testbed (cf. ResQ '
                     'Figure 10): predicted minus observed drop %+.1f '
                     'points on average, %.1f at worst (%.0f%% of the '
                     'observed drop)' % (p['mean_pp'], p['max_abs_pp'],
                                         p['mean_relative_pct']))
    if 'slomo_predictor' in doc:
        p = doc['slomo_predictor']
        lines.append('SLOMO predictor against the testbed (same runs): '
                     'predicted minus observed drop %+.1f points on '
                     'average, %.1f at worst (%.0f%% of the observed drop)'
                     % (p['mean_pp'], p['max_abs_pp'],
                        p['mean_relative_pct']))
    if 'predictor' in doc or 'slomo_predictor' in doc:
        lines.append('ResQ paper on its testbed (%s): the baseline %s'
                     % (reference.FIGURE10[1], reference.FIGURE10[0]))
    if doc.get('chains'):
        lines.append(chains_mod.table(doc['chains']))
    if doc.get('grouping'):
        lines.append('NetContainer grouping (on-demand NFs merged into '
                     'fewer classes; ours is "netcontainer"):')
        lines.extend('  ' + line for line in grouping_mod.table(
            doc['grouping']))
    if doc.get('durner'):
        lines.extend(durner.table(doc['durner']))
    if any(doc.get(k) for k in ('grouping', 'durner', 'chains')):
        lines.extend(papers.table(doc))
    if doc.get('seed_spread'):
        lines.append(seeds_mod.table(doc['seed_spread']))
    return lines


def _ratio_lines(doc):
    """Each greedy's servers over the optimum's, a line per set."""
    lines = []
    for set_name, r in doc['ratios'].items():
        rows = doc['sets'][set_name]
        parts = ['%s %d (%.2fx)' % (schemes_mod.LABELS[scheme],
                                    rows[scheme]['servers'], r[key])
                 for scheme, key in reference.GREEDY_RATIOS if key in r]
        lines.append('%s: optimal schedule %d servers (MILP gap %.2f%%); '
                     '%s' % (set_name, rows['resq_optimal']['servers'],
                             r['gap_pct'], ', '.join(parts)))
    return lines
