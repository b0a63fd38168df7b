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
only what oslo.privsep has to pass, a context and a socket path, checks
both against a fixed list and a strict pattern, and starts oslo.privsep's
daemon with root's own configuration file
(:data:`CONFIG_FILE`, root-owned and not writable by anyone else), never
the caller's. Configuration files the caller names are ignored.

sudoers::

    resq ALL = (root) NOPASSWD: /usr/bin/resq-privsep-helper

and in resq-agent.conf ``[resq_privsep_resctrl]`` and
``[resq_privsep_pqos]``: ``helper_command = sudo resq-privsep-helper``.
"""

import os
import re
import stat
import sys

# Root's configuration of the privileged side: [resq_agent] resctrl_root,
# resctrl_fake (the only place a fake tree can be allowed), pqos options.
CONFIG_FILE = '/etc/resq/privsep/resq-agent-privsep.conf'
CONTEXTS = ('resq_agent.privsep.resctrl_pctxt',
            'resq_agent.privsep.pqos_pctxt')
# oslo.privsep's socket: <tempfile.mkdtemp()>/privsep.sock.
SOCK_RE = re.compile(r'/(?:[A-Za-z0-9_.-]+/){1,8}privsep\.sock')


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


def check_config(path, uid=0):
    """Refuse a configuration file the agent's user could change.

    :raises Refused: unless ``path`` and its directory belong to ``uid``
        and no one else can write them.
    """
    for what in (path, os.path.dirname(path)):
        try:
            st = os.stat(what)
        except OSError as exc:
            raise Refused('%s cannot be read: %s' % (what, exc.strerror))
        if st.st_uid != uid or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise Refused('%s must belong to root and be writable by no one '
                          'else (it is uid %d, mode %o)'
                          % (what, st.st_uid, stat.S_IMODE(st.st_mode)))


def main(argv=None, config_file=CONFIG_FILE, run=None):
    argv = sys.argv[1:] if argv is None else argv
    try:
        context, sock = parse(argv)
        check_config(config_file)
    except Refused as exc:
        print('resq-privsep-helper: refused: %s' % exc, file=sys.stderr)
        return 2
    if run is None:
        from oslo_privsep import daemon

        run = daemon.helper_main
    sys.argv = [sys.argv[0], '--config-file', config_file,
                '--privsep_context', context, '--privsep_sock_path', sock]
    return run()


if __name__ == '__main__':
    sys.exit(main())
