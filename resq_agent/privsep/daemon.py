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
"""The privileged daemon: root's own functions, and nothing else.

Started by root through :mod:`resq_agent.privsep_boot`, one per context.
It listens on ``[resq_privsep_daemon] socket_dir``/``CONTEXT.sock``
(root's directory; the socket is root's, group of the agent's user, mode
0660) and serves each connection of the agent's user in a child of its
own, with oslo.privsep's wire protocol. What differs from oslo.privsep's
daemon:

* **A static table.** :data:`CONTEXTS` names each context's functions.
  A call whose name is not in the table is refused before anything is
  imported or resolved; the table's functions are imported once, at
  start, from root's code.
* **Nothing to regain.** Before it accepts a connection the daemon drops
  every capability its context does not need from its bounding set,
  locks the securebits so uid 0 gains nothing on ``execve``
  (``SECBIT_NOROOT``, ``SECBIT_NO_SETUID_FIXUP``, ``SECBIT_KEEP_CAPS``,
  each locked), sets ``no_new_privs`` and clears its ambient set; it keeps
  uid 0 (resctrl's files are root's) and the context's capabilities only.
  ``umask`` is 022 and no bytecode is written.
* **Root's caller, checked.** A connection is served only when the peer
  (``SO_PEERCRED``) is ``[resq_privsep_daemon] client_user`` or root.
* **Bounded.** At most ``max_connections`` children at once; each reads
  messages of at most :data:`MAX_MESSAGE_BYTES` (no msgpack extension
  types), runs at most :data:`MAX_IN_FLIGHT` calls at once on
  :data:`POOL_SIZE` threads, and may grow by at most
  :data:`CHILD_MEMORY_BYTES` of address space; whatever happens in it, it
  ends with ``os._exit``.
"""

import collections
from concurrent import futures
import ctypes
import errno
import importlib
import os
import pwd
import resource
import signal
import socket
import stat
import struct
import sys
import threading
import time

import msgpack

from oslo_config import cfg
from oslo_log import log as logging
from oslo_privsep import capabilities as caps
from oslo_privsep import comm
from oslo_privsep import daemon as privsep_daemon

from resq_common import rootpath

LOG = logging.getLogger(__name__)

Spec = collections.namedtuple(
    'Spec', ['pctxt', 'module', 'functions', 'capabilities', 'ambient'])

# Each context: its PrivContext (in resq_agent.privsep), the module of its
# entrypoints, their names, the capabilities it keeps (permitted, effective
# and bounding set) and those it passes to a program it runs (ambient).
CONTEXTS = {
    # resctrl files are root's, mode 0644; a FUSE tree's (fake hosts) may
    # be another user's: DAC override, nothing else.
    'resctrl': Spec('resctrl_pctxt', 'resq_agent.privsep.resctrl',
                    ('resctrl_root', 'create_group', 'write_l3_masks_wide',
                     'assign_cpus', 'remove_group',
                     'write_default_l3_masks_wide', 'create_mon_group',
                     'remove_mon_group', 'apply_ops'),
                    (caps.CAP_DAC_OVERRIDE,), ()),
    # libpqos in this process: resctrl files (OS interface), and
    # /dev/cpu/*/msr (MSR interface: raw I/O).
    'pqos': Spec('pqos_pctxt', 'resq_agent.privsep.pqos',
                 ('platform', 'cores_of', 'read_l3_classes', 'set_l3_class',
                  'read_associations', 'associate_cores'),
                 (caps.CAP_DAC_OVERRIDE, caps.CAP_SYS_RAWIO), ()),
    # ovs-ofctl, which this daemon runs, connects to the bridge's
    # management socket (root's or openvswitch's, mode 0750): DAC override
    # is handed to it as an ambient capability; the program gets nothing
    # else (no_new_privs, SECBIT_NOROOT).
    'openflow': Spec('openflow_pctxt', 'resq_agent.privsep.openflow',
                     ('port_stats', 'meter_stats', 'owned', 'set_meters',
                      'set_chain_flow', 'remove_chain'),
                     (caps.CAP_DAC_OVERRIDE,), (caps.CAP_DAC_OVERRIDE,)),
}

