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
"""``openstack resq plan create|show|apply``: the optimizer's plans.

The same :class:`resq_nova.optimizer.service.Optimizer` as
``resq-optimizer plan`` and ``apply``: plans and snapshots are stored in
the optimizer's state directory, under its lock, and ``resq-optimizer``
and these commands see each other's plans.
"""

from osc_lib.cli import format_columns
from osc_lib.command import command
from osc_lib import exceptions

from resq_nova.admission import milp
from resq_nova.osc import client
from resq_nova.osc import config

MOVE_FIELDS = ('name', 'uuid', 'from_host', 'from_domain', 'to_host',
               'to_domain', 'cores', 'ways')
ACTION_FIELDS = MOVE_FIELDS[:2] + ('outcome', 'detail')


def _optimizer(parsed_args, resq=None):
    """The optimizer, its plans in resq-api unless ``--state-dir``."""
    from resq_nova.optimizer import apistore
    from resq_nova.optimizer import service

    conf = config.service_conf(parsed_args.state_dir)
    store = None
    if resq is not None and resq.service is not None and \
            not parsed_args.state_dir:
        store = apistore.ServiceStore(resq.service, None)
    return service.Optimizer(
        conf, resq.placement if resq else None,
        resq.compute if resq else None, store=store)


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
        resq = None if parsed_args.state else client.get_client(self.app)
        try:
            plan, path = _optimizer(parsed_args, resq).plan(
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
                            help='plan id (in resq-api, or in --state-dir) '
                            'or file')
        config.add_state_dir(parser)
        return parser

    @client.translate_errors
    def take_action(self, parsed_args):
        resq = None if parsed_args.state_dir else client.get_client(self.app)
        plan, path = _optimizer(parsed_args, resq).store.load_plan(
            parsed_args.plan)
        if not isinstance(plan, dict):
            raise exceptions.CommandError('%s is not a plan document' % path)
        return plan_view(plan, path)


class ApplyPlan(client.AuthenticatedCommand, command.ShowOne):
    """Carry out a stored plan with live migrations, move by move."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('plan', metavar='<plan>',
                            help='plan id (in the state directory) or file')
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

        opt = _optimizer(parsed_args, client.get_client(self.app))
        plan, path = opt.apply(parsed_args.plan, progress=self._progress,
                               concurrency=parsed_args.concurrency,
                               timeout=parsed_args.timeout)
        if plan['status'] != execute.APPLIED:
            raise exceptions.CommandError(
                'plan %s %s: %s; "openstack resq plan show %s" shows each '
                'move' % (plan['id'], plan['status'], plan.get('result'),
                          plan['id']))
        return plan_view(plan, path)


class ListPlan(client.AuthenticatedCommand, command.Lister):
    """List the optimizer's plans in resq-api, newest first."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--state', metavar='<state>',
                            help='only plans in this state (proposed, '
                            'applying, applied, failed, cancelled, '
                            'superseded)')
        return parser

    @client.translate_errors
    def take_action(self, parsed_args):
        service = _service(self.app)
        rows = [(p['id'], p['state'], p.get('applier'), p['created_at'],
                 p['updated_at'], p.get('result'))
                for p in service.list_plans(state=parsed_args.state)]
        return ('ID', 'State', 'Applier', 'Created', 'Updated',
                'Result'), rows


class CancelPlan(client.AuthenticatedCommand, command.ShowOne):
    """Cancel a proposed plan, or stop one being applied after its move."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('plan', metavar='<plan>', help='plan id')
        return parser

    @client.translate_errors
    def take_action(self, parsed_args):
        rec = _service(self.app).cancel_plan(parsed_args.plan)
        data = {'id': rec['id'], 'state': rec['state'],
                'applier': rec.get('applier'),
                'actions': format_columns.ListDictColumn(
                    [{k: a.get(k) for k in ('index', 'uuid', 'state')}
                     for a in rec.get('actions') or ()])}
        names = sorted(data)
        return names, [data[n] for n in names]


def _service(app):
    service = client.get_client(app).service
    if service is None:
        raise exceptions.CommandError('this command needs resq-api; the '
                                      'client has none')
    return service
