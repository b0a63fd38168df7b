"""The privileged daemon's pieces: its table, dispatch, hardening, paths.

The whole daemon, started by root and attacked by an unprivileged user, is
tests/host/test_privsep_boundary.py.
"""

import contextlib
import inspect
import io
import os
import socket
import sys
import threading
import time
from unittest import mock

from oslo_privsep import comm

from resq_agent import privsep
from resq_agent.privsep import daemon
from resq_agent import privsep_boot
from resq_common import exception
from resq_common import privsep as common_privsep
from resq_common import resctrl_writer
from resq_common import rootpath
from tests import base
from tests.fixtures import resctrl as resctrl_fixture

NOBODY = 65534


def _root_only(test):
    if os.geteuid() != 0:
        test.skipTest('needs root (ownership and capabilities)')


class TableTest(base.TestCase):

    def test_the_table_is_every_entrypoint_and_nothing_else(self):
        for name, spec in daemon.CONTEXTS.items():
            pctxt, table = daemon.entrypoints(name, spec)
            module = sys.modules[spec.module]
            found = {'%s.%s' % (spec.module, fname)
                     for fname, obj in inspect.getmembers(module)
                     if pctxt.is_entrypoint(obj)}
            self.assertEqual(found, set(table), name)
            self.assertIs(getattr(privsep, spec.pctxt), pctxt)

    def test_capabilities_per_context(self):
        self.assertEqual((1,), daemon.CONTEXTS['resctrl'].capabilities)
        self.assertEqual((1, 17), daemon.CONTEXTS['pqos'].capabilities)
        self.assertEqual((1,), daemon.CONTEXTS['openflow'].ambient)
        self.assertEqual(sorted(privsep_boot.CONTEXTS),
                         sorted(daemon.CONTEXTS))


class DispatchTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(base.PrivsepInProcess(self.conf))
        spec = daemon.CONTEXTS['resctrl']
        pctxt, table = daemon.entrypoints('resctrl', spec)
        a, b = socket.socketpair()
        self.addCleanup(a.close)
        self.addCleanup(b.close)
        self.daemon = daemon.RestrictedDaemon(comm.ServerChannel(b), pctxt,
                                              table, spec)
        self.tree = self.useFixture(resctrl_fixture.ResctrlTree())
        self.flags('resq_agent', resctrl_root=self.tree.root)

    def test_a_name_outside_the_table_is_refused_before_import(self):
        name = 'tests.unit.resq_agent.never_imported_marker'
        for call in ('%s.x' % name, 'numpy.f2py.__main__.x',
                     'resq_agent.privsep.resctrl._writer', 'os.system', 7):
            reply = self.daemon._process_cmd('1', comm.Message.CALL, call,
                                             [], {})
            self.assertEqual(comm.Message.ERR.value, reply[0])
            self.assertEqual('builtins.NameError', reply[1])
            self.assertIn('not one of this context', reply[2][0])
        self.assertNotIn(name, sys.modules)

    def test_a_table_function_runs(self):
        reply = self.daemon._process_cmd(
            '1', comm.Message.CALL, 'resq_agent.privsep.resctrl.resctrl_root',
            [], {})
        self.assertEqual((comm.Message.RET.value, self.tree.root), reply)
        self.assertEqual((comm.Message.PONG.value,),
                         self.daemon._process_cmd('2', comm.Message.PING))


class HardenTest(base.TestCase):
    """In a forked child: what the kernel says of the hardened process."""

    def _in_child(self, spec):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            try:
                daemon.harden(spec)
                with open('/proc/self/status') as f:
                    status = dict(line.split(':', 1) for line in f)
                out = '%s %s %s %d' % (
                    status['NoNewPrivs'].strip(), status['CapBnd'].strip(),
                    status['CapEff'].strip(),
                    daemon.prctl(daemon.PR_GET_SECUREBITS))
                # uid 0 gains nothing on exec: a shell reports no caps.
                os.write(w, out.encode())
            finally:
                os._exit(0)
        os.close(w)
        with os.fdopen(r) as f:
            out = f.read()
        os.waitpid(pid, 0)
        return out.split()

    def test_bounding_set_no_new_privs_and_securebits(self):
        _root_only(self)
        nnp, bnd, eff, bits = self._in_child(daemon.CONTEXTS['resctrl'])
        self.assertEqual('1', nnp)
        self.assertEqual(1 << 1, int(bnd, 16))
        self.assertEqual(1 << 1, int(eff, 16))
        self.assertEqual(daemon.securebits(daemon.CONTEXTS['resctrl']),
                         int(bits))
        nnp, bnd, eff, bits = self._in_child(daemon.CONTEXTS['pqos'])
        self.assertEqual((1 << 1) | (1 << 17), int(bnd, 16))


