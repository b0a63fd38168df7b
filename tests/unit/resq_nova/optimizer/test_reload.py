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
"""SIGHUP: resq-optimizer run reads its mutable options again."""

import os
import subprocess
import sys
import textwrap

import fixtures

from resq_nova.conf import optimizer as optimizer_conf
from resq_nova.optimizer import service
from tests import base

MUTABLE = ('interval', 'apply', 'repair_isolation', 'repair_window',
           'min_hosts_freed', 'time_limit', 'mip_gap', 'moves_gap',
           'keep_plans', 'keep_days')


def _conf_text(state_dir, interval, window):
    return ('[resq_optimizer]\nstate_dir = %s\ninterval = %d\n'
            'repair_window = %s\n' % (state_dir, interval, window))


class MutableOptionsTest(base.TestCase):

    def test_mutable_options(self):
        opts = {o.name: o for o in optimizer_conf.ALL_OPTS}
        for name in MUTABLE:
            self.assertTrue(opts[name].mutable, name)
        for name in ('state_dir', 'coordination_url', 'plan_store',
                     'rpc_topic', 'ondemand_scale_out', 'metrics_listen'):
            self.assertFalse(opts[name].mutable, name)

    def test_reload_conf_reads_repair_window(self):
        self.flags('resq_optimizer', state_dir=self.useFixture(
            fixtures.TempDir()).path, repair_window='22:00-04:00')
        opt = service.Optimizer(self.conf)
        self.assertEqual('22:00-04:00', opt.repair_window.text)
        self.flags('resq_optimizer', repair_window='01:00-02:00')
        opt.reload_conf()
        self.assertEqual('01:00-02:00', opt.repair_window.text)
        self.flags('resq_optimizer', repair_window='')
        opt.reload_conf()
        self.assertIsNone(opt.repair_window)


class SighupTest(base.TestCase):
    """``resq-optimizer run`` under oslo.service, as an operator runs it."""

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.conf = os.path.join(self.dir, 'resq-optimizer.conf')
        with open(self.conf, 'w') as f:
            f.write(_conf_text(self.dir + '/state', 600, '22:00-04:00'))

    def test_sighup_changes_mutable_options_only(self):
        # The first round rewrites the file and sends SIGHUP to the
        # launcher (the parent); oslo.service mutates the configuration
        # and starts the service again; the second round records what it
        # sees and stops the launcher (SIGTERM).
        script = textwrap.dedent("""
            import os, signal, sys, threading
            from unittest import mock
            from resq_nova.cmd import optimizer as cmd

            conf_path, rounds, new_text = sys.argv[1:4]

            class Recorder:
                repair_window = None
                # No Placement client: the service serves no escalations.
                placement = None
                stopping = threading.Event()

                def __init__(self, conf):
                    self.conf = conf

                def reload_conf(self):
                    opts = self.conf.resq_optimizer
                    self.repair_window = opts.repair_window

                def tick(self):
                    opts = self.conf.resq_optimizer
                    with open(rounds, 'a') as f:
                        f.write('%s %s %s\\n' % (
                            opts.interval, self.repair_window,
                            opts.state_dir))
                    with open(rounds) as f:
                        done = len(f.read().splitlines())
                    if done == 1:
                        with open(conf_path, 'w') as f:
                            f.write(new_text)
                        os.kill(os.getppid(), signal.SIGHUP)
                    elif opts.interval == 900 or done >= 20:
                        # (A round the launcher started before it handled
                        # SIGHUP still sees the old file: wait for one
                        # that sees the new.)
                        os.kill(os.getppid(), signal.SIGTERM)

            with mock.patch.object(cmd, '_optimizer', new=Recorder):
                rc = cmd.main(['--config-file', conf_path, 'run'])
            print(rc)
        """)
        rounds = os.path.join(self.dir, 'rounds')
        new_text = _conf_text(self.dir + '/moved', 900, '01:00-02:00')
        out = subprocess.run([sys.executable, '-c', script, self.conf,
                              rounds, new_text], capture_output=True,
                             text=True, timeout=120)
        self.assertEqual(0, out.returncode, out.stderr)
        # A worker that failed to start would be started again with the
        # old options, and its rounds would only look like reloads.
        self.assertNotIn('Traceback', out.stderr)
        with open(rounds) as f:
            done = f.read().splitlines()
        state = self.dir + '/state'
        old, new = ('600 22:00-04:00 %s' % state,
                    '900 01:00-02:00 %s' % state)
        self.assertEqual(old, done[0])
        # Under load the launcher may start a round once more before it
        # handles SIGHUP (or SIGTERM): every round sees either the old
        # file or the new one whole, the immutable state_dir never
        # changes, and once a round has seen the new file none goes back.
        self.assertGreaterEqual(len(done), 2)
        self.assertEqual(set(), set(done) - {old, new})
        first_new = done.index(new)
        self.assertEqual({new}, set(done[first_new:]))
        self.assertIn('Ignoring change to immutable option '
                      'resq_optimizer.state_dir', out.stderr)
