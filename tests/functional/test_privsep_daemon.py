"""The real privsep daemon gets the agent's own options and config files.

The agent parses a private ConfigOpts; the daemon is started the way the
agent starts it (``[resq_privsep_resctrl] helper_command``, here the
``privsep-helper`` code in this interpreter, without ``sudo``) and must
read ``[resq_agent] resctrl_root`` from the agent's configuration file.
It keeps no capabilities (``capabilities =`` in the same file), so the
test needs no root.
"""

import os
import sys

from resq_agent.cmd import agent
import resq_agent.privsep
import resq_agent.privsep.resctrl
from resq_common import exception
from tests import base
from tests.fixtures import resctrl as resctrl_fixture

HELPER = ('%s -c "from oslo_privsep import daemon; daemon.helper_main()"'
          % sys.executable)


class PrivsepDaemonTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.tree = self.useFixture(resctrl_fixture.ResctrlTree())
        self.conf_file = os.path.join(self.tmp, 'resq-agent.conf')
        with open(self.conf_file, 'w') as f:
            f.write('[resq_agent]\nresctrl_root = %s\n\n'
                    '[resq_privsep_resctrl]\nhelper_command = %s\n'
                    'capabilities =\nthread_pool_size = 1\n'
                    % (self.tree.root, HELPER))
        ctx = resq_agent.privsep.resctrl_pctxt
        previous = ctx.config
        self.addCleanup(ctx.use_conf, previous)
        self.addCleanup(ctx.stop)
        self.conf = agent._parse_config(['--config-file', self.conf_file,
                                         'inspect'])
        self.ctx = ctx

    def test_options_reach_the_daemon(self):
        self.assertIs(self.conf, self.ctx.config)
        self.assertEqual([], self.ctx.conf.capabilities)
        cmd = self.ctx.helper_command('/tmp/sock')
        self.assertEqual(['--config-file', self.conf_file],
                         cmd[cmd.index('--config-file'):][:2])
        # The daemon answers with the root it read from the agent's file.
        self.assertEqual(self.tree.root,
                         resq_agent.privsep.resctrl.resctrl_root())
        self.assertIsNotNone(self.ctx.channel)
        # And it checks that root for real: a temporary directory laid out
        # like resctrl is not a resctrl mount, so nothing is written.
        exc = self.assertRaises(exception.ResctrlError,
                                resq_agent.privsep.resctrl.create_group,
                                'resq-x')
        self.assertIn('%s is not a resctrl file system' % self.tree.root,
                      str(exc))
        self.assertFalse(os.path.exists(os.path.join(self.tree.root,
                                                     'resq-x')))
