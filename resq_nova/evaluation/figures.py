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
"""PNG figures in the spirit of ResQ Figures 8 (violations), 9 (servers) and
10 (the prediction baseline's error), and those of the other studies
(chains, on-demand policies, grouping, Durner et al.).

Every plot of the evaluation is drawn here, from the JSON-able documents
the simulations return; the simulations themselves draw nothing.
:func:`build` makes the matplotlib figures, :func:`write` saves them. So
that no figure misleads:

* on every server-count figure a scheme that violates SLOs is hatched
  (:data:`VIOLATION_HATCH`) and its share of violated terms is in its bar
  label: a cheap schedule that breaks its SLOs does not read as efficient;
* a scheme has one colour in every figure (:data:`SCHEME_COLOURS`; the
  predictors take their schemes' colours), and what is not a scheme (chain
  variants, on-demand and grouping policies) takes colours no scheme has
  (:data:`OTHER_COLOURS`);
* every title says what its figure shows, the SLO setup included, and no
  two figures share one;
* a missing value is no bar and an "n/a" mark (:data:`MISSING`), not 0;
* the prediction error figure states how its setup differs from ResQ
  Figure 10's (:data:`FIGURE10_NOTE`).
"""

import os

from matplotlib import figure as mfigure
from matplotlib import patches

from resq_nova.evaluation import reference
from resq_nova.evaluation import schemes as schemes_mod
from resq_nova.evaluation import slosets
from resq_profiler import plot

# One label per scheme, in the order the bars are drawn.
LABELS = schemes_mod.LABELS

# One colour per scheme, in every figure (matplotlib's tab10).
SCHEME_COLOURS = {
    'agnostic': '#d62728',           # red
    'even_cat': '#ff7f0e',           # orange
    'prediction': '#9467bd',         # purple
    'slomo': '#e377c2',              # pink
    'elastic': '#8c564b',            # brown
    'resq_greedy_paper': '#17becf',  # cyan
    'resq_greedy': '#1f77b4',        # blue
    'resq_optimal': '#2ca02c',       # green
}
# Colours of what is not a scheme: none of them is a scheme's.
OTHER_COLOURS = ('#7f7f7f', '#bcbd22', '#393b79', '#c7c7c7', '#637939',
                 '#843c39', '#7b4173', '#e7ba52')
VIOLATION_HATCH = '//'
MISSING = 'n/a'

# Figure 10 as we run it, against the paper's (ResQ §6.2).
FIGURE10_NOTE = (
    "Not ResQ Figure 10's setup: each catalog NF runs alone (the paper: "
    'chains such as LPM->Stats->IPsec) next to 5 identical instances of '
    'each of the 9 catalog NFs, sharing the whole 45 MB LLC (the paper: '
    '19.5 MB).')


def _figure(width, height):
    """A figure of its own (not pyplot's: nothing to close)."""
    return mfigure.Figure(figsize=(width, height))


def _legend(ax, schemes, hatched):
    handles = [patches.Patch(facecolor=SCHEME_COLOURS.get(s, 'white'),
                             edgecolor='black', linewidth=0.4,
                             label=LABELS.get(s, s)) for s in schemes]
    if hatched:
        handles.append(patches.Patch(
            facecolor='white', edgecolor='black', hatch=VIOLATION_HATCH,
            label='hatched: violates SLOs (share of terms in the label)'))
    ax.legend(handles=handles, fontsize='x-small', loc='upper left',
              bbox_to_anchor=(1.01, 1))


def _missing(ax, x):
    """What a missing value draws: no bar, an "n/a" mark at ``x``."""
    ax.text(x, 0, MISSING, ha='center', va='bottom', rotation=90,
            fontsize='xx-small', color='dimgrey')


def _label(value, violation_pct):
    if violation_pct:
        return '%g (%.1f%% violated)' % (value, violation_pct)
    return '%g' % value


