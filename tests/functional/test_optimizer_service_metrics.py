"""``resq-optimizer run``'s /metrics after a real planning round.

The real command (``python -m resq_nova.cmd.optimizer --config-file F
run``) runs in a process of its own, as systemd starts it: oslo.service's
launcher forks its worker, the worker plans on the functional cloud
(Nova's API and Placement of this test process, reached over HTTP through
a small forwarder that adds the identity headers Keystone's middleware
would), and Prometheus' view, a scrape of ``/metrics`` over HTTP, must
show that round's figures. Only the worker listens.
"""

import glob
import http.server
import json
import os
import signal
import socket
import socketserver
import subprocess
import sys
import threading
import time
import urllib.parse

import fixtures
from prometheus_client import parser as prom_parser
import requests

from tests.functional import test_optimizer


class _Forwarder(socketserver.ThreadingMixIn, http.server.HTTPServer):
    """Forwards every request to an in-process (wsgi-intercepted) API."""

    daemon_threads = True

    def __init__(self, target, headers):
        super().__init__(('127.0.0.1', 0), _ForwardHandler)
        self.target = target
        self.extra_headers = headers


class _ForwardHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    hop = ('host', 'content-length', 'connection', 'transfer-encoding',
           'content-encoding', 'keep-alive')

    def _forward(self):
        length = int(self.headers.get('Content-Length') or 0)
        headers = {k: v for k, v in self.headers.items()
                   if k.lower() not in self.hop}
        headers.update(self.server.extra_headers)
        resp = requests.request(
            self.command, self.server.target + self.path, headers=headers,
            data=self.rfile.read(length) if length else None,
            allow_redirects=False, timeout=60)
        self.send_response(resp.status_code)
        for key, value in resp.headers.items():
            if key.lower() not in self.hop:
                self.send_header(key, value)
        self.send_header('Content-Length', str(len(resp.content)))
        self.end_headers()
        self.wfile.write(resp.content)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = _forward

    def log_message(self, *args):
        pass


def _free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def _listeners(port):
    """Pids of processes holding a socket listening on TCP ``port``."""
    inodes = set()
    for table in ('/proc/net/tcp', '/proc/net/tcp6'):
        with open(table) as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                if fields[3] == '0A' and \
                        int(fields[1].rsplit(':', 1)[1], 16) == port:
                    inodes.add('socket:[%s]' % fields[9])
    pids = set()
    for fd in glob.glob('/proc/[0-9]*/fd/*'):
        try:
            if os.readlink(fd) in inodes:
                pids.add(int(fd.split('/')[2]))
        except OSError:
            pass
    return pids


def _parent(pid):
    with open('/proc/%d/stat' % pid) as f:
        # pid (comm) state ppid ...: comm may hold spaces and parentheses.
        return int(f.read().rsplit(')', 1)[1].split()[1])


