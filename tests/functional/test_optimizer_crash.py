"""The applier killed at each step of a move, on Nova's own services.

The applier is stopped by an exception no handler takes (a
``BaseException``, as a kill leaves nothing to run) at a chosen step:
before the request is sent to Nova, after Nova accepted it but before the
record says so, while Nova migrates, after the migration completed but
before the record says so. Then a fresh optimizer recovers, once the
crashed one's lease expired: each move must be recorded as what Nova did,
a migration still running waited for, in the file store and in resq-api.
"""

import datetime
import json
import os
import threading
import time

import fixtures

from resq_common.clients import resq as resq_client
from resq_nova.optimizer import apistore
from resq_nova.optimizer import coordination
from resq_nova.optimizer import execute
from resq_nova.optimizer import service
from tests.fixtures import resq_api
from tests.functional import test_optimizer

LEASE = 3.0


class Crash(BaseException):
    """The applier dies here."""


class CrashTestBase:
    """The crash steps, run with each store below (a mix-in, not a test).

    Mixed in before :class:`test_optimizer.OptimizerTestBase`; not a
    TestCase itself, so the runner collects only the stores' classes
    (before, the template ran and skipped: five skips in every run).
    """

    def setUp(self):
        super().setUp()
        self.conf.set_override('applier_lease', LEASE, 'resq_optimizer')
        self.hung = {}
        for h in ('host1', 'host2', 'host3'):
            self.start_resq_compute(h)
        self.servers = [self.boot('host1', ways=2, name='a'),
                        self.boot('host2', ways=2, name='b'),
                        self.boot('host3', ways=2, name='c')]
        self.optimizer = self.make_optimizer()
        self.plan, _ = self.optimizer.plan()
        self.assertTrue(self.plan['proposed'], self.plan['reason'])
        self.first = self.plan['moves'][0]

    def make_optimizer(self):
        return service.Optimizer(self.conf, self.client, self.compute)

    def _migrate_stub(self, domain, destination, params, flags):
        """Hang a migration, keeping what it needs to finish later."""
        uuid = domain.UUIDString()
        super()._migrate_stub(domain, destination, params, flags)
        if uuid in self.hang_migration_of:
            self.hung[uuid] = (domain, params, self.migrations[-1][1][0])

    def finish_hung(self, uuid):
        domain, params, dest = self.hung[uuid]
        self.computes[dest].driver._host.get_connection().createXML(
            params['destination_xml'],
            'fake-createXML-doesnt-care-about-flags')
        domain.complete_job()

    def crash_at(self, outcome):
        def progress(action):
            if action.get('outcome') == outcome:
                raise Crash(outcome)
        return progress

    def crash_apply(self, **kwargs):
        self.assertRaises(Crash, self.optimizer.apply, self.plan['id'],
                          **kwargs)

    def recover(self):
        """A fresh optimizer closes the plan once the lease expired."""
        time.sleep(LEASE + 1)
        return self.make_optimizer().recover()

    # -- what each store says -------------------------------------------------
    def moves(self):
        """``[(state, detail)]`` of each move, as the store records it."""
        raise NotImplementedError

    def assert_closed(self, first, detail):
        (state0, detail0), (state1, _) = self.moves()
        self.assertEqual(first, state0)
        self.assertIn(detail, detail0 or '')
        self.assertEqual(self.not_run, state1)
        # Closed once; re-applying it is refused and changes nothing.
        self.assertEqual([], self.make_optimizer().recover())
        self.assertRaises(execute.PlanRefused, self.make_optimizer().apply,
                          self.plan['id'])
        self.assertEqual([(state0, detail0)], self.moves()[:1])

    # -- the applier killed at each step -------------------------------------
    def test_killed_before_the_request_is_sent(self):
        self.crash_apply(progress=self.crash_at(execute.REQUESTED))
        self.assertEqual('requested', self.moves()[0][0])
        (result,) = self.recover()
        self.assertIn('interrupted', result)
        self.assertIn('0 of 2 moves done', result)
        self.assertEqual([], self.migrations)
        self.assert_closed(self.not_run, 'not started: Nova has no live '
                           'migration of it to %s' % self.first['to_host'])

    def test_killed_after_nova_accepted_before_the_record(self):
        real = self.compute.live_migrate

        def sent_then_die(server_id, host):
            real(server_id, host)
            raise Crash('sent')

        self.useFixture(fixtures.MockPatchObject(
            self.compute, 'live_migrate', side_effect=sent_then_die))
        self.crash_apply()
        # The record cannot tell whether Nova has it: requested.
        self.assertEqual('requested', self.moves()[0][0])
        (result,) = self.recover()
        self.assertIn('1 of 2 moves done', result)
        self.assertEqual(self.first['to_host'],
                         self.host_of(self.server(self.first['uuid'])))
        self.assert_closed(self.done, '')

    def test_killed_while_nova_migrates(self):
        uuid = self.first['uuid']
        self.hang_migration_of.add(uuid)
        seen = []
        real = self.compute.live_migrate

        def send(server_id, host):
            seen.append('sent')
            return real(server_id, host)

        self.useFixture(fixtures.MockPatchObject(
            self.compute, 'live_migrate', side_effect=send))

        def progress(action):
            seen.append(action.get('outcome'))
            if action.get('outcome') == 'started':
                raise Crash('started')

        self.crash_apply(progress=progress)
        # "started" only once Nova accepted the request.
        self.assertEqual([execute.REQUESTED, 'sent', 'started'], seen)
        self.assertEqual('ongoing', self.moves()[0][0])
        time.sleep(LEASE + 1)
        for _ in range(50):
            if uuid in self.hung:
                break
            time.sleep(0.1)
        self.assertIn(self.compute.live_migrations(uuid)[0]['status'],
                      ('queued', 'preparing', 'running'))
        # The migration ends while recovery watches it: done, not failed.
        timer = threading.Timer(2.0, self.finish_hung, (uuid,))
        timer.start()
        self.addCleanup(timer.cancel)
        (result,) = self.make_optimizer().recover()
        self.assertIn('1 of 2 moves done', result)
        self.assertEqual('completed',
                         self.compute.live_migrations(uuid)[0]['status'])
        self.assert_closed(self.done, '')

    def test_killed_after_the_migration_completed_before_the_record(self):
        store = self.optimizer.store
        real = store.record

        def record(plan, action):
            if action.get('outcome') == execute.DONE:
                raise Crash('done')
            return real(plan, action)

        self.useFixture(fixtures.MockPatchObject(store, 'record',
                                                 side_effect=record))
        self.crash_apply()
        # Its own record never came; but the other move, running beside
        # it, may have written the plan after the outcome was known in
        # memory (the file store writes every action at once): either is
        # true, and recovery ends the same.
        self.assertIn(self.moves()[0][0], ('ongoing', self.done))
        (result,) = self.recover()
        self.assertIn('1 of 2 moves done', result)
        self.assert_closed(self.done, '')

    def test_a_failed_migration_is_failed(self):
        self.fail_migration_of.add(self.first['uuid'])
        self.crash_apply(progress=self.crash_at('started'))
        (result,) = self.recover()
        self.assertIn('0 of 2 moves done', result)
        self.assert_closed(self.failed, 'on %s; migration error'
                           % self.first['from_host'])


