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
"""A privsep context that reads the program's own ``ConfigOpts``.

oslo.privsep's contexts read the global ``cfg.CONF`` and hand the privsep
daemon ``cfg.CONF``'s configuration files. resq-nova's programs parse a
private ``ConfigOpts``, so without this the ``[resq_privsep_*]`` options were
never seen and the daemon started without the program's configuration:
:meth:`PrivContext.use_conf` points the context at that ``ConfigOpts``, and
the daemon is always started with its ``--config-file``/``--config-dir``
arguments, which is where the privileged side reads its own settings (the
resctrl root) from. In the daemon itself the context reads ``cfg.CONF``,
which ``privsep-helper`` parses from those arguments (resq-privsep-daemon,
which root starts, reads root's own file instead: see
:mod:`resq_agent.privsep_boot`).
"""

import copy
import logging
import os
import shlex
import socket
import struct
import threading
import time

from oslo_config import cfg
from oslo_privsep import daemon
from oslo_privsep import priv_context

LOG = logging.getLogger(__name__)
DAEMON_SOCKET_OPT = cfg.StrOpt(
    'daemon_socket',
    help='The Unix socket of this context\'s privileged daemon '
    '(resq-privsep-daemon, started by root: its systemd unit, or devstack). '
    'When set, the program connects to it and never starts a daemon '
    'itself; helper_command is not used. The daemon must run as root.')


def _opts(with_daemon=False):
    opts = copy.deepcopy(priv_context.OPTS)
    for opt in opts:
        if opt.name == 'helper_command':
            opt.help += (' resq-nova always appends the program\'s '
                         '--config-file and --config-dir arguments: the '
                         'daemon reads what it may write from them.')
            if with_daemon:
                opt.help += ' Not used when daemon_socket is set.'
    return opts + ([copy.deepcopy(DAEMON_SOCKET_OPT)] if with_daemon
                   else [])


CONNECT_WAIT_S = 10


def _connect(sock, path, wait):
    deadline = time.monotonic() + wait
    while True:
        try:
            return sock.connect(path)
        except (FileNotFoundError, ConnectionRefusedError):
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.2)


class DaemonUnreachable(daemon.FailedToDropPrivileges):
    """The privileged daemon's socket cannot be reached or is not root's."""


class HelperFailed(daemon.FailedToDropPrivileges):
    """oslo.privsep's helper (``helper_command``) did not start a daemon.

    Its message ends with what the helper wrote on its standard error
    (``sudo: a password is required``, ...), which oslo.privsep only logs.
    """


def unreachable(exc):
    """Whether ``exc`` says a context's privileged side cannot be had.

    Its daemon's socket cannot be reached (:class:`DaemonUnreachable`), or
    no daemon could be started (:class:`HelperFailed`, oslo.privsep's
    ``FailedToDropPrivileges``): every call of the context fails alike.
    """
    return isinstance(exc, daemon.FailedToDropPrivileges)


# oslo.privsep logs each line the helper writes on its standard error, from
# a thread reading the pipe, on this logger and with this format.
HELPER_LOGGER = getattr(daemon.LOG, 'logger', daemon.LOG).name
HELPER_LINE = 'privsep log: %s'
# How long a failed start waits for the helper's last lines to be logged.
HELPER_OUTPUT_WAIT_S = 1.0
HELPER_LINES_KEPT = 3