# The largest privileged call is a CPU list (8192 CPUs at most): a few
# KiB. A message this size decodes to a few MiB of Python objects at most.
MAX_MESSAGE_BYTES = 64 * 1024
MAX_ITEMS = 16384
MAX_IN_FLIGHT = 8
POOL_SIZE = 4
THREAD_STACK_BYTES = 1024 * 1024
CHILD_MEMORY_BYTES = 768 * 1024 * 1024

GROUP = 'resq_privsep_daemon'
OPTS = [
    cfg.StrOpt('socket_dir', default='/run/resq-privsep',
               help='Directory of the daemons\' sockets (CONTEXT.sock). '
               'Root\'s, mode 0755: created if missing; every directory '
               'above it must be root\'s alone.'),
    cfg.StrOpt('client_user', default='resq',
               help='The user resq-agent runs as: the only user besides '
               'root whose connections are served. The sockets belong to '
               'its primary group, mode 0660.'),
    cfg.IntOpt('max_connections', default=4, min=1, max=64,
               help='Connections served at once (one child each); more are '
               'refused until one ends. The agent holds one per context.'),
]

# prctl(2) and capability.h / securebits.h.
PR_CAPBSET_READ = 23
PR_CAPBSET_DROP = 24
PR_GET_SECUREBITS = 27
PR_SET_SECUREBITS = 28
PR_SET_NO_NEW_PRIVS = 38
PR_GET_NO_NEW_PRIVS = 39
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_RAISE = 2
PR_CAP_AMBIENT_CLEAR_ALL = 4
SECBIT_NOROOT = 1 << 0
SECBIT_NOROOT_LOCKED = 1 << 1
SECBIT_NO_SETUID_FIXUP = 1 << 2
SECBIT_NO_SETUID_FIXUP_LOCKED = 1 << 3
SECBIT_KEEP_CAPS_LOCKED = 1 << 5
SECBIT_NO_CAP_AMBIENT_RAISE = 1 << 6
SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED = 1 << 7

_libc = ctypes.CDLL(None, use_errno=True)
_libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong,
                        ctypes.c_ulong, ctypes.c_ulong]


class Refused(Exception):
    pass


def prctl(option, arg2=0, arg3=0):
    ret = _libc.prctl(option, arg2, arg3, 0, 0)
    if ret < 0:
        err = ctypes.get_errno()
        raise OSError(err, 'prctl(%d, %d): %s' % (option, arg2,
                                                  os.strerror(err)))
    return ret


def last_cap():
    with open('/proc/sys/kernel/cap_last_cap') as f:
        return int(f.read())


def securebits(spec):
    bits = (SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP
            | SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED)
    if not spec.ambient:
        bits |= (SECBIT_NO_CAP_AMBIENT_RAISE
                 | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED)
    return bits


def harden(spec):
    """Give up, for good, everything ``spec`` does not need.

    Runs in the main thread before any other is started (these are
    per-thread attributes that new threads inherit).
    """
    keep = set(spec.capabilities)
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    prctl(PR_SET_SECUREBITS, securebits(spec))
    # CAP_SETPCAP, which these drops need, goes last.
    for cap in sorted(range(last_cap() + 1),
                      key=lambda c: c == caps.CAP_SETPCAP):
        if cap not in keep:
            prctl(PR_CAPBSET_DROP, cap)
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    caps.drop_all_caps_except(keep, keep, spec.ambient)


def bounding_set():
    """This thread's bounding set as a mask."""
    return sum(1 << c for c in range(last_cap() + 1)
               if prctl(PR_CAPBSET_READ, c) == 1)