class FileStoreCrashTest(CrashTestBase,
                         test_optimizer.OptimizerTestBase):
    done, failed, not_run = 'done', 'failed', 'not-run'

    def path(self):
        return os.path.join(self.state_dir, 'plans',
                            self.plan['id'] + '.json')

    def doc(self):
        with open(self.path()) as f:
            return json.load(f)

    def moves(self):
        return [(a['outcome'], a.get('detail'))
                for a in self.doc()['actions']]

    def assert_closed(self, first, detail):
        super().assert_closed(first, detail)
        doc = self.doc()
        self.assertEqual(execute.INTERRUPTED, doc['status'])
        self.assertIn('interrupted: the optimizer applying it (%s) stopped'
                      % coordination.member_id(), doc['result'])
        self.assertEqual('not started: the optimizer applying the plan '
                         'stopped', doc['actions'][1]['detail'])

    def set_lease(self, seconds):
        doc = self.doc()
        doc['lease_expires'] = (
            datetime.datetime.now(datetime.timezone.utc)
            + datetime.timedelta(seconds=seconds)).isoformat()
        with open(self.path(), 'w') as f:
            json.dump(doc, f)

    def test_lease_live_is_left_expired_is_taken_over(self):
        self.crash_apply(progress=self.crash_at(execute.REQUESTED))
        # Still held (its applier, as far as anyone knows, works on it).
        self.set_lease(600)
        self.assertEqual([], self.make_optimizer().recover())
        self.assertEqual('applying', self.doc()['status'])
        # A new apply does not rewrite it either.
        exc = self.assertRaises(execute.PlanRefused,
                                self.make_optimizer().apply, self.plan['id'])
        self.assertIn('being applied', str(exc))
        self.assertEqual('applying', self.doc()['status'])
        self.set_lease(-1)
        (result,) = self.make_optimizer().recover()
        self.assertIn('interrupted', result)

    def test_the_lease_is_renewed_while_the_applier_works(self):
        leases = []

        def progress(action):
            if action.get('outcome') == execute.DONE:
                leases.append(self.doc()['lease_expires'])
                time.sleep(LEASE / 3 + 1.5)
                leases.append(self.doc()['lease_expires'])

        plan, _ = self.optimizer.apply(self.plan['id'], progress=progress,
                                       concurrency=1)
        self.assertEqual(execute.APPLIED, plan['status'], plan['result'])
        self.assertLess(leases[0], leases[1])


