"""resq_common is the floor: it imports nothing from the packages above.

Every package may import resq_common; resq_common must not reach up into
them, lazily or not: the profile and measurement errors live in
``resq_common.exception`` (``resq_profiler.exception`` re-exports them),
the profile document model in ``resq_common.profile``.
"""

import ast
import os

from resq_common import exception
from resq_profiler import exception as profiler_exception
from tests import base

FLOOR = os.path.dirname(os.path.abspath(exception.__file__))
ABOVE = ('resq_nova', 'resq_agent', 'resq_profiler', 'resq_tempest_plugin')


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

    def test_the_floor_imports_nothing_from_above(self):
        found = []
        for top, _dirs, files in os.walk(FLOOR):
            for name in files:
                if name.endswith('.py'):
                    path = os.path.join(top, name)
                    found += ['%s: %s' % (os.path.relpath(path, FLOOR), imp)
                              for imp in _imports(path)
                              if imp.split('.')[0] in ABOVE]
        self.assertEqual([], found)

    def test_the_profilers_names_are_the_floors_classes(self):
        for name in ('UnknownNF', 'InvalidProfile', 'ProfileNotFound',
                     'ProfileStoreError', 'TargetUnreachable',
                     'MeasurementError', 'ResctrlError', 'ResQException'):
            self.assertIs(getattr(exception, name),
                          getattr(profiler_exception, name), name)
