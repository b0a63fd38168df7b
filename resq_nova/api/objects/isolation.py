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
"""Isolation status per server, as the agents find it."""

import sqlalchemy as sa

from resq_nova.api.db import api as db_api
from resq_nova.api.db import models
from resq_nova.api.objects import exception
from resq_nova.api.objects import util


def _record(row):
    return {'server_uuid': row.server_uuid, 'status': row.status,
            'host': row.host, 'detail': row.detail,
            'updated_at': util.iso(row.updated_at)}


@db_api.writer
def set_status(ctx, server_uuid, values):
    """Create or replace the server's status; ``(record, created)``."""
    row = ctx.session.get(models.Isolation, server_uuid)
    created = row is None
    if created:
        row = models.Isolation(server_uuid=server_uuid)
        ctx.session.add(row)
    row.status = values['status']
    row.host = values.get('host')
    row.detail = values.get('detail')
    row.updated_at = util.now()
    ctx.session.flush()
    return _record(row), created


@db_api.context_manager.reader
def get(ctx, server_uuid):
    row = ctx.session.get(models.Isolation, server_uuid)
    if row is None:
        raise exception.IsolationNotFound(id=server_uuid)
    return _record(row)


@db_api.context_manager.reader
def get_list(ctx, status=None, host=None, limit=None, marker=None):
    """Statuses by server uuid; ``marker`` is the last uuid of a page.

    :raises IsolationNotFound: no status of server ``marker``.
    """
    query = sa.select(models.Isolation)
    if status is not None:
        query = query.where(models.Isolation.status == status)
    if host is not None:
        query = query.where(models.Isolation.host == host)
    if marker is not None:
        get(ctx, marker)
        query = query.where(models.Isolation.server_uuid > marker)
    query = query.order_by(models.Isolation.server_uuid)
    if limit is not None:
        query = query.limit(limit)
    return [_record(r) for r in ctx.session.execute(query).scalars()]