class RootPathTest(base.TestCase):

    def test_a_symbolic_link_anywhere_is_refused(self):
        real = os.path.join(self.tmp, 'real', 'sub')
        os.makedirs(real)
        os.symlink(os.path.join(self.tmp, 'real'),
                   os.path.join(self.tmp, 'link'))
        exc = self.assertRaises(
            rootpath.Refused, rootpath.open_dir,
            os.path.join(self.tmp, 'link', 'sub'), lambda st, where: None)
        self.assertIn('link cannot be opened as a directory', str(exc))
        fd, name = rootpath.open_dir(real, lambda st, where: None)
        os.close(fd)
        self.assertEqual('sub', name)

    def test_plain_absolute_paths_only(self):
        for bad in ('relative/path', '/a/../b', '/a/./b'):
            self.assertRaises(rootpath.Refused, rootpath.components, bad)

    def test_a_file_or_directory_of_another_user_is_refused(self):
        _root_only(self)
        d = os.path.join(self.tmp, 'conf')
        os.mkdir(d, 0o755)
        path = os.path.join(d, 'x.conf')
        with open(path, 'w') as f:
            f.write('[DEFAULT]\n')
        self.assertEqual(b'[DEFAULT]\n', rootpath.read_root_file(path))
        os.chown(d, NOBODY, NOBODY)
        exc = self.assertRaises(rootpath.Refused, rootpath.read_root_file,
                                path)
        self.assertIn('%s must belong to root (it is uid %d)'
                      % (d, NOBODY), str(exc))
        os.chown(d, 0, 0)
        os.chmod(path, 0o666)
        exc = self.assertRaises(rootpath.Refused, rootpath.read_root_file,
                                path)
        self.assertIn('must be writable by root alone', str(exc))

    def test_a_code_tree_others_can_write_is_refused(self):
        _root_only(self)
        top = os.path.join(self.tmp, 'pkg')
        cache = os.path.join(top, 'conf', '__pycache__')
        os.makedirs(cache, 0o755)
        os.chmod(top, 0o755)
        os.chmod(os.path.join(top, 'conf'), 0o755)
        rootpath.check_tree(top)
        os.chmod(cache, 0o777)
        exc = self.assertRaises(rootpath.Refused, rootpath.check_tree, top)
        self.assertIn('__pycache__ must be writable by root alone',
                      str(exc))
        os.chmod(cache, 0o755)
        os.chown(cache, NOBODY, NOBODY)
        self.assertRaises(rootpath.Refused, rootpath.check_tree, top)
        rootpath.check_tree(top, owners=(0, NOBODY))