class OptimizerServiceMetricsTest(test_optimizer.OptimizerTestBase):

    def setUp(self):
        super().setUp()
        for host in ('host1', 'host2', 'host3'):
            self.start_resq_compute(host)
        self.placement_url = self.forward(
            self.placement.fixture.endpoint, {'x-auth-token': 'admin'})
        api = self.api
        self.nova_url = self.forward(api.base_url, {
            'X-Auth-User': api.auth_user, 'X-User-Id': api.auth_user,
            'X-Auth-Project-Id': api.project_id,
            'X-Roles': ','.join(api.roles)})

    def forward(self, endpoint, headers):
        """A local HTTP address for the in-process ``endpoint``."""
        parts = urllib.parse.urlsplit(endpoint)
        server = _Forwarder('%s://%s' % (parts.scheme, parts.netloc),
                            headers)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        return 'http://127.0.0.1:%d%s' % (server.server_address[1],
                                          parts.path.rstrip('/'))

    def write_conf(self, metrics_port):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'resq-nova.conf')
        with open(path, 'w') as f:
            f.write('[DEFAULT]\ntransport_url = fake:/\n'
                    '[placement]\nendpoint_override = %s\ntimeout = 60\n'
                    '[nova]\nendpoint_override = %s\ntimeout = 60\n'
                    '[resq_optimizer]\nstate_dir = %s\ninterval = 600\n'
                    'time_limit = 20\nplan_store = files\n'
                    'metrics_listen = 127.0.0.1:%d\n'
                    % (self.placement_url, self.nova_url, self.state_dir,
                       metrics_port))
        return path

    def start_optimizer(self, conf):
        log = open(os.path.join(self.state_dir, 'service.log'), 'w+')
        self.addCleanup(log.close)
        proc = subprocess.Popen(
            [sys.executable, '-m', 'resq_nova.cmd.optimizer',
             '--config-file', conf, 'run'], stdout=log, stderr=log,
            cwd=os.path.dirname(os.path.dirname(os.path.dirname(
                os.path.abspath(__file__)))))
        self.addCleanup(self._stop, proc)
        return proc, log

    def _stop(self, proc):
        if proc.poll() is None:
            proc.kill()
            proc.wait()

    def wait_for_plan(self, proc, log, timeout=120):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            plans = glob.glob(os.path.join(self.state_dir, 'plans',
                                           '*.json'))
            if plans:
                with open(plans[0]) as f:
                    return json.load(f)
            self.assertIsNone(proc.poll(), self.output(log))
            time.sleep(0.5)
        self.fail('no plan within %ss: %s' % (timeout, self.output(log)))

    def output(self, log):
        log.flush()
        log.seek(0)
        return log.read()[-4000:]

    def scrape(self, port):
        """``{(name, sorted labels): value}`` of /metrics over HTTP."""
        resp = requests.get('http://127.0.0.1:%d/metrics' % port,
                            timeout=10)
        self.assertEqual(200, resp.status_code)
        return {(s.name, tuple(sorted(s.labels.items()))): s.value
                for f in prom_parser.text_string_to_metric_families(
                    resp.text) for s in f.samples}

    def scrape_until_planned(self, port, log, timeout=15):
        # The figures are counted right after the plan file is written.
        deadline = time.monotonic() + timeout
        while True:
            samples = self.scrape(port)
            planned = samples.get(('resq_optimizer_plans_total',
                                   (('outcome', 'proposed'),)))
            if planned or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        self.assertEqual(1, planned, 'the planning round is not on '
                         '/metrics: %r\n%s' % (samples, self.output(log)))
        return samples

    def test_metrics_show_the_round_the_worker_planned(self):
        self.boot('host1', ways=2, name='a')
        self.boot('host2', ways=2, name='b')
        port = _free_port()
        proc, log = self.start_optimizer(self.write_conf(port))
        plan = self.wait_for_plan(proc, log)
        self.assertTrue(plan['proposed'], plan['reason'])
        samples = self.scrape_until_planned(port, log)
        self.assertEqual(0, samples[('resq_optimizer_plans_total',
                                     (('outcome', 'not_proposed'),))])
        self.assertEqual(0, samples[('resq_optimizer_plans_total',
                                     (('outcome', 'applied'),))])
        self.assertEqual((2, 1), (plan['hosts_used_before'],
                                  plan['hosts_used_after']))
        self.assertEqual(plan['hosts_used_after'], samples[
            ('resq_optimizer_last_hosts_used', ())])
        self.assertEqual(plan['lower_bound'], samples[
            ('resq_optimizer_last_hosts_lower_bound', ())])
        self.assertEqual(len(plan['moves']), samples[
            ('resq_optimizer_last_moves', ())])
        self.assertAlmostEqual(plan['solver']['seconds'], samples[
            ('resq_optimizer_last_solve_seconds', ())], places=6)
        self.assertEqual(1, samples[('resq_dependency_up',
                                     (('dependency', 'placement'),))])
        # The worker serves; the launcher's own process holds no listener.
        holders = _listeners(port)
        self.assertEqual(1, len(holders), holders)
        self.assertNotIn(proc.pid, holders)
        self.assertEqual(proc.pid, _parent(holders.pop()))
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(0, proc.wait(timeout=60), self.output(log))
        self.assertEqual(set(), _listeners(port))