def entrypoints(name, spec):
    """``{full name: function}`` of context ``name``, from root's code.

    :raises Refused: a listed function is missing or not an entrypoint of
        the context (the table and the code disagree).
    """
    from resq_agent import privsep

    pctxt = getattr(privsep, spec.pctxt)
    module = importlib.import_module(spec.module)
    table = {}
    for fname in spec.functions:
        func = getattr(module, fname, None)
        if func is None or not pctxt.is_entrypoint(func):
            raise Refused('%s.%s is not an entrypoint of context %s'
                          % (spec.module, fname, name))
        table['%s.%s' % (spec.module, fname)] = func
    return pctxt, table


class RestrictedDaemon(privsep_daemon.Daemon):
    """oslo.privsep's daemon loop on a static table of functions."""

    def __init__(self, channel, context, table, spec):
        super().__init__(channel, context)
        self.thread_pool = futures.ThreadPoolExecutor(POOL_SIZE)
        self.table = table
        self.spec = spec
        self.user = self.group = None
        self.caps = set(spec.capabilities)
        self.slots = threading.BoundedSemaphore(MAX_IN_FLIGHT)

    def loop(self):
        """oslo.privsep's loop with at most MAX_IN_FLIGHT calls at once.

        Past that the child stops reading until a reply is sent: a client
        that sends without reading holds a bounded amount of memory.
        """
        LOG.info('privsep daemon running as pid %s', os.getpid())
        self.context.set_client_mode(False)
        for msgid, msg in self.channel:
            error = self.communication_error
            if error:
                if getattr(error, 'errno', None) == errno.EPIPE:
                    break
                raise error
            self.slots.acquire()
            future = self.thread_pool.submit(self._process_cmd, msgid, *msg)
            future.add_done_callback(self._create_done_callback(msgid))
            future.add_done_callback(lambda _f: self.slots.release())

    def run(self):
        os.chdir('/')
        os.umask(0o022)
        self._drop_privs()
        self._close_stdio()
        self.loop()

    def _drop_privs(self):
        caps.drop_all_caps_except(self.caps, self.caps, self.spec.ambient)
        for cap in self.spec.ambient:
            prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap)

    def _process_cmd(self, msgid, cmd, *args):
        if cmd == comm.Message.CALL:
            name = args[0] if args else None
            if not isinstance(name, str) or name not in self.table:
                LOG.warning('privsep: refused a call of %r: not one of '
                            'the context\'s functions', name)
                return (comm.Message.ERR.value, 'builtins.NameError',
                        ('privsep function %r is not one of this '
                         'context\'s; refused' % (name,),), '')
        return super()._process_cmd(msgid, cmd, *args)


def load_config(conf, data):
    """Parse root's verified configuration ``data`` from a memory file."""
    for key in [k for k in os.environ if k.startswith('OS_')]:
        del os.environ[key]
    conf.register_opts(OPTS, group=GROUP)
    logging.register_options(conf)
    fd = os.memfd_create('resq-agent-privsep.conf')
    os.write(fd, data)
    path = '/proc/self/fd/%d' % fd
    conf(args=['--config-file', path], project='resq-privsep',
         default_config_files=[], default_config_dirs=[])
    rootpath.set_verified(path)
    return fd


def check_loaded(owners):
    """Refuse if a loaded module's file is not root's (or ``owners``')."""
    def check(st, where):
        rootpath.root_only(st, where, owners)

    dirs = set()
    for module in list(sys.modules.values()):
        path = getattr(module, '__file__', None)
        if path and os.path.isabs(path):
            dirs.add(os.path.dirname(path))
            check(os.stat(path), path)
    for path in sorted(dirs):
        fd, _name = rootpath.open_dir(os.path.realpath(path), check)
        os.close(fd)


def _peer(sock):
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                            struct.calcsize('3i'))
    return struct.unpack('3i', creds)


