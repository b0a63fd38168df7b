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
"""Each comparison paper's headline beside what this evaluation measured.

ResQ's own figures sit beside ours in the placement table
(:mod:`.reference`); these are the four other papers (``../shared/seeds``
001-004), each with the claim its abstract or slides make and the figure
of this run that answers it. A headline this run cannot measure says so.
"""

# (paper, its headline, where it is stated)
SLOMO = ('SLOMO (SIGCOMM 2020)',
         'prediction error 2-5x lower than prior work', 'abstract')
NFVNICE = ('NFVnice (slides)',
           'rate-cost CPU shares and backpressure raise the throughput of '
           'chains sharing a core', 'slides, 3-NF chain')
NETCONTAINER = ('NetContainer (ASPLOS 2017)',
                'min-cost-flow grouping beats conventional page colouring '
                '(48% more successful calls)', 'abstract')
DURNER = ('Durner et al.',
          'the highest CPU utilisation lowered by up to 20 points',
          'abstract, Table II setup')


def _slomo(doc):
    base, slomo = doc.get('predictor'), doc.get('slomo_predictor')
    if not base or not slomo or not slomo.get('max_abs_pp'):
        return 'not measured (run with the prediction and slomo schemes)'
    return ('worst error %.1f points against the baseline\'s %.1f '
            '(%.1fx lower) on the Figure 10 co-locations'
            % (slomo['max_abs_pp'], base['max_abs_pp'],
               base['max_abs_pp'] / slomo['max_abs_pp']))


def _nfvnice(doc):
    chains = doc.get('chains')
    if not chains:
        return 'not measured'
    gains = []
    for name, chain in chains.items():
        base = chain.get('default', {}).get('throughput_mpps')
        best = chain.get('nfvnice', {}).get('throughput_mpps')
        if base and best is not None:
            gains.append('%s %+.1f%%' % (name, 100.0 * (best / base - 1)))
    if not gains:
        return 'not measured'
    text = ('throughput with shares and backpressure against the default '
            'scheduler, simulated at a 100 us loop: %s' % ', '.join(gains))
    at = doc.get('chains_at_period')
    if at:
        period = next(iter(at.values()))['period_us'] / 1000.0
        text += ('; at the agent\'s %g ms loop, shares and backpressure '
                 'against rate-cost shares alone / against the default '
                 'scheduler: %s' % (period, ', '.join(
                     '%s %+.1f%% / %+.1f%%' % (
                         name,
                         row['backpressure_gain_pct']['nfvnice_vs_rate_cost'],
                         row['backpressure_gain_pct'].get(
                             'nfvnice_vs_default', float('nan')))
                     for name, row in at.items())))
    return text


def _netcontainer(doc):
    g = doc.get('grouping')
    if not g:
        return 'not measured'
    ours, rr = g['netcontainer_violation_pct'], g['roundrobin_violation_pct']
    return ('NF-periods above target, min-cost flow against round-robin: %s'
            % ', '.join('%s %.2f%% vs %.2f%%' % (name, ours[name], rr[name])
                        for name in ours if name in rr))


def _durner(doc):
    d = doc.get('durner')
    if not d:
        return 'not measured'
    g = d['gain_pts']
    return ('lowered by %.1f points on average, %.1f at most, over %d runs'
            % (g['mean'], g['max'], d['config']['seeds']))


def headlines(doc):
    """``[(paper, headline, source, ours)]`` for an evaluation document."""
    return [paper + (fn(doc),) for paper, fn in (
        (SLOMO, _slomo), (NFVNICE, _nfvnice),
        (NETCONTAINER, _netcontainer), (DURNER, _durner))]


def table(doc):
    """The headlines as text lines."""
    lines = ["The other papers' headlines beside this run:"]
    for paper, claim, source, ours in headlines(doc):
        lines.append('  %s: "%s" (%s)' % (paper, claim, source))
        lines.append('      here: %s' % ours)
    return lines
