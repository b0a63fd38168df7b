"""Attacks on the boundary between resq-agent's user and root.

The threat model (doc/source/admin/privsep.rst): the agent's user, an
unprivileged account, is compromised; it must never get root to do its
bidding. The privileged side is ``resq-privsep-daemon``
(:mod:`resq_agent.privsep_boot`, :mod:`resq_agent.privsep.daemon`), which
root starts and the agent's user only connects to.

:class:`Lab` builds what each attack needs on this machine, as root: an
unprivileged user (``resq-attacker``, the daemon's ``client_user``), a
root-owned directory holding root's configuration and fake resctrl trees,
and the daemons. Each ``attack_*`` function runs one attack twice, the
attacker's code running as that user (``runuser``/``setpriv``):

* against a **weakened** daemon: the same daemon with the one defence
  under test turned off (started through a small ``python -c`` wrapper
  that monkeypatches it), which shows the attack works at all;
* against the **real** daemon, started the way root starts it.

and returns an :class:`Outcome`, True meaning the attack succeeded (root
did the attacker's bidding). Nothing here fixes anything: the lab undoes
every change it made (users it created, ``/etc/sudoers.d`` files, the
directories, the processes) in :meth:`Lab.cleanup`.

Runs as root only. ``python -m tests.host.boundary_attacks`` runs them all.
"""

import collections
import contextlib
import fcntl
import grp
import json
import os
import pwd
import shutil
import signal
import stat
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
import time

from resq_agent import privsep_boot
from resq_fake import resctrl as fake_resctrl

Outcome = collections.namedtuple(
    'Outcome', ['name', 'against_weakened', 'against_real', 'detail'])

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
ATTACKER = 'resq-attacker'
# A user who is not the daemon's client_user (exists on Debian/Ubuntu).
FOREIGN = 'nobody'
PAYLOAD = 'tests.host.payload_on_import'
PAYLOAD_DIR = '/run/resq-boundary'
PAYLOAD_TARGET = PAYLOAD_DIR + '/payload.json'
SUDOERS_PREFIX = '/etc/sudoers.d/zz-resq-boundary-'
NO_PYCACHE = privsep_boot.NO_PYCACHE
HARDENED_FLAGS = ['-I', '-B', '-X', 'pycache_prefix=' + NO_PYCACHE]
# The resctrl context keeps CAP_DAC_OVERRIDE (bit 1) alone.
RESCTRL_CAPS = 1 << 1
WAYS = 20
FULL = (1 << WAYS) - 1
PREFIX = 'resq_agent.privsep.resctrl.'

# -- the attacker's programs (run as ATTACKER or FOREIGN) -----------------

# A privsep client: optional file-system moves first, then calls through
# the resctrl context (daemon_socket, or helper_command as oslo starts a
# daemon), printing one JSON line. The spec is a Python literal.
CLIENT = r'''
import ast, json, os, subprocess, sys
spec = ast.literal_eval(sys.argv[1])
out = {'pre': [], 'results': [], 'start': None}


def emit():
    print(json.dumps(out), flush=True)


for op in spec.get('pre', ()):
    try:
        if op[0] == 'rename':
            os.rename(op[1], op[2])
        elif op[0] == 'symlink':
            os.symlink(op[1], op[2])
        elif op[0] == 'mkdir':
            os.mkdir(op[1], 0o755)
        elif op[0] == 'write':
            with open(op[1], 'w') as f:
                f.write(op[2])
        elif op[0] == 'bind':
            import socket
            s = socket.socket(socket.AF_UNIX)
            s.bind(op[1])
        elif op[0] == 'plant_pyc':
            # An unchecked-hash .pyc: the interpreter never compares it
            # with the source it claims to be.
            import py_compile
            _, source, cfile, marker = op
            with open(source) as f:
                text = f.read()
            evil = os.path.join(os.environ['HOME'], 'agent_evil.py')
            with open(evil, 'w') as f:
                f.write('import os as _o\n'
                        'with open(%r, "w") as _f:\n'
                        '    _f.write("euid=%%d pid=%%d\\n" %% '
                        '(_o.geteuid(), _o.getpid()))\n' % marker)
                f.write(text)
            py_compile.compile(
                evil, cfile=cfile, dfile=source, doraise=True,
                invalidation_mode=py_compile.PycInvalidationMode
                .UNCHECKED_HASH)
            os.chmod(cfile, 0o644)
        elif op[0] == 'run':
            p = subprocess.run(op[1], capture_output=True, text=True,
                               timeout=60)
            out['pre'].append([op[0], 'rc=%d %s' % (
                p.returncode, (p.stderr or p.stdout).strip()[-300:])])
            continue
        out['pre'].append([op[0], 'ok'])
    except Exception as exc:
        out['pre'].append([op[0], 'error: %s: %s'
                           % (type(exc).__name__, exc)])
if not spec.get('calls') and not spec.get('hold'):
    emit()
    os._exit(0)

from oslo_config import cfg
from resq_agent.conf import agent as agent_conf
from resq_agent import privsep
conf = cfg.ConfigOpts()
agent_conf.register_opts(conf)
conf(list(spec.get('conf_args', ())), project='resq',
     default_config_files=[], default_config_dirs=[])
privsep.init(conf)
ctx = privsep.resctrl_pctxt
if spec.get('socket'):
    conf.set_override('daemon_socket', spec['socket'],
                      'resq_privsep_resctrl')
try:
    if spec.get('weak_client'):
        # oslo.privsep's client on a socket, without resq's check that
        # the peer is root.
        import socket
        from oslo_privsep import daemon
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(spec['socket'])
        ctx.channel = daemon._ClientChannel(s, ctx)
    else:
        ctx.start()
    out['start'] = 'ok'
except Exception as exc:
    out['start'] = '%s: %s' % (type(exc).__name__, exc)
    emit()
    os._exit(0)
for name, args, kwargs in spec.get('calls', ()):
    try:
        r = ctx.channel.remote_call(name, args, kwargs,
                                    spec.get('timeout', 10))
        out['results'].append({'ok': repr(r)})
    except Exception as exc:
        out['results'].append({'err': '%s: %s' % (type(exc).__name__,
                                                  exc)})
emit()
if spec.get('hold'):
    # Keep the connection (and the daemon's child serving it) open until
    # the lab closes our stdin.
    sys.stdin.read()
os._exit(0)
'''

