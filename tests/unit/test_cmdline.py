"""Every console script: one-line errors, --config-file anywhere, --help.

The behaviours :mod:`resq_common.cmdline` gives the commands, run through
their real entry points: in a fresh interpreter where a banner or a
traceback would show (as the console scripts start), in-process otherwise.
"""

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
from unittest import mock

from oslo_config import cfg

from resq_common import cmdline
from resq_nova.cmd import admit
from resq_nova.cmd import manage
from resq_nova.cmd import optimizer
from resq_profiler.cmd import profiler
from tests import base
from tests.unit.resq_nova.optimizer import base as obase

# The console scripts of setup.cfg: module, and the subcommand (if it has
# subcommands) run where the configuration is refused.
SCRIPTS = {
    'resq-profiler': ('resq_profiler.cmd.profiler', ['list']),
    'resq-plan': ('resq_nova.cmd.plan', []),
    'resq-evaluate': ('resq_nova.cmd.evaluate', []),
    'resq-admit': ('resq_nova.cmd.admit', []),
    'resq-optimizer': ('resq_nova.cmd.optimizer', ['plan']),
    'resq-api': ('resq_nova.cmd.api', []),
    'resq-manage': ('resq_nova.cmd.manage', ['db', 'version']),
    'resq-agent': ('resq_agent.cmd.agent', ['inspect']),
}

BANNER = 'Eventlet is deprecated'


class ScriptTestCase(base.TestCase):
    """Runs a console script as its entry point does, in a new process."""

    def setUp(self):
        super().setUp()
        self.home = os.path.join(self.tmp, 'home')
        os.mkdir(self.home)

    def script(self, name, *args, prefix=()):
        module = SCRIPTS[name][0]
        env = dict(os.environ, HOME=self.home)
        # Nothing may hide the banner but the commands themselves.
        for var in ('EVENTLET_TESTS', 'PYTHONWARNINGS'):
            env.pop(var, None)
        code = 'import sys; from %s import main; sys.exit(main())' % module
        return subprocess.run(list(prefix) + [sys.executable, '-c', code]
                              + list(args),
                              capture_output=True, text=True, env=env,
                              cwd=self.tmp, timeout=120)


class HelpTest(ScriptTestCase):

    def test_help_of_every_script(self):
        for name, (_, sub) in SCRIPTS.items():
            proc = self.script(name, '--help')
            self.assertEqual(0, proc.returncode, (name, proc.stderr))
            self.assertNotIn(BANNER, proc.stderr, name)
            self.assertEqual('', proc.stderr, name)
            out = proc.stdout
            # A paragraph first, then the usage and the command's options.
            self.assertFalse(out.startswith('usage:'), name)
            self.assertIn('\n\nusage: %s ' % name, out)
            self.assertIn('--config-file PATH', out)
            # oslo.log's options work but are not listed.
            self.assertNotIn('--log-file', out.split('Logging options')[0],
                             name)
            self.assertNotIn('--nodebug', out, name)
            if name != 'resq-manage':
                self.assertIn('see --help-logging', out, name)
            if sub:
                self.assertIn('%s COMMAND --help' % name, out)

    def test_options_with_their_defaults(self):
        out = self.script('resq-admit', '--help').stdout
        self.assertIn('--boot-timeout BOOT_TIMEOUT', out)
        self.assertIn('(default: 600)', out)
        self.assertIn('(default: the profile\'s', out)
        out = self.script('resq-agent', 'nfvnice', '--help').stdout
        self.assertTrue(out.startswith('run NFVnice passes'), out)
        self.assertIn('--passes N', out)
        self.assertIn('(default: 2)', out)
        self.assertIn('--config-file PATH', out)

    def test_help_logging(self):
        proc = self.script('resq-optimizer', '--help-logging')
        self.assertEqual(0, proc.returncode, proc.stderr)
        self.assertIn('--log-file PATH', proc.stdout)
        self.assertIn('--debug', proc.stdout)
        self.assertNotIn('--min-hosts-freed', proc.stdout)


