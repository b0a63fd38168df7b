"""``resq-manage db prune`` on each backend, through its command line.

Plans and snapshots are written by the objects resq-api uses, dated by
hand, then pruned by ``resq-manage``'s ``main`` as cron runs it.
"""

import datetime
import io
from unittest import mock

import fixtures
import sqlalchemy as sa

from resq_nova.api import context as context_mod
from resq_nova.api.db import api as db_api
from resq_nova.api.db import models
from resq_nova.api.objects import plan as plan_obj
from resq_nova.cmd import manage
from tests import base
from tests.fixtures import database


class ManagePruneTest(base.TestCase):
    backend = 'sqlite'

    def setUp(self):
        super().setUp()
        self.db = self.useFixture(database.Migrated(self.backend,
                                                    self.skipTest))
        self.conf = self.useFixture(fixtures.TempDir()).join('resq-api.conf')
        with open(self.conf, 'w') as f:
            f.write('[database]\nconnection = %s\n' % self.db.url)
        self.ctx = context_mod.RequestContext(is_admin=True)
        self.now = datetime.datetime.now(
            datetime.timezone.utc).replace(tzinfo=None, microsecond=0)

    def prune(self, *args):
        out, err = io.StringIO(), io.StringIO()
        with mock.patch('sys.stdout', out), mock.patch('sys.stderr', err):
            rc = manage.main(['--config-file', self.conf, 'db', 'prune']
                             + list(args))
        return rc, out.getvalue(), err.getvalue()

    def age(self, table, key, days):
        """Date row ``key`` of ``table`` ``days`` ago."""
        when = self.now - datetime.timedelta(days=days)
        with db_api.get_engine().begin() as conn:
            conn.execute(sa.update(table).where(table.id == key)
                         .values(created_at=when))

    def ids(self, table):
        with db_api.get_engine().connect() as conn:
            return set(conn.execute(sa.select(table.id)).scalars())

    def fill(self):
        """Six snapshots and four plans, the newest one being applied.

        Dated (days ago): s1 30, s2 20, s6 25, others a few minutes to
        hours; p1 30 (on s1), p2 20 (on s2), p3 0.1 (s3), p4 0 (s4,
        applying). s5 and s6 are used by no plan.
        """
        for n, days in ((1, 30), (2, 20), (3, 0.1), (4, 0), (5, 0.05),
                        (6, 25)):
            plan_obj.create_snapshot(self.ctx, 's%d' % n, {'hosts': []})
            self.age(models.Snapshot, 's%d' % n, days)
        for n, days in ((1, 30), (2, 20), (3, 0.1), (4, 0)):
            plan_obj.create(self.ctx, 'p%d' % n, 's%d' % n, {'moves': [
                {'uuid': '00000000-0000-0000-0000-00000000000%d' % n,
                 'from_host': 'h1', 'to_host': 'h2'}]})
            self.age(models.Plan, 'p%d' % n, days)
        plan_obj.claim(self.ctx, 'p4', 'optimizer-1')

    def test_prune_removes_finished_plans_old_or_past_keep(self):
        self.fill()
        rc, out, err = self.prune('--keep', '3', '--days', '14')
        self.assertEqual(0, rc, err)
        self.assertEqual('', err)
        # p1 is past the newest 3, p2 is 20 days old: both go with their
        # actions. p3 is recent and p4 is being applied: they stay.
        # Snapshots: s1, s2 lost their plans and are old, s6 was never
        # used and is old; s5 is unused but recent and among the newest 3.
        self.assertEqual('pruned 2 plan(s) and 3 snapshot(s)\n', out)
        self.assertEqual({'p3', 'p4'}, self.ids(models.Plan))
        self.assertEqual({'s3', 's4', 's5'}, self.ids(models.Snapshot))
        with db_api.get_engine().connect() as conn:
            self.assertEqual({'p3', 'p4'}, set(conn.execute(
                sa.select(models.PlanAction.plan_id)).scalars()))
        self.assertEqual('applying', plan_obj.get(self.ctx, 'p4')['state'])
        # Nothing more to do the second time.
        rc, out, err = self.prune('--keep', '3', '--days', '14')
        self.assertEqual((0, 'pruned 0 plan(s) and 0 snapshot(s)\n'),
                         (rc, out))

    def test_prune_keep_one_leaves_unfinished_plans_and_their_snapshots(self):
        self.fill()
        rc, out, err = self.prune('--keep', '1')
        self.assertEqual(0, rc, err)
        self.assertEqual('pruned 3 plan(s) and 5 snapshot(s)\n', out)
        self.assertEqual({'p4'}, self.ids(models.Plan))
        self.assertEqual({'s4'}, self.ids(models.Snapshot))

    def test_prune_of_an_empty_database(self):
        rc, out, err = self.prune()
        self.assertEqual((0, 'pruned 0 plan(s) and 0 snapshot(s)\n', ''),
                         (rc, out, err))

    def test_bad_options_are_refused(self):
        err = io.StringIO()
        with mock.patch('sys.stderr', err):
            self.assertRaises(SystemExit, manage.main, [
                '--config-file', self.conf, 'db', 'prune', '--keep', '0'])
        self.assertIn('must be a positive whole number', err.getvalue())


class MariaDBManagePruneTest(ManagePruneTest):
    backend = 'mysql'


class PostgreSQLManagePruneTest(ManagePruneTest):
    backend = 'postgresql'
