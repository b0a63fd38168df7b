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
"""SLO terms' server and flavor lists as whole documents on MySQL.

``slo_terms.servers`` and ``slo_terms.flavors`` become MEDIUMTEXT (16 MiB)
on MariaDB/MySQL, as the other documents are: TEXT holds 64 KiB, less
than the 10,000 servers or 1,000 flavors a term may list, and MariaDB
refused such a term with a 500 (or, without a strict SQL mode, cut it and
left a list no request could read). Nothing changes on PostgreSQL or
SQLite, whose TEXT has no such bound.

Revision ID: 8c4d2e6f1a3b
Revises: 3714af25ce43
Create Date: 2026-11-29
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '8c4d2e6f1a3b'
down_revision = '3714af25ce43'
branch_labels = None
depends_on = None

COLUMNS = ('flavors', 'servers')


def upgrade():
    if op.get_bind().dialect.name != 'mysql':
        return
    for name in COLUMNS:
        op.alter_column('slo_terms', name, type_=mysql.MEDIUMTEXT(),
                        existing_type=sa.Text(), existing_nullable=False)