# An impostor daemon: speaks oslo.privsep's protocol on a socket of its own
# and answers every call with a forged value.
IMPOSTOR = r'''
import os, socket, sys
from oslo_privsep import comm
path = sys.argv[1]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
os.chmod(path, 0o666)
s.listen(4)
print('listening', flush=True)
while True:
    conn, _ = s.accept()
    ch = comm.ServerChannel(conn)
    try:
        for msgid, msg in ch:
            if msg[0] == comm.Message.PING.value:
                ch.send((msgid, (comm.Message.PONG.value,)))
            else:
                ch.send((msgid, (comm.Message.RET.value,
                                 'FORGED-BY-IMPOSTOR')))
    except Exception:
        pass
    conn.close()
'''

# The agent's privileged calls to partition one new instance (the
# enforcer's order: shrink the default group, create the group, its
# masks, its CPUs), timed; the instance then leaves (untimed).
PARTITION = r'''
import ast, json, os, statistics, sys, time
spec = ast.literal_eval(sys.argv[1])
from oslo_config import cfg
from resq_agent.conf import agent as agent_conf
from resq_agent import privsep
import resq_agent.privsep.resctrl as r
conf = cfg.ConfigOpts()
agent_conf.register_opts(conf)
conf(list(spec.get('conf_args', ())), project='resq',
     default_config_files=[], default_config_dirs=[])
privsep.init(conf)
ctx = privsep.resctrl_pctxt
if spec.get('socket'):
    conf.set_override('daemon_socket', spec['socket'],
                      'resq_privsep_resctrl')
if spec['mode'] == 'inprocess':
    ctx.set_client_mode(False)
full, shrunk = spec['full'], spec['shrunk']
r.resctrl_root()
times = []
for i in range(spec['reps'] + 5):
    t = time.perf_counter()
    r.write_default_l3_masks({0: shrunk})
    r.create_group('resq-bench')
    r.write_l3_masks('resq-bench', {0: 0xf})
    r.assign_cpus('resq-bench', [1, 2])
    if i >= 5:
        times.append(time.perf_counter() - t)
    r.remove_group('resq-bench')
    r.write_default_l3_masks({0: full})
print(json.dumps({'times_ms': [t * 1000 for t in times]}), flush=True)
os._exit(0)
'''

# -- weakened daemons ------------------------------------------------------

# The daemon's own main (resq_agent.privsep_boot.main) with patches.
_WRAPPER = '''\
import os, sys
{path}
from resq_agent import privsep_boot as b
from resq_common import cmdline
cmdline.quiet_eventlet()
from resq_agent.privsep import daemon as d
from oslo_privsep import daemon as od
from resq_common import resctrl_writer as w
{patch}
b.hardened_interpreter = lambda: True
sys.argv[0] = b.__file__
sys.exit(b.main(sys.argv[1:]))
'''

PATCHES = {
    # oslo.privsep's dispatch: import the caller's module, then check.
    'dispatch': 'd.RestrictedDaemon._process_cmd = '
                'od.Daemon._process_cmd',
    # No bounding set drop, no securebits, no no_new_privs.
    'harden': 'd.harden = lambda spec: None',
    # The code others could change is not checked.
    'check_code': 'b.check_code = lambda owners: None',
    # The resctrl root opened by name (a symlink refused only last).
    'walk': 'w.Writer._open_root = '
            'lambda self, hint: os.open(self.root, w._DIR_FLAGS)',
    # Any peer served.
    'peer': 'd._peer = lambda sock: (0, 0, 0)',
    # The socket directory made and used by name, as oslo.privsep's
    # callers do with their sockets.
    'listen': textwrap.dedent('''\
        def _listen(conf, name):
            import pwd, socket
            opts = conf[d.GROUP]
            client = pwd.getpwnam(opts.client_user)
            os.makedirs(opts.socket_dir, 0o755, exist_ok=True)
            path = os.path.join(opts.socket_dir, name + '.sock')
            if os.path.lexists(path):
                os.unlink(path)
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind(path)
            os.chown(path, 0, client.pw_gid)
            os.chmod(path, 0o660)
            s.listen(8)
            return s, path, client.pw_uid
        d.listen = _listen'''),
}


def _status(pid):
    fields = {}
    with open('/proc/%d/status' % pid) as f:
        for line in f:
            key, _, value = line.partition(':')
            fields[key] = value.strip()
    return fields


def children(pid):
    """PIDs whose parent is ``pid``."""
    found = []
    for name in os.listdir('/proc'):
        if not name.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % name) as f:
                data = f.read()
        except OSError:
            continue
        # The command name (2nd field) may hold spaces: split after it.
        rest = data.rsplit(')', 1)[-1].split()
        if int(rest[1]) == pid:
            found.append(int(name))
    return sorted(found)


def daemon_status(pid):
    """``NoNewPrivs``, ``CapBnd`` (and more) of a running daemon.

    :returns: a dict with its ``children`` (each per-connection child's
        same fields) as a list.
    """
    keys = ('Uid', 'NoNewPrivs', 'CapBnd', 'CapEff', 'CapPrm', 'CapInh',
            'CapAmb', 'Seccomp')

    def one(p):
        st = _status(p)
        out = {k: st.get(k) for k in keys}
        out['pid'] = p
        return out

    out = one(pid)
    out['children'] = []
    for child in children(pid):
        try:
            out['children'].append(one(child))
        except OSError:
            pass
    return out


def _caps(text):
    """``{'CapEff': int, ...}`` from ``grep Cap /proc/self/status``."""
    caps = {}
    for line in text.splitlines():
        key, _, value = line.partition(':')
        if key.startswith('Cap'):
            caps[key] = int(value.strip(), 16)
    return caps


