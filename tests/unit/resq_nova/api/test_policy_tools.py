"""oslo.policy's tools on resq-api's enforcer, as an operator runs them."""

import os
import subprocess
import sys

import fixtures

from tests import base


class PolicyToolsTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.policy = os.path.join(self.tmp, 'policy.yaml')
        self.conf = os.path.join(self.tmp, 'resq-api.conf')
        with open(self.conf, 'w') as f:
            f.write('[oslo_policy]\npolicy_file = %s\n' % self.policy)

    def validate(self, *args, **env):
        tool = os.path.join(os.path.dirname(sys.executable),
                            'oslopolicy-validator')
        if not os.path.exists(tool):
            self.skipTest('oslopolicy-validator is not installed here')
        environ = dict(os.environ, HOME=self.tmp)
        environ.pop('RESQ_API_CONFIG', None)
        environ.update(env)
        return subprocess.run([tool, '--namespace', 'resq-api'] + list(args),
                              capture_output=True, text=True, env=environ,
                              cwd=self.tmp, timeout=120)

    def write_policy(self, text):
        with open(self.policy, 'w') as f:
            f.write(text)

    def test_validator_reads_the_file_resq_api_reads(self):
        self.write_policy('"resq:profiles:list": "role:reader"\n')
        for how in ({'RESQ_API_CONFIG': self.conf}, {}):
            args = () if how else ('--config-file', self.conf)
            proc = self.validate(*args, **how)
            self.assertEqual(0, proc.returncode, proc.stdout + proc.stderr)
            self.assertNotIn('Traceback', proc.stderr)
        # A rule naming one that does not exist is found, not a crash.
        self.write_policy('"resq:profiles:list": "rule:no_such_rule"\n')
        proc = self.validate(RESQ_API_CONFIG=self.conf)
        self.assertEqual(1, proc.returncode, proc.stdout + proc.stderr)
        self.assertIn('Invalid rules found', proc.stdout + proc.stderr)
        self.assertNotIn('Traceback', proc.stderr)
