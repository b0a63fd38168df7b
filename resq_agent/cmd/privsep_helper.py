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
"""``resq-privsep-helper``: the only command the agent's user may sudo.

``sudo privsep-helper *`` lets the agent's user append ``--config-file``
and ``--privsep_context``: oslo.config keeps the last value, so the root
daemon would load any context installed on the host, or a configuration
that turns off the resctrl mount check. This command takes from its caller
only what oslo.privsep has to pass, a context and a socket path, and
nothing root reads can be chosen or swapped by that caller:

* root's configuration (:data:`CONFIG_FILE`) is opened once, one path
  component at a time from ``/`` with ``O_NOFOLLOW``; every directory on
  the way must belong to root and be writable by no one else (a sticky
  directory such as ``/tmp`` passes, as its root-owned entries cannot be
  renamed by others), and so must the file. oslo.config is then given
  that content from an anonymous memory file, never the path again, so a
  directory swapped after the check changes nothing.
* That configuration may not name a logging configuration or log file
  (``log_config_append``, ``log_file``, ``log_dir``): Python's
  ``fileConfig`` runs code. No default configuration file or directory
  and no ``OS_*`` environment variable is read.
* The socket oslo.privsep listens on must be a socket, not a symbolic
  link, in a directory of the invoking user's (``SUDO_UID``) that no one
  else can write. Root opens that socket file once and connects to the
  file it checked, never to the name again, and hangs up unless the
  process listening on it is the invoking user's (``SO_PEERCRED``): a name
  swapped after the check cannot make root talk to another service.

sudoers::

    resq ALL = (root) NOPASSWD: /usr/bin/resq-privsep-helper

and in resq-agent.conf ``[resq_privsep_resctrl]`` and
``[resq_privsep_pqos]``: ``helper_command = sudo resq-privsep-helper``.
"""

import os
import re
import socket
import stat
import struct
import sys

# Root's configuration of the privileged side: [resq_agent] resctrl_root,
# resctrl_fake (the only place a fake tree can be allowed), pqos options.
CONFIG_FILE = '/etc/resq/privsep/resq-agent-privsep.conf'
CONTEXTS = ('resq_agent.privsep.resctrl_pctxt',
            'resq_agent.privsep.pqos_pctxt',
            'resq_agent.privsep.openflow_pctxt')
# oslo.privsep's socket: <tempfile.mkdtemp()>/privsep.sock.
SOCK_RE = re.compile(r'/(?:[A-Za-z0-9_.-]+/){1,8}privsep\.sock')
# Options that make the daemon open files by name before it logs through
# oslo.privsep's channel (fileConfig runs what the file says).
LOGGING_FILE_OPTS = ('log_config_append', 'log_file', 'log_dir')
MAX_CONFIG_BYTES = 64 * 1024

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK

# The memory file root's verified configuration was handed to oslo.config
# through (its /proc/self/fd path), once this process has loaded it.
_verified = {'path': None}


class Refused(Exception):
    pass


def parse(argv):
    """``(context, sock path)`` from the caller's arguments.

    :raises Refused: naming what is not allowed.
    """
    context = sock = None
    args = list(argv)
    while args:
        flag = args.pop(0)
        if not args:
            raise Refused('%s needs a value' % flag)
        value = args.pop(0)
        if flag == '--config-file':
            continue            # the caller's configuration never counts
        if flag == '--privsep_context' and context is None:
            if value not in CONTEXTS:
                raise Refused('privsep context %r is not one of %s'
                              % (value, ', '.join(CONTEXTS)))
            context = value
        elif flag == '--privsep_sock_path' and sock is None:
            if not SOCK_RE.fullmatch(value) or '..' in value.split('/'):
                raise Refused('socket path %r is not one oslo.privsep '
                              'makes' % value)
            sock = value
        else:
            raise Refused('argument %r is not allowed (or given twice)'
                          % flag)
    if context is None or sock is None:
        raise Refused('--privsep_context and --privsep_sock_path are '
                      'required')
    return context, sock


