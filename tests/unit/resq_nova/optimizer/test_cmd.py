import contextlib
import io
import json
import os
import socket
import subprocess
import sys
import textwrap
from unittest import mock
import urllib.request

import fixtures

from resq_nova.cmd import optimizer as cmd
from resq_nova.optimizer import store as store_mod
from tests import base
from tests.unit.resq_nova.optimizer import base as obase


class StoreTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.store = store_mod.Store(self.dir)

    def test_one_optimizer_at_a_time(self):
        with self.store.lock():
            exc = self.assertRaises(store_mod.OptimizerBusy,
                                    store_mod.Store(self.dir).lock()
                                    .__enter__)
            self.assertIn('resq-optimizer', str(exc))
            self.assertIn(self.store.coordination_url, str(exc))
        with self.store.lock():
            pass

    def test_plans_by_id_or_file(self):
        path = self.store.save_plan({'id': 'plan-1', 'moves': []})
        self.assertEqual(path, self.store.plan_path('plan-1'))
        self.assertEqual(({'id': 'plan-1', 'moves': []}, path),
                         self.store.load_plan(path))
        self.assertEqual(['plan-1'], self.store.list_plans())
        exc = self.assertRaises(store_mod.PlanNotFound, self.store.load_plan,
                                'plan-2')
        self.assertIn('no plan plan-2 in %s' % self.store.plans, str(exc))
        self.assertEqual([], [f for f in os.listdir(self.store.plans)
                              if f.endswith('.tmp')])

    def test_unwritable_state_dir(self):
        blocker = os.path.join(self.dir, 'file')
        open(blocker, 'w').close()
        exc = self.assertRaises(store_mod.StoreError, store_mod.Store,
                                blocker)
        self.assertIn('set [resq_optimizer] state_dir', str(exc))


class CommandTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.conf = os.path.join(self.dir, 'opt.conf')
        with open(self.conf, 'w') as f:
            f.write('[resq_optimizer]\nstate_dir = %s/state\n'
                    'time_limit = 10\n' % self.dir)

    def run_cmd(self, *args):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = cmd.main(['--config-file', self.conf] + list(args))
        return rc, out.getvalue(), err.getvalue()

    def write(self, name, doc):
        path = os.path.join(self.dir, name)
        with open(path, 'w') as f:
            f.write(doc if isinstance(doc, str) else json.dumps(doc))
        return path

    def test_plan_from_a_snapshot_file(self):
        state = self.write('snap.json', obase.snapshot(
            [obase.host('h1'), obase.host('h2')],
            [obase.inst('a', 'h1', name='fw-0'), obase.inst('b', 'h2')]))
        out_json = os.path.join(self.dir, 'plan.json')
        rc, out, err = self.run_cmd('plan', '--state', state, '--json',
                                    out_json)
        self.assertEqual(0, rc, err)
        self.assertIn('hosts in use: 2 -> 1', out)
        self.assertIn('gap:          0.00%', out)
        self.assertIn('proposed:     yes', out)
        with open(out_json) as f:
            plan = json.load(f)
        self.assertEqual(1, len(plan['moves']))
        # From a file it only reads: nothing is stored...
        self.assertIn('stored:       no (planned from a snapshot file', out)
        self.assertFalse(os.path.exists(os.path.join(self.dir, 'state')))
        # ... unless asked.
        rc, out, err = self.run_cmd('plan', '--state', state, '--store',
                                    '--json', out_json)
        self.assertEqual(0, rc, err)
        with open(out_json) as f:
            plan = json.load(f)
        stored = os.listdir(os.path.join(self.dir, 'state', 'plans'))
        self.assertEqual([plan['id'] + '.json'], stored)
        snaps = os.listdir(os.path.join(self.dir, 'state', 'snapshots'))
        self.assertEqual([plan['snapshot_id'] + '.json'], snaps)
        rc, out, _ = self.run_cmd('plan', '--state', state,
                                  '--min-hosts-freed', '2')
        self.assertIn('proposed:     no', out)
        self.assertIn('min_hosts_freed is 2', out)

    def test_bad_input_is_one_line(self):
        rc, out, err = self.run_cmd('plan', '--state',
                                    self.write('bad.json', '{"hosts": '))
        self.assertEqual(1, rc)
        self.assertIn('ERROR: snapshot %s: is not JSON' % os.path.join(
            self.dir, 'bad.json'), err)
        self.assertNotIn('Traceback', err)
        rc, out, err = self.run_cmd('plan', '--state', self.write(
            'over.json', obase.snapshot([obase.host('h1')], [
                obase.inst('a', 'h1', ways=10)])))
        self.assertEqual(1, rc)
        self.assertIn('already over-committed', err)
        rc, out, err = self.run_cmd('plan')
        self.assertEqual(1, rc)
        self.assertIn('ERROR: [placement]', err)
        self.assertIn('auth_type', err)
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            exc = self.assertRaises(SystemExit, cmd.main, [
                '--config-file', self.conf, 'plan', '--state', 'x',
                '--min-hosts-freed', '0'])
        self.assertEqual(2, exc.code)
        self.assertEqual("resq-optimizer plan: --min-hosts-freed: must be a "
                         "positive whole number, got '0' (see resq-optimizer "
                         "plan --help)\n", err.getvalue())

    def test_silent_service_fails_within_the_timeout(self):
        # Accepts connections and never answers.
        server = socket.socket()
        server.bind(('127.0.0.1', 0))
        server.listen(8)
        self.addCleanup(server.close)
        url = 'http://127.0.0.1:%d' % server.getsockname()[1]
        with open(self.conf, 'a') as f:
            f.write('[placement]\nendpoint_override = %s\ntimeout = 1\n'
                    '[nova]\nendpoint_override = %s\ntimeout = 1\n'
                    % (url, url))
        rc, out, err = self.run_cmd('plan')
        self.assertEqual(1, rc)
        self.assertIn('ERROR: Nova is unreachable', err)
        self.assertIn('timed out', err.lower())
        self.assertNotIn('Traceback', err)
        self.assertFalse(os.path.exists(os.path.join(
            self.dir, 'state', 'plans')) and os.listdir(os.path.join(
                self.dir, 'state', 'plans')))


