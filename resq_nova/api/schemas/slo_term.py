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
"""SLO term bodies."""

from resq_nova.api.schemas import common

STATUS = {'type': 'string',
          'enum': ['requested', 'admitted', 'degraded', 'violated',
                   'released']}
FLAVORS = {'type': 'array', 'items': common.NAME, 'maxItems': 1000}
SERVERS = {'type': 'array', 'items': common.UUID, 'maxItems': 10000,
           'uniqueItems': True}
POST = {
    'type': 'object',
    'properties': {
        'name': common.NAME,
        'profile_id': common.ID,
        'slo': {'type': 'string', 'enum': ['reserved', 'on-demand']},
        'throughput_mpps': {'type': 'number', 'exclusiveMinimum': 0,
                            'maximum': 1e6},
        'latency_p95_us': {'type': ['number', 'null'],
                           'exclusiveMinimum': 0, 'maximum': 1e9},
        'packet_bytes': {'type': ['integer', 'null'], 'minimum': 64,
                         'maximum': 65535},
        'flavors': FLAVORS,
        'servers': SERVERS,
        'status': STATUS,
        'project_id': common.NAME,
    },
    'required': ['name', 'profile_id', 'slo', 'throughput_mpps'],
    'additionalProperties': False,
}
PATCH = {
    'type': 'object',
    'properties': {
        'generation': common.GENERATION,
        'status': STATUS,
        'servers': SERVERS,
        'flavors': FLAVORS,
    },
    'required': ['generation'],
    'minProperties': 2,
    'additionalProperties': False,
}
LIST_QUERY = common.query({
    'all_projects': common.BOOL, 'project_id': common.NAME,
    'status': STATUS, 'limit': common.LIMIT, 'marker': common.UUID})
