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
"""The committed sample files are what their generators write today.

Every ``etc/resq/*-config-generator.conf`` (oslo-config-generator) and
``etc/resq/*-policy-generator.conf`` (oslopolicy-sample-generator) is
run into a temporary file and compared with the committed sample its
``output_file`` names; a difference fails with the file, the command that
regenerates it and the diff. An option added, removed or reworded in the
code without ``tox -e genconfig`` is caught here. The configuration
reference (``doc/source/configuration``) documents each generator's file:
its namespaces in a ``show-options`` directive, its sample linked, and the
policy rules in a ``show-policy`` directive.

Each generator runs through its Python API (``oslo_config.generator.main``,
``oslo_policy.generator.generate_sample``) in a fresh interpreter of the
test's own Python: the generators read option objects that live in the
libraries' modules, and a test that ran before in the same process may
have changed their defaults (``oslo_messaging.set_transport_defaults``,
which the agent's RPC set-up calls, turns ``control_exchange`` from
``openstack`` into ``resq``), which would make the result depend on the
order stestr runs the tests in.

The samples hold no value of the machine they were generated on: options
whose default is computed (CPU counts, host names) have a
``sample_default``, and the output does not depend on the working
directory or ``$HOME``.
"""

import ast
import configparser
import difflib
import glob
import importlib.metadata
import os
import re
import shlex
import subprocess
import sys

import fixtures

from tests import base

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
ETC = os.path.join(REPO, 'etc')
GENERATORS = os.path.join(ETC, 'resq')
CONFIG_SUFFIX = '-config-generator.conf'
POLICY_SUFFIX = '-policy-generator.conf'
CONFIG_TOOL = 'oslo-config-generator'
POLICY_TOOL = 'oslopolicy-sample-generator'
# What each tool runs, in a fresh interpreter (see the module's docstring).
CONFIG_SCRIPT = ('import sys\n'
                 'from oslo_config import generator\n'
                 'generator.main(sys.argv[1:])\n')
POLICY_SCRIPT = ('import sys\n'
                 'from oslo_config import cfg\n'
                 'from oslo_policy import generator\n'
                 'generator.generate_sample(sys.argv[1:], '
                 'conf=cfg.ConfigOpts())\n')
# Another machine, as far as a default computed when the options are
# defined could tell: host name, CPU count and affinity.
ELSEWHERE = ('import multiprocessing, os, socket\n'
             'socket.gethostname = lambda: "elsewhere.example.com"\n'
             'socket.getfqdn = lambda name="": "elsewhere.example.com"\n'
             'os.cpu_count = multiprocessing.cpu_count = lambda: 1234\n'
             'os.sched_getaffinity = lambda pid: set(range(1234))\n')
DOCS = os.path.join(REPO, 'doc', 'source')
CONFIG_DOCS = os.path.join(DOCS, 'configuration')
# ".. name:: arguments", at any indentation.
DIRECTIVE = re.compile(r'^(?P<indent> *)\.\. (?P<name>[\w:.-]+)::')
OPTION = re.compile(r'^:(?P<key>[\w-]+):(?P<value>.*)$')
# Lines of the diff a failure shows.
DIFF_LINES = 60


def _relpath(path):
    return os.path.relpath(path, REPO)


def config_generators():
    """The oslo-config-generator configuration files, sorted."""
    return sorted(glob.glob(os.path.join(GENERATORS, '*' + CONFIG_SUFFIX)))


def policy_generators():
    """The oslopolicy-sample-generator configuration files, sorted."""
    return sorted(glob.glob(os.path.join(GENERATORS, '*' + POLICY_SUFFIX)))


def read_generator(path):
    """``(output_file, namespaces)`` of a generator configuration file.

    ``namespace`` is given once a line, several times; oslo.config reads
    them all, as the generators do.
    """
    output_file, namespaces = None, []
    with open(path, encoding='utf-8') as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith(('#', ';', '[')):
                continue
            key, _, value = (part.strip() for part in line.partition('='))
            if key == 'output_file':
                output_file = value
            elif key == 'namespace':
                namespaces.append(value)
    return output_file, namespaces


