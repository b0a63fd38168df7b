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
does). ``resq-api --config-file F [--host H] [--port P]``.
"""

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


def main(argv=None):
    # init_application sets logging up.
    conf = cmdline.parse(argv, 'resq-api', DESCRIPTION,
                         (deploy.register_opts,), OPTS,
                         default_config_files=api_conf.config_files(),
                         setup_logging=False)
    try:
        app = wsgi.init_application(conf)
    except db_api.NoConnection as exc:
        cmdline.fail('resq-api', str(exc))
    server = simple_server.make_server(conf.host, conf.port, app)
    print('resq-api on http://%s:%d/' % (conf.host, conf.port))
    server.serve_forever()
