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
"""The tables of resq-api (SQLAlchemy 2 declarative models).

Documents (profiles, snapshots, plans, host reports) are JSON text, as
their shapes are defined and validated by the code that writes them.
Strings that are indexed stay at 255 characters so utf8mb4 indexes fit on
MariaDB. Numbers are double precision on every backend (``sa.Double``):
``sa.Float`` is single precision on MariaDB, where 12.3456789 comes back
as 12.3457.
"""

import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy import orm

# A whole document: MEDIUMTEXT (16 MiB) on MariaDB/MySQL, whose TEXT
# stops at 64 KiB.
Document = sa.Text().with_variant(mysql.MEDIUMTEXT(), 'mysql')
# Ids compared byte for byte on every backend: MariaDB's default collation
# ignores case (revision d5a9e3c7b1f4).
Id = sa.String(255).with_variant(
    mysql.VARCHAR(255, charset='utf8mb4', collation='utf8mb4_bin'), 'mysql')


class Base(orm.DeclarativeBase):
    pass


class Profile(Base):
    __tablename__ = 'profiles'
    id = sa.Column(Id, primary_key=True)
    name = sa.Column(sa.String(255), nullable=False)
    nf = sa.Column(sa.String(255), nullable=False)
    visibility = sa.Column(sa.String(16), nullable=False)
    project_id = sa.Column(Id, nullable=True, index=True)
    generation = sa.Column(sa.Integer, nullable=False, default=0)
    document = sa.Column(Document, nullable=False)
    created_at = sa.Column(sa.DateTime, nullable=False)
    updated_at = sa.Column(sa.DateTime, nullable=False)


class SloTerm(Base):
    __tablename__ = 'slo_terms'
    __table_args__ = (
        sa.Index('ix_slo_terms_project_created', 'project_id', 'created_at'),
    )
    uuid = sa.Column(sa.String(36), primary_key=True)
    name = sa.Column(sa.String(255), nullable=False)
    project_id = sa.Column(Id, nullable=False)
    profile_id = sa.Column(Id, nullable=False, index=True)
    slo = sa.Column(sa.String(16), nullable=False)
    throughput_mpps = sa.Column(sa.Double, nullable=False)
    latency_p95_us = sa.Column(sa.Double, nullable=True)
    packet_bytes = sa.Column(sa.Integer, nullable=True)
    flavors = sa.Column(Document, nullable=False)
    servers = sa.Column(Document, nullable=False)
    status = sa.Column(sa.String(16), nullable=False, index=True)
    generation = sa.Column(sa.Integer, nullable=False, default=0)
    created_at = sa.Column(sa.DateTime, nullable=False)
    updated_at = sa.Column(sa.DateTime, nullable=False)


class Snapshot(Base):
    __tablename__ = 'snapshots'
    id = sa.Column(sa.String(128), primary_key=True)
    document = sa.Column(Document, nullable=False)
    created_at = sa.Column(sa.DateTime, nullable=False, index=True)


class Plan(Base):
    __tablename__ = 'plans'
    id = sa.Column(sa.String(128), primary_key=True)
    snapshot_id = sa.Column(sa.String(128), nullable=True)
    state = sa.Column(sa.String(16), nullable=False, index=True)
    applier = sa.Column(sa.String(255), nullable=True)
    # Until when the applier's claim holds unless it renews it.
    lease_expires = sa.Column(sa.DateTime, nullable=True)
    generation = sa.Column(sa.Integer, nullable=False, default=0)
    document = sa.Column(Document, nullable=False)
    result = sa.Column(sa.Text, nullable=True)
    created_at = sa.Column(sa.DateTime, nullable=False, index=True)
    updated_at = sa.Column(sa.DateTime, nullable=False)


class PlanAction(Base):
    __tablename__ = 'plan_actions'
    plan_id = sa.Column(sa.String(128),
                        sa.ForeignKey('plans.id', ondelete='CASCADE'),
                        primary_key=True)
    position = sa.Column(sa.Integer, primary_key=True, autoincrement=False)
    server_uuid = sa.Column(sa.String(36), nullable=False)
    name = sa.Column(sa.String(255), nullable=True)
    from_host = sa.Column(sa.String(255), nullable=True)
    to_host = sa.Column(sa.String(255), nullable=True)
    state = sa.Column(sa.String(16), nullable=False)
    detail = sa.Column(sa.Text, nullable=True)
    updated_at = sa.Column(sa.DateTime, nullable=False)


class Lock(Base):
    """A row that writers of a rule over many rows take first.

    Writing the row (its generation goes up by one) holds it until the
    transaction ends, on every backend: a row lock on MariaDB and
    PostgreSQL, the database's write lock on SQLite. The writers of the
    rule so follow one another, each seeing what the last one committed,
    whatever the isolation level. ``plans``: one plan proposed, the newest.
    """

    __tablename__ = 'locks'
    name = sa.Column(sa.String(64), primary_key=True)
    generation = sa.Column(sa.Integer, nullable=False, default=0)


class Isolation(Base):
    __tablename__ = 'isolation'
    server_uuid = sa.Column(sa.String(36), primary_key=True)
    status = sa.Column(sa.String(32), nullable=False, index=True)
    host = sa.Column(sa.String(255), nullable=True, index=True)
    detail = sa.Column(sa.Text, nullable=True)
    updated_at = sa.Column(sa.DateTime, nullable=False)


class Host(Base):
    __tablename__ = 'hosts'
    hostname = sa.Column(sa.String(255), primary_key=True)
    report = sa.Column(Document, nullable=False)
    # The servers the last report listed (microversion 1.1), or NULL.
    instances = sa.Column(Document, nullable=True)
    updated_at = sa.Column(sa.DateTime, nullable=False)
