"""resq_common is the floor: it raises its own exceptions.

Every package may import resq_common; resq_common must not reach up into
them for its exceptions (the profile and measurement errors live in
``resq_common.exception``; ``resq_profiler.exception`` re-exports them).
"""

import ast
import os

from resq_common import exception
from resq_profiler import exception as profiler_exception
from tests import base

FLOOR = os.path.dirname(os.path.abspath(exception.__file__))


def _imports(path):
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                yield '%s.%s' % (node.module, alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name


class LayeringTest(base.TestCase):

    def test_the_floor_imports_no_exceptions_from_above(self):
        found = []
        for top, _dirs, files in os.walk(FLOOR):
            for name in files:
                if name.endswith('.py'):
                    path = os.path.join(top, name)
                    found += ['%s: %s' % (os.path.relpath(path, FLOOR), imp)
                              for imp in _imports(path)
                              if imp.startswith(('resq_profiler.exception',
                                                 'resq_nova.', 'resq_agent.'))
                              and 'exception' in imp]
        self.assertEqual([], found)

    def test_the_profilers_names_are_the_floors_classes(self):
        for name in ('UnknownNF', 'InvalidProfile', 'ProfileNotFound',
                     'ProfileStoreError', 'TargetUnreachable',
                     'MeasurementError', 'ResctrlError', 'ResQException'):
            self.assertIs(getattr(exception, name),
                          getattr(profiler_exception, name), name)
