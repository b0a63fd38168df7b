"""The real privsep daemon gets the agent's own options and config files.

The agent parses a private ConfigOpts; the daemon is started the way the
agent starts it (``[resq_privsep_resctrl] helper_command``, here the
``privsep-helper`` code in this interpreter, without ``sudo``) and must
read ``[resq_agent] resctrl_root`` from the agent's configuration file.
It keeps no capabilities (``capabilities =`` in the same file), so the
test needs no root.
"""

import os
import shutil
import socket
import subprocess
import sys
import time

from resq_agent.cmd import agent
import resq_agent.privsep
import resq_agent.privsep.resctrl
from resq_agent import privsep_boot
from resq_common import exception
from resq_common import privsep as common_privsep
from tests import base
from tests.fixtures import resctrl as resctrl_fixture

HELPER = ('%s -c "from oslo_privsep import daemon; daemon.helper_main()"'
          % sys.executable)


class PrivsepDaemonTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.tree = self.useFixture(resctrl_fixture.ResctrlTree())
        self.conf_file = os.path.join(self.tmp, 'resq-agent.conf')
        with open(self.conf_file, 'w') as f:
            f.write('[resq_agent]\nresctrl_root = %s\n\n'
                    '[resq_privsep_resctrl]\nhelper_command = %s\n'
                    'capabilities =\nthread_pool_size = 1\n'
                    % (self.tree.root, HELPER))
        ctx = resq_agent.privsep.resctrl_pctxt
        previous = ctx.config
        self.addCleanup(ctx.use_conf, previous)
        self.addCleanup(ctx.stop)
        self.conf = agent._parse_config(['--config-file', self.conf_file,
                                         'inspect'])
        self.ctx = ctx

    def test_options_reach_the_daemon(self):
        self.assertIs(self.conf, self.ctx.config)
        self.assertEqual([], self.ctx.conf.capabilities)
        cmd = self.ctx.helper_command('/tmp/sock')
        self.assertEqual(['--config-file', self.conf_file],
                         cmd[cmd.index('--config-file'):][:2])
        # The daemon answers with the root it read from the agent's file.
        self.assertEqual(self.tree.root,
                         resq_agent.privsep.resctrl.resctrl_root())
        self.assertIsNotNone(self.ctx.channel)
        # And it checks that root for real: a temporary directory laid out
        # like resctrl is not a resctrl mount, so nothing is written.
        exc = self.assertRaises(exception.ResctrlError,
                                resq_agent.privsep.resctrl.create_group,
                                'resq-x')
        self.assertIn('%s is not a resctrl file system' % self.tree.root,
                      str(exc))
        self.assertFalse(os.path.exists(os.path.join(self.tree.root,
                                                     'resq-x')))


class PrivsepMonGroupTest(base.TestCase):
    """Monitoring groups through the real daemon, on devstack's fake tree.

    ``[resq_agent] resctrl_fake = true`` lets the daemon write a plain
    tree; the refusals the on-demand host tells apart (no monitoring, no
    RMID, CPUs outside the class) come back as their own exception classes.
    """

    def setUp(self):
        super().setUp()
        # 4 RMIDs: the default group, other-app, resq-od0-0 and one more.
        self.tree = self.useFixture(resctrl_fixture.ResctrlTree(
            num_rmids=4))
        self.conf_file = os.path.join(self.tmp, 'resq-agent.conf')
        with open(self.conf_file, 'w') as f:
            f.write('[resq_agent]\nresctrl_root = %s\nresctrl_fake = true\n'
                    '\n[resq_privsep_resctrl]\nhelper_command = %s\n'
                    'capabilities =\nthread_pool_size = 1\n'
                    % (self.tree.root, HELPER))
        ctx = resq_agent.privsep.resctrl_pctxt
        self.addCleanup(ctx.use_conf, ctx.config)
        self.addCleanup(ctx.stop)
        agent._parse_config(['--config-file', self.conf_file, 'inspect'])
        self.mod = resq_agent.privsep.resctrl

    def test_mon_groups_and_their_refusals(self):
        mod = self.mod
        mod.create_group('resq-od0-0')
        mod.assign_cpus('resq-od0-0', [1, 2])
        exc = self.assertRaises(exception.MonitoringUnavailable,
                                mod.create_mon_group, 'resq-od0-0',
                                'resq-a', [1])
        self.assertIn('has no mon_groups directory', exc.message)
        # A plain mkdir makes no mon_groups; a copied tree has one.
        mon = os.path.join(self.tree.root, 'resq-od0-0', 'mon_groups')
        os.mkdir(mon)
        self.assertEqual(os.path.join(mon, 'resq-a'),
                         mod.create_mon_group('resq-od0-0', 'resq-a', [1]))
        with open(os.path.join(mon, 'resq-a', 'cpus_list')) as f:
            self.assertEqual('1\n', f.read())
        exc = self.assertRaises(exception.RmidsExhausted,
                                mod.create_mon_group, 'resq-od0-0',
                                'resq-b', [2])
        self.assertIn('4 of the platform\'s 4', exc.message)
        exc = self.assertRaises(exception.ResctrlError,
                                mod.create_mon_group, 'resq-od0-0',
                                'resq-a', [3])
        self.assertIn('CPUs 3 are not CPUs of resctrl group resq-od0-0',
                      exc.message)
        self.assertTrue(mod.remove_mon_group('resq-od0-0', 'resq-a'))
        self.assertFalse(mod.remove_mon_group('resq-od0-0', 'resq-a'))
        self.assertEqual([], os.listdir(mon))