def listen(conf, name):
    """A listening socket at ``socket_dir/NAME.sock``: root's, 0660.

    The directory is opened through root-owned directories only and made
    root's, mode 0755, if missing; the socket is bound under a temporary
    name, given its owner and mode, then renamed into place.

    :returns: ``(socket, path, client uid)``
    """
    opts = conf[GROUP]
    try:
        client = pwd.getpwnam(opts.client_user)
    except KeyError:
        raise Refused('[%s] client_user %s: no such user; name the user '
                      'resq-agent runs as' % (GROUP, opts.client_user))
    sdir = os.path.abspath(opts.socket_dir)
    pfd, last = rootpath.open_dir(sdir, last=False)
    try:
        try:
            os.mkdir(last, 0o755, dir_fd=pfd)
        except FileExistsError:
            pass
        try:
            dfd = os.open(last, rootpath.DIR_FLAGS, dir_fd=pfd)
        except OSError as exc:
            raise Refused('[%s] socket_dir %s cannot be opened as a '
                          'directory (%s; a symbolic link is refused): make '
                          'it a directory of root\'s, or remove it'
                          % (GROUP, sdir, exc.strerror))
    finally:
        os.close(pfd)
    try:
        rootpath.root_only(os.fstat(dfd), sdir)
        final, tmp = name + '.sock', '.%s.%d' % (name, os.getpid())
        for stale in (tmp,):
            try:
                os.unlink(stale, dir_fd=dfd)
            except FileNotFoundError:
                pass
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind('/proc/self/fd/%d/%s' % (dfd, tmp))
        os.chown(tmp, 0, client.pw_gid, dir_fd=dfd, follow_symlinks=False)
        os.chmod(tmp, 0o660, dir_fd=dfd)
        st = os.stat(tmp, dir_fd=dfd, follow_symlinks=False)
        if not stat.S_ISSOCK(st.st_mode):
            raise Refused('%s/%s is not the socket just bound' % (sdir, tmp))
        os.rename(tmp, final, src_dir_fd=dfd, dst_dir_fd=dfd)
        sock.listen(8)
        privsep_daemon.set_cloexec(sock)
    finally:
        os.close(dfd)
    return sock, os.path.join(sdir, final), client.pw_uid


def notify_ready(environ=None):
    """Tell systemd (``Type=notify``) the socket is listening.

    Nothing without ``$NOTIFY_SOCKET``; a failure is logged, never fatal.
    """
    environ = os.environ if environ is None else environ
    target = environ.get('NOTIFY_SOCKET')
    if not target:
        return False
    if target.startswith('@'):
        target = '\0' + target[1:]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
            s.connect(target)
            s.sendall(b'READY=1')
    except OSError as exc:
        LOG.warning('cannot notify systemd at %s: %s', target, exc)
        return False
    return True


def _reap(children):
    while children:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            children.clear()
            return
        if pid == 0:
            return
        children.discard(pid)


def bounded_channel(conn):
    """oslo.privsep's server channel reading bounded messages only."""
    channel = comm.ServerChannel(conn)
    reader = channel.reader_iter
    reader.unpacker = msgpack.Unpacker(
        use_list=False, raw=False, strict_map_key=False,
        unicode_errors='surrogateescape', max_buffer_size=MAX_MESSAGE_BYTES,
        max_str_len=MAX_MESSAGE_BYTES, max_bin_len=MAX_MESSAGE_BYTES,
        max_array_len=MAX_ITEMS, max_map_len=MAX_ITEMS, max_ext_len=0)
    return channel


