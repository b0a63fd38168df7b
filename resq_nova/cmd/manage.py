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
"""``resq-manage``: resq-api's database, and clean-up of Nova and Placement.

Without ``--config-file`` it reads resq-api's configuration files
(:func:`resq_nova.conf.api.config_files`: ``$RESQ_API_CONFIG``, else
``resq.conf`` and ``resq-api.conf``), as ``nova-manage`` reads
``nova.conf``: it works on resq-api's database. ``[database] connection``
has no default; without one the ``db`` commands stop with one line naming
the option and the files read, and create nothing.

``resq-manage db sync [--revision R]`` walks the schema up (to the
newest revision by default); ``db version`` prints the revision the
database is at, saying when it is behind the package or unknown to it;
``db history`` lists the package's revisions, marking the database's;
``db check`` says whether the database is behind, at or ahead of the
package, with ``nova-status upgrade check``'s exit statuses
(:data:`SUCCESS`, :data:`WARNING`, :data:`FAILURE`). Run ``db sync``
before starting new API workers: the migrations only add, so the old
workers keep running meanwhile. ``db prune [--keep N] [--days D]``
deletes finished plans and unused snapshots that are older than D days
or past the newest N (from cron). ``cleanup [--dry-run] [--yes]``
removes what resq-nova created in Nova and Placement
(:mod:`resq_nova.deploy.cleanup`): it prints its plan first, and asks
before it deletes flavors; it exits :data:`DECLINED` when
flavors were kept because nobody said yes.
"""

import os
import sys

from alembic import util as alembic_util
from oslo_db import exception as db_exc
import sqlalchemy.exc

from resq_common.clients import compute as compute_mod
from resq_common.clients import placement as placement_mod
from resq_common import cmdline
from resq_common.conf import clients as clients_conf
from resq_common import exception
from resq_nova.api.db import api as db_api
from resq_nova.api.db import migration
from resq_nova.conf import api as api_conf

DESCRIPTION = '''Manage resq-api's database ([database] connection of
resq-api's configuration files, which it reads without --config-file):
walk its schema up to the newest revision (run "db sync" before starting
new API workers: the migrations only add), print the revision it is at,
list the package's revisions marking the database's ("db history"),
check before an upgrade whether it is behind, at or ahead of this package
("db check", exit status 0, 1 or 2 as nova-status upgrade check), or
delete finished plans and unused snapshots past their age (from cron); or
remove what resq-nova created in Nova and Placement ("cleanup", with the
[placement] and [nova] credentials of an admin).'''

# db check's exit statuses: nova-status upgrade check's.
SUCCESS = 0
WARNING = 1
FAILURE = 2
# cleanup: done, except flavors nobody agreed to delete (1: a removal
# failed; 2: a usage error).
DECLINED = 3


class ManageError(exception.ResQException):
    """A database resq-manage will not touch; ``code`` is the exit status."""

    msg_fmt = '%(reason)s'


def _url(conf):
    return _masked(conf.database.connection)


def _missing_sqlite(conf):
    """The SQLite file ``[database] connection`` names, when it is absent.

    Connecting would create it: the commands that only read refuse
    instead.
    """
    try:
        url = sqlalchemy.engine.make_url(conf.database.connection)
    except Exception:
        return None
    path = url.database
    if (url.get_backend_name() != 'sqlite' or not path
            or path == ':memory:' or path.startswith('file:')):
        return None
    return None if os.path.exists(path) else path


def _hint(conf):
    """What to check when the database cannot be used."""
    try:
        url = sqlalchemy.engine.make_url(conf.database.connection)
    except Exception:
        url = None
    if url is not None and url.get_backend_name() == 'sqlite' and \
            url.database and not url.database.startswith('file:'):
        folder = os.path.dirname(os.path.abspath(url.database))
        return ('check [database] connection, and that directory %s exists '
                'and this user (uid %d) may write in it'
                % (folder, os.getuid()))
    return 'check [database] connection and that the server is running'


