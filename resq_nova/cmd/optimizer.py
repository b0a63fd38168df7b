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
"""``resq-optimizer``: plan repacking live migrations, apply plans, or run.

::

    resq-optimizer [--config-file F] plan [--state FILE [--store]]
                                          [--json OUT] [--min-hosts-freed N]
    resq-optimizer [--config-file F] apply PLAN [--concurrency N]
                                                [--timeout S]
    resq-optimizer [--config-file F] run

``plan`` reads the cloud from Placement and Nova (``[placement]``,
``[nova]``), prints the moves and the summary, and stores the plan (and
its snapshot) under ``[resq_optimizer] state_dir``; from a snapshot file
(``--state``) it only reads and stores nothing, unless ``--store`` is
given. ``apply`` carries out a stored plan (its id, or a file) move by
move and prints each outcome. ``run`` is the service. Exit status: 0
done, 1 an error or a refused plan, 2 a plan that failed part-way or a
usage error.
"""

import contextlib
import json
import sys

from oslo_log import log as logging

from resq_common.clients import compute as compute_mod
from resq_common.clients import placement as placement_client
from resq_common.clients import resq as resq_client
from resq_common import cmdline
from resq_common import exception
from resq_common import fileutils
from resq_nova.admission import milp
from resq_nova import conf as nova_conf

LOG = logging.getLogger(__name__)

DESCRIPTION = '''Plan live migrations that repack ResQ instances onto fewer
hosts (a MILP over the cache domains' ways and cores), carry a stored plan
out move by move, move the servers agents marked misplaced, enable again the
hosts a plan freed, or run as the service (a round every [resq_optimizer]
interval). Placement and Nova are reached with the [placement] and [nova]
options of the configuration file. Exit status: 0 done, 1 an error or a
refused plan, 2 a plan that failed part-way or a usage error.'''


def _clients(conf):
    # [placement] and [nova] timeout (30 s by default) bound every request.
    return (placement_client.PlacementClient.from_conf(conf),
            compute_mod.ComputeClient.from_conf(conf))


def _optimizer(conf, live=True, notify=True):
    from resq_nova.optimizer import notifier
    from resq_nova.optimizer import service

    placement = compute = None
    if live:
        placement, compute = _clients(conf)
    note = None
    if notify:
        note = notifier.PlanNotifier(conf)
    from resq_nova.optimizer import apistore

    store = apistore.from_conf(conf)
    return service.Optimizer(
        conf, placement, compute, store=store, notifier=note,
        isolation=getattr(store, 'client', None)
        or apistore.client_from_conf(conf))


def print_plan(plan, out=None):
    out = out or sys.stdout
    moves = plan['moves']
    if moves:
        rows = [('#', 'instance', 'from', 'to', 'cores', 'ways')]
        for n, mv in enumerate(moves, 1):
            rows.append((str(n), mv.get('name') or mv['uuid'],
                         '%s:%s' % (mv['from_host'], mv['from_domain']),
                         '%s:%s' % (mv['to_host'], mv['to_domain']),
                         str(mv.get('cores', '')), str(mv.get('ways', ''))))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        for r in rows:
            print('  '.join(c.ljust(w) for c, w in zip(r, widths)).rstrip(),
                  file=out)
        print(file=out)
    solver = plan.get('solver', {})
    summary = [
        ('plan', plan.get('id')),
        ('hosts in use', '%s -> %s' % (plan['hosts_used_before'],
                                       plan['hosts_used_after'])),
        ('lower bound', plan['lower_bound']),
        ('gap', '%.2f%%' % plan['gap_pct']),
        ('moves', '%d (at least %s)' % (len(moves),
                                        plan.get('moves_lower_bound'))),
        ('left out', len(plan.get('left_out') or ())),
        ('solve time', '%.1fs (%s)' % (solver.get('seconds', 0),
                                       solver.get('status'))),
        ('proposed', 'yes' if plan['proposed'] else 'no'),
        ('reason', plan['reason']),
    ]
    for key, value in summary:
        print('%-13s %s' % (key + ':', value), file=out)
    for item in plan.get('left_out') or ():
        print('left out %s: %s' % (item['uuid'], item['reason']), file=out)