def _components(path):
    if not os.path.isabs(path):
        raise Refused('%s is not an absolute path' % path)
    parts = [p for p in path.split('/') if p]
    if not parts or any(p in ('.', '..') for p in parts):
        raise Refused('%s is not a plain absolute path to a file' % path)
    return parts


def _open_parent(path, check_dir):
    """An fd of ``path``'s directory, opened without following links.

    Opened from ``/`` one component at a time; ``check_dir(st, where)`` is
    called on each directory's ``fstat``, ``/`` included.

    :returns: ``(fd, name)``: the open directory and the last component.
    """
    parts = _components(path)
    fd = os.open('/', _DIR_FLAGS)
    where = '/'
    try:
        check_dir(os.fstat(fd), where)
        for part in parts[:-1]:
            where = os.path.join(where, part)
            try:
                nfd = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                raise Refused('%s cannot be opened as a directory (%s; a '
                              'symbolic link is refused)'
                              % (where, exc.strerror))
            os.close(fd)
            fd = nfd
            check_dir(os.fstat(fd), where)
    except BaseException:
        os.close(fd)
        raise
    return fd, parts[-1]


def _root_only(st, where):
    if st.st_uid != 0:
        raise Refused('%s must belong to root (it is uid %d): the user '
                      'owning it can replace what root reads beneath it'
                      % (where, st.st_uid))
    writable = st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    if writable and not (stat.S_ISDIR(st.st_mode)
                         and st.st_mode & stat.S_ISVTX):
        raise Refused('%s must be writable by root alone (mode %o)'
                      % (where, stat.S_IMODE(st.st_mode)))


def read_root_file(path, max_bytes=MAX_CONFIG_BYTES):
    """The content of ``path``, read once, if only root could change it.

    Root alone may write the file and every directory leading to it.

    :raises Refused: naming the path component that fails and why.
    """
    dfd, name = _open_parent(path, _root_only)
    try:
        try:
            fd = os.open(name, _FILE_FLAGS, dir_fd=dfd)
        except OSError as exc:
            raise Refused('%s cannot be read (%s; a symbolic link is '
                          'refused)' % (path, exc.strerror))
    finally:
        os.close(dfd)
    with os.fdopen(fd, 'rb') as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Refused('%s is not a regular file' % path)
        _root_only(st, path)
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise Refused('%s is larger than %d bytes' % (path, max_bytes))
    return data


def check_config(path):
    """Refuse a configuration file the agent's user could change.

    :raises Refused: unless ``path``, and every directory from ``/`` to
        it, belong to root and no one else can write them.
    """
    read_root_file(path)


def verified_config():
    """Where this process's oslo.config read root's verified file.

    The memory file's path in the daemon the helper started, or ``None``.
    """
    return _verified['path']


def invoking_uid(environ=None):
    """The user who ran the helper.

    sudo's ``SUDO_UID`` when root was reached through sudo, else the real
    uid.
    """
    environ = os.environ if environ is None else environ
    uid = os.getuid()
    if uid == 0 and environ.get('SUDO_UID', '').isdigit():
        return int(environ['SUDO_UID'])
    return uid


def _peer_uid(sock):
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                            struct.calcsize('3i'))
    return struct.unpack('3i', creds)[1]


