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
"""Rules for SLO terms."""

from resq_nova.api.policies import base

rules = [
    base.rule('resq:slo_terms:list', base.ADMIN_OR_READER + ' or '
              'rule:service', 'List the project\'s SLO terms.',
              [('GET', '/slo_terms')]),
    base.rule('resq:slo_terms:list_all', 'rule:admin or rule:service',
              'List every project\'s SLO terms (all_projects, project_id).',
              [('GET', '/slo_terms')]),
    base.rule('resq:slo_terms:show', base.ADMIN_OR_READER + ' or '
              'rule:service', 'Show an SLO term.',
              [('GET', '/slo_terms/{uuid}')]),
    base.rule('resq:slo_terms:create', base.ADMIN_OR_MEMBER + ' or '
              'rule:service',
              'Record an SLO term for the project (requested, until the '
              'admission service admits it).',
              [('POST', '/slo_terms')]),
    base.rule('resq:slo_terms:admit', base.ADMIN_OR_SERVICE,
              'The admission service: record a term as admitted (the '
              'default for it), move a term to admitted, degraded or '
              'violated, and record a term for another project '
              '(project_id). Others record requested terms and release '
              'them.',
              [('POST', '/slo_terms'), ('PATCH', '/slo_terms/{uuid}')]),
    base.rule('resq:slo_terms:update', base.ADMIN_OR_MEMBER + ' or '
              'rule:service', 'Change an SLO term\'s status or servers.',
              [('PATCH', '/slo_terms/{uuid}')]),
    base.rule('resq:slo_terms:delete', base.ADMIN_OR_MEMBER,
              'Delete an SLO term.', [('DELETE', '/slo_terms/{uuid}')]),
]


def list_rules():
    return rules
