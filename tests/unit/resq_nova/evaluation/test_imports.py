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
"""The evaluation package's modules import one another one way, at top.

The layering is described in :mod:`resq_nova.evaluation`'s docstring.
This test reads the sources with :mod:`ast` (nothing is imported) and
fails, naming the file, the line and the module, on an import of one of
the package's modules or of the repository's ``benchmarks/`` inside a
function (the way a cycle used to be dodged), on any import of
``benchmarks`` (not part of the installed package), and on a cycle
between the package's modules (every import counted, wherever it is).
"""

import ast
import os

import fixtures
from oslotest import base

import resq_nova.evaluation

PACKAGE = 'resq_nova.evaluation'
DIRECTORY = os.path.dirname(os.path.abspath(resq_nova.evaluation.__file__))
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
IMPORTERS = ('import_module', '__import__')


def _is_benchmarks(name):
    return name == 'benchmarks' or name.startswith('benchmarks.')


def _targets(node, modules):
    """What an import node imports: ``[(kind, name)]``.

    ``kind`` is ``"evaluation"`` (``name`` a module of the package) or
    ``"benchmarks"`` (``name`` the dotted name imported).
    """
    found = []

    def dotted(name):
        if _is_benchmarks(name):
            found.append(('benchmarks', name))
        elif name.startswith(PACKAGE + '.'):
            found.append(('evaluation', name[len(PACKAGE) + 1:]
                          .split('.')[0]))

    if isinstance(node, ast.Import):
        for alias in node.names:
            dotted(alias.name)
    elif isinstance(node, ast.ImportFrom):
        if node.level:
            # Relative: ``from . import x`` or ``from .x import y``
            # (every module of the package is at its top level).
            base_name = PACKAGE + ('.' + node.module if node.module else '')
        else:
            base_name = node.module or ''
        if base_name == PACKAGE:
            found.extend(('evaluation', alias.name) for alias in node.names
                         if alias.name in modules)
        elif _is_benchmarks(base_name):
            found.extend(('benchmarks', '%s.%s' % (base_name, alias.name))
                         for alias in node.names)
        else:
            dotted(base_name)
    elif (isinstance(node, ast.Call) and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
            and getattr(node.func, 'attr',
                        getattr(node.func, 'id', None)) in IMPORTERS):
        dotted(node.args[0].value)
    return found


def _walk(node, function=None):
    """``(node, enclosing function's name or None)`` at any nesting."""
    for child in ast.iter_child_nodes(node):
        inner = function
        if isinstance(child, FUNCTIONS):
            inner = getattr(child, 'name', '<lambda>')
        yield child, function
        yield from _walk(child, inner)


def imports(directory=DIRECTORY):
    """Every import of a package module or of ``benchmarks``.

    :param directory: the package's directory (a copy of it in the tests).
    :returns: ``[(module, line, kind, name, function or None)]``, ``kind``
        and ``name`` as :func:`_targets` gives them.
    """
    modules = sorted(f[:-3] for f in os.listdir(directory)
                     if f.endswith('.py'))
    result = []
    for module in modules:
        path = os.path.join(directory, module + '.py')
        with open(path, encoding='utf-8') as f:
            tree = ast.parse(f.read(), path)
        for node, function in _walk(tree):
            for kind, name in _targets(node, modules):
                result.append((module, node.lineno, kind, name, function))
    return result


def _components(edges):
    """The strongly connected components of ``edges`` (Tarjan's)."""
    index, low, stack, on_stack, result = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            result.append(component)

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return result


def _cycle(edges, component):
    """A cycle through ``component``'s first module, inside it."""
    path = [min(component)]
    while True:
        # Every module of a component imports another of it: the walk
        # meets its own path again.
        nxt = sorted(w for w in edges.get(path[-1], ()) if w in component)
        back = [w for w in nxt if w in path]
        if back:
            first = min(back, key=path.index)
            return path[path.index(first):] + [first]
        path.append(nxt[0])


def cycles(edges):
    """Each group of modules that import one another, directly or not.

    :returns: ``[(sorted modules, a cycle through them)]``; ``[]``
        without a cycle.
    """
    return [(sorted(c), _cycle(edges, c))
            for c in _components(edges) if len(c) > 1]


