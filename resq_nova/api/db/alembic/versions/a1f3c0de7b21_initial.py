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
"""The first schema: profiles, SLO terms, snapshots, plans and their
actions, isolation status, host reports.

Revision ID: a1f3c0de7b21
Revises:
Create Date: 2026-11-25
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = 'a1f3c0de7b21'
down_revision = None
branch_labels = None
depends_on = None

_DOC = sa.Text().with_variant(mysql.MEDIUMTEXT(), 'mysql')


def upgrade():
    op.create_table(
        'profiles',
        sa.Column('id', sa.String(255), primary_key=True),
        sa.Column('name', sa.String(255), nullable=False),
        sa.Column('nf', sa.String(255), nullable=False),
        sa.Column('visibility', sa.String(16), nullable=False),
        sa.Column('project_id', sa.String(255), nullable=True),
        sa.Column('generation', sa.Integer, nullable=False),
        sa.Column('document', _DOC, nullable=False),
        sa.Column('created_at', sa.DateTime, nullable=False),
        sa.Column('updated_at', sa.DateTime, nullable=False),
        mysql_charset='utf8mb4', mysql_engine='InnoDB')
    op.create_index('ix_profiles_project_id', 'profiles', ['project_id'])
    op.create_table(
        'slo_terms',
        sa.Column('uuid', sa.String(36), primary_key=True),
        sa.Column('name', sa.String(255), nullable=False),
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.Column('profile_id', sa.String(255), nullable=False),
        sa.Column('slo', sa.String(16), nullable=False),
        sa.Column('throughput_mpps', sa.Float, nullable=False),
        sa.Column('latency_p95_us', sa.Float, nullable=True),
        sa.Column('packet_bytes', sa.Integer, nullable=True),
        sa.Column('flavors', sa.Text, nullable=False),
        sa.Column('servers', sa.Text, nullable=False),
        sa.Column('status', sa.String(16), nullable=False),
        sa.Column('generation', sa.Integer, nullable=False),
        sa.Column('created_at', sa.DateTime, nullable=False),
        sa.Column('updated_at', sa.DateTime, nullable=False),
        mysql_charset='utf8mb4', mysql_engine='InnoDB')
    op.create_index('ix_slo_terms_project_created', 'slo_terms',
                    ['project_id', 'created_at'])
    op.create_index('ix_slo_terms_profile_id', 'slo_terms', ['profile_id'])
    op.create_index('ix_slo_terms_status', 'slo_terms', ['status'])
    op.create_table(
        'snapshots',
        sa.Column('id', sa.String(128), primary_key=True),
        sa.Column('document', _DOC, nullable=False),
        sa.Column('created_at', sa.DateTime, nullable=False),
        mysql_charset='utf8mb4', mysql_engine='InnoDB')
    op.create_index('ix_snapshots_created_at', 'snapshots', ['created_at'])
    op.create_table(
        'plans',
        sa.Column('id', sa.String(128), primary_key=True),
        sa.Column('snapshot_id', sa.String(128), nullable=True),
        sa.Column('state', sa.String(16), nullable=False),
        sa.Column('applier', sa.String(255), nullable=True),
        sa.Column('generation', sa.Integer, nullable=False),
        sa.Column('document', _DOC, nullable=False),
        sa.Column('result', sa.Text, nullable=True),
        sa.Column('created_at', sa.DateTime, nullable=False),
        sa.Column('updated_at', sa.DateTime, nullable=False),
        mysql_charset='utf8mb4', mysql_engine='InnoDB')
    op.create_index('ix_plans_state', 'plans', ['state'])
    op.create_index('ix_plans_created_at', 'plans', ['created_at'])
    op.create_table(
        'plan_actions',
        sa.Column('plan_id', sa.String(128),
                  sa.ForeignKey('plans.id', ondelete='CASCADE'),
                  primary_key=True),
        sa.Column('position', sa.Integer, primary_key=True,
                  autoincrement=False),
        sa.Column('server_uuid', sa.String(36), nullable=False),
        sa.Column('name', sa.String(255), nullable=True),
        sa.Column('from_host', sa.String(255), nullable=True),
        sa.Column('to_host', sa.String(255), nullable=True),
        sa.Column('state', sa.String(16), nullable=False),
        sa.Column('detail', sa.Text, nullable=True),
        sa.Column('updated_at', sa.DateTime, nullable=False),
        mysql_charset='utf8mb4', mysql_engine='InnoDB')
    op.create_table(
        'isolation',
        sa.Column('server_uuid', sa.String(36), primary_key=True),
        sa.Column('status', sa.String(32), nullable=False),
        sa.Column('host', sa.String(255), nullable=True),
        sa.Column('detail', sa.Text, nullable=True),
        sa.Column('updated_at', sa.DateTime, nullable=False),
        mysql_charset='utf8mb4', mysql_engine='InnoDB')
    op.create_index('ix_isolation_status', 'isolation', ['status'])
    op.create_index('ix_isolation_host', 'isolation', ['host'])
    op.create_table(
        'hosts',
        sa.Column('hostname', sa.String(255), primary_key=True),
        sa.Column('report', _DOC, nullable=False),
        sa.Column('updated_at', sa.DateTime, nullable=False),
        mysql_charset='utf8mb4', mysql_engine='InnoDB')