class Daemon:
    """A daemon the lab started (root's process and its log)."""

    def __init__(self, lab, name, cmd, socket_path, cwd='/'):
        self.lab = lab
        self.name = name
        self.cmd = cmd
        self.socket = socket_path
        self.log = os.path.join(lab.base, 'logs', name + '.log')
        with open(self.log, 'wb') as log:
            self.proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                cwd=cwd, env=lab.daemon_env(), start_new_session=True)
        lab.daemons.append(self)
        self.started = False

    def wait(self, timeout=60):
        """Until its socket is there (started) or it exits (refused)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            try:
                if stat.S_ISSOCK(os.lstat(self.socket).st_mode):
                    self.started = True
                    break
            except OSError:
                pass
            time.sleep(0.05)
        if not self.started and self.proc.poll() is None:
            self.stop()
            raise RuntimeError('daemon %s did not start in %d s: %s'
                               % (self.name, timeout, self.output()))
        return self

    @property
    def pid(self):
        return self.proc.pid

    def output(self):
        try:
            with open(self.log, errors='replace') as f:
                return f.read()
        except OSError:
            return ''

    def refusal(self):
        """The daemon's refusal line, when it refused to start."""
        lines = [line for line in self.output().splitlines()
                 if 'refused' in line]
        return lines[-1] if lines else self.output()[-400:]

    def stop(self):
        if self.proc.poll() is None:
            for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
                try:
                    os.killpg(self.proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    self.proc.wait(wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        # Its per-connection children share its process group.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        if self in self.lab.daemons:
            self.lab.daemons.remove(self)


class Lab:
    """Users, directories and daemons for the attacks, undone on cleanup.

    Run as root. Labs are serialised (an exclusive lock on this module's
    file) as they share the attacker's account and :data:`PAYLOAD_DIR`.
    """

    def __init__(self, python=None, attacker=ATTACKER):
        self.python = python or sys.executable
        self.bindir = os.path.dirname(os.path.abspath(self.python))
        self.attacker = attacker
        self.daemons = []
        self._undo = []
        self._lock = None
        self.base = None
        self.count = 0
        self._pycache = None

    # -- set-up and clean-up -----------------------------------------
    def __enter__(self):
        self.setup()
        return self

    def __exit__(self, *exc):
        self.cleanup()

    @staticmethod
    def unavailable():
        """Why the lab cannot run here, or None."""
        if os.geteuid() != 0:
            return 'the boundary attacks need root (they create a user ' \
                   'and start root\'s daemons)'
        for tool in ('runuser', 'setpriv', 'useradd', 'userdel'):
            if not shutil.which(tool, path='/usr/sbin:/usr/bin:/sbin:/bin'):
                return '%s is missing' % tool
        return None

    def setup(self):
        why = self.unavailable()
        if why:
            raise RuntimeError(why)
        self._lock = open(__file__, 'rb')
        fcntl.flock(self._lock, fcntl.LOCK_EX)
        try:
            self._setup()
        except BaseException:
            self.cleanup()
            raise

    def _setup(self):
        self._remove_stale_sudoers()
        self.uid, self.gid = self._user(self.attacker)
        foreign = pwd.getpwnam(FOREIGN)
        self.foreign_uid = foreign.pw_uid
        self._passable()
        # /var/tmp: root's and sticky, so root_only accepts it.
        self.base = tempfile.mkdtemp(prefix='resq-boundary-',
                                     dir='/var/tmp')
        os.chmod(self.base, 0o755)
        for d in ('etc', 'logs', 'markers', 'trees'):
            os.mkdir(os.path.join(self.base, d), 0o755)
        self.home = os.path.join(self.base, 'attacker')
        for d in (self.home, os.path.join(self.home, 'tmp')):
            os.mkdir(d, 0o755)
            os.chown(d, self.uid, self.gid)
        for name, text in (('client.py', CLIENT), ('impostor.py', IMPOSTOR),
                           ('partition.py', PARTITION)):
            path = os.path.join(self.home, name)
            with open(path, 'w') as f:
                f.write(text)
            os.chmod(path, 0o644)
        if os.path.lexists(PAYLOAD_DIR):
            shutil.rmtree(PAYLOAD_DIR)
        os.mkdir(PAYLOAD_DIR, 0o755)
        self._pycache = self.pycache_dirs()

    def pycache_dirs(self):
        """``__pycache__`` directories of the code root's daemons run."""
        tops = [os.path.join(REPO, name) for name in os.listdir(REPO)
                if not name.startswith('.')]
        tops.append(sysconfig.get_paths()['purelib'])
        found = set()
        for top in tops:
            for dirpath, dirnames, _files in os.walk(top):
                if '__pycache__' in dirnames:
                    found.add(os.path.join(dirpath, '__pycache__'))
        return found

    def remove_new_pycache(self):
        """Remove the ``__pycache__`` the lab's root processes wrote.

        oslo's helper writes bytecode into the code, with umask 0.
        """
        if self._pycache is None:
            return []
        new = sorted(self.pycache_dirs() - self._pycache)
        for path in new:
            shutil.rmtree(path, ignore_errors=True)
        return new

    def _user(self, name):
        try:
            pw = pwd.getpwnam(name)
        except KeyError:
            subprocess.run(['useradd', '--system', '--no-create-home',
                            '--home-dir', '/nonexistent', '--shell',
                            '/usr/sbin/nologin', '--user-group', name],
                           check=True, capture_output=True)
            self._undo.append(lambda: subprocess.run(
                ['userdel', name], check=False, capture_output=True))
            pw = pwd.getpwnam(name)
        return pw.pw_uid, pw.pw_gid

    def _passable(self):
        """Others may pass through the interpreter's and venv's parents.

        As tests/cloud/aio.py ``stack_user()`` does (o+x, never read);
        restored on clean-up.
        """
        targets = {os.path.realpath(self.python), self.python,
                   os.path.join(REPO, 'resq_agent', '__init__.py')}
        for path in targets:
            parent = os.path.dirname(path)
            while parent not in ('/', ''):
                mode = os.stat(parent).st_mode
                if not mode & 0o001:
                    os.chmod(parent, stat.S_IMODE(mode) | 0o001)
                    self._undo.append(
                        lambda p=parent, m=stat.S_IMODE(mode): os.chmod(p, m))
                parent = os.path.dirname(parent)

    @staticmethod
    def _remove_stale_sudoers():
        directory = os.path.dirname(SUDOERS_PREFIX)
        for name in os.listdir(directory) if os.path.isdir(directory) \
                else ():
            path = os.path.join(directory, name)
            if path.startswith(SUDOERS_PREFIX):
                os.unlink(path)

    def cleanup(self):
        for daemon in list(self.daemons):
            daemon.stop()
        self._kill_leftovers()
        self._remove_stale_sudoers()
        self.remove_new_pycache()
        if os.path.lexists(PAYLOAD_DIR):
            shutil.rmtree(PAYLOAD_DIR, ignore_errors=True)
        if self.base and os.path.isdir(self.base):
            shutil.rmtree(self.base, ignore_errors=True)
        self.base = None
        while self._undo:
            with contextlib.suppress(Exception):
                self._undo.pop()()
        if self._lock is not None:
            fcntl.flock(self._lock, fcntl.LOCK_UN)
            self._lock.close()
            self._lock = None

    def _kill_leftovers(self):
        """Processes still running the lab's files (oslo's helper)."""
        if not self.base:
            return
        me = os.getpid()
        for name in os.listdir('/proc'):
            if not name.isdigit() or int(name) == me:
                continue
            try:
                with open('/proc/%s/cmdline' % name, 'rb') as f:
                    cmdline = f.read()
            except OSError:
                continue
            if self.base.encode() in cmdline:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(name), signal.SIGKILL)

    # -- building blocks ---------------------------------------------
    def path(self, *parts):
        return os.path.join(self.base, *parts)

    def new_dir(self, *parts, owner=0, mode=0o755):
        path = self.path(*parts)
        os.makedirs(path, exist_ok=True)
        os.chmod(path, mode)
        os.chown(path, owner, self.gid if owner else 0)
        return path

    def tree(self, path):
        """A fake resctrl tree at ``path`` (root's), as devstack builds."""
        os.makedirs(os.path.dirname(path), 0o755, exist_ok=True)
        os.mkdir(path, 0o755)
        fake_resctrl.build_resctrl(path, WAYS, (0,), 1, 16, 0, False,
                                   ('other-app',), num_rmids=224,
                                   max_ways=1024, monitoring=True)
        return path

    def root_conf(self, name, resctrl_root, socket_dir):
        """Root's configuration of the daemon (root's, 0644)."""
        path = self.path('etc', name + '.conf')
        with open(path, 'w') as f:
            f.write('[resq_agent]\nresctrl_root = %s\nresctrl_fake = true\n'
                    '\n[resq_privsep_daemon]\nsocket_dir = %s\n'
                    'client_user = %s\n'
                    % (resctrl_root, socket_dir, self.attacker))
        os.chmod(path, 0o644)
        return path

    def setting(self, tag):
        """A fresh tree, socket directory and root's file.

        :returns: ``(conf, tree, socket path)``
        """
        self.count += 1
        tag = '%s-%d' % (tag, self.count)
        tree = self.tree(self.path('trees', tag, 'resctrl'))
        sdir = self.path('run-' + tag)
        conf = self.root_conf(tag, tree, sdir)
        return conf, tree, os.path.join(sdir, 'resctrl.sock')

    def daemon_env(self):
        # What systemd hands a unit: nothing of the caller's.
        return {'PATH': '/usr/sbin:/usr/bin:/sbin:/bin', 'LANG': 'C.UTF-8'}

    @staticmethod
    def _args(conf):
        return ['--context', 'resctrl', '--config-file', conf]

    def real_cmd(self, conf):
        """What root runs (the systemd unit, devstack)."""
        return [self.python] + HARDENED_FLAGS + [
            '-m', 'resq_agent.privsep_boot'] + self._args(conf)

    def stub_cmd(self, conf):
        """The shipped command, ``bin/resq-privsep-daemon``."""
        return [self.python, os.path.join(REPO, 'bin',
                                          'resq-privsep-daemon')] + \
            self._args(conf)

    def real_cmd_with_path(self, conf, append=(), insert=()):
        """The real daemon, hardened, with directories added to its path.

        ``append``: after site-packages, like a ``setup.py develop``
        install of a checkout; ``insert``: first, like an editable copy.
        """
        code = ('import sys; sys.path[:0] = %r; sys.path.extend(%r); '
                'import runpy; runpy.run_module(%r, run_name="__main__", '
                'alter_sys=True)' % (list(insert), list(append),
                                     'resq_agent.privsep_boot'))
        return [self.python] + HARDENED_FLAGS + ['-c', code] + \
            self._args(conf)

    def weak_cmd(self, conf, patches, append=(), insert=(),
                 hardened=True):
        """The same daemon with ``patches`` (:data:`PATCHES`) applied."""
        path = 'sys.path[:0] = %r; sys.path.extend(%r)' % (list(insert),
                                                           list(append))
        code = _WRAPPER.format(path=path, patch='\n'.join(
            PATCHES[p] for p in patches))
        flags = HARDENED_FLAGS if hardened else []
        return [self.python] + flags + ['-c', code] + self._args(conf)

    def launch(self, name, cmd, socket_path, cwd='/'):
        """Start a daemon; :meth:`Daemon.wait` for it."""
        return Daemon(self, name, cmd, socket_path, cwd)

    def start(self, name, cmd, socket_path, cwd='/'):
        """Start a daemon and wait until it serves or refuses."""
        return self.launch(name, cmd, socket_path, cwd).wait()

    def user_env(self):
        return ['PATH=/usr/sbin:/usr/bin:/sbin:/bin', 'LANG=C.UTF-8',
                'HOME=' + self.home,
                'TMPDIR=' + os.path.join(self.home, 'tmp'),
                'PYTHONDONTWRITEBYTECODE=1']

    def as_user(self, argv, user=None, group=None):
        """``argv`` as the attacker (``runuser``), or as another user.

        ``user`` with group ``group`` alone (``setpriv``).
        """
        env = ['env', '-i'] + self.user_env()
        if user is None:
            return ['runuser', '-u', self.attacker, '--'] + env + argv
        return ['setpriv', '--reuid=%s' % user, '--regid=%s' % group,
                '--clear-groups'] + env + argv

    def run(self, script, spec, user=None, group=None, timeout=90,
            while_held=None):
        """Run one of the attacker's scripts; its last JSON line.

        ``while_held(result)``: with ``spec['hold']``, called while the
        client keeps its connection open.
        """
        argv = [self.python, os.path.join(self.home, script), repr(spec)]
        if user == 'root':
            cmd = ['env', '-i'] + self.user_env() + argv
        else:
            cmd = self.as_user(argv, user, group)
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True,
                                cwd=self.home, start_new_session=True)
        try:
            if spec.get('hold'):
                line = proc.stdout.readline()
                result = json.loads(line) if line.startswith('{') else {}
                if while_held is not None:
                    while_held(result)
            out, err = proc.communicate(timeout=timeout)
        except BaseException:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise
        if spec.get('hold'):
            return result
        for line in reversed(out.splitlines()):
            if line.startswith('{'):
                return json.loads(line)
        raise RuntimeError('%s printed no result (rc %s): %s'
                           % (script, proc.returncode, err[-2000:]))

    def payload(self, **target):
        """Root's instructions to the import-time payload."""
        with open(PAYLOAD_TARGET, 'w') as f:
            json.dump(target, f)
        os.chmod(PAYLOAD_TARGET, 0o644)

    def marker(self, name):
        path = self.path('markers', name)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        return path


