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
"""Rules for isolation status: the agents write, nobody else."""

from resq_nova.api.policies import base

rules = [
    base.rule('resq:isolation:update', base.ADMIN_OR_SERVICE,
              'Report a server\'s isolation status (the agents).',
              [('PUT', '/servers/{server_uuid}/isolation')]),
    base.rule('resq:isolation:read', base.ADMIN_OR_SERVICE,
              'Read isolation status (the optimizer\'s repair step).',
              [('GET', '/servers/{server_uuid}/isolation'),
               ('GET', '/isolation')]),
]


def list_rules():
    return rules
