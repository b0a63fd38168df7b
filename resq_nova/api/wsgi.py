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
those oslo.config's default search finds for project ``resq`` and program
``resq-api``: ``resq.conf`` (what every resq command shares), then
``resq-api.conf`` (resq-api's own options, which win), each from the first
of ``~/.resq/``, ``~/``, ``/etc/resq/`` and ``/etc/`` that has it
(:func:`resq_nova.conf.api.config_files`, which ``resq-manage`` reads too).
A file of the search that another one hides (a try-out's
``~/.resq/resq-api.conf`` hides ``/etc/resq/resq-api.conf``) is named in
a warning when the application is built.

Under uwsgi the application is built when the module is imported, in
each worker (``lazy-apps``), so a configuration it cannot serve with
(keystone authentication without ``[keystone_authtoken]``, no database)
stops the worker's start with one line in the log; with ``need-app``
(the shipped uwsgi file and devstack's plugin set it) uwsgi exits rather
than serve without an application.
"""

import sys
import threading

from oslo_config import cfg
from oslo_log import log as logging

from resq_nova.api.db import api as db_api
from resq_nova.api import deploy
from resq_nova.conf import api as api_conf


def make_conf(config_files=None, args=None, cli_opts=()):
    conf = cfg.ConfigOpts()
    conf.register_cli_opts(list(cli_opts))
    logging.register_options(conf)
    deploy.register_opts(conf)
    if config_files is None:
        config_files = api_conf.config_files()
    conf(args or [], project='resq', prog=api_conf.PROG,
         default_config_files=config_files)
    return conf


LOG = logging.getLogger(__name__)


def init_application(conf=None):
    """resq-api's WSGI stack for ``conf`` (default: :func:`make_conf`).

    :raises resq_nova.api.db.api.NoConnection: no database connection.
    :raises resq_nova.api.deploy.AuthNotConfigured: keystone
        authentication without what keystonemiddleware needs.
    """
    conf = conf or make_conf()
    logging.setup(conf, 'resq-api')
    read = list(conf.config_file or ())
    LOG.info('resq-api reads %s', ', '.join(read) or 'no configuration file')
    # Files the default search found (not --config-file's choice) that
    # hide others: the operator may think /etc/resq's are read.
    hiding = api_conf.shadowed(read) if read == api_conf.config_files() \
        else []
    for used, hidden in hiding:
        LOG.warning('%s is not read: %s is, and oslo.config reads only '
                    'the first file of each name in ~/.resq/, ~/, '
                    '/etc/resq/, /etc/; remove %s, or name the files in '
                    '$%s or --config-file', hidden, used, used,
                    api_conf.CONFIG_ENV)
    db_api.configure(
        conf, connect_timeout=conf.api.database_connect_timeout,
        read_timeout=conf.api.database_read_timeout)
    return deploy.deploy(conf)


class _Application:
    """The WSGI application, built on its first request.

    A module attribute of its own, as WSGI servers look it up: uwsgi's
    ``module = resq_nova.api.wsgi:application`` reads the module's
    dictionary, which a module ``__getattr__`` never reaches. Importing
    the module (the docs, the sample generator) still reads no
    configuration; each server process (uwsgi's ``lazy-apps``) builds its
    own application once (a uwsgi worker when it imports the module:
    :meth:`load`), and a failed build is retried on the next request
    rather than cached.
    """

    def __init__(self, init=None):
        self._init = init or init_application
        self._app = None
        self._lock = threading.Lock()

    def __call__(self, environ, start_response):
        app = self._app
        if app is None:
            with self._lock:
                if self._app is None:
                    self._app = self._init()
                app = self._app
        return app(environ, start_response)

    def load(self):
        """Build the application now; one line on stderr if it cannot be.

        :raises: what :func:`init_application` raises.
        """
        try:
            with self._lock:
                if self._app is None:
                    self._app = self._init()
        except (db_api.NoConnection, deploy.AuthNotConfigured,
                cfg.Error) as exc:
            print('resq-api: %s' % exc, file=sys.stderr, flush=True)
            # uwsgi prints the import's failure through sys.excepthook,
            # which oslo.log made a CRITICAL record with the traceback:
            # the line above has said all there is.
            sys.excepthook = _said
            raise


def _said(*exc_info):
    """An excepthook for a failure already told in one line."""


application = _Application()
if 'uwsgi' in sys.modules:
    # uwsgi's own module: inside a uwsgi worker, build now, so that a
    # configuration resq-api cannot serve with stops the start instead of
    # failing every request.
    application.load()
