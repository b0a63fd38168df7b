"""Monitoring groups: the privileged writer and the fake kernel's rules."""

import errno
import os

from resq_agent import monitor
import resq_agent.privsep.resctrl
from resq_common import exception
from resq_common import resctrl
from resq_common import resctrl_writer
from resq_fake import resctrl as fake_resctrl
from tests import base
from tests.fixtures import resctrl as resctrl_fixture


def snapshot(root):
    """``{relative path: content}`` of every file, and every directory."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        out[rel + '/'] = None
        for name in filenames:
            with open(os.path.join(dirpath, name)) as f:
                out[os.path.join(rel, name)] = f.read()
    return out


class MonGroupWriterTest(base.TestCase):
    """The agent's privileged calls on a tree behind the fake kernel."""

    kernel = True
    num_rmids = 8

    def setUp(self):
        super().setUp()
        self.useFixture(base.PrivsepInProcess(self.conf))
        self.tree = self.useFixture(resctrl_fixture.ResctrlTree(
            ways=20, domains=(0, 1),
            foreign=('other-app', 'resq-profiler-x'),
            num_rmids=self.num_rmids, kernel=self.kernel))
        self.root = self.tree.root
        self.flags('resq_agent', resctrl_root=self.root)
        self.mod = resq_agent.privsep.resctrl
        self.rt = resctrl.Resctrl(self.root)
        self.mod.create_group('resq-od0-0')
        self.mod.assign_cpus('resq-od0-0', [3, 4, 5])

    def mon_path(self, *parts):
        return os.path.join(self.root, 'resq-od0-0', 'mon_groups', *parts)

    def test_create_counts_the_cpus_and_is_idempotent(self):
        path = self.mod.create_mon_group('resq-od0-0', 'resq-nf-a', [4, 3])
        self.assertEqual(self.mon_path('resq-nf-a'), path)
        self.assertEqual((3, 4), self.rt.read_mon_cpus('resq-od0-0',
                                                       'resq-nf-a'))
        # The kernel makes the counters on mkdir; a plain tree has none.
        self.assertEqual(self.kernel, os.path.isfile(self.mon_path(
            'resq-nf-a', 'mon_data', 'mon_L3_01', 'mbm_total_bytes')))
        self.mod.create_mon_group('resq-od0-0', 'resq-nf-a', [5])
        self.assertEqual((5,), self.rt.read_mon_cpus('resq-od0-0',
                                                     'resq-nf-a'))
        self.assertEqual(['resq-nf-a'], self.rt.mon_groups('resq-od0-0'))
        self.assertTrue(self.mod.remove_mon_group('resq-od0-0', 'resq-nf-a'))
        self.assertFalse(self.mod.remove_mon_group('resq-od0-0',
                                                   'resq-nf-a'))
        self.assertEqual([], self.rt.mon_groups('resq-od0-0'))

    def test_cpus_outside_the_parent_are_refused(self):
        exc = self.assertRaises(exception.ResctrlError,
                                self.mod.create_mon_group, 'resq-od0-0',
                                'resq-nf-a', [5, 6, 7])
        self.assertIn('CPUs 6,7 are not CPUs of resctrl group resq-od0-0 '
                      '(it has 3,4,5)', exc.message)
        self.assertIn('subset of its parent', exc.message)
        # Refused before anything was made: no RMID taken.
        self.assertFalse(os.path.exists(self.mon_path('resq-nf-a')))
        for cpus, what in (([], 'needs at least one CPU'),
                           ('3', 'must be a list of integers'),
                           ([True], 'must be integers')):
            exc = self.assertRaises(exception.ResctrlError,
                                    self.mod.create_mon_group, 'resq-od0-0',
                                    'resq-nf-a', cpus)
            self.assertIn(what, exc.message)

    def test_names_and_groups_the_agent_does_not_own_are_refused(self):
        before = snapshot(self.root)
        for group, mon, what in (
                ('other-app', 'resq-nf-a', 'is not one of ours'),
                ('resq-profiler-x', 'resq-nf-a', "is not resq-agent's"),
                ('resq-od0-0', 'nf-a', 'is not one of ours'),
                ('resq-od0-0', '../resq-x', 'is not one of ours'),
                ('resq-od0-1', 'resq-nf-a', 'does not exist')):
            for call in (lambda: self.mod.create_mon_group(group, mon, [3]),
                         lambda: self.mod.remove_mon_group(group, mon)):
                exc = self.assertRaises(exception.ResctrlError, call)
                self.assertIn(what, exc.message, (group, mon))
        self.assertEqual(before, snapshot(self.root))

    def test_parent_without_cpus_list_is_named(self):
        self.mod.create_group('resq-od0-1')
        cpus = os.path.join(self.root, 'resq-od0-1', 'cpus_list')
        if os.path.exists(cpus):
            os.unlink(cpus)
        exc = self.assertRaises(exception.ResctrlError,
                                self.mod.create_mon_group, 'resq-od0-1',
                                'resq-nf-a', [3])
        self.assertIn('cannot read the CPUs of resctrl group resq-od0-1',
                      exc.message)

    def test_symlinked_mon_group_is_refused(self):
        outside = os.path.join(self.tmp, 'outside')
        os.mkdir(outside)
        os.symlink(outside, self.mon_path('resq-nf-a'))
        exc = self.assertRaises(exception.ResctrlError,
                                self.mod.create_mon_group, 'resq-od0-0',
                                'resq-nf-a', [3])
        self.assertIn('symbolic link', exc.message)
        self.assertEqual([], os.listdir(outside))

    def test_rmid_exhaustion_is_named(self):
        # 8 RMIDs: the default group, other-app, resq-profiler-x and
        # resq-od0-0 hold 4; four monitoring groups fit.
        for n in range(4):
            self.mod.create_mon_group('resq-od0-0', 'resq-nf-%d' % n,
                                      [3 + n % 3])
        exc = self.assertRaises(exception.RmidsExhausted,
                                self.mod.create_mon_group, 'resq-od0-0',
                                'resq-nf-9', [3])
        self.assertIn('info/L3_MON/num_rmids', exc.message)
        self.assertFalse(os.path.exists(self.mon_path('resq-nf-9')))
        # An existing one is rewritten without a new RMID.
        self.mod.create_mon_group('resq-od0-0', 'resq-nf-0', [5])
        self.mod.remove_mon_group('resq-od0-0', 'resq-nf-1')
        self.mod.create_mon_group('resq-od0-0', 'resq-nf-9', [3])

    def test_no_l3_monitoring_is_named(self):
        os.unlink(os.path.join(self.root, 'info', 'L3_MON', 'num_rmids'))
        exc = self.assertRaises(exception.MonitoringUnavailable,
                                self.mod.create_mon_group, 'resq-od0-0',
                                'resq-nf-a', [3])
        self.assertIn('no info/L3_MON', exc.message)

    def test_monitor_reads_the_mon_group(self):
        self.mod.create_mon_group('resq-od0-0', 'resq-nf-a', [3])
        base_ = self.mon_path('resq-nf-a', 'mon_data', 'mon_L3_00')
        now = [10.0]
        mon = monitor.Monitor(self.root, 0, clock=lambda: now[0])
        for value in (1000, 3000):
            for name in ('llc_occupancy', 'mbm_total_bytes'):
                with open(os.path.join(base_, name), 'w') as f:
                    f.write('%d\n' % value)
            sample = mon.sample('resq-od0-0', 'resq-nf-a')
            now[0] += 2
        self.assertEqual(3000, sample['llc_occupancy_bytes'])
        self.assertEqual(1000.0, sample['mbm_total_bytes_per_s'])
        # The control group's own history is another key.
        self.assertIsNone(mon.sample('resq-od0-0')['mbm_total_bytes_per_s'])


