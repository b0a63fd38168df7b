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
"""Rules for host reports."""

from resq_nova.api.policies import base

rules = [
    base.rule('resq:hosts:report', base.ADMIN_OR_SERVICE,
              'Report a host\'s cache domains (the agents).',
              [('PUT', '/hosts/{hostname}')]),
    base.rule('resq:hosts:read', base.ADMIN_OR_SERVICE,
              'List and show hosts\' reports.',
              [('GET', '/hosts'), ('GET', '/hosts/{hostname}')]),
]


def list_rules():
    return rules
