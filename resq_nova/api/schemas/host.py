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
"""Host report bodies."""

from resq_nova.api.schemas import common

COUNT = {'type': 'integer', 'minimum': 0, 'maximum': 1000000}
DOMAIN = {
    'type': 'object',
    'properties': {
        'id': {'type': 'integer', 'minimum': 0, 'maximum': 4096},
        'ways_total': COUNT, 'ways_used': COUNT, 'ways_leased': COUNT,
        'clos_total': COUNT, 'clos_used': COUNT,
        'cores_total': COUNT, 'cores_used': COUNT, 'cores_leased': COUNT,
    },
    'required': ['id', 'ways_total', 'ways_used'],
    'additionalProperties': False,
}
PUT = {
    'type': 'object',
    'properties': {
        'domains': {'type': 'array', 'items': DOMAIN, 'maxItems': 256},
        'agent_version': {'type': 'string', 'maxLength': 64},
    },
    'required': ['domains'],
    'additionalProperties': False,
}
LIST_QUERY = common.query({'limit': common.LIMIT, 'marker': common.NAME})
