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
"""``application`` for uwsgi or any WSGI server.

The configuration files are ``$RESQ_API_CONFIG`` (comma-separated) or
``/etc/resq/resq-api.conf``.
"""

import os

from oslo_config import cfg
from oslo_log import log as logging

from resq_nova.api.db import api as db_api
from resq_nova.api import deploy

DEFAULT_CONFIG = '/etc/resq/resq-api.conf'


def make_conf(config_files=None, args=None, cli_opts=()):
    conf = cfg.ConfigOpts()
    conf.register_cli_opts(list(cli_opts))
    logging.register_options(conf)
    deploy.register_opts(conf)
    if config_files is None:
        env = os.environ.get('RESQ_API_CONFIG')
        config_files = (env.split(',') if env else
                        [DEFAULT_CONFIG] if os.path.exists(DEFAULT_CONFIG)
                        else [])
    conf(args or [], project='resq', prog='resq-api',
         default_config_files=config_files)
    return conf


def init_application(conf=None):
    conf = conf or make_conf()
    logging.setup(conf, 'resq-api')
    db_api.configure(conf)
    return deploy.deploy(conf)


def __getattr__(name):
    # Built on first use, so importing the module (the docs, the sample
    # generator) reads no configuration.
    if name == 'application':
        app = init_application()
        globals()['application'] = app
        return app
    raise AttributeError(name)
