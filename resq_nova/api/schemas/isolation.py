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
"""Isolation status bodies."""

from resq_nova.api.schemas import common

STATUS = {'type': 'string',
          'enum': ['ok', 'misplaced', 'unenforced', 'moved']}
PUT = {
    'type': 'object',
    'properties': {'status': STATUS, 'host': common.NAME,
                   'detail': common.TEXT},
    'required': ['status', 'host'],
    'additionalProperties': False,
}
LIST_QUERY = common.query({'status': STATUS, 'host': common.NAME,
                           'limit': common.LIMIT, 'marker': common.UUID})