class _NoStore:
    """Where a plan from a snapshot file goes without --store: nowhere.

    Planning from a file only reads; it creates no directory or file.
    """

    client = None

    def save_snapshot(self, snapshot_id, doc):
        return None

    def save_plan(self, plan):
        return None

    def lock(self):
        return contextlib.nullcontext()


def _replay(conf):
    """The optimizer of ``plan --state``: no cloud, no notifications."""
    if conf.command.store:
        return _optimizer(conf, live=False, notify=False)
    from resq_nova.optimizer import service

    return service.Optimizer(conf, store=_NoStore())


def _plan(conf):
    args = conf.command
    if args.store and not args.state:
        cmdline.fail('resq-optimizer plan', '--store is for --state: a '
                     'plan of the live cloud is always stored')
    opt = _replay(conf) if args.state else _optimizer(conf)
    plan, path = opt.plan(state_file=args.state,
                          min_hosts_freed=args.min_hosts_freed)
    print_plan(plan)
    print('stored:       %s' % (path or 'no (planned from a snapshot file; '
                                        '--store stores it)'))
    if args.json:
        fileutils.atomic_write(args.json, json.dumps(plan, indent=1,
                                                     sort_keys=True) + '\n')
        print('written:      %s' % args.json)
    return 0


def _progress(action):
    outcome = action.get('outcome')
    line = '%-8s %s %s:%s -> %s:%s' % (
        outcome, action.get('name') or action['uuid'], action['from_host'],
        action['from_domain'], action['to_host'], action['to_domain'])
    if action.get('detail'):
        line += ': %s' % action['detail']
    print(line, flush=True)


def _apply(conf):
    from resq_nova.optimizer import execute

    args = conf.command
    opt = _optimizer(conf)
    plan, path = opt.apply(args.plan, progress=_progress,
                           concurrency=args.concurrency,
                           timeout=args.timeout)
    print('%s: %s (%s)' % (plan['id'], plan['status'], plan['result']))
    print('stored: %s' % path)
    return 0 if plan['status'] == execute.APPLIED else 2


def _repair(conf):
    from resq_nova.optimizer import repair

    results = _optimizer(conf).repair()
    if not results:
        print('no server is marked %s=misplaced' % repair.ISOLATION_KEY)
    for r in results:
        print('%s (%s) on %s: %s%s' % (
            r['uuid'], r.get('name'), r['from_host'], r['outcome'],
            ' to %s' % r['to_host'] if r['outcome'] == repair.DONE
            else ': %s' % r['detail']), flush=True)
    return 0 if all(r['outcome'] == repair.DONE for r in results) else 2


def _audit(conf):
    from resq_nova.optimizer import orphans

    dry = conf.command.dry_run
    results = _optimizer(conf).audit(
        release=False if dry else None,
        why_not='--dry-run' if dry else None)
    if not results:
        print('nothing to release: every consumer holding LLC ways is a '
              'server Nova lists')
    for r in results:
        held = '; '.join('%s on %s' % (', '.join(
            '%s=%s' % kv for kv in sorted(res.items())), rp)
            for rp, res in sorted(r['held'].items()))
        outcome = r['outcome']
        if dry and outcome == orphans.KEPT and 'migration' not in r:
            outcome = 'would be released'
        print('%s: %s (%s): %s' % (r['consumer'], outcome, r['detail'],
                                   held), flush=True)
    return 2 if any(r['outcome'] == orphans.FAILED for r in results) else 0


def _enable_freed(conf):
    results = _optimizer(conf).enable_freed(
        count=conf.command.count, why='asked on the command line')
    if not results:
        print('no host is disabled as freed by a plan')
    for r in results:
        print('%s: %s%s' % (r['host'], r['outcome'],
                            ': %s' % r['detail'] if r['detail'] else ''))
    return 0 if all(r['outcome'] == 'enabled' for r in results) else 2


