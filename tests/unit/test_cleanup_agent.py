"""resq-agent cleanup: the agent's resctrl groups on a temporary tree."""

import contextlib
import io
import json
import os

import fixtures

from resq_agent import cleanup
from resq_agent.cmd import agent
import resq_agent.privsep
import resq_agent.privsep.resctrl as priv
from resq_common import privsep
from resq_common import resctrl
from tests import base
from tests.fixtures import resctrl as resctrl_fixture


def fake_proc(root, processes):
    """A /proc-like tree: ``{pid: argv}``."""
    for pid, argv in processes.items():
        os.makedirs(os.path.join(root, str(pid)))
        with open(os.path.join(root, str(pid), 'cmdline'), 'wb') as f:
            f.write(b'\0'.join(a.encode() for a in argv) + b'\0')
    os.makedirs(os.path.join(root, 'self'), exist_ok=True)


class RunningAgentsTest(base.TestCase):

    def test_finds_only_resq_agent_run(self):
        proc = os.path.join(self.tmp, 'proc')
        fake_proc(proc, {
            101: ['/usr/bin/python3', '/usr/local/bin/resq-agent',
                  '--config-file', '/etc/resq/resq-agent.conf', 'run'],
            102: ['/usr/local/bin/resq-agent', 'run'],
            103: ['/usr/local/bin/resq-agent', 'status'],
            104: ['vim', 'resq-agent', 'run'],
            105: ['/usr/bin/resq-agent-privsep', 'run'],
        })
        self.assertEqual([101, 102], cleanup.running_agents(proc))
        exc = self.assertRaises(cleanup.AgentRunning,
                                cleanup.check_not_running, proc)
        self.assertIn('pid 101, 102', str(exc))
        self.assertIn('systemctl stop resq-agent', str(exc))