class BootTest(base.TestCase):

    def test_the_interpreter_is_isolated_and_reads_no_bytecode(self):
        cmd = privsep_boot.command(['--context', 'resctrl'])
        self.assertEqual([sys.executable, '-I', '-B', '-X',
                          'pycache_prefix=' + privsep_boot.NO_PYCACHE, '-m',
                          'resq_agent.privsep_boot', '--context', 'resctrl'],
                         cmd)
        self.assertFalse(privsep_boot.hardened_interpreter())
        self.assertTrue(privsep_boot.NO_PYCACHE.startswith('/proc/'))

    def test_only_known_contexts(self):
        self.assertRaises(SystemExit, privsep_boot.parse,
                          ['--context', 'numpy.f2py.__main__'])

    def test_code_another_user_may_change_is_refused(self):
        _root_only(self)
        entry = os.path.join(self.tmp, 'site')
        os.mkdir(entry, 0o755)
        os.chown(entry, NOBODY, NOBODY)
        self.useFixture(base.fixtures.MonkeyPatch('sys.path', [entry]))
        exc = self.assertRaises(rootpath.Refused, privsep_boot.check_code,
                                {0})
        self.assertIn('%s must belong to root' % entry, str(exc))

    def test_not_in_the_hardened_interpreter(self):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.assertEqual(2, privsep_boot.main(['--context', 'resctrl']))
        self.assertIn('not started in the hardened interpreter; run '
                      'resq-privsep-daemon', err.getvalue())

    def test_the_stub_runs_nothing_of_the_projects(self):
        stub = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
            os.path.dirname(os.path.abspath(__file__))))), 'bin',
            'resq-privsep-daemon')
        with open(stub) as f:
            text = f.read()
        self.assertTrue(text.startswith('#!python\n'))
        code = [line for line in text.splitlines()
                if line and not line.startswith('#')]
        self.assertEqual(['import os', 'import sys'], code[:2])
        self.assertNotIn('resq_agent.', ''.join(code[:2]))
        self.assertIn("'-m', 'resq_agent.privsep_boot'", text)
        self.assertIn(privsep_boot.NO_PYCACHE, text)

    def test_not_started_by_root(self):
        if os.geteuid() == 0:
            self.skipTest('checks the refusal of a non-root start')
        self.useFixture(base.fixtures.MonkeyPatch(
            'resq_agent.privsep_boot.hardened_interpreter', lambda: True))
        self.assertEqual(2, privsep_boot.main(['--context', 'resctrl']))


class ClientTest(base.TestCase):

    def test_no_daemon_on_the_socket(self):
        ctx = privsep.resctrl_pctxt
        exc = self.assertRaises(
            common_privsep.DaemonUnreachable,
            common_privsep.SocketClientChannel,
            os.path.join(self.tmp, 'resctrl.sock'), ctx)
        self.assertIn('is resq-privsep-daemon --context resctrl running',
                      str(exc))

    def test_a_daemon_not_of_roots_is_refused(self):
        _root_only(self)
        path = os.path.join(self.tmp, 'resctrl.sock')
        s = socket.socket(socket.AF_UNIX)
        s.bind(path)
        s.close()
        os.unlink(path)
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(r)
                # Bound by root, then served by a process of nobody's
                # (SO_PEERCRED reports who called listen).
                s = socket.socket(socket.AF_UNIX)
                s.bind(path)
                os.setgid(NOBODY)
                os.setuid(NOBODY)
                s.listen(1)
                os.write(w, b'x')
                conn, _ = s.accept()
                conn.recv(1)
            finally:
                os._exit(0)
        os.close(w)
        self.assertEqual(b'x', os.read(r, 1))
        os.close(r)
        try:
            exc = self.assertRaises(
                common_privsep.DaemonUnreachable,
                common_privsep.SocketClientChannel, path,
                privsep.resctrl_pctxt)
            self.assertIn('runs as uid %d, not root' % NOBODY, str(exc))
        finally:
            os.waitpid(pid, 0)


class RefusingDaemonTest(base.TestCase):
    """A daemon (root's) that closes at once: an error, never a hang."""

    def test_a_reset_before_the_answer_fails_the_start(self):
        _root_only(self)
        path = os.path.join(self.tmp, 'resctrl.sock')
        server = socket.socket(socket.AF_UNIX)
        server.bind(path)
        server.listen(1)
        self.addCleanup(server.close)

        def refuse():
            conn, _ = server.accept()
            # The client's hello arrives and is never read: closing then
            # resets the connection (what resq-privsep-daemon does to a
            # user that is not its client_user).
            time.sleep(0.3)
            conn.close()

        threading.Thread(target=refuse, daemon=True).start()
        outcome = {}

        def start():
            try:
                common_privsep.SocketClientChannel(path,
                                                   privsep.resctrl_pctxt)
                outcome['result'] = 'started'
            except Exception as exc:
                outcome['result'] = exc

        client = threading.Thread(target=start, daemon=True)
        client.start()
        client.join(30)
        self.assertFalse(client.is_alive(), 'the client hung')
        self.assertIsInstance(outcome['result'],
                              common_privsep.DaemonUnreachable)
        self.assertIn('client_user', str(outcome['result']))


