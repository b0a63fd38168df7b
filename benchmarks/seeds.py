"""Each comparison paper's headline beside this project's figure (issue 31).

SLOMO inside classes of service (its error against the testbed at 2 to
20 shared ways, and on I/O-heavy mixes, over :data:`SLOMO_SEEDS` seeds:
each seed trains every catalog NF afresh, its training draws, noise and
test mixes its own; issue 45), NFVnice's chains
(throughput with rate-cost shares and backpressure at the agent's
period, against rate-cost shares alone and against the default
scheduler), NetContainer's grouping (violations of the min-cost flow on
miss-ratio curves against the same flow on readings only, heaviest
together, round-robin, a random deal and the anchor-only flow, per
scenario over :data:`GROUPING_SEEDS` seeds, each seed its own NFs, loads
and readings) and Durner et al.'s scheduler on its own
objective (the drop of the highest CPU utilisation over 200 runs).

Every figure of a random draw is a mean and the worst seed, per truth
(``testbed``; a trace-driven truth would be a second key beside it).

Targets (issue 31): SLOMO's mean absolute error <= 5% at every class size
(issue 45: on every seed, so judged on the worst seed);
fewer violations than round-robin on every grouping scenario, and
(issue 45) than the same optimiser without curves and heaviest together,
or the docs say it does not; NFVnice's
gain measured at the period the agent sustains and no loss on other
chains. For NFVnice the benchmark first measures the agent's pass on a
real ovs-vswitchd (:mod:`benchmarks.nfvnice_fastpath`: the period it holds,
and what a backpressured chain costs another chain on the same entry
port), then simulates every chain scenario with the agent's loop at that
period (:func:`resq_nova.evaluation.chains.evaluate_at_period`) and the
paper's 3-NF chain (:func:`resq_nova.evaluation.chains.paper_3nf_table`).
"""

import json
import time

from resq_nova.evaluation import chains
from resq_nova.evaluation import durner
from resq_nova.evaluation import grouping
from resq_nova.evaluation import papers
from resq_profiler.slomo import accuracy

# Seeds SLOMO's class error is measured over (issue 45: at least 10), and
# the truths it is judged against (the trace-driven one to come).
SLOMO_SEEDS = accuracy.SEEDS
SLOMO_TRUTHS = ('testbed',)
# Every class size from 2 to 20 ways (issue 45's target is at each of
# them; the models are trained once per seed, so the sizes cost little).
SLOMO_WAYS = tuple(range(2, 21))


def _slomo(seeds=SLOMO_SEEDS, draws=None):
    """SLOMO's class error over ``seeds`` seeds, per truth, and its time.

    :param draws: training draws per model (default: the training's).
    """
    start = time.monotonic()
    kw = {} if draws is None else {'draws': draws}
    out = {'testbed': accuracy.over_seeds(
        seeds, ways=SLOMO_WAYS,
        progress=lambda msg: print('    ' + msg, flush=True), **kw)}
    return out, time.monotonic() - start


def _slomo_table(by_truth):
    """The readable table: per truth and class size, mean and worst."""
    lines = []
    for truth_name, doc in by_truth.items():
        lines.append('SLOMO against the %s: %d seeds, %d training draws of '
                     '%d contention runs per NF, %d test mixes per seed'
                     % (truth_name, doc['seeds'], doc['draws'], doc['runs'],
                        doc['mixes']))
        lines.append('  %-10s %-9s %-20s %s' % (
            'ways', 'mean', 'worst seed', 'worst instance (any seed)'))
        for ways, spread in doc['ways'].items():
            lines.append('  %-10s %-9s %-20s %s' % (
                ways, '%.2f%%' % spread['mean'], '%.2f%% (seed %d)' % (
                    spread['worst_seed'], spread['worst_seed_id']),
                '%.1f%%' % doc['max_abs_pct'][ways]))
        if 'io' in doc:
            spread = doc['io']
            lines.append('  %-10s %-9s %-20s' % (
                'I/O-heavy', '%.2f%%' % spread['mean'], '%.2f%% (seed %d)'
                % (spread['worst_seed'], spread['worst_seed_id'])))
    return lines


