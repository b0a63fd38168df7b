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
"""ResQ's own Watcher goal: free hosts without breaking cache isolation.

Why not Watcher's ``server_consolidation`` goal:

* its efficacy specification has no place for the proven gap: Watcher
  refuses a solution whose indicators the goal's specification does not
  list, so a ResQ plan could not report it there;
* an audit on ``server_consolidation`` without a strategy lets Watcher
  pick any of that goal's strategies (``basic``,
  ``vm_workload_consolidation``, ...), which pack by vCPU, RAM and disk
  and know nothing of cache domains, ways or classes of service: their
  moves can land where Nova's ResQ filter refuses them or, worse, break a
  reserved instance's isolation. Under this goal ResQ's strategy is the
  only one.
"""

from watcher.decision_engine.goal import base

from resq_nova.watcher import efficacy

NAME = 'resq_cache_consolidation'
# The goal's and the strategy's name in Watcher's dashboard and CLI.
DISPLAY_NAME = 'ResQ cache-aware consolidation'


class CacheConsolidation(base.Goal):
    """Free compute hosts, keeping every ResQ instance's cache share.

    Live-migrates ResQ (``resq:slo=reserved``) instances between cache
    domains so that fewer hosts stay in use, in an order that never
    over-commits a cache domain, a host's classes of service or an
    anti-affinity group.
    """

    @classmethod
    def get_name(cls):
        return NAME

    @classmethod
    def get_display_name(cls):
        return DISPLAY_NAME

    @classmethod
    def get_translatable_display_name(cls):
        return DISPLAY_NAME

    @classmethod
    def get_efficacy_specification(cls):
        return efficacy.CacheConsolidation()
