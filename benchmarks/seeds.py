"""Each comparison paper's headline beside this project's figure (issue 31).

SLOMO inside classes of service (its error against the testbed at 2 to
20 shared ways, and on I/O-heavy mixes, over :data:`SLOMO_SEEDS` seeds:
each seed trains every catalog NF afresh, its training draws, noise and
test mixes its own; issue 45), NFVnice's chains
(throughput with rate-cost shares and backpressure against the default
scheduler, for control loops of 0.1 to 10 ms), NetContainer's grouping
(violations of the min-cost flow on miss-ratio curves against
round-robin, per scenario) and Durner et al.'s scheduler on its own
objective (the drop of the highest CPU utilisation over 200 runs).

Targets (issue 31): SLOMO's mean absolute error <= 5% at every class size
(issue 45: on every seed, so judged on the worst seed);
fewer violations than round-robin on every grouping scenario; NFVnice's
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


def _slomo(seeds=SLOMO_SEEDS, draws=None):
    """SLOMO's class error over ``seeds`` seeds, per truth, and its time.

    :param draws: training draws per model (default: the training's).
    """
    start = time.monotonic()
    kw = {} if draws is None else {'draws': draws}
    out = {'testbed': accuracy.over_seeds(
        seeds, progress=lambda msg: print('    ' + msg, flush=True), **kw)}
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
                'io_error_pct': {k: d['io'][k] for k in SPREAD}}
            for t, d in by_truth.items()}


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
        'slomo_training': {t: {'draws': d['draws'], 'runs': d['runs'],
                               'mixes': d['mixes'],
                               'noise_pct': d['noise_pct']}
                           for t, d in by_truth.items()},
        # The testbed's, as before seeds: the worst instance of any seed
        # and the I/O-heavy mixes' mean over seeds.
        'slomo_class_max_error_pct': dict(testbed['max_abs_pct']),
        'slomo_io_error_pct': testbed['io']['mean'],
    }


def _nfvnice():
    """The agent's period on a real switch, and the gains at it."""
    from benchmarks import nfvnice_fastpath

    fast = nfvnice_fastpath.measure()
    period_us = fast['period_ms'] * 1000
    at = chains.evaluate_at_period(period_us)
    gains = {name: doc['backpressure_gain_pct']['nfvnice_vs_rate_cost']
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
    print('... NetContainer grouping', flush=True)
    group = grouping.evaluate()
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
        'agent period %d ms (pass p95 %.1f ms); backpressure gain there: '
        '%s' % (fast['period_ms'], fast['pass_ms_p95'], ', '.join(
            '%s %+.2f%%' % kv for kv in sorted(gains.items())))))
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
    for name in group['netcontainer_violation_pct']:
        print('%-28s %-42s %s' % (
            papers.NETCONTAINER[0] if name == list(
                group['netcontainer_violation_pct'])[0] else '',
            '48% more calls than page colouring' if name == list(
                group['netcontainer_violation_pct'])[0] else '',
            '%s: violations %.2f%% vs round-robin %.2f%%' % (
                name, group['netcontainer_violation_pct'][name],
                group['roundrobin_violation_pct'][name])))
    print('%-28s %-42s %s' % (
        papers.DURNER[0], 'max utilisation down by up to 20 points',
        'mean %.1f, max %.1f points over %d runs' % (
            dur['gain_pts']['mean'], dur['gain_pts']['max'],
            dur['config']['seeds'])))
    print()
    for line in _slomo_table(slomo) + _slomo_table(one_draw):
        print(line)
    print('(SLOMO took %.0f s)' % slomo_s)
    figures = {
        'benchmark': 'seeds',
        'slomo_s': round(slomo_s, 1),
        'nfvnice_period_ms': fast['period_ms'],
        'nfvnice_pass_ms_p95': fast['pass_ms_p95'],
        # Per scenario: throughput with backpressure over without (both
        # with rate-cost shares), the agent's loop at its period.
        'nfvnice_gain_pct_at_period': gains,
        'nfvnice_other_chain_loss_pct': fast['other_chain_loss_pct'],
        'nfvnice_paper_3nf': {
            v: {'aggregate_mpps': paper3[v]['aggregate_mpps'],
                'nf1_cpu_pct': paper3[v]['nf'][0]['cpu_pct']}
            for v in ('default', 'nfvnice')},
        'netcontainer_violation_pct': group['netcontainer_violation_pct'],
        'roundrobin_violation_pct': group['roundrobin_violation_pct'],
        'durner_max_util_gain_pts': {'mean': dur['gain_pts']['mean'],
                                     'max': dur['gain_pts']['max']},
    }
    figures.update(slomo_keys)
    print(json.dumps(figures, sort_keys=True))
    return 0