class CleanupTestBase(base.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(base.PrivsepInProcess(self.conf))
        self.tree = self.useFixture(resctrl_fixture.ResctrlTree(
            ways=11, domains=(0, 1), foreign=('other-app',), kernel=True))
        self.root = self.tree.root
        self.flags('resq_agent', resctrl_root=self.root)
        # What the agent leaves: two instance groups, a monitoring group,
        # a shrunk default group; the profiler's group is not its own.
        priv.create_group('resq-cos1')
        priv.write_l3_masks('resq-cos1', {0: 0x7, 1: 0x7})
        priv.assign_cpus('resq-cos1', [2, 3])
        priv.create_group('resq-0a1b')
        priv.create_mon_group('resq-cos1', 'resq-vm1', [2])
        os.makedirs(os.path.join(self.root, 'resq-profiler-run1'))
        priv.write_default_l3_masks({0: 0x7f8, 1: 0x7f8})
        self.proc = os.path.join(self.tmp, 'proc')
        fake_proc(self.proc, {})
        self.useFixture(fixtures.MonkeyPatch(
            'resq_agent.cleanup.PROC_ROOT', self.proc))
        self.conf_file = os.path.join(self.tmp, 'agent.conf')
        with open(self.conf_file, 'w') as f:
            f.write('[resq_agent]\nresctrl_root = %s\n' % self.root)

    def run_main(self, *args):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = agent.main(['cleanup', '--config-file', self.conf_file]
                            + list(args))
        return rc, out.getvalue(), err.getvalue()

    def groups(self):
        return resctrl.Resctrl(self.root).groups()


class AgentCleanupTest(CleanupTestBase):

    def test_dry_run_changes_nothing(self):
        before = (self.groups(), self.tree.read('schemata'))
        rc, out, err = self.run_main('--dry-run')
        self.assertEqual(0, rc, err)
        doc = json.loads(out)
        self.assertEqual(['resq-0a1b', 'resq-cos1'], doc['groups'])
        self.assertEqual(['other-app', 'resq-profiler-run1'], doc['kept'])
        self.assertEqual({'0': '7ff', '1': '7ff'}, doc['default_l3_masks'])
        self.assertNotIn('actions', doc)
        self.assertEqual(before, (self.groups(), self.tree.read('schemata')))

    def test_removes_only_the_agents_groups_and_widens_default(self):
        rc, out, err = self.run_main()
        self.assertEqual(0, rc, err)
        doc = json.loads(out)
        self.assertEqual(['removed', 'removed', 'written'],
                         [a['outcome'] for a in doc['actions']])
        self.assertEqual(['other-app', 'resq-profiler-run1'], self.groups())
        sch = resctrl.parse_schemata(self.tree.read('schemata'))
        self.assertEqual({0: 0x7ff, 1: 0x7ff}, sch['L3'])
        # A second run finds nothing.
        rc, out, err = self.run_main()
        self.assertEqual(0, rc, err)
        doc = json.loads(out)
        self.assertEqual([], doc['groups'])
        self.assertEqual({}, doc['default_l3_masks'])
        self.assertEqual([], doc['actions'])

    def test_the_default_groups_bandwidth_limit_is_lifted(self):
        tree = self.useFixture(resctrl_fixture.ResctrlTree(
            ways=11, domains=(0, 1), foreign=(), kernel=True,
            resources={'MB': {}}))
        self.flags('resq_agent', resctrl_root=tree.root)
        priv.write_default_l3_masks({0: 0x7ff, 1: 0x7ff}, mb={0: 30, 1: 100})
        doc = cleanup.plan(tree.root)
        self.assertEqual({'0': 100}, doc['default_mb'])
        self.assertEqual({'0': '7ff', '1': '7ff'}, doc['default_l3_masks'])
        self.assertTrue(cleanup.execute(doc))
        self.assertEqual('L3:0=7ff;1=7ff\nMB:0=100;1=100\n',
                         tree.read('schemata'))
        self.assertEqual({}, cleanup.plan(tree.root)['default_mb'])

    def test_refused_while_the_agent_runs(self):
        # Never this test's own pid (which the check skips): it once was
        # 4242 on a busy machine.
        pid = os.getpid() + 1000000
        fake_proc(self.proc, {pid: ['/usr/local/bin/resq-agent', 'run']})
        before = self.groups()
        rc, out, err = self.run_main()
        self.assertEqual(1, rc)
        self.assertIn('resq-agent run is still running on this host '
                      '(pid %d)' % pid, err)
        self.assertEqual(before, self.groups())
        # Looking is allowed.
        rc, out, err = self.run_main('--dry-run')
        self.assertEqual(0, rc, err)
        self.assertEqual(['resq-0a1b', 'resq-cos1'],
                         json.loads(out)['groups'])

    def test_a_failed_removal_is_reported_and_default_not_widened(self):
        real = priv.remove_group

        def remove(group):
            if group == 'resq-cos1':
                raise OSError('Device or resource busy')
            return real(group)

        self.useFixture(fixtures.MonkeyPatch(
            'resq_agent.privsep.resctrl.remove_group', remove))
        rc, out, err = self.run_main()
        self.assertEqual(1, rc)
        doc = json.loads(out)
        outcomes = {a.get('group', 'default'): a for a in doc['actions']}
        self.assertEqual('removed', outcomes['resq-0a1b']['outcome'])
        self.assertEqual('failed', outcomes['resq-cos1']['outcome'])
        self.assertIn('busy', outcomes['resq-cos1']['error'])
        self.assertEqual('skipped', outcomes['default']['outcome'])
        self.assertIn('resq-cos1', self.groups())
        self.assertEqual(
            {0: 0x7f8, 1: 0x7f8},
            resctrl.parse_schemata(self.tree.read('schemata'))['L3'])

    def test_a_failed_removal_is_said_on_stderr(self):
        def remove(group):
            raise OSError('Device or resource busy')

        self.useFixture(fixtures.MonkeyPatch(
            'resq_agent.privsep.resctrl.remove_group', remove))
        rc, out, err = self.run_main()
        self.assertEqual(1, rc)
        self.assertEqual(
            ['ERROR: resctrl group resq-0a1b was not removed: Device or '
             'resource busy; run "resq-agent cleanup" again once that is '
             'fixed',
             'ERROR: resctrl group resq-cos1 was not removed: Device or '
             'resource busy; run "resq-agent cleanup" again once that is '
             'fixed'],
            [ln for ln in err.splitlines() if ln.startswith('ERROR')])


class PrivsepUnavailableTest(CleanupTestBase):
    """The privileged side cannot be had: why, and the fix, on stderr."""

    def setUp(self):
        super().setUp()
        # The calls go to a privileged daemon again (the base set-up made
        # the agent's groups in-process).
        resq_agent.privsep.resctrl_pctxt.set_client_mode(True)
        self.addCleanup(resq_agent.privsep.resctrl_pctxt.stop)
        self.before = self.groups()

    def check(self, err, rc, out):
        self.assertEqual(1, rc)
        lines = err.splitlines()
        errors = [ln for ln in lines if ln.startswith('ERROR')]
        self.assertEqual(1, len(errors), err)
        doc = json.loads(out)
        outcomes = [a['outcome'] for a in doc['actions']]
        # The first call failed; nothing else was tried.
        self.assertEqual(['failed', 'skipped', 'skipped'], outcomes)
        self.assertEqual(self.before, self.groups())
        return errors[0]

    def test_the_helper_does_not_start(self):
        with open(self.conf_file, 'a') as f:
            f.write('[resq_privsep_resctrl]\nhelper_command = sh -c "echo '
                    'sudo: a terminal is required to read the password >&2; '
                    'exit 1" privsep-helper\n')
        rc, out, err = self.run_main()
        self.assertEqual(
            'ERROR: the resctrl context of resq-agent cannot make privileged '
            'calls: its privileged daemon could not be started (privsep '
            'helper command exited non-zero (1): sudo: a terminal is '
            'required to read the password); start it as root (systemctl '
            'start resq-privsep-resctrl) and set [resq_privsep_resctrl] '
            'daemon_socket = /run/resq-privsep/resctrl.sock in the agent\'s '
            'configuration, or run "resq-agent cleanup" as root',
            self.check(err, rc, out))

    def test_the_helper_cannot_be_run(self):
        helper = os.path.join(self.tmp, 'no-such-helper')
        with open(self.conf_file, 'a') as f:
            f.write('[resq_privsep_resctrl]\nhelper_command = %s\n'
                    % helper)
        rc, out, err = self.run_main()
        self.assertIn('its privileged daemon could not be started (cannot '
                      'run the privsep helper (%s): No such file or '
                      'directory); start it as root' % helper,
                      self.check(err, rc, out))

    def test_the_daemon_is_not_there(self):
        sock = os.path.join(self.tmp, 'resctrl.sock')
        with open(self.conf_file, 'a') as f:
            f.write('[resq_privsep_resctrl]\ndaemon_socket = %s\n' % sock)
        connect = privsep._connect
        self.useFixture(fixtures.MonkeyPatch(
            'resq_common.privsep._connect',
            lambda sock, path, wait: connect(sock, path, 0)))
        rc, out, err = self.run_main()
        line = self.check(err, rc, out)
        self.assertTrue(line.startswith(
            'ERROR: the resctrl context of resq-agent cannot make privileged '
            'calls: cannot reach the privileged daemon of '
            'resq_agent.privsep.resctrl_pctxt at %s (No such file or '
            'directory)' % sock), line)
        self.assertIn('systemctl status resq-privsep-resctrl', line)