def _read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def _first_error(result):
    if result.get('start') != 'ok':
        return 'start: %s' % result.get('start')
    for r in result['results']:
        if 'err' in r:
            return r['err']
    return 'no error'


# -- the attacks -----------------------------------------------------------

def _pair(lab, name, prepare, attack):
    """One attack against a weakened and the real daemon.

    ``prepare(label)`` -> ``{'cmd', 'sock', ['cwd'], ...}``: both daemons
    are then started at once (each takes seconds: the real one compiles
    every module it imports, reading no bytecode), and
    ``attack(label, daemon, ctx)`` -> ``(succeeded, detail)`` runs on
    each in turn.
    """
    labels = ('weakened', 'real')
    ctxs = {label: prepare(label) for label in labels}
    daemons = {}
    hits, details = {}, []
    try:
        for label in labels:
            c = ctxs[label]
            daemons[label] = lab.launch('%s-%s' % (name, label), c['cmd'],
                                        c['sock'], c.get('cwd', '/'))
        for daemon in daemons.values():
            daemon.wait()
        for label in labels:
            hit, detail = attack(label, daemons[label], ctxs[label])
            hits[label] = bool(hit)
            details.append('%s: %s' % (label, detail))
    finally:
        for daemon in daemons.values():
            daemon.stop()
    return Outcome(name, hits['weakened'], hits['real'], ' | '.join(details))


