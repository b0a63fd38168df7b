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
"""The optimizer's snapshots and plans, and each action's state.

A plan is ``proposed`` when stored (older proposed plans become
``superseded``), ``applying`` once one applier claimed it (one conditional
update: of two racing claims exactly one wins), then ``applied``,
``failed`` or ``cancelled``. Its actions move from ``pending`` through
``ongoing`` to ``succeeded`` or ``failed``, or from ``pending`` to
``skipped`` or ``cancelled``.

One plan is proposed, the newest: the database keeps that rule, not a
read before the write. Every writer that changes a plan's state first
writes the ``plans`` row of ``locks`` (:func:`_lock`), which holds it
until the transaction ends, so they follow one another: the next one's
UPDATE of the proposed plans sees the plan the last one inserted, under
PostgreSQL's READ COMMITTED as under MariaDB's REPEATABLE READ (whose
UPDATE reads the latest rows), and SQLite serialises writers anyway.
"""

import datetime

import sqlalchemy as sa

from resq_nova.api.db import api as db_api
from resq_nova.api.db import models
from resq_nova.api.objects import exception
from resq_nova.api.objects import util

PROPOSED, APPLYING, APPLIED = 'proposed', 'applying', 'applied'
FAILED, CANCELLED, SUPERSEDED = 'failed', 'cancelled', 'superseded'
FINISHED = (APPLIED, FAILED, CANCELLED, SUPERSEDED)
LOCK = 'plans'
# ``requested``: the applier is about to ask Nova (the request may or may
# not have reached it); ``ongoing``: Nova accepted it.
ACTION_MOVES = {
    'pending': ('requested', 'ongoing', 'skipped', 'cancelled'),
    'requested': ('ongoing', 'failed', 'cancelled'),
    'ongoing': ('succeeded', 'failed'),
}


def _action(row):
    return {'index': row.position, 'uuid': row.server_uuid,
            'name': row.name, 'from_host': row.from_host,
            'to_host': row.to_host, 'state': row.state,
            'detail': row.detail, 'updated_at': util.iso(row.updated_at)}


def _record(ctx, row, detail=True):
    rec = {'id': row.id, 'snapshot_id': row.snapshot_id,
           'state': row.state, 'applier': row.applier,
           'lease_expires': util.iso(row.lease_expires),
           'generation': row.generation, 'result': row.result,
           'created_at': util.iso(row.created_at),
           'updated_at': util.iso(row.updated_at)}
    if detail:
        rec['plan'] = util.loads(row.document)
        rec['actions'] = [_action(a) for a in ctx.session.execute(
            sa.select(models.PlanAction)
            .where(models.PlanAction.plan_id == row.id)
            .order_by(models.PlanAction.position)).scalars()]
    return rec


def _after(model, last):
    # Past ``last`` in the order (created_at descending, id ascending).
    return sa.or_(model.created_at < last.created_at,
                  sa.and_(model.created_at == last.created_at,
                          model.id > last.id))


def _lock(ctx):
    """Hold the plans' lock row until the transaction ends.

    It must be the transaction's first statement: on MariaDB the reads
    that follow then see what the last holder committed.
    """
    done = ctx.session.execute(
        sa.update(models.Lock).where(models.Lock.name == LOCK)
        .values(generation=models.Lock.generation + 1))
    if done.rowcount != 1:
        # The migration seeds the row; seed it again if it went missing
        # (two seeding at once: the second is a duplicate, run again).
        ctx.session.add(models.Lock(name=LOCK, generation=0))
        ctx.session.flush()


def _row(ctx, plan_id):
    row = ctx.session.get(models.Plan, plan_id)
    if row is None:
        raise exception.PlanNotFound(id=plan_id)
    return row


# -- snapshots ----------------------------------------------------------------
@db_api.writer
def create_snapshot(ctx, snapshot_id, document):
    if ctx.session.get(models.Snapshot, snapshot_id) is not None:
        raise exception.AlreadyExists(what='snapshot %s' % snapshot_id)
    row = models.Snapshot(id=snapshot_id, document=util.dumps(document),
                          created_at=util.now())
    ctx.session.add(row)
    ctx.session.flush()
    return {'id': row.id, 'created_at': util.iso(row.created_at)}


