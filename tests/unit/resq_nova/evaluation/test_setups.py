"""The paper's SLO setup beside ours (resq-evaluate --slo-targets)."""

import contextlib
import functools
import io
import json
import os

from resq_nova.cmd import evaluate as evaluate_cmd
from resq_nova.evaluation import reference
from resq_nova.evaluation import run
from resq_nova.evaluation import seeds
from resq_nova.evaluation import slosets
from resq_profiler import catalog
from tests import base

# Small: the insensitive set's three NFs, nine terms, the schemes whose
# server count the setups change most.
SMALL = dict(terms=9, time_limit=20)
SETS = ['insensitive']
SCHEMES = ['agnostic', 'elastic', 'resq_greedy_paper', 'resq_greedy',
           'resq_optimal']


def _run(**kwargs):
    t = base.TestCase('run')
    t.setUp()
    try:
        return run.evaluate(t.conf, SETS, SCHEMES, **dict(SMALL, **kwargs))
    finally:
        t.doCleanups()


@functools.lru_cache(maxsize=None)
def _doc(slo_targets):
    return _run(slo_targets=slo_targets)


@functools.lru_cache(maxsize=1)
def _profiles():
    t = base.TestCase('run')
    t.setUp()
    try:
        return run.profile_catalog(t.conf, noise_pct=0.5, seed=0)
    finally:
        t.doCleanups()


class SloTargetsTest(base.TestCase):

    def test_paper_targets_are_the_solo_p95_and_never_bind(self):
        for set_name in slosets.SETS:
            ours = slosets.make(set_name, _profiles(), 60, seed=2)
            paper = slosets.make(set_name, _profiles(), 60, seed=2,
                                 targets=slosets.PAPER)
            # The same NFs and throughput targets: only latency differs.
            self.assertEqual([(t.name, t.throughput_mpps) for t in ours],
                             [(t.name, t.throughput_mpps) for t in paper])
            for t in paper:
                self.assertEqual(t.profile.latency_at(
                    slosets.PAPER_LATENCY_LOAD), t.latency_p95_us)
                self.assertFalse(slosets.binding(t), t.name)
            # Ours: a share of the targets tighter than the paper's.
            tighter = [a for a, b in zip(ours, paper)
                       if a.latency_p95_us < b.latency_p95_us]
            self.assertTrue(tighter, set_name)
            self.assertTrue(all(slosets.binding(t) for t in tighter))
        self.assertEqual(1.0, slosets.PAPER_LATENCY_LOAD)
        self.assertRaises(ValueError, slosets.make, 'mixed', _profiles(),
                          5, targets='tight')

    def test_targets_of(self):
        self.assertEqual(('binding',), run.targets_of(None))
        self.assertEqual(('paper',), run.targets_of('paper'))
        self.assertEqual(('binding', 'paper'), run.targets_of('both'))
        self.assertEqual(('paper', 'binding'),
                         run.targets_of(['paper', 'binding']))
        for bad in ('tight', [], ['paper', 'paper']):
            self.assertRaises(ValueError, run.targets_of, bad)
        self.assertRaises(ValueError, run.evaluate, self.conf, ['mixed'],
                          ['agnostic'], terms=5, slo_targets='tight')


