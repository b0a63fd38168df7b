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
"""The fake resctrl tree served as a kernel-like file system through FUSE.

:mod:`resq_fake.resctrl` builds what the kernel shows on a CAT host
in a plain directory, and :class:`resq_fake.resctrl.Kernel` applies
the kernel's rules to calls made in-process. Programs that are not ours
(libvirtd, ``echo > schemata``, the agent's privsep daemon) make ordinary
system calls on ``/sys/fs/resctrl``; mounted there in a private mount
namespace, this file system answers them as the kernel's resctrl would:

* reads, ``stat`` and directory listings come from the backing tree (so a
  test writes ``mon_data/*/llc_occupancy`` there and reads it through the
  mount); files report size 0 and the kernel's modes, and every read goes
  to the tree (``direct_io``, no attribute or entry caching);
* ``mkdir``, ``rmdir`` and every ``write(2)`` go to :class:`Kernel` on the
  backing tree, each write applied whole and on its own as the kernel does
  (a ``schemata`` write must end with a newline); its ``OSError`` is the
  caller's ``errno``;
* truncation (``O_TRUNC``) is accepted and changes nothing, as on kernfs;
* creating a file, ``unlink``, ``rename``, links, ``mknod``, ``chmod`` and
  ``chown`` are refused (``EACCES``/``EPERM``).

Run ``python -m resq_fake.resctrl_fuse --help``. The statfs type is
FUSE's, not resctrl's, so :class:`resq_common.resctrl_writer.Writer` needs
``require_mount=False`` (``[resq_agent] resctrl_fake``) on it.
"""

import argparse
import errno
import os
import signal
import stat
import sys

from resq_fake import resctrl as fake_resctrl

PROG = 'python -m resq_fake.resctrl_fuse'
# Files a group's owner may write (the kernel's 0644 files); every other
# file of the tree is 0444.
WRITABLE = frozenset(('schemata', 'cpus', 'cpus_list', 'tasks', 'mode',
                      'mba_MBps_event'))
# PAGE_SIZE and NAME_MAX, as kernfs' simple_statfs reports them.
_BLOCK_SIZE = 4096
_NAME_MAX = 255
# fuse_main's status when its loop ended with an error, which libfuse 3
# also gives for a loop that SIGTERM or SIGINT ended.
_LOOP_ENDED = 8
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
MISSING_LIBRARY = (
    'ERROR: cannot load the FUSE library (%s): install the Debian package '
    'libfuse3-3 (with fuse3 for fusermount3; or libfuse2) and the Python '
    'package mfusepy')


def _error(err, path=None):
    return OSError(err, os.strerror(err), path)


