"""The fake resctrl tree mounted through FUSE answers as the kernel's.

Plain system calls on the mount (what libvirtd, ``echo`` and the agent's
privsep daemon make), then the project's own writer and discovery on it.
"""

import errno
import os
import pwd
import subprocess
import sys
import tempfile

from resq_agent import discovery
from resq_common import exception
from resq_common import resctrl
from resq_common import resctrl_writer
from resq_fake import resctrl as fake_resctrl
from tests import base
from tests.fixtures import resctrl_fuse


class ResctrlFuseTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.fs = self.useFixture(resctrl_fuse.ResctrlFuse(
            ways=20, domains=1, num_closids=4, num_rmids=16))
        self.mount = self.fs.mount

    def path(self, *parts):
        return os.path.join(self.mount, *parts)

    def read(self, *parts):
        with open(self.path(*parts), encoding='ascii') as f:
            return f.read()

    def write(self, text, *parts):
        # open('w') is O_WRONLY | O_CREAT | O_TRUNC, then one write(2), as
        # libvirt and echo do it.
        with open(self.path(*parts), 'w', encoding='ascii') as f:
            f.write(text)

    def assertErrno(self, err, func, *args):
        exc = self.assertRaises(OSError, func, *args)
        self.assertEqual(err, exc.errno, exc)
        return exc

    def test_mounted_kernel_like(self):
        self.assertTrue(os.path.ismount(self.mount))
        st = os.stat(self.path('schemata'))
        self.assertEqual(0o644, st.st_mode & 0o777)
        self.assertEqual(0o444, os.stat(self.path(
            'info', 'L3', 'cbm_mask')).st_mode & 0o777)
        self.assertEqual('L3:0=fffff\n', self.read('schemata'))
        self.assertEqual('fffff\n', self.read('info', 'L3', 'cbm_mask'))
        self.assertEqual(255, os.statvfs(self.mount).f_namemax)
        self.assertErrno(errno.EACCES, open,
                         self.path('info', 'L3', 'cbm_mask'), 'w')

    def test_mkdir_makes_group_files(self):
        os.mkdir(self.path('g1'))
        self.assertEqual(
            ['cpus_list', 'mon_data', 'mon_groups', 'schemata', 'tasks'],
            sorted(os.listdir(self.path('g1'))))
        self.assertEqual('L3:0=fffff\n', self.read('g1', 'schemata'))
        self.assertEqual(['llc_occupancy', 'mbm_local_bytes',
                          'mbm_total_bytes'],
                         sorted(os.listdir(self.path('g1', 'mon_data',
                                                     'mon_L3_00'))))
        os.mkdir(self.path('g1', 'mon_groups', 'm1'))
        self.assertTrue(os.path.isfile(self.path('g1', 'mon_groups', 'm1',
                                                 'cpus_list')))
        self.assertErrno(errno.EEXIST, os.mkdir, self.path('g1'))

    def test_mkdir_outside_mon_groups_refused(self):
        os.mkdir(self.path('g1'))
        self.assertErrno(errno.EPERM, os.mkdir, self.path('g1', 'sub'))
        self.assertErrno(errno.EPERM, os.mkdir, self.path('info', 'x'))

    def test_classes_of_service_run_out_and_rmdir_frees(self):
        # The default group holds one of the 4 classes.
        for name in ('g1', 'g2', 'g3'):
            os.mkdir(self.path(name))
        self.assertErrno(errno.ENOSPC, os.mkdir, self.path('g4'))
        self.assertEqual('Out of CLOSIDs\n',
                         self.read('info', 'last_cmd_status'))
        os.rmdir(self.path('g2'))
        self.assertFalse(os.path.exists(self.path('g2')))
        self.assertFalse(os.path.exists(os.path.join(self.fs.backing,
                                                     'g2')))
        os.mkdir(self.path('g4'))
        self.assertErrno(errno.EPERM, os.rmdir, self.path('info'))

    def test_schemata_writes(self):
        os.mkdir(self.path('g1'))
        exc = self.assertErrno(errno.EINVAL, self.write, 'L3:0=f0f\n',
                               'g1', 'schemata')
        self.assertIn('Invalid argument', str(exc))
        self.assertEqual('The mask f0f has non-consecutive 1-bits\n',
                         self.read('info', 'last_cmd_status'))
        self.assertErrno(errno.EINVAL, self.write, 'L3:0=100000\n',
                         'g1', 'schemata')
        self.assertEqual('Mask out of range\n',
                         self.read('info', 'last_cmd_status'))
        self.assertEqual('L3:0=fffff\n', self.read('g1', 'schemata'))
        self.write('L3:0=ff0\n', 'g1', 'schemata')
        self.assertEqual('L3:0=ff0\n', self.read('g1', 'schemata'))
        self.assertEqual('ok\n', self.read('info', 'last_cmd_status'))
        # The kernel takes only a line that ends in a newline.
        self.assertErrno(errno.EINVAL, self.write, 'L3:0=f', 'g1',
                         'schemata')

    def test_each_write_applied(self):
        os.mkdir(self.path('g1'))
        fd = os.open(self.path('g1', 'schemata'), os.O_WRONLY | os.O_TRUNC)
        try:
            os.write(fd, b'L3:0=f\n')
            self.assertEqual('L3:0=f\n', self.read('g1', 'schemata'))
            os.write(fd, b'L3:0=f0\n')
        finally:
            os.close(fd)
        self.assertEqual('L3:0=f0\n', self.read('g1', 'schemata'))

    def test_cpus_move_between_groups(self):
        os.mkdir(self.path('g1'))
        os.mkdir(self.path('g2'))
        self.write('0-3\n', 'g1', 'cpus_list')
        self.assertEqual('4-7\n', self.read('cpus_list'))
        self.write('2-5\n', 'g2', 'cpus_list')
        self.assertEqual('0-1\n', self.read('g1', 'cpus_list'))
        self.assertEqual('6-7\n', self.read('cpus_list'))
        os.mkdir(self.path('g1', 'mon_groups', 'm1'))
        self.assertErrno(errno.EINVAL, self.write, '0-2\n', 'g1',
                         'mon_groups', 'm1', 'cpus_list')
        self.assertEqual("Can only assign subset of parent's cpus\n",
                         self.read('info', 'last_cmd_status'))
        self.write('1\n', 'g1', 'mon_groups', 'm1', 'cpus_list')
        self.assertEqual('1\n', self.read('g1', 'mon_groups', 'm1',
                                          'cpus_list'))
        self.assertErrno(errno.EINVAL, self.write, '0-5\n', 'cpus_list')
        self.assertEqual("Can't drop CPUs from default group\n",
                         self.read('info', 'last_cmd_status'))
        os.rmdir(self.path('g2'))
        self.assertEqual('2-7\n', self.read('cpus_list'))

    def test_tasks(self):
        os.mkdir(self.path('g1'))
        pid = os.getpid()
        self.write('%d\n' % pid, 'g1', 'tasks')
        self.assertIn(str(pid), self.read('g1', 'tasks').split())
        self.assertNotIn(str(pid), self.read('tasks').split())
        self.write('%d\n' % pid, 'tasks')
        self.assertNotIn(str(pid), self.read('g1', 'tasks').split())
        self.assertErrno(errno.EINVAL, self.write, 'abc\n', 'g1', 'tasks')
        # Above the largest pid_max: no such task.
        gone = (1 << 22) + 1
        self.assertErrno(errno.ESRCH, self.write, '%d\n' % gone, 'g1',
                         'tasks')
        self.assertEqual('No task %d\n' % gone,
                         self.read('info', 'last_cmd_status'))
        # 0 is the writer itself.
        self.write('0\n', 'g1', 'tasks')
        self.assertIn(str(pid), self.read('g1', 'tasks').split())

    def test_monitoring_counters_from_backing_tree(self):
        os.mkdir(self.path('g1'))
        counter = ('g1', 'mon_data', 'mon_L3_00', 'llc_occupancy')
        with open(os.path.join(self.fs.backing, *counter), 'w') as f:
            f.write('1234567\n')
        self.assertEqual('1234567\n', self.read(*counter))
        self.assertErrno(errno.EACCES, self.write, '0\n', *counter)

    def test_files_cannot_be_made_or_removed(self):
        os.mkdir(self.path('g1'))
        self.assertErrno(errno.EACCES, self.write, 'x', 'g1', 'new')
        self.assertErrno(errno.EPERM, os.unlink, self.path('g1', 'tasks'))
        self.assertErrno(errno.EPERM, os.rename, self.path('g1'),
                         self.path('g2'))
        self.assertErrno(errno.EPERM, os.symlink, 'schemata',
                         self.path('g1', 'link'))
        self.assertErrno(errno.EPERM, os.chmod,
                         self.path('g1', 'schemata'), 0o666)
        self.assertTrue(os.path.isfile(self.path('g1', 'tasks')))

    def test_other_users_read_only(self):
        if os.geteuid() != 0:
            self.skipTest('running a command as nobody needs root')
        # This test's temporary directories are 0700: let others through
        # to the mount point (allow_other lets them into the mount).
        # Up to the first directory others may enter (/tmp); only mkdtemp's.
        path = os.path.dirname(self.mount)
        while not os.stat(path).st_mode & 0o001:
            if not os.path.basename(path).startswith(tempfile.template):
                self.fail('%s is not a temporary directory of this test; '
                          'not opening it to others' % path)
            os.chmod(path, os.stat(path).st_mode | 0o011)
            path = os.path.dirname(path)
        nobody = pwd.getpwnam('nobody')

        def as_nobody():
            os.setgid(nobody.pw_gid)
            os.setgroups([])
            os.setuid(nobody.pw_uid)

        script = 'cat "$1"; (echo "L3:0=f" > "$1") 2>/dev/null || echo refused'
        result = subprocess.run(
            ['/bin/sh', '-c', script, 'sh', self.path('schemata')],
            capture_output=True, text=True, timeout=60,
            preexec_fn=as_nobody)
        self.assertEqual('L3:0=fffff\nrefused\n', result.stdout,
                         result.stderr)

    def test_writer_creates_group_and_writes_mask(self):
        with resctrl_writer.Writer(self.mount, require_mount=False,
                                   owner=resctrl.AGENT) as w:
            w.create_group('resq-vm1')
            w.write_l3_masks('resq-vm1', {0: 0x3c})
            w.assign_cpus('resq-vm1', [2, 3])
            w.create_mon_group('resq-vm1', 'resq-m1', [3])
        self.assertEqual('L3:0=3c\n', self.read('resq-vm1', 'schemata'))
        self.assertEqual('2-3\n', self.read('resq-vm1', 'cpus_list'))
        self.assertEqual('3\n', self.read('resq-vm1', 'mon_groups',
                                          'resq-m1', 'cpus_list'))
        with resctrl_writer.Writer(self.mount, require_mount=False,
                                   owner=resctrl.AGENT) as w:
            w.remove_group('resq-vm1')
        self.assertFalse(os.path.exists(self.path('resq-vm1')))

    def test_writer_refuses_fuse_as_resctrl(self):
        # statfs says FUSE, not resctrl: the mount check still holds.
        writer = resctrl_writer.Writer(self.mount, owner=resctrl.AGENT)
        exc = self.assertRaises(exception.ResctrlError, writer.__enter__)
        self.assertIn('is not a resctrl file system', str(exc))

    def test_discovery(self):
        sysfs = os.path.join(self.tmp, 'sys')
        fake_resctrl.build_sysfs(sysfs, {0: tuple(range(8))}, ways=20,
                                 memory_mb=1024, hugepages_mb=0)
        topo = discovery.discover(self.mount, sysfs)
        self.assertTrue(topo.resctrl_available, topo.reason)
        self.assertEqual([0], [d.id for d in topo.domains])
        dom = topo.domains[0]
        self.assertEqual(20, dom.ways)
        self.assertEqual(tuple(range(8)), dom.cpus)
        self.assertEqual(4, topo.closid_limit)


