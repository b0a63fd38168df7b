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
decorated with ``enginefacade.transaction_context_provider``). Writers
use :func:`writer`, which runs the transaction again when the database
refuses it for a race (a deadlock, or an insert another request made
first), as Placement does.
:func:`configure` points the facade at ``[database] connection``; it may
be called again (tests, the benchmark), each call replacing the last.
There is no default connection, as in Nova and Placement: a configuration
without one (a wrong or missing file) is refused by name
(:class:`NoConnection`) rather than served from a database nobody chose.

resq-api answers 503 rather than waiting when its database is away
(:func:`unavailable`): oslo.db's ``max_retries`` defaults to 0 here (its
own default, 10 attempts 10 s apart, held each request 1 min 41 s),
``pool_timeout`` to 10 s, and the API's connections get connect and read
timeouts (:func:`connection_url`). MySQL connections always use
``utf8mb4``, the tables' character set, whatever ``charset`` the URL
names (devstack writes ``charset=utf8``, which cannot carry an emoji).
"""

import copy
import os

from oslo_db import api as oslo_db_api
from oslo_db import exception as db_exc
from oslo_db import options as db_options
from oslo_db.sqlalchemy import enginefacade
from oslo_log import log as logging
import sqlalchemy as sa

from resq_common import exception
from resq_nova.conf import api as api_conf

LOG = logging.getLogger(__name__)
context_manager = enginefacade.transaction_context()
_reset = None
# resq-api's defaults of oslo.db's options (the sample shows them): no
# connection test with retries when the engine is made (the first request
# would wait for them), and a bounded wait for a pooled connection.
DEFAULTS = {'max_retries': 0, 'pool_timeout': 10}
# The character set of resq-api's MySQL tables (the migrations'), and of
# every MySQL connection.
MYSQL_CHARSET = 'utf8mb4'


def _sqlite_locked(exc):
    # SQLite's lock wait (its busy timeout) ran out: another process (a
    # second uwsgi worker) held the write lock all along. Busy, not broken:
    # answered 503 with Retry-After, as a database that is away.
    orig = getattr(exc, 'orig', None) or getattr(
        getattr(exc, 'inner_exception', None), 'orig', None)
    return type(orig).__module__ == 'sqlite3' and \
        'database is locked' in str(orig)


def _sqlite_busy(exc):
    # SQLite refuses at once ("database is locked") the writer that would
    # deadlock: it read, and another transaction holds the write lock.
    return (isinstance(exc, db_exc.DBError) and
            'database is locked' in str(exc)) or _sqlite_locked(exc)


# Placement's: InnoDB ends one transaction of a deadlock (MariaDB's
# REPEATABLE READ takes gap locks), PostgreSQL one of a deadlock between
# row locks; the whole transaction runs again, up to five times, after a
# growing, random wait. SQLite's refusal likewise.
retry_on_deadlock = oslo_db_api.wrap_db_retry(
    max_retries=5, retry_on_deadlock=True, exception_checker=_sqlite_busy)

# Check-then-insert: two requests found no row and both inserted; the
# database refused the second insert (a primary key). Run it once more, at
# once: its check now sees the first one's row, and answers as it would
# have (200 for a PUT that replaces, 409 for a create).
retry_on_duplicate = oslo_db_api.wrap_db_retry(
    max_retries=1, retry_interval=0, inc_retry_interval=False,
    exception_checker=lambda exc: isinstance(exc, db_exc.DBDuplicateEntry))


def writer(func):
    """A writer transaction, run again when a race made the database refuse.

    The retries wrap the transaction from outside, as Placement's
    ``wrap_db_retry`` does: each attempt is a transaction of its own, so
    what a refused attempt wrote is rolled back and its reads are made
    afresh. A duplicate left after the second attempt propagates as
    ``DBDuplicateEntry``; the API answers it 409.
    """
    return retry_on_deadlock(retry_on_duplicate(
        context_manager.writer(func)))


class NoConnection(exception.ResQException):
    """``[database] connection`` has no value."""

    msg_fmt = ('[database] connection has no value %(where)s: set it to '
               'resq-api\'s database (mysql+pymysql://resq:PASSWORD@HOST/resq'
               ', or sqlite:////PATH/resq.sqlite for a single-node try-out) '
               'in resq-api.conf, or give resq-api\'s files with '
               '--config-file')


def register_opts(conf):
    # No default connection (oslo.db's is None): see NoConnection.
    db_options.set_defaults(conf)
    for name, value in DEFAULTS.items():
        conf.set_default(name, value, group='database')


def list_opts():
    opts = []
    for opt in db_options.database_opts:
        if opt.dest in DEFAULTS:
            opt = copy.copy(opt)
            opt.default = DEFAULTS[opt.dest]
        opts.append(opt)
    return [('database', opts)]


def connection_url(connection, connect_timeout=None, read_timeout=None):
    """``connection`` as resq-api connects: utf8mb4, bounded waits.

    MySQL (PyMySQL, mysqlclient): ``charset=utf8mb4`` always (a warning
    names another charset the URL gave), ``connect_timeout``, and
    ``read_timeout``/``write_timeout`` (a server that accepted but does
    not answer, the handshake included). PostgreSQL (libpq):
    ``connect_timeout`` (the whole handshake) and ``statement_timeout``
    (a statement the server runs longer, or a lock it waits for).
    Parameters the URL gives itself are kept.
    """
    url = sa.engine.make_url(connection)
    backend = url.get_backend_name()
    query = dict(url.query)
    if backend == 'mysql':
        charset = query.get('charset')
        if charset not in (None, MYSQL_CHARSET):
            LOG.warning('[database] connection names charset=%s; resq-api '
                        'connects with charset=%s, its tables\' character '
                        'set (%s cannot carry every character)',
                        charset, MYSQL_CHARSET, charset)
        query['charset'] = MYSQL_CHARSET
        if connect_timeout:
            query.setdefault('connect_timeout', str(connect_timeout))
        if read_timeout:
            query.setdefault('read_timeout', str(read_timeout))
            query.setdefault('write_timeout', str(read_timeout))
    elif backend == 'postgresql':
        if connect_timeout:
            query.setdefault('connect_timeout', str(connect_timeout))
        if read_timeout:
            query.setdefault('options', '-c statement_timeout=%d'
                             % (read_timeout * 1000))
    return url.set(query=query).render_as_string(hide_password=False)


# What the drivers say when the server is away, unreachable or too slow
# (oslo.db wraps only some of these in DBConnectionError: libpq 16's
# "connection to server at ... failed" reaches us as SQLAlchemy's own
# OperationalError).
AWAY = ('connection to server', 'could not connect', 'timeout expired',
        'server closed the connection', 'terminating connection',
        'statement timeout', "can't connect", 'lost connection',
        'gone away')


def unavailable(exc):
    """Whether ``exc`` says the database is away (resq-api's 503).

    Connecting failed or timed out, a connection was lost or timed out
    reading (oslo.db's ``DBConnectionError``, or the driver's operational
    error saying so), no pooled connection came within ``pool_timeout``,
    or PostgreSQL ended a statement at its ``statement_timeout``, or
    SQLite's write lock stayed held by another process past its wait.
    """
    if isinstance(exc, (db_exc.DBConnectionError, sa.exc.TimeoutError)):
        return True
    if _sqlite_locked(exc):
        return True
    if not isinstance(exc, (db_exc.DBError, sa.exc.OperationalError)):
        return False
    text = str(exc).lower()
    return any(words in text for words in AWAY)


def configure(conf=None, connection=None, connect_timeout=None,
              read_timeout=None):
    """Use ``connection`` (or ``conf.database.connection``) from now on.

    ``connect_timeout`` and ``read_timeout`` (seconds) bound the waits of
    the connections (:func:`connection_url`); resq-api gives them,
    ``resq-manage`` does not (a migration may run long).

    :returns: the facade in use.
    :raises NoConnection: neither gives a connection.
    """
    global _reset
    # No time.sleep(0) at each connection's check-in (oslo.db's default,
    # for eventlet): resq-api's workers are processes and threads, and on
    # a busy machine that sleep gave the CPU away once per request.
    kwargs = {'sqlite_fk': True, 'thread_checkin': False}
    kwargs.update(DEFAULTS)
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
    if not kwargs.get('connection'):
        raise no_connection(conf)
    kwargs['connection'] = connection_url(
        kwargs['connection'], connect_timeout, read_timeout)
    if kwargs['connection'].startswith('sqlite'):
        # No pool to wait for (SQLAlchemy refuses pool_timeout there).
        kwargs.pop('pool_timeout', None)
    manager = enginefacade.transaction_context()
    manager.configure(**kwargs)
    if _reset is not None:
        _reset()
    _reset = context_manager.patch_factory(manager)
    return manager


def no_connection(conf):
    """The :class:`NoConnection` for ``conf``, naming the files it read."""
    files = list(getattr(conf, 'config_file', None) or ())
    if getattr(conf, 'config_dir', None):
        files.append(os.path.join(conf.config_dir, '*.conf'))
    if files:
        where = 'in %s' % ', '.join(files)
    else:
        where = ('in any file: none was read (resq-api\'s: %s)'
                 % api_conf.SEARCHED)
    return NoConnection(where=where)


def reset():
    """Forget the last :func:`configure` (tests)."""
    global _reset
    if _reset is not None:
        _reset()
        _reset = None


def get_engine():
    return context_manager.writer.get_engine()