class ResctrlOperations:
    """The FUSE operations: the backing tree behind :class:`Kernel` rules.

    mfusepy calls the methods an instance has; the ones it lacks it leaves
    to libfuse, which answers ``ENOSYS``.
    """

    # Times in nanoseconds (mfusepy's getattr/utimens convention).
    use_ns = True

    def __init__(self, backing, context=None):
        """Serve the tree in ``backing``.

        :param context: ``() -> (uid, gid, pid)`` of the calling process
            (mfusepy's ``fuse_get_context``): PID 0 written to ``tasks``
            is the writer itself.
        """
        self.backing = os.path.realpath(backing)
        self.kernel = fake_resctrl.Kernel(self.backing)
        self.context = context

    # -- paths ----------------------------------------------------------
    def _real(self, path):
        parts = [p for p in path.split('/') if p]
        if any(p in ('.', '..') for p in parts):
            raise _error(errno.ENOENT, path)
        return os.path.join(self.backing, *parts)

    def _is_group(self, real):
        """Whether ``real`` is the root, a control or a monitoring group."""
        if real == self.backing:
            return True
        parent = os.path.dirname(real)
        if parent == self.backing:
            return os.path.basename(real) not in ('info', 'mon_data',
                                                  'mon_groups')
        return (os.path.basename(parent) == 'mon_groups'
                and self._is_group(os.path.dirname(parent)))

    def _writable(self, real):
        return (os.path.basename(real) in WRITABLE
                and self._is_group(os.path.dirname(real)))

    def _lstat(self, path):
        try:
            return os.lstat(self._real(path))
        except FileNotFoundError:
            raise _error(errno.ENOENT, path)

    # -- reading --------------------------------------------------------
    def getattr(self, path, fh=None):
        st = self._lstat(path)
        attrs = {'st_uid': st.st_uid, 'st_gid': st.st_gid,
                 'st_atime': st.st_atime_ns, 'st_mtime': st.st_mtime_ns,
                 'st_ctime': st.st_ctime_ns, 'st_ino': st.st_ino}
        if stat.S_ISDIR(st.st_mode):
            attrs.update(st_mode=stat.S_IFDIR | 0o755, st_nlink=st.st_nlink,
                         st_size=0)
        else:
            # kernfs files have size 0; reads return what the kernel holds.
            mode = 0o644 if self._writable(self._real(path)) else 0o444
            attrs.update(st_mode=stat.S_IFREG | mode, st_nlink=1, st_size=0)
        return attrs

    def readdir(self, path, fh):
        real = self._real(path)
        if not os.path.isdir(real):
            raise _error(errno.ENOTDIR, path)
        return ['.', '..'] + sorted(os.listdir(real))

    def open(self, path, flags):
        real = self._real(path)
        self._lstat(path)
        if (flags & os.O_ACCMODE) != os.O_RDONLY and not self._writable(
                real):
            # kernfs refuses to open a file without a write method for
            # writing, even to root.
            raise _error(errno.EACCES, path)
        return 0

    def read(self, path, size, offset, fh):
        with open(self._real(path), 'rb') as f:
            f.seek(offset)
            return f.read(size)

    def statfs(self, path):
        return {'f_bsize': _BLOCK_SIZE, 'f_frsize': _BLOCK_SIZE,
                'f_namemax': _NAME_MAX}

    # -- changing -------------------------------------------------------
    def _parent_fd(self, path):
        parent, name = os.path.split(self._real(path))
        try:
            return os.open(parent, _DIR_FLAGS), name
        except FileNotFoundError:
            raise _error(errno.ENOENT, path)

    def mkdir(self, path, mode):
        fd, name = self._parent_fd(path)
        try:
            if '\n' in name:
                # rdtgroup_mkdir: "Group name can't contain newline".
                raise _error(errno.EINVAL, path)
            self.kernel.mkdir(name, fd)
        finally:
            os.close(fd)
        return 0

    def rmdir(self, path):
        fd, name = self._parent_fd(path)
        try:
            self.kernel.rmdir(name, fd)
        finally:
            os.close(fd)
        return 0

    def write(self, path, data, offset, fh):
        """One ``write(2)``: applied whole, at whatever offset, or refused.

        The kernel's resctrl ignores the offset and takes each write as a
        command of its own.
        """
        real = self._real(path)
        if not self._writable(real):
            raise _error(errno.EACCES, path)
        try:
            text = data.decode('ascii')
        except UnicodeDecodeError:
            raise _error(errno.EINVAL, path)
        name = os.path.basename(real)
        if name == 'schemata' and not text.endswith('\n'):
            # rdtgroup_schemata_write: "Valid input requires a trailing
            # newline", refused before info/last_cmd_status is cleared.
            raise _error(errno.EINVAL, path)
        fd, name = self._parent_fd(path)
        try:
            if name == 'tasks':
                self._write_tasks(fd, real, text)
            else:
                self._kernel_write(fd, name, text, False)
        finally:
            os.close(fd)
        return len(data)

    def _kernel_write(self, fd, name, text, append):
        try:
            self.kernel.write_file(fd, name, text, append,
                                   'in %s' % self.backing)
        except OSError:
            raise
        except Exception as exc:
            # The writer's own refusals (a link, a special file) in the
            # backing tree: not something the kernel would say.
            raise _error(errno.EIO, str(exc))

    def _write_tasks(self, fd, real, text):
        """PIDs, separated by commas or white space, each moved in turn.

        A task is in one group: it leaves the others' ``tasks``.
        """
        for item in text.replace(',', ' ').split():
            try:
                pid = int(item, 0)
            except ValueError:
                raise _error(errno.EINVAL, real)
            if pid == 0 and self.context is not None:
                pid = self.context()[2]
            if pid < 0 or (pid and not os.path.isdir('/proc/%d' % pid)):
                self.kernel.set_status('No task %d' % pid)
                raise _error(errno.ESRCH, real)
            self._forget_task(pid, os.path.dirname(real))
            self._kernel_write(fd, 'tasks', '%d\n' % pid, True)
            self.kernel.set_status('ok')

    def _forget_task(self, pid, group):
        groups = [self.backing] + self.kernel.ctrl_groups()
        for ctrl in list(groups):
            groups.extend(self.kernel.mon_groups(ctrl))
        for other in groups:
            if other == group:
                continue
            path = os.path.join(other, 'tasks')
            try:
                with open(path, encoding='ascii') as f:
                    pids = f.read().split()
            except OSError:
                continue
            if str(pid) in pids:
                with open(path, 'w', encoding='ascii') as f:
                    f.write(''.join('%s\n' % p for p in pids
                                    if p != str(pid)))

    def truncate(self, path, length, fh=None):
        """``O_TRUNC`` and ``truncate(2)``: accepted, nothing changes."""
        self._lstat(path)
        return 0

    def flush(self, path, fh):
        return 0

    def release(self, path, fh):
        return 0

    def fsync(self, path, datasync, fh):
        return 0

    def utimens(self, path, times=None):
        self._lstat(path)
        return 0

    # -- what resctrl does not have -------------------------------------
    def create(self, path, mode, flags=0):
        # No create method on kernfs directories: open(O_CREAT) of a new
        # name is EACCES.
        raise _error(errno.EACCES, path)

    def _refuse(self, *args):
        raise _error(errno.EPERM)

    unlink = rename = symlink = link = mknod = chmod = chown = _refuse


