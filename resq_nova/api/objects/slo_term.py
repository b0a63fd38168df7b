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
"""SLO terms: what was admitted, for which project, served by which servers.

A term moves through ``STATUS_MOVES`` only: ``requested`` (what a tenant
records) to ``admitted`` (the admission service's word) or ``released``;
an admitted term may be reported ``degraded`` or ``violated`` and come
back; ``released`` is final.
"""

import uuid as uuid_mod

import sqlalchemy as sa

from resq_nova.api.db import api as db_api
from resq_nova.api.db import models
from resq_nova.api.objects import exception
from resq_nova.api.objects import util

REQUESTED, ADMITTED, RELEASED = 'requested', 'admitted', 'released'
STATUSES = (REQUESTED, ADMITTED, 'degraded', 'violated', RELEASED)
STATUS_MOVES = {
    REQUESTED: (ADMITTED, RELEASED),
    ADMITTED: ('degraded', 'violated', RELEASED),
    'degraded': (ADMITTED, 'violated', RELEASED),
    'violated': (ADMITTED, 'degraded', RELEASED),
    RELEASED: (),
}
_COLUMNS = ('name', 'profile_id', 'slo', 'throughput_mpps',
            'latency_p95_us', 'packet_bytes', 'status')


def _record(row):
    rec = {c: getattr(row, c) for c in _COLUMNS}
    rec.update(uuid=row.uuid, project_id=row.project_id,
               flavors=util.loads(row.flavors) or [],
               servers=util.loads(row.servers) or [],
               generation=row.generation,
               created_at=util.iso(row.created_at),
               updated_at=util.iso(row.updated_at))
    return rec


def _row(ctx, uuid, project_id):
    query = sa.select(models.SloTerm).where(models.SloTerm.uuid == uuid)
    if project_id is not None:
        query = query.where(models.SloTerm.project_id == project_id)
    row = ctx.session.execute(query).scalar_one_or_none()
    if row is None:
        raise exception.SloTermNotFound(id=uuid)
    return row


@db_api.writer
def create(ctx, values, limit=None):
    """A new term; ``values`` holds every column but the bookkeeping.

    :param limit: how many terms its project may hold (None or -1: any).
    :raises OverLimit: the project already holds ``limit``.
    """
    util.check_limit(ctx, models.SloTerm, values['project_id'], limit,
                     'SLO terms', 'max_terms_per_project')
    now = util.now()
    row = models.SloTerm(
        uuid=values.get('uuid') or str(uuid_mod.uuid4()),
        project_id=values['project_id'],
        flavors=util.dumps(values.get('flavors') or []),
        servers=util.dumps(values.get('servers') or []),
        generation=0, created_at=now, updated_at=now,
        **{c: values.get(c) for c in _COLUMNS})
    if row.status is None:
        row.status = REQUESTED
    ctx.session.add(row)
    ctx.session.flush()
    return _record(row)


@db_api.context_manager.reader
def get(ctx, uuid, project_id=None):
    """:raises SloTermNotFound: none, or of another project than given."""
    return _record(_row(ctx, uuid, project_id))


@db_api.context_manager.reader
def get_list(ctx, project_id=None, status=None, limit=None, marker=None,
             max_bytes=None):
    """Terms newest first; ``marker`` is the last uuid of a page.

    ``max_bytes``: the terms (one at least) whose stored server and flavor
    lists fit, measured before any of them is read.

    :raises SloTermNotFound: ``marker`` is no term of ``project_id``.
    """
    query = sa.select(models.SloTerm)
    if project_id is not None:
        query = query.where(models.SloTerm.project_id == project_id)
    if status is not None:
        query = query.where(models.SloTerm.status == status)
    if marker is not None:
        last = _row(ctx, marker, project_id)
        query = query.where(sa.or_(
            models.SloTerm.created_at < last.created_at,
            sa.and_(models.SloTerm.created_at == last.created_at,
                    models.SloTerm.uuid < last.uuid)))
    query = query.order_by(models.SloTerm.created_at.desc(),
                           models.SloTerm.uuid.desc())
    if limit is not None:
        query = query.limit(limit)
    if max_bytes is not None:
        query = util.within_bytes(
            ctx, query, models.SloTerm.uuid,
            sa.func.length(models.SloTerm.servers) +
            sa.func.length(models.SloTerm.flavors), max_bytes)
    return [_record(r) for r in ctx.session.execute(query).scalars()]


def _check_move(ctx, row, status):
    """Refuse a move STATUS_MOVES does not have, or an orphan admission.

    :raises InvalidState: not a move of the state machine.
    :raises ProfileGone: admitting a term whose profile its project no
        longer sees.
    """
    if status == row.status:
        return
    if status not in STATUS_MOVES.get(row.status, ()):
        raise exception.InvalidState(
            what='SLO term %s' % row.uuid, state=row.status,
            reason='it cannot become %s (allowed: %s)' % (
                status, ', '.join(STATUS_MOVES.get(row.status, ())) or
                'none, released is final; record a new term'))
    if status == ADMITTED:
        profile = ctx.session.get(models.Profile, row.profile_id)
        if profile is None or (profile.visibility != 'public' and
                               profile.project_id != row.project_id):
            raise exception.ProfileGone(id=row.profile_id, term=row.uuid)


@db_api.writer
def update(ctx, uuid, generation, values, project_id=None,
           admission=True):
    """Change status, servers or flavors if the generation is current.

    A released term changes no more. Unless ``admission`` (the caller is
    the admission service), servers and flavors change only while the
    term is ``requested``: checked on the row this transaction writes,
    whose status the write requires unchanged.

    :raises AdmissionOnly: the lists of a term no longer requested, by
        another caller than the admission service.
    :raises ConcurrentUpdate: a stale generation.
    :raises InvalidState: a status move the state machine does not have.
    :raises ProfileGone: admitting a term whose profile is gone.
    """
    row = _row(ctx, uuid, project_id)
    if row.status == RELEASED:
        raise exception.InvalidState(
            what='SLO term %s' % uuid, state=row.status,
            reason='released is final; record a new term')
    changes = {'generation': generation + 1, 'updated_at': util.now()}
    changed = []
    for key in ('servers', 'flavors'):
        if key in values:
            changes[key] = util.dumps(values[key])
            if changes[key] != getattr(row, key):
                changed.append(key)
    if changed and not admission and row.status != REQUESTED:
        raise exception.AdmissionOnly(what=' and '.join(changed),
                                      status=row.status)
    if 'status' in values:
        _check_move(ctx, row, values['status'])
        changes['status'] = values['status']
    done = ctx.session.execute(
        sa.update(models.SloTerm)
        .where(models.SloTerm.uuid == uuid,
               models.SloTerm.status == row.status,
               models.SloTerm.generation == generation).values(**changes))
    if done.rowcount != 1:
        raise exception.ConcurrentUpdate(what='SLO term %s' % uuid,
                                         expected=generation,
                                         actual=row.generation)
    ctx.session.expire_all()
    return _record(_row(ctx, uuid, None))


@db_api.writer
def delete(ctx, uuid, project_id=None):
    _row(ctx, uuid, project_id)
    ctx.session.execute(sa.delete(models.SloTerm)
                        .where(models.SloTerm.uuid == uuid))
