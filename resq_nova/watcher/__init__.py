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
"""ResQ's optimizer as a Watcher strategy plugin.

Only this package imports ``watcher`` (python-watcher); the rest of
resq-nova runs without it. The entry points in ``setup.cfg``:

* ``watcher_goals``: ``resq_cache_consolidation``
  (:class:`~resq_nova.watcher.goal.CacheConsolidation`);
* ``watcher_strategies``: ``resq_cache_consolidation``
  (:class:`~resq_nova.watcher.strategy.CacheConsolidation`);
* ``watcher_planners``: ``resq_sequential``
  (:class:`~resq_nova.watcher.planner.SequentialPlanner`), which keeps the
  strategy's migrations one after the other in the safe order.
"""
