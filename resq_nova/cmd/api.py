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
"""``resq-api``: serve the API on wsgiref, for a single-node try-out.

Production runs ``resq_nova.api.wsgi:application`` under uwsgi (devstack
does). ``resq-api --config-file F [--host H] [--port P]``. A configuration
it cannot serve with, or an address it cannot listen on, is one line on
standard error and exit status 2; an address beyond loopback is served
with a warning (a stronger one with ``noauth2``). Each connection has a
thread of its own and 30 s to send its request, so an idle client holds
no one else.
"""

import errno
import ipaddress
import socketserver
import sys
from wsgiref import simple_server

from oslo_config import cfg

from resq_common import cmdline
from resq_nova.api.db import api as db_api
from resq_nova.api import deploy
from resq_nova.api import wsgi
from resq_nova.conf import api as api_conf

DESCRIPTION = '''Serve resq-api on wsgiref, for a single-node try-out:
production runs resq_nova.api.wsgi:application under uwsgi. Without
--config-file it reads $RESQ_API_CONFIG (comma-separated) or, as every
resq command, resq.conf then resq-api.conf from ~/.resq/, ~/, /etc/resq/
or /etc/.'''

OPTS = [
    cfg.HostAddressOpt('host', default='127.0.0.1',
                       help='address to listen on'),
    cfg.PortOpt('port', default=8778 + 100, help='port to listen on'),
]


# Why an address cannot be listened on, and what would fix it.
LISTEN_ERRORS = {
    errno.EADDRINUSE: 'another process listens there (ss -ltnp shows which)'
                      '; stop it or choose another --port',
    errno.EACCES: 'ports below 1024 need root; choose --port 1024 or above',
    errno.EADDRNOTAVAIL: 'no interface of this machine has that address; '
                         'choose --host among them (or 0.0.0.0)',
}


def loopback(host):
    """Whether ``host`` only reaches this machine."""
    if host == 'localhost':
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        # A name: whatever it resolves to may be reachable.
        return False


# Seconds a connection may take to send its request: a client that opens
# one and sends nothing holds a thread that long, not the server.
CLIENT_TIMEOUT_S = 30


class _Server(socketserver.ThreadingMixIn, simple_server.WSGIServer):
    """wsgiref, one thread per connection, so no client holds the rest."""

    daemon_threads = True


class _Handler(simple_server.WSGIRequestHandler):
    timeout = CLIENT_TIMEOUT_S


def main(argv=None):
    # init_application sets logging up.
    conf = cmdline.parse(argv, 'resq-api', DESCRIPTION,
                         (deploy.register_opts,), OPTS,
                         default_config_files=api_conf.config_files(),
                         setup_logging=False)
    try:
        app = wsgi.init_application(conf)
    except (db_api.NoConnection, deploy.AuthNotConfigured) as exc:
        cmdline.fail('resq-api', str(exc))
    except OSError as exc:
        # Its logging.setup: a log file it cannot open, as every command.
        cmdline.fail('resq-api', 'cannot log to %s: %s; check [DEFAULT] '
                     'log_file and log_dir' % (exc.filename, exc.strerror))
    try:
        server = simple_server.make_server(
            conf.host, conf.port, app, server_class=_Server,
            handler_class=_Handler)
    except OSError as exc:
        why = LISTEN_ERRORS.get(exc.errno, 'choose another --host or --port')
        cmdline.fail('resq-api', 'cannot listen on %s port %d: %s; %s' % (
            conf.host, conf.port, exc.strerror or exc, why))
    if conf.api.auth_strategy == 'noauth2' and not loopback(conf.host):
        print('resq-api: WARNING: [api] auth_strategy = noauth2 on %s: '
              'anyone who can reach port %d is anyone they claim to be (the '
              'token "admin" is an admin); listen on 127.0.0.1, or use '
              'auth_strategy = keystone' % (conf.host, conf.port),
              file=sys.stderr, flush=True)
    elif not loopback(conf.host):
        print('resq-api: WARNING: wsgiref serves a single-node try-out on '
              '%s; a deployment others reach runs '
              'resq_nova.api.wsgi:application under uwsgi (see the install '
              'guide)' % conf.host, file=sys.stderr, flush=True)
    print('resq-api on http://%s:%d/' % (conf.host, conf.port), flush=True)
    server.serve_forever()