def connect_socket(path, uid):
    """A socket connected to oslo.privsep's listener at ``path``.

    The socket file is opened once (``O_PATH``, no symbolic link followed)
    through the checked directory, and root connects to that very file
    (``/proc/self/fd``), never to the name again.

    :raises Refused: unless ``path``'s directory belongs to ``uid`` and
        only it can write there, the name is a socket of ``uid``'s (not a
        symbolic link), and the listening process is ``uid``'s.
    """
    dfd, name = _open_parent(path, lambda st, where: None)
    try:
        st = os.fstat(dfd)
        if st.st_uid != uid or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise Refused('the directory of socket %s must belong to the '
                          'invoking user (uid %d) and be writable by it '
                          'alone (it is uid %d, mode %o)'
                          % (path, uid, st.st_uid,
                             stat.S_IMODE(st.st_mode)))
        try:
            pfd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC,
                          dir_fd=dfd)
        except OSError as exc:
            raise Refused('socket %s: %s' % (path, exc.strerror))
    finally:
        os.close(dfd)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        st = os.fstat(pfd)
        if not stat.S_ISSOCK(st.st_mode) or st.st_uid != uid:
            raise Refused('%s is not a socket of uid %d (a symbolic link '
                          'is refused)' % (path, uid))
        try:
            sock.connect('/proc/self/fd/%d' % pfd)
        except OSError as exc:
            raise Refused('cannot connect to %s: %s' % (path, exc.strerror))
        peer = _peer_uid(sock)
        if peer != uid:
            raise Refused('socket %s is served by uid %d, not the invoking '
                          'user (uid %d)' % (path, peer, uid))
    except BaseException:
        sock.close()
        raise
    finally:
        os.close(pfd)
    return sock


def load_config(conf, data, context, sock_path):
    """Parse root's configuration ``data`` into ``conf`` from memory.

    oslo.config reads a memory file: no path is opened again, no default
    file or directory and no ``OS_*`` environment variable is read.

    :raises Refused: if it names a logging file.
    """
    from oslo_config import cfg
    from oslo_log import log as logging

    for key in [k for k in os.environ if k.startswith('OS_')]:
        del os.environ[key]
    conf.register_cli_opts([cfg.StrOpt('privsep_context', required=True),
                            cfg.StrOpt('privsep_sock_path', required=True)])
    logging.register_options(conf)
    fd = os.memfd_create('resq-agent-privsep.conf')
    os.write(fd, data)
    path = '/proc/self/fd/%d' % fd
    conf(args=['--config-file', path, '--privsep_context', context,
               '--privsep_sock_path', sock_path],
         project='privsep', default_config_files=[],
         default_config_dirs=[])
    _verified['path'] = path
    named = [opt for opt in LOGGING_FILE_OPTS if conf[opt]]
    if named:
        raise Refused('root\'s configuration names %s: the privileged '
                      'daemon logs through the agent\'s channel; remove '
                      'the option' % ', '.join(named))
    return fd


def start_daemon(conf, context_name, sock):
    """oslo.privsep's daemon on the connected ``sock``.

    What oslo.privsep's ``helper_main`` does after the configuration and
    the connection.
    """
    from oslo_log import log as logging
    from oslo_privsep import comm
    from oslo_privsep import daemon
    from oslo_privsep import priv_context
    from oslo_utils import importutils

    logging.setup(conf, 'privsep', fix_eventlet=False)
    context = importutils.import_class(context_name)
    if not isinstance(context, priv_context.PrivContext):
        raise Refused('%s is not a PrivContext' % context_name)
    daemon.set_cloexec(sock)
    channel = comm.ServerChannel(sock)
    if os.fork() != 0:
        return 0
    daemon.replace_logging(daemon.PrivsepLogHandler(channel))
    try:
        daemon.Daemon(channel, context).run()
    except Exception as exc:
        logging.getLogger(__name__).exception(exc)
        os._exit(1)
    os._exit(0)


def main(argv=None, config_file=CONFIG_FILE, start=start_daemon, conf=None):
    argv = sys.argv[1:] if argv is None else argv
    from oslo_config import cfg

    conf = cfg.CONF if conf is None else conf
    try:
        context, sock_path = parse(argv)
        data = read_root_file(config_file)
        load_config(conf, data, context, sock_path)
        sock = connect_socket(sock_path, invoking_uid())
    except Refused as exc:
        print('resq-privsep-helper: refused: %s' % exc, file=sys.stderr)
        return 2
    except cfg.Error as exc:
        print('resq-privsep-helper: %s: %s' % (config_file, exc),
              file=sys.stderr)
        return 2
    return start(conf, context, sock)


if __name__ == '__main__':
    sys.exit(main())
