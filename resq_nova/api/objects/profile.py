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
"""Profiles: NF profile documents, public or of one project."""

import hashlib
import hmac

import sqlalchemy as sa

from resq_nova.api.db import api as db_api
from resq_nova.api.db import models
from resq_nova.api.objects import exception
from resq_nova.api.objects import util

PUBLIC = 'public'
PRIVATE = 'private'
RELEASED = 'released'


def _visible(query, project_id):
    # project_id None: every profile (an admin's view).
    if project_id is None:
        return query
    return query.where(sa.or_(models.Profile.visibility == PUBLIC,
                              models.Profile.project_id == project_id))


def _record(row, detail=True):
    rec = {'id': row.id, 'name': row.name, 'nf': row.nf,
           'visibility': row.visibility, 'project_id': row.project_id,
           'generation': row.generation,
           'created_at': util.iso(row.created_at),
           'updated_at': util.iso(row.updated_at)}
    if detail:
        rec['profile'] = util.loads(row.document)
    return rec


def _can_see(row, scope):
    return (scope is None or row.visibility == PUBLIC
            or row.project_id == scope)


def _new_row(profile_id, document, text, visibility, project_id):
    now = util.now()
    return models.Profile(
        id=profile_id, name=document.get('nf', {}).get('name', profile_id),
        nf=document.get('nf', {}).get('name', ''), visibility=visibility,
        project_id=project_id, generation=0, document=text,
        created_at=now, updated_at=now)


def _check_publish(row, visibility):
    """Refuse to publish a profile a project owns (the id was squatted).

    A public profile belongs to no project; an admin's public upload of
    an id a project holds would otherwise answer "public" while the
    project still owns, rewrites and unpublishes it.

    :raises ProfileOwned: naming the owner (only an admin publishes, and
        an admin sees every owner).
    """
    if visibility == PUBLIC and row.project_id is not None:
        raise exception.ProfileOwned(
            id=row.id, owner=row.project_id, visibility=row.visibility,
            generation=row.generation)


def _create(ctx, row, profile_id, document, visibility, project_id, scope,
            limit=None):
    text = util.dumps(document)
    if row is not None:
        if not _can_see(row, scope):
            # Ids are global: say no more than that this one is not free.
            raise exception.ProfileIdTaken(id=profile_id)
        _check_publish(row, visibility)
        if (row.document, row.visibility, row.project_id) == (
                text, visibility, project_id):
            return _record(row), False
        if scope is not None and row.project_id != scope:
            # A public profile (an admin's): the caller cannot replace it.
            todo = ('it is public, and only an admin replaces it: upload '
                    'yours under another id')
        else:
            todo = 'send its generation to replace it'
        raise exception.ProfileExists(id=profile_id,
                                      generation=row.generation, todo=todo)
    util.check_limit(ctx, models.Profile, project_id, limit,
                     'private profiles', 'max_profiles_per_project')
    row = _new_row(profile_id, document, text, visibility, project_id)
    ctx.session.add(row)
    ctx.session.flush()
    return _record(row), True


def _check_unpublish(ctx, row, visibility):
    """Refuse to make private a public profile other projects' terms use.

    :raises ProfileInUse: naming those terms.
    """
    if row.visibility != PUBLIC or visibility != PRIVATE:
        return
    query = sa.select(models.SloTerm.uuid).where(
        models.SloTerm.profile_id == row.id,
        models.SloTerm.status != RELEASED)
    if row.project_id is not None:
        query = query.where(models.SloTerm.project_id != row.project_id)
    terms = ctx.session.execute(query.limit(5)).scalars().all()
    if terms:
        raise exception.ProfileInUse(id=row.id, terms=', '.join(terms))


def _replace(ctx, row, profile_id, document, visibility, generation):
    text = util.dumps(document)
    _check_publish(row, visibility)
    _check_unpublish(ctx, row, visibility)
    if (row.document, row.visibility, row.generation) == (
            text, visibility, generation):
        return _record(row), False
    # The owner stays whoever edits (an admin, the owner): the project_id
    # column is not written.
    done = ctx.session.execute(
        sa.update(models.Profile)
        .where(models.Profile.id == profile_id,
               models.Profile.generation == generation)
        .values(document=text, visibility=visibility,
                nf=document.get('nf', {}).get('name', ''),
                generation=generation + 1, updated_at=util.now()))
    if done.rowcount != 1:
        raise exception.ConcurrentUpdate(
            what='profile %s' % profile_id, expected=generation,
            actual=row.generation)
    ctx.session.expire_all()
    return _record(ctx.session.get(models.Profile, profile_id)), False


# The lock row every profile write takes and counts: the list's ETag
# changes with it, whatever the profiles' own generations (a profile
# deleted and made again starts over at generation 0).
LOCK = 'profiles'


def _count_write(ctx):
    """Count a profile write, holding the row until the transaction ends.

    The first statement of the transaction (on MariaDB, the reads after
    it see what the last writer committed).
    """
    done = ctx.session.execute(
        sa.update(models.Lock).where(models.Lock.name == LOCK)
        .values(generation=models.Lock.generation + 1))
    if done.rowcount != 1:
        # First write (two at once: the second is a duplicate, run again).
        ctx.session.add(models.Lock(name=LOCK, generation=1))
        ctx.session.flush()


