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
"""Profile bodies; the document itself is checked by resq_profiler."""

from resq_nova.api.schemas import common

# The document is checked by resq_profiler; these fields are also columns
# (String(255)), so the API bounds them.
DOCUMENT = {
    'type': 'object',
    'properties': {'nf': {'type': 'object',
                          'properties': {'name': common.NAME}}},
}
PUT = {
    'type': 'object',
    'properties': {
        'profile': DOCUMENT,
        'visibility': {'type': 'string', 'enum': ['public', 'private']},
        'generation': {'anyOf': [common.GENERATION, {'type': 'null'}]},
    },
    'required': ['profile'],
    'additionalProperties': False,
}
LIST_QUERY = common.query({'detail': common.BOOL, 'limit': common.LIMIT,
                           'marker': common.ID})