def _run(conf):
    if conf.resq_optimizer.metrics_listen:
        # Served by the worker oslo.service forks, which plans (see
        # make_service); a wrong or taken address stops us here, at once.
        from resq_common import metrics
        metrics.check_listen(conf.resq_optimizer.metrics_listen)
    from resq_nova.optimizer import service

    opt = _optimizer(conf)
    svc = service.make_service(conf, opt)
    from oslo_service import service as os_service

    launcher = os_service.launch(conf, svc, restart_method='mutate')
    launcher.wait()
    return 0


def _add_parsers(subparsers):
    positive = cmdline.integer(1)
    p = subparsers.add_parser('plan', help='make one plan, print it and '
                              'store it (from the live cloud), or only '
                              'print it (from a snapshot file)')
    p.add_argument('--state', metavar='FILE', help='plan from this snapshot '
                   'file instead of the live cloud (reads only)')
    p.add_argument('--store', action='store_true',
                   help='with --state: store the plan and its snapshot in '
                   'the plan store, as a plan of the live cloud is')
    p.add_argument('--json', metavar='OUT',
                   help='also write the plan to this file')
    p.add_argument('--min-hosts-freed', type=positive, default=None,
                   metavar='N',
                   help='propose only when the plan frees this many hosts '
                   '(default: [resq_optimizer] min_hosts_freed)')
    p.set_defaults(func=_plan)
    p = subparsers.add_parser('apply', help='carry out a stored plan')
    p.add_argument('plan', help='plan id (in [resq_optimizer] state_dir) or '
                   'plan file')
    p.add_argument('--concurrency', type=positive, default=None,
                   metavar='N',
                   help='live migrations at once (default: [resq_optimizer] '
                   'concurrency)')
    p.add_argument('--timeout', type=cmdline.number(above=0), default=None,
                   metavar='S',
                   help='seconds per live migration (default: '
                   '[resq_optimizer] migration_timeout)')
    p.set_defaults(func=_apply)
    p = subparsers.add_parser('repair', help='live-migrate the servers '
                              'agents marked resq_isolation=misplaced '
                              '(Nova\'s scheduler picks the hosts)')
    p.set_defaults(func=_repair)
    p = subparsers.add_parser(
        'enable-freed', help='enable again the compute services a plan '
        'disabled as freed ([resq_optimizer] disable_freed_hosts), e.g. '
        'when admission finds no room; other disabled hosts stay')
    p.add_argument('--count', type=positive, default=None, metavar='N',
                   help='enable at most this many (default: all)')
    p.set_defaults(func=_enable_freed)
    p = subparsers.add_parser(
        'audit', help='release the Placement allocations of migrations '
        'whose server was deleted and that still hold LLC ways (what Nova '
        'leaves after a move it gave up on); migrations Nova lists are '
        'only shown')
    p.add_argument('--dry-run', action='store_true',
                   help='show what would be released, release nothing')
    p.set_defaults(func=_audit)
    p = subparsers.add_parser('run', help='run the optimizer service')
    p.set_defaults(func=_run)


def register_opts(conf):
    nova_conf.register_opts(conf)
    placement_client.register_opts(conf)
    compute_mod.register_opts(conf)
    resq_client.register_opts(conf)


def parse_config(argv):
    return cmdline.parse(argv, 'resq-optimizer', DESCRIPTION,
                         (register_opts,), commands=_add_parsers,
                         logs_to_stderr=True)


def _threading_backend():
    """oslo.service's threading backend, for every subcommand.

    Chosen before anything imports oslo.messaging or oslo.service's
    looping calls, which would load (and log loading) the eventlet one:
    ``run`` serves on threads, and the one-shot commands (``plan``,
    ``apply``, ...) need no event loop at all.
    """
    from oslo_service import backend

    try:
        backend.init_backend(backend.BackendType.THREADING)
    except backend.exceptions.BackendAlreadySelected:
        # A process that imported us after choosing (tests): theirs.
        pass


def main(argv=None):
    conf = parse_config(argv)
    _threading_backend()
    try:
        return conf.command.func(conf)
    except exception.ResQException as exc:
        print('ERROR: %s' % exc, file=sys.stderr)
        return 1
    except (ValueError, milp.SolverUnavailable) as exc:
        print('ERROR: %s' % exc, file=sys.stderr)
        return 1


if __name__ == '__main__':
    sys.exit(main())