def _need_started(label, daemon):
    if not daemon.started:
        raise RuntimeError('%s daemon refused: %s'
                           % (label, daemon.refusal()))


def attack_import_before_check(lab):
    """(a) A call naming a module with an import-time effect.

    oslo.privsep's daemon imports the module a caller names and only then
    checks the function is an entrypoint; the module's top level runs as
    root. The payload (tests/host/payload_on_import.py, importable as the
    checkout is on both daemons' path, like a ``setup.py develop``
    install) writes a marker; numpy.f2py.__main__ runs f2py on root's
    command line (evidence: numpy in the serving process's memory map).
    Weakened: oslo.privsep's dispatch.
    """
    def prepare(label):
        conf, tree, sock = lab.setting('import-' + label)
        if label == 'weakened':
            cmd = lab.weak_cmd(conf, ['dispatch'], append=[REPO])
        else:
            cmd = lab.real_cmd_with_path(conf, append=[REPO])
        return {'cmd': cmd, 'sock': sock}

    def attack(label, daemon, ctx):
        _need_started(label, daemon)
        marker = lab.marker('import-' + label)
        lab.payload(marker=marker)
        numpy = {}

        def look(result):
            maps = []
            for child in children(daemon.pid):
                with contextlib.suppress(OSError):
                    with open('/proc/%d/maps' % child) as f:
                        maps.append(f.read())
            numpy['loaded'] = any('/numpy/' in m for m in maps)

        result = lab.run('client.py', {
            'socket': ctx['sock'], 'hold': True, 'timeout': 2,
            'calls': [(PAYLOAD + '.x', (), {}),
                      ('numpy.f2py.__main__.x', (), {})]}, while_held=look)
        ran = _read(marker)
        hit = bool(ran and 'euid=0' in ran) or numpy.get('loaded', False)
        return hit, 'payload %s, numpy.f2py %s (replies: %s)' % (
            'ran as root' if ran else 'not run',
            'imported' if numpy.get('loaded') else 'not imported',
            '; '.join(r.get('err', r.get('ok', ''))[:90]
                      for r in result.get('results', ()))
            or result.get('start'))

    return _pair(lab, 'import_before_check', prepare, attack)


def attack_exec_regains_nothing(lab):
    """(b) The payload runs a program: what capabilities does it get?

    Both daemons import the payload (dispatch weakened); the weakened one
    also skips ``harden()``. Success: the exec'd shell holds a capability,
    or a bounding set beyond the context's (CAP_DAC_OVERRIDE).
    """
    def prepare(label):
        conf, tree, sock = lab.setting('exec-' + label)
        patches = ['dispatch', 'harden'] if label == 'weakened' \
            else ['dispatch']
        return {'cmd': lab.weak_cmd(conf, patches, append=[REPO]),
                'sock': sock}

    def attack(label, daemon, ctx):
        _need_started(label, daemon)
        out = lab.marker('exec-' + label)
        lab.payload(exec_caps=out)
        lab.run('client.py', {'socket': ctx['sock'], 'timeout': 10,
                              'calls': [(PAYLOAD + '.x', (), {})]})
        text = _read(out)
        if text is None:
            raise RuntimeError('%s: the payload did not run a shell'
                               % label)
        caps = _caps(text)
        hit = (caps.get('CapEff') or caps.get('CapPrm')
               or caps.get('CapAmb')
               or caps.get('CapBnd', 0) & ~RESCTRL_CAPS)
        return hit, 'exec\'d shell CapEff=%x CapPrm=%x CapBnd=%x' % (
            caps.get('CapEff', -1), caps.get('CapPrm', -1),
            caps.get('CapBnd', -1))

    return _pair(lab, 'exec_regains_nothing', prepare, attack)