def bars(sets, metric, ylabel, title, schemes, mark_violations=False):
    """A bar per set and scheme of ``sets`` (``{set: {scheme: row}}``).

    :param mark_violations: hatch the bars of rows that violate SLOs and
        put their ``violation_pct`` in the label (server counts).
    :returns: the figure.
    """
    names = list(sets)
    fig = _figure(12 if mark_violations else 11, 4.5)
    ax = fig.subplots()
    width = 0.8 / max(len(schemes), 1)
    top = 0
    for i, scheme in enumerate(schemes):
        xs, values, labels, hatched = [], [], [], []
        for j, set_name in enumerate(names):
            row = sets[set_name].get(scheme) or {}
            x = j + i * width
            if row.get(metric) is None:
                _missing(ax, x)
                continue
            violated = row.get('violation_pct') if mark_violations else None
            xs.append(x)
            values.append(row[metric])
            labels.append(_label(row[metric], violated))
            hatched.append(bool(violated))
        drawn = ax.bar(xs, values, width, color=SCHEME_COLOURS.get(scheme),
                       edgecolor='black', linewidth=0.4)
        for bar, hatch in zip(drawn, hatched):
            if hatch:
                bar.set_hatch(VIOLATION_HATCH)
        ax.bar_label(drawn, labels=labels, fontsize='x-small', padding=2,
                     rotation=90 if mark_violations else 0)
        top = max([top] + values)
    ax.set_ylim(0, (top or 1) * (1.7 if mark_violations else 1.15))
    ax.set_xticks([j + width * (len(schemes) - 1) / 2
                   for j in range(len(names))])
    ax.set_xticklabels(names)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize='medium')
    _legend(ax, schemes, mark_violations)
    ax.grid(True, axis='y', alpha=0.3)
    fig.tight_layout()
    return fig


# The predictors a document may hold, with their figure labels and the
# scheme whose colour they take.
PREDICTORS = (('predictor', 'Dobrescu-style baseline', 'prediction'),
              ('slomo_predictor', 'SLOMO', 'slomo'))


def prediction_error(doc):
    """Figure 10: the predictors' error, with how its setup differs."""
    present = [p for p in PREDICTORS if doc.get(p[0])]
    names = sorted(doc[present[0][0]]['per_nf'])
    width = 0.8 / len(present)
    fig = _figure(9, 4.8)
    ax = fig.subplots()
    for i, (key, label, scheme) in enumerate(present):
        per_nf = doc[key]['per_nf']
        xs = [x + (i - (len(present) - 1) / 2) * width
              for x in range(len(names))]
        drawn = ax.bar(xs, [per_nf[n]['mean_pp'] for n in names], width,
                       color=SCHEME_COLOURS[scheme],
                       label='%s: mean over competitor sets' % label)
        ax.bar_label(drawn, fmt='%.1f', fontsize='x-small')
        ax.scatter(xs, [per_nf[n]['max_pp'] for n in names],
                   color='black', marker='_', s=200,
                   label='largest error' if i == 0 else None)
    ax.axhline(0, color='grey', linewidth=0.8)
    ax.set_xticks(list(range(len(names))))
    ax.set_xticklabels(names, rotation=30)
    ax.set_ylabel('predicted - observed drop (points)')
    ax.set_title('Contention predictors: predicted minus observed '
                 'throughput drop per NF (cf. ResQ Figure 10)',
                 fontsize='medium')
    ax.legend(fontsize='small')
    ax.grid(True, axis='y', alpha=0.3)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.text(0.01, 0.01, FIGURE10_NOTE, fontsize='x-small', wrap=True)
    return fig


CHAIN_LABELS = {'default': 'Equal shares', 'rate_cost': 'Rate-cost shares',
                'backpressure': 'Backpressure',
                'nfvnice': 'Rate-cost + backpressure'}
CHAIN_COLOURS = dict(zip(CHAIN_LABELS, OTHER_COLOURS))


