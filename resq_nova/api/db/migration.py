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
"""Schema migrations of resq-api (alembic), run by ``resq-manage db sync``.

Migrations only add (tables, columns, indexes) or widen a column's type,
so they can run before the new code is deployed: upgrade the database
first, then the API workers.

:func:`compare` places the database's revision against the package's
(``empty``, ``behind``, ``at`` its head, or ``unknown``: newer than the
package, or not resq-api's); :func:`upgrade` refuses, naming both
revisions, a database it does not know and a target that is not one of
its revisions, before alembic is called (whose own errors are tracebacks).
The release that introduced each revision is tabled in the upgrade guide
(``doc/source/admin/upgrade.rst``).
"""

import os

from alembic import command
from alembic import config as alembic_config
from alembic import migration as alembic_migration
from alembic import script as alembic_script
from alembic.script import revision as alembic_revision
from alembic import util as alembic_util

from resq_common import exception
from resq_nova.api.db import api as db_api

EMPTY = 'empty'
BEHIND = 'behind'
AT_HEAD = 'at'
UNKNOWN = 'unknown'


class UnknownTarget(exception.ResQException):
    """``db sync --revision`` names no revision of this package."""

    msg_fmt = ('--revision %(revision)s is not a revision of this package '
               '(its revisions, oldest first: %(known)s; the newest, '
               '%(head)s, is "head"); give one of them, or no --revision '
               'for the newest')


class UnknownDatabaseRevision(exception.ResQException):
    """The database is at a revision this package does not know."""

    msg_fmt = ('the database is at revision %(current)s, which this package '
               'does not know (its newest is %(head)s): the database is '
               'newer than the package (after a rollback: this release runs '
               'on the newer schema, there is nothing to sync; the upgrade '
               'guide\'s table gives the release of each revision) or it is '
               'not resq-api\'s database (check [database] connection)')


class TargetBehind(exception.ResQException):
    """``db sync --revision`` names a revision the database is past."""

    msg_fmt = ('the database is at revision %(current)s, past --revision '
               '%(revision)s: db sync only walks the schema up (there are '
               'no downgrades; older releases run on the newer schema)')


def _config(connection=None):
    cfg = alembic_config.Config()
    cfg.set_main_option('script_location', os.path.join(
        os.path.dirname(os.path.abspath(__file__)), 'alembic'))
    if connection is not None:
        cfg.attributes['connection'] = connection
    return cfg


def upgrade(revision='head', engine=None):
    """Walk the schema up to ``revision``.

    :raises UnknownTarget: ``revision`` is not one of the package's.
    :raises UnknownDatabaseRevision: the database is at a revision the
        package does not know (newer than the package, or not resq-api's).
    :raises TargetBehind: the database is past ``revision``.
    """
    target = resolve(revision)
    engine = engine or db_api.get_engine()
    with engine.begin() as connection:
        current = _current(connection)
        known = revisions()
        if current is not None and current not in known:
            raise UnknownDatabaseRevision(current=current, head=known[-1])
        if current is not None and known.index(current) > known.index(
                target):
            raise TargetBehind(current=current, revision=revision)
        command.upgrade(_config(connection), target)


def resolve(revision):
    """The full id of ``revision`` (``head``, an id or its unique prefix).

    :raises UnknownTarget: it names no revision of the package.
    """
    known = revisions()
    found = None
    try:
        if revision and revision.strip():
            found = alembic_script.ScriptDirectory.from_config(
                _config()).get_revision(revision)
    except (alembic_util.CommandError, alembic_revision.RevisionError):
        pass
    if found is None or found.revision not in known:
        raise UnknownTarget(revision=revision, known=', '.join(known),
                            head=known[-1])
    return found.revision


def _current(connection):
    return alembic_migration.MigrationContext.configure(
        connection).get_current_revision()


def compare(current):
    """Where revision ``current`` (None: no schema) stands to the package.

    :returns: ``(state, pending)``: ``state`` one of :data:`EMPTY`,
        :data:`BEHIND`, :data:`AT_HEAD`, :data:`UNKNOWN`; ``pending`` the
        revisions ``db sync`` would apply, oldest first.
    """
    known = revisions()
    if current is None:
        return EMPTY, known
    if current not in known:
        return UNKNOWN, []
    pending = known[known.index(current) + 1:]
    return (BEHIND if pending else AT_HEAD), pending


def version(engine=None):
    """The revision the database is at, or None before the first sync."""
    engine = engine or db_api.get_engine()
    with engine.connect() as connection:
        return _current(connection)


def revisions():
    """Every revision id, oldest first."""
    scripts = alembic_script.ScriptDirectory.from_config(_config())
    return [r.revision for r in reversed(list(scripts.walk_revisions()))]


def history():
    """``[(revision, summary)]`` of every revision, oldest first.

    The summary is the first paragraph of the migration's docstring.
    """
    scripts = alembic_script.ScriptDirectory.from_config(_config())
    return [(r.revision, ' '.join((r.doc or '').split()))
            for r in reversed(list(scripts.walk_revisions()))]


def head():
    return alembic_script.ScriptDirectory.from_config(
        _config()).get_current_head()
