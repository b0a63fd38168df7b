"""Every figure the docs quote comes from figures.json, and that from a run.

(a) every ``:num:`` reference resolves in ``doc/source/figures.json``;
(b) regenerating each source of :mod:`resq_nova.evaluation.docfigures`
gives the committed figures (the drift tests, one per source);
(c) the evaluation's pages quote no result figure outside ``:num:``.
"""

import glob
import importlib.util
import io
import json
import os
import re
from unittest import mock

import fixtures

from resq_nova.evaluation import docfigures
from tests import base

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
FIGURES = os.path.join(ROOT, 'doc', 'source', 'figures.json')


def _extension():
    spec = importlib.util.spec_from_file_location(
        'resq_figures', os.path.join(ROOT, 'doc', 'source', '_exts',
                                     'resq_figures.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ext = _extension()


def _committed():
    with open(FIGURES) as f:
        return json.load(f)


def _read(path):
    with open(os.path.join(ROOT, path)) as f:
        return f.read()


# Where ``:num:`` may be used: every page, the README and the docstrings
# of the evaluation.
def _sources_with_roles():
    paths = glob.glob(os.path.join(ROOT, 'doc', 'source', '**', '*.rst'),
                      recursive=True)
    paths += [os.path.join(ROOT, 'README.rst')]
    paths += glob.glob(os.path.join(ROOT, 'resq_nova', 'evaluation',
                                    '*.py'))
    return sorted(os.path.relpath(p, ROOT) for p in paths)


class TestRole(base.TestCase):
    """The role's grammar and rendering."""

    TREE = {'a': {'b': 32, 'r': 1.0667, 's': '+37.1%', 'n': None,
                  'l': [1, 2]}}

    def test_plain_values(self):
        self.assertEqual('32', ext.render(self.TREE, 'a/b'))
        self.assertEqual('1.0667', ext.render(self.TREE, 'a/r'))
        self.assertEqual('+37.1%', ext.render(self.TREE, 'a/s'))

    def test_format_with_literal_text(self):
        self.assertEqual('1.07x', ext.render(self.TREE, 'a/r|%.2fx'))
        self.assertEqual('+32%', ext.render(self.TREE, 'a/b|%+d%%'))

    def test_unknown_path_names_the_missing_key(self):
        exc = self.assertRaises(ext.FigureError, ext.render, self.TREE,
                                'a/c')
        self.assertIn("no key 'c' under 'a'", str(exc))
        self.assertIn('there: b, l, n, r, s', str(exc))

    def test_not_a_number(self):
        for path in ('a', 'a/n', 'a/l'):
            self.assertRaises(ext.FigureError, ext.render, self.TREE, path)

    def test_bad_format(self):
        exc = self.assertRaises(ext.FigureError, ext.render, self.TREE,
                                'a/s|%d')
        self.assertIn("does not take the format '%d'", str(exc))

    def test_servers_cell(self):
        row = {'servers': 29, 'violation_pct': 70.5,
               'throughput_violation_pct': 69.0}
        self.assertEqual('29 (70.5%)', ext.servers_cell(row))
        row['throughput_violation_pct'] = 0.0
        self.assertEqual('29 (70.5%L)', ext.servers_cell(row))
        row['violation_pct'] = 0.0
        self.assertEqual('29', ext.servers_cell(row))

    def test_servers_table(self):
        row = {'servers': 30, 'violation_pct': 0.0,
               'throughput_violation_pct': 0.0}
        tree = {'e': {'mixed': {'a': row}}}
        lines = ext.servers_table_lines(tree, 'e', ['a'], ['A'])
        self.assertEqual(['.. list-table::', '   :header-rows: 1', '',
                          '   * - set', '     - A', '   * - mixed',
                          '     - 30'], lines)
        self.assertRaises(ext.FigureError, ext.servers_table_lines, tree,
                          'e', ['b'], ['B'])

    def test_role_pattern(self):
        text = 'x :num:`a/b` and :num:`a/r|%.2fx` y'
        self.assertEqual([('a/b', ''), ('a/r', '%.2fx')],
                         ext.ROLE_RE.findall(text))


class TestReferencesResolve(base.TestCase):
    """(a) Every ``:num:`` in the docs, the README and docstrings."""

    def test_every_reference_resolves(self):
        tree = _committed()
        bad, seen = [], 0
        for path in _sources_with_roles():
            for match in ext.ROLE_RE.finditer(_read(path)):
                seen += 1
                try:
                    ext.render(tree, match.group(0)[6:-1])
                except ext.FigureError as exc:
                    bad.append('%s: %s' % (path, exc))
        self.assertEqual([], bad)
        # The converted pages do quote figures through the role.
        self.assertGreater(seen, 100)

    def test_pages_use_the_role(self):
        for page in ('doc/source/admin/evaluation.rst',
                     'doc/source/admin/profiles.rst'):
            self.assertIn(':num:`', _read(page), page)


class TestTree(base.TestCase):
    """The generator's helpers and ``--check``."""

    def test_rounded(self):
        self.assertEqual({'a': [0.1235, 3, 'x']},
                         docfigures.rounded({'a': (0.123456, 3, 'x')}))

    def test_differences_name_paths(self):
        old = {'e': {'s': 1, 'r': 1.0, 'gone': 2}}
        new = {'e': {'s': 2, 'r': 1.0, 'new': 3}}
        self.assertEqual(['e/gone', 'e/new', 'e/s'],
                         docfigures.differences(old, new))
        self.assertEqual([], docfigures.differences(old, old))

    def test_lookup(self):
        self.assertEqual(1, docfigures.lookup({'a': {'b': 1}}, 'a/b'))
        exc = self.assertRaises(KeyError, docfigures.lookup, {'a': {}},
                                'a/b')
        self.assertIn("no 'b' under 'a'", str(exc))

    def _check(self, committed, generated):
        path = os.path.join(self.tmp, 'figures.json')
        with open(path, 'w') as f:
            json.dump(committed, f)
        sources = [('fake', lambda progress=None: generated)]
        err = io.StringIO()
        with mock.patch.object(docfigures, 'SOURCES', sources), \
                mock.patch('sys.stderr', err), \
                mock.patch('sys.stdout', io.StringIO()):
            status = docfigures.main(['--check', '--output', path])
        return status, err.getvalue()

    def test_check_passes_when_equal(self):
        status, err = self._check({'fake': {'a': 1}, 'other': 2},
                                  {'a': 1})
        self.assertEqual(0, status, err)

    def test_check_fails_naming_paths(self):
        status, err = self._check({'fake': {'a': 1, 'b': {'c': 2.0}}},
                                  {'a': 1, 'b': {'c': 2.5}})
        self.assertEqual(1, status)
        self.assertIn('fake/b/c differs', err)
        self.assertIn('has 2.0, a run gives 2.5', err)
        self.assertNotIn('fake/a', err)

    def test_writes_only_the_named_source(self):
        path = os.path.join(self.tmp, 'figures.json')
        with open(path, 'w') as f:
            json.dump({'fake': 0, 'kept': 1}, f)
        sources = [('fake', lambda progress=None: {'v': 0.123456})]
        with mock.patch.object(docfigures, 'SOURCES', sources), \
                mock.patch('sys.stdout', io.StringIO()), \
                mock.patch('sys.stderr', io.StringIO()):
            self.assertEqual(0, docfigures.main(
                ['--only', 'fake', '--output', path]))
        with open(path) as f:
            self.assertEqual({'fake': {'v': 0.1235}, 'kept': 1},
                             json.load(f))

    def test_unknown_source(self):
        with mock.patch('sys.stderr', io.StringIO()):
            self.assertRaises(SystemExit, docfigures.main,
                              ['--only', 'nope', '--check'])

    def test_variants_agree_with_the_evaluation(self):
        # The robustness runs' default variant is the evaluation's own
        # run: the same profiles, sets and schemes give the same rows.
        tree = _committed()
        default = tree['robustness']['default']
        for set_name in ('sensitive', 'insensitive', 'mixed'):
            for scheme, row in default[set_name].items():
                ours = tree['evaluation']['binding'][set_name][scheme]
                for key in ('servers', 'violation_pct'):
                    self.assertEqual(ours[key], row[key],
                                     '%s/%s/%s' % (set_name, scheme, key))
            agnostic = default[set_name]['agnostic']
            self.assertEqual(agnostic['violated_terms'],
                             sum(agnostic['violated_by_nf'].values()))

    def test_committed_file_has_every_source(self):
        self.assertEqual(sorted(k for k, _ in docfigures.SOURCES),
                         sorted(_committed()))


# Seconds a drift test may take (a source takes one to two minutes of
# CPU; the suite's OS_TEST_TIMEOUT is shorter).
DRIFT_TIMEOUT_S = 900


class TestDrift(base.TestCase):
    """(b) A run of each source gives the committed figures.

    One test per entry of ``docfigures.SOURCES`` (added below), so a
    source added there is checked too; each runs that source's code in
    full on its defaults.
    """

    def setUp(self):
        super().setUp()
        # A source runs the evaluation's code in full: longer than the
        # suite's per-test timeout on a busy two-core machine.
        self.useFixture(fixtures.Timeout(DRIFT_TIMEOUT_S, gentle=True))

    def _drift(self, key):
        committed = _committed()
        self.assertIn(key, committed,
                      '%s has no %r; write it with python -m '
                      'resq_nova.evaluation.docfigures --only %s'
                      % (FIGURES, key, key))
        fresh = docfigures.generate([key])
        diff = docfigures.differences(committed[key], fresh[key], key)
        self.assertEqual(
            [], diff, 'figures that no longer match a run (regenerate '
            'with python -m resq_nova.evaluation.docfigures and review '
            'the docs that quote them)')


def _drift_test(key):
    def test(self):
        self._drift(key)
    test.__name__ = 'test_drift_%s' % key
    test.__doc__ = 'The committed %r figures match a run.' % key
    return test


for _key, _ in docfigures.SOURCES:
    setattr(TestDrift, 'test_drift_%s' % _key, _drift_test(_key))


# (c) The pages whose figures are the evaluation's, and what a result
# figure looks like there: ratios (1.07x), server and run counts,
# percentages with decimals, signed percentages, points of error.
SCANNED_PAGES = (
    'doc/source/admin/evaluation.rst',
    'doc/source/admin/profiles.rst',
    'doc/source/admin/profiler-budget.rst',
    'README.rst',
)

RESULT_FIGURE = re.compile(
    r'(?<![\w.])(?:'
    r'\d+(?:\.\d+)?x\b'                        # 1.07x
    r'|\d+(?:-\d+)? (?:servers|runs|measurements)\b'   # 32 servers
    r'|[+-]?\d+\.\d+ ?%'                       # 19.5%, 0.75%
    r'|[+-]\d+(?:\.\d+)? ?%'                   # +187%
    r'|\d+(?:\.\d+)? points\b'                 # 7.6 points
    r'|\d+(?:\.\d+)?% (?:of the (?:\w+ )?terms|violat)'  # 20% of the terms
    r'|\d+% (?:and|against) \d+%(?! noise)'   # 20% and 70%
    r'|\(\d+%L?\)'                              # a table's (70%)
    r')')

# What may stand there although it looks like a result: the paper's own
# figures (kept in resq_nova/evaluation/reference.py) and settings.
ALLOWED = (
    '0.5%',                # the default measurement noise, a setting
    'F test at 99.9%',     # the profiler's confidence level, a setting
)

# Literal text (``...``), roles and comments are not prose figures.
_NOT_PROSE = re.compile(r'``.*?``|:num:`[^`]*`|^\.\. .*$', re.M)


def result_figures(text):
    """The result-looking figures of ``text`` outside ``:num:`` roles."""
    prose = _NOT_PROSE.sub(' ', text)
    for allowed in ALLOWED:
        prose = prose.replace(allowed, ' ')
    return [m.group(0) for m in RESULT_FIGURE.finditer(prose)]


class TestNoHandCopiedFigures(base.TestCase):
    """(c) No figure of the evaluation's kind outside ``:num:``."""

    def test_scan_finds_figures(self):
        text = ('needs 32 servers, 1.29x the optimum; 19.5% of the terms '
                'and +187% servers; 7.6 points; 0.75% at worst; 20% of '
                'the mixed terms; 20% and 70%; 29 (70%)')
        self.assertEqual(['32 servers', '1.29x', '19.5%', '+187%',
                          '7.6 points', '0.75%', '20% of the mixed terms',
                          '20% and 70%', '(70%)'],
                         result_figures(text))

    def test_scan_skips_roles_literals_and_settings(self):
        text = (':num:`a/b` servers, ``--noise-pct 0.5``, 9 cores, '
                '18 ways, 200 terms, ResQ §6.2, Figure 10, 5% tolerance, '
                '90% of the solo peak, 0.5% noise, at 1% and 2% noise, '
                ':num:`a/r|%.2fx`')
        self.assertEqual([], result_figures(text))

    def test_pages_quote_no_hand_copied_figure(self):
        found = {}
        for page in SCANNED_PAGES:
            hits = result_figures(_read(page))
            if hits:
                found[page] = hits
        self.assertEqual({}, found, 'write these through :num: (see '
                         'doc/source/_exts/resq_figures.py)')
