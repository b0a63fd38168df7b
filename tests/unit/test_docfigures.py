"""Every figure the docs quote comes from figures.json, and that from a run.

(a) every ``:num:`` reference resolves in ``doc/source/figures.json``;
(b) regenerating each source of :mod:`resq_nova.evaluation.docfigures`
gives the committed figures (the drift tests, one per source);
(c) no page quotes a result figure outside ``:num:``;
(d) the recorded benchmark runs (``python -m benchmarks NAME --record``)
say when, where and at which commit they ran.
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


SRCDIR = os.path.join(ROOT, 'doc', 'source')


def _tree():
    """What the docs read: figures.json and the recorded runs."""
    return ext.load_tree(SRCDIR)


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

    def test_list_items_by_index(self):
        tree = {'b': {'rows': [{'plan': 21}, {'plan': 22}]}}
        self.assertEqual('22', ext.render(tree, 'b/rows/1/plan'))
        exc = self.assertRaises(ext.FigureError, ext.render, tree,
                                'b/rows/2/plan')
        self.assertIn('a list of 2, indexed from 0', str(exc))

    def test_missing_record_says_how_to_record(self):
        exc = self.assertRaises(ext.FigureError, ext.render,
                                {'bench': {}}, 'bench/milp/commit')
        self.assertIn('python -m benchmarks NAME --record', str(exc))
        self.assertIn('figures/bench-milp.json', str(exc))
        exc = self.assertRaises(ext.FigureError, ext.render, {}, 'x/y')
        self.assertIn('resq_nova.evaluation.docfigures', str(exc))

    def test_rows_table(self):
        tree = {'b': {'rows': [{'h': 30, 'g': 5.41}, {'h': 40, 'g': 0.0}]}}
        lines = ext.rows_table_lines(tree, 'b/rows', ['h', 'g|%.1f%%'],
                                     ['hosts', 'gap'])
        self.assertEqual(['.. list-table::', '   :header-rows: 1', '',
                          '   * - hosts', '     - gap',
                          '   * - 30', '     - 5.4%',
                          '   * - 40', '     - 0.0%'], lines)
        self.assertRaises(ext.FigureError, ext.rows_table_lines, tree,
                          'b/rows', ['x'], ['X'])
        exc = self.assertRaises(ext.FigureError, ext.rows_table_lines,
                                tree, 'b/rows/0', ['h'], ['H'])
        self.assertIn('not a list of rows', str(exc))

    def test_commands_are_set_as_code(self):
        self.assertTrue(ext.is_command('python -m benchmarks milp --small'))
        self.assertFalse(ext.is_command('2-CPU AMD EPYC'))

    def test_role_pattern(self):
        text = 'x :num:`a/b` and :num:`a/r|%.2fx` y'
        self.assertEqual([('a/b', ''), ('a/r', '%.2fx')],
                         ext.ROLE_RE.findall(text))


# The tables a directive fills: ``.. figures-rows-table:: PATH`` with its
# ``:columns:`` and ``:labels:``.
ROWS_TABLE_RE = re.compile(
    r'^\.\. figures-rows-table:: (\S+)\n'
    r'   :columns: (.*?)\n   :labels: (.*?)(?=\n\S|\n\n|\Z)',
    re.M | re.S)


def _option_list(text):
    return [c.strip() for c in text.replace('\n', ' ').split(',')]


class TestReferencesResolve(base.TestCase):
    """(a) Every ``:num:`` in the docs, the README and docstrings."""

    def test_every_reference_resolves(self):
        tree = _tree()
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

    def test_no_role_inside_a_literal(self):
        # ``:num:`a```: docutils leaves a role in a literal unrendered.
        for path in _sources_with_roles():
            self.assertIsNone(re.search(r'``:num:`[^`]', _read(path)), path)

    def test_every_rows_table_resolves(self):
        tree = _tree()
        seen = 0
        for path in _sources_with_roles():
            for match in ROWS_TABLE_RE.finditer(_read(path)):
                seen += 1
                columns = _option_list(match.group(2))
                labels = _option_list(match.group(3))
                self.assertEqual(len(columns), len(labels), path)
                lines = ext.rows_table_lines(tree, match.group(1), columns,
                                             labels)
                self.assertIn('.. list-table::', lines)
        self.assertGreater(seen, 0)

    def test_pages_use_the_role(self):
        for page in ('doc/source/admin/evaluation.rst',
                     'doc/source/admin/profiles.rst',
                     'doc/source/admin/admission.rst',
                     'doc/source/admin/slomo.rst',
                     'doc/source/admin/optimizer.rst'):
            self.assertIn(':num:`', _read(page), page)


def _bench_main():
    spec = importlib.util.spec_from_file_location(
        'bench_main', os.path.join(ROOT, 'benchmarks', '__main__.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench_main = _bench_main()


class TestRecords(base.TestCase):
    """The recorded benchmark runs (``python -m benchmarks NAME --record``)."""

    def test_every_record_says_when_where_and_what(self):
        paths = ext.record_paths(SRCDIR)
        self.assertNotEqual([], paths)
        for path in paths:
            with open(path) as f:
                record = json.load(f)
            name = os.path.relpath(path, ROOT)
            for key in ext.RECORD_KEYS:
                self.assertIn(key, record, name)
            self.assertRegex(record['recorded_at'], r'^\d{4}-\d{2}-\d{2}$',
                             name)
            self.assertRegex(record['commit'], r'^[0-9a-f]{40}$', name)
            for key in ('nproc', 'model', 'description'):
                self.assertIn(key, record['machine'], name)

    def test_records_are_under_bench(self):
        tree = _tree()
        names = sorted(os.path.basename(p)[len('bench-'):-len('.json')]
                       for p in ext.record_paths(SRCDIR))
        self.assertEqual(names, sorted(tree['bench']))
        self.assertIn('milp', names)
        self.assertIn('prediction', names)

    def test_figures_json_may_not_take_the_records_key(self):
        srcdir = self.useFixture(fixtures.TempDir()).path
        with open(os.path.join(srcdir, 'figures.json'), 'w') as f:
            json.dump({'bench': 1}, f)
        self.assertRaises(ext.FigureError, ext.load_tree, srcdir)

    def test_load_tree_without_records(self):
        srcdir = self.useFixture(fixtures.TempDir()).path
        with open(os.path.join(srcdir, 'figures.json'), 'w') as f:
            json.dump({'a': 1}, f)
        self.assertEqual({'a': 1, 'bench': {}}, ext.load_tree(srcdir))


class _FakeBenchmark(object):
    """A benchmark module: prints a table, then its JSON line."""

    def __init__(self, status=0, figures=None):
        self.status = status
        self.figures = figures
        self.argv = None

    def main(self, argv):
        self.argv = argv
        print('a table')
        if self.figures is not None:
            print(json.dumps(self.figures))
        print('a note after it')
        return self.status


class TestRecordFlag(base.TestCase):
    """``python -m benchmarks NAME --record``."""

    def setUp(self):
        super().setUp()
        self.root = self.useFixture(fixtures.TempDir()).path
        self.useFixture(fixtures.MockPatchObject(bench_main, 'ROOT',
                                                 self.root))
        self.useFixture(fixtures.MockPatchObject(
            bench_main, 'commit', lambda root=None: 'f' * 40))
        self.useFixture(fixtures.MockPatchObject(
            bench_main, 'modified', lambda root=None: False))
        self.out = self.useFixture(fixtures.MockPatch(
            'sys.stdout', io.StringIO())).mock
        self.err = self.useFixture(fixtures.MockPatch(
            'sys.stderr', io.StringIO())).mock

    def _run(self, argv, module):
        with mock.patch.object(bench_main.importlib, 'import_module',
                               return_value=module):
            return bench_main.main(argv)

    def _record(self, name):
        path = os.path.join(self.root, 'doc', 'source', 'figures',
                            'bench-%s.json' % name)
        with open(path) as f:
            return json.load(f)

    def test_last_json_object(self):
        text = 'x\n{"a": 1}\n[1, 2]\n{not json\n{"b": 2}\ndone\n'
        self.assertEqual({'b': 2}, bench_main.last_json_object(text))
        self.assertIsNone(bench_main.last_json_object('no json\n[1]\n'))

    def test_record_writes_figures_and_provenance(self):
        module = _FakeBenchmark(figures={'seconds': 1.5})
        self.assertEqual(0, self._run(['milp', '--record', '--small'],
                                      module))
        self.assertEqual(['--small'], module.argv)
        record = self._record('milp')
        self.assertEqual(1.5, record['seconds'])
        self.assertEqual('f' * 40, record['commit'])
        self.assertIs(False, record['modified'])
        self.assertRegex(record['recorded_at'], r'^\d{4}-\d{2}-\d{2}$')
        self.assertEqual(os.cpu_count(), record['machine']['nproc'])
        self.assertEqual('python -m benchmarks milp --small',
                         record['command'])
        self.assertIn('a table', self.out.getvalue())

    def test_record_is_named_by_the_benchmark_key(self):
        module = _FakeBenchmark(figures={'benchmark': 'optimizer_gap'})
        self.assertEqual(0, self._run(['optimizer', '--record'], module))
        self.assertEqual('optimizer_gap',
                         self._record('optimizer_gap')['benchmark'])
        self.assertEqual(0, self._run(
            ['optimizer', '--record-as', 'optimizer_gap_big'], module))
        self.assertEqual('optimizer_gap_big',
                         self._record('optimizer_gap_big')['benchmark'])

    def test_no_json_line_records_nothing(self):
        self.assertEqual(1, self._run(['milp', '--record'],
                                      _FakeBenchmark()))
        self.assertIn('printed no JSON object line', self.err.getvalue())
        self.assertFalse(os.path.exists(os.path.join(
            self.root, 'doc', 'source', 'figures')))

    def test_failed_benchmark_records_nothing(self):
        module = _FakeBenchmark(status=3, figures={'a': 1})
        self.assertEqual(3, self._run(['milp', '--record'], module))
        self.assertIn('nothing recorded', self.err.getvalue())

    def test_without_record_runs_as_before(self):
        module = _FakeBenchmark(figures={'a': 1})
        self.assertEqual(0, self._run(['milp', '--small'], module))
        self.assertFalse(os.path.exists(os.path.join(
            self.root, 'doc', 'source', 'figures')))

    def test_record_as_needs_a_name(self):
        self.assertEqual(2, bench_main.main(['milp', '--record-as']))

    def test_machine_reads_the_model_name(self):
        path = os.path.join(self.root, 'cpuinfo')
        with open(path, 'w') as f:
            f.write('processor\t: 0\nmodel name\t: Some CPU @ 2GHz\n')
        found = bench_main.machine(path)
        self.assertEqual('Some CPU @ 2GHz', found['model'])
        self.assertIn('Some CPU @ 2GHz', found['description'])
        self.assertEqual('unknown CPU',
                         bench_main.machine(path + '.none')['model'])


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

    def test_portable_kernels_are_asked_for_on_avx512_only(self):
        kernels = docfigures.PORTABLE_KERNELS
        avx512 = self.write_json(
            'avx512', 'processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f '
            'avx512bw\n')
        avx2 = self.write_json('avx2',
                               'processor\t: 0\nflags\t\t: fpu sse2 avx2\n')
        self.assertEqual(sorted(kernels),
                         docfigures.portable_kernels_missing({}, avx512))
        self.assertEqual([], docfigures.portable_kernels_missing(
            dict(kernels), avx512))
        self.assertEqual(['NPY_DISABLE_CPU_FEATURES'],
                         docfigures.portable_kernels_missing(
                             dict(kernels, NPY_DISABLE_CPU_FEATURES='X'),
                             avx512))
        self.assertEqual([], docfigures.portable_kernels_missing({}, avx2))
        self.assertEqual([], docfigures.portable_kernels_missing(
            {}, avx2 + '.none'))

    def test_the_test_environment_sets_the_portable_kernels(self):
        tox = _read('tox.ini')
        for name, value in docfigures.PORTABLE_KERNELS.items():
            self.assertIn('\n    %s=%s\n' % (name, value), tox)

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
        # On an AVX-512 CPU, NumPy's and OpenBLAS's own kernels would
        # move figures in their last digits: say so rather than report a
        # drift.
        missing = docfigures.portable_kernels_missing()
        if missing:
            self.fail('this CPU has AVX-512 and %s %s not set as '
                      'docfigures.PORTABLE_KERNELS says: the figures would '
                      'not be computed as they were made; run the tests '
                      'through tox (tox.ini sets them) or set them'
                      % (', '.join(missing),
                         'is' if len(missing) == 1 else 'are'))

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


#: Sources that take minutes each on a two-core machine (the profiler's
#: sweeps and the robustness study): ``tox -e drift`` checks them (it
#: sets RESQ_DRIFT_ALL=1); the default suite skips them to stay within
#: CI's time.
HEAVY = frozenset(['robustness', 'profiler', 'profiler_budget'])


def _drift_test(key):
    def test(self):
        if key in HEAVY and not os.environ.get('RESQ_DRIFT_ALL'):
            self.skipTest('the %r figures take minutes to regenerate: '
                          'tox -e drift checks them' % key)
        self._drift(key)
    test.__name__ = 'test_drift_%s' % key
    test.__doc__ = 'The committed %r figures match a run.' % key
    return test


for _key, _ in docfigures.SOURCES:
    setattr(TestDrift, 'test_drift_%s' % _key, _drift_test(_key))


# (c) Every page of the docs and the README, and what a result figure
# looks like there: ratios (1.07x), server and run counts, percentages
# with decimals, signed percentages, points of error, times per
# operation.
#
# Pages owned elsewhere, not scanned here:
OWNED_ELSEWHERE = ()


def _scanned_pages():
    paths = glob.glob(os.path.join(ROOT, 'doc', 'source', '**', '*.rst'),
                      recursive=True)
    pages = sorted(os.path.relpath(p, ROOT) for p in paths)
    return [p for p in pages if p not in OWNED_ELSEWHERE] + ['README.rst']


SCANNED_PAGES = _scanned_pages()

RESULT_FIGURE = re.compile(
    r'(?<![\w.])(?:'
    r'\d+(?:\.\d+)?x\b'                        # 1.07x
    r'|\d+(?:-\d+)? (?:servers|runs|measurements|predictions)\b'  # 32 runs
    r'|[+-]?\d+\.\d+ ?%'                       # 19.5%, 0.75%
    r'|[+-]\d+(?:\.\d+)? ?%'                   # +187%
    r'|\d+(?:\.\d+)? points\b'                 # 7.6 points
    r'|\d+(?:\.\d+)?% (?:of the (?:\w+ )?terms|violat)'  # 20% of the terms
    r'|\d+% (?:and|against) \d+%(?! noise)'   # 20% and 70%
    r'|\(\d+%L?\)'                              # a table's (70%)
    r'|\d+(?:\.\d+)?(?:-\d+(?:\.\d+)?)? ?(?:ms|s) per '
    r'(?:term|chain|query|request|plan)\b'        # 1.5 ms per term
    r'|peaks? (?:at )?\d[\d,]*(?:\.\d+)? ?[MG]B\b'  # peaks at 834 MB
    # Timings and memory as results are worded (settings are not: "every
    # 10 s", "(30 s by default)", "under 50 ms", "a 45 MB LLC"):
    r'|(?:about|some|around|roughly) \d[\d,]*(?:\.\d+)? ?'
    r'(?:ms|s|seconds|minutes|[MG]i?B)\b'         # about 15 ms, some 750 MB
    r'|\d+\.\d+-\d+(?:\.\d+)? ?(?:ms|s)\b'          # 0.3-0.5 s
    r'|\d+(?:\.\d+)? / \d+(?:\.\d+)? ?(?:ms|s)\b'   # 1.39 / 1.66 s
    r'|\d+\.\d+ ?(?:ms|s)(?= {2,}\d)'               # a table's 5.7 ms  8.1
    r'|\d+(?:\.\d+)? ?(?:ms|s) on (?:MariaDB|PostgreSQL|SQLite)\b'
    r'|\d[\d,]*(?:\.\d+)? ?[MG]i?B (?:of )?(?:resident|proportional|RSS)'
    r'|ratio (?:was|is|of) \d+\.\d+'              # ratio was 1.13
    r'|(?:\d+|two|three|four|five|six) 500s\b'      # three 500s
    r'|\bleft \d+ plans\b'                         # left 16 plans
    r')')

# What may stand there although it looks like a result: settings.
ALLOWED = (
    '0.5%',                # the default measurement noise, a setting
    'F test at 99.9%',     # the profiler's confidence level, a setting
    # resq-agent status's longest deadline, from the defaults
    'about 30 seconds with the defaults',
)

# Literal text (``...``), roles (our figures, :num:, and a paper's own,
# :paper:) and comments are not prose figures.
_NOT_PROSE = re.compile(r'``.*?``|:(?:num|paper):`[^`]*`|^\.\. .*$',
                        re.M)


def _without_literal_blocks(text):
    """``text`` without its literal blocks (after ``::``).

    They show commands and what they print, for the reader to recognise
    the output, not results the docs state.
    """
    kept, base = [], None
    for line in text.splitlines():
        indent = len(line) - len(line.lstrip())
        if base is not None:
            if not line.strip() or indent > base:
                kept.append('')
                continue
            base = None
        kept.append(line)
        # A paragraph's "::", not a directive's (``.. list-table::``).
        if line.rstrip().endswith('::') and not line.lstrip().startswith(
                '.. '):
            base = indent
    return '\n'.join(kept)


def result_figures(text):
    """The result-looking figures of ``text`` outside ``:num:`` roles."""
    prose = _NOT_PROSE.sub(' ', _without_literal_blocks(text))
    for allowed in ALLOWED:
        prose = prose.replace(allowed, ' ')
    return [m.group(0) for m in RESULT_FIGURE.finditer(prose)]


class TestNoHandCopiedFigures(base.TestCase):
    """(c) No figure of the evaluation's kind outside ``:num:``."""

    def test_scan_finds_figures(self):
        text = ('needs 32 servers, 1.29x the optimum; 19.5% of the terms '
                'and +187% servers; 7.6 points; 0.75% at worst; 20% of '
                'the mixed terms; 20% and 70%; 29 (70%); 1.5 ms per '
                'term, 0.14-0.2 s per chain; peaks at 834 MB; 261 '
                'predictions')
        self.assertEqual(['32 servers', '1.29x', '19.5%', '+187%',
                          '7.6 points', '0.75%', '20% of the mixed terms',
                          '20% and 70%', '(70%)', '1.5 ms per term',
                          '0.14-0.2 s per chain', 'peaks at 834 MB',
                          '261 predictions'],
                         result_figures(text))

    def test_scan_skips_a_papers_figures_and_literal_blocks(self):
        text = ('ResQ loses up to :paper:`14.7%` (Stats).\n\n'
                'Run it::\n\n    $ resq-plan\n    gap: 0.00%\n\n'
                'Then 1.07x the optimum.\n')
        self.assertEqual(['1.07x'], result_figures(text))

    def test_scan_reads_directives_content(self):
        text = ('.. list-table::\n\n   * - mixed\n     - 1.07x\n')
        self.assertEqual(['1.07x'], result_figures(text))

    def test_scan_skips_roles_literals_and_settings(self):
        text = (':num:`a/b` servers, ``--noise-pct 0.5``, 9 cores, '
                '18 ways, 200 terms, ResQ §6.2, Figure 10, 5% tolerance, '
                '90% of the solo peak, 0.5% noise, at 1% and 2% noise, '
                ':num:`a/r|%.2fx`')
        self.assertEqual([], result_figures(text))

    def test_scan_finds_timings_and_memory(self):
        text = ('reconcile from scratch 0.3-0.5 s, about 0.09 s; a '
                'transaction of about 15 ms on MariaDB, 5 ms on PostgreSQL; '
                'plans burst p50 / p99  1.39 / 1.66 s; some 750 MB of '
                'resident memory, 575 MB proportional; about 20 s to up; '
                'p50   5.7 ms    8.1 ms; the overhead ratio was 1.13; got '
                'three 500s and left 16 plans proposed')
        self.assertEqual(['0.3-0.5 s', 'about 0.09 s', 'about 15 ms',
                          '5 ms on PostgreSQL', '1.39 / 1.66 s',
                          'some 750 MB', '575 MB proportional',
                          'about 20 s', '5.7 ms', 'ratio was 1.13',
                          'three 500s', 'left 16 plans'],
                         result_figures(text))

    def test_scan_skips_timing_and_size_settings(self):
        text = ('the model is rebuilt every 10 s; ``[resq] '
                'cell_map_refresh_s``, 60 s by default; (30 s by default); '
                'target: under 1 ms; targets 2 s and 1 s; under 50 ms; a '
                '45 MiB L3, 20 ways of 2.25 MB; 1-30 MB; at most 1 MiB per '
                'period; a 60 s limit; at least 120 s; phases of 0.5 to 2 '
                'ms; 2 s out of every 5 s; a 64 MB buffer; a 16-way lease; '
                '``--timeout 30``, (about 30 seconds with the defaults)\n\n'
                '.. list-table::\n\n   * - chain\n     - 0.1 ms\n'
                '     - 10 ms\n')
        self.assertEqual([], result_figures(text))

    def test_every_page_is_scanned(self):
        for page in ('doc/source/admin/admission.rst',
                     'doc/source/admin/slomo.rst',
                     'doc/source/admin/optimizer.rst',
                     'doc/source/admin/evaluation.rst',
                     'doc/source/contributor/nf-model.rst', 'README.rst'):
            self.assertIn(page, SCANNED_PAGES)
        for page in OWNED_ELSEWHERE:
            self.assertNotIn(page, SCANNED_PAGES)
            self.assertTrue(os.path.exists(os.path.join(ROOT, page)), page)

    def test_pages_quote_no_hand_copied_figure(self):
        found = {}
        for page in SCANNED_PAGES:
            hits = result_figures(_read(page))
            if hits:
                found[page] = hits
        self.assertEqual({}, found, 'write these through :num: (see '
                         'doc/source/_exts/resq_figures.py)')
