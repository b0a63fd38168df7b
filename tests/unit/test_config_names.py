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
"""One configuration file name scheme, and the search that finds it.

``resq.conf`` holds what every resq command shares and ``<command>.conf``
each command's own options; oslo.config's default search (project
``resq``, program ``<command>``) finds both. Every name the docs, the
README, devstack's plugin and ``etc/`` mention follows that scheme, and
every command reads those files when it is given no ``--config-file``.
"""

import configparser
import contextlib
import importlib
import io
import os
import re

import fixtures
from oslo_config import cfg

from resq_common import cmdline
from resq_nova.api import wsgi
from tests import base

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
# Where the names are written for operators.
PLACES = ('README.rst', 'doc', 'devstack', 'etc')
# Root's configuration of the agent's privileged side: read by
# resq-privsep-daemon alone, from a root-owned directory, never searched.
PRIVSEP = 'resq-agent-privsep'
# Python packages, whose ``conf`` modules read like file names.
PACKAGES = ('resq_nova', 'resq_agent', 'resq_profiler', 'resq_common')
# "resq-agent.conf", "/etc/resq/x.conf", "resq.conf.sample"; not the
# module "resq_nova.conf.opts".
NAME = re.compile(r'([\w<>$.{}/-]*?)([\w<>-]+)\.conf(?:\.sample)?'
                  r'(?!\w|\.\w)')
# Commands that read another command's files: resq-manage works on
# resq-api's database, as nova-manage reads nova.conf; resq-status checks
# resq-api's database and files, as nova-status.
READS = {'resq-manage': 'resq-api', 'resq-status': 'resq-api'}
# A command's name without resq-'s prefix: a file no search finds.
BARE = ('agent', 'admit', 'api', 'evaluate', 'manage', 'optimizer', 'plan',
        'profiler')


def _console_scripts():
    setup = configparser.ConfigParser(interpolation=None)
    setup.read(os.path.join(REPO, 'setup.cfg'))
    lines = setup['entry_points']['console_scripts'].strip().splitlines()
    return dict((part.strip() for part in line.split('=', 1))
                for line in lines if line.strip())


def allowed_names():
    """The resq configuration file names the scheme has."""
    return ({'resq', '<command>', PRIVSEP}
            | set(_console_scripts()))


def bad_names(text, allowed):
    """The configuration file names of ``text`` outside the scheme."""
    bad = []
    for match in NAME.finditer(text):
        prefix, name = match.groups()
        if name.endswith(('-config-generator', '-policy-generator')):
            continue
        if name in PACKAGES and not prefix.endswith('/'):
            continue
        in_etc_resq = prefix.endswith('/etc/resq/')
        if (name.startswith('resq') or name in BARE or in_etc_resq) \
                and name not in allowed:
            bad.append(match.group(0))
    return bad


def _files():
    for place in PLACES:
        top = os.path.join(REPO, place)
        if os.path.isfile(top):
            yield top
            continue
        for root, dirs, files in os.walk(top):
            dirs[:] = [d for d in dirs if d not in ('_build', '__pycache__')]
            for name in files:
                yield os.path.join(root, name)


class NameSchemeTest(base.TestCase):

    def test_the_checker_finds_names_outside_the_scheme(self):
        allowed = allowed_names()
        text = ('devstack wrote /etc/resq/resq-nova.conf; give '
                '--config-file /etc/resq/agent.conf or resq_admit.conf, '
                'or copy resq-nova.conf.sample. /etc/resq/foo.conf too.')
        self.assertEqual(['/etc/resq/resq-nova.conf', '/etc/resq/agent.conf',
                          'resq_admit.conf', 'resq-nova.conf.sample',
                          '/etc/resq/foo.conf'], bad_names(text, allowed))
        self.assertEqual([], bad_names(
            'resq.conf, then /etc/resq/resq-agent.conf (resq-admit.conf, '
            '<command>.conf, resq.conf.sample) and nova.conf; '
            ':mod:`resq_nova.conf` and resq_nova.conf.opts; '
            '$RESQ_CONF_DIR/resq-optimizer.conf; '
            'etc/resq/resq-nova-config-generator.conf.', allowed))

    def test_every_name_follows_the_scheme(self):
        allowed = allowed_names()
        found = {}
        for path in _files():
            try:
                with open(path, encoding='utf-8') as f:
                    text = f.read()
            except UnicodeDecodeError:
                continue
            bad = bad_names(text, allowed)
            if bad:
                found[os.path.relpath(path, REPO)] = bad
        self.assertEqual({}, found, 'configuration file names outside the '
                         'scheme (resq.conf, resq-<command>.conf): rename '
                         'them')

    def test_every_sample_is_a_name_of_the_scheme(self):
        allowed = allowed_names()
        samples = [name[:-len('.conf.sample')] for name in
                   os.listdir(os.path.join(REPO, 'etc', 'resq'))
                   if name.endswith('.conf.sample')]
        self.assertIn('resq', samples)
        self.assertEqual([], sorted(set(samples) - allowed))