def _code_copy(lab, tag, module):
    """A root-owned copy of the project's packages.

    The ``__pycache__`` for ``module`` (a path below the copy, no ``.py``)
    is world-writable, as a daemon with umask 0 left it.

    :returns: ``(copy, the module's source, its .pyc path)``
    """
    top = lab.new_dir('code-' + tag)
    for package in privsep_boot.PACKAGES:
        shutil.copytree(os.path.join(REPO, package),
                        os.path.join(top, package),
                        ignore=shutil.ignore_patterns('__pycache__',
                                                      '*.pyc'))
    for dirpath, dirnames, filenames in os.walk(top):
        os.chmod(dirpath, 0o755)
        for name in filenames:
            os.chmod(os.path.join(dirpath, name), 0o644)
    directory, base_name = os.path.split(module)
    cache = os.path.join(top, directory, '__pycache__')
    os.mkdir(cache)
    os.chmod(cache, 0o777)
    return (top, os.path.join(top, module + '.py'),
            os.path.join(cache, '%s.%s.pyc'
                         % (base_name, sys.implementation.cache_tag)))


def _plant(lab, source, cfile, marker):
    planted = lab.run('client.py', {
        'pre': [('plant_pyc', source, cfile, marker)]})
    if planted['pre'][0][1] != 'ok':
        raise RuntimeError('could not plant the .pyc: %s' % planted['pre'])


def attack_pyc_plant(lab):
    """(c) A .pyc planted in a world-writable ``__pycache__``.

    An editable copy of the code, first on the daemon's path, whose
    ``resq_agent/conf/__pycache__`` a daemon with umask 0 left
    world-writable. The attacker plants an unchecked-hash .pyc of
    ``resq_agent/conf/agent.py`` that writes a marker. Real daemon: the
    hardened interpreter (``-I -B -X pycache_prefix``) and check_code;
    weakened: a plain interpreter and no check_code.
    """
    def prepare(label):
        conf, tree, sock = lab.setting('pyc-' + label)
        top, source, cfile = _code_copy(lab, 'pyc-' + label,
                                        'resq_agent/conf/agent')
        marker = lab.marker('pyc-' + label)
        _plant(lab, source, cfile, marker)
        if label == 'weakened':
            cmd = lab.weak_cmd(conf, ['check_code'], insert=[top],
                               hardened=False)
        else:
            cmd = lab.real_cmd_with_path(conf, insert=[top])
        return {'cmd': cmd, 'sock': sock, 'marker': marker}

    return _pair(lab, 'pyc_plant', prepare, _pyc_outcome)


def _pyc_outcome(label, daemon, ctx):
    """Whether the planted .pyc ran as root, and what the daemon did."""
    why = 'started' if daemon.started else daemon.refusal()
    ran = _read(ctx['marker'])
    return bool(ran and 'euid=0' in ran), '.pyc %s; daemon %s' % (
        'ran as root' if ran else 'not run', why.strip()[:200])


def attack_first_stage_pyc(lab):
    """(c') A .pyc for the interpreter that starts the hardened one.

    Root runs the shipped command (``bin/resq-privsep-daemon``) from a
    checkout whose ``resq_agent/__pycache__`` is world-writable (what an
    earlier daemon's umask 0 left), as its working directory. The attacker
    plants an unchecked-hash .pyc of ``resq_agent/__init__.py`` there. The
    stub imports nothing of the project's and replaces itself with the
    hardened interpreter, whose path holds no working directory. Weakened:
    a plain interpreter importing ``resq_agent.privsep_boot`` from the
    working directory (as ``python -m`` did before the stub).
    """
    def prepare(label):
        conf, tree, sock = lab.setting('stage1-' + label)
        top, source, cfile = _code_copy(lab, 'stage1-' + label,
                                        'resq_agent/__init__')
        marker = lab.marker('stage1-' + label)
        _plant(lab, source, cfile, marker)
        if label == 'weakened':
            cmd = lab.weak_cmd(conf, ['check_code'], hardened=False)
        else:
            cmd = lab.stub_cmd(conf)
        return {'cmd': cmd, 'sock': sock, 'cwd': top, 'marker': marker}

    return _pair(lab, 'first_stage_pyc', prepare, _pyc_outcome)


def attack_intermediate_symlink(lab):
    """(d) An ancestor of the fake tree replaced by a symlink.

    The tree is at DATA/resq/resctrl, DATA the attacker's. It renames
    DATA/resq away and points DATA/resq at a root-owned decoy, then asks
    for a group and its masks. Weakened: the root opened by name (only
    its last component refused as a symlink).
    """
    def prepare(label):
        data = lab.new_dir('data-' + label, owner=lab.uid)
        tree = lab.tree(os.path.join(data, 'resq', 'resctrl'))
        decoy = lab.path('decoy-' + label)
        lab.tree(os.path.join(decoy, 'resctrl'))
        sdir = lab.path('run-symlink-' + label)
        conf = lab.root_conf('symlink-' + label, tree, sdir)
        cmd = lab.weak_cmd(conf, ['walk']) if label == 'weakened' \
            else lab.real_cmd(conf)
        return {'cmd': cmd, 'sock': os.path.join(sdir, 'resctrl.sock'),
                'data': data, 'decoy': decoy}

    def attack(label, daemon, ctx):
        _need_started(label, daemon)
        data, decoy = ctx['data'], ctx['decoy']
        result = lab.run('client.py', {
            'socket': ctx['sock'],
            'pre': [('rename', os.path.join(data, 'resq'),
                     os.path.join(data, 'resq.orig')),
                    ('symlink', decoy, os.path.join(data, 'resq'))],
            'calls': [(PREFIX + 'create_group', ('resq-evil',), {}),
                      (PREFIX + 'write_l3_masks_wide', ('resq-evil', {0: 0x3}),
                       {})]})
        evil = os.path.join(decoy, 'resctrl', 'resq-evil')
        schemata = _read(os.path.join(evil, 'schemata'))
        hit = os.path.isdir(evil)
        return hit, 'swap %s; decoy %s (%s)' % (
            ','.join(p[1] for p in result['pre']),
            'got group resq-evil, schemata %r' % schemata
            if hit else 'untouched', _first_error(result)[:160])

    return _pair(lab, 'intermediate_symlink', prepare, attack)


