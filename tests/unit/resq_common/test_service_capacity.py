"""Each remote service's hang costs only that service.

Placement, Nova and resq-api calls run on a bounded pool per service: a
service whose calls hang holds its own workers, fails its further calls at
once, and leaves the other services' calls alone.
"""

import threading

from resq_common.clients import compute as compute_client
from resq_common.clients import placement as placement_client
from resq_common.clients import resq as resq_client
from resq_common.conf import clients
from resq_common import deadline
from tests import base
from tests.fixtures import hung


def _wait_for(predicate, seconds=10):
    ended = threading.Event()
    for _ in range(int(seconds / 0.02)):
        if predicate():
            return True
        ended.wait(0.02)
    return predicate()


class CapacityTest(base.TestCase):
    """One service's bounded pool and its abandoned calls."""

    def setUp(self):
        super().setUp()
        self.release = threading.Event()
        self.addCleanup(self.release.set)
        self.cap = deadline.Capacity('thing', 2)
        self.addCleanup(self.cap.shutdown)

    def _hang(self):
        """Submit a call that hangs until released; abandon it."""
        started = threading.Event()
        future = self.cap.submit(
            lambda: (started.set(), self.release.wait()))
        self.assertTrue(started.wait(10))
        self.cap.abandon(future)
        return future

    def test_calls_run_and_answer(self):
        self.assertEqual(5, self.cap.submit(lambda a, b: a + b, 2,
                                            b=3).result(10))
        self.assertEqual(0, self.cap.stuck())

    def test_a_queued_call_abandoned_is_dropped_not_stuck(self):
        self._hang()
        self._hang()
        ran = []
        queued = self.cap._pool.submit(ran.append, 1)
        self.cap.abandon(queued)
        self.assertTrue(queued.cancelled())
        self.assertEqual(2, self.cap.stuck())
        self.release.set()
        self.assertTrue(_wait_for(lambda: self.cap.stuck() == 0))
        self.assertEqual([], ran)

    def test_every_worker_stuck_refuses_at_once_until_one_returns(self):
        self._hang()
        # One worker left: calls still run.
        self.assertEqual(1, self.cap.submit(lambda: 1).result(10))
        self._hang()
        ran = []
        exc = self.assertRaises(deadline.Saturated, self.cap.submit,
                                ran.append, 1)
        self.assertIn('thing: 2 calls hang past their deadline',
                      str(exc))
        self.assertIn('holding all 2 of its workers', str(exc))
        self.assertEqual([], ran)
        self.release.set()
        self.assertTrue(_wait_for(lambda: self.cap.stuck() == 0))
        self.cap.submit(ran.append, 1).result(10)
        self.assertEqual([1], ran)

    def test_another_capacity_is_not_affected(self):
        self._hang()
        self._hang()
        other = deadline.Capacity('other', 1)
        self.addCleanup(other.shutdown)
        self.assertRaises(deadline.Saturated, self.cap.submit, int)
        self.assertEqual(3, other.submit(lambda: 3).result(10))

    def test_shutdown_ends_idle_workers(self):
        self.cap.submit(int).result(10)
        self.cap.shutdown()
        self.assertTrue(_wait_for(lambda: not any(
            t.is_alive() for t in self.cap._pool._threads)))


class ServicePoolsTest(base.TestCase):
    """The registry: one pool per remote service, made lazily."""

    def test_one_pool_per_service(self):
        placement = deadline.capacity('placement', 3)
        self.assertIs(placement, deadline.capacity('placement', 9))
        self.assertEqual(3, placement.workers)
        self.assertIsNot(placement, deadline.capacity('compute', 3))

    def test_reset_forgets_the_pools(self):
        placement = deadline.capacity('placement', 3)
        deadline.reset()
        self.assertIsNot(placement, deadline.capacity('placement', 3))

    def test_the_pool_takes_its_size_from_its_section(self):
        self.flags(clients.PLACEMENT, endpoint_override='http://p.test',
                   request_workers=3)
        self.flags(clients.RESQ_API, endpoint_override='http://r.test')
        placement_client.PlacementClient.from_conf(self.conf)
        resq_client.ResQClient.from_conf(self.conf)
        self.assertEqual(3, deadline.capacity('placement', 1).workers)
        self.assertEqual(clients.REMOTE_WORKERS,
                         deadline.capacity('resq', 1).workers)

    def test_a_call_without_a_loaded_adapter_gets_the_default(self):
        adapter = clients.noauth_adapter('http://127.0.0.1:9', 'compute')
        self.assertRaises(compute_client.ComputeUnavailable,
                          compute_client.ComputeClient(adapter).find_flavor,
                          'small')
        self.assertEqual(clients.REMOTE_WORKERS,
                         deadline.capacity('compute', 1).workers)


