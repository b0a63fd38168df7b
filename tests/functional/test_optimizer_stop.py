"""``resq-optimizer run`` told to stop while the message broker is down.

A real process with oslo.service's launcher: the escalation RPC server
cannot reach its broker (a closed port), Placement cannot be reached
either, so every round fails quickly. On SIGTERM no round starts any
more, and the process ends without waiting out oslo.messaging's
reconnection (it took a minute and ran three more rounds before).
"""

import os
import signal
import socket
import subprocess
import sys
import time

from tests import base

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
ROUND = 'Optimizer round starting'


def _closed_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


class OptimizerStopTest(base.TestCase):

    def test_sigterm_with_broker_down_starts_nothing_more(self):
        closed = _closed_port()
        state = os.path.join(self.tmp, 'state')
        conf = os.path.join(self.tmp, 'resq-optimizer.conf')
        with open(conf, 'w') as f:
            f.write('[DEFAULT]\n'
                    'transport_url = rabbit://guest:guest@127.0.0.1:%d/\n'
                    '[placement]\nendpoint_override = http://127.0.0.1:%d\n'
                    'timeout = 2\n'
                    '[nova]\nendpoint_override = http://127.0.0.1:%d\n'
                    'timeout = 2\n'
                    '[resq_optimizer]\nstate_dir = %s\ninterval = 10\n'
                    'plan_store = files\napply = true\n'
                    % (closed, closed, closed, state))
        log_path = os.path.join(self.tmp, 'optimizer.log')
        log = open(log_path, 'w+')
        self.addCleanup(log.close)
        proc = subprocess.Popen(
            [sys.executable, '-m', 'resq_nova.cmd.optimizer',
             '--config-file', conf, 'run'], stdout=log, stderr=log,
            cwd=REPO)
        self.addCleanup(lambda: proc.poll() is None and (
            proc.kill(), proc.wait()))

        def text():
            with open(log_path, errors='replace') as f:
                return f.read()

        # Two rounds: the timer runs, and the broker is known to be down.
        deadline = time.monotonic() + 120
        while text().count(ROUND) < 2:
            self.assertIsNone(proc.poll(), text()[-3000:])
            self.assertLess(time.monotonic(), deadline,
                            'fewer than two rounds in 120 s:\n%s'
                            % text()[-3000:])
            time.sleep(0.5)
        before = len(text())
        proc.send_signal(signal.SIGTERM)
        try:
            # Without the broker, oslo.messaging retries for a minute;
            # stopping waits for it RPC_STOP_TIMEOUT (5 s) at most.
            rc = proc.wait(timeout=45)
        except subprocess.TimeoutExpired:
            self.fail('still running 45 s after SIGTERM:\n%s'
                      % text()[-3000:])
        after = text()[before:]
        self.assertNotIn(ROUND, after, 'a round started after SIGTERM:\n%s'
                         % after[-3000:])
        self.assertEqual(0, rc, after[-3000:])
