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
"""``resq-manage``: resq-api's database.

``resq-manage [--config-file F] db sync [--revision R]`` walks the schema up
(to the newest revision by default); ``db version`` prints the revision the
database is at. Run ``db sync`` before starting new API workers: the
migrations only add, so the old workers keep running meanwhile.
``db prune [--keep N] [--days D]`` deletes finished plans and unused
snapshots that are older than D days or past the newest N (from cron).
``cleanup [--dry-run] [--yes]`` removes what resq-nova created in Nova and
Placement (:mod:`resq_nova.deploy.cleanup`): it prints its plan first, and
asks before it deletes flavors.
"""

import sys

from oslo_db import exception as db_exc
import sqlalchemy.exc

from resq_common.clients import compute as compute_mod
from resq_common.clients import placement as placement_mod
from resq_common import cmdline
from resq_common import exception
from resq_nova.api.db import api as db_api
from resq_nova.api.db import migration

DESCRIPTION = '''Manage resq-api's database ([database] connection of the
configuration file): walk its schema up to the newest revision (run "db
sync" before starting new API workers: the migrations only add), print
the revision it is at, or delete finished plans and unused snapshots
past their age (from cron); or remove what resq-nova created in Nova
and Placement ("cleanup", with the [placement] and [nova] credentials of
an admin).'''


def _sync(conf):
    migration.upgrade(conf.command.revision)
    print('database at revision %s' % migration.version())


def _version(conf):
    current = migration.version()
    print(current or 'empty (run "resq-manage db sync")')


def _prune(conf):
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
    return 0


def _add_commands(subparsers):
    db = subparsers.add_parser('db', help='the database of resq-api: '
                               'sync, version, prune')
    db_sub = db.add_subparsers(dest='db_command')
    db_sub.required = True
    sync = db_sub.add_parser('sync', help='walk the schema up')
    sync.add_argument('--revision', default='head',
                      help='revision to walk up to')
    sync.set_defaults(func=_sync)
    version = db_sub.add_parser('version', help='print the revision')
    version.set_defaults(func=_version)
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
    conf = cmdline.parse(argv, 'resq-manage', DESCRIPTION, (_register,),
                         commands=_add_commands, logs=False)
    if not getattr(conf.command, 'needs_database', True):
        return conf.command.func(conf)
    try:
        db_api.configure(conf)
        conf.command.func(conf)
    except (db_exc.DBError, sqlalchemy.exc.SQLAlchemyError, OSError) as exc:
        print('resq-manage: the database %s cannot be used: %s; check '
              '[database] connection and that the server is running'
              % (_masked(conf.database.connection),
                 str(exc).splitlines()[0]), file=sys.stderr)
        return 1
    return 0
