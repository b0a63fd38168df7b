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


@db_api.writer
def report(ctx, hostname, values, instances=None):
    """Store the agent's report; ``(record, created)``.

    :param values: the report but its servers (``domains``,
        ``agent_version``).
    :param instances: the servers it lists, or None when it lists none.
    """
    row = ctx.session.get(models.Host, hostname)
    created = row is None
    if created:
        row = models.Host(hostname=hostname)
        ctx.session.add(row)
    row.report = util.dumps(values)
    row.instances = util.dumps(instances) if instances is not None else None
    row.updated_at = util.now()
    ctx.session.flush()
    return _record(row), created


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