def tool(generator):
    return POLICY_TOOL if generator.endswith(POLICY_SUFFIX) else CONFIG_TOOL


def command(generator):
    """The command that regenerates ``generator``'s sample."""
    return '%s --config-file=%s' % (tool(generator), _relpath(generator))


def start(generator, output, elsewhere=None):
    """Start ``generator`` into ``output`` in a fresh interpreter.

    :param elsewhere: a directory: run there as on another machine, with
        it as working directory and ``$HOME``, and another host name and
        CPU count (:data:`ELSEWHERE`).
    :returns: the process, for :func:`finish`.
    """
    script = (POLICY_SCRIPT if tool(generator) == POLICY_TOOL
              else CONFIG_SCRIPT)
    # The options of this checkout, wherever the interpreter runs and
    # whatever copy of the packages is installed.
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [REPO] + [p for p in os.environ.get('PYTHONPATH', '').split(
            os.pathsep) if p]))
    cwd = REPO
    if elsewhere:
        script = ELSEWHERE + script
        cwd, env['HOME'] = elsewhere, elsewhere
    return subprocess.Popen(
        [sys.executable, '-c', script, '--config-file', generator,
         '--output-file', output],
        cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)


def finish(generator, proc, output):
    """The text ``proc`` (of :func:`start`) wrote to ``output``.

    :raises AssertionError: the generator failed (its standard error).
    """
    _, stderr = proc.communicate(timeout=180)
    if proc.returncode:
        raise AssertionError('%s failed (exit status %d):\n%s' % (
            command(generator), proc.returncode, stderr))
    with open(output, encoding='utf-8') as f:
        return f.read()


def generate(generator, output, elsewhere=None):
    """Run ``generator`` into ``output``; the text it wrote."""
    return finish(generator, start(generator, output, elsewhere), output)


def _entry_point_versions(namespaces, group='oslo.config.opts'):
    """``namespace -> "distribution version"`` of other projects."""
    ours = _setup_entry_points(group)
    found = {}
    for ep in importlib.metadata.entry_points(group=group):
        if ep.name in namespaces and ep.name not in ours and ep.dist:
            found[ep.name] = '%s %s' % (ep.dist.name, ep.dist.version)
    return found


def _setup_entry_points(group):
    """The entry point names ``setup.cfg`` gives ``group``."""
    setup = configparser.ConfigParser(interpolation=None)
    setup.read(os.path.join(REPO, 'setup.cfg'))
    lines = setup['entry_points'].get(group, '').strip().splitlines()
    return {line.split('=', 1)[0].strip() for line in lines if line.strip()}


def difference(generator, committed, generated):
    """What a stale sample's failure says; ``None`` when it is current.

    :param committed: the committed sample's text.
    :param generated: the generator's output.
    """
    if committed == generated:
        return None
    sample = read_generator(generator)[0]
    diff = list(difflib.unified_diff(
        committed.splitlines(keepends=True),
        generated.splitlines(keepends=True),
        sample + ' (committed)', sample + ' (generated)'))
    shown = ''.join(diff[:DIFF_LINES])
    if len(diff) > DIFF_LINES:
        shown += '... (%d more lines of diff)\n' % (len(diff) - DIFF_LINES)
    message = ('%s is stale: it is not what %s writes. Regenerate it '
               '(from the repository root) with\n\n    %s\n\nor every '
               'sample with "tox -e genconfig", and commit it.\n'
               % (sample, _relpath(generator), command(generator)))
    others = _entry_point_versions(
        read_generator(generator)[1],
        'oslo.policy.policies' if tool(generator) == POLICY_TOOL
        else 'oslo.config.opts')
    if others:
        message += ('Options of other projects are in it too (%s): a '
                    'release of theirs changes it as well.\n' % ', '.join(
                        '%s from %s' % item for item in sorted(
                            others.items())))
    return message + '\n' + shown