class _Adapter:
    """Enough of a keystoneauth adapter for clients.call."""

    def __init__(self, service_type, answer=None, timeout=0.2):
        self.service_type = service_type
        self.timeout = timeout
        self.answer = answer
        self.release = threading.Event()
        self.sent = []

    def request(self, url, method, **kwargs):
        self.sent.append((method, url))
        if self.answer is None:
            self.release.wait()
        return self.answer


class _Response:
    status_code = 200


class ClientCallTest(base.TestCase):
    """clients.call on a saturated service, and on the others."""

    def test_a_saturated_service_fails_at_once_the_others_go_on(self):
        deadline.capacity('placement', 2)
        hanging = _Adapter('placement')
        self.addCleanup(hanging.release.set)
        for _ in range(2):
            self.assertRaises(placement_client.PlacementUnavailable,
                              clients.call, hanging, '/', 'GET',
                              placement_client.PlacementUnavailable)
        exc = self.assertRaises(placement_client.PlacementUnavailable,
                                clients.call, hanging, '/traits', 'GET',
                                placement_client.PlacementUnavailable)
        self.assertIn('placement: 2 calls hang past their deadline',
                      str(exc))
        self.assertIn('this one was not sent', str(exc))
        self.assertEqual([('GET', '/'), ('GET', '/')], hanging.sent)
        answering = _Adapter('resq', _Response())
        self.assertIs(answering.answer, clients.call(
            answering, '/hosts', 'GET', resq_client.ResQAPIUnavailable))
        self.assertEqual([('GET', '/hosts')], answering.sent)
        health = deadline.health()
        self.assertEqual(('hung', 'ok'), (health['placement']['state'],
                                          health['resq']['state']))


class TricklingPlacementTest(base.TestCase):
    """A trickling Placement; Nova and resq-api answering, all real HTTP."""

    def setUp(self):
        super().setUp()
        self.placement = self.useFixture(hung.TricklingService())
        self.nova = self.useFixture(hung.AnsweringService(
            {'/flavors/detail?is_public=None': {'flavors': [
                {'name': 'small', 'id': 'f-1'}]}}))
        self.api = self.useFixture(hung.AnsweringService(
            {'/hosts': {'hosts': [{'hostname': 'cmp-1'}]}}))
        self.flags(clients.PLACEMENT, timeout=1,
                   endpoint_override=self.placement.endpoint)
        self.flags(clients.NOVA, timeout=20,
                   endpoint_override=self.nova.endpoint)
        self.flags(clients.RESQ_API, timeout=20,
                   endpoint_override=self.api.endpoint)

    def _saturate(self, client, calls):
        """``calls`` Placement calls at once; each must fail."""
        failed = []

        def one():
            try:
                client.get_inventories('rp-1')
            except placement_client.PlacementUnavailable:
                failed.append(True)
        threads = [threading.Thread(target=one) for _ in range(calls)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        self.assertEqual(calls, len(failed))

    def test_a_hung_placement_costs_only_placement(self):
        placement = placement_client.PlacementClient.from_conf(self.conf)
        nova = compute_client.ComputeClient.from_conf(self.conf)
        api = resq_client.ResQClient.from_conf(self.conf)
        workers = clients.REMOTE_WORKERS
        self._saturate(placement, workers + 4)
        # Only as many requests were sent as Placement has workers; each
        # still holds its worker, reading the trickle.
        self.assertEqual(workers, self.placement.requests)
        self.assertEqual(workers, deadline.capacity('placement', 1).stuck())
        # resq-api and Nova have workers of their own: sent and answered.
        self.assertEqual([{'hostname': 'cmp-1'}], api.list_hosts())
        self.assertEqual('f-1', nova.find_flavor('small')['id'])
        self.assertEqual([('GET', '/hosts')], self.api.seen)
        self.assertEqual([('GET', '/flavors/detail?is_public=None')],
                         self.nova.seen)
        # A further Placement call is refused without being sent.
        exc = self.assertRaises(placement_client.PlacementUnavailable,
                                placement.get_inventories, 'rp-2')
        self.assertIn('placement: %d calls hang past their deadline'
                      % workers, str(exc))
        self.assertIn('holding all %d of its workers' % workers, str(exc))
        self.assertEqual(workers, self.placement.requests)
        health = deadline.health()
        self.assertEqual(('hung', 'ok', 'ok'), tuple(
            health[s]['state'] for s in ('placement', 'compute', 'resq')))
