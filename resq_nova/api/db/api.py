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

A database that accepts connections and answers nothing (a hung server,
a network that drops packets) is bounded on the client, per request:
resq-api handles each request inside :func:`request_budget`, which gives
the request's thread ``[api] database_read_timeout`` seconds (the URL's
own ``read_timeout``, or ``statement_timeout`` in its ``options``, if it
names one) of waiting for the database, *all its waits together*. Each
wait of a connection on the network (connecting, the handshake, a read,
a write) is bounded by what is left and counted against it, so that when
the wait for the checkout ping of a pooled connection runs out and
SQLAlchemy's ``pool_pre_ping`` connects afresh in the same request, the
new connection's handshake does not wait a second full timeout: it finds
the budget spent and fails at once. The request is answered 503 with
``Retry-After`` after about ``database_read_timeout`` seconds, and the
connections that timed out are closed (the pool makes new ones). The
wait for a pooled connection (``pool_timeout``) is not counted: it is no
wait on the database. Outside a request (resq-api's start) each wait is
bounded by the timeout alone.

* MySQL through PyMySQL: the connections are
  :func:`_pymysql_connection`'s subclass of PyMySQL's (SQLAlchemy's
  ``do_connect`` event of the engine, :func:`_on_engine_create`), whose
  socket timeouts -- PyMySQL's ``connect_timeout``, ``read_timeout`` and
  ``write_timeout``, applied before each packet -- are lowered to what is
  left of the budget, and which raise PyMySQL's "Lost connection to
  MySQL server" (2013) once it is spent. (mysqlclient keeps its
  per-read timeouts.)
* PostgreSQL through psycopg2: libpq has no client-side read timeout
  (``statement_timeout`` is the server's: a server that does not answer
  never sends its error), so resq-api's process installs
  :func:`_pg_wait` as psycopg2's wait callback
  (``psycopg2.extensions.set_wait_callback``; :func:`configure` does,
  when its connection is PostgreSQL and it is given a read timeout). With
  a wait callback psycopg2 runs libpq asynchronously and calls it for
  every wait; it polls the connection's socket for at most what is left
  of the budget (and of ``connect_timeout`` while connecting: libpq's own
  does not apply to an asynchronous connection) and, when that runs
  out, raises ``OperationalError`` ("timeout expired"); psycopg2 then
  closes the connection, SQLAlchemy takes it for a disconnect, and
  :func:`unavailable` for a database that is away.

