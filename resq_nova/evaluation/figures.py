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
"""PNG figures in the spirit of ResQ Figures 8 (violations) and 9 (servers)."""

import os

from resq_profiler import plot

LABELS = {
    'agnostic': 'Contention-agnostic', 'even_cat': 'Even CAT split',
    'prediction': 'Prediction-based', 'elastic': 'E2-like elastic',
    'resq_greedy': 'ResQ greedy', 'resq_optimal': 'ResQ optimal',
}


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


def write(doc, directory):
    """Write violations.png, servers.png (and ondemand.png); their paths."""
    os.makedirs(directory, exist_ok=True)
    schemes = [s for s in LABELS if any(s in rows for rows in
                                        doc['sets'].values())]
    viol = os.path.join(directory, 'violations.png')
    _bars(doc, 'violation_pct', 'SLO terms violated by >5% (%)',
          'SLO violations (cf. ResQ Figure 8)', viol,
          [s for s in schemes if s in ('agnostic', 'even_cat',
                                       'resq_greedy', 'resq_optimal')])
    servers = os.path.join(directory, 'servers.png')
    _bars(doc, 'servers', 'servers used',
          'Resource efficiency (cf. ResQ Figure 9)', servers,
          [s for s in schemes if s not in ('agnostic', 'even_cat')])
    paths = [viol, servers]
    if doc.get('on_demand'):
        from resq_nova.evaluation import ondemand
        paths.append(ondemand.figure(doc['on_demand'], directory))
    return paths
