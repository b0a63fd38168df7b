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
"""Schema migrations of resq-api (alembic), run by ``resq-manage db sync``.

Migrations only add (tables, columns, indexes) or widen a column's type,
so they can run before the new code is deployed: upgrade the database
first, then the API workers.
"""

import os

from alembic import command
from alembic import config as alembic_config
from alembic import migration as alembic_migration
from alembic import script as alembic_script

from resq_nova.api.db import api as db_api


def _config(connection=None):
    cfg = alembic_config.Config()
    cfg.set_main_option('script_location', os.path.join(
        os.path.dirname(os.path.abspath(__file__)), 'alembic'))
    if connection is not None:
        cfg.attributes['connection'] = connection
    return cfg


def upgrade(revision='head', engine=None):
    """Walk the schema up to ``revision``."""
    engine = engine or db_api.get_engine()
    with engine.begin() as connection:
        command.upgrade(_config(connection), revision)


def version(engine=None):
    """The revision the database is at, or None before the first sync."""
    engine = engine or db_api.get_engine()
    with engine.connect() as connection:
        return alembic_migration.MigrationContext.configure(
            connection).get_current_revision()


def revisions():
    """Every revision id, oldest first."""
    scripts = alembic_script.ScriptDirectory.from_config(_config())
    return [r.revision for r in reversed(list(scripts.walk_revisions()))]


def head():
    return alembic_script.ScriptDirectory.from_config(
        _config()).get_current_head()