def attack_start_root_yourself(lab):
    """(e) The attacker starts root's side itself, with its own arguments.

    Weakened: the old devstack sudoers rule (oslo.privsep's
    ``privsep-helper``, any arguments). The attacker hands it a
    configuration file of its own whose ``log_config_append`` names a
    logging file of its own: Python's ``fileConfig`` evaluates a handler's
    arguments, so the attacker's expression runs as root. Real: the plugin
    writes no sudoers rule, so ``sudo -n`` refuses both oslo's helper and
    resq-privsep-daemon.
    """
    details = []
    hits = {}
    helper = os.path.join(lab.bindir, 'privsep-helper')
    stub = os.path.join(REPO, 'bin', 'resq-privsep-daemon')
    for label in ('weakened', 'real'):
        conf, tree, sock = lab.setting('sudo-' + label)
        marker = lab.marker('sudo-' + label)
        own = os.path.join(lab.home, 'own-' + label + '.conf')
        logini = os.path.join(lab.home, 'log-' + label + '.ini')
        # (No "%": the logging file is read with interpolation.)
        expr = ("__import__('builtins').open(%r, 'w').write('euid=' + "
                "str(__import__('os').geteuid())) and __import__('sys')"
                ".stderr" % marker)
        sudoers = None
        try:
            if label == 'weakened':
                sudoers = SUDOERS_PREFIX + str(os.getpid())
                # The old devstack rule; PYTHONDONTWRITEBYTECODE passes
                # through so that oslo's helper (umask 0) leaves no
                # world-writable __pycache__ in the code (escalation 2).
                rule = ('Defaults!%s env_keep += "PYTHONDONTWRITEBYTECODE"\n'
                        '%s ALL=(root) NOPASSWD: %s\n'
                        % (helper, lab.attacker, helper))
                tmp = sudoers + '~'   # sudo skips names ending in ~
                with open(tmp, 'w') as f:
                    f.write(rule)
                os.chmod(tmp, 0o440)
                check = subprocess.run(['visudo', '-cf', tmp],
                                       capture_output=True, text=True)
                if check.returncode:
                    os.unlink(tmp)
                    raise RuntimeError('visudo: %s' % check.stdout)
                os.rename(tmp, sudoers)
            result = lab.run('client.py', {
                'pre': [('write', logini,
                         '[loggers]\nkeys=root\n[handlers]\nkeys=h\n'
                         '[formatters]\nkeys=\n[logger_root]\nhandlers=h\n'
                         '[handler_h]\nclass=StreamHandler\nargs=(%s,)\n'
                         % expr),
                        ('write', own, '[DEFAULT]\nlog_config_append = %s\n'
                         '\n[resq_privsep_resctrl]\nhelper_command = '
                         'sudo -n %s\n' % (logini, helper)),
                        # resq-privsep-daemon itself, on its own file.
                        ('run', ['sudo', '-n', stub, '--context', 'resctrl',
                                 '--config-file', own])],
                'conf_args': ['--config-file', conf, '--config-file', own],
                'timeout': 20,
                'calls': [(PREFIX + 'resctrl_root', (), {})]})
        finally:
            if sudoers:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(sudoers)
        lab._kill_leftovers()
        lab.remove_new_pycache()
        ran = _read(marker)
        hits[label] = bool(ran and 'euid=0' in ran)
        details.append('%s: sudo daemon: %s; sudo privsep-helper: %s; '
                       'logging file %s' % (
                           label, result['pre'][-1][1][:80],
                           'ok' if result['start'] == 'ok'
                           else _first_error(result)[:80],
                           'ran as root' if hits[label] else 'not run'))
    return Outcome('start_root_yourself', hits['weakened'], hits['real'],
                   ' | '.join(details))


def _socket_dir_attack(lab, name, how):
    """(f) The attacker makes root's socket directory before root does.

    In a sticky directory both may create in (like /run/user or /tmp).
    Weakened: the socket directory made and used by name.
    """
    def prepare(label):
        sticky = lab.new_dir('shared-%s-%s' % (name, label), mode=0o1777)
        sdir = os.path.join(sticky, 'run')
        mine = os.path.join(lab.home, 'mine-%s-%s' % (name, label))
        pre = [('mkdir', sdir)] if how == 'dir' else \
            [('mkdir', mine), ('symlink', mine, sdir)]
        lab.run('client.py', {'pre': pre})
        tree = lab.tree(lab.path('trees', 'sock-%s-%s' % (name, label),
                                 'resctrl'))
        conf = lab.root_conf('sock-%s-%s' % (name, label), tree, sdir)
        cmd = lab.weak_cmd(conf, ['listen']) if label == 'weakened' \
            else lab.real_cmd(conf)
        return {'cmd': cmd, 'sock': os.path.join(sdir, 'resctrl.sock')}

    def attack(label, daemon, ctx):
        sock = ctx['sock']
        if not daemon.started:
            return False, 'refused to start: %s' % (
                daemon.refusal().strip()[:200])
        swap = lab.run('client.py', {'pre': [
            ('rename', sock, sock + '.root'), ('bind', sock)]})
        try:
            owner = os.lstat(sock).st_uid
        except OSError:
            owner = None
        return owner == lab.uid, (
            'started; attacker swap: %s, socket now uid %s'
            % (','.join(p[1] for p in swap['pre']), owner))

    return _pair(lab, name, prepare, attack)


def attack_socket_dir_precreated(lab):
    """(f) socket_dir pre-created as the attacker's own directory."""
    return _socket_dir_attack(lab, 'socket_dir_precreated', 'dir')


def attack_socket_dir_symlink(lab):
    """(f) socket_dir pre-created as a symlink to the attacker's."""
    return _socket_dir_attack(lab, 'socket_dir_symlink', 'symlink')