class ConfigFileTest(ScriptTestCase):

    def assertOneLine(self, proc, *texts):
        self.assertEqual(cmdline.USAGE_ERROR, proc.returncode, proc.stderr)
        self.assertNotIn('Traceback', proc.stderr)
        self.assertNotIn(BANNER, proc.stderr)
        self.assertEqual(1, len(proc.stderr.splitlines()), proc.stderr)
        for text in texts:
            self.assertIn(text, proc.stderr)

    def test_missing_config_file_before_and_after_the_subcommand(self):
        missing = os.path.join(self.tmp, 'missing.conf')
        for name, (_, sub) in SCRIPTS.items():
            positions = [['--config-file', missing] + sub]
            if sub:
                positions.append(sub + ['--config-file', missing])
            for args in positions:
                proc = self.script(name, *args)
                self.assertOneLine(
                    proc, '%s: cannot read the configuration file %s: no '
                    'such file; give an existing file with --config-file'
                    % (name, missing))

    def test_unparsable_and_invalid_files(self):
        bad = os.path.join(self.tmp, 'bad.conf')
        with open(bad, 'w') as f:
            f.write('[resq_agent\n')
        self.assertOneLine(
            self.script('resq-agent', 'inspect', '--config-file', bad),
            'resq-agent: the configuration file %s cannot be parsed' % bad,
            "Invalid section (must end with ]): '[resq_agent'")
        with open(bad, 'w') as f:
            f.write('[resq]\nload_discount = lots\n')
        self.assertOneLine(
            self.script('resq-admit', '--config-file', bad, '--dry-run'),
            'resq-admit: [resq] load_discount in %s is not valid: must be '
            'a number; fix it or remove it' % bad)
        with open(bad, 'w') as f:
            f.write('[DEFAULT]\ndebug = perhaps\n')
        self.assertOneLine(
            self.script('resq-optimizer', 'plan', '--config-file', bad),
            "[DEFAULT] debug in %s is not valid: unexpected boolean value "
            "'perhaps'" % bad)
        self.assertOneLine(
            self.script('resq-profiler', '--config-file', self.tmp, 'list'),
            'cannot read the configuration file %s: Is a directory'
            % self.tmp)
        self.assertOneLine(
            self.script('resq-manage', '--config-dir',
                        os.path.join(self.tmp, 'nodir'), 'db', 'version'),
            'cannot read the configuration directory')

    def test_unreadable_config_file(self):
        path = os.path.join(self.tmp, 'secret.conf')
        with open(path, 'w') as f:
            f.write('[DEFAULT]\n')
        os.chmod(path, 0)
        # Root reads any file through CAP_DAC_OVERRIDE: the command runs
        # without it (util-linux's setpriv drops it from the bounding set).
        prefix = (['setpriv', '--bounding-set',
                   '-dac_override,-dac_read_search', '--']
                  if os.getuid() == 0 else [])
        self.assertOneLine(self.script('resq-plan', '--config-file', path,
                                       prefix=prefix),
                           'cannot read the configuration file %s: '
                           'permission denied' % path)


