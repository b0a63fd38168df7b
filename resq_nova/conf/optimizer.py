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
"""The ``[resq_optimizer]`` options: the MILPs and the optimizer service."""

import collections
import datetime
import re

from oslo_config import cfg
from oslo_config import types

from resq_common.conf import metrics as metrics_conf

GROUP = 'resq_optimizer'

_WINDOW_RE = re.compile(r'^([01][0-9]|2[0-3]):([0-5][0-9])-'
                        r'([01][0-9]|2[0-3]):([0-5][0-9])$')


class Window(collections.namedtuple('Window', 'start end text')):
    """A daily window in UTC, ``start`` and ``end`` in minutes of the day.

    It may span midnight (``22:00-04:00``); ``end`` is not part of it.
    """

    def contains(self, when=None):
        """Whether ``when`` (an aware datetime; now) is in the window."""
        when = when or datetime.datetime.now(datetime.timezone.utc)
        when = when.astimezone(datetime.timezone.utc)
        minute = when.hour * 60 + when.minute
        if self.start < self.end:
            return self.start <= minute < self.end
        return minute >= self.start or minute < self.end


def parse_window(text):
    """The :class:`Window` of ``"HH:MM-HH:MM"``, or None for an empty one.

    :raises ValueError: naming the option, the format and the value.
    """
    text = (text or '').strip()
    if not text:
        return None
    match = _WINDOW_RE.match(text.replace(' ', ''))
    start = end = None
    if match:
        h1, m1, h2, m2 = (int(g) for g in match.groups())
        start, end = h1 * 60 + m1, h2 * 60 + m2
    if start is None or start == end:
        raise ValueError(
            '[%s] repair_window must be "HH:MM-HH:MM" in UTC with two '
            'different times, e.g. "22:00-04:00", or empty for any time; '
            'got %r' % (GROUP, text))
    return Window(start, end, text)


def read_checked(group, name):
    """``group.name``; a bad value raises ValueError in one plain line.

    oslo.config's own message names where the value came from as a
    LocationInfo object; this one names the file.
    """
    try:
        return getattr(group, name)
    except cfg.ConfigSourceValueError as exc:
        raise ValueError(re.sub(r"from LocationInfo\(.*?detail='([^']*)'\)",
                                r'in \1', str(exc)))


class WindowType(types.String):
    """An oslo.config type: a ``HH:MM-HH:MM`` window or an empty string."""

    def __call__(self, value):
        value = super().__call__(value)
        parse_window(value)
        return value.strip()