@db_api.context_manager.reader
def get_snapshot(ctx, snapshot_id):
    row = ctx.session.get(models.Snapshot, snapshot_id)
    if row is None:
        raise exception.SnapshotNotFound(id=snapshot_id)
    return {'id': row.id, 'created_at': util.iso(row.created_at),
            'snapshot': util.loads(row.document)}


@db_api.context_manager.reader
def list_snapshots(ctx, limit=None, marker=None):
    """Snapshots newest first; ``marker`` is the last id of a page.

    :raises SnapshotNotFound: no snapshot ``marker``.
    """
    query = sa.select(models.Snapshot.id, models.Snapshot.created_at)\
        .order_by(models.Snapshot.created_at.desc(), models.Snapshot.id)
    if marker is not None:
        last = ctx.session.get(models.Snapshot, marker)
        if last is None:
            raise exception.SnapshotNotFound(id=marker)
        query = query.where(_after(models.Snapshot, last))
    if limit is not None:
        query = query.limit(limit)
    return [{'id': i, 'created_at': util.iso(c)}
            for i, c in ctx.session.execute(query)]


@db_api.writer
def delete_snapshot(ctx, snapshot_id):
    """Delete a snapshot no plan names.

    :raises SnapshotNotFound: no snapshot ``snapshot_id``.
    :raises SnapshotInUse: plans name it (they go first, when pruned).
    """
    # The plans' lock: no plan naming it is stored meanwhile.
    _lock(ctx)
    if ctx.session.get(models.Snapshot, snapshot_id) is None:
        raise exception.SnapshotNotFound(id=snapshot_id)
    plans = ctx.session.execute(
        sa.select(models.Plan.id).where(models.Plan.snapshot_id == snapshot_id)
        .order_by(models.Plan.id).limit(5)).scalars().all()
    if plans:
        raise exception.SnapshotInUse(id=snapshot_id, plans=', '.join(plans))
    ctx.session.execute(sa.delete(models.Snapshot).where(
        models.Snapshot.id == snapshot_id))


# -- plans --------------------------------------------------------------------
@db_api.writer
def create(ctx, plan_id, snapshot_id, document):
    """Store a proposed plan; older proposed plans become superseded.

    :raises SnapshotMissing: ``snapshot_id`` names no snapshot.
    :raises AlreadyExists: a plan ``plan_id`` exists.
    """
    _lock(ctx)
    if snapshot_id is None or ctx.session.get(
            models.Snapshot, snapshot_id) is None:
        raise exception.SnapshotMissing(id=snapshot_id)
    if ctx.session.get(models.Plan, plan_id) is not None:
        raise exception.AlreadyExists(what='plan %s' % plan_id)
    now = util.now()
    ctx.session.execute(
        sa.update(models.Plan).where(models.Plan.state == PROPOSED)
        .values(state=SUPERSEDED, updated_at=now,
                result='superseded by plan %s' % plan_id,
                generation=models.Plan.generation + 1))
    row = models.Plan(id=plan_id, snapshot_id=snapshot_id, state=PROPOSED,
                      generation=0, document=util.dumps(document),
                      created_at=now, updated_at=now)
    ctx.session.add(row)
    for n, move in enumerate(document.get('moves') or ()):
        ctx.session.add(models.PlanAction(
            plan_id=plan_id, position=n, server_uuid=move['uuid'],
            name=move.get('name'), from_host=move.get('from_host'),
            to_host=move.get('to_host'), state='pending', updated_at=now))
    ctx.session.flush()
    return _record(ctx, row)


@db_api.context_manager.reader
def get(ctx, plan_id):
    return _record(ctx, _row(ctx, plan_id))


@db_api.context_manager.reader
def get_list(ctx, state=None, limit=None, marker=None):
    """Plans newest first; ``marker`` is the last id of a page.

    :raises PlanNotFound: no plan ``marker``.
    """
    query = sa.select(models.Plan)
    if state is not None:
        query = query.where(models.Plan.state == state)
    if marker is not None:
        query = query.where(_after(models.Plan, _row(ctx, marker)))
    query = query.order_by(models.Plan.created_at.desc(), models.Plan.id)
    if limit is not None:
        query = query.limit(limit)
    return [_record(ctx, r, detail=False)
            for r in ctx.session.execute(query).scalars()]