class ServiceStoreCrashTest(CrashTestBase,
                            test_optimizer.OptimizerTestBase):
    done, failed, not_run = 'succeeded', 'failed', 'cancelled'

    def setUp(self):
        self.counter = 0
        self.resq = None
        super().setUp()

    def make_optimizer(self):
        if self.resq is None:
            self.resq = self.useFixture(resq_api.ResQAPI())
            self.admin = self.resq.client('admin')
        self.counter += 1
        store = apistore.ServiceStore(
            self.resq.client('admin'),
            coordination.default_url(self.state_dir),
            applier='ctl-%d:%d' % (self.counter, os.getpid()))
        return service.Optimizer(self.conf, self.client, self.compute,
                                 store=store)

    def moves(self):
        return [(a['state'], a['detail'])
                for a in self.admin.get_plan(self.plan['id'])['actions']]

    def assert_closed(self, first, detail):
        super().assert_closed(first, detail)
        rec = self.admin.get_plan(self.plan['id'])
        self.assertEqual('failed', rec['state'])
        self.assertIn('interrupted: the optimizer applying it (ctl-1:%d) '
                      'stopped' % os.getpid(), rec['result'])

    def test_lease_not_pid_decides(self):
        # A live lease of an applier whose pid is gone: left alone.
        self.admin.apply_plan(self.plan['id'], 'ctl-9:999999999',
                              lease=600)
        self.assertEqual([], self.make_optimizer().recover())
        self.assertEqual('applying',
                         self.admin.get_plan(self.plan['id'])['state'])
        # Only its applier renews it; no one takes it over early.
        self.assertRaises(resq_client.Conflict, self.admin.heartbeat_plan,
                          self.plan['id'], 'ctl-8:1', 60)
        self.assertRaises(resq_client.Conflict, self.admin.take_over_plan,
                          self.plan['id'], 'ctl-8:1', 60)

    def test_reused_pid_changes_nothing(self):
        # The applier's pid is alive (this process: a reused pid); once
        # its lease expired the plan is closed all the same.
        self.admin.apply_plan(self.plan['id'], 'ctl-1:%d' % os.getpid(),
                              lease=1)
        time.sleep(2)
        (result,) = self.make_optimizer().recover()
        self.assertIn('interrupted', result)
        self.assertEqual(['cancelled', 'cancelled'],
                         [s for s, _ in self.moves()])
