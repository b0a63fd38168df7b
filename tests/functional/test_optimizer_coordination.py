"""The optimizer's single-writer lock on a real Redis (tooz's redis://)."""

import socket
import subprocess
import sys
import textwrap
import uuid

import fixtures

from resq_nova.optimizer import coordination
from tests import base

REDIS = ('127.0.0.1', 6379)


def _redis_up():
    try:
        socket.create_connection(REDIS, timeout=1).close()
        return True
    except OSError:
        return False


class RedisLockTest(base.TestCase):

    def setUp(self):
        super().setUp()
        if not _redis_up():
            self.skipTest('no Redis on %s:%d (start redis-server)' % REDIS)
        # A lock name of this test's own, so runs never see each other.
        self.name = ('resq-optimizer-test-%s' % uuid.uuid4().hex).encode()
        self.url = 'redis://%s:%d' % REDIS

    def test_one_holder_across_processes(self):
        with coordination.Lock(self.url, self.name):
            # Another process (another controller, as far as Redis knows).
            code = textwrap.dedent('''
                import sys
                from resq_nova.optimizer import coordination
                try:
                    with coordination.Lock(sys.argv[1], sys.argv[2].encode()):
                        print('acquired')
                except coordination.OptimizerBusy as exc:
                    print('busy: %s' % exc)
            ''')
            out = subprocess.run([sys.executable, '-c', code, self.url,
                                  self.name.decode()], capture_output=True,
                                 text=True, timeout=60)
            self.assertIn('busy: another resq-optimizer', out.stdout,
                          out.stderr)
        # Released: the next one gets it.
        with coordination.Lock(self.url, self.name):
            pass

    def test_unreachable_backend_is_named_without_its_password(self):
        # tooz retries a refused connection for a while (about a minute,
        # redis-py's backoff between the tries) before it gives up; then
        # the round is skipped with this error. The backoff's sleeps are
        # skipped here, the tries are not.
        self.useFixture(fixtures.MockPatch('redis.retry.sleep'))
        exc = self.assertRaises(
            coordination.CoordinationUnavailable,
            coordination.Lock('redis://:s3cret@127.0.0.1:1',
                              self.name).__enter__)
        self.assertIn('redis://***@127.0.0.1:1', str(exc))
        self.assertIn('coordination_url', str(exc))
        self.assertNotIn('s3cret', str(exc))
