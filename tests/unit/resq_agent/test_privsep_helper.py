"""resq-privsep-helper: the caller chooses nothing root reads or talks to.

The races are run for real: a process of another user (``nobody``)
exchanges directories (``renameat2(RENAME_EXCHANGE)``) or socket names in
a loop while the helper reads and connects, as root. They need root, as
the attack does; without it they are skipped.
"""

import io
import os
import shutil
import socket
import subprocess
import tempfile
import time

import fixtures
from oslo_config import cfg

from resq_agent.cmd import privsep_helper
from tests import base

CTX = 'resq_agent.privsep.resctrl_pctxt'
NOBODY = 65534
# The attacker's interpreter: one ``nobody`` can run (the test's may live
# under root's home); its scripts need the standard library only.
ATTACKER_PYTHON = '/usr/bin/python3'
GOOD = b'[resq_agent]\nresctrl_root = /sys/fs/resctrl\n'

# Exchanges two names for as long as the stop file is absent (at most 60 s),
# then prints how many exchanges went through and how many were refused.
SWAPPER = r'''
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
a, b, stop = (p.encode() for p in sys.argv[1:4])
done = refused = 0
end = time.monotonic() + 60
while not os.path.exists(stop) and time.monotonic() < end:
    if libc.renameat2(-100, a, -100, b, 2) == 0:
        done += 1
    else:
        refused += 1
print(done, refused)
'''


def evil_logging_ini(marker):
    """A logging configuration whose ``fileConfig`` creates ``marker``."""
    return ('[loggers]\nkeys=root\n[handlers]\nkeys=h\n[formatters]\n'
            'keys=\n[logger_root]\nhandlers=h\n[handler_h]\n'
            'class=StreamHandler\nargs=(open(%r, "w"),)\n' % marker)


def listen(test, path, backlog=4):
    """A non-blocking Unix socket listening at ``path``, closed at cleanup."""
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(path)
    sock.listen(backlog)
    sock.setblocking(False)
    test.addCleanup(sock.close)
    return sock


def _need_root(test):
    if os.geteuid() != 0 or not os.access(ATTACKER_PYTHON, os.X_OK):
        test.skipTest('the attacker and root are different users only '
                      'when the tests run as root')


class Tree(fixtures.Fixture):
    """A tree under /tmp (sticky, root's) that ``nobody`` can walk."""

    def _setUp(self):
        self.top = tempfile.mkdtemp(prefix='resq-helper-', dir='/tmp')
        os.chmod(self.top, 0o755)
        self.addCleanup(shutil.rmtree, self.top, True)

    def dir(self, rel, uid=0, mode=0o755):
        path = os.path.join(self.top, rel)
        os.mkdir(path)
        os.chown(path, uid, uid)
        os.chmod(path, mode)
        return path

    def file(self, rel, data, uid=0, mode=0o644):
        path = os.path.join(self.top, rel)
        with open(path, 'wb') as f:
            f.write(data)
        os.chown(path, uid, uid)
        os.chmod(path, mode)
        return path


class Swapper(fixtures.Fixture):
    """``nobody`` exchanging ``a`` and ``b`` in a loop until cleaned up."""

    def __init__(self, a, b):
        super().__init__()
        self.a, self.b = a, b

    def _setUp(self):
        self.stop = tempfile.mktemp(prefix='resq-swap-stop-', dir='/tmp')
        self.proc = subprocess.Popen(
            [ATTACKER_PYTHON, '-c', SWAPPER, self.a, self.b, self.stop],
            user=NOBODY, group=NOBODY, cwd='/', stdout=subprocess.PIPE,
            text=True)
        self.addCleanup(self._end)
        time.sleep(0.05)

    def _end(self):
        if self.proc.poll() is None:
            open(self.stop, 'w').close()
            self.proc.wait(30)
        if os.path.exists(self.stop):
            os.unlink(self.stop)

    def counts(self):
        """``(exchanges, refusals)``, once the swapper stopped."""
        self._end()
        done, refused = self.proc.stdout.read().split()
        return int(done), int(refused)