def _refuse_missing_sqlite(conf):
    path = _missing_sqlite(conf)
    if path:
        raise ManageError(reason='the database %s has no file %s: check '
                          '[database] connection (read from %s); "resq-manage '
                          'db sync" creates it for a new deployment' % (
                              _url(conf), path, _files(conf)))


def _files(conf):
    return ', '.join(conf.config_file or ()) or 'no file'


def _sync(conf):
    migration.upgrade(conf.command.revision)
    print('database %s at revision %s' % (_url(conf), migration.version()))


def _version(conf):
    _refuse_missing_sqlite(conf)
    current = migration.version()
    state, pending = migration.compare(current)
    if state == migration.EMPTY:
        print('empty (run "resq-manage db sync")')
    elif state == migration.UNKNOWN:
        print('%s (not a revision this package knows: its newest is %s; the '
              'database is newer than the package, or not resq-api\'s)'
              % (current, migration.head()))
    elif state == migration.BEHIND:
        print('%s (behind this package\'s newest, %s: run "resq-manage db '
              'sync")' % (current, pending[-1]))
    else:
        print(current)


def history_lines(current, revisions):
    """``db history``'s lines: each revision, marking the database's. Pure.

    :param current: the database's revision (None: no schema).
    :param revisions: ``[(revision, summary)]``, oldest first.
    """
    lines = []
    known = [r for r, _ in revisions]
    for n, (rev, summary) in enumerate(revisions):
        marks = []
        if rev == current:
            marks.append('current')
        if current in known and n > known.index(current):
            marks.append('pending')
        if n == len(revisions) - 1:
            marks.append('head')
        lines.append('%s %-18s %s' % (rev, '(%s)' % ', '.join(marks)
                                      if marks else '', summary))
    if current is None:
        lines.append('the database has no schema: "resq-manage db sync" '
                     'walks it to the head')
    elif current not in known:
        lines.append('the database is at %s, which this package does not '
                     'know: it is newer than the package (after a '
                     'rollback), or not resq-api\'s' % current)
    return lines


def _history(conf):
    _refuse_missing_sqlite(conf)
    print('revisions of %s, oldest first:' % _url(conf))
    for line in history_lines(migration.version(), migration.history()):
        print(line.rstrip())


def check(conf):
    """Where the database stands against the package, for an upgrade.

    :returns: ``(status, what, todo)``: :data:`SUCCESS` (at the package's
        head), :data:`WARNING` (behind it: ``db sync`` pending; or newer
        than it, as after a rollback) or :data:`FAILURE` (no schema, or
        no database to reach); two lines for the operator.
    """
    url = _url(conf)
    head = migration.head()
    path = _missing_sqlite(conf)
    if path:
        return (FAILURE, 'database %s: no file %s' % (url, path),
                'check [database] connection (read from %s); for a new '
                'deployment, "resq-manage db sync" creates the schema'
                % _files(conf))
    try:
        current = migration.version()
    except (db_exc.DBError, sqlalchemy.exc.SQLAlchemyError) as exc:
        return (FAILURE, 'database %s cannot be reached: %s' % (
            url, str(exc).splitlines()[0]),
            _hint(conf))
    state, pending = migration.compare(current)
    if state == migration.AT_HEAD:
        return (SUCCESS, 'database %s at revision %s, this package\'s '
                'newest' % (url, current), 'nothing to do')
    if state == migration.BEHIND:
        return (WARNING, 'database %s at revision %s, behind this '
                'package\'s newest, %s (%d migration(s) pending: %s)' % (
                    url, current, head, len(pending), ', '.join(pending)),
                'run "resq-manage db sync" before this release\'s resq-api '
                'workers start (the running workers keep serving on the '
                'newer schema)')
    if state == migration.UNKNOWN:
        return (WARNING, 'database %s at revision %s, which this package '
                'does not know (its newest is %s): ahead of the package'
                % (url, current, head),
                'after a rollback this is expected (this release runs on '
                'the newer schema; db sync has nothing to do); otherwise '
                'install the release that introduced %s (the upgrade '
                'guide\'s table lists them) or check that [database] '
                'connection is resq-api\'s' % current)
    return (FAILURE, 'database %s has no resq-api schema (empty)' % url,
            'check that [database] connection (read from %s) names '
            'resq-api\'s database; for a new deployment, run "resq-manage '
            'db sync"' % _files(conf))