ALL_OPTS = [
    cfg.FloatOpt('time_limit',
                 mutable=True,
                 default=20.0, min=1.0,
                 help='Seconds a consolidation plan may take, snapshot '
                      'model build included. The planner returns as soon '
                      'as its proven gap is within mip_gap, and at this '
                      'limit with the best plan found and its proven gap. '
                      'With several Nova cells each cell gets a share by '
                      'its number of instances. (resq-evaluate has its '
                      'own [resq_evaluation] time_limit.)'),
    cfg.FloatOpt('mip_gap',
                 mutable=True,
                 default=0.01, min=0.0, max=1.0,
                 help='Relative gap at which a plan is good enough: the '
                      'planner stops when the hosts it uses are proven '
                      'within this fraction of the fewest possible (0.01 = '
                      '1%). 0 asks for a proof of the optimum, which on a '
                      'large cloud uses the whole time_limit.'),
    cfg.FloatOpt('moves_gap',
                 mutable=True,
                 default=0.10, min=0.0, max=10.0,
                 help='A plan that meets mip_gap is good enough when its '
                      'live migrations are also proven within this fraction '
                      'of the fewest any plan with that many hosts needs '
                      '(0.10 = 10% more at most); otherwise the planner '
                      'keeps improving it within time_limit.'),
    cfg.IntOpt('full_model_max_instances',
               default=1000, min=0,
               help='Clouds (or Nova cells) with more movable ResQ '
                    'instances than this are planned with the repacking '
                    'heuristic and the aggregated lower bound only (hosts '
                    'of one shape pooled), whose proven gap is reported '
                    'the same way; below it the per-host MILP may improve '
                    'the plan when the gap is not yet met. Above about a '
                    'thousand, building the MILP takes most of time_limit '
                    'and HiGHS improves nothing in the rest.'),
    cfg.IntOpt('plan_workers',
               default=0, min=0,
               help='Processes that plan the Nova cells of a large cloud '
                    'at once (0: one per CPU; 1: one cell after the other '
                    'in the optimizer itself). Only snapshots of at least '
                    '20,000 instances in more than one cell are planned '
                    'so; each cell then gets its share of time_limit times '
                    'the processes. Each process holds its own cell.'),
    cfg.IntOpt('max_configurations_per_term',
               default=2000, min=10,
               help='Terms with more minimal configurations than this (very '
                    'large throughput targets) are modelled with per-term '
                    'instance counts instead; both are exact, this only '
                    'trades model size for LP strength.'),
    cfg.StrOpt('state_dir',
               default='/var/lib/resq/optimizer',
               help='Directory where resq-optimizer keeps its snapshots and '
                    'plans (snapshots/<id>.json, plans/<id>.json, written '
                    'atomically) and, unless coordination_url is set, its '
                    'lock. Must be writable by the optimizer.'),
    cfg.StrOpt('plan_store',
               default='auto', choices=[
                   ('auto', 'resq-api when [resq_api] is configured, else '
                            'files in state_dir'),
                   ('resq-api', 'snapshots, plans and each move\'s state in '
                                'resq-api'),
                   ('files', 'snapshots and plans as files in state_dir '
                             '(one host only; a single-node try-out)')],
               help='Where the optimizer keeps snapshots and plans. With '
                    'resq-api every controller and the openstack resq plan '
                    'commands see the same plans, each move\'s state is '
                    'written as it changes, and a plan is applied by one '
                    'process only.'),
    cfg.StrOpt('coordination_url',
               secret=True,
               help='tooz backend of the lock that lets one optimizer at a '
                    'time act on a cloud, e.g. redis://controller:6379 '
                    'when resq-optimizer runs on several controllers. '
                    'Unset: a file lock under state_dir, which only '
                    'protects optimizers on one host. A second optimizer '
                    'that finds the lock taken skips its round (or its '
                    'command fails) and says so.'),
    cfg.IntOpt('min_hosts_freed',
               mutable=True,
               default=1, min=1,
               help='Propose a plan only when it frees at least this many '
                    'hosts (ResQ\'s migration threshold): moving network '
                    'functions costs more than a plan that frees fewer '
                    'saves.'),
    cfg.StrOpt('cell_aggregate_key',
               default='resq_nova_cell',
               help='Metadata key of the host aggregates that name each '
                    'compute host\'s Nova cell (e.g. an aggregate "cell1" '
                    'with resq_nova_cell=cell1 holding the cell\'s hosts). '
                    'Nova never live-migrates between cells, so each cell '
                    'is planned on its own; hosts in no such aggregate '
                    'form one cell. Its API does not say which cell a host '
                    'is in, hence the aggregates.'),
    cfg.BoolOpt('disable_freed_hosts',
                default=False,
                help='Disable the compute service of each host a plan '
                     'frees, with a reason naming the plan, so the '
                     'scheduler does not fill it again before it is used '
                     'for something else. The optimizer enables such a '
                     'host again (and only hosts it disabled itself) when '
                     'admission finds no room.'),
    cfg.IntOpt('plan_ttl',
               default=3600, min=60,
               help='Seconds after its creation a plan may still be '
                    'applied; an older one is refused (make a new plan).'),
    cfg.IntOpt('keep_plans',
               mutable=True,
               default=200, min=1,
               help='Plans (and snapshots) kept in the store; older ones '
                    'beyond this count are pruned after each round, '
                    'except plans being applied.'),
    cfg.IntOpt('keep_days',
               mutable=True,
               default=14, min=1,
               help='Plans and snapshots older than this many days are '
                    'pruned after each round, whatever keep_plans says '
                    '(plans being applied excepted).'),
    metrics_conf.listen_opt(9478),
    cfg.IntOpt('interval',
               mutable=True,
               default=600, min=10,
               help='Seconds between two plans of "resq-optimizer run".'),
    cfg.BoolOpt('apply',
                mutable=True,
                default=False,
                help='Whether "resq-optimizer run" carries out the plans it '
                     'proposes. By default it only proposes (stores the '
                     'plan and sends resq.optimizer.plan.proposed) and an '
                     'operator applies a plan with "resq-optimizer apply".'),
    cfg.BoolOpt('repair_isolation',
                mutable=True,
                default=False,
                help='Whether each round of "resq-optimizer run" '
                     'live-migrates the servers agents report running '
                     'without isolation (cores and LLC ways in different '
                     'cache domains), so that Nova\'s scheduler and the ResQ '
                     'filter place them where both share a cache. Off by '
                     'default: each round only logs how many such servers '
                     'there are, and an operator moves them with '
                     '"resq-optimizer repair". Independent of apply.'),
    cfg.BoolOpt('release_orphaned_migrations',
                mutable=True,
                default=True,
                help='Whether the optimizer\'s migration audit deletes the '
                     'Placement allocations of consumers holding LLC ways '
                     'that Nova lists neither as a server nor as a '
                     'migration, in two audits in a row (the migrations '
                     'of deleted servers): what Nova leaves '
                     'when it gave up on a move ("too late to rollback", '
                     'e.g. the source\'s libvirtd lost during a live '
                     'migration), which only "nova-manage placement audit '
                     '--delete" frees otherwise. Off: each audit logs them '
                     'and frees nothing. Migrations Nova still lists are '
                     'never touched, and nothing is released while a cell '
                     'is down or when the [nova] credentials lack the '
                     'admin role.'),
    cfg.IntOpt('audit_interval',
               default=3600, min=0,
               help='Seconds between two migration audits of "resq-optimizer '
                    'run" (see release_orphaned_migrations), on a timer of '
                    'their own beside the planning rounds; a consumer is '
                    'released at the second audit in a row that finds it '
                    'orphaned. Each audit reads every cache domain\'s '
                    'allocations from Placement (one request per cache '
                    'domain), Nova\'s migration list and its server list. '
                    '0: no audit in the service ("resq-optimizer audit" '
                    'still runs one).'),
    cfg.Opt('repair_window',
            mutable=True,
            type=WindowType(),
            default='',
            help='With repair_isolation, the daily maintenance window in '
                 'UTC in which rounds start those live migrations, as '
                 '"HH:MM-HH:MM" (e.g. "22:00-04:00"; it may span midnight, '
                 'its end excluded). A migration started inside it runs to '
                 'its end; none starts outside it. Empty: any time. Any '
                 'other value stops the optimizer at start with an error '
                 'naming this option.'),
    cfg.IntOpt('concurrency',
               default=1, min=1,
               help='Live migrations a plan runs at once. A move starts '
                    'only when it is safe while the running ones hold '
                    'their source and destination.'),
    cfg.FloatOpt('migration_timeout',
                 default=600.0, min=1.0,
                 help='Seconds one live migration may take before it counts '
                      'as failed and the plan stops.'),
    cfg.FloatOpt('applier_lease',
                 default=60.0, min=3.0,
                 help='Seconds an optimizer\'s claim on the plan it '
                      'applies lasts unless renewed; it renews it every '
                      'third of that while it works. A plan left applying '
                      'whose lease expired (its applier stopped) is closed '
                      'by the next round of any optimizer, each move judged '
                      'by what Nova did with it.'),
    cfg.FloatOpt('poll_interval',
                 default=2.0, min=0.01,
                 help='Seconds between two looks at a migrating server.'),
    cfg.ListOpt('notification_topics',
                default=['notifications'],
                help='Topics of the optimizer\'s versioned notifications '
                     '(resq.optimizer.plan.proposed, .applied, .failed, '
                     'resq.optimizer.repair, resq.optimizer.action.start, '
                     '.end, resq.optimizer.ondemand.scale_out, .unmet).'),
    cfg.StrOpt('rpc_topic',
               default='resq_optimizer',
               help='RPC topic the optimizer service listens on for the '
                    'agents\' on-demand escalations (the agents\' '
                    '[resq_agent] optimizer_topic).'),
    cfg.StrOpt('ondemand_scale_out',
               default='off', choices=[
                   ('off', 'only log the escalation (the agent\'s own '
                    'resq.ondemand.escalation notification reports it); '
                    'nothing is asked of Placement or Nova'),
                   ('notify', 'find a host whose lease has room for one '
                    'more instance and announce it '
                    '(resq.optimizer.ondemand.scale_out, or .unmet); the '
                    'tenant or an orchestrator boots the instance'),
                   ('boot', 'as notify, and boot one more instance of the '
                    'escalated NF on that host, in the optimizer\'s own '
                    'project, and report its true outcome')],
               help='What the optimizer does when an agent escalates an '
                    'on-demand NF its host cannot keep within its latency '
                    'target. Off by default. With boot it boots only '
                    'servers of its own project (the [nova] credentials\' '
                    'project, where resq-admit --slo on-demand boots '
                    'them); for a server of another project it announces '
                    'the host, as notify does.'),
    cfg.IntOpt('ondemand_max_instances',
               default=8, min=1,
               help='Most servers of one on-demand term (named '
                    '<term>-<n>, ERROR ones included) the optimizer lets '
                    'exist: at this many an escalation is answered '
                    '"unmet" instead of booting one more.'),
    cfg.FloatOpt('ondemand_boot_timeout',
                 default=300.0, min=1.0,
                 help='Seconds a scale-out instance may take to become '
                      'ACTIVE before its boot counts as failed.'),
    cfg.IntOpt('ondemand_clone_window',
               default=600, min=0,
               help='Seconds after a scale-out instance was created during '
                    'which a repeated escalation of the same server reuses '
                    'it (outcome "reused") instead of booting another; a '
                    'scale-out instance still building is always reused '
                    '(outcome "in_progress").'),
]


EVALUATION_GROUP = 'resq_evaluation'

EVALUATION_OPTS = [
    cfg.FloatOpt('time_limit',
                 default=60.0, min=0.1,
                 help='Seconds resq-evaluate\'s admission MILP may take per '
                      'SLO set, model build included; the best schedule '
                      'found by then is used, with its proven gap. At '
                      'ResQ\'s scale (200 terms) the optimum is proven in '
                      'well under a second.'),
    cfg.FloatOpt('mip_gap',
                 default=0.0, min=0.0, max=1.0,
                 help='resq-evaluate stops its MILP as soon as the schedule '
                      'is proven within this fraction of the optimum.'),
]


def register_opts(conf):
    conf.register_opts(ALL_OPTS, group=GROUP)
    conf.register_opts(EVALUATION_OPTS, group=EVALUATION_GROUP)
