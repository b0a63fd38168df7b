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
"""The personas every rule of resq-api is built from."""

from oslo_policy import policy

ADMIN = 'role:admin'
SERVICE = 'role:service'
PROJECT_MEMBER = 'role:member and project_id:%(project_id)s'
PROJECT_READER = 'role:reader and project_id:%(project_id)s'
ADMIN_OR_SERVICE = 'rule:admin or rule:service'
ADMIN_OR_MEMBER = 'rule:admin or rule:project_member'
ADMIN_OR_READER = ('rule:admin or rule:project_member or '
                   'rule:project_reader')
ANY_READER = ('rule:admin or rule:service or role:member or role:reader')

rules = [
    policy.RuleDefault('admin', ADMIN, 'An administrator of the cloud.'),
    policy.RuleDefault('service', SERVICE,
                       'A service user: the agents, the optimizer and the '
                       'scheduler.'),
    policy.RuleDefault('project_member', PROJECT_MEMBER,
                       'A member of the project that owns the thing.'),
    policy.RuleDefault('project_reader', PROJECT_READER,
                       'A reader of the project that owns the thing.'),
    policy.RuleDefault('resq:admin_view', 'rule:admin or rule:service',
                       'Sees every project\'s profiles and terms.'),
]


def rule(name, check, description, operations):
    return policy.DocumentedRuleDefault(
        name=name, check_str=check, description=description,
        operations=[{'path': p, 'method': m} for m, p in operations],
        scope_types=['project'])


def list_rules():
    return rules