SPREAD = ('mean', 'worst_seed', 'worst_seed_id')


def _one_draw_figures(by_truth):
    """The same over models of one training draw (as before draws)."""
    return {t: {'draws': d['draws'],
                'class_error_pct': {w: {k: s[k] for k in SPREAD}
                                    for w, s in d['ways'].items()},
                'io_error_pct': {k: d['io'][k] for k in SPREAD},
                'class_error_worst': _worst_over_sizes(d['ways'])}
            for t, d in by_truth.items()}


# SLOMO's target (issue 31, issue 45): mean absolute error at most this
# at every class size, on every seed.
SLOMO_TARGET_PCT = 5.0


def _worst_over_sizes(ways):
    """The worst seed at the worst class size, and the largest mean.

    :param ways: ``{"<N>": spread}`` of :func:`accuracy.over_seeds`.
    :returns: ``{"worst_seed", "ways", "seed", "mean_max", "mean_max_ways",
        "sizes", "sizes_over_target", "target_pct", "met"}``.
    """
    worst = max(ways, key=lambda w: (ways[w]['worst_seed'], -int(w)))
    mean = max(ways, key=lambda w: (ways[w]['mean'], -int(w)))
    over = [w for w, s in ways.items()
            if s['worst_seed'] > SLOMO_TARGET_PCT]
    return {'worst_seed': ways[worst]['worst_seed'], 'ways': int(worst),
            'seed': ways[worst]['worst_seed_id'],
            'mean_max': ways[mean]['mean'], 'mean_max_ways': int(mean),
            'sizes': len(ways), 'sizes_over_target': len(over),
            'target_pct': SLOMO_TARGET_PCT, 'met': not over}


def _slomo_figures(by_truth):
    """The JSON line's SLOMO keys, per truth."""
    spread = SPREAD
    testbed = by_truth['testbed']
    return {
        'seeds': testbed['seeds'],
        'slomo_class_error_pct': {
            t: {w: {k: s[k] for k in spread} for w, s in d['ways'].items()}
            for t, d in by_truth.items()},
        'slomo_io_error_seeds_pct': {
            t: {k: d['io'][k] for k in spread}
            for t, d in by_truth.items() if 'io' in d},
        # Over every class size: the worst seed's error at the size where
        # it is largest, and the largest mean; the target (<= 5% at every
        # size on every seed) is judged on the first.
        'slomo_class_error_worst': {
            t: _worst_over_sizes(d['ways']) for t, d in by_truth.items()},
        'slomo_training': {t: {'draws': d['draws'], 'runs': d['runs'],
                               'mixes': d['mixes'],
                               'noise_pct': d['noise_pct']}
                           for t, d in by_truth.items()},
        # The testbed's, as before seeds: the worst instance of any seed
        # and the I/O-heavy mixes' mean over seeds.
        'slomo_class_max_error_pct': dict(testbed['max_abs_pct']),
        # Mean signed errors over the seeds ({"mean", "min", "max"}), in
        # the class and by the same models asked about the whole LLC.
        'slomo_class_bias_pct': {t: d['bias_pct']
                                 for t, d in by_truth.items()
                                 if 'bias_pct' in d},
        'slomo_whole_llc_bias_pct': {t: d['whole_llc_bias_pct']
                                     for t, d in by_truth.items()
                                     if 'whole_llc_bias_pct' in d},
        'slomo_io_error_pct': testbed['io']['mean'],
    }


# Seeds and truths of the grouping comparison (issue 45: at least 10
# seeds; the trace-driven truth to come).
GROUPING_SEEDS = grouping.SEEDS
GROUPING_TRUTHS = ('testbed',)


