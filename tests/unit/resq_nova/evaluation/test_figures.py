"""Figures that cannot mislead: inspected as matplotlib objects."""

import functools
import os

from matplotlib import colors as mcolors
from matplotlib import patches
from matplotlib import text as mtext

from resq_nova.evaluation import figures
from resq_nova.evaluation import schemes
from resq_nova.evaluation import slosets
from tests import base


def _row(servers, violation_pct=0.0, latency=None):
    return {'servers': servers, 'violation_pct': violation_pct,
            'throughput_violation_pct': 0.0,
            'latency_violation_pct': (violation_pct if latency is None
                                      else latency)}


def _sets(shift=0):
    """Two sets, every scheme; three of them violate on the first."""
    rows = {s: _row(30 + shift) for s in schemes.NAMES}
    rows.update(prediction=_row(23, 35.0), slomo=_row(23, 35.0),
                elastic=_row(23, 12.5))
    other = {s: _row(40 + shift) for s in schemes.NAMES}
    return {'insensitive': rows, 'mixed': other}


def _doc():
    """A document of both setups with every section that draws."""
    per_nf = {'LPM': {'mean_pp': 5.0, 'max_pp': 9.0},
              'Stats': {'mean_pp': -1.0, 'max_pp': -3.0}}
    setups = {slosets.BINDING: {'sets': _sets(), 'ratios': {}},
              slosets.PAPER: {'sets': _sets(1), 'ratios': {}}}
    return {
        'sets': setups[slosets.BINDING]['sets'], 'ratios': {},
        'setups': setups,
        'predictor': {'per_nf': per_nf}, 'slomo_predictor': {
            'per_nf': per_nf},
        'chains': {'unbalanced': {v: {'throughput_mpps': 1.0,
                                      'drop_pct': 2.0,
                                      'wasted_work_pct': 3.0}
                                  for v in figures.CHAIN_LABELS}},
        'on_demand': {'config': {'nfs': 8, 'lease_ways': 16, 'periods': 5},
                      'policies': {p: {'violation_pct': 1.0, 'moves': 2}
                                   for p in ('resq', 'durner', 'shared')}},
    }


def _bars_by_colour(fig):
    """``{colour (hex): [bar patches]}`` of a figure's bar charts."""
    result = {}
    for ax in fig.axes:
        for container in ax.containers:
            for bar in container.patches:
                result.setdefault(mcolors.to_hex(bar.get_facecolor()),
                                  []).append(bar)
    return result


def _scheme_of(colour):
    return {mcolors.to_hex(c): s
            for s, c in figures.SCHEME_COLOURS.items()}.get(colour)


def _title(fig):
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    if fig.get_suptitle():
        titles.append(fig.get_suptitle())
    return ' / '.join(titles)


def _texts(ax):
    return [t.get_text() for t in ax.findobj(mtext.Text)]


@functools.lru_cache(maxsize=1)
def _built():
    return dict(figures.build(_doc()))


class FiguresTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.figs = _built()

    def test_every_figure_of_both_setups(self):
        self.assertEqual(
            ['violations.png', 'violations_throughput.png',
             'violations_latency.png', 'servers.png',
             'violations_paper_targets.png',
             'violations_throughput_paper_targets.png',
             'violations_latency_paper_targets.png',
             'servers_paper_targets.png', 'prediction_error.png',
             'chains.png', 'ondemand.png'],
            list(self.figs))

    def test_violating_schemes_are_hatched_with_their_share(self):
        for name in ('servers.png', 'servers_paper_targets.png'):
            ax = self.figs[name].axes[0]
            by_colour = _bars_by_colour(self.figs[name])
            # insensitive first, then mixed, per scheme.
            for colour, bars in by_colour.items():
                scheme = _scheme_of(colour)
                violates = scheme in ('prediction', 'slomo', 'elastic')
                self.assertEqual(violates, bars[0].get_hatch() ==
                                 figures.VIOLATION_HATCH, (name, scheme))
                self.assertIsNone(bars[1].get_hatch(), (name, scheme))
            labels = _texts(ax)
            self.assertIn('23 (35.0% violated)', labels)
            self.assertIn('23 (12.5% violated)', labels)
            self.assertIn('31' if 'paper' in name else '30', labels)
            # The legend says what hatching means.
            legend = [t.get_text() for t in ax.get_legend().get_texts()]
            self.assertTrue(any('hatched: violates SLOs' in t
                                for t in legend), legend)

    def test_one_colour_per_scheme_across_figures(self):
        colours = [mcolors.to_hex(c)
                   for c in figures.SCHEME_COLOURS.values()]
        self.assertEqual(len(colours), len(set(colours)))
        self.assertEqual(set(schemes.NAMES), set(figures.SCHEME_COLOURS))
        seen = {}
        for name, fig in self.figs.items():
            if name in ('chains.png', 'ondemand.png'):
                continue
            ax = fig.axes[0]
            legend = ax.get_legend()
            for handle, label in zip(legend.legend_handles,
                                     legend.get_texts()):
                if not isinstance(handle, patches.Patch) or \
                        handle.get_hatch():
                    continue
                seen.setdefault(label.get_text(), set()).add(
                    mcolors.to_hex(handle.get_facecolor()))
            for colour in _bars_by_colour(fig):
                self.assertIsNotNone(_scheme_of(colour), (name, colour))
        for scheme, label in schemes.LABELS.items():
            self.assertEqual({figures.SCHEME_COLOURS[scheme]},
                             seen[label], scheme)
        # The predictors take their schemes' colours.
        bars = _bars_by_colour(self.figs['prediction_error.png'])
        self.assertEqual({figures.SCHEME_COLOURS['prediction'],
                          figures.SCHEME_COLOURS['slomo']}, set(bars))

    def test_what_is_not_a_scheme_takes_no_schemes_colour(self):
        for name in ('chains.png', 'ondemand.png'):
            for colour in _bars_by_colour(self.figs[name]):
                self.assertIsNone(_scheme_of(colour), (name, colour))

    def test_titles_are_unique_and_name_the_setup(self):
        titles = {name: _title(fig) for name, fig in self.figs.items()}
        self.assertTrue(all(titles.values()), titles)
        self.assertEqual(len(titles), len(set(titles.values())), titles)
        for name, title in titles.items():
            if name.startswith(('violations', 'servers')):
                targets = (slosets.PAPER if 'paper' in name
                           else slosets.BINDING)
                self.assertIn(slosets.TARGET_LABELS[targets], title)

    def test_missing_value_draws_no_bar(self):
        sets = _sets()
        sets['mixed']['resq_greedy'] = None
        del sets['insensitive']['resq_optimal']['servers']
        fig = figures.bars(sets, 'servers', 'servers', 'A title',
                           ['resq_greedy', 'resq_optimal'],
                           mark_violations=True)
        bars = _bars_by_colour(fig)
        # One bar each (two sets, one value missing each), nothing at 0.
        self.assertEqual(1, len(bars[figures.SCHEME_COLOURS['resq_greedy']]))
        self.assertEqual(1, len(bars[figures.SCHEME_COLOURS[
            'resq_optimal']]))
        for group in bars.values():
            self.assertTrue(all(b.get_height() > 0 for b in group))
        self.assertEqual(2, _texts(fig.axes[0]).count(figures.MISSING))

    def test_figure10_states_its_setup(self):
        fig = self.figs['prediction_error.png']
        note = [t.get_text() for t in fig.texts]
        self.assertEqual([figures.FIGURE10_NOTE], note)
        for words in ('chains', '19.5 MB', '45 MB'):
            self.assertIn(words, figures.FIGURE10_NOTE)

    def test_write(self):
        paths = figures.write(_doc(), self.tmp)
        self.assertEqual(11, len(paths))
        for path in paths:
            with open(path, 'rb') as f:
                self.assertEqual(b'\x89PNG', f.read(4))
        self.assertTrue(os.path.exists(os.path.join(
            self.tmp, 'servers_paper_targets.png')))

    def test_document_without_setups_is_the_binding_setup(self):
        doc = _doc()
        del doc['setups']
        names = [name for name, _ in figures.build(doc)]
        self.assertIn('servers.png', names)
        self.assertNotIn('servers_paper_targets.png', names)
