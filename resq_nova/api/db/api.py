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
"""The database engine facade of resq-api (oslo.db).

Objects decorate their functions with ``context_manager.reader`` or
``.writer``; the request context carries the session (its class is
decorated with ``enginefacade.transaction_context_provider``).
:func:`configure` points the facade at ``[database] connection``; it may
be called again (tests, the benchmark), each call replacing the last.
"""

from oslo_db import options as db_options
from oslo_db.sqlalchemy import enginefacade

DEFAULT_CONNECTION = 'sqlite:////var/lib/resq/resq.sqlite'

context_manager = enginefacade.transaction_context()
_reset = None


def register_opts(conf):
    db_options.set_defaults(conf, connection=DEFAULT_CONNECTION)


def list_opts():
    return [('database', db_options.database_opts)]


def configure(conf=None, connection=None):
    """Use ``connection`` (or ``conf.database.connection``) from now on.

    :returns: the facade in use.
    """
    global _reset
    kwargs = {'sqlite_fk': True}
    if conf is not None:
        kwargs.update({k: v for k, v in conf.database.items()
                       if k in ('connection', 'max_pool_size',
                                'max_overflow', 'pool_timeout',
                                'connection_recycle_time', 'max_retries',
                                'retry_interval', 'connection_debug',
                                'mysql_sql_mode', 'slave_connection')
                       and v is not None})
    if connection is not None:
        kwargs['connection'] = connection
    manager = enginefacade.transaction_context()
    manager.configure(**kwargs)
    if _reset is not None:
        _reset()
    _reset = context_manager.patch_factory(manager)
    return manager


def reset():
    """Forget the last :func:`configure` (tests)."""
    global _reset
    if _reset is not None:
        _reset()
        _reset = None


def get_engine():
    return context_manager.writer.get_engine()
