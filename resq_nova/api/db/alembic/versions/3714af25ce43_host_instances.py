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
"""The servers a host report lists (microversion 1.1).

``hosts.instances``: the JSON list of the servers the agent partitions,
each with its cache domain, ways, LLC occupancy and memory bandwidth, or
NULL when the last report listed none. A nullable column added: the
reports stored before keep their domains and list no servers, and the
previous release's code neither reads nor writes it (while old and new
API workers serve side by side, a report an old worker stores leaves the
servers of the report before it until the agent's next report).

Revision ID: 3714af25ce43
Revises: 5c0f1e9a7d42
Create Date: 2026-11-26
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '3714af25ce43'
down_revision = '5c0f1e9a7d42'
branch_labels = None
depends_on = None

_DOC = sa.Text().with_variant(mysql.MEDIUMTEXT(), 'mysql')


def upgrade():
    with op.batch_alter_table('hosts') as batch:
        batch.add_column(sa.Column('instances', _DOC, nullable=True))
