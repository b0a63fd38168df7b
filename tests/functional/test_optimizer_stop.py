"""``resq-optimizer run`` told to stop while the message broker is down.

A real process with oslo.service's launcher (:mod:`tests.fixtures.
optimizer_stop`): the escalation RPC server cannot reach its broker and
every round fails quickly. On SIGTERM no round starts any more, and the
process ends without waiting out oslo.messaging's reconnection (it took a
minute and ran more rounds meanwhile).
"""

from tests import base
from tests.fixtures import optimizer_stop


class OptimizerStopTest(base.TestCase):

    def test_sigterm_with_broker_down_starts_nothing_more(self):
        run = optimizer_stop.Run(self.tmp)
        self.addCleanup(run.close)
        # Two rounds: the timer runs, and the broker is known to be down.
        self.assertTrue(run.wait_rounds(2), 'fewer than two rounds:\n%s'
                        % run.text()[-3000:])
        # Without the broker oslo.messaging retries for a minute; the
        # service waits RPC_STOP_TIMEOUT (5 s) for it at most.
        took, rc, after = run.stop(timeout=45)
        self.assertIsNotNone(took, 'still running 45 s after SIGTERM:\n%s'
                             % run.text()[-3000:])
        self.assertNotIn(optimizer_stop.ROUND, after,
                         'a round started after SIGTERM:\n%s' % after[-3000:])
        self.assertEqual(0, rc, after[-3000:])