_RESULT = {SUCCESS: 'Success', WARNING: 'Warning', FAILURE: 'Failure'}


def _check(conf):
    status, what, todo = check(conf)
    print(what)
    print('%s: %s' % (_RESULT[status], todo))
    return status


def _prune(conf):
    _refuse_missing_sqlite(conf)
    from resq_nova.api import context as context_mod
    from resq_nova.api.objects import plan as plan_obj

    # One transaction: plan_obj.prune is a writer of its own.
    ctx = context_mod.RequestContext(is_admin=True)
    plans, snaps = plan_obj.prune(ctx, conf.command.keep,
                                  conf.command.days * 86400)
    print('pruned %d plan(s) and %d snapshot(s)' % (plans, snaps))


def _confirm(flavors):
    """Ask on the terminal before flavors are deleted; True for yes."""
    print('Delete %d flavor(s) (%s)? [y/N] ' % (
        len(flavors), ', '.join(f.name for f in flavors)), end='',
        flush=True)
    answer = sys.stdin.readline()
    if not answer:
        print('\nno answer (standard input is closed): the flavors are '
              'kept; give --yes to delete them without asking')
        return False
    return answer.strip().lower() in ('y', 'yes')


def _cleanup(conf):
    from resq_nova.deploy import cleanup

    try:
        placement = cleanup.Placement.from_conf(conf)
        compute = cleanup.Compute.from_conf(conf)
        plan = cleanup.make_plan(placement, compute)
    except clients_conf.MissingCredentials as exc:
        # A configuration it cannot run with, as every command: 2.
        print('resq-manage: cannot make the clean-up plan: %s' % exc,
              file=sys.stderr)
        return cmdline.USAGE_ERROR
    except exception.ResQException as exc:
        print('resq-manage: cannot make the clean-up plan: %s' % exc,
              file=sys.stderr)
        return 1
    print('Plan (nothing is changed yet):')
    for line in plan.lines():
        print('  ' + line)
    if conf.command.dry_run:
        print('--dry-run: nothing removed')
        return 0
    if not plan.to_remove():
        return 0
    flavors = plan.to_remove('flavor')
    confirmed = bool(flavors) and (conf.command.yes or _confirm(flavors))
    done = cleanup.execute(plan, placement, compute, confirmed)
    for item in done:
        print('%-8s %s %s%s' % (item.outcome, item.kind, item.name,
                                ': %s' % item.error if item.error else ''))
    if not cleanup.succeeded(done):
        print('resq-manage: %d removal(s) failed or were not tried; fix '
              'the cause and run "resq-manage cleanup" again' % len(
                  [i for i in done if i.outcome in (cleanup.FAILED,
                                                    cleanup.SKIPPED)]),
              file=sys.stderr)
        return 1
    kept = cleanup.declined(done)
    if kept:
        print('resq-manage: kept %s: nobody agreed to delete the flavors; '
              'run "resq-manage cleanup --yes" (or answer y) to remove them'
              % ', '.join('%s %s' % (i.kind, i.name) for i in kept),
              file=sys.stderr)
        return DECLINED
    return 0


