"""resq-agent cleanup: the agent's resctrl groups on a temporary tree."""

import contextlib
import io
import json
import os

import fixtures

from resq_agent import cleanup
from resq_agent.cmd import agent
import resq_agent.privsep.resctrl as priv
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


class AgentCleanupTest(base.TestCase):

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