class ParseTest(base.TestCase):

    def test_the_checked_arguments_only(self):
        self.assertEqual(
            (CTX, '/tmp/tmpab_12cd/privsep.sock'),
            privsep_helper.parse(['--config-file', '/home/resq/evil.conf',
                                  '--privsep_context', CTX,
                                  '--privsep_sock_path',
                                  '/tmp/tmpab_12cd/privsep.sock']))

    def test_injections_are_refused(self):
        sock = '/tmp/tmpab_12cd/privsep.sock'
        cases = [
            # A second context after the first (oslo.config keeps the last).
            ('--privsep_context', CTX, '--privsep_sock_path', sock,
             '--privsep_context', 'other_project.privsep.write_any_pctxt'),
            ('--privsep_context', 'os_brick.privileged.default',
             '--privsep_sock_path', sock),
            ('--privsep_context', CTX, '--privsep_sock_path',
             '/tmp/../etc/privsep.sock'),
            ('--privsep_context', CTX, '--privsep_sock_path', sock,
             '--debug', 'true'),
            ('--privsep_context', CTX),
            ('--privsep_context',),
        ]
        for argv in cases:
            self.assertRaises(privsep_helper.Refused, privsep_helper.parse,
                              list(argv))


class HelperTest(base.TestCase):
    """``main`` as sudo runs it, up to the daemon (``start``)."""

    def setUp(self):
        super().setUp()
        _need_root(self)
        self.useFixture(fixtures.EnvironmentVariable('SUDO_UID'))
        self.tree = self.useFixture(Tree())
        self.tree.dir('etc')
        self.tree.dir('etc/privsep')
        self.config = self.tree.file('etc/privsep/agent.conf', GOOD)
        self.sockdir = self.tree.dir('sock', mode=0o700)
        self.sock_path = os.path.join(self.sockdir, 'privsep.sock')
        self.listener = listen(self, self.sock_path)
        self.started = []

    def run_helper(self, config=None, sock=None, conf=None):
        def start(conf, context, sock):
            self.started.append((conf, context, sock))
            sock.close()
            return 0

        argv = ['--config-file', '/home/resq/evil.conf',
                '--privsep_context', CTX,
                '--privsep_sock_path', sock or self.sock_path]
        return privsep_helper.main(argv, config_file=config or self.config,
                                   start=start,
                                   conf=conf or cfg.ConfigOpts())

    def err(self):
        stream = io.StringIO()
        self.useFixture(fixtures.MonkeyPatch('sys.stderr', stream))
        return stream

    def test_roots_content_reaches_the_daemon_from_memory(self):
        self.useFixture(fixtures.EnvironmentVariable(
            'OS_RESQ_AGENT__RESCTRL_ROOT', '/home/resq/tree'))
        conf = cfg.ConfigOpts()
        conf.register_opt(cfg.StrOpt('resctrl_root'), group='resq_agent')
        self.assertEqual(0, self.run_helper(conf=conf))
        [(conf, context, sock)] = self.started
        self.assertEqual(CTX, context)
        self.assertEqual('/sys/fs/resctrl', conf.resq_agent.resctrl_root)
        # Not the path: a memory file, which _fake_from_root trusts.
        self.assertEqual([privsep_helper.verified_config()],
                         conf.config_file)
        self.assertTrue(conf.config_file[0].startswith('/proc/self/fd/'))
        # And the daemon's end of the socket is the agent's listener.
        self.listener.accept()[0].close()

    def test_files_others_could_change_are_refused(self):
        etc = os.path.join(self.tree.top, 'etc')
        cases = [
            (self.config, 0, 0o664, 'must be writable by root alone'),
            (os.path.dirname(self.config), 0, 0o777,
             'must be writable by root alone'),
            (etc, NOBODY, 0o755, 'must belong to root (it is uid 65534)'),
            (self.config, NOBODY, 0o644, 'must belong to root'),
        ]
        for path, uid, mode, message in cases:
            st = os.stat(path)
            os.chown(path, uid, uid)
            os.chmod(path, mode)
            self.assertEqual(2, self.run_helper(), path)
            os.chown(path, st.st_uid, st.st_gid)
            os.chmod(path, st.st_mode)
        self.assertEqual([], self.started)
        os.chown(etc, NOBODY, NOBODY)
        exc = self.assertRaises(privsep_helper.Refused,
                                privsep_helper.read_root_file, self.config)
        self.assertEqual('%s must belong to root (it is uid 65534): the user '
                         'owning it can replace what root reads beneath it'
                         % etc, str(exc))
        os.chown(etc, 0, 0)
        self.assertEqual(0, self.run_helper())

    def test_symbolic_links_are_refused(self):
        link = os.path.join(self.tree.top, 'etc', 'link.conf')
        os.symlink(self.config, link)
        exc = self.assertRaises(privsep_helper.Refused,
                                privsep_helper.read_root_file, link)
        self.assertIn('a symbolic link is refused', str(exc))
        os.symlink(os.path.join(self.tree.top, 'etc'),
                   os.path.join(self.tree.top, 'etc2'))
        exc = self.assertRaises(
            privsep_helper.Refused, privsep_helper.read_root_file,
            os.path.join(self.tree.top, 'etc2', 'privsep', 'agent.conf'))
        self.assertIn('cannot be opened as a directory', str(exc))
        self.assertIn('a symbolic link is refused', str(exc))

    def test_no_logging_file_from_the_configuration(self):
        marker = os.path.join(self.tree.top, 'ran')
        ini = self.tree.file('etc/logging.ini',
                             evil_logging_ini(marker).encode())
        for opt, value in (('log_config_append', ini),
                           ('log_file', '/tmp/x.log'),
                           ('log_dir', '/tmp')):
            config = self.tree.file(
                'etc/privsep/%s.conf' % opt,
                b'[DEFAULT]\n%s = %s\n' % (opt.encode(), value.encode()))
            err = self.err()
            self.assertEqual(2, self.run_helper(config=config), opt)
            self.assertIn('names %s' % opt, err.getvalue())
        self.assertEqual([], self.started)
        self.assertFalse(os.path.exists(marker))

    def test_a_socket_of_someone_else_is_refused(self):
        other = self.tree.dir('other', uid=NOBODY, mode=0o700)
        path = os.path.join(other, 'privsep.sock')
        exc = self.assertRaises(privsep_helper.Refused,
                                privsep_helper.connect_socket, path, 0)
        self.assertIn('must belong to the invoking user (uid 0)', str(exc))
        os.chmod(self.sockdir, 0o770)
        exc = self.assertRaises(privsep_helper.Refused,
                                privsep_helper.connect_socket,
                                self.sock_path, 0)
        self.assertIn('writable by it alone', str(exc))
        os.chmod(self.sockdir, 0o700)
        # The invoking user (SUDO_UID) owns the name, root serves it: the
        # name was swapped after the check, or points at root's service.
        os.chown(self.sockdir, NOBODY, NOBODY)
        os.chown(self.sock_path, NOBODY, NOBODY)
        exc = self.assertRaises(privsep_helper.Refused,
                                privsep_helper.connect_socket,
                                self.sock_path, NOBODY)
        self.assertIn('is served by uid 0, not the invoking user (uid '
                      '65534)', str(exc))

    def test_a_symlinked_socket_is_never_connected(self):
        decoy_path = os.path.join(self.tree.top, 'root-service.sock')
        decoy = listen(self, decoy_path, 4)
        link = os.path.join(self.sockdir, 'link', 'privsep.sock')
        os.mkdir(os.path.dirname(link), 0o700)
        os.symlink(decoy_path, link)
        err = self.err()
        self.assertEqual(2, self.run_helper(sock=link))
        self.assertIn('is not a socket of uid 0 (a symbolic link is '
                      'refused)', err.getvalue())
        self.assertRaises(BlockingIOError, decoy.accept)
        self.assertEqual([], self.started)

    def test_the_socket_belongs_to_the_sudo_user(self):
        self.useFixture(fixtures.EnvironmentVariable('SUDO_UID', '65534'))
        self.assertEqual(65534, privsep_helper.invoking_uid())
        self.assertEqual(2, self.run_helper())
        self.useFixture(fixtures.EnvironmentVariable('SUDO_UID'))
        self.assertEqual(0, privsep_helper.invoking_uid())


