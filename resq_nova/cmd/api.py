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

import sys
from wsgiref import simple_server

from oslo_config import cfg

from resq_nova.api import wsgi

OPTS = [
    cfg.HostAddressOpt('host', default='127.0.0.1',
                       help='Address to listen on.'),
    cfg.PortOpt('port', default=8778 + 100,
                help='Port to listen on (8878 by default).'),
]


def main(argv=None):
    conf = wsgi.make_conf(args=sys.argv[1:] if argv is None else argv,
                          cli_opts=OPTS)
    app = wsgi.init_application(conf)
    server = simple_server.make_server(conf.host, conf.port, app)
    print('resq-api on http://%s:%d/' % (conf.host, conf.port))
    server.serve_forever()
