"""A dependency's calls: a total deadline, one deadline per hang."""

import threading

from resq_common import deadline
from tests import base


class DependencyTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.dep = deadline.Dependency('thing', 0.3)

    def test_an_answer_is_returned_and_recorded(self):
        self.assertEqual(5, self.dep.call(lambda a, b: a + b, 2, b=3))
        self.assertEqual('ok', deadline.health()['thing']['state'])

    def test_a_failure_is_raised_and_recorded(self):
        def boom():
            raise ValueError('no such domain')
        self.assertRaises(ValueError, self.dep.call, boom)
        health = deadline.health()['thing']
        self.assertEqual(('failed', 'no such domain'),
                         (health['state'], health['detail']))

    def test_a_hang_costs_one_deadline_then_calls_fail_at_once(self):
        release = threading.Event()
        self.addCleanup(release.set)
        exc = self.assertRaises(deadline.DependencyHung, self.dep.call,
                                release.wait)
        self.assertIn('thing did not answer within 0.3s', str(exc))
        health = deadline.health()['thing']
        self.assertEqual('hung', health['state'])
        self.assertIsNotNone(health['since'])
        # While the hung call holds the worker, nothing else is queued
        # behind it: the next call is refused without running.
        ran = []
        exc = self.assertRaises(deadline.DependencyHung, self.dep.call,
                                ran.append, 1)
        self.assertIn('hung since', str(exc))
        self.assertEqual([], ran)
        # Once the hung call returns, the dependency works again.
        release.set()
        for _ in range(100):
            try:
                self.dep.call(ran.append, 1)
                break
            except deadline.DependencyHung:
                threading.Event().wait(0.05)
        self.assertEqual([1], ran)
        self.assertEqual('ok', deadline.health()['thing']['state'])

    def test_workers_are_daemons(self):
        # A hung call must never keep a command from exiting.
        names = []
        self.dep.call(lambda: names.append(
            threading.current_thread().daemon))
        self.assertEqual([True], names)

    def test_outcomes_of_calls_bounded_elsewhere(self):
        seen = deadline.outcomes('placement')
        self.assertIs(seen, deadline.outcomes('placement'))
        self.assertEqual({'state': None, 'since': None, 'detail': None,
                          'failures': 0}, deadline.health()['placement'])
        seen.record(deadline.HUNG, 'no complete answer within 2s')
        seen.record(deadline.OK)
        seen.record(deadline.FAILED, 'connection refused')
        health = deadline.health()['placement']
        self.assertEqual(('failed', 2), (health['state'],
                                         health['failures']))


class ClientOutcomesTest(base.TestCase):
    """What a request's failure says of its service."""

    def test_keystoneauths_own_timeout_is_a_hang(self):
        from keystoneauth1 import exceptions as ks_exc

        from resq_common.clients import placement as placement_client
        from resq_common.conf import clients

        class Adapter:
            service_type = 'placement'
            timeout = 5

            def __init__(self, exc):
                self.exc = exc

            def request(self, url, method, **kwargs):
                raise self.exc

        for exc, state in ((ks_exc.ConnectTimeout('read timed out'), 'hung'),
                           (ks_exc.ConnectFailure('refused'), 'failed')):
            self.assertRaises(placement_client.PlacementUnavailable,
                              clients.call, Adapter(exc), '/', 'GET',
                              placement_client.PlacementUnavailable)
            self.assertEqual(state, deadline.health()['placement']['state'])