class PrivsepStartedByRootTest(base.TestCase):
    """The agent's daemon as root starts it: ``resq-privsep-daemon``.

    Root's file at a test path, as devstack and the units set it up; the
    agent connects to its socket (``daemon_socket``) and the daemon runs on
    root's file, whatever the agent's own file says.
    """

    def setUp(self):
        super().setUp()
        if os.geteuid() != 0:
            self.skipTest('the daemon is started by root')
        self.tree = self.useFixture(resctrl_fixture.ResctrlTree())
        confdir = os.path.join(self.tmp, 'privsep')
        os.mkdir(confdir, 0o755)
        self.sockdir = os.path.join(self.tmp, 'run')
        self.root_conf = os.path.join(confdir, 'resq-agent-privsep.conf')
        with open(self.root_conf, 'w') as f:
            f.write('[resq_agent]\nresctrl_root = %s\nresctrl_fake = true\n'
                    '\n[resq_privsep_daemon]\nsocket_dir = %s\n'
                    'client_user = root\n' % (self.tree.root, self.sockdir))
        # The agent's own file points elsewhere and claims a fake tree:
        # neither reaches the daemon.
        self.conf_file = os.path.join(self.tmp, 'resq-agent.conf')
        with open(self.conf_file, 'w') as f:
            f.write('[resq_agent]\nresctrl_root = /nonexistent\n'
                    'resctrl_fake = true\n\n'
                    '[resq_privsep_resctrl]\ndaemon_socket = %s/resctrl.sock\n'
                    % self.sockdir)
        ctx = resq_agent.privsep.resctrl_pctxt
        self.addCleanup(ctx.use_conf, ctx.config)
        self.addCleanup(ctx.stop)
        agent._parse_config(['--config-file', self.conf_file, 'inspect'])
        self.mod = resq_agent.privsep.resctrl

    def _start(self, prefix=()):
        log = open(os.path.join(self.tmp, 'daemon.log'), 'w+')
        self.addCleanup(log.close)
        proc = subprocess.Popen(
            list(prefix) + privsep_boot.command(
                ['--context', 'resctrl', '--config-file', self.root_conf]),
            stdout=log, stderr=subprocess.STDOUT)
        self.addCleanup(self._stop, proc)
        sock = os.path.join(self.sockdir, 'resctrl.sock')
        deadline = time.monotonic() + 60
        while not os.path.exists(sock) and proc.poll() is None:
            if time.monotonic() > deadline:
                self.fail('the daemon did not listen within 60 s')
            time.sleep(0.1)
        log.seek(0)
        return proc, log

    @staticmethod
    def _stop(proc):
        if proc.poll() is None:
            proc.terminate()
            proc.wait(30)

    def test_the_daemon_runs_on_roots_file(self):
        proc, _log = self._start()
        self.assertIsNone(proc.poll())
        self.assertEqual(self.tree.root, self.mod.resctrl_root())
        # resctrl_fake came from root's file (through the daemon's memory
        # file), so the plain tree is written.
        self.mod.create_group('resq-x')
        self.assertTrue(os.path.isdir(os.path.join(self.tree.root,
                                                   'resq-x')))
        with open('/proc/%d/status' % proc.pid) as f:
            status = f.read()
        self.assertIn('NoNewPrivs:\t1', status)
        self.assertIn('CapBnd:\t0000000000000002', status)

    def test_a_pass_as_one_batch(self):
        """The enforcer's batch crosses the socket and keeps its order."""
        self._start()
        ops = [['create', 'resq-b', 'resq-b'],
               ['schemata', 'resq-b', 'resq-b', {0: 0x3}],
               ['cpus', 'resq-b', 'resq-b', [1]],
               ['create', 'resq-c', 'resq-c/../x'],
               ['cpus', 'resq-c', 'resq-c', [2]]]
        out = self.mod.run_ops(ops)
        self.assertEqual([None, None, None], out[:3])
        self.assertIsInstance(out[3], exception.ResctrlError)
        self.assertEqual('skipped', out[4])
        with open(os.path.join(self.tree.root, 'resq-b', 'cpus_list')) as f:
            self.assertEqual('1\n', f.read())
        # A batch holding an operation outside the known kinds is refused
        # whole, before any write.
        exc = self.assertRaises(
            exception.ResctrlError, self.mod.apply_ops,
            [['create', None, 'resq-d'], ['unlink', None, '/etc/passwd']])
        self.assertIn('refused resctrl batch operation', exc.message)
        self.assertFalse(os.path.exists(os.path.join(self.tree.root,
                                                     'resq-d')))

    def test_a_file_the_agent_could_swap_starts_no_daemon(self):
        os.chown(os.path.dirname(self.root_conf), 65534, 65534)
        proc, log = self._start()
        self.assertEqual(2, proc.wait(60))
        self.assertIn('must belong to root (it is uid 65534)', log.read())
        self.assertRaises(common_privsep.DaemonUnreachable,
                          self.mod.resctrl_root)
        self.assertFalse(os.path.exists(os.path.join(self.tree.root,
                                                     'resq-x')))

    def test_under_the_units_limits(self):
        """As its systemd unit starts it: bounding set, no_new_privs.

        setpriv stands in for systemd (CapabilityBoundingSet=,
        NoNewPrivileges=yes); the daemon must start and serve within them.
        """
        if not shutil.which('setpriv'):
            self.skipTest('setpriv (util-linux) is not installed')
        unit = os.path.join(os.path.dirname(os.path.dirname(
            os.path.dirname(os.path.abspath(__file__)))), 'etc', 'systemd',
            'resq-privsep-resctrl.service')
        with open(unit) as f:
            (line,) = [x for x in f if x.startswith('CapabilityBoundingSet=')]
        bounding = ','.join(['-all'] + ['+' + c[len('CAP_'):].lower()
                                        for c in line.split('=')[1].split()])
        proc, _log = self._start(['setpriv', '--bounding-set', bounding,
                                  '--no-new-privs', '--'])
        self.assertIsNone(proc.poll(), _log.read())
        self.mod.create_group('resq-x')
        self.assertTrue(os.path.isdir(os.path.join(self.tree.root,
                                                   'resq-x')))

    def _until_closed(self, s):
        """Read (the child's log records) until the daemon hangs up."""
        try:
            while s.recv(65536):
                pass
        except ConnectionResetError:
            pass
        s.close()

    def _until_children_ended(self, pid, seconds=30):
        """Wait until every child of ``pid`` has exited (or is a zombie)."""
        deadline = time.monotonic() + seconds
        while True:
            with open('/proc/%d/task/%d/children' % (pid, pid)) as f:
                children = f.read().split()
            alive = []
            for child in children:
                try:
                    with open('/proc/%s/stat' % child) as f:
                        state = f.read().rsplit(')', 1)[1].split()[0]
                except OSError:
                    continue
                if state != 'Z':
                    alive.append(child)
            if not alive:
                return
            if time.monotonic() > deadline:
                self.fail('children %s of the daemon still run after %d s'
                          % (alive, seconds))
            time.sleep(0.05)

    def test_bounded_against_its_client(self):
        """Oversized messages, a reset, too many connections: bounded."""
        proc, _log = self._start()
        path = os.path.join(self.sockdir, 'resctrl.sock')
        # 1 MiB of empty maps as a message id: the child refuses to decode
        # it and ends; the daemon goes on.
        s = socket.socket(socket.AF_UNIX)
        s.connect(path)
        n = 1024 * 1024
        try:
            s.sendall(b'\x92\xdd' + n.to_bytes(4, 'big') + b'\x80' * n
                      + b'\x91\x01')
        except OSError:
            pass        # the child hung up while we were sending
        s.settimeout(30)
        self._until_closed(s)
        # A client that sends and resets: no traceback unwinds into the
        # parent's code, which keeps serving.
        for _ in range(3):
            s = socket.socket(socket.AF_UNIX)
            s.connect(path)
            s.sendall(b'\x92\x01\x91\x01')
            s.close()
        # The daemon accepts in order: once a later connection is served,
        # the three were accepted (one still in the backlog would take a
        # place among the four held below).
        s = socket.socket(socket.AF_UNIX)
        s.connect(path)
        s.sendall(b'\x92\x01\x91\x01')
        s.settimeout(30)
        self.assertNotEqual(b'', s.recv(64))
        s.close()
        # Their children count until they have ended (the daemon reaps
        # them at its next accept): on a busy machine they may not have.
        self._until_children_ended(proc.pid)
        # max_connections (4 by default) at once, the fifth is refused.
        held = []
        for _ in range(4):
            s = socket.socket(socket.AF_UNIX)
            s.connect(path)
            s.sendall(b'\x92\x01\x91\x01')
            s.settimeout(30)
            self.assertNotEqual(b'', s.recv(64))
            held.append(s)
        extra = socket.socket(socket.AF_UNIX)
        extra.connect(path)
        extra.settimeout(30)
        self.assertEqual(b'', extra.recv(1))   # not even the child's log
        extra.close()
        for s in held:
            s.close()
        self.assertIsNone(proc.poll())
        # Once they end, the agent is served again.
        deadline = time.monotonic() + 30
        while True:
            try:
                self.assertEqual(self.tree.root, self.mod.resctrl_root())
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                resq_agent.privsep.resctrl_pctxt.stop()
                time.sleep(0.2)
        _log.seek(0)
        text = _log.read()
        self.assertNotIn('Error in sys.excepthook', text)
        self.assertIn('4 served already', text)
