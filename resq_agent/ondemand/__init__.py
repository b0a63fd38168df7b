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
"""On-demand SLOs on one host (ResQ §5.3.2).

An on-demand NF has a latency target and no reserved ways. The host keeps a
*lease* of ways for them (:mod:`.lease`); the agent's local scheduler
(:mod:`.scheduler`) splits the lease into classes of service with one of
three policies: ResQ's max-min fair procedure (:mod:`.maxmin`), Durner et
al.'s profile-free min-max (:mod:`.durner`), or one shared class. When NFs
need more classes than the lease has, :mod:`.grouping` merges them with a
min-cost flow. Latency readings come from pluggable sources
(:mod:`.latency`). Everything but the sources and the scheduler's apply
step is pure.
"""