class MonGroupPlainTreeTest(MonGroupWriterTest):
    """The same calls on plain directories (devstack's fake tree).

    Without the kernel nothing checks the rules but the writer, so every
    refusal above must come from it; there are no counters to read.
    """

    kernel = False

    def setUp(self):
        super().setUp()
        # A plain mkdir makes no mon_groups; a tree copied from a host
        # with monitoring has it.
        os.mkdir(self.mon_path())

    def test_monitor_reads_the_mon_group(self):
        # A plain mkdir makes no counters: the monitor reports nothing
        # rather than zeros it did not read.
        self.mod.create_mon_group('resq-od0-0', 'resq-nf-a', [3])
        mon = monitor.Monitor(self.root, 0, clock=lambda: 10.0)
        sample = mon.sample('resq-od0-0', 'resq-nf-a')
        self.assertIsNone(sample['mbm_total_bytes_per_s'])
        self.assertIsNone(sample['llc_occupancy_bytes'])
        self.assertEqual({}, sample['per_domain'])

    def test_no_mon_groups_directory_is_named(self):
        os.rmdir(self.mon_path())
        exc = self.assertRaises(exception.MonitoringUnavailable,
                                self.mod.create_mon_group, 'resq-od0-0',
                                'resq-nf-a', [3])
        self.assertIn('has no mon_groups directory', exc.message)
        self.assertFalse(self.mod.remove_mon_group('resq-od0-0',
                                                   'resq-nf-a'))


