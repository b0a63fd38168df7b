"""Writers run again when a race made the database refuse them.

On a SQLite file: a writer that meets a deadlock runs again (each attempt
its own transaction, what the refused one wrote rolled back), one that
lost an insert runs once more, and a duplicate left is the API's 409.
"""

from unittest import mock

import fixtures
from oslo_db import exception as db_exc
import sqlalchemy as sa

from resq_nova.api import context
from resq_nova.api.db import api as db_api
from resq_nova.api.db import migration
from resq_nova.api.db import models
from resq_nova.api import errors
from resq_nova.api.objects import host as host_obj
from resq_nova.api.objects import plan as plan_obj
from tests import base


class WriterRetryTest(base.TestCase):

    def setUp(self):
        super().setUp()
        path = self.useFixture(fixtures.TempDir()).join('resq.sqlite')
        db_api.configure(connection='sqlite:///%s' % path)
        self.addCleanup(db_api.reset)
        migration.upgrade()
        self.ctx = context.RequestContext(project_id='p', is_admin=True)
        # oslo.db sleeps between retries; not here.
        self.useFixture(fixtures.MockPatch('oslo_db.api.time.sleep'))

    def hosts(self):
        with db_api.get_engine().connect() as conn:
            return conn.execute(sa.select(models.Host.hostname)).all()

    def test_deadlock_runs_the_transaction_again(self):
        attempts = []

        @db_api.writer
        def write(ctx, name):
            ctx.session.add(models.Host(hostname=name, report='{}',
                                        updated_at=plan_obj.util.now()))
            ctx.session.flush()
            attempts.append(name)
            if len(attempts) < 3:
                raise db_exc.DBDeadlock()
            return name

        self.assertEqual('h', write(self.ctx, 'h'))
        self.assertEqual(3, len(attempts))
        # The refused attempts' rows were rolled back: one row.
        self.assertEqual([('h',)], self.hosts())

    def test_deadlocks_give_up_after_five_retries(self):
        calls = mock.Mock(side_effect=db_exc.DBDeadlock())

        @db_api.writer
        def write(ctx):
            calls()

        self.assertRaises(db_exc.DBDeadlock, write, self.ctx)
        self.assertEqual(6, calls.call_count)

    def test_sqlite_refusing_a_writer_runs_it_again(self):
        calls = mock.Mock(side_effect=[
            db_exc.DBError('(sqlite3.OperationalError) database is locked'),
            'done'])

        @db_api.writer
        def write(ctx):
            return calls()

        self.assertEqual('done', write(self.ctx))

    def test_lost_insert_runs_once_more_and_answers_from_its_check(self):
        # Another request inserted the host after this one's UPDATE found
        # no row: the INSERT is a duplicate, and the transaction runs again.
        with db_api.get_engine().begin() as conn:
            conn.execute(sa.insert(models.Host).values(
                hostname='cn1', report='{"domains": [1]}',
                updated_at=plan_obj.util.now()))
        real_execute = sa.engine.Connection.execute
        updates = []

        def execute(conn, statement, *args, **kwargs):
            result = real_execute(conn, statement, *args, **kwargs)
            if statement is host_obj._UPDATE:
                updates.append(result.rowcount)
                if len(updates) == 1:
                    return mock.Mock(rowcount=0)
            return result

        with mock.patch.object(sa.engine.Connection, 'execute', execute):
            rec, was_created = host_obj.report(self.ctx, 'cn1',
                                               {'domains': []})
        # The second attempt's UPDATE found the row and replaced its report.
        self.assertEqual(2, len(updates))
        self.assertFalse(was_created)
        self.assertEqual([], rec['domains'])
        self.assertEqual([], host_obj.get(self.ctx, 'cn1')['domains'])

    def test_duplicate_left_is_a_conflict(self):
        calls = mock.Mock(side_effect=db_exc.DBDuplicateEntry(['id']))

        @db_api.writer
        def write(ctx):
            calls()

        exc = self.assertRaises(db_exc.DBDuplicateEntry, write, self.ctx)
        self.assertEqual(2, calls.call_count)
        resp = errors.to_response(exc, 'req-1')
        self.assertEqual(409, resp.status_int)
        error = resp.json['errors'][0]
        self.assertEqual('resq.duplicate', error['code'])
        self.assertIn('a record with the same id already exists',
                      error['detail'])

    def test_plan_lock_row_is_seeded_again_when_missing(self):
        with db_api.get_engine().begin() as conn:
            conn.execute(sa.delete(models.Lock))
        plan_obj.create_snapshot(self.ctx, 's1', {'hosts': []})
        plan_obj.create(self.ctx, 'p1', 's1', {'moves': []})
        plan_obj.create(self.ctx, 'p2', 's1', {'moves': []})
        with db_api.get_engine().connect() as conn:
            self.assertEqual([('plans', 1)], conn.execute(sa.select(
                models.Lock.name, models.Lock.generation)).all())
        self.assertEqual('superseded', plan_obj.get(self.ctx, 'p1')['state'])


class SQLiteLockedTest(base.TestCase):
    """SQLite's lock wait ran out: retried, then a 503, never a 500."""

    def locked(self):
        import sqlite3

        return sa.exc.OperationalError(
            'UPDATE slo_terms ...', {},
            sqlite3.OperationalError('database is locked'))

    def test_the_raw_driver_error_is_busy_and_unavailable(self):
        self.assertTrue(db_api.unavailable(self.locked()))
        self.assertTrue(db_api._sqlite_busy(self.locked()))

    def test_other_operational_errors_are_neither(self):
        import sqlite3

        other = sa.exc.OperationalError(
            'SELECT', {}, sqlite3.OperationalError('no such table: x'))
        self.assertFalse(db_api.unavailable(other))
        self.assertFalse(db_api._sqlite_busy(other))
