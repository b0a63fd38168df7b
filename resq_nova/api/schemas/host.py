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
"""Host report bodies: ``PUT`` at 1.0, and at 1.1 with ``instances``."""

import copy

from resq_nova.api.schemas import common

COUNT = {'type': 'integer', 'minimum': 0, 'maximum': 1000000}
DOMAIN_ID = {'type': 'integer', 'minimum': 0, 'maximum': 4096}
DOMAIN = {
    'type': 'object',
    'properties': {
        'id': DOMAIN_ID,
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
# A server the agent partitions (microversion 1.1): its cache domain and
# ways, and what CMT/MBM measured (null until the agent has a reading).
INSTANCE = {
    'type': 'object',
    'properties': {
        'server_uuid': common.UUID,
        'domain': DOMAIN_ID,
        'ways': COUNT,
        'llc_occupancy_bytes': {'type': ['integer', 'null'], 'minimum': 0,
                                'maximum': 2 ** 63 - 1},
        'mbm_total_bytes_per_s': {'type': ['number', 'null'],
                                  'minimum': 0},
    },
    'required': ['server_uuid', 'domain', 'ways'],
    'additionalProperties': False,
}
MAX_INSTANCES = 4096
PUT_V1_1 = copy.deepcopy(PUT)
PUT_V1_1['properties']['instances'] = {
    'type': 'array', 'items': INSTANCE, 'maxItems': MAX_INSTANCES}
LIST_QUERY = common.query({'limit': common.LIMIT, 'marker': common.NAME})