class FakeKernelTest(base.TestCase):
    """The kernel's side as fake_resctrl.Kernel models it."""

    def setUp(self):
        super().setUp()
        self.tree = self.useFixture(resctrl_fixture.ResctrlTree(
            ways=20, domains=(0,), num_closids=4, num_rmids=5, foreign=()))
        self.root = self.tree.root
        self.kernel = fake_resctrl.Kernel(self.root)
        self.fds = []

    def tearDown(self):
        for fd in self.fds:
            os.close(fd)
        super().tearDown()

    def fd(self, *parts):
        fd = os.open(os.path.join(self.root, *parts), os.O_RDONLY)
        self.fds.append(fd)
        return fd

    def write(self, text, *parts):
        self.kernel.write_file(self.fd(*parts[:-1]), parts[-1], text, False,
                               'test')

    def read(self, *parts):
        with open(os.path.join(self.root, *parts)) as f:
            return f.read()

    def test_groups_cpus_and_limits(self):
        k = self.kernel
        k.mkdir('g1', self.fd())
        self.assertEqual('L3:0=fffff\n', self.read('g1', 'schemata'))
        self.assertTrue(os.path.isdir(os.path.join(self.root, 'g1',
                                                   'mon_groups')))
        self.write('1-3\n', 'g1', 'cpus_list')
        k.mkdir('m1', self.fd('g1', 'mon_groups'))
        k.mkdir('m2', self.fd('g1', 'mon_groups'))
        self.assertEqual('0\n', self.read('g1', 'mon_groups', 'm1',
                                          'mon_data', 'mon_L3_00',
                                          'llc_occupancy'))
        # Not a subset of the parent's CPUs: EINVAL, nothing written.
        exc = self.assertRaises(OSError, self.write, '3-4',
                                'g1', 'mon_groups', 'm1', 'cpus_list')
        self.assertEqual(errno.EINVAL, exc.errno)
        self.assertEqual("Can only assign subset of parent's cpus\n",
                         self.read('info', 'last_cmd_status'))
        self.assertEqual('\n', self.read('g1', 'mon_groups', 'm1',
                                         'cpus_list'))
        self.write('2-3', 'g1', 'mon_groups', 'm1', 'cpus_list')
        # A CPU moves from the sibling monitoring group.
        self.write('3', 'g1', 'mon_groups', 'm2', 'cpus_list')
        self.assertEqual('2\n', self.read('g1', 'mon_groups', 'm1',
                                          'cpus_list'))
        # A control group taking CPU 2 takes it from g1 and m1.
        k.mkdir('g2', self.fd())
        self.write('2', 'g2', 'cpus_list')
        self.assertEqual('1,3\n', self.read('g1', 'cpus_list'))
        self.assertEqual('\n', self.read('g1', 'mon_groups', 'm1',
                                         'cpus_list'))
        # g1 dropping CPU 3 drops it from m2.
        self.write('1', 'g1', 'cpus_list')
        self.assertEqual('\n', self.read('g1', 'mon_groups', 'm2',
                                         'cpus_list'))
        # 5 RMIDs: default, g1, m1, m2, g2.
        exc = self.assertRaises(OSError, k.mkdir, 'm3',
                                self.fd('g1', 'mon_groups'))
        self.assertEqual(errno.ENOSPC, exc.errno)
        # rmdir of a control group takes its monitoring groups along.
        k.rmdir('g1', self.fd())
        k.mkdir('g3', self.fd())
        k.mkdir('m1', self.fd('g3', 'mon_groups'))
        # 4 classes of service: default, g2, g3 and one more.
        k.mkdir('g4', self.fd())
        exc = self.assertRaises(OSError, k.mkdir, 'g5', self.fd())
        self.assertEqual(errno.ENOSPC, exc.errno)
        # mkdir anywhere else is not allowed.
        exc = self.assertRaises(OSError, k.mkdir, 'x', self.fd('g3'))
        self.assertEqual(errno.EPERM, exc.errno)

    def test_writer_uses_the_installed_kernel(self):
        self.assertIsInstance(resctrl_writer.SYSCALLS,
                              resctrl_writer.Syscalls)
        self.assertNotIsInstance(resctrl_writer.SYSCALLS,
                                 fake_resctrl.Kernel)
        tree = self.useFixture(resctrl_fixture.ResctrlTree(kernel=True))
        self.assertIsInstance(resctrl_writer.SYSCALLS, fake_resctrl.Kernel)
        self.assertEqual(os.path.realpath(tree.root),
                         resctrl_writer.SYSCALLS.root)
