"""Nova's internals are imported in one module only.

resq-nova's packages may import from Nova only its public plugin
interfaces (``PUBLIC_INTERFACES`` in :mod:`resq_nova.nova.internals`);
everything else goes through that module, whose wrappers the functional
test ``tests/functional/test_nova_internals.py`` checks against each
supported Nova. This test reads the sources (Nova is not installed in the
unit test environment) and fails naming the file, the line and the Nova
name.
"""

import ast
import os
import re

from oslotest import base

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
PACKAGES = ('resq_common', 'resq_nova', 'resq_agent', 'resq_profiler',
            'resq_tempest_plugin')
INTERNALS = os.path.join('resq_nova', 'nova', 'internals.py')


def _read(relpath):
    with open(os.path.join(ROOT, relpath), encoding='utf-8') as f:
        return f.read()


def public_interfaces():
    """``PUBLIC_INTERFACES`` of internals.py, read without importing it."""
    for node in ast.parse(_read(INTERNALS)).body:
        if (isinstance(node, ast.Assign)
                and [t.id for t in node.targets
                     if isinstance(t, ast.Name)] == ['PUBLIC_INTERFACES']):
            return {k: set(v) for k, v in ast.literal_eval(node.value).items()}
    raise AssertionError('%s has no PUBLIC_INTERFACES' % INTERNALS)


def _is_nova(module):
    return module == 'nova' or (module or '').startswith('nova.')


def _imports(tree):
    """``(line, full name, bound name or None)`` of each Nova import."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _is_nova(alias.name):
                    yield node.lineno, alias.name, None
        elif (isinstance(node, ast.ImportFrom) and node.level == 0
                and _is_nova(node.module)):
            for alias in node.names:
                yield (node.lineno, '%s.%s' % (node.module, alias.name),
                       alias.asname or alias.name)
        elif (isinstance(node, ast.Call) and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
                and _is_nova(node.args[0].value)
                and getattr(node.func, 'attr', getattr(node.func, 'id', ''))
                in ('import_module', '__import__', 'import_class',
                    'import_object')):
            yield node.lineno, node.args[0].value, None


def check_source(relpath, source, public):
    """The Nova internals ``source`` uses, as one message per use."""
    tree = ast.parse(source, relpath)
    errors = []
    modules = {}
    for line, name, bound in _imports(tree):
        module, _, attr = name.rpartition('.')
        if bound and name in public:
            modules[bound] = (name, line)
        elif not (bound and module in public and attr in public[module]):
            errors.append(
                '%s:%d uses %s, a Nova internal: call it through a wrapper '
                'in %s (checked by tests/functional/test_nova_internals.py), '
                'or import only %s' % (relpath, line, name, INTERNALS,
                                       ', '.join(sorted(
                                           '%s.%s' % (m, n)
                                           for m, names in public.items()
                                           for n in sorted(names)))))
    attrs = set()
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in modules):
            attrs.add(id(node.value))
            module, line = modules[node.value.id]
            if node.attr not in public[module]:
                errors.append('%s:%d uses %s.%s, a Nova internal: only %s '
                              'of %s is a public interface; wrap it in %s'
                              % (relpath, node.lineno, module, node.attr,
                                 ', '.join(sorted(public[module])), module,
                                 INTERNALS))
    for node in ast.walk(tree):
        if (isinstance(node, ast.Name) and node.id in modules
                and id(node) not in attrs):
            errors.append('%s:%d uses the module %s as a whole; use only '
                          'its public names (%s)' % (
                              relpath, node.lineno, modules[node.id][0],
                              ', '.join(sorted(public[modules[node.id][0]]))))
    return errors


def package_sources():
    for package in PACKAGES:
        for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT,
                                                                 package)):
            dirnames[:] = sorted(d for d in dirnames if d != '__pycache__')
            for filename in sorted(filenames):
                if filename.endswith('.py'):
                    yield os.path.relpath(os.path.join(dirpath, filename),
                                          ROOT)


class NovaImportsTest(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.public = public_interfaces()

    def test_no_module_but_internals_uses_a_nova_internal(self):
        errors = []
        nova_users = set()
        for relpath in package_sources():
            if relpath == INTERNALS:
                continue
            source = _read(relpath)
            errors.extend(check_source(relpath, source, self.public))
            if any(True for _ in _imports(ast.parse(source))):
                nova_users.add(relpath)
        self.assertEqual([], errors, '\n'.join(errors))
        # The walk saw the plugins that subclass Nova's public bases.
        self.assertLessEqual(
            {os.path.join('resq_nova', 'nova', 'scheduler', 'filters.py'),
             os.path.join('resq_nova', 'nova', 'scheduler', 'weights.py'),
             os.path.join('resq_nova', 'nova', 'extra_spec_validators.py')},
            nova_users)

    def test_public_interfaces_are_the_plugin_bases(self):
        self.assertEqual(
            {'nova.scheduler.filters': {'BaseHostFilter'},
             'nova.scheduler.weights': {'BaseHostWeigher'},
             'nova.api.validation.extra_specs.base': {'ExtraSpecValidator'}},
            self.public)

    def test_an_internal_import_is_refused(self):
        errors = check_source('x.py', 'from nova.virt import hardware\n',
                              self.public)
        self.assertEqual(1, len(errors))
        self.assertIn('x.py:1 uses nova.virt.hardware, a Nova internal',
                      errors[0])
        self.assertIn(INTERNALS, errors[0])
        for source in ('import nova.scheduler.utils\n',
                       'from nova import exception\n',
                       'from nova.scheduler.filters import utils\n',
                       'import importlib\n'
                       'importlib.import_module("nova.virt.hardware")\n'):
            self.assertEqual(1, len(check_source('x.py', source,
                                                 self.public)), source)

    def test_an_internal_name_of_a_public_module_is_refused(self):
        source = ('from nova.scheduler import filters\n'
                  'class F(filters.BaseHostFilter):\n'
                  '    pass\n'
                  'x = filters.utils.aggregate_values_from_key\n'
                  'y = filters\n')
        errors = check_source('x.py', source, self.public)
        self.assertEqual(2, len(errors), errors)
        self.assertIn('x.py:4 uses nova.scheduler.filters.utils', errors[0])
        self.assertIn('x.py:5 uses the module nova.scheduler.filters as a '
                      'whole', errors[1])

    def test_public_interfaces_pass(self):
        source = ('from nova.scheduler import filters\n'
                  'from nova.scheduler.weights import BaseHostWeigher\n'
                  'from nova.api.validation.extra_specs import base\n'
                  'class F(filters.BaseHostFilter):\n'
                  '    pass\n'
                  'class V(base.ExtraSpecValidator):\n'
                  '    pass\n'
                  'from resq_nova.nova import internals\n')
        self.assertEqual([], check_source('x.py', source, self.public))

    def test_each_wrapper_says_what_it_wraps_and_since_when(self):
        tree = ast.parse(_read(INTERNALS))
        functions = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
        self.assertGreater(len(functions), 0)
        for func in functions:
            doc = ast.get_docstring(func) or ''
            self.assertRegex(doc, r'``nova\.[a-z_.]+[A-Za-z_]+',
                             '%s: the docstring names no Nova symbol'
                             % func.name)
            self.assertTrue(re.search(r'Nova\s+\d+\s+\(', doc),
                            '%s: the docstring says not since which Nova '
                            'release ("Nova NN (series)")' % func.name)