class SampleFilesTest(base.TestCase):
    """Each generator's sample, regenerated and compared.

    One test per generator configuration, ``test_<its name>``, added below.
    """

    def _check(self, generator):
        sample, _ = read_generator(generator)
        self.assertIsNotNone(sample, '%s has no output_file' % generator)
        committed_path = os.path.join(REPO, sample)
        self.assertTrue(os.path.isfile(committed_path),
                        '%s names %s, which is not committed; run %s' % (
                            _relpath(generator), sample, command(generator)))
        name = os.path.basename(sample)
        here = os.path.join(self.tmp, name)
        elsewhere = self.useFixture(fixtures.TempDir()).path
        there = os.path.join(elsewhere, name)
        procs = [start(generator, here), start(generator, there, elsewhere)]
        generated = finish(generator, procs[0], here)
        other = finish(generator, procs[1], there)
        with open(committed_path, encoding='utf-8') as f:
            committed = f.read()
        message = difference(generator, committed, generated)
        if message:
            self.fail(message)
        if other != generated:
            self.fail('%s depends on the machine it is generated on (host '
                      'name, CPU count, working directory or $HOME): an '
                      'option whose default is computed needs a '
                      'sample_default.\n\n%s' % (sample, ''.join(
                          difflib.unified_diff(
                              generated.splitlines(keepends=True),
                              other.splitlines(keepends=True),
                              'this machine', 'another machine'))))

    def test_there_are_samples(self):
        self.assertIn(os.path.join(GENERATORS, 'resq-nova' + CONFIG_SUFFIX),
                      config_generators())
        self.assertIn(os.path.join(GENERATORS, 'resq-api' + POLICY_SUFFIX),
                      policy_generators())


def _add_sample_test(generator):
    name = os.path.basename(generator)[:-len('.conf')].replace('-', '_')

    def test(self):
        self._check(generator)

    test.__name__ = 'test_' + name
    test.__doc__ = '%s is what %s writes.' % (
        read_generator(generator)[0], command(generator))
    setattr(SampleFilesTest, test.__name__, test)


for _generator in config_generators() + policy_generators():
    _add_sample_test(_generator)


class CompletenessTest(base.TestCase):
    """Every sample is checked, and every namespace has a sample."""

    def test_every_committed_sample_has_a_generator(self):
        outputs = {read_generator(g)[0]
                   for g in config_generators() + policy_generators()}
        samples = {_relpath(path) for path in
                   glob.glob(os.path.join(ETC, '**', '*.sample'),
                             recursive=True)}
        self.assertEqual(set(), samples - outputs,
                         'samples under etc/ no generator configuration '
                         'writes: nothing keeps them current')
        self.assertEqual(set(), outputs - samples,
                         'generator configurations whose sample is not '
                         'committed')

    def test_every_namespace_of_setup_cfg_has_a_sample(self):
        for group, generators in (('oslo.config.opts', config_generators()),
                                  ('oslo.policy.policies',
                                   policy_generators())):
            listed = set()
            for generator in generators:
                listed.update(read_generator(generator)[1])
            self.assertEqual(set(), _setup_entry_points(group) - listed,
                             '%s entry points of setup.cfg in no '
                             'generator configuration of etc/resq' % group)

    def test_every_namespace_is_installed(self):
        # A namespace nothing provides is skipped by oslo-config-generator
        # with a warning only; its options would silently be missing.
        for group, generators in (('oslo.config.opts', config_generators()),
                                  ('oslo.policy.policies',
                                   policy_generators())):
            installed = {ep.name for ep in
                         importlib.metadata.entry_points(group=group)}
            for generator in generators:
                missing = set(read_generator(generator)[1]) - installed
                self.assertEqual(set(), missing, '%s names %s namespaces '
                                 'no installed package provides' % (
                                     _relpath(generator), group))

    def test_genconfig_regenerates_every_sample(self):
        tox = configparser.ConfigParser(interpolation=None)
        tox.read(os.path.join(REPO, 'tox.ini'))
        commands = [shlex.split(line) for line in
                    tox['testenv:genconfig']['commands'].splitlines()
                    if line.strip()]
        run = set()
        for argv in commands:
            for arg in argv[1:]:
                if arg.startswith('--config-file='):
                    run.add((argv[0], arg.split('=', 1)[1]))
        self.assertEqual(
            {(tool(g), _relpath(g))
             for g in config_generators() + policy_generators()}, run,
            'tox -e genconfig must run every generator configuration of '
            'etc/resq, each with its tool')