class BothSetupsTest(base.TestCase):

    def test_top_level_is_the_binding_setup(self):
        both, binding = _doc('both'), _doc('binding')
        self.assertEqual(['binding', 'paper'], both['config']['slo_targets'])
        self.assertEqual(['binding', 'paper'], list(both['setups']))
        # Compatible: the top level is what a binding-only run gives, and
        # the same as setups.binding.
        self.assertEqual(run.without_timings(binding['sets']),
                         run.without_timings(both['sets']))
        self.assertEqual(binding['ratios'], both['ratios'])
        self.assertIs(both['sets'], both['setups']['binding']['sets'])
        self.assertEqual(['binding'], list(binding['setups']))
        for targets, setup in both['setups'].items():
            self.assertEqual(slosets.TARGETS[targets], setup['description'])
            self.assertEqual(set(SCHEMES), set(setup['sets']['insensitive']))
            self.assertIn('insensitive', setup['ratios'])
        # The profiles are shared: the paper's setup draws nothing new.
        self.assertEqual(binding['profiles'], both['profiles'])
        self.assertEqual(reference.document(), both['paper_reference'])
        json.dumps(both)

    def test_the_paper_setup(self):
        paper = _doc('paper')
        self.assertEqual(['paper'], list(paper['setups']))
        rows = paper['sets']['insensitive']
        self.assertEqual(run.without_timings(rows), run.without_timings(
            _doc('both')['setups']['paper']['sets']['insensitive']))
        for scheme, row in rows.items():
            # No target binds: nothing to report of binding terms.
            self.assertIsNone(row['latency_binding_violation_pct'], scheme)
        # Latency targets that never bind: throughput-only elastic scaling
        # violates nothing and ties with ResQ on the insensitive set (ResQ
        # sec. 6.2), which the binding targets do not let it do.
        self.assertEqual(0, rows['elastic']['violation_pct'])
        self.assertEqual(rows['resq_optimal']['servers'],
                         rows['elastic']['servers'])
        ours = _doc('binding')['sets']['insensitive']
        self.assertGreater(ours['elastic']['violation_pct'], 0)
        self.assertLessEqual(rows['resq_optimal']['servers'],
                             ours['resq_optimal']['servers'])

    def test_table_side_by_side_with_the_paper(self):
        text = run.table(_doc('both'))
        self.assertIn('with %s:' % slosets.TARGETS['binding'], text)
        self.assertIn('with %s:' % slosets.TARGETS['paper'], text)
        side = reference.side_by_side(_doc('both'))
        self.assertIn(side, text)
        lines = side.splitlines()
        self.assertIn("binding (default)       paper's (solo p95)",
                      lines[1])
        self.assertIn('ResQ paper', lines[1])
        rows = {tuple(line.split()[:2]): line for line in lines[3:]}
        doc = _doc('both')
        for scheme in SCHEMES:
            line = rows['insensitive', scheme]
            for targets in ('binding', 'paper'):
                self.assertIn(' %d ' % doc['setups'][targets]['sets'][
                    'insensitive'][scheme]['servers'], line)
        self.assertIn('Fig. 8, sec. 6.1', rows['insensitive', 'agnostic'])
        self.assertIn("resq-nova's, not in the paper",
                      rows['insensitive', 'resq_greedy'])
        self.assertIn('<=1.19x', side)
        # One setup alone: the paper's column still beside it.
        self.assertIn('ResQ paper (NSDI 2018)', run.table(_doc('paper')))

    def test_spread_covers_both_setups(self):
        docs = [_doc('both'), _doc('both')]
        got = seeds.spread(docs, [0, 1])['numbers']
        stat = got['setups']['paper']['sets']['insensitive']['elastic'][
            'servers']
        value = _doc('both')['setups']['paper']['sets']['insensitive'][
            'elastic']['servers']
        self.assertEqual({'min': value, 'median': value, 'max': value,
                          'values': [value, value]}, stat)
        self.assertIn('paper_greedy_to_optimal',
                      got['setups']['paper']['ratios']['insensitive'])
        text = seeds.table({'seeds': [0, 1], 'numbers': got})
        self.assertIn('paper latency targets: servers and violated%', text)


class ReferenceTest(base.TestCase):

    def test_paper_figures(self):
        # What the text of ResQ sec. 6 says, and nothing read off a chart.
        self.assertEqual(11.0, reference.PAPER['mixed', 'agnostic']
                         .violation_pct)
        self.assertEqual(91.0, reference.PAPER['sensitive', 'agnostic']
                         .violation_pct)
        self.assertEqual('+37.1%', reference.PAPER['mixed', 'prediction']
                         .servers)
        self.assertEqual('+184.4%', reference.PAPER[
            'sensitive', 'prediction'].servers)
        self.assertIsNone(reference.PAPER['insensitive', 'even_cat']
                          .violation_pct)
        for (set_name, scheme), fact in reference.PAPER.items():
            self.assertIn(set_name, slosets.SETS)
            self.assertNotIn(scheme, reference.NOT_IN_PAPER)
            self.assertTrue(fact.source.startswith('Fig.'), fact)

    def test_versus(self):
        rows = {'a': {'servers': 30}, 'b': {'servers': 40}}
        self.assertEqual('+33%', reference.versus(rows, 'b', 'a'))
        self.assertEqual('-25%', reference.versus(rows, 'a', 'b'))
        self.assertIsNone(reference.versus(rows, 'c', 'a'))


class CommandTest(base.TestCase):

    def main(self, *args):
        conf_file = os.path.join(self.tmp, 'resq.conf')
        with open(conf_file, 'w') as f:
            f.write('[resq_profiler]\nprofile_dir = %s\n' % self.tmp)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = evaluate_cmd.main(['--config-file', conf_file] + list(args))
        return rc, out.getvalue(), err.getvalue()

    def test_slo_targets_option(self):
        out_json = os.path.join(self.tmp, 'ev.json')
        rc, out, err = self.main(
            '--sets', 'insensitive', '--terms', '6', '--schemes',
            'agnostic,resq_greedy_paper', '--slo-targets', 'paper',
            '--json', out_json)
        self.assertEqual(0, rc, err)
        with open(out_json) as f:
            doc = json.load(f)
        self.assertEqual(['paper'], doc['config']['slo_targets'])
        self.assertEqual(['paper'], list(doc['setups']))
        self.assertIn('ResQ paper (NSDI 2018)', out)
        self.assertEqual(set(catalog.names(slosets.SETS['insensitive'])),
                         set(doc['profiles']['per_nf']))

    def test_bad_slo_targets_is_a_usage_error(self):
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), \
                contextlib.redirect_stderr(err):
            exc = self.assertRaises(SystemExit, evaluate_cmd.main,
                                    ['--slo-targets', 'tight'])
        self.assertEqual(2, exc.code)
        self.assertIn('--slo-targets', err.getvalue())
