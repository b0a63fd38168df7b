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
"""The all-in-one cloud's shared instances path: a pass-through FUSE mount.

Both compute hosts of :mod:`tests.cloud.aio` keep their instances in one
directory, which Nova takes for shared storage (it finds its test file
from the other host). libvirt decides for itself: before a live migration
without block copy it asks whether each disk's file system is a shared
one (NFS, GlusterFS, Ceph, ...), and refuses a local one as "Unsafe
migration: Migration without shared storage is unsafe". libvirt 9.0 has
no setting to name other shared file systems (``shared_filesystems`` in
qemu.conf came later). It recognises a FUSE mount whose type is
``fuse.glusterfs``, so this mount carries that subtype: a pass-through to
a backing directory, which every process on this machine sees alike, as
every host sees a GlusterFS volume alike. Only the name is GlusterFS's;
nothing else of it is imitated.

``python -m tests.cloud.sharedfs MOUNTPOINT --backing DIR`` returns once
mounted (``--foreground`` stays); ``fusermount3 -u MOUNTPOINT`` or SIGTERM
ends it. Locks are left to the kernel (no ``lock`` operation), so QEMU's
image locks work as on a local file system.
"""

import argparse
import errno
import os
import signal
import sys
import time

SUBTYPE = 'glusterfs'
_STAT_KEYS = ('st_mode', 'st_nlink', 'st_uid', 'st_gid', 'st_size',
              'st_ino', 'st_dev', 'st_blocks', 'st_blksize')
_UTIME_NOW = (1 << 30) - 1
_UTIME_OMIT = (1 << 30) - 2
_TIME_KEYS = ('st_atime', 'st_mtime', 'st_ctime')
_STATVFS_KEYS = ('f_bsize', 'f_frsize', 'f_blocks', 'f_bfree', 'f_bavail',
                 'f_files', 'f_ffree', 'f_favail', 'f_flag', 'f_namemax')


class PassThrough:
    """Every call on the backing directory's file; errors are its errno.

    A mix-in: :func:`operations` puts it before mfusepy's ``Operations``,
    which wires only the methods a class defines.
    """
    use_ns = True  # times in nanoseconds, both ways

    def __init__(self, backing):
        self.backing = backing

    def _real(self, path):
        return os.path.join(self.backing, path.lstrip('/'))

    def _call(self, func, *args, **kwargs):
        try:
            return func(*args, **kwargs)
        except OSError as exc:
            raise _fuse().FuseOSError(exc.errno or errno.EIO)

    def getattr(self, path, fh=None):
        st = self._call(os.lstat, self._real(path)) if fh is None \
            else self._call(os.fstat, fh)
        attrs = {k: getattr(st, k) for k in _STAT_KEYS}
        attrs.update((k, getattr(st, k + '_ns')) for k in _TIME_KEYS)
        return attrs

    def readdir(self, path, fh):
        return ['.', '..'] + self._call(os.listdir, self._real(path))

    def statfs(self, path):
        st = self._call(os.statvfs, self._real(path))
        return {k: getattr(st, k) for k in _STATVFS_KEYS}

    def access(self, path, amode):
        if not os.access(self._real(path), amode):
            raise _fuse().FuseOSError(errno.EACCES)
        return 0

    def open(self, path, flags):
        # The backing file system may refuse O_DIRECT; the page cache
        # of the FUSE file is the one that matters to its users.
        return self._call(os.open, self._real(path),
                          flags & ~getattr(os, 'O_DIRECT', 0))

    def create(self, path, mode, fi=None):
        return self._call(os.open, self._real(path),
                          os.O_RDWR | os.O_CREAT | os.O_TRUNC, mode)

    def read(self, path, size, offset, fh):
        return self._call(os.pread, fh, size, offset)

    def write(self, path, data, offset, fh):
        return self._call(os.pwrite, fh, data, offset)

    def truncate(self, path, length, fh=None):
        if fh is None:
            return self._call(os.truncate, self._real(path), length)
        return self._call(os.ftruncate, fh, length)

    def flush(self, path, fh):
        return 0

    def fsync(self, path, datasync, fh):
        return self._call(os.fdatasync if datasync else os.fsync, fh)

    def release(self, path, fh):
        return self._call(os.close, fh)

    def unlink(self, path):
        return self._call(os.unlink, self._real(path))

    def mkdir(self, path, mode):
        return self._call(os.mkdir, self._real(path), mode)

    def rmdir(self, path):
        return self._call(os.rmdir, self._real(path))

    def rename(self, old, new):
        return self._call(os.rename, self._real(old), self._real(new))

    def chmod(self, path, mode):
        return self._call(os.chmod, self._real(path), mode)

    def chown(self, path, uid, gid):
        return self._call(os.lchown, self._real(path), uid, gid)

    def utimens(self, path, times=None):
        real = self._real(path)
        if times is not None:
            # utimensat's UTIME_NOW / UTIME_OMIT come through as their
            # tv_nsec values with tv_sec 0.
            st = self._call(os.lstat, real)
            now = time.time_ns()
            times = tuple(
                now if t == _UTIME_NOW else old if t == _UTIME_OMIT
                else t for t, old in zip(times, (st.st_atime_ns,
                                                 st.st_mtime_ns)))
        return self._call(os.utime, real, ns=times,
                          follow_symlinks=False)

    def symlink(self, target, source):
        return self._call(os.symlink, source, self._real(target))

    def readlink(self, path):
        return self._call(os.readlink, self._real(path))

    def link(self, target, source):
        return self._call(os.link, self._real(source),
                          self._real(target))


def _fuse():
    import mfusepy
    return mfusepy


def operations(fuse):
    """The pass-through Operations class on ``fuse`` (mfusepy)."""
    return type('PassThrough', (PassThrough, fuse.Operations), {})


def is_shared_mount(path):
    """Whether ``path`` is this file system's mount point."""
    path = os.path.realpath(path)
    with open('/proc/mounts', encoding='utf-8') as f:
        for line in f:
            fields = line.split()
            mnt = fields[1].encode().decode('unicode_escape')
            if mnt == path and fields[2] == 'fuse.' + SUBTYPE:
                return True
    return False


def main(argv=None):
    p = argparse.ArgumentParser(prog='python -m tests.cloud.sharedfs',
                                description=__doc__.split('\n')[0])
    p.add_argument('mountpoint')
    p.add_argument('--backing', required=True)
    p.add_argument('--foreground', action='store_true')
    args = p.parse_args(argv)
    mountpoint = os.path.abspath(args.mountpoint)
    backing = os.path.abspath(args.backing)
    for path in (mountpoint, backing):
        os.makedirs(path, exist_ok=True)
    if is_shared_mount(mountpoint):
        return 0
    try:
        import mfusepy as fuse
    except (ImportError, OSError) as exc:
        print('ERROR: cannot load mfusepy/libfuse (%s): install the '
              'test requirements and bindep\'s fuse3' % exc, file=sys.stderr)
        return 2
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    try:
        fuse.FUSE(operations(fuse)(backing), mountpoint,
                  foreground=args.foreground, nothreads=False,
                  fsname='aio-instances', subtype=SUBTYPE, allow_other=True,
                  default_permissions=True)
    except RuntimeError as exc:
        if not os.path.ismount(mountpoint):
            return 0 if args.foreground else 1
        print('ERROR: serving %s failed: %s' % (mountpoint, exc),
              file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