``resq-manage`` (and the tests' fixtures) configure no timeouts: neither
the bounded connections nor the wait callback are used, and a migration
may run as long as it needs.
"""

import collections
import copy
import hashlib
import math
import os
import re
import select
import threading
import time

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
# OperationalError; connecting asynchronously, as it does under
# resq-api's wait callback, libpq names only the system's error:
# "Connection refused", "No route to host").
AWAY = ('connection to server', 'could not connect', 'timeout expired',
        'server closed the connection', 'terminating connection',
        'statement timeout', "can't connect", 'lost connection',
        'gone away', 'connection refused', 'no route to host',
        'network is unreachable', 'connection timed out',
        'connection reset')


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


# The waits of resq-api's connections (the module docstring): the
# connect and read timeouts of its URL, in seconds (None: unbounded).
Bounds = collections.namedtuple('Bounds', 'connect read')
# resq-api's, set by configure(); None without timeouts (resq-manage).
_bounds = None
# A socket timeout of PyMySQL's is changed only when it is this much off
# the budget (a change costs a system call): a wait ends at most this
# much after the budget.
SLACK_S = 0.1


class _Budget(threading.local):
    # Seconds of waiting for the database the thread's request has left
    # (None: no request), and whether a wait is being counted (a wait
    # inside another, PyMySQL's handshake in its connect, counts once).
    left = None
    counting = False


_budget = _Budget()


class request_budget:
    """The database waits of one request, bounded together.

    resq-api's WSGI application handles each request inside it: the
    thread has ``[api] database_read_timeout`` seconds to wait for the
    database, all waits together (the module docstring). Nothing when no
    timeouts are configured (``resq-manage``, tests) or inside another.
    """

    def __enter__(self):
        bounds = _bounds
        self.own = (bounds is not None and bounds.read is not None and
                    _budget.left is None)
        if self.own:
            _budget.left = bounds.read
        return self

    def __exit__(self, *exc_info):
        if self.own:
            _budget.left = None


def _bound(limit):
    """What the next wait may take: ``limit``, or what the budget has left.

    :returns: seconds (0 or less: spent), or None (unbounded).
    """
    left = _budget.left
    if left is None:
        return limit
    return left if limit is None else min(left, limit)


class _counted:
    """Counts the time inside against the request's budget."""

    __slots__ = ('started',)

    def __enter__(self):
        self.started = None
        if _budget.left is not None and not _budget.counting:
            _budget.counting = True
            self.started = time.monotonic()

    def __exit__(self, *exc_info):
        if self.started is not None:
            _budget.counting = False
            if _budget.left is not None:
                _budget.left -= time.monotonic() - self.started


def _spent_words():
    return ('resq-api\'s request has waited its [api] '
            'database_read_timeout for the database')


def _pymysql_timeout(current, limit):
    """PyMySQL's next socket timeout: ``limit`` bounded by the budget."""
    bound = _bound(limit)
    if bound is None or current is None or abs(current - bound) > SLACK_S:
        return bound
    return current


_pymysql_classes = {}


def _pymysql_connection():
    """PyMySQL's connection, its waits bounded by the request's budget.

    PyMySQL applies ``_read_timeout`` to the socket before it reads each
    packet (and ``_write_timeout`` before each write, ``connect_timeout``
    to the TCP connection): each is lowered to what the budget has left,
    and the time the packet took counted against it. Once the budget is
    spent the connection is closed and PyMySQL's "Lost connection"
    (2013) raised without waiting.
    """
    if 'cls' in _pymysql_classes:
        return _pymysql_classes['cls']
    from pymysql import connections
    from pymysql.constants import CR
    from pymysql import err

    class BoundedConnection(connections.Connection):

        def __init__(self, *args, defer_connect=False, **kwargs):
            super().__init__(*args, defer_connect=True, **kwargs)
            # The URL's timeouts, the bounds outside a request.
            self._resq_limits = (self.connect_timeout, self._read_timeout,
                                 self._write_timeout)
            if not defer_connect:
                self.connect()

        def _resq_spent(self, code, text):
            if _budget.left is not None and _budget.left <= 0:
                self._force_close()
                raise err.OperationalError(code, '%s (%s)' % (
                    text, _spent_words()))

        def connect(self, sock=None):
            self._resq_spent(CR.CR_CONN_HOST_ERROR,
                             "Can't connect to MySQL server on %r"
                             % self.host)
            # PyMySQL takes None for no timeout, never 0.
            self.connect_timeout = _pymysql_timeout(
                self.connect_timeout, self._resq_limits[0]) or None
            with _counted():
                return super().connect(sock)

        def _read_packet(self, *args, **kwargs):
            self._resq_spent(CR.CR_SERVER_LOST,
                             'Lost connection to MySQL server during '
                             'query')
            self._read_timeout = _pymysql_timeout(
                self._read_timeout, self._resq_limits[1])
            with _counted():
                return super()._read_packet(*args, **kwargs)

        def _write_bytes(self, data):
            self._resq_spent(CR.CR_SERVER_GONE_ERROR,
                             'MySQL server has gone away')
            self._write_timeout = _pymysql_timeout(
                self._write_timeout, self._resq_limits[2])
            with _counted():
                return super()._write_bytes(data)

    _pymysql_classes['cls'] = BoundedConnection
    return BoundedConnection


def _on_engine_create(engine):
    """Make resq-api's PyMySQL connections :func:`_pymysql_connection`'s."""
    if engine.dialect.name != 'mysql' or engine.dialect.driver != 'pymysql':
        return
    cls = _pymysql_connection()

    @sa.event.listens_for(engine, 'do_connect')
    def connect(dialect, conn_rec, cargs, cparams):
        return cls(*cargs, **cparams)


# psycopg2's connection states once connected (ready, in a transaction,
# prepared); before, it is setting up or connecting.
_PG_CONNECTED = (1, 2, 5)


def _pg_wait(conn):
    """psycopg2's wait callback in resq-api (the module docstring).

    As ``psycopg2.extras.wait_select``, each wait bounded: by
    ``connect_timeout`` while connecting, else the read timeout, and by
    what the request's budget has left. psycopg2 closes the connection
    when the callback raises.
    """
    import psycopg2
    from psycopg2 import extensions

    connecting = conn.status not in _PG_CONNECTED
    bounds = _bounds
    if bounds is None:
        limit = None
    else:
        limit = bounds.connect if connecting else bounds.read
    while True:
        state = conn.poll()
        if state == extensions.POLL_OK:
            return
        if state == extensions.POLL_READ:
            events, ready = select.POLLIN, 0
        elif state == extensions.POLL_WRITE:
            events, ready = select.POLLOUT, 1
        else:
            raise psycopg2.OperationalError('bad state from poll: %s'
                                            % state)
        bound = _bound(limit)
        if bound is not None and bound <= 0:
            break
        with _counted():
            if not _wait_fd(conn.fileno(), events, ready, bound):
                break
    if bound == limit:
        why = ('within %s (%s s)' % ('connect_timeout' if connecting else
                                     '[api] database_read_timeout', limit))
    else:
        why = _spent_words()
    raise psycopg2.OperationalError(
        'timeout expired: the database did not answer %s (%s); '
        'resq-api closes the connection' % (
            'the connection' if connecting else 'the query', why))


def _wait_fd(fd, events, ready, timeout):
    """Whether ``fd`` is ready within ``timeout`` seconds (None: ever)."""
    poll = getattr(select, 'poll', None)
    if poll is None:
        # eventlet's green select has no poll (the functional tests).
        args = ([fd], [], []) if ready == 0 else ([], [fd], [])
        return bool(select.select(*args, timeout)[ready])
    poller = poll()
    poller.register(fd, events)
    return bool(poller.poll(None if timeout is None
                            else max(1, math.ceil(timeout * 1000))))


# The wait callback psycopg2 had before _pg_wait replaced it.
_pg_saved = [None]


def _pg_wait_callback(install):
    """Install :func:`_pg_wait` (or put back what it replaced)."""
    try:
        from psycopg2 import extensions
    except ImportError:
        return
    current = extensions.get_wait_callback()
    if install and current is not _pg_wait:
        _pg_saved[0] = current
        extensions.set_wait_callback(_pg_wait)
    elif not install and current is _pg_wait:
        extensions.set_wait_callback(_pg_saved[0])
        _pg_saved[0] = None


def _seconds(value):
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return value if value > 0 else None


def bounds_of(url, read_timeout):
    """The :class:`Bounds` of resq-api's connection ``url`` (rendered).

    The URL's own parameters (which :func:`connection_url` keeps): MySQL's
    ``connect_timeout`` and ``read_timeout``, PostgreSQL's
    ``connect_timeout`` and the ``statement_timeout`` of its ``options``
    (milliseconds), else ``read_timeout``.
    """
    url = sa.engine.make_url(url)
    query = url.query
    connect = _seconds(query.get('connect_timeout'))
    if url.get_backend_name() == 'mysql':
        read = _seconds(query.get('read_timeout'))
    else:
        match = re.search(r'statement_timeout=(\d+)(ms)?(?:\s|$)',
                          str(query.get('options', '')))
        read = _seconds(int(match.group(1)) / 1000.0) if match else None
    return Bounds(connect, read or _seconds(read_timeout))


def configure(conf=None, connection=None, connect_timeout=None,
              read_timeout=None):
    """Use ``connection`` (or ``conf.database.connection``) from now on.

    ``connect_timeout`` and ``read_timeout`` (seconds) bound the waits of
    the connections (:func:`connection_url`); resq-api gives them,
    ``resq-manage`` does not (a migration may run long). With
    ``read_timeout`` the waits of each request are bounded together
    (:func:`request_budget`): PyMySQL's connections are bounded ones and,
    on PostgreSQL, :func:`_pg_wait` becomes psycopg2's wait callback in
    this process.

    :returns: the facade in use.
    :raises NoConnection: neither gives a connection.
    """
    global _reset, _bounds
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
    global _etag_key
    _etag_key = hashlib.sha256(
        b'resq-api etag key\0' + kwargs['connection'].encode('utf-8')).digest()
    manager = enginefacade.transaction_context()
    manager.configure(**kwargs)
    if _reset is not None:
        _reset()
    url = sa.engine.make_url(kwargs['connection'])
    backend = url.get_backend_name()
    if read_timeout and backend in ('mysql', 'postgresql'):
        _bounds = bounds_of(url, read_timeout)
        manager.append_on_engine_create(_on_engine_create)
    else:
        _bounds = None
    _pg_wait_callback(_bounds is not None and backend == 'postgresql' and
                      url.get_driver_name() == 'psycopg2')
    _reset = context_manager.patch_factory(manager)
    return manager


_etag_key = b''


def etag_key():
    """A key every worker of this resq-api shares and clients do not know.

    Derived from ``[database] connection`` (its password included), which
    every worker reads the same: tags keyed with it (the profile list's)
    cannot be worked back to what they count. Empty before
    :func:`configure`.
    """
    return _etag_key


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
    global _reset, _bounds
    if _reset is not None:
        _reset()
        _reset = None
    _bounds = None
    _pg_wait_callback(False)


def get_engine():
    return context_manager.writer.get_engine()
