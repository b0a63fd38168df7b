"""A service that trickles its answer costs the caller the deadline, once.

keystoneauth's timeout bounds each read; a server that sends a byte every
half second never trips it. A real HTTP server in this process does that
here.
"""

import socket
import threading
import time

from resq_common.clients import placement as placement_client
from resq_common.conf import clients
from tests import base


class Trickle:
    """Accepts connections and answers one byte every ``every`` seconds."""

    def __init__(self, every=0.3):
        self.every = every
        self.sock = socket.socket()
        self.sock.bind(('127.0.0.1', 0))
        self.sock.listen(8)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def endpoint(self):
        return 'http://127.0.0.1:%d' % self.sock.getsockname()[1]

    def _serve(self):
        self.sock.settimeout(0.2)
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            threading.Thread(target=self._drip, args=(conn,),
                             daemon=True).start()

    def _drip(self, conn):
        conn.recv(65536)
        head = (b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n'
                b'Content-Length: 100000\r\n\r\n')
        try:
            conn.sendall(head)
            while not self.stop.is_set():
                conn.sendall(b' ')
                time.sleep(self.every)
        except OSError:
            pass
        finally:
            conn.close()

    def close(self):
        self.stop.set()
        self.sock.close()


class TotalDeadlineTest(base.TestCase):

    def test_a_trickling_service_is_cut_at_the_deadline(self):
        server = Trickle()
        self.addCleanup(server.close)
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
        server = Trickle()
        self.addCleanup(server.close)
        adapter = clients.noauth_adapter(server.endpoint, 'placement',
                                         timeout=1)
        client = placement_client.PlacementClient(adapter)
        before = threading.active_count()
        for _ in range(3 * clients.REMOTE_WORKERS):
            self.assertRaises(placement_client.PlacementError,
                              client.get_inventories, 'rp-1')
        # Hung calls hold at most the pool's threads, not one per call.
        self.assertLessEqual(threading.active_count() - before,
                             clients.REMOTE_WORKERS + 8)