class FakeTreeAncestorsTest(base.TestCase):

    def setUp(self):
        super().setUp()
        _root_only(self)
        self.useFixture(base.fixtures.MonkeyPatch(
            'resq_common.resctrl_writer.CHECK_FS_MAGIC', False))

    def _tree(self, parent):
        os.makedirs(parent, 0o755, exist_ok=True)
        return self.useFixture(resctrl_fixture.ResctrlTree(
            root=os.path.join(parent, 'resctrl')))

    def test_a_fake_tree_below_another_users_directory_is_refused(self):
        parent = os.path.join(self.tmp, 'data')
        tree = self._tree(parent)
        with resctrl_writer.Writer(tree.root, require_mount=False) as w:
            w.create_group('resq-a')
        os.chown(parent, NOBODY, NOBODY)
        exc = self.assertRaises(exception.ResctrlError,
                                resctrl_writer.Writer(
                                    tree.root, require_mount=False).__enter__)
        self.assertIn('%s must belong to root' % parent, str(exc))

    def test_a_link_above_the_tree_is_refused(self):
        real = os.path.join(self.tmp, 'real')
        tree = self._tree(real)
        link = os.path.join(self.tmp, 'link')
        os.symlink(real, link)
        exc = self.assertRaises(
            exception.ResctrlError,
            resctrl_writer.Writer(os.path.join(link, 'resctrl'),
                                  require_mount=False).__enter__)
        self.assertIn('symbolic link is refused', str(exc))
        self.assertTrue(os.path.isdir(tree.root))


class WideMasksTest(base.TestCase):
    """Masks wider than msgpack's 64 bits cross the boundary as hex."""

    def test_round_trip_and_refusals(self):
        from resq_agent.privsep import resctrl as priv

        wide = {0: (1 << 127) | 1, 1: 0xff, 2: True}
        sent = priv._encode(wide)
        self.assertEqual({0: '0x%x' % ((1 << 127) | 1), 1: 0xff, 2: True},
                         sent)
        self.assertEqual(wide, priv._decode(sent))
        # Strings of another shape stay strings: the writer refuses them.
        self.assertEqual({0: '0xZZ', 1: '1' * 300},
                         priv._decode({0: '0xZZ', 1: '1' * 300}))
        self.assertEqual('0x' + '1' * 257,
                         priv._decode({0: '0x' + '1' * 257})[0])
        self.assertEqual([1], priv._encode([1]))


class ReadinessTest(base.TestCase):

    def test_systemd_hears_ready(self):
        path = os.path.join(self.tmp, 'notify')
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
            s.bind(path)
            self.assertTrue(daemon.notify_ready({'NOTIFY_SOCKET': path}))
            self.assertEqual(b'READY=1', s.recv(64))
        self.assertFalse(daemon.notify_ready({}))
        # Nobody listening: logged, not fatal.
        self.assertFalse(daemon.notify_ready({'NOTIFY_SOCKET': path}))

    def test_the_agent_waits_for_a_daemon_starting(self):
        path = os.path.join(self.tmp, 'late.sock')
        listener = socket.socket(socket.AF_UNIX)
        self.addCleanup(listener.close)

        def later():
            time.sleep(0.5)
            listener.bind(path)
            listener.listen(1)

        t = threading.Thread(target=later)
        t.start()
        s = socket.socket(socket.AF_UNIX)
        self.addCleanup(s.close)
        common_privsep._connect(s, path, wait=10)
        t.join()
        gone = socket.socket(socket.AF_UNIX)
        self.addCleanup(gone.close)
        started = time.monotonic()
        self.assertRaises(FileNotFoundError, common_privsep._connect, gone,
                          path + '.none', 0.3)
        self.assertLess(time.monotonic() - started, 5)


class RefusalLogTest(base.TestCase):
    """Refused connections cannot fill root's log."""

    def test_one_warning_per_interval_with_a_count(self):
        now = [100.0]
        refusals = daemon.RefusalLog(interval=10, clock=lambda: now[0])
        with mock.patch.object(daemon.LOG, 'warning') as warn:
            self.assertTrue(refusals.log('refused pid %d', 1))
            for pid in range(2, 1000):
                now[0] += 0.001
                self.assertFalse(refusals.log('refused pid %d', pid))
            self.assertEqual(1, warn.call_count)
            now[0] = 111.0
            self.assertTrue(refusals.log('refused pid %d', 1000))
        self.assertEqual(2, warn.call_count)
        fmt, *args = warn.call_args[0]
        self.assertIn('and %d other refused connections', fmt)
        self.assertEqual([1000, 998], args[:2])