def _add_commands(subparsers):
    db = subparsers.add_parser('db', help='the database of resq-api: '
                               'sync, version, history, check, prune')
    db_sub = db.add_subparsers(dest='db_command')
    db_sub.required = True
    sync = db_sub.add_parser('sync', help='walk the schema up')
    sync.add_argument('--revision', default='head',
                      help='revision to walk up to: an id of this '
                      'package\'s (db check names its newest) or "head"')
    sync.set_defaults(func=_sync)
    version = db_sub.add_parser(
        'version', help='print the revision, saying when it is behind this '
        'package or unknown to it')
    version.set_defaults(func=_version)
    history = db_sub.add_parser(
        'history', help='list this package\'s revisions, oldest first, '
        'marking the database\'s (current), those db sync would apply '
        '(pending) and the newest (head)')
    history.set_defaults(func=_history)
    check = db_sub.add_parser(
        'check', help='before an upgrade: is the database behind, at or '
        'ahead of this package? Exit status 0 at its newest revision, 1 '
        'behind (run db sync) or ahead (a rollback), 2 no schema or no '
        'database (as nova-status upgrade check)')
    check.set_defaults(func=_check)
    prune = db_sub.add_parser(
        'prune', help='delete finished plans and unused snapshots that are '
        'older than --days or past the newest --keep (run it from cron)')
    prune.add_argument('--keep', type=cmdline.integer(1), default=200,
                       metavar='N',
                       help='plans and snapshots always kept, newest first')
    prune.add_argument('--days', type=cmdline.integer(1), default=14,
                       metavar='D',
                       help='finished plans older than this many days go')
    prune.set_defaults(func=_prune)
    cleanup = subparsers.add_parser(
        'cleanup', help='remove what resq-nova created in Nova and '
        'Placement: its resq.<term>.<ways>w flavors (asking first), the '
        'agents\' cache-domain providers, its traits and resource classes. '
        'Prints the plan first; what is in use is kept, saying why')
    cleanup.add_argument('--dry-run', action='store_true',
                         help='print the plan and change nothing')
    cleanup.add_argument('--yes', action='store_true',
                         help='delete the flavors without asking (scripts)')
    cleanup.set_defaults(func=_cleanup, needs_database=False)


def _masked(url):
    try:
        return sqlalchemy.engine.make_url(url).render_as_string(
            hide_password=True)
    except Exception:
        return '(unparsable URL)'


def _register(conf):
    db_api.register_opts(conf)
    placement_mod.register_opts(conf)
    compute_mod.register_opts(conf)


def main(argv=None):
    # resq-api's files: resq-manage works on its database.
    conf = cmdline.parse(argv, 'resq-manage', DESCRIPTION, (_register,),
                         commands=_add_commands, logs=False,
                         default_config_files=api_conf.config_files(),
                         config_prog=api_conf.PROG)
    if not getattr(conf.command, 'needs_database', True):
        return conf.command.func(conf)
    if not conf.database.connection:
        print('resq-manage: %s' % db_api.no_connection(conf),
              file=sys.stderr)
        return cmdline.USAGE_ERROR
    try:
        db_api.configure(conf)
    except (db_exc.DBError, sqlalchemy.exc.SQLAlchemyError, ValueError) as exc:
        # A URL SQLAlchemy cannot parse, or a driver it cannot load: the
        # configuration is wrong, whatever the command (db check's 2).
        print('resq-manage: [database] connection %s cannot be used: %s; '
              'correct it in %s' % (
                  _url(conf), str(exc).splitlines()[0], _files(conf)),
              file=sys.stderr)
        return cmdline.USAGE_ERROR
    try:
        return conf.command.func(conf) or 0
    except migration.UnknownTarget as exc:
        print('resq-manage: %s' % exc, file=sys.stderr)
        return cmdline.USAGE_ERROR
    except (ManageError, migration.UnknownDatabaseRevision,
            migration.TargetBehind) as exc:
        print('resq-manage: %s' % exc, file=sys.stderr)
        return 1
    except alembic_util.CommandError as exc:
        # What the checks before alembic did not foresee: still one line.
        print('resq-manage: the schema of %s cannot be walked: %s' % (
            _url(conf), ' '.join(str(exc).split())), file=sys.stderr)
        return 1
    except (db_exc.DBError, sqlalchemy.exc.SQLAlchemyError, OSError) as exc:
        print('resq-manage: the database %s cannot be used: %s; %s'
              % (_url(conf), str(exc).splitlines()[0], _hint(conf)),
              file=sys.stderr)
        return 1
