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
"""A Watcher planner that runs a solution's actions one after the other.

Watcher's ``weight`` planner runs up to ``parallelization`` actions of a
type at once (two migrations by default). ResQ's order is safe only move
after move: each move may need the room an earlier one frees. This
planner keeps the weight planner's ordering by action type and, within a
type, the strategy's order, and chains every action to the one before
it, so the applier starts an action when the previous one has succeeded
(and stops the plan at the first failure).
"""

import networkx as nx

from watcher.decision_engine.planner import weight

NAME = 'resq_sequential'


class SequentialPlanner(weight.WeightPlanner):
    """The weight planner with every action after the previous one."""

    def compute_action_graph(self, sorted_weighted_actions):
        graph = nx.DiGraph()
        previous = None
        for _weight, actions in sorted_weighted_actions:
            for action in actions:
                graph.add_node(action)
                if previous is not None:
                    graph.add_edge(previous, action)
                    action.parents.append(previous.uuid)
                previous = action
        return graph
