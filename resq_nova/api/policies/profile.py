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
"""Rules for profiles."""

from resq_nova.api.policies import base

rules = [
    base.rule('resq:profiles:list', base.ANY_READER,
              'List profiles: public ones and the project\'s own.',
              [('GET', '/profiles')]),
    base.rule('resq:profiles:show', base.ANY_READER,
              'Show a public profile or one of the project\'s own.',
              [('GET', '/profiles/{profile_id}')]),
    base.rule('resq:profiles:create', 'rule:admin or role:member',
              'Upload a profile private to the project.',
              [('PUT', '/profiles/{profile_id}')]),
    base.rule('resq:profiles:create_public', base.ADMIN,
              'Upload a profile every project may use.',
              [('PUT', '/profiles/{profile_id}')]),
    base.rule('resq:profiles:delete', base.ADMIN_OR_MEMBER,
              'Delete a profile (public ones: admin only).',
              [('DELETE', '/profiles/{profile_id}')]),
]


def list_rules():
    return rules
