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
"""``openstack resq plan create|list|show|apply|cancel``: optimizer plans.

The same :class:`resq_nova.optimizer.service.Optimizer` as
``resq-optimizer plan`` and ``apply``. Every command keeps its plans in
one store, chosen the same way by each (:func:`plan_store`):

* with ``--state-dir DIR``, the plan files in DIR (as ``resq-optimizer``
  keeps them with ``[resq_optimizer] plan_store = files``);
* else, when the CLI reaches resq-api (the catalog's ``resq`` service,
  ``resq_endpoint_override``, or ``--os-endpoint`` without Keystone),
  resq-api, where the optimizer service records its plans
  (:class:`resq_nova.optimizer.apistore.ServiceStore`);
* else (no cloud named on the command line, or a cloud without resq-api),
  the plan files in the default ``[resq_optimizer] state_dir``.

A plan made from a snapshot file (``plan create --state FILE``) is stored
where a plan of the live cloud is, so ``plan list``, ``show`` and
``apply`` find it.
"""

import os

from osc_lib.cli import format_columns
from osc_lib.command import command
from osc_lib import exceptions

from resq_nova.admission import milp
from resq_nova.optimizer import store as store_mod
from resq_nova.osc import client
from resq_nova.osc import config

MOVE_FIELDS = ('name', 'uuid', 'from_host', 'from_domain', 'to_host',
               'to_domain', 'cores', 'ways')
ACTION_FIELDS = MOVE_FIELDS[:2] + ('outcome', 'detail')
LIST_COLUMNS = ('ID', 'State', 'Applier', 'Created', 'Updated', 'Result')


def _names_a_cloud(app):
    """Whether the command line names a cloud: credentials or an endpoint.

    OpenStackClient's shell parses ``--os-cloud``, ``--os-auth-url``,
    ``--os-endpoint`` and the ``OS_*`` variables into ``app.cloud``; with
    none of them the plan commands work on local files. An application
    without it (one embedding the commands, the tests) is taken to have
    its cloud in its client manager.
    """
    cloud_config = getattr(getattr(app, 'cloud', None), 'config', None)
    if not isinstance(cloud_config, dict):
        return True
    auth = cloud_config.get('auth') or {}
    return bool(auth.get('auth_url') or auth.get('endpoint')
                or cloud_config.get('endpoint')
                or cloud_config.get('resq_endpoint_override'))


def plan_store(app, parsed_args, cloud=False, writes=False):
    """``(resq, store)``: the CLI's client and the one store of plans.

    See the module's documentation for which store.

    :param cloud: the command needs Placement and Nova (a plan of the
        live cloud, applying one): the client is made even when the plans
        are in files.
    :param writes: the command stores plans: a store in files makes its
        directories (one only read creates nothing).
    """
    from resq_nova.optimizer import apistore

    local = bool(getattr(parsed_args, 'state_dir', None))
    resq = None
    if cloud or (not local and _names_a_cloud(app)):
        resq = client.get_client(app)
    if (not local and resq is not None and resq.service is not None
            and resq.service.endpoint()):
        return resq, apistore.ServiceStore(resq.service, None)
    opts = config.service_conf(
        getattr(parsed_args, 'state_dir', None)).resq_optimizer
    return resq, store_mod.Store(opts.state_dir, opts.coordination_url,
                                 create=writes)


def _optimizer(resq, store):
    from resq_nova.optimizer import service

    return service.Optimizer(
        config.service_conf(getattr(store, 'root', None)),
        resq.placement if resq else None,
        resq.compute if resq else None, store=store)


def _not_found(exc, parsed_args):
    """One line: the plan, where it was looked for, what lists them."""
    listing = 'openstack resq plan list'
    if parsed_args.state_dir:
        listing += ' --state-dir %s' % parsed_args.state_dir
    return exceptions.CommandError('no plan %s in %s; "%s" lists the plans '
                                   'there' % (exc.kwargs['plan'],
                                              exc.kwargs['where'], listing))


