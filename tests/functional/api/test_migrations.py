"""Every migration, walked up one revision at a time on each backend.

The schema the migrations build must be the models' exactly (alembic's
own comparison finds nothing to change), and ``resq-manage`` reports and
syncs it.
"""

import io
from unittest import mock

from alembic import autogenerate
from alembic import migration as alembic_migration
import fixtures

from resq_nova.api.db import api as db_api
from resq_nova.api.db import migration
from resq_nova.api.db import models
from resq_nova.cmd import manage
from tests import base
from tests.fixtures import database


class MigrationWalkTest(base.TestCase):
    backend = 'sqlite'

    def setUp(self):
        super().setUp()
        self.db = self.useFixture(database.Database(self.backend,
                                                    self.skipTest))
        db_api.configure(connection=self.db.url)
        self.addCleanup(db_api.reset)

    def test_walk_every_revision_up(self):
        self.assertIsNone(migration.version())
        revisions = migration.revisions()
        self.assertEqual(migration.head(), revisions[-1])
        for rev in revisions:
            migration.upgrade(rev)
            self.assertEqual(rev, migration.version())
        engine = db_api.get_engine()
        with engine.connect() as conn:
            diff = autogenerate.compare_metadata(
                alembic_migration.MigrationContext.configure(conn),
                models.Base.metadata)
        self.assertEqual([], diff)
        # Walking up again changes nothing.
        migration.upgrade()
        self.assertEqual(revisions[-1], migration.version())

    def test_manage_db_sync_and_version(self):
        conf = self.useFixture(fixtures.TempDir()).join('resq-api.conf')
        with open(conf, 'w') as f:
            f.write('[database]\nconnection = %s\n' % self.db.url)
        out = io.StringIO()
        with mock.patch('sys.stdout', out):
            self.assertEqual(0, manage.main(['--config-file', conf, 'db',
                                             'version']))
            self.assertEqual(0, manage.main(['--config-file', conf, 'db',
                                             'sync']))
            self.assertEqual(0, manage.main(['--config-file', conf, 'db',
                                             'version']))
        lines = out.getvalue().splitlines()
        self.assertIn('empty (run "resq-manage db sync")', lines[0])
        self.assertEqual(['database at revision %s' % migration.head(),
                          migration.head()], lines[1:])


class MariaDBMigrationWalkTest(MigrationWalkTest):
    backend = 'mysql'


class PostgreSQLMigrationWalkTest(MigrationWalkTest):
    backend = 'postgresql'


class ManageErrorTest(base.TestCase):

    def test_unreachable_database_is_named_without_its_password(self):
        conf = self.useFixture(fixtures.TempDir()).join('resq-api.conf')
        with open(conf, 'w') as f:
            f.write('[database]\nconnection = mysql+pymysql://resq:s3cret@'
                    '127.0.0.1:1/resq\nmax_retries = 0\n')
        err = io.StringIO()
        with mock.patch('sys.stderr', err):
            self.assertEqual(1, manage.main(['--config-file', conf, 'db',
                                             'sync']))
        self.addCleanup(db_api.reset)
        self.assertIn('mysql+pymysql://resq:***@127.0.0.1:1/resq',
                      err.getvalue())
        self.assertIn('check [database] connection', err.getvalue())
        self.assertNotIn('s3cret', err.getvalue())