class RaceTest(base.TestCase):
    """The attack of the review, run against the helper for real."""

    def setUp(self):
        super().setUp()
        _need_root(self)
        self.useFixture(fixtures.EnvironmentVariable('SUDO_UID'))
        self.tree = self.useFixture(Tree())
        self.marker = os.path.join(self.tree.top, 'ran-as-root')
        self.evil_ini = evil_logging_ini(self.marker)

    def lay_out(self, owner):
        """``etc-resq`` of ``owner`` with ``privsep`` and ``evil`` in it.

        ``privsep`` is root's, ``evil`` the attacker's, whose file names a
        logging configuration that runs code.
        """
        self.tree.dir('etc-resq', uid=owner)
        self.tree.dir('etc-resq/privsep')
        config = self.tree.file('etc-resq/privsep/agent.conf', GOOD)
        self.tree.dir('etc-resq/evil', uid=NOBODY)
        ini = self.tree.file('etc-resq/evil/logging.ini',
                             self.evil_ini.encode(), uid=NOBODY)
        self.tree.file('etc-resq/evil/agent.conf',
                       b'[DEFAULT]\nlog_config_append = %s\n' % ini.encode(),
                       uid=NOBODY)
        return config

    def helper(self, config, attempts):
        """``main`` run ``attempts`` times.

        :returns: its return codes, and the ``log_config_append`` each
            daemon would have started with.
        """
        started = []

        def start(conf, context, sock):
            started.append(conf.log_config_append)
            sock.close()
            return 0

        sockdir = tempfile.mkdtemp(dir=self.tree.top)
        path = os.path.join(sockdir, 'privsep.sock')
        listen(self, path, attempts)
        argv = ['--privsep_context', CTX, '--privsep_sock_path', path]
        codes = set()
        for _ in range(attempts):
            codes.add(privsep_helper.main(argv, config_file=config,
                                          start=start,
                                          conf=cfg.ConfigOpts()))
        return codes, started

    def test_swapping_the_directory_under_the_helper(self):
        config = self.lay_out(owner=NOBODY)
        privsep_dir = os.path.dirname(config)
        evil_dir = os.path.join(os.path.dirname(privsep_dir), 'evil')
        swapper = self.useFixture(Swapper(privsep_dir, evil_dir))
        # The race is live: opening the path again sees the other file.
        seen = set()
        for _ in range(5000):
            try:
                with open(config, 'rb') as f:
                    seen.add(f.read() == GOOD)
            except OSError:
                pass
            if seen == {True, False}:
                break
        self.assertEqual({True, False}, seen)
        codes, started = self.helper(config, 200)
        done, _refused = swapper.counts()
        self.assertGreater(done, 0)
        # The directory is the attacker's: refused every time, whichever
        # content was there.
        self.assertEqual({2}, codes)
        self.assertEqual([], started)
        self.assertFalse(os.path.exists(self.marker))

    def test_a_tree_of_roots_cannot_be_swapped(self):
        config = self.lay_out(owner=0)
        privsep_dir = os.path.dirname(config)
        evil_dir = os.path.join(os.path.dirname(privsep_dir), 'evil')
        swapper = self.useFixture(Swapper(privsep_dir, evil_dir))
        codes, started = self.helper(config, 100)
        done, refused = swapper.counts()
        self.assertEqual(0, done)
        self.assertGreater(refused, 0)
        self.assertEqual({0}, codes)
        self.assertEqual([None] * 100, started)
        self.assertFalse(os.path.exists(self.marker))

    def test_swapping_the_socket_for_a_symlink(self):
        """A socket name swapped with a link to root's own service.

        The agent's user swaps them while root connects: root connects only
        to the user's listener, or refuses.
        """
        decoy_path = os.path.join(self.tree.top, 'root-service.sock')
        decoy = listen(self, decoy_path, 64)
        sockdir = self.tree.dir('agent', uid=NOBODY, mode=0o700)
        path = os.path.join(sockdir, 'privsep.sock')
        # The agent's listener, bound by the agent's user.
        agent = subprocess.Popen(
            [ATTACKER_PYTHON, '-c',
             'import socket, sys\n'
             's = socket.socket(socket.AF_UNIX)\n'
             's.bind(sys.argv[1]); s.listen(128); s.settimeout(60)\n'
             'print("ready", flush=True)\n'
             'while True:\n'
             '    s.accept()[0].close()\n', path],
            user=NOBODY, group=NOBODY, cwd='/', stdout=subprocess.PIPE,
            text=True)
        self.addCleanup(agent.wait)
        self.addCleanup(agent.kill)
        self.assertEqual('ready\n', agent.stdout.readline())
        alt = os.path.join(sockdir, 'alt')
        subprocess.run(['ln', '-s', decoy_path, alt], user=NOBODY,
                       group=NOBODY, cwd='/', check=True)
        swapper = self.useFixture(Swapper(path, alt))
        # The race is live: connecting by name reaches root's service.
        for _ in range(5000):
            naive = socket.socket(socket.AF_UNIX)
            try:
                naive.connect(path)
            except OSError:
                pass
            naive.close()
            try:
                decoy.accept()[0].close()
                break
            except BlockingIOError:
                pass
        else:
            self.fail('the swapper never pointed the name at the decoy')
        outcomes = {'connected': 0, 'refused': 0}
        reasons = set()
        for _ in range(3000):
            try:
                privsep_helper.connect_socket(path, NOBODY).close()
                outcomes['connected'] += 1
            except privsep_helper.Refused as exc:
                outcomes['refused'] += 1
                reasons.add(str(exc).replace(path, 'P'))
            if min(outcomes.values()) >= 20:
                break
        done, _refused = swapper.counts()
        self.assertGreater(done, 0)
        self.assertGreater(outcomes['connected'], 0, (outcomes, reasons))
        self.assertGreater(outcomes['refused'], 0, (outcomes, reasons))
        # Root never reached root's own service.
        self.assertRaises(BlockingIOError, decoy.accept)