def plan_view(plan, path):
    """A stored plan as the CLI shows it. Pure."""
    def pick(items, fields):
        return format_columns.ListDictColumn(
            [{k: i[k] for k in fields if i.get(k) is not None}
             for i in items or ()])

    data = {
        'id': plan.get('id'),
        'file': path,
        'created_at': plan.get('created_at'),
        'snapshot_id': plan.get('snapshot_id'),
        'status': plan.get('status'),
        'proposed': plan.get('proposed'),
        'reason': plan.get('reason'),
        'hosts_used_before': plan.get('hosts_used_before'),
        'hosts_used_after': plan.get('hosts_used_after'),
        'lower_bound': plan.get('lower_bound'),
        'gap_pct': plan.get('gap_pct'),
        'moves': pick(plan.get('moves'), MOVE_FIELDS),
        'moves_lower_bound': plan.get('moves_lower_bound'),
        'left_out': pick(plan.get('left_out'), ('uuid', 'reason')),
        'solver': format_columns.DictColumn(dict(plan.get('solver') or {})),
    }
    if 'actions' in plan:
        data['actions'] = pick(plan['actions'], ACTION_FIELDS)
        data['result'] = plan.get('result')
    names = sorted(data)
    return names, [data[n] for n in names]


class CreatePlan(client.AuthenticatedCommand, command.ShowOne):
    """Plan live migrations that free hosts, and store the plan."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--min-hosts-freed', metavar='<n>', type=int, default=None,
            help='propose only when the plan frees this many hosts '
            '(default: [resq_optimizer] min_hosts_freed)')
        parser.add_argument(
            '--state', metavar='<file>',
            help='plan from this snapshot file instead of the live cloud')
        config.add_state_dir(parser)
        return parser

    @client.translate_errors
    def take_action(self, parsed_args):
        if (parsed_args.min_hosts_freed is not None
                and parsed_args.min_hosts_freed < 1):
            raise exceptions.CommandError(
                '--min-hosts-freed must be at least 1')
        # A live plan needs the cloud; one from a snapshot file only the
        # store, the same one list, show and apply read.
        resq, store = plan_store(self.app, parsed_args,
                                 cloud=not parsed_args.state, writes=True)
        try:
            plan, path = _optimizer(resq, store).plan(
                state_file=parsed_args.state,
                min_hosts_freed=parsed_args.min_hosts_freed)
        except (ValueError, milp.SolverUnavailable) as exc:
            raise exceptions.CommandError(str(exc))
        return plan_view(plan, path)


class ShowPlan(client.AuthenticatedCommand, command.ShowOne):
    """Show a stored plan: its moves and, once applied, their outcomes."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('plan', metavar='<plan>',
                            help='plan id (in the store "plan create" '
                            'writes) or plan file')
        config.add_state_dir(parser)
        return parser

    @client.translate_errors
    def take_action(self, parsed_args):
        _, store = plan_store(self.app, parsed_args)
        try:
            plan, path = store.load_plan(parsed_args.plan)
        except store_mod.PlanNotFound as exc:
            if not os.path.isfile(parsed_args.plan):
                raise _not_found(exc, parsed_args)
            plan, path = store_mod.read_plan(parsed_args.plan)
        if not isinstance(plan, dict):
            raise exceptions.CommandError('%s is not a plan document' % path)
        return plan_view(plan, path)