def _move(ctx, plan_id, from_states, values, reason):
    """One conditional update of the plan's state.

    :raises InvalidState: the plan is not in one of ``from_states``.
    """
    row = _row(ctx, plan_id)
    done = ctx.session.execute(
        sa.update(models.Plan)
        .where(models.Plan.id == plan_id,
               models.Plan.state.in_(from_states))
        .values(generation=models.Plan.generation + 1,
                updated_at=util.now(), **values))
    if done.rowcount != 1:
        ctx.session.refresh(row)
        holder = (' by %s' % row.applier) if row.state == APPLYING else ''
        raise exception.InvalidState(what='plan %s' % plan_id,
                                     state=row.state + holder, reason=reason)
    ctx.session.expire_all()
    return _record(ctx, _row(ctx, plan_id))


def _expiry(lease):
    if lease is None:
        return None
    return util.now() + datetime.timedelta(seconds=lease)


@db_api.writer
def claim(ctx, plan_id, applier, lease=None):
    """``proposed`` -> ``applying`` for ``applier``; one racer wins.

    With ``lease`` (seconds) the claim holds that long unless the applier
    renews it (:func:`heartbeat`); without, until another takes it over.
    """
    _lock(ctx)
    return _move(ctx, plan_id, (PROPOSED,),
                 {'state': APPLYING, 'applier': applier,
                  'lease_expires': _expiry(lease)},
                 'only a proposed plan can be applied; make a new plan')


@db_api.writer
def heartbeat(ctx, plan_id, applier, lease):
    """Renew ``applier``'s claim on the plan it applies for ``lease`` s.

    :raises InvalidState: the plan is not applying by ``applier`` (it
        ended, was cancelled, or another applier took it over).
    """
    row = _row(ctx, plan_id)
    done = ctx.session.execute(
        sa.update(models.Plan)
        .where(models.Plan.id == plan_id, models.Plan.state == APPLYING,
               models.Plan.applier == applier)
        .values(lease_expires=_expiry(lease)))
    if done.rowcount != 1:
        ctx.session.refresh(row)
        raise exception.InvalidState(
            what='plan %s' % plan_id, state='%s by %s' % (
                row.state, row.applier),
            reason='only its applier renews its claim')
    ctx.session.expire_all()
    return _record(ctx, _row(ctx, plan_id), detail=False)


@db_api.writer
def take_over(ctx, plan_id, applier, lease):
    """Take an applying plan whose applier's lease expired.

    A claim without a lease (made before leases) counts as expired.

    :raises InvalidState: not applying, or its lease still holds.
    """
    _lock(ctx)
    now = util.now()
    row = _row(ctx, plan_id)
    done = ctx.session.execute(
        sa.update(models.Plan)
        .where(models.Plan.id == plan_id, models.Plan.state == APPLYING,
               sa.or_(models.Plan.lease_expires.is_(None),
                      models.Plan.lease_expires < now))
        .values(applier=applier, lease_expires=_expiry(lease),
                generation=models.Plan.generation + 1, updated_at=now))
    if done.rowcount != 1:
        ctx.session.refresh(row)
        raise exception.InvalidState(
            what='plan %s' % plan_id, state='%s by %s until %s' % (
                row.state, row.applier, util.iso(row.lease_expires)),
            reason='only an applying plan whose lease expired is taken over')
    ctx.session.expire_all()
    return _record(ctx, _row(ctx, plan_id))


@db_api.writer
def cancel(ctx, plan_id):
    _lock(ctx)
    _move(ctx, plan_id, (PROPOSED, APPLYING),
          {'state': CANCELLED, 'result': 'cancelled'},
          'only a proposed or applying plan can be cancelled')
    ctx.session.execute(
        sa.update(models.PlanAction)
        .where(models.PlanAction.plan_id == plan_id,
               models.PlanAction.state == 'pending')
        .values(state='cancelled', detail='the plan was cancelled',
                updated_at=util.now()))
    ctx.session.expire_all()
    return _record(ctx, _row(ctx, plan_id))


