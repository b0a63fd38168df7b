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
"""Numbers in double precision; the lock row the plans' writers take.

``sa.Float`` made single-precision ``FLOAT`` columns on MariaDB, where
12.3456789 was stored as 12.3457: each becomes ``DOUBLE`` (``DOUBLE
PRECISION`` on PostgreSQL, where ``FLOAT`` already was; SQLite stores
8-byte reals either way). Widening keeps every stored value and the code
of the previous release reads and writes the columns unchanged, so the
database can be upgraded before the API workers.

``locks`` holds one row per rule that writers of many rows serialise on;
its ``plans`` row is seeded here.

Revision ID: 41cefd2b00d6
Revises: a1f3c0de7b21
Create Date: 2026-11-25
"""

from alembic import op
import sqlalchemy as sa

revision = '41cefd2b00d6'
down_revision = 'a1f3c0de7b21'
branch_labels = None
depends_on = None

# (column, nullable): the floating-point columns, all of slo_terms.
DOUBLES = (('throughput_mpps', False), ('latency_p95_us', True))


def upgrade():
    with op.batch_alter_table('slo_terms') as batch:
        for column, nullable in DOUBLES:
            batch.alter_column(column, type_=sa.Double(),
                               existing_type=sa.Float(),
                               existing_nullable=nullable)
    locks = op.create_table(
        'locks',
        sa.Column('name', sa.String(64), primary_key=True),
        sa.Column('generation', sa.Integer, nullable=False),
        mysql_charset='utf8mb4', mysql_engine='InnoDB')
    op.bulk_insert(locks, [{'name': 'plans', 'generation': 0}])
