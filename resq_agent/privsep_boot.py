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
"""The agent's privileged side, started by root (``resq-privsep-daemon``).

Root (systemd, or devstack's ``run_process`` as root) starts one daemon
per privsep context; the agent's user only connects to its socket. Nothing
the agent's user chooses reaches this process's command line, environment,
configuration or code (see :mod:`resq_agent.privsep.daemon` for what it
serves and :doc:`/admin/privsep` for the threat model).

It runs only in the hardened interpreter that ``bin/resq-privsep-daemon``
(a stub that imports nothing of the project's) and the systemd units start:
isolated (``-I``: no ``PYTHON*`` variable, no user site, no working
directory on the path), writing no bytecode (``-B``) and reading none from
``__pycache__`` beside the sources (``-X pycache_prefix`` names a directory
under ``/proc`` that no one can create), so a planted ``.pyc`` is never
loaded. Started any other way (``python -m resq_agent.privsep_boot``) it
refuses, naming the command to use: that interpreter has read the
package's bytecode already. This module imports the standard library
alone. Before any other code of the project's or its dependencies' is
imported it:

* sets the umask to 022;
* refuses to run unless every directory on ``sys.path`` and everything
  in the project's packages belongs to root (or to an owner root names
  with ``--allow-code-owner``) and no one else can write it;
* reads root's configuration file through root-owned directories only.
"""

import argparse
import os
import pwd
import sys

from resq_common import rootpath

CONTEXTS = ('resctrl', 'pqos', 'openflow')
CONFIG_FILE = '/etc/resq-privsep/resq-agent-privsep.conf'
# No one, root included, can create a directory under /proc: with this
# prefix the interpreter never finds a cached .pyc, wherever it looks.
NO_PYCACHE = '/proc/resq-privsep-no-bytecode'
PACKAGES = ('resq_agent', 'resq_common')
MODULE = 'resq_agent.privsep_boot'
_PY_FLAGS = ['-I', '-B', '-X', 'pycache_prefix=' + NO_PYCACHE]


def hardened_interpreter():
    """Whether this interpreter runs with the flags :data:`_PY_FLAGS` set."""
    return bool(sys.flags.isolated and sys.flags.dont_write_bytecode
                and sys.pycache_prefix == NO_PYCACHE)


def command(argv):
    """The interpreter command line the daemon runs under."""
    return [sys.executable] + _PY_FLAGS + ['-m', MODULE] + list(argv)


def parse(argv):
    parser = argparse.ArgumentParser(
        prog='resq-privsep-daemon',
        description='The privileged side of resq-agent for one privsep '
        'context; started by root, serving the agent on a Unix socket.')
    parser.add_argument('--context', required=True, choices=CONTEXTS,
                        help='The privsep context this daemon serves.')
    parser.add_argument('--config-file', default=CONFIG_FILE,
                        help='Root\'s configuration of the privileged '
                        'side (default %(default)s); it and every '
                        'directory above it must be root\'s alone.')
    parser.add_argument('--allow-code-owner', action='append', default=[],
                        metavar='USER',
                        help='A user besides root who may own the code '
                        'this daemon runs (devstack\'s stack user, for a '
                        'source checkout). That user can become root: '
                        'never name the agent\'s user on a production '
                        'host.')
    return parser.parse_args(argv)


def owner_uids(names):
    uids = {0}
    for name in names:
        try:
            uids.add(pwd.getpwnam(name).pw_uid)
        except KeyError:
            raise rootpath.Refused('--allow-code-owner %s: no such user'
                                   % name)
    return uids


def check_code(owners):
    """Refuse to import code someone other than ``owners`` could change.

    Every ``sys.path`` directory and what it holds directly (``.pth``
    files run at start-up), and the project's package trees.
    """
    def check(st, where):
        rootpath.root_only(st, where, owners)

    for entry in sys.path:
        if not entry or not os.path.isdir(entry):
            continue
        fd, _name = rootpath.open_dir(os.path.realpath(entry), check)
        try:
            for name in os.listdir(fd):
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                check(st, os.path.join(entry, name))
        finally:
            os.close(fd)
    here = os.path.dirname(os.path.abspath(__file__))
    for package in PACKAGES:
        top = os.path.join(os.path.dirname(here), package)
        rootpath.check_tree(top, owners)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if not hardened_interpreter():
        print('resq-privsep-daemon: refused: not started in the hardened '
              'interpreter; run resq-privsep-daemon (bin/resq-privsep-daemon) '
              'or %s' % ' '.join(command(argv)), file=sys.stderr)
        return 2
    os.umask(0o022)
    sys.dont_write_bytecode = True
    os.environ['PYTHONDONTWRITEBYTECODE'] = '1'
    args = parse(argv)
    if os.geteuid() != 0:
        print('resq-privsep-daemon: must be started by root (its systemd '
              'unit, or devstack as root); the agent\'s user connects to '
              'its socket and never starts it', file=sys.stderr)
        return 2
    try:
        owners = owner_uids(args.allow_code_owner)
        check_code(owners)
        data = rootpath.read_root_file(os.path.abspath(args.config_file))
    except (rootpath.Refused, OSError) as exc:
        print('resq-privsep-daemon: refused: %s' % exc, file=sys.stderr)
        return 2
    from resq_common import cmdline
    cmdline.quiet_eventlet()
    from resq_agent.privsep import daemon
    return daemon.serve(args.context, data, args.config_file, owners)


if __name__ == '__main__':
    sys.exit(main())
