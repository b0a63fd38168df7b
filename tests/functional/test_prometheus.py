"""A real Prometheus scrapes a running agent's /metrics.

Debian's ``prometheus`` package (bindep.txt) provides ``prometheus`` and
``promtool``; the test is skipped, saying so, where they are absent.
"""

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request

from resq_agent import metrics as agent_metrics
from resq_common import metrics
from tests.unit.resq_agent import test_manager

A = test_manager.A


def _free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


class PrometheusScrapeTest(test_manager.ManagerTestBase):

    def setUp(self):
        super().setUp()
        for tool in ('prometheus', 'promtool'):
            if shutil.which(tool) is None:
                self.skipTest('%s is not installed (Debian package '
                              'prometheus, listed in bindep.txt)' % tool)
        self.doms.add(A, (1,), ways=3, extra_specs={
            'resq:profile': 'fw-64', 'resq:throughput_mpps': '2'})
        self.mgr = self.make()
        self.mgr.reconcile()
        self.collector = agent_metrics.AgentCollector(self.mgr)

    def test_the_exposition_passes_promtool(self):
        # Prometheus' own lint: names, units, _total on counters, help.
        proc = subprocess.run(['promtool', 'check', 'metrics'],
                              input=metrics.render(self.collector),
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(0, proc.returncode, proc.stdout + proc.stderr)
        self.assertEqual('', proc.stdout + proc.stderr)

    def test_prometheus_scrapes_the_agent(self):
        server = metrics.serve('127.0.0.1:0', self.collector)
        self.addCleanup(server.shutdown)
        target = '127.0.0.1:%d' % server.server_address[1]
        web = '127.0.0.1:%d' % _free_port()
        config = os.path.join(self.tmp, 'prometheus.yml')
        with open(config, 'w') as f:
            f.write('global:\n  scrape_interval: 1s\n'
                    'scrape_configs:\n  - job_name: resq-agent\n'
                    '    static_configs:\n      - targets: [\'%s\']\n'
                    % target)
        log = open(os.path.join(self.tmp, 'prometheus.log'), 'w')
        self.addCleanup(log.close)
        proc = subprocess.Popen(
            ['prometheus', '--config.file', config,
             '--storage.tsdb.path', os.path.join(self.tmp, 'tsdb'),
             '--web.listen-address', web], stdout=log, stderr=log)
        self.addCleanup(proc.wait, 30)
        self.addCleanup(proc.terminate)
        ways = self._query(web, 'resq_instance_llc_ways', proc)
        self.assertEqual(1, len(ways))
        labels = ways[0]['metric']
        self.assertEqual((A, '0', 'fw-64', 'resq-agent'), (
            labels['server_uuid'], labels['domain'], labels['profile'],
            labels['job']))
        self.assertEqual('3', ways[0]['value'][1])
        up = self._query(web, 'up{job="resq-agent"}', proc)
        self.assertEqual('1', up[0]['value'][1])
        target_pps = self._query(
            web, 'resq_instance_throughput_target_packets_per_second',
            proc)
        self.assertEqual(2e6, float(target_pps[0]['value'][1]))

    def _query(self, web, query, proc, timeout=60):
        """The query's result once Prometheus has scraped the agent."""
        url = 'http://%s/api/v1/query?%s' % (
            web, urllib.parse.urlencode({'query': query}))
        end = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                with open(os.path.join(self.tmp, 'prometheus.log')) as f:
                    self.fail('prometheus exited: %s' % f.read()[-2000:])
            try:
                with urllib.request.urlopen(url, timeout=5) as resp:
                    result = json.load(resp)['data']['result']
                if result:
                    return result
            except OSError:
                pass              # not listening yet
            if time.monotonic() > end:
                self.fail('Prometheus never returned %s' % query)
            time.sleep(0.5)
