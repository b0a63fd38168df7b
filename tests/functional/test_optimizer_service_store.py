"""The optimizer with its plans in resq-api, on a live cloud.

Nova's own services (real live migrations through the scheduler and the
ResQ filter), Placement, and resq-api's whole stack in-process: each
move's state is read back from the API as an operator would.
"""

import concurrent.futures
import os
import socket
import subprocess
import sys

import fixtures

from resq_nova.optimizer import apistore
from resq_nova.optimizer import coordination
from resq_nova.optimizer import execute
from resq_nova.optimizer import service
from tests.fixtures import resq_api
from tests.functional import test_optimizer


class ServiceStoreTest(test_optimizer.OptimizerTestBase):

    def setUp(self):
        super().setUp()
        self.resq = self.useFixture(resq_api.ResQAPI())
        self.admin = self.resq.client('admin')
        self.optimizer = self.make_optimizer('ctl-1')
        for h in ('host1', 'host2', 'host3'):
            self.start_resq_compute(h)
        self.servers = [self.boot('host1', ways=2, name='a'),
                        self.boot('host2', ways=2, name='b'),
                        self.boot('host3', ways=2, name='c')]

    def make_optimizer(self, name, lock_dir=None):
        lock_dir = lock_dir or self.state_dir
        store = apistore.ServiceStore(
            self.resq.client('admin'), coordination.default_url(lock_dir),
            applier='%s:%d' % (name, id(lock_dir)))
        return service.Optimizer(self.conf, self.client, self.compute,
                                 store=store)

    def test_plan_and_apply_record_every_move(self):
        plan, where = self.optimizer.plan()
        self.assertTrue(plan['proposed'], plan['reason'])
        self.assertEqual('resq-api:/plans/%s' % plan['id'], where)
        rec = self.admin.get_plan(plan['id'])
        self.assertEqual('proposed', rec['state'])
        self.assertEqual(['pending'] * 2,
                         [a['state'] for a in rec['actions']])
        self.assertEqual(plan['snapshot_id'], self.admin.get_snapshot(
            plan['snapshot_id'])['id'])
        seen = []
        plan, _ = self.optimizer.apply(
            plan['id'], progress=lambda a: seen.append(
                [x['state'] for x in self.admin.get_plan(plan['id'])[
                    'actions']]))
        self.assertEqual(execute.APPLIED, plan['status'], plan['result'])
        rec = self.admin.get_plan(plan['id'])
        self.assertEqual('applied', rec['state'])
        self.assertEqual(['succeeded'] * 2,
                         [a['state'] for a in rec['actions']])
        # While the first move ran, the API said so.
        self.assertIn(['ongoing', 'pending'], seen)
        self.assertIn('2 of 2 moves done', rec['result'])
        # No plan file was written on this host.
        self.assertEqual([], os.listdir(os.path.join(self.state_dir,
                                                     'plans')))

    def test_two_optimizers_start_together_one_applies(self):
        plan, _ = self.optimizer.plan()
        # Different lock backends (say, two controllers configured
        # apart): only the claim in the database keeps them apart.
        other = self.make_optimizer(
            'ctl-2', self.useFixture(fixtures.TempDir()).path)

        def run(opt):
            try:
                return opt.apply(plan['id'])[0]['status']
            except execute.PlanRefused as exc:
                return 'refused: %s' % exc

        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            results = list(pool.map(run, (self.optimizer, other)))
        self.assertEqual(1, results.count(execute.APPLIED), results)
        (refused,) = [r for r in results if r != execute.APPLIED]
        self.assertIn('is applying by ctl-', refused)
        # Each server moved once.
        self.assertEqual(2, len(self.migrations))

    def test_nova_away_before_any_move_leaves_the_plan_refused(self):
        from resq_common.clients import compute as compute_mod

        plan, _ = self.optimizer.plan()

        def away(*args, **kwargs):
            raise compute_mod.ComputeUnavailable(reason='connection refused')

        self.useFixture(fixtures.MockPatchObject(
            self.optimizer.compute, 'list_compute_services',
            side_effect=away))
        self.assertRaises(compute_mod.ComputeUnavailable,
                          self.optimizer.apply, plan['id'])
        rec = self.admin.get_plan(plan['id'])
        # Not "applying" under a lease nobody renews: ended (resq-api's
        # "failed", as for a refused plan), and why.
        self.assertEqual('failed', rec['state'], rec)
        self.assertIn('not started', rec['result'])
        self.assertIn('connection refused', rec['result'])
        self.assertEqual([], self.migrations)

    def test_cancel_stops_before_the_next_move(self):
        plan, _ = self.optimizer.plan()

        def cancel_after_first(action):
            if action.get('outcome') == execute.DONE:
                self.admin.cancel_plan(plan['id'])

        plan, _ = self.optimizer.apply(plan['id'],
                                       progress=cancel_after_first)
        self.assertEqual(execute.CANCELLED, plan['status'])
        self.assertEqual(1, len(self.migrations))
        rec = self.admin.get_plan(plan['id'])
        self.assertEqual('cancelled', rec['state'])
        self.assertEqual(['succeeded', 'cancelled'],
                         [a['state'] for a in rec['actions']])

    def test_a_crashed_apply_is_closed_honestly(self):
        plan, _ = self.optimizer.plan()
        # An optimizer claimed it (before leases: no lease, so expired),
        # started the first move and died.
        proc = subprocess.Popen([sys.executable, '-c', 'pass'])
        proc.wait()
        self.admin.apply_plan(plan['id'], '%s:%d' % (socket.gethostname(),
                                                     proc.pid))
        self.admin.set_action_state(plan['id'], 0, 'ongoing')
        results = self.optimizer.recover()
        self.assertEqual(1, len(results))
        self.assertIn('interrupted', results[0])
        self.assertIn('0 of 2 moves done', results[0])
        rec = self.admin.get_plan(plan['id'])
        self.assertEqual('failed', rec['state'])
        first, second = rec['actions']
        # Nova never moved it (no migration): the ongoing move failed,
        # saying so and where the server is.
        self.assertEqual('failed', first['state'])
        self.assertIn('not started: Nova has no live migration of it',
                      first['detail'])
        self.assertIn('the server is ACTIVE on %s' % first['from_host'],
                      first['detail'])
        self.assertEqual('cancelled', second['state'])
        # Nothing left to close.
        self.assertEqual([], self.optimizer.recover())

    def test_a_plan_under_a_live_lease_is_not_judged(self):
        plan, _ = self.optimizer.plan()
        self.admin.apply_plan(plan['id'], 'other-controller:1', lease=600)
        self.assertEqual([], self.optimizer.recover())
        self.assertEqual('applying', self.admin.get_plan(plan['id'])[
            'state'])