def chains(doc):
    """Throughput, drops and wasted work per chain scenario and variant."""
    names = list(doc)
    metrics = (('throughput_mpps', 'throughput (Mpps)'),
               ('drop_pct', 'packets dropped (%)'),
               ('wasted_work_pct', 'wasted CPU cycles (%)'))
    fig = _figure(12, 4)
    axes = fig.subplots(1, len(metrics))
    width = 0.8 / len(CHAIN_LABELS)
    for ax, (metric, label) in zip(axes, metrics):
        for i, (variant, text) in enumerate(CHAIN_LABELS.items()):
            xs = [j + i * width for j in range(len(names))]
            drawn = ax.bar(xs, [doc[n][variant][metric] for n in names],
                           width, label=text,
                           color=CHAIN_COLOURS[variant])
            ax.bar_label(drawn, fmt='%g', fontsize='xx-small')
        ax.set_xticks([j + width * (len(CHAIN_LABELS) - 1) / 2
                       for j in range(len(names))])
        ax.set_xticklabels(names)
        ax.set_ylabel(label)
        ax.grid(True, axis='y', alpha=0.3)
    axes[0].legend(fontsize='x-small')
    fig.suptitle('NF chains sharing one core: throughput, drops and '
                 'wasted work per CPU-sharing variant (cf. NFVnice)')
    fig.tight_layout()
    return fig


def ondemand(doc):
    """Violations and mask moves per on-demand policy.

    :param doc: :func:`resq_nova.evaluation.ondemand.evaluate`'s document.
    :returns: the figure; the policies take colours no placement scheme
        has (:data:`OTHER_COLOURS`).
    """
    names = list(doc['policies'])
    colours = [OTHER_COLOURS[i % len(OTHER_COLOURS)]
               for i in range(len(names))]
    fig = _figure(9, 3.5)
    axes = fig.subplots(1, 2)
    for ax, metric, label in (
            (axes[0], 'violation_pct', 'NF-periods above target (%)'),
            (axes[1], 'moves', 'mask changes')):
        drawn = ax.bar(names, [doc['policies'][n][metric] for n in names],
                       color=colours)
        ax.bar_label(drawn, fmt='%g', fontsize='x-small')
        ax.set_ylabel(label)
        ax.grid(True, axis='y', alpha=0.3)
    fig.suptitle('On-demand NFs: latency violations and mask changes per '
                 'local policy, %(nfs)d NFs, %(lease_ways)d-way lease, '
                 '%(periods)d periods of varying traffic' % doc['config'],
                 fontsize='medium')
    fig.tight_layout()
    return fig


def grouping(doc):
    """Violations per grouping policy and scenario.

    :param doc: :func:`resq_nova.evaluation.grouping.evaluate`'s document.
    :returns: the figure; the policies take colours no placement scheme
        has (:data:`OTHER_COLOURS`), one each, the same in every scenario.
    """
    names = list(doc['scenarios'])
    policies = list(doc['scenarios'][names[0]]['policies']) if names else []
    fig = _figure(10, 3.8)
    ax = fig.subplots()
    width = 0.8 / max(len(policies), 1)
    for j, policy in enumerate(policies):
        xs = [i + (j - (len(policies) - 1) / 2.0) * width
              for i in range(len(names))]
        ys = [doc['scenarios'][n]['policies'][policy]['violation_pct']
              for n in names]
        ax.bar(xs, ys, width, label=policy,
               color=OTHER_COLOURS[j % len(OTHER_COLOURS)])
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(['%s\n(%d NFs, %d classes)' % (
        n, doc['scenarios'][n]['nfs'], doc['scenarios'][n]['classes'])
        for n in names], fontsize='small')
    ax.set_ylabel('NF-periods above target (%)')
    ax.grid(True, axis='y', alpha=0.3)
    ax.legend(fontsize='x-small', ncol=4)
    fig.suptitle('Grouping on-demand NFs into fewer classes of service: '
                 'NetContainer-style min-cost flow on miss-ratio curves '
                 '("netcontainer") against other groupings, mean of seeds %s'
                 % ', '.join(str(s) for s in doc['config']['seeds']),
                 fontsize='medium')
    fig.tight_layout()
    return fig


