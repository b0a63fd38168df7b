"""CPUs of groups the agent does not own stay theirs.

Writing a group's ``cpus_list`` moves each CPU out of whichever control or
monitoring group held it (the kernel's ``cpus_ctrl_write``; the fake
kernel does the same). An attacker holding the agent's user once took
another tool's CPUs, the profiler's and a monitoring group's this way,
under a group of 1 way and the lowest memory bandwidth.
"""

import os

import resq_agent.privsep.resctrl as agent
from resq_common import exception
from resq_common import resctrl
import resq_profiler.privsep.resctrl as profiler
from tests import base
from tests.fixtures import resctrl as resctrl_fixture


def _write(path, text):
    with open(path, 'w') as f:
        f.write(text)


class CpuOwnersTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(base.PrivsepInProcess(self.conf))
        self.tree = self.useFixture(resctrl_fixture.ResctrlTree(
            ways=20, domains=(0, 1), kernel=True,
            resources={'MB': {'min_bandwidth': 10, 'bandwidth_gran': 10}}))
        self.flags('resq_agent', resctrl_root=self.tree.root)
        self.flags('resq_profiler', resctrl_root=self.tree.root)
        root = self.tree.root
        # Another tool's group holds 2-5, a profiling run 6, a monitoring
        # group of the default group 8-9.
        _write(os.path.join(root, 'cpus_list'), '0-1,6-15\n')
        _write(os.path.join(root, 'other-app', 'cpus_list'), '2-5\n')
        profiler.create_group('resq-profiler-run')
        profiler.write_l3_masks('resq-profiler-run', {0: 0xff000})
        profiler.assign_cpus('resq-profiler-run', [6])
        os.mkdir(os.path.join(root, 'mon_groups', 'tool-mon'))
        _write(os.path.join(root, 'mon_groups', 'tool-mon', 'cpus_list'),
               '8-9\n')

    def cpus(self, *parts):
        return resctrl.parse_cpu_list(self.tree.read(*parts, 'cpus_list'))

    def test_others_cpus_are_refused_naming_the_holder(self):
        agent.create_group('resq-x')
        for cpus, holder in (([2, 3], 'other-app'),
                             ([6], 'resq-profiler-run'),
                             ([9], 'mon_groups/tool-mon')):
            [out] = agent.apply_ops([['cpus', 'x', 'resq-x', cpus]])
            self.assertIn('held by %s' % holder, out[1])
            self.assertIn('free them there first', out[1])
        self.assertEqual((2, 3, 4, 5), self.cpus('other-app'))
        self.assertEqual((6,), self.cpus('resq-profiler-run'))
        self.assertEqual((8, 9), self.cpus('mon_groups', 'tool-mon'))
        self.assertEqual((), self.cpus('resq-x'))

    def test_default_and_own_groups_cpus_move_as_before(self):
        agent.create_group('resq-x')
        agent.create_group('resq-y')
        self.assertEqual([None, None], agent.apply_ops([
            ['cpus', 'x', 'resq-x', [10, 11]],
            ['cpus', 'y', 'resq-y', [11, 12]]]))
        self.assertEqual((10,), self.cpus('resq-x'))
        self.assertEqual((11, 12), self.cpus('resq-y'))

    def test_the_profiler_cannot_take_the_agents(self):
        agent.create_group('resq-x')
        agent.assign_cpus('resq-x', [12])
        exc = self.assertRaises(exception.ResctrlError,
                                profiler.assign_cpus, 'resq-profiler-run',
                                [12])
        self.assertIn('held by resq-x', exc.message)
        self.assertEqual((12,), self.cpus('resq-x'))