class ApplyPlan(client.AuthenticatedCommand, command.ShowOne):
    """Carry out a stored plan with live migrations, move by move."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('plan', metavar='<plan>',
                            help='plan id (in the store "plan create" '
                            'writes; a file, when that store is files)')
        parser.add_argument(
            '--concurrency', metavar='<n>', type=int, default=None,
            help='live migrations at once (default: [resq_optimizer] '
            'concurrency)')
        parser.add_argument(
            '--timeout', metavar='<seconds>', type=float, default=None,
            help='seconds per live migration (default: [resq_optimizer] '
            'migration_timeout)')
        config.add_state_dir(parser)
        return parser

    def _progress(self, action):
        self.app.stderr.write('%s %s %s:%s -> %s:%s\n' % (
            action.get('outcome'), action.get('name') or action['uuid'],
            action['from_host'], action['from_domain'], action['to_host'],
            action['to_domain']))

    @client.translate_errors
    def take_action(self, parsed_args):
        from resq_nova.optimizer import execute

        opt = _optimizer(*plan_store(self.app, parsed_args, cloud=True,
                                     writes=True))
        try:
            plan, path = opt.apply(parsed_args.plan, progress=self._progress,
                                   concurrency=parsed_args.concurrency,
                                   timeout=parsed_args.timeout)
        except store_mod.PlanNotFound as exc:
            raise _not_found(exc, parsed_args)
        if plan['status'] != execute.APPLIED:
            raise exceptions.CommandError(
                'plan %s %s: %s; "openstack resq plan show %s" shows each '
                'move' % (plan['id'], plan['status'], plan.get('result'),
                          plan['id']))
        return plan_view(plan, path)


class ListPlan(client.AuthenticatedCommand, command.Lister):
    """List the optimizer's plans, newest first."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--state', metavar='<state>',
                            help='only plans in this state (proposed, '
                            'applying, applied, failed, cancelled, '
                            'superseded; in files also refused and '
                            'interrupted)')
        config.add_state_dir(parser)
        return parser

    @client.translate_errors
    def take_action(self, parsed_args):
        _, store = plan_store(self.app, parsed_args)
        if isinstance(store, store_mod.Store):
            rows = _file_rows(store, parsed_args.state)
        else:
            rows = [(p['id'], p['state'], p.get('applier'), p['created_at'],
                     p['updated_at'], p.get('result'))
                    for p in store.client.list_plans(
                        state=parsed_args.state)]
        return LIST_COLUMNS, rows


def _file_rows(store, state=None):
    """``plan list``'s rows of the plans in files, newest first.

    A plan not applied yet is ``proposed``, as resq-api records it; its
    ``Updated`` is when it finished, else when it was made.
    """
    rows = []
    # Ids start with their UTC creation time.
    for plan_id in sorted(store.list_plans(), reverse=True):
        try:
            plan, _ = store.load_plan(plan_id)
        except store_mod.StoreError as exc:
            plan = {'status': 'unreadable', 'result': str(exc)}
        if not isinstance(plan, dict):
            plan = {'status': 'unreadable', 'result': 'not a plan document'}
        status = plan.get('status') or 'proposed'
        if state is not None and status != state:
            continue
        rows.append((plan_id, status, plan.get('applier'),
                     plan.get('created_at'),
                     plan.get('finished_at') or plan.get('created_at'),
                     plan.get('result')))
    return rows


class CancelPlan(client.AuthenticatedCommand, command.ShowOne):
    """Cancel a proposed plan, or stop one being applied after its move."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('plan', metavar='<plan>', help='plan id')
        return parser

    @client.translate_errors
    def take_action(self, parsed_args):
        _, store = plan_store(self.app, parsed_args)
        if isinstance(store, store_mod.Store):
            raise exceptions.CommandError(
                'plan cancel needs resq-api, and the CLI has none: the '
                'plans are in %s, where a plan is cancelled by not applying '
                'it' % store.plans)
        rec = store.client.cancel_plan(parsed_args.plan)
        data = {'id': rec['id'], 'state': rec['state'],
                'applier': rec.get('applier'),
                'actions': format_columns.ListDictColumn(
                    [{k: a.get(k) for k in ('index', 'uuid', 'state')}
                     for a in rec.get('actions') or ()])}
        names = sorted(data)
        return names, [data[n] for n in names]