def _limit_memory():
    with open('/proc/self/statm') as f:
        size = int(f.read().split()[0]) * resource.getpagesize()
    limit = size + CHILD_MEMORY_BYTES
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _serve_one(conn, pctxt, table, spec):
    """A child's life: serve one connection, then exit, whatever happens."""
    code = 1
    try:
        _limit_memory()
        threading.stack_size(THREAD_STACK_BYTES)
        channel = bounded_channel(conn)
        privsep_daemon.replace_logging(privsep_daemon.PrivsepLogHandler(
            channel, processName='resq-privsep'))
        RestrictedDaemon(channel, pctxt, table, spec).run()
        code = 0
    except BaseException:
        # The channel may be gone: nothing is sent back, nothing raised.
        pass
    finally:
        os._exit(code)


#: Seconds between two warnings of refused connections: a client that
#: connects in a loop cannot fill root's log.
REFUSAL_LOG_INTERVAL_S = 10.0


class RefusalLog:
    """Warnings of refused connections, at most one per interval.

    The first refusal is logged at once; those within the next
    :data:`REFUSAL_LOG_INTERVAL_S` are counted, and the next warning says
    how many were not logged.
    """

    def __init__(self, interval=None, clock=time.monotonic):
        self.interval = (REFUSAL_LOG_INTERVAL_S if interval is None
                         else interval)
        self.clock = clock
        self.last = None
        self.held = 0

    def log(self, fmt, *args):
        now = self.clock()
        if self.last is not None and now - self.last < self.interval:
            self.held += 1
            return False
        if self.held:
            fmt += ' (and %d other refused connections in the last %.0f s)'
            args += (self.held, now - self.last)
        LOG.warning(fmt, *args)
        self.last, self.held = now, 0
        return True


def serve(name, data, config_path, owners):
    """Run the daemon of context ``name`` on root's configuration ``data``.

    Does not return unless it fails to start (2) or is told to stop (0).
    """
    spec = CONTEXTS[name]
    conf = cfg.CONF
    try:
        load_config(conf, data)
    except cfg.Error as exc:
        print('resq-privsep-daemon: %s: %s' % (config_path, exc),
              file=sys.stderr)
        return 2
    logging.setup(conf, 'resq-privsep')
    try:
        pctxt, table = entrypoints(name, spec)
        pctxt.use_conf(conf)
        check_loaded(owners)
        sock, path, client_uid = listen(conf, name)
    except (Refused, rootpath.Refused, OSError) as exc:
        LOG.error('resq-privsep-daemon %s: refused to start: %s', name, exc)
        print('resq-privsep-daemon: refused: %s' % exc, file=sys.stderr)
        return 2
    harden(spec)
    pctxt.set_client_mode(False)
    stop = {'now': False}

    def _stop(signum, frame):
        stop['now'] = True
        sock.close()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    LOG.info('resq-privsep-daemon %s serving on %s for uid %d (bounding '
             'set %#x, no_new_privs %d)', name, path, client_uid,
             bounding_set(), prctl(PR_GET_NO_NEW_PRIVS))
    notify_ready()
    children = set()
    limit = conf[GROUP].max_connections
    refusals = RefusalLog()
    while not stop['now']:
        try:
            conn, _addr = sock.accept()
        except OSError:
            if stop['now']:
                break
            raise
        _reap(children)
        pid, uid, _gid = _peer(conn)
        if uid not in (0, client_uid):
            refusals.log('resq-privsep-daemon %s: refused a connection of '
                         'uid %d (pid %d)', name, uid, pid)
            conn.close()
            continue
        if len(children) >= limit:
            refusals.log('resq-privsep-daemon %s: refused a connection of '
                         'pid %d: %d served already ([%s] max_connections)',
                         name, pid, len(children), GROUP)
            conn.close()
            continue
        try:
            child = os.fork()
        except OSError as exc:
            LOG.error('resq-privsep-daemon %s: cannot fork for pid %d: %s',
                      name, pid, exc)
            conn.close()
            time.sleep(0.1)
            continue
        if child == 0:
            sock.close()
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            _serve_one(conn, pctxt, table, spec)
        children.add(child)
        conn.close()
    try:
        os.unlink(path)
    except OSError:
        pass
    return 0
