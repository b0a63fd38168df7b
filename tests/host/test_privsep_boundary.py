"""The agent's user cannot make root do its bidding (issue 41).

Each attack of :mod:`tests.host.boundary_attacks` runs against a daemon
with the defence under test turned off, where it must succeed (else the
test proves nothing), and against the real ``resq-privsep-daemon``, where
it must fail. Root, ``runuser`` and ``setpriv`` are needed: the lab
creates an unprivileged user and starts root's daemons; everything it
changes is undone in its clean-up.
"""

import glob
import os

from testtools import content

from tests import base
from tests.host import boundary_attacks as ba


class _LabTest(base.TestCase):

    def setUp(self):
        super().setUp()
        why = ba.Lab.unavailable()
        if why:
            self.skipTest(why)


class PrivsepBoundaryTest(_LabTest):

    def setUp(self):
        super().setUp()
        self.lab = ba.Lab()
        self.lab.setup()
        self.addCleanup(self.lab.cleanup)

    def run_attack(self, attack):
        outcome = attack(self.lab)
        self.addDetail('outcome', content.text_content(
            '%s: weakened=%s real=%s\n%s' % outcome))
        return outcome

    def check(self, attack):
        outcome = self.run_attack(attack)
        self.assertIs(True, outcome.against_weakened,
                      'the attack fails even against the weakened daemon, '
                      'so it proves nothing: %s' % outcome.detail)
        self.assertIs(False, outcome.against_real,
                      'the attack succeeds against the real daemon: %s'
                      % outcome.detail)
        return outcome

    def test_import_before_check(self):
        outcome = self.check(ba.attack_import_before_check)
        self.assertIn("is not one of this context's", outcome.detail)

    def test_exec_regains_nothing(self):
        outcome = self.check(ba.attack_exec_regains_nothing)
        self.assertIn('real: exec\'d shell CapEff=0 CapPrm=0 CapBnd=2',
                      outcome.detail)

    def test_pyc_plant(self):
        outcome = self.check(ba.attack_pyc_plant)
        self.assertIn('__pycache__ must be writable by root alone',
                      outcome.detail)

    def test_first_stage_pyc(self):
        outcome = self.check(ba.attack_first_stage_pyc)
        self.assertIn('real: .pyc not run; daemon started', outcome.detail)

    def test_intermediate_symlink(self):
        outcome = self.check(ba.attack_intermediate_symlink)
        self.assertIn('must belong to root', outcome.detail)

    def test_start_root_yourself(self):
        self.check(ba.attack_start_root_yourself)
        self.assertEqual([], glob.glob(ba.SUDOERS_PREFIX + '*'))

    def test_socket_dir_precreated(self):
        outcome = self.check(ba.attack_socket_dir_precreated)
        self.assertIn('real: refused to start', outcome.detail)

    def test_socket_dir_symlink(self):
        outcome = self.check(ba.attack_socket_dir_symlink)
        self.assertIn('real: refused to start', outcome.detail)

    def test_impostor_socket(self):
        outcome = self.check(ba.attack_impostor_socket)
        self.assertIn('not root: refusing', outcome.detail)

    def test_foreign_user(self):
        self.check(ba.attack_foreign_user)

    def test_daemon_status(self):
        status = ba.real_daemon_status(self.lab)
        self.addDetail('status', content.json_content(status))
        self.assertNotEqual([], status['children'])
        for proc in [status] + status['children']:
            self.assertEqual('1', proc['NoNewPrivs'], proc)
            self.assertEqual('0000000000000002', proc['CapBnd'], proc)
            self.assertEqual('0000000000000000', proc['CapAmb'], proc)
            self.assertEqual('0000000000000000', proc['CapInh'], proc)
            self.assertEqual(0, int(proc['CapEff'], 16) & ~ba.RESCTRL_CAPS)


class LabCleanupTest(_LabTest):
    """The lab leaves nothing behind (sudoers above all)."""

    def test_cleanup(self):
        lab = ba.Lab()
        lab.setup()
        try:
            base_dir = lab.base
            pycache = lab.pycache_dirs()
            ba.attack_start_root_yourself(lab)
        finally:
            lab.cleanup()
        self.assertEqual([], glob.glob(ba.SUDOERS_PREFIX + '*'))
        self.assertFalse(os.path.exists(base_dir))
        self.assertFalse(os.path.exists(ba.PAYLOAD_DIR))
        self.assertEqual(set(), lab.pycache_dirs() - pycache)
        self.assertEqual([], lab.daemons)
        for pid in os.listdir('/proc'):
            if not pid.isdigit():
                continue
            try:
                with open('/proc/%s/cmdline' % pid, 'rb') as f:
                    self.assertNotIn(base_dir.encode(), f.read())
            except OSError:
                pass
