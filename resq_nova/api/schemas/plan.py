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
"""Snapshot and plan bodies."""

from resq_nova.api.schemas import common

SNAPSHOT_POST = {
    'type': 'object',
    'properties': {'id': common.ID, 'snapshot': {'type': 'object'}},
    'required': ['id', 'snapshot'],
    'additionalProperties': False,
}
MOVE = {
    'type': 'object',
    'properties': {'uuid': common.UUID,
                   # A server name: plan_actions.name is String(255).
                   'name': {'type': ['string', 'null'], 'maxLength': 255,
                            'pattern': r'^[^\x00]*\Z'},
                   'from_host': common.NAME, 'to_host': common.NAME},
    'required': ['uuid', 'from_host', 'to_host'],
}
PLAN_POST = {
    'type': 'object',
    'properties': {
        'id': common.ID,
        'snapshot_id': {'anyOf': [common.ID, {'type': 'null'}]},
        'plan': {'type': 'object',
                 'properties': {'moves': {'type': 'array', 'items': MOVE,
                                          'maxItems': 100000}},
                 'required': ['moves']},
    },
    'required': ['id', 'plan'],
    'additionalProperties': False,
}
LEASE = {'type': 'number', 'minimum': 1, 'maximum': 86400}
APPLY = {
    'type': 'object',
    'properties': {'applier': common.NAME, 'lease': LEASE},
    'required': ['applier'],
    'additionalProperties': False,
}
HEARTBEAT = {
    'type': 'object',
    'properties': {'applier': common.NAME, 'lease': LEASE},
    'required': ['applier', 'lease'],
    'additionalProperties': False,
}
CANCEL = {'type': 'object', 'additionalProperties': False}
ACTION_PUT = {
    'type': 'object',
    'properties': {
        'state': {'type': 'string', 'enum': [
            'requested', 'ongoing', 'succeeded', 'failed', 'skipped',
            'cancelled']},
        'detail': common.TEXT,
    },
    'required': ['state'],
    'additionalProperties': False,
}
RESULT_PUT = {
    'type': 'object',
    'properties': {
        'state': {'type': 'string',
                  'enum': ['applied', 'failed', 'cancelled']},
        'result': common.TEXT,
    },
    'required': ['state'],
    'additionalProperties': False,
}
LIST_QUERY = common.query({
    'state': {'type': 'string', 'enum': [
        'proposed', 'applying', 'applied', 'failed', 'cancelled',
        'superseded']},
    'limit': common.LIMIT, 'marker': common.ID})
SNAPSHOT_LIST_QUERY = common.query({'limit': common.LIMIT,
                                    'marker': common.ID})