def _grouping(seeds=GROUPING_SEEDS):
    """NetContainer and its baselines over ``seeds`` seeds, per truth."""
    return {'testbed': grouping.over_seeds(
        seeds, progress=lambda msg: print('    ' + msg, flush=True))}


def _grouping_figures(by_truth):
    """The JSON line's grouping keys, per truth then scenario.

    ``netcontainer_violation_pct`` and ``roundrobin_violation_pct``:
    ``{truth: {scenario: {"mean", "worst_seed", "worst_seed_id"}}}``;
    ``grouping_violation_pct`` and ``grouping_capacity_loss_pct`` the
    same for every policy (``{truth: {scenario: {policy: spread}}}``);
    ``netcontainer_vs`` (violations) and ``netcontainer_vs_capacity_loss``
    the seeds NetContainer wins, ties and loses against each baseline,
    and the mean difference in points.
    """
    def per_policy(key, policy=None):
        return {t: {name: (s[key][policy] if policy else s[key])
                    for name, s in d['scenarios'].items()}
                for t, d in by_truth.items()}

    return {
        'grouping_seeds': {t: d['seeds'] for t, d in by_truth.items()},
        'netcontainer_violation_pct': per_policy('violation_pct',
                                                 'netcontainer'),
        'roundrobin_violation_pct': per_policy('violation_pct',
                                               'roundrobin'),
        'grouping_violation_pct': per_policy('violation_pct'),
        'grouping_capacity_loss_pct': per_policy('capacity_loss_pct'),
        'netcontainer_vs': per_policy('netcontainer_vs'),
        'netcontainer_vs_capacity_loss': per_policy(
            'netcontainer_vs_capacity_loss'),
        'grouping_scenarios': {
            name: {'nfs': s['nfs'], 'classes': s['classes']}
            for name, s in next(iter(by_truth.values()))[
                'scenarios'].items()},
    }


def _nfvnice():
    """The agent's period on a real switch, and the gains at it.

    The gains are per chain and comparison (:data:`chains.GAIN_KEYS`,
    each naming its baseline): both mechanisms against rate-cost shares
    alone and against the default scheduler. The chains are fluid and
    deterministic (no draw), so one run is the figure.
    """
    from benchmarks import nfvnice_fastpath

    fast = nfvnice_fastpath.measure()
    period_us = fast['period_ms'] * 1000
    at = chains.evaluate_at_period(period_us)
    gains = {name: dict(doc['backpressure_gain_pct'])
             for name, doc in at.items()}
    return fast, gains, chains.paper_3nf_table(period_us)


