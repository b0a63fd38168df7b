#    Licensed under the Apache License, Version 2.0 (the "License"); you may
#    not use this file except in compliance with the License. You may obtain
#    a copy of the License at
#
#         http://www.apache.org/licenses/LICENSE-2.0
#
#    Unless required by applicable law or agreed to in writing, software
#    distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
#    WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
#    License for the specific language governing permissions and limitations
#    under the License.
"""SIGHUP: resq-agent reads its mutable options again and uses them."""

import os
import shutil
import signal
import tempfile
import threading
from unittest import mock

from oslo_config import cfg

from resq_agent.cmd import agent as agent_cmd
from resq_agent import conf as agent_conf
from resq_agent import hostreport
from resq_agent import rpc
from resq_agent import service
from tests import base


def _write(path, reconcile, state_dir):
    with open(path, 'w') as f:
        f.write('[resq_agent]\nreconcile_interval = %d\n'
                'host_report_interval = %d\nstate_dir = %s\n'
                % (reconcile, reconcile * 2, state_dir))


class AgentReloadTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.dir)
        self.path = os.path.join(self.dir, 'resq-agent.conf')
        _write(self.path, 30, '/var/lib/resq/agent')
        self.aconf = cfg.ConfigOpts()
        agent_conf.register_opts(self.aconf)
        rpc.register_opts(self.aconf)
        self.aconf(['--config-file', self.path], project='resq')
        self.addCleanup(self.aconf.reset)
        self.svc = service.AgentService(self.aconf, mock.Mock(), host='h')

    def test_mutable_options(self):
        opts = self.aconf.resq_agent
        for name in ('reconcile_interval', 'status_notification_interval',
                     'messaging_retry_interval', 'host_report_interval',
                     'nfvnice_interval'):
            self.assertTrue(opts._group._opts[name]['opt'].mutable, name)
        for name in ('state_dir', 'resctrl_root', 'ondemand_ways',
                     'rpc_topic', 'backend'):
            self.assertFalse(opts._group._opts[name]['opt'].mutable, name)

    def test_reload_changes_mutable_only(self):
        _write(self.path, 5, '/elsewhere')
        with self.assertLogs('oslo_config.cfg', 'INFO') as logs:
            fresh = self.svc.reload()
        # oslo.config reports the values as the files spell them.
        self.assertEqual({('resq_agent', 'reconcile_interval'): ('30', '5'),
                          ('resq_agent', 'host_report_interval'):
                          ('60', '10')}, fresh)
        self.assertEqual(5, self.aconf.resq_agent.reconcile_interval)
        # Not mutable: the old value stays, and oslo.config says so.
        self.assertEqual('/var/lib/resq/agent',
                         self.aconf.resq_agent.state_dir)
        self.assertTrue(any('Ignoring change to immutable option '
                            'resq_agent.state_dir' in line
                            for line in logs.output), logs.output)

    def test_unreadable_file_keeps_configuration(self):
        with open(self.path, 'w') as f:
            f.write('not an ini file\n')
        self.assertEqual({}, self.svc.reload())
        self.assertEqual(30, self.aconf.resq_agent.reconcile_interval)

    def test_periodic_task_uses_new_interval(self):
        waits = []
        opts = self.aconf.resq_agent

        def wait(seconds):
            waits.append(seconds)
            if len(waits) == 1:
                _write(self.path, 7, '/var/lib/resq/agent')
                self.svc.reload()
            return len(waits) >= 3

        self.svc._stop = mock.Mock(wait=wait)
        func = mock.Mock(__name__='f')
        self.svc._every(lambda: opts.reconcile_interval, func)
        self.assertEqual([30, 7, 7], waits)
        self.assertEqual(2, func.call_count)

    def test_interval_set_to_zero_pauses_the_task(self):
        waits = []
        values = iter([0, 0, 3])

        def wait(seconds):
            waits.append(seconds)
            return len(waits) >= 3

        self.svc._stop = mock.Mock(wait=wait)
        func = mock.Mock(__name__='f')
        self.svc._every(lambda: next(values), func)
        self.assertEqual([service.IDLE_S, service.IDLE_S, 3], waits)
        func.assert_not_called()

    def test_sighup_reloads_in_wait(self):
        _write(self.path, 9, '/var/lib/resq/agent')
        done = []

        def reload():
            done.append(self.aconf.mutate_config_files())
            self.svc._stop.set()

        self.svc.reload = reload
        timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGHUP))
        previous = signal.getsignal(signal.SIGHUP)
        self.addCleanup(signal.signal, signal.SIGHUP, previous)
        self.addCleanup(signal.signal, signal.SIGTERM,
                        signal.getsignal(signal.SIGTERM))
        timer.start()
        self.svc.wait()
        timer.join()
        self.assertEqual(9, self.aconf.resq_agent.reconcile_interval)
        self.assertEqual(1, len(done))

    def test_host_reporter_gets_new_interval(self):
        reporter = hostreport.HostReporter(mock.Mock(), 'h', [], 60)
        mgr = mock.Mock(host_report=reporter)
        svc = mock.Mock()
        agent_cmd._run_periodic(self.aconf, mgr, svc)
        name, interval, func = svc.run_every.call_args[0]
        # A random part of the interval first, then the interval +-10%.
        self.assertTrue(0 <= interval() <= 60)
        self.assertTrue(54 <= interval() <= 66)
        _write(self.path, 20, '/var/lib/resq/agent')
        self.aconf.mutate_config_files()
        self.assertEqual(40, reporter.interval)
        self.assertTrue(36 <= interval() <= 44)
