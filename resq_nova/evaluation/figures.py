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
10 (the prediction baseline's error)."""

import os

from resq_nova.evaluation import schemes as schemes_mod
from resq_profiler import plot

# One label per scheme, in the order the bars are drawn.
LABELS = schemes_mod.LABELS


def _bars(doc, metric, ylabel, title, path, schemes):
    from matplotlib import pyplot
    sets = list(doc['sets'])
    fig, ax = pyplot.subplots(figsize=(9, 4))
    try:
        width = 0.8 / max(len(schemes), 1)
        for i, scheme in enumerate(schemes):
            values = [doc['sets'][s].get(scheme, {}).get(metric, 0)
                      for s in sets]
            xs = [j + i * width for j in range(len(sets))]
            bars = ax.bar(xs, values, width, label=LABELS.get(scheme,
                                                              scheme))
            ax.bar_label(bars, fmt='%g', fontsize='x-small')
        ax.set_xticks([j + width * (len(schemes) - 1) / 2
                       for j in range(len(sets))])
        ax.set_xticklabels(sets)
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.legend(fontsize='small')
        ax.grid(True, axis='y', alpha=0.3)
        fig.tight_layout()
        plot.save_figure(fig, path)
    finally:
        pyplot.close(fig)


# The predictors a document may hold, with their figure labels.
PREDICTORS = (('predictor', 'Dobrescu-style baseline'),
              ('slomo_predictor', 'SLOMO'))


def _prediction_error(doc, path):
    from matplotlib import pyplot
    present = [(key, label) for key, label in PREDICTORS if doc.get(key)]
    names = sorted(doc[present[0][0]]['per_nf'])
    width = 0.8 / len(present)
    fig, ax = pyplot.subplots(figsize=(9, 4))
    try:
        for i, (key, label) in enumerate(present):
            per_nf = doc[key]['per_nf']
            xs = [x + (i - (len(present) - 1) / 2) * width
                  for x in range(len(names))]
            bars = ax.bar(xs, [per_nf[n]['mean_pp'] for n in names], width,
                          label='%s: mean over competitor sets' % label)
            ax.bar_label(bars, fmt='%.1f', fontsize='x-small')
            ax.scatter(xs, [per_nf[n]['max_pp'] for n in names],
                       color='black', marker='_', s=200,
                       label='largest error' if i == 0 else None)
        ax.axhline(0, color='grey', linewidth=0.8)
        ax.set_xticks(list(range(len(names))))
        ax.set_xticklabels(names, rotation=30)
        ax.set_ylabel('predicted - observed drop (points)')
        ax.set_title('Contention predictors against the testbed '
                     '(cf. ResQ Figure 10)')
        ax.legend(fontsize='small')
        ax.grid(True, axis='y', alpha=0.3)
        fig.tight_layout()
        plot.save_figure(fig, path)
    finally:
        pyplot.close(fig)


CHAIN_LABELS = {'default': 'Equal shares', 'rate_cost': 'Rate-cost shares',
                'backpressure': 'Backpressure',
                'nfvnice': 'Rate-cost + backpressure'}


def _chains(chains, path):
    """Throughput, drops and wasted work per chain scenario and variant."""
    from matplotlib import pyplot
    names = list(chains)
    metrics = (('throughput_mpps', 'throughput (Mpps)'),
               ('drop_pct', 'packets dropped (%)'),
               ('wasted_work_pct', 'wasted CPU cycles (%)'))
    fig, axes = pyplot.subplots(1, len(metrics), figsize=(12, 4))
    try:
        width = 0.8 / len(CHAIN_LABELS)
        for ax, (metric, label) in zip(axes, metrics):
            for i, (variant, text) in enumerate(CHAIN_LABELS.items()):
                xs = [j + i * width for j in range(len(names))]
                bars = ax.bar(xs, [chains[n][variant][metric]
                                   for n in names], width, label=text)
                ax.bar_label(bars, fmt='%g', fontsize='xx-small')
            ax.set_xticks([j + width * (len(CHAIN_LABELS) - 1) / 2
                           for j in range(len(names))])
            ax.set_xticklabels(names)
            ax.set_ylabel(label)
            ax.grid(True, axis='y', alpha=0.3)
        axes[0].legend(fontsize='x-small')
        fig.suptitle('Chains on a shared core (cf. NFVnice)')
        fig.tight_layout()
        plot.save_figure(fig, path)
    finally:
        pyplot.close(fig)


def write(doc, directory):
    """Write the figures; return their paths.

    violations.png (all schemes), and split into throughput and latency
    violations (violations_throughput.png, violations_latency.png),
    servers.png, when the prediction baseline or SLOMO ran,
    prediction_error.png (both predictors side by side), with the chains
    simulation, chains.png, and with the on-demand simulation,
    ondemand.png.
    """
    os.makedirs(directory, exist_ok=True)
    schemes = [s for s in LABELS if any(s in rows for rows in
                                        doc['sets'].values())]
    paths = []
    for name, metric, what in (
            ('violations', 'violation_pct', 'SLO terms violated by >5% (%)'),
            ('violations_throughput', 'throughput_violation_pct',
             'throughput SLOs missed by >5% (%)'),
            ('violations_latency', 'latency_violation_pct',
             'p95 latency SLOs exceeded by >5% (%)')):
        path = os.path.join(directory, name + '.png')
        _bars(doc, metric, what, 'SLO violations (cf. ResQ Figure 8)',
              path, schemes)
        paths.append(path)
    servers = os.path.join(directory, 'servers.png')
    _bars(doc, 'servers', 'servers used',
          'Resource efficiency (cf. ResQ Figure 9)', servers,
          [s for s in schemes if s not in ('agnostic', 'even_cat')])
    paths.append(servers)
    if any(doc.get(key) for key, _ in PREDICTORS):
        path = os.path.join(directory, 'prediction_error.png')
        _prediction_error(doc, path)
        paths.append(path)
    if doc.get('chains'):
        path = os.path.join(directory, 'chains.png')
        _chains(doc['chains'], path)
        paths.append(path)
    if doc.get('on_demand'):
        from resq_nova.evaluation import ondemand
        paths.append(ondemand.figure(doc['on_demand'], directory))
    return paths
