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
"""Pieces the schemas share."""

# Integers are bounded by the columns that hold them (sa.Integer: 32 bits
# on PostgreSQL and MariaDB). A write stores the generation it was given
# plus one, so that sum must fit too.
INT32_MAX = 2 ** 31 - 1
GENERATION = {'type': 'integer', 'minimum': 0, 'maximum': INT32_MAX - 1}
# Names fit String(255) and hold no control characters.
NAME = {'type': 'string', 'minLength': 1, 'maxLength': 255,
        'pattern': r'^[^\x00-\x1f\x7f-\x9f]*\Z'}
ID = {'type': 'string', 'pattern': r'^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}\Z'}
UUID = {'type': 'string', 'pattern':
        r'^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?'
        r'[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}\Z'}
# Free text (sa.Text: 64 KiB on MariaDB): tabs and newlines, but no NUL.
TEXT = {'type': 'string', 'maxLength': 16383,
        'pattern': r'^[^\x00]*\Z'}
LIMIT = {'type': 'string', 'pattern': r'^[1-9][0-9]{0,5}\Z'}
BOOL = {'type': 'string', 'enum': ['true', 'false', 'True', 'False',
                                   '1', '0']}


def query(properties):
    return {'type': 'object', 'properties': properties,
            'additionalProperties': False}