# -- the command ----------------------------------------------------------
def _parser():
    p = argparse.ArgumentParser(
        prog=PROG,
        description='Serve a fake resctrl tree through FUSE at MOUNTPOINT: '
                    'reads from the backing directory, mkdir, rmdir and '
                    'writes checked as the kernel checks them. Builds the '
                    'tree in the backing directory when it is empty.')
    p.add_argument('mountpoint', help='where to mount it (a directory)')
    p.add_argument('--backing', required=True,
                   help='directory holding the tree (built when empty)')
    fake_resctrl.add_tree_options(p)
    p.add_argument('--foreground', action='store_true',
                   help='stay in the foreground (otherwise the command '
                        'returns once the file system is mounted)')
    p.add_argument('--debug', action='store_true',
                   help="libfuse's request trace on stderr")
    return p


def _prepare(args):
    """Check the paths; build the tree; the error text or None."""
    if not os.path.isdir(args.mountpoint):
        return ('mount point %s does not exist or is not a directory'
                % args.mountpoint)
    try:
        cpus, layout = fake_resctrl.tree_layout(args)
    except fake_resctrl.InvalidTree as exc:
        return str(exc)
    os.makedirs(args.backing, exist_ok=True)
    if not os.listdir(args.backing):
        fake_resctrl.build_from_args(args.backing, args, cpus, layout)
    elif not fake_resctrl.has_rdt(args.backing):
        return ('%s is neither empty nor a resctrl tree (no info/L3)'
                % args.backing)
    return None


def _allow_other():
    """Whether this user may mount with ``allow_other``."""
    if os.geteuid() == 0:
        return True
    try:
        with open('/etc/fuse.conf', encoding='utf-8') as f:
            return any(line.strip() == 'user_allow_other' for line in f)
    except OSError:
        return False


def load_fuse():
    """The mfusepy module.

    :raises RuntimeError: one line naming what to install.
    """
    try:
        import mfusepy
    except (ImportError, OSError, AttributeError) as exc:
        raise RuntimeError(MISSING_LIBRARY % exc)
    return mfusepy


def main(argv=None):
    """Mount and serve until unmounted, SIGTERM or SIGINT; exit status."""
    args = _parser().parse_args(argv)
    args.mountpoint = os.path.abspath(args.mountpoint)
    args.backing = os.path.abspath(args.backing)
    problem = _prepare(args)
    if problem:
        print('ERROR: %s' % problem, file=sys.stderr)
        return 2
    try:
        fuse = load_fuse()
    except RuntimeError as exc:
        print(exc, file=sys.stderr)
        return 2
    options = dict(fsname='resctrl', subtype='resctrl',
                   default_permissions=True, direct_io=True,
                   attr_timeout=0, entry_timeout=0, negative_timeout=0)
    if _allow_other():
        options['allow_other'] = True
    else:
        print('WARNING: mounting without allow_other: only this user can '
              'use it (add user_allow_other to /etc/fuse.conf)',
              file=sys.stderr)
    # libfuse's own handlers end the loop and unmount on these.
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    try:
        # One thread: calls are serialised, as the kernel's rdtgroup_mutex
        # serialises them. Without foreground, libfuse forks once the
        # mount is made and this command returns then.
        fuse.FUSE(ResctrlOperations(args.backing, fuse.fuse_get_context),
                  args.mountpoint,
                  foreground=args.foreground, nothreads=True,
                  debug=args.debug, **options)
    except RuntimeError as exc:
        status = exc.args[0] if exc.args else None
        if status == _LOOP_ENDED and not os.path.ismount(args.mountpoint):
            # libfuse 3 reports the loop a signal ended as an error; it has
            # unmounted by then.
            return 0
        print('ERROR: serving %s failed (libfuse status %s; see its '
              'message above)' % (args.mountpoint, status), file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
