"""The planner as one pipeline (issue 34, item 3).

A snapshot goes down the stages once: snapshot -> bound -> heuristic ->
model (the MILP) -> neighbourhood (the MILP by areas) -> ordering, and
only the planner runs them. These tests
read the optimizer's sources (no import) and hold that shape.
"""

import ast
import os

import resq_nova.optimizer as optimizer_pkg
from tests import base

PACKAGE = 'resq_nova.optimizer'
ROOT = os.path.dirname(optimizer_pkg.__file__)
# What every stage may use: the snapshot and the shared pieces.
SHARED = ('snapshot', 'common', 'highs')
# The stages, in the order a snapshot meets them.
STAGES = ('bound', 'heuristic', 'model', 'neighbourhood', 'ordering')
MAX_LINES = 100
# Functions past MAX_LINES in files whose owner was busy changing them
# when this test came (issue 34): split them when next there.
KNOWN_LONG = set()


def _sources():
    for name in sorted(os.listdir(ROOT)):
        if name.endswith('.py'):
            with open(os.path.join(ROOT, name)) as f:
                yield name, ast.parse(f.read(), name)


def _imports(tree):
    """Optimizer modules ``tree`` imports, anywhere (functions too)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == PACKAGE:
                found.update(a.name for a in node.names)
            elif node.module.startswith(PACKAGE + '.'):
                found.add(node.module[len(PACKAGE) + 1:].split('.')[0])
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith(PACKAGE + '.'):
                    found.add(a.name[len(PACKAGE) + 1:].split('.')[0])
    return found


def graph():
    return {name[:-3]: _imports(tree) for name, tree in _sources()}


class PipelineTest(base.TestCase):

    def test_stages_import_no_later_stage_nor_the_planner(self):
        g = graph()
        for i, stage in enumerate(STAGES):
            later = set(STAGES[i + 1:]) | {'planner'}
            self.assertEqual(set(), g[stage] & later,
                             '%s imports a later stage' % stage)
            # Nor an earlier one: the planner alone runs the stages.
            self.assertLessEqual(g[stage], set(SHARED), stage)
        for shared in SHARED:
            self.assertEqual(set(), g[shared] & (set(STAGES) | {'planner'}),
                             '%s imports a stage' % shared)

    def test_the_planner_runs_every_stage(self):
        self.assertLessEqual(set(STAGES), graph()['planner'])

    def test_no_import_cycle(self):
        g = graph()
        state = {}

        def visit(mod, path):
            state[mod] = 'open'
            for dep in sorted(g.get(mod, ())):
                if dep not in g:
                    continue
                if state.get(dep) == 'open':
                    self.fail('import cycle: %s'
                              % ' -> '.join(path + [mod, dep]))
                if dep not in state:
                    visit(dep, path + [mod])
            state[mod] = 'done'

        for mod in sorted(g):
            if mod not in state:
                visit(mod, [])

    def test_no_function_past_a_hundred_lines(self):
        long = set()
        for name, tree in _sources():
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef,
                                     ast.AsyncFunctionDef)):
                    if node.end_lineno - node.lineno + 1 > MAX_LINES:
                        long.add((name, node.name))
        self.assertEqual(set(), long - KNOWN_LONG)