class NormalRunTest(ScriptTestCase):

    def test_no_banner_and_nothing_created_planning_from_a_file(self):
        # The optimizer's service module imports oslo.messaging, which
        # imports eventlet; planning from a file only reads.
        state = os.path.join(self.tmp, 'state')
        conf = os.path.join(self.tmp, 'opt.conf')
        with open(conf, 'w') as f:
            f.write('[resq_optimizer]\nstate_dir = %s\ntime_limit = 10\n'
                    % state)
        snap = os.path.join(self.tmp, 'snap.json')
        with open(snap, 'w') as f:
            json.dump(obase.snapshot(
                [obase.host('h1'), obase.host('h2')],
                [obase.inst('a', 'h1'), obase.inst('b', 'h2')]), f)
        before = sorted(os.listdir(self.tmp))
        proc = self.script('resq-optimizer', 'plan', '--state', snap,
                           '--config-file', conf)
        self.assertEqual(0, proc.returncode, proc.stderr)
        self.assertIn('hosts in use: 2 -> 1', proc.stdout)
        self.assertIn('stored:       no', proc.stdout)
        self.assertNotIn(BANNER, proc.stderr)
        # oslo.service's threading backend, not eventlet's, for a
        # one-shot command as for the service.
        output = proc.stdout + proc.stderr
        self.assertNotIn("Backend 'eventlet'", output)
        self.assertNotIn('Loading backend: eventlet', output)
        self.assertEqual(before, sorted(os.listdir(self.tmp)))
        self.assertEqual([], os.listdir(self.home))

    def test_read_only_profiler_commands_create_nothing(self):
        store = os.path.join(self.tmp, 'profiles')
        conf = os.path.join(self.tmp, 'prof.conf')
        with open(conf, 'w') as f:
            f.write('[resq_profiler]\nprofile_dir = %s\n' % store)
        for args in (['list'], ['show', 'nope'], ['catalog']):
            proc = self.script('resq-profiler', '--config-file', conf,
                               *args)
            self.assertNotIn(BANNER, proc.stderr)
            self.assertNotIn('Traceback', proc.stderr)
        self.assertFalse(os.path.exists(store))
        self.assertEqual([], os.listdir(self.home))


class LoggingOptionsTest(ScriptTestCase):

    def test_logging_options_still_work(self):
        log = os.path.join(self.tmp, 'profiler.log')
        proc = self.script('resq-profiler', '--debug', '--log-file', log,
                           'catalog')
        self.assertEqual(0, proc.returncode, proc.stderr)
        self.assertTrue(os.path.exists(log))
        bad = os.path.join(self.tmp, 'nodir', 'profiler.log')
        proc = self.script('resq-profiler', '--log-file', bad, 'catalog')
        self.assertEqual(2, proc.returncode)
        self.assertEqual('resq-profiler: cannot log to %s: No such file or '
                         'directory; check [DEFAULT] log_file and log_dir\n'
                         % bad, proc.stderr)

    def test_resq_api_log_file_it_cannot_open_is_one_line(self):
        conf = os.path.join(self.tmp, 'api.conf')
        with open(conf, 'w') as f:
            f.write('[api]\nauth_strategy = noauth2\n[database]\n'
                    'connection = sqlite:///%s/api.sqlite\n' % self.tmp)
        bad = os.path.join(self.tmp, 'nodir', 'api.log')
        proc = self.script('resq-api', '--config-file', conf, '--log-file',
                           bad, '--port', '1')
        self.assertEqual(2, proc.returncode, proc.stderr)
        self.assertEqual('resq-api: cannot log to %s: No such file or '
                         'directory; check [DEFAULT] log_file and log_dir\n'
                         % bad, proc.stderr)


class InProcessTestCase(base.TestCase):

    def run_main(self, main, *args):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = main(list(args))
            except SystemExit as exc:
                rc = exc.code
        return rc, out.getvalue(), err.getvalue()


