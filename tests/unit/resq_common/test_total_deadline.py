"""A service that trickles its answer costs the caller the deadline, once.

keystoneauth's timeout bounds each read; a server that sends a byte every
half second never trips it. A real HTTP server in this process does that
here.
"""

import threading
import time

from resq_common.clients import placement as placement_client
from resq_common.conf import clients
from resq_common import deadline
from tests import base
from tests.fixtures import hung


class TotalDeadlineTest(base.TestCase):

    def test_a_trickling_service_is_cut_at_the_deadline(self):
        server = self.useFixture(hung.TricklingService())
        adapter = clients.noauth_adapter(server.endpoint, 'placement',
                                         timeout=2)
        client = placement_client.PlacementClient(adapter)
        started = time.monotonic()
        exc = self.assertRaises(placement_client.PlacementError,
                                client.get_inventories, 'rp-1')
        took = time.monotonic() - started
        self.assertIn('no complete answer within 2s', str(exc))
        # The deadline, not the trickle's pace, decides (generous bounds:
        # a shared machine).
        self.assertLess(took, 15)
        self.assertGreaterEqual(took, 1.5)

    def test_the_pool_of_remote_calls_is_bounded(self):
        server = self.useFixture(hung.TricklingService())
        adapter = clients.noauth_adapter(server.endpoint, 'placement',
                                         timeout=1)
        client = placement_client.PlacementClient(adapter)
        before = threading.active_count()
        for _ in range(3 * clients.REMOTE_WORKERS):
            self.assertRaises(placement_client.PlacementError,
                              client.get_inventories, 'rp-1')
        # Hung calls hold at most the pool's threads, not one per call:
        # once they all hang, further calls are not even sent.
        self.assertLessEqual(threading.active_count() - before,
                             2 * clients.REMOTE_WORKERS + 8)
        self.assertEqual(clients.REMOTE_WORKERS, server.requests)
        self.assertEqual(clients.REMOTE_WORKERS,
                         deadline.capacity('placement', 1).stuck())
