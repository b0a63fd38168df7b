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
"""The applier's lease on the plan it applies.

``plans.lease_expires``: until when the applier's claim holds unless it
renews it (``POST /plans/{id}/heartbeat``); once past, another optimizer
may take the plan over (``POST /plans/{id}/takeover``) to close it. A
nullable column added: the previous release's code neither reads nor
writes it, and a claim it makes (no lease) counts as expired.

Revision ID: 5c0f1e9a7d42
Revises: 41cefd2b00d6
Create Date: 2026-11-25
"""

from alembic import op
import sqlalchemy as sa

revision = '5c0f1e9a7d42'
down_revision = '41cefd2b00d6'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('plans') as batch:
        batch.add_column(sa.Column('lease_expires', sa.DateTime,
                                   nullable=True))