class CheckerTest(base.TestCase):
    """The comparison fails on a stale sample, saying how to fix it."""

    def test_a_missing_option_fails_naming_file_and_command(self):
        generator = os.path.join(GENERATORS, 'resq-nova' + CONFIG_SUFFIX)
        # The sample as it was before an option was added to the code.
        generated = ('[resq_optimizer]\n\n# Processes that plan cells.\n'
                     '#plan_workers = 0\n')
        stale = '[resq_optimizer]\n'
        message = difference(generator, stale, generated)
        self.assertIsNotNone(message)
        self.assertIn('etc/resq/resq.conf.sample is stale', message)
        self.assertIn('oslo-config-generator '
                      '--config-file=etc/resq/resq-nova-config-generator'
                      '.conf', message)
        self.assertIn('tox -e genconfig', message)
        self.assertIn('+#plan_workers = 0\n', message)
        self.assertIsNone(difference(generator, generated, generated))

    def test_a_policy_sample_names_its_tool(self):
        generator = os.path.join(GENERATORS, 'resq-api' + POLICY_SUFFIX)
        message = difference(generator, 'old\n', 'new\n')
        self.assertIn('etc/resq/resq-api-policy.yaml.sample is stale',
                      message)
        self.assertIn('oslopolicy-sample-generator '
                      '--config-file=etc/resq/resq-api-policy-generator'
                      '.conf', message)

    def test_options_of_other_projects_are_named_with_their_version(self):
        generator = os.path.join(GENERATORS, 'resq-api' + CONFIG_SUFFIX)
        message = difference(generator, 'old\n', 'new\n')
        version = importlib.metadata.version('keystonemiddleware')
        self.assertIn('keystonemiddleware.auth_token from keystonemiddleware '
                      '%s' % version, message)
        self.assertNotIn('resq.api from', message)

    def test_another_machine_is_another_machine(self):
        # What the generator sees in the run "elsewhere".
        proc = subprocess.run(
            [sys.executable, '-c', ELSEWHERE + (
                'import multiprocessing, os, socket\n'
                'print(socket.gethostname(), socket.getfqdn(), '
                'os.cpu_count(), multiprocessing.cpu_count(), '
                'len(os.sched_getaffinity(0)))\n')],
            capture_output=True, text=True, check=True, timeout=60)
        self.assertEqual('elsewhere.example.com elsewhere.example.com '
                         '1234 1234 1234', proc.stdout.strip())


def directives(text, name):
    """``(options, content)`` of each ``.. name::`` directive of ``text``.

    :returns: a list of pairs: the directive's options (``{key: value}``)
        and the lines of its content, stripped, without blank lines.
    """
    found = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        match = DIRECTIVE.match(line)
        if not match or match.group('name') != name:
            continue
        indent = len(match.group('indent'))
        options, content = {}, []
        for body in lines[i + 1:]:
            if body.strip() and len(body) - len(body.lstrip()) <= indent:
                break
            body = body.strip()
            option = OPTION.match(body)
            if option and not content:
                options[option.group('key')] = option.group('value').strip()
            elif body:
                content.append(body)
        found.append((options, content))
    return found


def config_pages():
    """``{page: text}`` of the configuration reference's pages."""
    pages = {}
    for path in sorted(glob.glob(os.path.join(CONFIG_DOCS, '*.rst'))):
        with open(path, encoding='utf-8') as f:
            pages[_relpath(path)] = f.read()
    return pages