class DefaultSearchTest(base.TestCase):
    """What a command reads without ``--config-file``."""

    def setUp(self):
        super().setUp()
        self.home = self.useFixture(fixtures.TempDir()).path
        self.useFixture(fixtures.EnvironmentVariable('HOME', self.home))
        self.useFixture(fixtures.EnvironmentVariable('RESQ_API_CONFIG'))
        os.mkdir(os.path.join(self.home, '.resq'))

    def write(self, name, text, where='.resq'):
        path = os.path.join(self.home, where, name)
        with open(path, 'w') as f:
            f.write(text)
        return path

    def _parse(self, argv=()):
        def register(conf):
            conf.register_opts([cfg.StrOpt('shared'), cfg.StrOpt('own')],
                               'resq_x')
        return cmdline.parse(list(argv), 'resq-x', 'A test command.',
                             (register,), logs=False)

    def test_shared_file_then_the_commands_own(self):
        shared = self.write('resq.conf',
                            '[resq_x]\nshared = resq\nown = resq\n')
        own = self.write('resq-x.conf', '[resq_x]\nown = resq-x\n', '')
        conf = self._parse()
        self.assertEqual([shared, own], conf.config_file)
        self.assertEqual(('resq', 'resq-x'),
                         (conf.resq_x.shared, conf.resq_x.own))

    def test_missing_default_files_are_fine(self):
        conf = self._parse()
        self.assertEqual([], conf.config_file)
        self.assertIsNone(conf.resq_x.own)

    def test_config_file_replaces_the_search(self):
        self.write('resq.conf', '[resq_x]\nshared = resq\n')
        other = self.write('other.conf', '[resq_x]\nown = other\n')
        conf = self._parse(['--config-file', other])
        self.assertEqual([other], conf.config_file)
        self.assertEqual((None, 'other'),
                         (conf.resq_x.shared, conf.resq_x.own))

    def test_missing_explicit_file_is_one_line(self):
        missing = os.path.join(self.home, 'resq-x.conf')
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr):
            exc = self.assertRaises(SystemExit, self._parse,
                                    ['--config-file', missing])
        self.assertEqual(cmdline.USAGE_ERROR, exc.code)
        self.assertEqual('resq-x: cannot read the configuration file %s: no '
                         'such file; give an existing file with '
                         '--config-file\n' % missing, stderr.getvalue())

    def test_help_names_the_search_when_nothing_is_found(self):
        stdout = io.StringIO()
        with contextlib.redirect_stdout(stdout):
            self.assertRaises(SystemExit, self._parse, ['--help'])
        self.assertIn(
            'none found: resq.conf and resq-x.conf in ~/.resq/, ~/, '
            '/etc/resq/, /etc/', ' '.join(stdout.getvalue().split()))

    def test_every_command_reads_the_scheme(self):
        # (resq-privsep-daemon is a script of its own, not among them: it
        # reads root's file alone, never searched.)
        scripts = _console_scripts()
        self.assertGreaterEqual(len(scripts), 8)
        shared = self.write('resq.conf', '')
        for name, target in sorted(scripts.items()):
            own = self.write(READS.get(name, name) + '.conf', '')
            module, func = target.split(':')
            main = getattr(importlib.import_module(module), func)
            stdout = io.StringIO()
            with contextlib.redirect_stdout(stdout):
                self.assertRaises(SystemExit, main, ['--help'])
            # --help gives the files the search found as --config-file's
            # default.
            self.assertIn('(default:%s,%s)' % (shared, own),
                          ''.join(stdout.getvalue().split()), name)

    def test_resq_manage_reads_resq_api_files(self):
        # resq-manage.conf is not read; resq-api's files are, in the same
        # order and with the same $RESQ_API_CONFIG as resq-api.
        shared = self.write('resq.conf', '[database]\nconnection = '
                            'sqlite:///%s/shared.db\n' % self.home)
        self.write('resq-manage.conf', '[database]\nconnection = '
                   'sqlite:///%s/manage.db\n' % self.home)
        rc, out, err = self._manage('db', 'check')
        self.assertEqual(2, rc, err)
        self.assertIn('no file %s/shared.db' % self.home, out)
        self.assertIn('(read from %s)' % shared, out)
        own = self.write('resq-api.conf', '[database]\nconnection = '
                         'sqlite:///%s/api.db\n' % self.home)
        rc, out, err = self._manage('db', 'check')
        self.assertIn('no file %s/api.db' % self.home, out)
        self.assertIn('(read from %s, %s)' % (shared, own), out)
        listed = self.write('listed.conf', '[database]\nconnection = '
                            'sqlite:///%s/listed.db\n' % self.home)
        self.useFixture(fixtures.EnvironmentVariable('RESQ_API_CONFIG',
                                                     listed))
        rc, out, err = self._manage('db', 'check')
        self.assertIn('no file %s/listed.db' % self.home, out)
        # Read-only commands create no database.
        self.assertEqual([], [n for n in os.listdir(self.home)
                              if n.endswith('.db')])

    def test_resq_manage_without_a_connection_is_one_line(self):
        shared = self.write('resq.conf', '[placement]\n')
        for args in (('db', 'sync'), ('db', 'version'), ('db', 'check'),
                     ('db', 'prune')):
            rc, out, err = self._manage(*args)
            self.assertEqual((cmdline.USAGE_ERROR, ''), (rc, out), err)
            self.assertEqual(1, len(err.splitlines()), err)
            self.assertTrue(err.startswith(
                'resq-manage: [database] connection has no value in %s: '
                'set it to resq-api\'s database' % shared), err)
        os.unlink(shared)
        rc, out, err = self._manage('db', 'sync')
        self.assertEqual(cmdline.USAGE_ERROR, rc)
        self.assertIn('in any file: none was read (resq-api\'s: '
                      '$RESQ_API_CONFIG, else resq.conf and resq-api.conf in '
                      '~/.resq/, ~/, /etc/resq/, /etc/)', err)
        # A --config-file of another command's: the same line, no default.
        other = self.write('resq-agent.conf', '[resq_agent]\n')
        rc, out, err = self._manage('--config-file', other, 'db', 'sync')
        self.assertEqual(cmdline.USAGE_ERROR, rc)
        self.assertIn('has no value in %s:' % other, err)
        self.assertEqual(['resq-agent.conf'],
                         os.listdir(os.path.join(self.home, '.resq')))

    def test_resq_api_without_a_connection_is_one_line(self):
        from resq_nova.cmd import api

        own = self.write('resq-api.conf', '[api]\nauth_strategy = noauth2\n')
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            exc = self.assertRaises(SystemExit, api.main, [])
        self.assertEqual(cmdline.USAGE_ERROR, exc.code)
        self.assertEqual(1, len(err.getvalue().splitlines()), err.getvalue())
        self.assertIn('resq-api: [database] connection has no value in %s'
                      % own, err.getvalue())

    def _manage(self, *args):
        from resq_nova.cmd import manage

        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = manage.main(list(args))
        return rc, out.getvalue(), err.getvalue()

    def test_a_missing_file_the_variable_names_says_so(self):
        missing = os.path.join(self.home, 'gone', 'resq-api.conf')
        self.useFixture(fixtures.EnvironmentVariable('RESQ_API_CONFIG',
                                                     missing))
        from resq_nova.cmd import manage

        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr):
            exc = self.assertRaises(SystemExit, manage.main,
                                    ['db', 'version'])
        self.assertEqual(cmdline.USAGE_ERROR, exc.code)
        err = stderr.getvalue()
        self.assertEqual(1, len(err.splitlines()), err)
        self.assertIn('it is named by $RESQ_API_CONFIG (%s): correct the '
                      'variable' % missing, err)

    def test_resq_api_application(self):
        shared = self.write('resq.conf', '')
        own = self.write('resq-api.conf', '[api]\nauth_strategy = noauth2\n')
        conf = wsgi.make_conf()
        self.assertEqual([shared, own], conf.config_file)
        self.assertEqual('noauth2', conf.api.auth_strategy)
        listed = self.write('listed.conf', '')
        self.useFixture(fixtures.EnvironmentVariable('RESQ_API_CONFIG',
                                                     listed))
        self.assertEqual([listed], wsgi.make_conf().config_file)