def record_etag(rec):
    """A profile's ETag: the digest of what it holds and who holds it.

    Not its generation alone, which starts over when a profile is deleted
    and made again: a client's cached copy of the old one would match.
    """
    digest = hashlib.sha256(util.dumps(
        [rec['id'], rec['generation'], rec['visibility'], rec['project_id'],
         rec.get('profile'), rec['updated_at']]).encode('utf-8'))
    return '"%s"' % digest.hexdigest()[:32]


@db_api.writer
def create_or_replace(ctx, profile_id, document, visibility, project_id,
                      generation=None, scope=None, limit=None):
    """Create (``generation`` None) or replace the profile.

    Replacing with the same document and visibility changes nothing (the
    generation stays), so uploading twice is harmless. Replacing keeps
    the owner (``project_id`` is only the owner of a new profile).
    ``scope`` is the caller's project (None: an admin's view): another
    project's private profile answers as if it did not exist.

    :returns: ``(record, created)``.
    :raises AlreadyExists: creating one that exists and that the caller
        sees.
    :raises ProfileOwned: a public upload (create or replace) of a
        profile a project owns.
    :raises ProfileIdTaken: creating one the caller does not see.
    :raises ProfileNotFound: replacing one the caller does not see.
    :raises ConcurrentUpdate: replacing with a stale generation.
    :raises OverLimit: creating one more private profile of a project
        that holds ``limit`` (None or -1: any number).
    """
    _count_write(ctx)
    row = ctx.session.get(models.Profile, profile_id)
    if generation is None:
        return _create(ctx, row, profile_id, document, visibility,
                       project_id, scope, limit)
    if row is None or not _can_see(row, scope):
        raise exception.ProfileNotFound(id=profile_id)
    if scope is not None and row.project_id != scope:
        # Checked here, on the row this transaction writes, not only by
        # the handler before it (a public profile is everyone's to see).
        raise exception.NotOwner(id=profile_id)
    return _replace(ctx, row, profile_id, document, visibility, generation)


@db_api.context_manager.reader
def get(ctx, profile_id, project_id=None):
    """:raises ProfileNotFound: none, or not visible to ``project_id``."""
    row = ctx.session.execute(_visible(
        sa.select(models.Profile).where(models.Profile.id == profile_id),
        project_id)).scalar_one_or_none()
    if row is None:
        raise exception.ProfileNotFound(id=profile_id)
    return _record(row)


@db_api.context_manager.reader
def get_list(ctx, project_id=None, detail=False, limit=None, marker=None,
             max_bytes=None):
    """Visible profiles by id; ``marker`` is the last id of a page.

    ``max_bytes``: the profiles (one at least) whose stored documents fit,
    measured before any of them is read (``detail`` only: the others
    leave the document out).

    :raises ProfileNotFound: ``marker`` is not a visible profile.
    """
    query = _visible(sa.select(models.Profile), project_id)
    if marker is not None:
        get(ctx, marker, project_id)
        query = query.where(models.Profile.id > marker)
    query = query.order_by(models.Profile.id)
    if limit is not None:
        query = query.limit(limit)
    if detail and max_bytes is not None:
        query = util.within_bytes(ctx, query, models.Profile.id,
                                  sa.func.length(models.Profile.document),
                                  max_bytes)
    return [_record(r, detail) for r in ctx.session.execute(query).scalars()]


@db_api.context_manager.reader
def etag(ctx, project_id=None):
    """A tag that changes whenever the visible set or a member changes."""
    rows = ctx.session.execute(_visible(
        sa.select(models.Profile.id, models.Profile.generation),
        project_id).order_by(models.Profile.id)).all()
    # Keyed: the count of every project's writes is in it, and a plain
    # digest let a project work that count back from the tag.
    digest = hmac.new(db_api.etag_key(), digestmod=hashlib.sha256)
    writes = ctx.session.execute(sa.select(models.Lock.generation).where(
        models.Lock.name == LOCK)).scalar_one_or_none()
    digest.update(('writes:%s;' % writes).encode('utf-8'))
    for pid, gen in rows:
        digest.update(('%s:%d;' % (pid, gen)).encode('utf-8'))
    return digest.hexdigest()[:32]


@db_api.writer
def delete(ctx, profile_id, project_id=None):
    """:raises ProfileInUse: while a term that is not released names it."""
    _count_write(ctx)
    get(ctx, profile_id, project_id)
    terms = ctx.session.execute(
        sa.select(models.SloTerm.uuid)
        .where(models.SloTerm.profile_id == profile_id,
               models.SloTerm.status != RELEASED).limit(5)).scalars().all()
    if terms:
        raise exception.ProfileInUse(id=profile_id, terms=', '.join(terms))
    ctx.session.execute(sa.delete(models.Profile)
                        .where(models.Profile.id == profile_id))
