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
"""Helpers the objects share: time, JSON columns, pages."""

import datetime
import json

import sqlalchemy as sa

from resq_nova.api.objects import exception


def now():
    # Naive UTC, as the DateTime columns store it on every backend.
    return datetime.datetime.now(datetime.timezone.utc).replace(
        tzinfo=None, microsecond=0)


def iso(value):
    return value.strftime('%Y-%m-%dT%H:%M:%SZ') if value else None


def dumps(doc):
    # Text as sent (ensure_ascii off): an escaped character is 6 or 12
    # bytes of the column where UTF-8 takes at most 4. Every backend's
    # connection carries UTF-8 (MySQL's utf8mb4 always, db.api).
    return json.dumps(doc, sort_keys=True, separators=(',', ':'),
                      allow_nan=False, ensure_ascii=False)


def loads(text):
    return json.loads(text) if text else None


# What an item's answer holds beside its stored documents (names, numbers,
# dates), for :func:`within_bytes`.
ITEM_OVERHEAD = 512


def within_bytes(ctx, query, key, size, max_bytes):
    """``query`` cut to its first rows whose ``size`` fits ``max_bytes``.

    The keys and sizes are read first (``size``: an SQL expression of the
    row's stored bytes), so rows too large for the page are never loaded;
    the first row is kept whatever its size. The order is ``query``'s.
    """
    sized = query.with_only_columns(key, size)
    keep = []
    used = 0
    for value, length in ctx.session.execute(sized):
        length = (length or 0) + ITEM_OVERHEAD
        if keep and used + length > max_bytes:
            break
        keep.append(value)
        used += length
    return query.where(key.in_(keep))


def check_limit(ctx, model, project_id, limit, what, option, *where):
    """Refuse a new row of ``project_id`` that holds ``limit`` already.

    Counted in the writer's transaction, as Nova counts its quotas:
    creates of one project at the same instant may each pass before the
    others commit, so a burst can go a little past ``limit``.

    :raises OverLimit: naming the project, the count and ``option``.
    """
    if limit is None or limit < 0 or project_id is None:
        return
    count = ctx.session.execute(
        sa.select(sa.func.count()).select_from(model).where(
            model.project_id == project_id, *where)).scalar()
    if count >= limit:
        raise exception.OverLimit(project=project_id, count=count,
                                  what=what, option=option, limit=limit)