class ConfigFileAnywhereTest(InProcessTestCase):

    def test_profiler(self):
        conf = os.path.join(self.tmp, 'prof.conf')
        store = os.path.join(self.tmp, 'elsewhere')
        with open(conf, 'w') as f:
            f.write('[resq_profiler]\nprofile_dir = %s\n' % store)
        for args in (('--config-file', conf, 'list'),
                     ('list', '--config-file', conf),
                     ('list', '--config-file=%s' % conf)):
            rc, out, err = self.run_main(profiler.main, *args)
            self.assertEqual((0, 'No profiles in %s\n' % store), (rc, out),
                             err)

    def test_optimizer(self):
        conf = os.path.join(self.tmp, 'opt.conf')
        with open(conf, 'w') as f:
            f.write('[resq_optimizer]\nmin_hosts_freed = 5\n'
                    'time_limit = 10\n')
        snap = os.path.join(self.tmp, 'snap.json')
        with open(snap, 'w') as f:
            json.dump(obase.snapshot([obase.host('h1'), obase.host('h2')],
                                     [obase.inst('a', 'h1'),
                                      obase.inst('b', 'h2')]), f)
        for args in (('--config-file', conf, 'plan', '--state', snap),
                     ('plan', '--state', snap, '--config-file', conf)):
            rc, out, err = self.run_main(optimizer.main, *args)
            self.assertEqual(0, rc, err)
            self.assertIn('min_hosts_freed is 5', out)

    def test_manage(self):
        conf = os.path.join(self.tmp, 'api.conf')
        with open(conf, 'w') as f:
            f.write('[database]\nconnection = sqlite:///%s/api.db\n'
                    % self.tmp)
        # An empty file is an empty SQLite database (a missing one is
        # refused: db version would create it).
        open(os.path.join(self.tmp, 'api.db'), 'w').close()
        for args in (('--config-file', conf, 'db', 'version'),
                     ('db', '--config-file', conf, 'version'),
                     ('db', 'version', '--config-file', conf)):
            rc, out, err = self.run_main(manage.main, *args)
            self.assertEqual((0, 'empty (run "resq-manage db sync")\n'),
                             (rc, out), err)

    def test_hoist(self):
        self.assertEqual(
            ['--config-file', 'a', '--config-dir=d', '--config-file', 'b',
             'db', 'sync', '--revision', 'x', '--', '--config-file', 'c'],
            cmdline.hoist(['--config-file', 'a', 'db', '--config-dir=d',
                           'sync', '--config-file', 'b', '--revision', 'x',
                           '--', '--config-file', 'c']))


class InputsBeforeTheCloudTest(InProcessTestCase):

    def test_admit_refuses_bad_targets_before_any_client(self):
        conf = os.path.join(self.tmp, 'admit.conf')
        open(conf, 'w').close()
        for args, line in (
                (('--throughput-mpps', '-1'),
                 'resq-admit: --throughput-mpps -1: must be greater than 0'),
                (('--latency-p95-us', '0'),
                 'resq-admit: --latency-p95-us 0: must be greater than 0'),
                (('--packet-bytes', '32'),
                 'resq-admit: --packet-bytes 32: should be greater than or '
                 'equal to 64'),
                (('--max-instances', '0'),
                 'resq-admit: --max-instances 0: should be greater than or '
                 'equal to 1'),
                (('--vcpus', 'two'),
                 'resq-admit: --vcpus two: must be a whole number')):
            with mock.patch.object(admit.placement_client.PlacementClient,
                                   'from_conf') as placement, \
                    mock.patch.object(admit, 'run') as run:
                rc, out, err = self.run_main(
                    admit.main, '--config-file', conf, '--term', 't',
                    '--profile', 'p', '--dry-run', *args)
            self.assertEqual((2, line + '\n'), (rc, err), args)
            self.assertFalse(placement.called)
            self.assertFalse(run.called)

    def test_nfvnice_passes_are_not_clamped(self):
        from resq_agent.cmd import agent

        conf = os.path.join(self.tmp, 'agent.conf')
        open(conf, 'w').close()
        with mock.patch.object(agent, '_nfvnice_controller') as ctl:
            rc, out, err = self.run_main(agent.main, '--config-file', conf,
                                         'nfvnice', '--passes', '1')
        self.assertEqual(2, rc)
        self.assertEqual("resq-agent nfvnice: --passes: must be a whole "
                         "number of at least 2, got '1': rates need two "
                         "readings (see resq-agent nfvnice --help)\n", err)
        self.assertFalse(ctl.called)

    def test_optimizer_numbers(self):
        for args, text in (
                (('apply', 'p', '--concurrency', '0'),
                 "--concurrency: must be a positive whole number, got '0'"),
                (('apply', 'p', '--timeout', '-5'),
                 "--timeout: must be greater than 0, got '-5'"),
                (('apply', 'p', '--timeout', 'nan'),
                 "--timeout: must be a number, got 'nan'"),
                (('enable-freed', '--count', 'x'),
                 "--count: must be a whole number, got 'x'")):
            with mock.patch.object(optimizer, '_optimizer') as opt:
                rc, out, err = self.run_main(optimizer.main, *args)
            self.assertEqual(2, rc, args)
            self.assertIn(text, err)
            self.assertEqual(1, len(err.splitlines()))
            self.assertFalse(opt.called)