def _sphinx_conf_value(name):
    """The literal value ``doc/source/conf.py`` assigns to ``name``."""
    with open(os.path.join(DOCS, 'conf.py'), encoding='utf-8') as f:
        tree = ast.parse(f.read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                getattr(t, 'id', None) == name for t in node.targets):
            return ast.literal_eval(node.value)
    return None


class ReferenceTest(base.TestCase):
    """The configuration reference documents every generator's file."""

    def test_the_parser_finds_directives(self):
        text = ('Intro\n\n.. show-options::\n\n   resq.api\n   oslo.log\n'
                '\nAfter.\n\n  .. show-policy::\n     :config-file: a.conf\n'
                '\nEnd.\n')
        self.assertEqual([({}, ['resq.api', 'oslo.log'])],
                         directives(text, 'show-options'))
        self.assertEqual([({'config-file': 'a.conf'}, [])],
                         directives(text, 'show-policy'))

    def test_every_namespace_of_every_generator_is_documented(self):
        pages = config_pages()
        shown = [(page, set(content)) for page, text in pages.items()
                 for _, content in directives(text, 'show-options')]
        for generator in config_generators():
            sample, namespaces = read_generator(generator)
            wanted = set(namespaces)
            pages_of = [page for page, listed in shown if listed == wanted]
            if not pages_of:
                near = max(shown, key=lambda item: len(item[1] & wanted),
                           default=(None, set()))
                self.fail('no show-options directive in %s lists the '
                          'namespaces of %s (%s); the nearest, in %s, lacks '
                          '%s and has %s besides' % (
                              _relpath(CONFIG_DOCS), _relpath(generator),
                              ', '.join(namespaces), near[0],
                              sorted(wanted - near[1]) or 'none',
                              sorted(near[1] - wanted) or 'none'))
            # The page names the file's sample and its generator.
            for page in pages_of:
                for name in (os.path.basename(sample),
                             os.path.basename(generator)):
                    self.assertIn(name, pages[page], '%s documents %s, but '
                                  'does not name %s' % (
                                      page, _relpath(generator), name))

    def test_every_policy_generator_is_documented(self):
        pages = config_pages()
        for generator in policy_generators():
            sample, namespaces = read_generator(generator)
            pages_of = [
                page for page, text in pages.items()
                for options, _ in directives(text, 'show-policy')
                if os.path.normpath(os.path.join(
                    DOCS, options.get('config-file', ''))) == generator]
            self.assertTrue(pages_of, 'no show-policy directive in %s with '
                            ':config-file: %s' % (
                                _relpath(CONFIG_DOCS),
                                os.path.relpath(generator, DOCS)))
            for page in pages_of:
                for name in namespaces + [os.path.basename(sample)]:
                    self.assertIn(name, pages[page], page)

    def test_every_sample_is_linked(self):
        text = '\n'.join(config_pages().values())
        built = {os.path.normpath(os.path.join(DOCS, path)): base
                 for path, base in
                 _sphinx_conf_value('config_generator_config_file')}
        for generator in config_generators():
            # oslo_config.sphinxconfiggen writes <base>.conf.sample.
            self.assertIn(generator, built, 'doc/source/conf.py '
                          'config_generator_config_file lacks %s' %
                          _relpath(generator))
            static = '%s.conf.sample' % built[generator]
            self.assertIn('<../%s>' % static, text, 'no :download: of %s '
                          'in %s' % (static, _relpath(CONFIG_DOCS)))
        for generator in policy_generators():
            sample = read_generator(generator)[0]
            link = os.path.relpath(os.path.join(REPO, sample), CONFIG_DOCS)
            self.assertIn('<%s>' % link, text, 'no :download: of %s in %s'
                          % (sample, _relpath(CONFIG_DOCS)))

    def test_every_page_is_in_the_toctree(self):
        with open(os.path.join(CONFIG_DOCS, 'index.rst'),
                  encoding='utf-8') as f:
            index = f.read()
        entries = {line for _, content in directives(index, 'toctree')
                   for line in content}
        pages = {os.path.basename(page)[:-len('.rst')]
                 for page in config_pages()} - {'index'}
        self.assertEqual(set(), pages - entries)