def durner(doc):
    """The gain's distribution and its relation to max - mean (Fig. 7).

    :param doc: :func:`resq_nova.evaluation.durner.evaluate`'s document.
    :returns: the figure.
    """
    runs = doc['runs']
    gains = [r['gain_pts'] for r in runs]
    colour = OTHER_COLOURS[0]
    fig = _figure(9, 3.5)
    hist, scatter = fig.subplots(1, 2)
    hist.hist(gains, bins=20, color=colour)
    hist.axvline(doc['paper']['gain_max_pts'], color='black',
                 linestyle='--', label="paper's 'up to %g'"
                 % doc['paper']['gain_max_pts'])
    hist.set_xlabel('highest CPU utilisation, shared - scheduled (points)')
    hist.set_ylabel('scheduler runs')
    hist.legend(fontsize='x-small')
    x = [r['max_minus_mean_pts'] for r in runs]
    scatter.scatter(x, gains, s=8, color=colour, label='runs')
    top = max(x) if x else 1.0
    scatter.plot([0, top], [0, doc['paper']['slope'] * top], color='black',
                 linestyle='--', label="paper's fit (slope %g)"
                 % doc['paper']['slope'])
    scatter.set_xlabel('max - mean utilisation, LLC shared (points)')
    scatter.set_ylabel('gain (points)')
    scatter.legend(fontsize='x-small')
    for ax in (hist, scatter):
        ax.grid(True, alpha=0.3)
    fig.suptitle("Durner et al.'s min-max LLC scheduler on its own "
                 'objective: %(seeds)d runs of %(vnfs)d VNFs with Table II '
                 "parameters (cf. the paper's Fig. 7)" % doc['config'],
                 fontsize='medium')
    fig.tight_layout()
    return fig


# The figures of each setup: file name, metric, axis label, title.
SET_FIGURES = (
    ('violations', 'violation_pct', 'SLO terms violated by >5% (%)',
     'Terms violating their throughput or latency SLO by >5%'
     ' (cf. ResQ Figure 8)'),
    ('violations_throughput', 'throughput_violation_pct',
     'throughput SLOs missed by >5% (%)',
     'Terms missing their throughput SLO by >5%'),
    ('violations_latency', 'latency_violation_pct',
     'p95 latency SLOs exceeded by >5% (%)',
     'Terms exceeding their p95 latency SLO by >5%'),
)
# Figure 9 compares ResQ with the prediction and elastic schemes; the
# contention-agnostic ones are Figure 8's.
NOT_IN_SERVERS = ('agnostic', 'even_cat')


def suffix(targets):
    """What a setup adds to its figures' file names (binding: nothing)."""
    return '' if targets == slosets.BINDING else '_%s_targets' % targets


def build(doc):
    """Every figure of ``doc``: ``[(file name, matplotlib Figure)]``."""
    result = []
    for targets, setup in reference.setups(doc):
        schemes = [s for s in LABELS if any(s in rows for rows in
                                            setup['sets'].values())]
        what = slosets.TARGET_LABELS[targets]
        for name, metric, ylabel, title in SET_FIGURES:
            result.append((name + suffix(targets) + '.png', bars(
                setup['sets'], metric, ylabel, '%s\n%s' % (title, what),
                schemes)))
        result.append(('servers%s.png' % suffix(targets), bars(
            setup['sets'], 'servers', 'servers used',
            'Servers used per SLO set (cf. ResQ Figure 9; hatched: violates '
            'SLOs)\n%s' % what,
            [s for s in schemes if s not in NOT_IN_SERVERS],
            mark_violations=True)))
    if any(doc.get(p[0]) for p in PREDICTORS):
        result.append(('prediction_error.png', prediction_error(doc)))
    if doc.get('chains'):
        result.append(('chains.png', chains(doc['chains'])))
    if doc.get('on_demand'):
        result.append(('ondemand.png', ondemand(doc['on_demand'])))
    if doc.get('grouping'):
        result.append(('grouping.png', grouping(doc['grouping'])))
    if doc.get('durner'):
        result.append(('durner.png', durner(doc['durner'])))
    return result


def write(doc, directory):
    """Write the figures of :func:`build` into ``directory``; their paths.

    Per SLO setup: violations.png (all schemes), violations_throughput.png
    and violations_latency.png, servers.png, each with the setup's suffix
    (:func:`suffix`: none for the binding targets, ``_paper_targets`` for
    the paper's); then prediction_error.png when the prediction baseline
    or SLOMO ran (both side by side), chains.png with the chains
    simulation, ondemand.png with the on-demand one, grouping.png with
    NetContainer's grouping and durner.png with Durner et al.'s scheduler
    on its own objective.
    """
    os.makedirs(directory, exist_ok=True)
    paths = []
    for name, fig in build(doc):
        path = os.path.join(directory, name)
        plot.save_figure(fig, path)
        paths.append(path)
    return paths
