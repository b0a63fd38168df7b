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
"""ResQ's optimizer as a Watcher strategy.

An audit of goal ``resq_cache_consolidation`` with this strategy builds
the optimizer's snapshot from the audit's Watcher compute model and
Placement's cache-domain providers (:mod:`resq_nova.watcher.cluster`),
runs the same planner as ``resq-optimizer``
(:func:`resq_nova.optimizer.planner.make_plan`) and returns its moves as
Watcher ``migrate`` actions (live), in the plan's safe order, with the
efficacy indicators of :mod:`resq_nova.watcher.efficacy`. A plan that
frees fewer than ``min_hosts_freed`` hosts has no action (the indicators
still say what the cloud looks like).

The strategy asks for the ``resq_sequential`` planner: the moves run one
after the other, as the order is safe only that way.
"""

from keystoneauth1 import adapter as ks_adapter
from oslo_config import cfg
from oslo_log import log as logging
from watcher.common import exception as w_exception
from watcher.decision_engine.strategy.strategies import base

from resq_common.clients import compute as compute_client
from resq_common.clients import placement as placement_client
from resq_common import exception as resq_exception
from resq_nova.optimizer import collect
from resq_nova.optimizer import model as opt_model
from resq_nova.optimizer import planner as opt_planner
from resq_nova.watcher import cluster
from resq_nova.watcher import goal
from resq_nova.watcher import planner as seq_planner

LOG = logging.getLogger(__name__)
CONF = cfg.CONF
NAME = 'resq_cache_consolidation'


class CacheConsolidation(base.BaseStrategy):
    """Free hosts by moving ResQ instances between cache domains.

    The same plan as ``resq-optimizer``: the fewest hosts HiGHS finds
    (with the bound it proves), each move needed, in an order that never
    over-commits a cache domain, a host's classes of service, a NUMA
    cell's memory or an anti-affinity group.
    """

    def __init__(self, config, osc=None):
        super().__init__(config, osc)
        self._planner = seq_planner.NAME
        self._placement = None
        self._nova = None
        self.plan = None

    @classmethod
    def get_name(cls):
        return NAME

    @classmethod
    def get_display_name(cls):
        return goal.DISPLAY_NAME

    @classmethod
    def get_translatable_display_name(cls):
        return goal.DISPLAY_NAME

    @classmethod
    def get_goal_name(cls):
        return goal.NAME

    @classmethod
    def get_config_opts(cls):
        """None: the strategy reads no metrics datasource."""
        return []

    @classmethod
    def get_schema(cls):
        return {
            'type': 'object',
            'properties': {
                'min_hosts_freed': {
                    'description': 'Propose moves only when they free at '
                    'least this many hosts.',
                    'type': 'integer', 'minimum': 1, 'default': 1},
                'time_limit': {
                    'description': 'Seconds the solver may take.',
                    'type': 'number', 'exclusiveMinimum': 0,
                    'default': 20.0},
                'mip_gap': {
                    'description': 'Relative gap at which the solver '
                    'stops (0.01: within 1% of the proven bound).',
                    'type': 'number', 'minimum': 0, 'default': 0.01},
                'cell_aggregate_key': {
                    'description': 'Metadata key of the host aggregates '
                    'naming each host\'s Nova cell (nothing moves between '
                    'cells); empty: one cell.',
                    'type': 'string', 'default': collect.CELL_KEY},
            },
            'additionalProperties': False,
        }

    # -- clients: Watcher's own Keystone session ---------------------------
    @property
    def placement(self):
        if self._placement is None:
            self._placement = placement_client.PlacementClient(
                self._adapter('placement', CONF.placement_client.interface,
                              CONF.placement_client.region_name))
        return self._placement

    @placement.setter
    def placement(self, client):
        self._placement = client

    @property
    def nova(self):
        if self._nova is None:
            self._nova = compute_client.ComputeClient(
                self._adapter('compute', CONF.nova_client.endpoint_type,
                              CONF.nova_client.region_name))
        return self._nova

    @nova.setter
    def nova(self, client):
        self._nova = client

    def _adapter(self, service_type, interface, region):
        return ks_adapter.Adapter(self.osc.session,
                                  service_type=service_type,
                                  interface=interface, region_name=region,
                                  raise_exc=False)

    # -- the three phases --------------------------------------------------
    def pre_execute(self):
        self._pre_execute()

    def _param(self, name):
        value = self.input_parameters.get(name)
        if value is None:
            value = self.get_schema()['properties'][name]['default']
        return value

    def do_execute(self, audit=None):
        if not self.compute_model.extended_attributes_enabled:
            # Without them every instance's flavor extra specs are empty
            # in the model: no instance is a ResQ one and the plan would
            # be empty, whatever the cloud.
            raise w_exception.WatcherException(
                'ResQ could not plan: Watcher\'s compute model holds no '
                'flavor extra specs, so no instance shows as a ResQ one; '
                'set [compute_model] enable_extended_attributes = True in '
                'watcher.conf and restart watcher-decision-engine')
        try:
            snap = cluster.snapshot_from(
                self.compute_model, self.placement, self.nova,
                cell_key=self._param('cell_aggregate_key') or None)
            self.plan = opt_planner.make_plan(
                snap, min_hosts_freed=self._param('min_hosts_freed'),
                time_limit=float(self._param('time_limit')),
                mip_gap=float(self._param('mip_gap')))
        except resq_exception.ResQException as exc:
            # Placement or Nova unreadable, or a snapshot the optimizer
            # refuses: the audit fails with the reason; nothing moves.
            raise w_exception.WatcherException(
                'ResQ could not plan: %s' % exc)
        LOG.info('ResQ plan %s: %s', self.plan['id'], self.plan['reason'])
        if self.plan['proposed']:
            for move in self.plan['moves']:
                self._add_move(move)

    def _add_move(self, move):
        params = {'migration_type': 'live',
                  'source_node': move['from_host'],
                  'destination_node': move['to_host']}
        name = self._instance_name(move['uuid'])
        if name:
            params['resource_name'] = name
        self.solution.add_action(action_type=self.MIGRATION,
                                 resource_id=move['uuid'],
                                 input_parameters=params)

    def _instance_name(self, uuid):
        try:
            return self.compute_model.get_instance_by_uuid(uuid).name
        except w_exception.InstanceNotFound:
            return None

    def post_execute(self):
        plan = self.plan
        moves = len(self.solution.actions)
        before = plan['hosts_used_before']
        after = plan['hosts_used_after'] if moves else before
        self.solution.set_efficacy_indicators(
            compute_nodes_count=before,
            released_compute_nodes_count=max(before - after, 0),
            instance_migrations_count=moves,
            proven_gap=round(opt_model.gap_pct(after, plan['lower_bound']),
                             3))