class _HelperOutput(logging.Handler):
    """The helper's standard error, as oslo.privsep logs it."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines = []
        self.arrived = threading.Event()

    def emit(self, record):
        if record.msg != HELPER_LINE or not record.args:
            return
        line = ' '.join(str(record.args[0]).split())
        if line:
            self.lines.append(line)
            self.arrived.set()

    def said(self):
        # Its last words: what made it stop.
        return '; '.join(self.lines[-HELPER_LINES_KEPT:])


class SocketClientChannel(daemon._ClientChannel):
    """oslo.privsep's client on the socket of a daemon root started.

    A daemon starting or restarting (no socket yet, or nobody listening)
    is waited for, ``wait`` seconds at most.
    """

    def __init__(self, path, context, wait=CONNECT_WAIT_S):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            try:
                _connect(sock, path, wait)
            except OSError as exc:
                raise DaemonUnreachable(
                    'cannot reach the privileged daemon of %s at %s (%s): '
                    'is resq-privsep-daemon --context %s running as root '
                    '(systemctl status resq-privsep-%s), and is this user '
                    'its [resq_privsep_daemon] client_user?'
                    % (context.pypath, path, exc.strerror,
                       context.cfg_section.rsplit('_', 1)[-1],
                       context.cfg_section.rsplit('_', 1)[-1]))
            creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                    struct.calcsize('3i'))
            _pid, uid, _gid = struct.unpack('3i', creds)
            if uid != 0:
                raise DaemonUnreachable(
                    'the process on %s runs as uid %d, not root: refusing '
                    'to hand it privileged calls' % (path, uid))
        except BaseException:
            sock.close()
            raise
        try:
            super().__init__(sock, context)
        except daemon.FailedToDropPrivileges as exc:
            raise DaemonUnreachable(
                'the privileged daemon on %s closed the connection before '
                'answering (%s): is this user (uid %d) its '
                '[resq_privsep_daemon] client_user? Its log names the uid '
                'it refused' % (path, exc, os.getuid())) from exc

    def _reader_main(self, reader):
        # oslo.privsep fails the waiting calls at EOF only. A daemon that
        # refuses us (we are not its client_user) closes with our hello
        # unread, which is a reset, not an EOF: the reader thread died of
        # it and the hello waited for ever (the agent hung at start). A
        # reset now fails them as an EOF does.
        try:
            super()._reader_main(reader)
        except Exception as exc:
            LOG.debug('privsep read channel ended: %s', exc)
            failure = OSError('the privileged daemon closed the connection '
                              '(%s): is this user its [resq_privsep_daemon] '
                              'client_user?' % exc)
            with self.lock:
                for mbox in self.outstanding_msgs.values():
                    mbox.set_exception(failure)
                self.running = False


def list_opts(*sections, with_daemon=False):
    """oslo.privsep's options under each of ``sections``, for the samples.

    :param with_daemon: the contexts can reach a root-started daemon
        (``daemon_socket``).
    """
    return [(section, _opts(with_daemon)) for section in sections]


class PrivContext(priv_context.PrivContext):
    """:class:`oslo_privsep.priv_context.PrivContext` on a given conf."""

    def __init__(self, prefix, cfg_section, pypath, capabilities,
                 logger_name='oslo_privsep.daemon', timeout=None,
                 with_daemon=False):
        super().__init__(prefix, cfg_section=cfg_section, pypath=pypath,
                         capabilities=capabilities, logger_name=logger_name,
                         timeout=timeout)
        self._defaults = {'capabilities': list(capabilities),
                          'logger_name': logger_name}
        self.config = cfg.CONF
        # Whether a root-started daemon serves this context
        # (resq_agent.privsep.daemon): then [section] daemon_socket exists.
        self.with_daemon = with_daemon

    def use_conf(self, conf):
        """Read this context's options and config files from ``conf``.

        Call it once the program parsed ``conf`` and before the first
        privileged call; returns the previous ``ConfigOpts``.
        """
        if self.cfg_section not in conf:
            conf.register_opts(_opts(self.with_daemon), group=self.cfg_section)
            for name, value in self._defaults.items():
                conf.set_default(name, value, group=self.cfg_section)
        previous, self.config = self.config, conf
        return previous

    @property
    def conf(self):
        return self.config[self.cfg_section]

    def start(self, method=priv_context.Method.ROOTWRAP):
        """Connect to the root-started daemon, or start one as oslo does.

        :raises DaemonUnreachable: ``daemon_socket`` cannot be reached.
        :raises HelperFailed: ``helper_command`` did not start a daemon;
            the message says what it wrote on its standard error.
        """
        path = self.conf.daemon_socket if self.with_daemon else None
        if not path:
            if method is not priv_context.Method.ROOTWRAP:
                return super().start(method)
            return self._start_helper(method)
        with self.start_lock:
            if self.channel is None:
                self.channel = SocketClientChannel(path, self)

    def _start_helper(self, method):
        output = _HelperOutput()
        logger = logging.getLogger(HELPER_LOGGER)
        logger.addHandler(output)
        try:
            super().start(method)
        except daemon.FailedToDropPrivileges as exc:
            # Its lines are logged as the reader thread gets to them,
            # maybe after the helper exited.
            if output.arrived.wait(HELPER_OUTPUT_WAIT_S):
                time.sleep(0.1)
            said = output.said()
            raise HelperFailed('%s%s' % (exc, ': %s' % said if said
                                         else ' and wrote nothing')) from exc
        except OSError as exc:
            # The helper's program cannot be run at all.
            raise HelperFailed('cannot run the privsep helper (%s): %s' % (
                ' '.join(self.helper_command('SOCKET')[:1]),
                exc.strerror or exc)) from exc
        finally:
            logger.removeHandler(output)

    def helper_command(self, sockpath):
        """The daemon's command line: always with the config files.

        oslo.privsep drops them when ``helper_command`` is set; the
        privileged side needs them to decide what it may touch.
        """
        if self.conf.helper_command:
            cmd = shlex.split(self.conf.helper_command)
        else:
            cmd = list(priv_context._HELPER_COMMAND_PREFIX) + [
                'privsep-helper']
        for opt, arg in (('config_file', '--config-file'),
                         ('config_dir', '--config-dir')):
            try:
                paths = self.config[opt] or ()
            except cfg.NoSuchOptError:
                paths = ()
            for path in paths:
                cmd.extend([arg, path])
        cmd.extend(['--privsep_context', self.pypath,
                    '--privsep_sock_path', sockpath])
        return cmd