class ResctrlFuseCommandTest(base.TestCase):

    def run_command(self, *args, env=None):
        cmd = [sys.executable, '-m', 'resq_fake.resctrl_fuse']
        return subprocess.run(cmd + list(args), capture_output=True,
                              text=True, timeout=60,
                              env=env or resctrl_fuse.environment())

    def test_missing_mount_point(self):
        missing = os.path.join(self.tmp, 'nowhere')
        result = self.run_command(missing, '--backing',
                                  os.path.join(self.tmp, 'b'))
        self.assertEqual(2, result.returncode)
        self.assertEqual('ERROR: mount point %s does not exist or is not a '
                         'directory\n' % missing, result.stderr)

    def test_missing_library_named(self):
        os.mkdir(os.path.join(self.tmp, 'm'))
        env = resctrl_fuse.environment()
        env['FUSE_LIBRARY_PATH'] = os.path.join(self.tmp, 'libfuse.so.3')
        result = self.run_command(os.path.join(self.tmp, 'm'), '--backing',
                                  os.path.join(self.tmp, 'b'), env=env)
        self.assertEqual(2, result.returncode)
        self.assertEqual(1, len(result.stderr.splitlines()), result.stderr)
        self.assertIn('install the Debian package libfuse3-3',
                      result.stderr)

    def test_daemon_returns_once_mounted(self):
        resctrl_fuse.check_fuse()
        mount = os.path.join(self.tmp, 'm')
        os.mkdir(mount)
        self.addCleanup(resctrl_fuse.unmount, mount)
        result = subprocess.run(
            resctrl_fuse.command(mount, os.path.join(self.tmp, 'b'),
                                 foreground=False, cpus='0-3'),
            capture_output=True, text=True, timeout=60,
            env=resctrl_fuse.environment())
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertTrue(os.path.ismount(mount))
        with open(os.path.join(mount, 'cpus_list')) as f:
            self.assertEqual('0-3\n', f.read())