def problems(directory=DIRECTORY):
    """What breaks the package's layering, as messages naming it."""
    found = []
    edges = {}
    for module, line, kind, name, function in imports(directory):
        where = '%s/%s.py:%d' % (PACKAGE.replace('.', '/'), module, line)
        if kind == 'benchmarks':
            found.append('%s: imports %s; benchmarks/ is not part of the '
                         'installed package: move what it needs into the '
                         'package (or resq_profiler) and import it from '
                         'there' % (where, name))
        elif function:
            found.append('%s: imports %s.%s inside %s(); imports go at '
                         'the module top (a cycle to dodge means a piece '
                         'sits in the wrong module)'
                         % (where, PACKAGE, name, function))
        if kind == 'evaluation' and name != module:
            edges.setdefault(module, {}).setdefault(name, line)
    for modules, cycle in cycles(edges):
        found.append('import cycle between %s modules %s, e.g. %s' % (
            PACKAGE, ', '.join(modules), ' -> '.join(
                '%s (line %d)' % (a, edges[a][b])
                for a, b in zip(cycle, cycle[1:])) + ' -> ' + cycle[-1]))
    return found


class EvaluationImportsTest(base.BaseTestCase):

    def test_imports_run_one_way_at_module_top(self):
        self.assertEqual([], problems())

    def test_finds_the_package_imports(self):
        # The reader sees the package's imports at all, e.g. run's.
        found = {(m, n) for m, _, k, n, _ in imports()
                 if k == 'evaluation'}
        self.assertIn(('run', 'reference'), found)
        self.assertIn(('docfigures', 'prediction'), found)


class CheckerTest(base.BaseTestCase):
    """:func:`problems` on small packages written for the purpose."""

    def _package(self, **sources):
        directory = self.useFixture(fixtures.TempDir()).path
        for name, text in sources.items():
            with open(os.path.join(directory, name + '.py'), 'w') as f:
                f.write(text)
        return directory

    def test_clean(self):
        d = self._package(
            a='import os\n',
            b='from resq_nova.evaluation import a\n',
            c='from resq_nova.evaluation import a\n'
              'from resq_nova.evaluation import b as bm\n')
        self.assertEqual([], problems(d))

    def test_import_inside_a_function(self):
        d = self._package(
            a='def f():\n    if True:\n'
              '        from resq_nova.evaluation import b\n',
            b='import os\n')
        self.assertEqual(
            ['resq_nova/evaluation/a.py:3: imports resq_nova.evaluation.b '
             'inside f(); imports go at the module top (a cycle to dodge '
             'means a piece sits in the wrong module)'], problems(d))

    def test_every_spelling_counts(self):
        d = self._package(
            a='import resq_nova.evaluation.b\n'
              'from resq_nova.evaluation.c import X\n'
              'from . import d\n'
              'import importlib\n'
              'def f():\n'
              '    return importlib.import_module("resq_nova.evaluation.e")\n',
            b='', c='', d='', e='')
        self.assertEqual(
            [('a', 'b', None), ('a', 'c', None), ('a', 'd', None),
             ('a', 'e', 'f')],
            [(m, n, fn) for m, _, _, n, fn in imports(d)])

    def test_benchmarks(self):
        for text in ('from benchmarks import profiler\n',
                     'import benchmarks.prediction\n',
                     'class C:\n    def m(self):\n'
                     '        from benchmarks.profiler import run\n'):
            found = problems(self._package(a=text))
            self.assertEqual(1, len(found), found)
            self.assertIn('a.py', found[0])
            self.assertIn('imports benchmarks', found[0])

    def test_cycle_names_its_edges(self):
        d = self._package(
            a='from resq_nova.evaluation import b\n',
            b='import os\n\nfrom resq_nova.evaluation import c\n',
            c='def f():\n    from resq_nova.evaluation import a\n')
        found = problems(d)
        self.assertIn('import cycle between resq_nova.evaluation modules '
                      'a, b, c, e.g. a (line 1) -> b (line 3) -> c (line 2) '
                      '-> a', found)

    def test_every_cycle_is_named(self):
        d = self._package(
            a='from resq_nova.evaluation import b\n',
            b='from resq_nova.evaluation import a\n',
            c='from resq_nova.evaluation import d\n',
            d='from resq_nova.evaluation import c\n'
              'from resq_nova.evaluation import a\n')
        self.assertEqual(
            ['import cycle between resq_nova.evaluation modules a, b, '
             'e.g. a (line 1) -> b (line 1) -> a',
             'import cycle between resq_nova.evaluation modules c, d, '
             'e.g. c (line 1) -> d (line 1) -> c'], sorted(problems(d)))