class ParseTest(base.TestCase):
    """:func:`resq_common.cmdline.parse` on options of its own."""

    def parse(self, argv, register=(), cli_opts=()):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            try:
                return cmdline.parse(argv, 'resq-test', 'A test command.',
                                     register, cli_opts, logs=False), ''
            except SystemExit as exc:
                self.assertEqual(2, exc.code)
                return None, err.getvalue()

    def test_required_option(self):
        def register(conf):
            conf.register_opts([cfg.StrOpt('url', required=True)],
                               group='thing')

        conf, err = self.parse([], (register,))
        self.assertEqual('resq-test: [thing] url needs a value: set it in a '
                         'configuration file given with --config-file\n',
                         err)
        path = os.path.join(self.tmp, 'ok.conf')
        with open(path, 'w') as f:
            f.write('[thing]\n')
        conf, err = self.parse(['--config-file', path], (register,))
        self.assertEqual('resq-test: [thing] url needs a value: set it in '
                         '%s\n' % path, err)
        with open(path, 'w') as f:
            f.write('[thing]\nurl = http://x\n')
        conf, err = self.parse(['--config-file', path], (register,))
        self.assertEqual('http://x', conf.thing.url)

    def test_cli_option_given_in_a_file(self):
        path = os.path.join(self.tmp, 'n.conf')
        with open(path, 'w') as f:
            f.write('[DEFAULT]\ncount = many\n')
        conf, err = self.parse(['--config-file', path],
                               cli_opts=[cfg.IntOpt('count', min=1)])
        self.assertEqual('resq-test: [DEFAULT] count in %s is not valid: '
                         'must be a whole number; fix it or remove it\n'
                         % path, err)

    def test_argparse_types(self):
        self.assertEqual(3, cmdline.integer(1)('3'))
        self.assertEqual(2.5, cmdline.number(above=0)('2.5'))
        for convert, text, message in (
                (cmdline.integer(1), '0',
                 "must be a positive whole number, got '0'"),
                (cmdline.integer(2, 4), '5',
                 "must be a whole number from 2 to 4, got '5'"),
                (cmdline.integer(), '1.5',
                 "must be a whole number, got '1.5'"),
                (cmdline.number(above=0), '0',
                 "must be greater than 0, got '0'"),
                (cmdline.number(minimum=1), '0.5',
                 "must be at least 1, got '0.5'"),
                (cmdline.number(), 'inf', "must be a number, got 'inf'")):
            exc = self.assertRaises(argparse.ArgumentTypeError, convert,
                                    text)
            self.assertEqual(message, str(exc))
        self.assertRaises(ValueError, cmdline.Positive(), '0')
        self.assertEqual(0.5, cmdline.Positive()('0.5'))


class MessagesTest(base.TestCase):

    def test_no_doubled_article(self):
        # "the document: lacks 'hosts' (a the document has ...)" was one.
        from resq_nova.optimizer import snapshot

        exc = self.assertRaises(snapshot.SnapshotError, snapshot.loads,
                                '{"instances": []}', 'snap.json')
        self.assertEqual("snapshot snap.json: the document: lacks 'hosts', "
                         "'server_groups' (it needs hosts, instances, "
                         "server_groups)", str(exc))