class ServiceTest(base.TestCase):

    def test_service_runs_rounds_until_stopped(self):
        # A fresh interpreter, as "resq-optimizer run" starts: the
        # threading backend is chosen before oslo.messaging is imported.
        script = textwrap.dedent("""
            import os, signal, sys, threading
            from unittest import mock
            from resq_nova.cmd import optimizer as cmd
            assert 'oslo_messaging' not in sys.modules

            class Recorder:
                stopping = threading.Event()

                def reload_conf(self):
                    pass

                def tick(self):
                    # oslo.service's threading backend runs the service in
                    # a worker process; record the round, then stop the
                    # service as an operator would (SIGTERM to the parent).
                    with open(sys.argv[2], 'a') as f:
                        f.write('round\\n')
                    os.kill(os.getppid(), signal.SIGTERM)

            with mock.patch.object(cmd, '_optimizer',
                                   return_value=Recorder()):
                rc = cmd.main(['--config-file', sys.argv[1], 'run'])
            from oslo_service import backend
            print(rc, backend._cached_backend_type.value)
        """)
        with open(self.conf, 'a') as f:
            f.write('interval = 600\n')
        rounds = os.path.join(self.dir, 'rounds')
        out = subprocess.run([sys.executable, '-c', script, self.conf,
                              rounds], capture_output=True, text=True,
                             timeout=120)
        self.assertEqual(0, out.returncode, out.stderr)
        self.assertEqual('0 threading', out.stdout.strip().splitlines()[-1])
        # At least one round, then a clean stop. Under load oslo.service's
        # launcher may start the worker again before it handles SIGTERM,
        # and the new worker runs its first round too.
        with open(rounds) as f:
            done = f.read().split()
        self.assertGreaterEqual(len(done), 1)
        self.assertEqual({'round'}, set(done))

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.conf = os.path.join(self.dir, 'opt.conf')
        with open(self.conf, 'w') as f:
            f.write('[resq_optimizer]\nstate_dir = %s/state\n' % self.dir)


class MetricsListenTest(base.TestCase):
    """Where ``run`` serves /metrics: checked first, served by the worker."""

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.taken = socket.socket()
        self.taken.bind(('127.0.0.1', 0))
        self.taken.listen(1)
        self.addCleanup(self.taken.close)
        self.taken_at = '127.0.0.1:%d' % self.taken.getsockname()[1]

    def test_check_listen(self):
        from resq_common import metrics

        metrics.check_listen('127.0.0.1:0')
        exc = self.assertRaises(metrics.CannotListen, metrics.check_listen,
                                self.taken_at)
        self.assertIn('%r cannot be listened on: Address already in use'
                      % self.taken_at, str(exc))
        self.assertRaises(metrics.InvalidListen, metrics.check_listen,
                          '9477')

    def test_run_stops_at_once_on_a_taken_address(self):
        conf = os.path.join(self.dir, 'opt.conf')
        with open(conf, 'w') as f:
            f.write('[resq_optimizer]\nstate_dir = %s/state\n'
                    'metrics_listen = %s\n' % (self.dir, self.taken_at))
        err = io.StringIO()
        with mock.patch.object(cmd, '_optimizer') as optimizer, \
                contextlib.redirect_stderr(err):
            self.assertEqual(1, cmd.main(['--config-file', conf, 'run']))
        self.assertFalse(optimizer.called)
        self.assertIn('ERROR: metrics_listen %r cannot be listened on'
                      % self.taken_at, err.getvalue())
        self.assertNotIn('Traceback', err.getvalue())

    def test_serve_metrics_serves_the_optimizer_it_is_given(self):
        from resq_nova.optimizer import service
        from tests.unit.resq_agent import test_metrics

        conf = mock.Mock()
        conf.resq_optimizer.metrics_listen = '127.0.0.1:0'
        server = service.serve_metrics(conf, test_metrics.FakeOptimizer())
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        with urllib.request.urlopen('http://127.0.0.1:%d/metrics'
                                    % server.server_address[1],
                                    timeout=10) as resp:
            text = resp.read().decode()
        self.assertIn('resq_optimizer_plans_total{outcome="proposed"} 2.0',
                      text)
        conf.resq_optimizer.metrics_listen = ''
        self.assertIsNone(service.serve_metrics(conf, None))

    def test_serve_metrics_logs_an_address_it_cannot_bind(self):
        from resq_nova.optimizer import service

        conf = mock.Mock()
        conf.resq_optimizer.metrics_listen = self.taken_at
        logs = self.useFixture(fixtures.FakeLogger(
            name='resq_nova.optimizer.service'))
        self.assertIsNone(service.serve_metrics(conf, None))
        self.assertIn('Prometheus metrics are not served: [resq_optimizer] '
                      'metrics_listen %r' % self.taken_at, logs.output)
