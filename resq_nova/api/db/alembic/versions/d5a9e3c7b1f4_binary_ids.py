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
"""Profile and project ids compared byte for byte on MySQL.

MariaDB's default collation compares strings without case, so
``LPM-Example`` found the profile ``lpm-example``: a project learnt
whether another project's private profile existed (a create under the
other case answered 409), and a term recorded the profile id in a case
other than the profile's. ``profiles.id``, ``profiles.project_id``,
``slo_terms.profile_id`` and ``slo_terms.project_id`` become
``utf8mb4_bin`` on MariaDB/MySQL, as ids compare on PostgreSQL and SQLite.
Terms that named a profile in another case are first given the profile's
own id. Nothing changes on PostgreSQL or SQLite.

Revision ID: d5a9e3c7b1f4
Revises: 8c4d2e6f1a3b
Create Date: 2026-11-29
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = 'd5a9e3c7b1f4'
down_revision = '8c4d2e6f1a3b'
branch_labels = None
depends_on = None

# (table, column, nullable)
COLUMNS = (('profiles', 'id', False),
           ('profiles', 'project_id', True),
           ('slo_terms', 'profile_id', False),
           ('slo_terms', 'project_id', False))


def upgrade():
    if op.get_bind().dialect.name != 'mysql':
        return
    # Still compared without case here: each term takes its profile's id.
    op.execute('UPDATE slo_terms JOIN profiles '
               'ON slo_terms.profile_id = profiles.id '
               'SET slo_terms.profile_id = profiles.id '
               'WHERE BINARY slo_terms.profile_id <> BINARY profiles.id')
    for table, column, nullable in COLUMNS:
        op.alter_column(table, column,
                        type_=mysql.VARCHAR(255, charset='utf8mb4',
                                            collation='utf8mb4_bin'),
                        existing_type=sa.String(255),
                        existing_nullable=nullable)