def attack_impostor_socket(lab):
    """(f) An impostor daemon at the path the agent connects to.

    The agent (here run as another user) connects to a socket the
    attacker serves. Weakened: oslo.privsep's client channel; real:
    resq's SocketClientChannel, which checks the peer is root.
    """
    sdir = os.path.join(lab.home, 'impostor')
    lab.run('client.py', {'pre': [('mkdir', sdir)]})
    path = os.path.join(sdir, 'resctrl.sock')
    proc = subprocess.Popen(
        lab.as_user([lab.python, os.path.join(lab.home, 'impostor.py'),
                     path]),
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        if proc.stdout.readline().strip() != 'listening':
            raise RuntimeError('impostor did not start: %s'
                               % proc.stderr.read())
        hits, details = {}, []
        for label, weak in (('weakened', True), ('real', False)):
            result = lab.run('client.py', {
                'socket': path, 'weak_client': weak, 'timeout': 10,
                'calls': [(PREFIX + 'resctrl_root', (), {})]},
                user=FOREIGN, group='nogroup')
            forged = any('FORGED' in r.get('ok', '')
                         for r in result['results'])
            hits[label] = forged
            details.append('%s client: %s' % (
                label, 'accepted the forged reply %s'
                % result['results'][0]['ok'] if forged
                else _first_error(result)[:200]))
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    return Outcome('impostor_socket', hits['weakened'], hits['real'],
                   ' | '.join(details))


def attack_foreign_user(lab):
    """(f) A user who is not client_user (but in its group) connects.

    Weakened: every peer served (no SO_PEERCRED check).
    """
    group = grp.getgrgid(lab.gid).gr_name

    def prepare(label):
        conf, tree, sock = lab.setting('foreign-' + label)
        cmd = lab.weak_cmd(conf, ['peer']) if label == 'weakened' \
            else lab.real_cmd(conf)
        return {'cmd': cmd, 'sock': sock, 'tree': tree}

    def attack(label, daemon, ctx):
        _need_started(label, daemon)
        result = lab.run('client.py', {
            'socket': ctx['sock'], 'timeout': 10,
            'calls': [(PREFIX + 'create_group', ('resq-foreign',), {})]},
            user=FOREIGN, group=group)
        hit = os.path.isdir(os.path.join(ctx['tree'], 'resq-foreign'))
        return hit, ('served: created resq-foreign' if hit
                     else _first_error(result)[:200])

    return _pair(lab, 'foreign_user', prepare, attack)


ATTACKS = (attack_import_before_check, attack_exec_regains_nothing,
           attack_pyc_plant, attack_first_stage_pyc,
           attack_intermediate_symlink,
           attack_start_root_yourself, attack_socket_dir_precreated,
           attack_socket_dir_symlink, attack_impostor_socket,
           attack_foreign_user)


def real_daemon_status(lab):
    """daemon_status() of the real daemon while a client is connected."""
    conf, tree, sock = lab.setting('status')
    daemon = lab.start('status', lab.real_cmd(conf), sock)
    if not daemon.started:
        raise RuntimeError('daemon refused: %s' % daemon.refusal())
    found = {}

    def look(result):
        found['start'] = result.get('start')
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            found['status'] = daemon_status(daemon.pid)
            if found['status']['children']:
                break
            time.sleep(0.05)

    try:
        lab.run('client.py', {'socket': sock, 'hold': True, 'calls': [
            (PREFIX + 'resctrl_root', (), {})]}, while_held=look)
    finally:
        daemon.stop()
    return found['status']


def time_partitions(lab, reps, rounds=4):
    """Median ms of one partition's privileged calls, for each path.

    ``daemon``: the real daemon's socket, as the agent's user; ``oslo``:
    a stock oslo.privsep daemon started through ``helper_command`` (no
    sudo, as root), the old way; ``inprocess``: no boundary. The three
    take turns, ``rounds`` runs of ``reps / rounds`` partitions each, so
    that a busy machine weighs on each alike.

    :returns: ``{mode: {'median_ms', 'p90_ms', 'reps'}}``
    """
    conf, tree, sock = lab.setting('bench')
    helper = ('%s -c "from oslo_privsep import daemon; '
              'daemon.helper_main()"' % lab.python)
    oconf = lab.path('etc', 'bench-oslo.conf')
    with open(oconf, 'w') as f:
        f.write('[resq_agent]\nresctrl_root = %s\nresctrl_fake = true\n\n'
                '[resq_privsep_resctrl]\nhelper_command = %s\n'
                % (tree, helper))
    os.chmod(oconf, 0o644)
    base = {'reps': max(1, reps // rounds), 'full': FULL,
            'shrunk': FULL & ~0xf}
    specs = {'daemon': dict(base, mode='daemon', socket=sock),
             'oslo': dict(base, mode='oslo',
                          conf_args=['--config-file', oconf]),
             'inprocess': dict(base, mode='inprocess',
                               conf_args=['--config-file', oconf])}
    daemon = lab.start('bench', lab.real_cmd(conf), sock)
    if not daemon.started:
        raise RuntimeError('daemon refused: %s' % daemon.refusal())
    times = {mode: [] for mode in specs}
    try:
        for _round in range(rounds):
            for mode, spec in specs.items():
                user = None if mode == 'daemon' else 'root'
                times[mode].extend(lab.run('partition.py', spec, user=user,
                                           timeout=600)['times_ms'])
    finally:
        daemon.stop()
    out = {}
    for mode, values in times.items():
        values.sort()
        out[mode] = {'median_ms': statistics.median(values),
                     'p90_ms': values[int(len(values) * 0.9)],
                     'reps': len(values)}
    return out


def run_all(lab=None):
    """Every attack: a list of Outcomes.

    An attack that errs is an Outcome with both None and the error as
    its detail.
    """
    outcomes = []
    with (contextlib.nullcontext(lab) if lab else Lab()) as lab:
        for attack in ATTACKS:
            try:
                outcomes.append(attack(lab))
            except Exception as exc:
                outcomes.append(Outcome(attack.__name__[7:], None, None,
                                        'error: %s: %s'
                                        % (type(exc).__name__, exc)))
    return outcomes


if __name__ == '__main__':
    for o in run_all():
        print('%-24s weakened=%-5s real=%-5s %s' % o)
