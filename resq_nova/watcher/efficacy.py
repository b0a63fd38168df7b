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
"""The efficacy specification of ResQ's goal: what an action plan achieves.

Indicators (each plan's, as Watcher shows them with the action plan):

* ``compute_nodes_count``: hosts in use before the plan (ResQ or other
  instances on them), among the nodes of the audit scope;
* ``released_compute_nodes_count``: hosts the plan frees;
* ``instance_migrations_count``: live migrations in the plan;
* ``proven_gap``: how far, in percent, the hosts in use after the plan
  may be from the fewest any plan could reach (HiGHS proved that bound):
  0 means no plan frees more hosts.

The global efficacy is the share of the hosts in use that the plan frees,
as Watcher's server consolidation goal counts it.
"""

from watcher.decision_engine.goal.efficacy import base
from watcher.decision_engine.goal.efficacy import indicators
from watcher.decision_engine.solution import efficacy


class ProvenGap(indicators.IndicatorSpecification):
    """The plan's hosts after, above the proven lower bound, in percent."""

    def __init__(self):
        super().__init__(
            name='proven_gap',
            description='How far, in percent, the hosts in use after the '
            'plan may be from the fewest any plan could reach (the solver '
            'proved that bound); 0: no plan frees more hosts.',
            unit='%')

    @property
    def schema(self):
        return {'type': 'number', 'minimum': 0}


class CacheConsolidation(base.EfficacySpecification):
    """Hosts freed, moves and proven gap of a ResQ plan."""

    def get_indicators_specifications(self):
        return [indicators.ComputeNodesCount(),
                indicators.ReleasedComputeNodesCount(),
                indicators.InstanceMigrationsCount(),
                ProvenGap()]

    def get_global_efficacy_indicator(self, indicators_map=None):
        value = 0
        if indicators_map and indicators_map.compute_nodes_count > 0:
            value = (100.0 * indicators_map.released_compute_nodes_count
                     / indicators_map.compute_nodes_count)
        return [efficacy.Indicator(
            name='released_nodes_ratio',
            description='Hosts the plan frees, in percent of the hosts in '
            'use.', unit='%', value=value)]