@db_api.writer
def set_action_state(ctx, plan_id, index, state, detail=None):
    """Move one action on; only the transitions in ACTION_MOVES."""
    plan = _row(ctx, plan_id)
    row = ctx.session.get(models.PlanAction, (plan_id, index))
    if row is None:
        raise exception.ActionNotFound(id=plan_id, index=index)
    if plan.state not in (APPLYING, CANCELLED):
        raise exception.InvalidState(
            what='plan %s' % plan_id, state=plan.state,
            reason='actions change only while it is applied')
    if state not in ACTION_MOVES.get(row.state, ()):
        raise exception.InvalidState(
            what='action %d of plan %s' % (index, plan_id), state=row.state,
            reason='it cannot become %s (allowed: %s)' % (
                state, ', '.join(ACTION_MOVES.get(row.state, ())) or
                'none, it is finished'))
    done = ctx.session.execute(
        sa.update(models.PlanAction)
        .where(models.PlanAction.plan_id == plan_id,
               models.PlanAction.position == index,
               models.PlanAction.state == row.state)
        .values(state=state, detail=detail, updated_at=util.now()))
    if done.rowcount != 1:
        raise exception.ConcurrentUpdate(
            what='action %d of plan %s' % (index, plan_id),
            expected=row.state, actual='changed')
    ctx.session.expire_all()
    return _action(ctx.session.get(models.PlanAction, (plan_id, index)))


@db_api.writer
def set_result(ctx, plan_id, state, result):
    """``applying`` (or ``cancelled``, keeping it) to its end."""
    _lock(ctx)
    row = _row(ctx, plan_id)
    if row.state == CANCELLED:
        return _move(ctx, plan_id, (CANCELLED,), {'result': result}, '')
    return _move(ctx, plan_id, (APPLYING,),
                 {'state': state, 'result': result},
                 'only a plan being applied gets a result')


def _naive(when):
    """A database time as naive UTC (how util.now() gives it)."""
    if when is not None and when.tzinfo is not None:
        return when.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return when


@db_api.writer
def prune(ctx, keep, max_age_seconds):
    """Delete finished plans and unused snapshots that are old or many.

    A finished plan goes when it is older than ``max_age_seconds`` or not
    among the newest ``keep`` plans; a snapshot no remaining plan names,
    likewise. Proposed and applying plans stay. :returns: ``(plans,
    snapshots)`` deleted.
    """
    _lock(ctx)
    cutoff = util.now() - datetime.timedelta(seconds=max_age_seconds)
    kept = set(ctx.session.execute(
        sa.select(models.Plan.id)
        .order_by(models.Plan.created_at.desc(), models.Plan.id)
        .limit(keep)).scalars())
    doomed = [p for p, created in ctx.session.execute(
        sa.select(models.Plan.id, models.Plan.created_at)
        .where(models.Plan.state.in_(FINISHED))).all()
        if p not in kept or _naive(created) < cutoff]
    if doomed:
        ctx.session.execute(sa.delete(models.PlanAction).where(
            models.PlanAction.plan_id.in_(doomed)))
        ctx.session.execute(sa.delete(models.Plan).where(
            models.Plan.id.in_(doomed)))
    in_use = set(ctx.session.execute(
        sa.select(models.Plan.snapshot_id)).scalars())
    kept_snaps = set(ctx.session.execute(
        sa.select(models.Snapshot.id)
        .order_by(models.Snapshot.created_at.desc(), models.Snapshot.id)
        .limit(keep)).scalars())
    snaps = [s for s, created in ctx.session.execute(
        sa.select(models.Snapshot.id, models.Snapshot.created_at)).all()
        if s not in in_use and (s not in kept_snaps
                                or _naive(created) < cutoff)]
    if snaps:
        ctx.session.execute(sa.delete(models.Snapshot).where(
            models.Snapshot.id.in_(snaps)))
    return len(doomed), len(snaps)
