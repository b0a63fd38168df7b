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
"""Hosts: each agent's report of its cache domains.

The report's domains and agent version are one JSON document
(``hosts.report``); the servers it lists (microversion 1.1) another
(``hosts.instances``), NULL when the last report listed none: a report
without ``instances`` (any 1.0 report) clears what an earlier one listed,
so a server is never shown from a report older than the domains.
"""

import sqlalchemy as sa

from resq_nova.api.db import api as db_api
from resq_nova.api.db import models
from resq_nova.api.objects import exception
from resq_nova.api.objects import util


def _record(row):
    rec = dict(util.loads(row.report) or {})
    rec.update(hostname=row.hostname, updated_at=util.iso(row.updated_at),
               instances=util.loads(row.instances))
    return rec


def report(ctx, hostname, values, instances=None):
    """Store the agent's report; ``(record, created)``.

    The documents are made before the transaction, which is one UPDATE by
    primary key (a host that reported before: the steady case) or, when
    it changed no row, one INSERT; nothing is read first.

    :param values: the report but its servers (``domains``,
        ``agent_version``).
    :param instances: the servers it lists, or None when it lists none.
    """
    row = {'report': util.dumps(values),
           'instances': (util.dumps(instances) if instances is not None
                         else None),
           'updated_at': util.now()}
    created = _store(ctx, hostname, row)
    rec = dict(values)
    rec.update(hostname=hostname, updated_at=util.iso(row['updated_at']),
               instances=instances)
    return rec, created


# The statements of the writes, made once: Core on the table, executed on
# the transaction's connection (no ORM session, nothing to synchronise).
_HOSTS = models.Host.__table__
_UPDATE = (_HOSTS.update()
           .where(_HOSTS.c.hostname == sa.bindparam('b_hostname'))
           .values(report=sa.bindparam('report'),
                   instances=sa.bindparam('instances'),
                   updated_at=sa.bindparam('updated_at')))
_INSERT = _HOSTS.insert()
_TOUCH = (_HOSTS.update()
          .where(_HOSTS.c.hostname == sa.bindparam('b_hostname'))
          .values(updated_at=sa.bindparam('updated_at')))


def _connection_writer(func):
    """A writer transaction on a Core connection (``ctx.connection``).

    Run again after a deadlock or a lost insert, as
    :func:`resq_nova.api.db.api.writer` runs its own.
    """
    return db_api.retry_on_deadlock(db_api.retry_on_duplicate(
        db_api.context_manager.writer.connection(func)))


@_connection_writer
def _store(ctx, hostname, row):
    """UPDATE the host's row, else INSERT it; True when inserted.

    Two first reports of one host racing: the second INSERT is a
    duplicate, and the writer runs the transaction again, whose UPDATE
    then finds the row (MariaDB counts the rows an UPDATE matches, not
    only those it changed: SQLAlchemy connects with CLIENT_FOUND_ROWS).
    """
    done = ctx.connection.execute(_UPDATE, dict(row, b_hostname=hostname))
    if done.rowcount:
        return False
    ctx.connection.execute(_INSERT, dict(row, hostname=hostname))
    return True


@_connection_writer
def heartbeat(ctx, hostname):
    """The agent is alive and its last report holds: ``updated_at`` now.

    One UPDATE by primary key; the report's documents are neither read
    nor written.

    :raises HostNotFound: no report of ``hostname`` is stored.
    """
    done = ctx.connection.execute(_TOUCH, {'b_hostname': hostname,
                                           'updated_at': util.now()})
    if not done.rowcount:
        raise exception.HostNotFound(id=hostname)


@db_api.context_manager.reader
def get(ctx, hostname):
    row = ctx.session.get(models.Host, hostname)
    if row is None:
        raise exception.HostNotFound(id=hostname)
    return _record(row)


@db_api.context_manager.reader
def get_list(ctx, limit=None, marker=None):
    """Hosts by name; ``marker`` is the last hostname of a page.

    :raises HostNotFound: no host ``marker``.
    """
    query = sa.select(models.Host)
    if marker is not None:
        get(ctx, marker)
        query = query.where(models.Host.hostname > marker)
    query = query.order_by(models.Host.hostname)
    if limit is not None:
        query = query.limit(limit)
    return [_record(r) for r in ctx.session.execute(query).scalars()]
