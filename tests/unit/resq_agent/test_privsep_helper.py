"""resq-privsep-helper: the caller chooses nothing root reads."""

import os

from resq_agent.cmd import privsep_helper
from tests import base

CTX = 'resq_agent.privsep.resctrl_pctxt'
SOCK = '/tmp/tmpab_12cd/privsep.sock'


class HelperTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.confdir = os.path.join(self.tmp, 'privsep')
        os.mkdir(self.confdir, 0o755)
        self.config = os.path.join(self.confdir, 'resq-agent-privsep.conf')
        with open(self.config, 'w') as f:
            f.write('[resq_agent]\nresctrl_root = /sys/fs/resctrl\n')
        os.chmod(self.config, 0o644)
        self.ran = []

    def run_helper(self, *argv):
        import sys

        def run():
            self.ran.append(list(sys.argv[1:]))
            return 0

        saved = list(sys.argv)
        self.addCleanup(setattr, sys, 'argv', saved)
        return privsep_helper.main(list(argv), config_file=self.config,
                                   run=run)

    def test_roots_file_and_the_checked_arguments_reach_the_daemon(self):
        rc = self.run_helper('--config-file', '/home/resq/evil.conf',
                             '--privsep_context', CTX,
                             '--privsep_sock_path', SOCK)
        self.assertEqual(0, rc)
        self.assertEqual([['--config-file', self.config,
                           '--privsep_context', CTX,
                           '--privsep_sock_path', SOCK]], self.ran)

    def test_injections_are_refused(self):
        cases = [
            # A second context after the first (oslo.config keeps the last).
            ('--privsep_context', CTX, '--privsep_sock_path', SOCK,
             '--privsep_context', 'other_project.privsep.write_any_pctxt'),
            ('--privsep_context', 'os_brick.privileged.default',
             '--privsep_sock_path', SOCK),
            ('--privsep_context', CTX, '--privsep_sock_path',
             '/tmp/../etc/privsep.sock'),
            ('--privsep_context', CTX, '--privsep_sock_path', SOCK,
             '--debug', 'true'),
            ('--privsep_context', CTX),
            ('--privsep_context',),
        ]
        for argv in cases:
            self.assertEqual(2, self.run_helper(*argv), argv)
        self.assertEqual([], self.ran)

    def test_a_config_file_others_can_write_is_refused(self):
        if os.geteuid() != 0:
            self.skipTest('root owns the file only when the tests are root')
        for path, mode in ((self.config, 0o664), (self.confdir, 0o777)):
            os.chmod(path, mode)
            self.assertEqual(2, self.run_helper(
                '--privsep_context', CTX, '--privsep_sock_path', SOCK))
            os.chmod(path, 0o644 if path == self.config else 0o755)
        self.assertEqual([], self.ran)
        self.assertEqual(0, self.run_helper(
            '--privsep_context', CTX, '--privsep_sock_path', SOCK))