def main(argv):
    print('... SLOMO inside classes, over %d seeds' % SLOMO_SEEDS,
          flush=True)
    slomo, slomo_s = _slomo()
    slomo_keys = _slomo_figures(slomo)
    print('... SLOMO inside classes, over %d seeds, models of one training '
          'draw (as before draws)' % SLOMO_SEEDS, flush=True)
    one_draw, _ = _slomo(draws=1)
    slomo_keys['slomo_one_draw'] = _one_draw_figures(one_draw)
    print('... NFVnice: the agent\'s period on a real switch, the chains '
          'at that period', flush=True)
    fast, gains, paper3 = _nfvnice()
    print('... NetContainer grouping and its baselines, over %d seeds'
          % GROUPING_SEEDS, flush=True)
    group = _grouping()
    group_keys = _grouping_figures(group)
    print('... Durner et al. on their own objective', flush=True)
    dur = durner.evaluate()
    print()
    print('%-28s %-42s %s' % ('paper', 'its headline', 'here'))
    print('%-28s %-42s %s' % (
        papers.SLOMO[0], 'error 2-5x below prior work',
        'MAE by shared ways, worst of %d seeds: %s; I/O-heavy %.2f%%' % (
            slomo_keys['seeds'], ', '.join(
                '%s: %.2f%%' % (w, s['worst_seed']) for w, s in
                slomo_keys['slomo_class_error_pct']['testbed'].items()),
            slomo_keys['slomo_io_error_seeds_pct']['testbed'][
                'worst_seed'])))
    print('%-28s %-42s %s' % (
        papers.NFVNICE[0], 'shares + backpressure raise throughput',
        'agent period %d ms (pass p95 %.1f ms); shares + backpressure '
        'there against rate-cost shares / against the default scheduler: '
        '%s' % (fast['period_ms'], fast['pass_ms_p95'], ', '.join(
            '%s %+.2f%% / %+.2f%%' % (
                name, g['nfvnice_vs_rate_cost'], g['nfvnice_vs_default'])
            for name, g in sorted(gains.items())))))
    print('%-28s %-42s %s' % (
        '', 'only the congested chain is throttled',
        'other chain on the same port lost %.2f%% (the congested one '
        'held back %.1f%%)' % (fast['other_chain_loss_pct'],
                               fast['congested_chain_held_pct'])))
    print('%-28s %-42s %s' % (
        '', '3-NF chain: same 0.6 Mpps, NF1 CPU 100%->11%',
        'chain %.3f -> %.3f Mpps, NF1 CPU %.0f%% -> %.0f%%' % (
            paper3['default']['aggregate_mpps'],
            paper3['nfvnice']['aggregate_mpps'],
            paper3['default']['nf'][0]['cpu_pct'],
            paper3['nfvnice']['nf'][0]['cpu_pct'])))
    ours = group_keys['netcontainer_violation_pct']['testbed']
    rr = group_keys['roundrobin_violation_pct']['testbed']
    for i, name in enumerate(ours):
        print('%-28s %-42s %s' % (
            papers.NETCONTAINER[0] if i == 0 else '',
            '48% more calls than page colouring' if i == 0 else '',
            '%s: violations %.2f%% (worst seed %.2f%%) vs round-robin '
            '%.2f%% (%.2f%%)' % (
                name, ours[name]['mean'], ours[name]['worst_seed'],
                rr[name]['mean'], rr[name]['worst_seed'])))
    print('%-28s %-42s %s' % (
        papers.DURNER[0], 'max utilisation down by up to 20 points',
        'mean %.1f, max %.1f points over %d runs' % (
            dur['gain_pts']['mean'], dur['gain_pts']['max'],
            dur['config']['seeds'])))
    print()
    for line in _slomo_table(slomo) + _slomo_table(one_draw):
        print(line)
    for truth_name, doc in group.items():
        print('NetContainer against the %s:' % truth_name)
        for line in grouping.seeds_table(doc):
            print('  ' + line)
    print('(SLOMO took %.0f s)' % slomo_s)
    figures = {
        'benchmark': 'seeds',
        'slomo_s': round(slomo_s, 1),
        'nfvnice_period_ms': fast['period_ms'],
        'nfvnice_pass_ms_p95': fast['pass_ms_p95'],
        # Per scenario and comparison, the agent's loop at its period:
        # nfvnice_vs_rate_cost (shares and backpressure over shares
        # alone), nfvnice_vs_default (over the scheduler's equal split),
        # backpressure_vs_default, rate_cost_vs_default.
        'nfvnice_gain_pct_at_period': gains,
        'nfvnice_other_chain_loss_pct': fast['other_chain_loss_pct'],
        'nfvnice_paper_3nf': {
            v: {'aggregate_mpps': paper3[v]['aggregate_mpps'],
                'nf1_cpu_pct': paper3[v]['nf'][0]['cpu_pct']}
            for v in ('default', 'nfvnice')},
        'durner_max_util_gain_pts': {'mean': dur['gain_pts']['mean'],
                                     'max': dur['gain_pts']['max']},
    }
    figures.update(slomo_keys)
    figures.update(group_keys)
    print(json.dumps(figures, sort_keys=True))
    return 0
