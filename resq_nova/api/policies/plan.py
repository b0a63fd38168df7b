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
"""Rules for snapshots and plans: the optimizer's and the admin's."""

from resq_nova.api.policies import base

rules = [
    base.rule('resq:plans:read', base.ADMIN_OR_SERVICE,
              'List and show snapshots and plans.',
              [('GET', '/plans'), ('GET', '/plans/{plan_id}'),
               ('GET', '/snapshots'), ('GET', '/snapshots/{id}')]),
    base.rule('resq:plans:create', base.ADMIN_OR_SERVICE,
              'Store snapshots and plans (the optimizer).',
              [('POST', '/plans'), ('POST', '/snapshots'),
               ('DELETE', '/snapshots/{id}')]),
    base.rule('resq:plans:apply', base.ADMIN,
              'Apply a plan: live-migrate its servers. Admin only.',
              [('POST', '/plans/{plan_id}/apply'),
               ('POST', '/plans/{plan_id}/heartbeat'),
               ('POST', '/plans/{plan_id}/takeover'),
               ('PUT', '/plans/{plan_id}/actions/{index}'),
               ('PUT', '/plans/{plan_id}/result')]),
    base.rule('resq:plans:cancel', base.ADMIN,
              'Cancel a proposed plan or one being applied.',
              [('POST', '/plans/{plan_id}/cancel')]),
]


def list_rules():
    return rules
