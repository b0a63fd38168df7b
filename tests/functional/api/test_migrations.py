"""Every migration, walked up one revision at a time on each backend.

The schema the migrations build must be the models' exactly (alembic's
own comparison finds nothing to change), and ``resq-manage`` reports and
syncs it.
"""

import datetime
import io
import json
import os
import struct
from unittest import mock

from alembic import autogenerate
from alembic import migration as alembic_migration
import fixtures
import sqlalchemy as sa

from resq_nova.api import context
from resq_nova.api.db import api as db_api
from resq_nova.api.db import migration
from resq_nova.api.db import models
from resq_nova.api.objects import host as host_obj
from resq_nova.cmd import manage
from tests import base
from tests.fixtures import database


class MigrationWalkTest(base.TestCase):
    backend = 'sqlite'

    def setUp(self):
        super().setUp()
        self.db = self.useFixture(database.Migrated(
            self.backend, self.skipTest, upgrade=False))

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

    def test_upgrade_keeps_stored_numbers(self):
        # A term stored at the first revision, where MariaDB's columns were
        # single precision: the upgrade to double keeps what was stored
        # (there, 12.3456789 rounded to single precision), and from then
        # on a number comes back as sent.
        sent = 12.3456789
        single = struct.unpack('f', struct.pack('f', sent))[0]
        migration.upgrade(migration.revisions()[0])
        when = datetime.datetime(2026, 1, 1)
        row = {'name': 't', 'project_id': 'p', 'profile_id': 'fw',
               'slo': 'reserved', 'latency_p95_us': 80.5, 'flavors': '[]',
               'servers': '[]', 'status': 'admitted', 'generation': 0,
               'created_at': when, 'updated_at': when}
        terms = sa.table('slo_terms', *(sa.column(c) for c in list(row) + [
            'uuid', 'throughput_mpps']))
        engine = db_api.get_engine()
        with engine.begin() as conn:
            conn.execute(sa.insert(terms).values(
                uuid='old', throughput_mpps=sent, **row))
        migration.upgrade()
        with engine.begin() as conn:
            conn.execute(sa.insert(terms).values(
                uuid='new', throughput_mpps=sent, **row))
            got = dict(conn.execute(sa.select(
                terms.c.uuid, terms.c.throughput_mpps)).all())
            lock = conn.execute(sa.text(
                "SELECT generation FROM locks WHERE name = 'plans'")).all()
        self.assertIn(got['old'], (sent, single))
        self.assertEqual(sent, got['new'])
        self.assertEqual([(0,)], lock)

    def test_upgrade_keeps_host_reports_without_servers(self):
        # A host report stored before the servers had a column of their
        # own keeps its domains and lists no servers (microversion 1.1
        # shows null); a report stored after holds its servers.
        revisions = migration.revisions()
        migration.upgrade(revisions[revisions.index('3714af25ce43') - 1])
        hosts = sa.table('hosts', sa.column('hostname'),
                         sa.column('report'), sa.column('updated_at'))
        stored = {'domains': [{'id': 0, 'ways_total': 18, 'ways_used': 4}],
                  'agent_version': '1.0'}
        engine = db_api.get_engine()
        with engine.begin() as conn:
            conn.execute(sa.insert(hosts).values(
                hostname='cmp-old', report=json.dumps(stored),
                updated_at=datetime.datetime(2026, 1, 1)))
        migration.upgrade()
        ctx = context.RequestContext()
        old = host_obj.get(ctx, 'cmp-old')
        self.assertEqual(stored['domains'], old['domains'])
        self.assertIsNone(old['instances'])
        servers = [{'server_uuid': 'aaaaaaaa-0000-4000-8000-000000000001',
                    'domain': 0, 'ways': 4, 'llc_occupancy_bytes': 1 << 20,
                    'mbm_total_bytes_per_s': None}]
        host_obj.report(ctx, 'cmp-old', stored, servers)
        self.assertEqual(servers, host_obj.get(ctx, 'cmp-old')['instances'])

    def test_manage_db_sync_and_version(self):
        conf = self.useFixture(fixtures.TempDir()).join('resq-api.conf')
        with open(conf, 'w') as f:
            f.write('[database]\nconnection = %s\n' % self.db.url)
        # An empty database (connecting makes the SQLite file: a missing
        # one is refused).
        self.assertIsNone(migration.version())
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
        self.assertEqual(['database %s at revision %s' % (
            manage._masked(self.db.url), migration.head()),
            migration.head()], lines[1:])

    def manage(self, *args):
        conf = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'resq-api.conf')
        with open(conf, 'w') as f:
            f.write('[database]\nconnection = %s\n' % self.db.url)
        out, err = io.StringIO(), io.StringIO()
        with mock.patch('sys.stdout', out), mock.patch('sys.stderr', err):
            rc = manage.main(['--config-file', conf] + list(args))
        return rc, out.getvalue(), err.getvalue()

    def test_manage_db_check_behind_at_and_ahead(self):
        first, head = migration.revisions()[0], migration.head()
        # (Connecting makes the SQLite file: a missing one is refused.)
        self.assertIsNone(migration.version())
        rc, out, err = self.manage('db', 'check')
        self.assertEqual(manage.FAILURE, rc, err)
        self.assertIn('has no resq-api schema (empty)', out)
        self.assertEqual(0, self.manage('db', 'sync', '--revision',
                                        first)[0])
        rc, out, err = self.manage('db', 'check')
        self.assertEqual(manage.WARNING, rc, err)
        self.assertIn('at revision %s, behind this package\'s newest, %s'
                      % (first, head), out)
        self.assertIn('Warning: run "resq-manage db sync"', out)
        rc, out, err = self.manage('db', 'version')
        self.assertEqual('%s (behind this package\'s newest, %s: run '
                         '"resq-manage db sync")\n' % (first, head), out)
        rc, out, err = self.manage('db', 'sync')
        self.assertEqual(0, rc, err)
        # It says which database it walked.
        self.assertEqual('database %s at revision %s\n' % (
            manage._masked(self.db.url), head), out)
        rc, out, err = self.manage('db', 'check')
        self.assertEqual((manage.SUCCESS, ''), (rc, err))
        self.assertIn('Success: nothing to do', out)
        self._stamp('0123456789ab')
        rc, out, err = self.manage('db', 'check')
        self.assertEqual(manage.WARNING, rc, err)
        self.assertIn('at revision 0123456789ab, which this package does '
                      'not know (its newest is %s): ahead' % head, out)
        rc, out, err = self.manage('db', 'version')
        self.assertEqual(0, rc, err)
        self.assertTrue(out.startswith(
            '0123456789ab (not a revision this package knows: its newest '
            'is %s' % head), out)

    def _stamp(self, revision):
        """The database at a revision of a newer release (a rollback)."""
        with db_api.get_engine().begin() as conn:
            conn.execute(sa.text('UPDATE alembic_version SET version_num = '
                                 ':r'), {'r': revision})

    def test_manage_db_sync_refusals_are_one_line(self):
        head = migration.head()
        rc, out, err = self.manage('db', 'sync', '--revision', 'typo')
        self.assertEqual((2, ''), (rc, out))
        self.assertEqual(
            ['resq-manage: --revision typo is not a revision of this package '
             '(its revisions, oldest first: %s; the newest, %s, is "head"); '
             'give one of them, or no --revision for the newest'
             % (', '.join(migration.revisions()), head)], err.splitlines())
        self.assertIsNone(migration.version())
        self.assertEqual(0, self.manage('db', 'sync')[0])
        first = migration.revisions()[0]
        rc, out, err = self.manage('db', 'sync', '--revision', first)
        self.assertEqual(1, rc)
        self.assertEqual(1, len(err.splitlines()), err)
        self.assertIn('at revision %s, past --revision %s' % (head, first),
                      err)
        # The rollback case: the schema of a newer release.
        self._stamp('0123456789ab')
        rc, out, err = self.manage('db', 'sync')
        self.assertEqual((1, ''), (rc, out))
        self.assertEqual(1, len(err.splitlines()), err)
        self.assertIn('the database is at revision 0123456789ab, which this '
                      'package does not know (its newest is %s)' % head, err)
        self.assertEqual('0123456789ab', migration.version())


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
