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
"""resctrl writes that hold as root: only below a checked root, no symlinks.

The privileged entry points (``resq_agent.privsep.resctrl``,
``resq_profiler.privsep.resctrl``) decide the root from their own
configuration and hand it to :class:`Writer`, which

* opens the root once, walking from ``/`` one component at a time with
  ``O_NOFOLLOW`` (a symbolic link anywhere on the way is refused), and
  checks with ``fstatfs`` that it is a mounted resctrl file system; a fake
  tree (no mount) written by root must have root's directories alone
  above it;
* reaches everything below it with ``openat`` (``dir_fd``) and
  ``O_NOFOLLOW`` one component at a time, so a group or file that is a
  symbolic link, or a path that leaves the root, is refused;
* accepts only ``resq-`` group names, masks the platform allows, memory
  bandwidth (``MB:``) values in the kernel's range for the tree's mode
  (:func:`resq_common.mba.read_info`) on its own domains, and plain
  integer CPU numbers and PIDs;
* creates monitoring groups (``<group>/mon_groups/<name>``) only inside a
  ``resq-`` control group and only with CPUs of that group.

The few system calls that change the tree go through :data:`SYSCALLS`, so
tests can put a model of the kernel's resctrl rules
(:class:`resq_fake.resctrl.Kernel`) in front of a temporary tree; the
writer never relies on it: it checks the rules itself first.
"""

import contextlib
import ctypes
import ctypes.util
import errno
import os
import stat

from resq_common import cbm
from resq_common import exception
from resq_common import mba
from resq_common import resctrl
from resq_common import rootpath

# linux/magic.h
RDTGROUP_SUPER_MAGIC = 0x7655821
# Tests run the privileged functions in-process on a tree in a temporary
# directory, which is not a resctrl mount; their fixture turns this off.
CHECK_FS_MAGIC = True
# The kernel's limits (NR_CPUS is at most 8192, pid_max at most 2^22).
MAX_CPU = 8191
MAX_WAYS = 1024
MAX_PID = 1 << 22
# What mba.read_info found of a tree, by the root and its info/MB
# directory's (device, inode, ctime): it reads several files and the mount
# table, and a mount's MB rules hold until it is unmounted (a mount made
# again, or a fake tree built again, has a directory of its own).
_MBA_INFO = {}
_MBA_INFO_MAX = 64

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_libc = None


def _fs_magic(fd):
    """``f_type`` of the file system holding ``fd`` (``fstatfs(2)``)."""
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library('c'), use_errno=True)
    # struct statfs starts with f_type (a long) on every Linux ABI; the
    # buffer is larger than the whole structure.
    buf = (ctypes.c_long * 32)()
    if _libc.fstatfs(fd, ctypes.byref(buf)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return buf[0] & 0xffffffff


def _refuse(reason):
    raise exception.ResctrlError(reason=reason)


class Syscalls:
    """The calls that change a resctrl tree, below directory descriptors."""

    @staticmethod
    def mkdir(name, dir_fd):
        os.mkdir(name, 0o755, dir_fd=dir_fd)

    @staticmethod
    def rmdir(name, dir_fd):
        os.rmdir(name, dir_fd=dir_fd)

    @staticmethod
    def write_file(dir_fd, name, text, append, where):
        """Write ``text`` to file ``name`` in one ``write(2)``."""
        # No O_TRUNC: nothing is cut before the checks below pass.
        flags = (os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
                 | os.O_CREAT | (os.O_APPEND if append else 0))
        try:
            fd = os.open(name, flags, 0o644, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENXIO):
                _refuse('%s %s is a symbolic link or special file; refusing '
                        'to write it' % (name, where))
            raise
        with os.fdopen(fd, 'w', encoding='ascii') as f:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                _refuse('%s %s is not a regular file; refusing to write it'
                        % (name, where))
            if st.st_nlink != 1:
                # A hard link to a file elsewhere (possible in a tree that
                # is not a mounted resctrl, whose files have one link).
                _refuse('%s %s has %d links; refusing to write through a '
                        'hard link' % (name, where, st.st_nlink))
            if not append and st.st_size:
                # resctrl's files read back what the kernel holds and take
                # a write at offset 0 whole; a plain file is emptied first.
                os.ftruncate(fd, 0)
            # One write: the kernel applies it whole or rejects it.
            f.write(text)


SYSCALLS = Syscalls()


class _FdTree(resctrl.Resctrl):
    """Read side of the tree through an open root descriptor."""

    def __init__(self, root, root_fd):
        super().__init__(root)
        self.fd = root_fd
        # Directories opened below the root, kept for the writer's life
        # (one privileged call): info/L3 is read several times per call.
        self._dirs = {(): root_fd}

    def close(self):
        for parts, fd in self._dirs.items():
            if parts:
                os.close(fd)
        self._dirs = {(): self.fd}

    @contextlib.contextmanager
    def _open_dir(self, parts):
        """Open directory ``root/parts...``, no component a symlink."""
        parts = tuple(parts)
        for i in range(1, len(parts) + 1):
            if parts[:i] in self._dirs:
                continue
            part = parts[i - 1]
            if part in ('', '.', '..') or '/' in part:
                _refuse('path component %r below %s is not allowed'
                        % (part, self.root))
            self._dirs[parts[:i]] = os.open(part, _DIR_FLAGS,
                                            dir_fd=self._dirs[parts[:i - 1]])
        yield self._dirs[parts]

    def _stat(self, parts):
        try:
            with self._open_dir(parts[:-1]) as dfd:
                return os.stat(parts[-1], dir_fd=dfd, follow_symlinks=False)
        except OSError:
            return None

    def _isdir(self, *parts):
        if not parts:
            return True
        st = self._stat(parts)
        return st is not None and stat.S_ISDIR(st.st_mode)

    def _isfile(self, *parts):
        st = self._stat(parts)
        return st is not None and stat.S_ISREG(st.st_mode)

    def _subdirs(self, *parts):
        """Directories in ``root/parts...``, listed through descriptors."""
        try:
            with self._open_dir(parts) as dfd:
                names = os.listdir(dfd)
        except OSError:
            return []
        return [n for n in names if self._isdir(*parts, n)]

    def _read(self, *parts):
        with self._open_dir(parts[:-1]) as dfd:
            fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW
                         | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=dfd)
            with os.fdopen(fd, encoding='ascii') as f:
                return f.read().strip()


class Writer:
    """Privileged writes into the resctrl tree at ``root``.

    Use it as a context manager: the root is opened and checked on entry.
    """

    def __init__(self, root, require_mount=True, owner=None):
        """A writer of the tree at ``root``.

        :param owner: a :class:`resq_common.resctrl.Owner`: the only
            groups this writer creates, writes, assigns to and removes.
        """
        self.root = os.path.abspath(root)
        self.owner = owner
        # False only for a tree built by resq_fake.resctrl (devstack
        # on hosts without Intel RDT), as its configuration says.
        self.require_mount = require_mount
        self.tree = None
        # {CPU: holder} of groups this writer does not own, once read
        # (see _cpus_held_by_others); reset each time the tree is opened.
        self._held = None
        # The tree's MBA (resq_common.mba.MbaInfo) and MB domains, read
        # once per writer (one privileged call) when a write carries MB,
        # and the default group's schemata, whose domains do not change
        # while the writer lives.
        self._mba = None
        self._default = None

    def __enter__(self):
        self._held = None
        hint = ('mount it with "mount -t resctrl resctrl %s" on a host '
                'with Intel RDT and set resctrl_root to the mount point'
                % resctrl.DEFAULT_ROOT)
        fd = self._open_root(hint)
        try:
            if CHECK_FS_MAGIC and self.require_mount:
                magic = _fs_magic(fd)
                if magic != RDTGROUP_SUPER_MAGIC:
                    _refuse('%s is not a resctrl file system (statfs type '
                            '%#x, resctrl is %#x); refusing to write there; '
                            '%s' % (self.root, magic, RDTGROUP_SUPER_MAGIC,
                                    hint))
            self.tree = _FdTree(self.root, fd)
            self.tree.check()
        except BaseException:
            if self.tree is not None:
                self.tree.close()
                self.tree = None
            os.close(fd)
            raise
        return self

    def _ancestor_check(self):
        """The check of each directory above the root.

        A fake tree (no mount check) written by root needs every
        directory from ``/`` to it to be root's alone: otherwise the user
        owning one could swap the tree for a root-owned directory of its
        choosing between two writes.
        """
        if self.require_mount or os.geteuid() != 0:
            return lambda st, where: None

        def check(st, where):
            try:
                rootpath.root_only(st, where)
            except rootpath.Refused as exc:
                _refuse('fake resctrl tree %s: %s; build the fake tree '
                        'under root-owned directories (devstack: '
                        'RESQ_RESCTRL_ROOT)' % (self.root, exc))
        return check

    def _open_root(self, hint):
        """The root's fd, walked from ``/`` with no symbolic link."""
        try:
            pfd, name = rootpath.open_dir(self.root, self._ancestor_check(),
                                          last=False)
        except rootpath.Refused as exc:
            _refuse('resctrl root %s: %s; set resctrl_root to the mount '
                    'point itself' % (self.root, exc))
        try:
            return os.open(name or '.', _DIR_FLAGS, dir_fd=pfd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR) and os.path.islink(
                    self.root):
                _refuse('resctrl root %s is a symbolic link; refusing it: '
                        'set resctrl_root to the mount point itself'
                        % self.root)
            _refuse('cannot open resctrl root %s (%s); %s'
                    % (self.root, exc.strerror, hint))
        finally:
            os.close(pfd)

    def __exit__(self, *exc):
        self.tree.close()
        os.close(self.tree.fd)
        self.tree = None

    # -- checks --------------------------------------------------------
    @staticmethod
    def _ints(values, what, low, high):
        out = []
        for v in values:
            if isinstance(v, bool) or not isinstance(v, int):
                _refuse('%s must be integers, got %r' % (what, v))
            if not low <= v <= high:
                _refuse('%s must be between %d and %d, got %d'
                        % (what, low, high, v))
            out.append(v)
        return out

    def _masks(self, masks):
        if not isinstance(masks, dict) or not masks:
            _refuse('L3 masks must be a non-empty {cache domain id: mask} '
                    'map, got %r' % (masks,))
        doms = self._ints(masks.keys(), 'cache domain ids', 0, 4095)
        # The platform's cbm_mask bounds them below; this only keeps absurd
        # integers out before any file is read.
        vals = self._ints(masks.values(), 'cache bit masks', 1,
                          (1 << MAX_WAYS) - 1)
        masks = dict(zip(doms, vals))
        info = self.tree.info()
        default = self._default_schemata()
        if 'L3' not in default and 'L3CODE' not in default:
            self.tree.domains()         # raises, saying so
        known = set(default.get('L3', default.get('L3CODE', {})))
        for dom, mask in masks.items():
            if dom not in known:
                _refuse('cache domain %s does not exist under %s; known '
                        'domains: %s' % (dom, self.root, sorted(known)))
            try:
                cbm.validate(mask, info['cbm_mask'], info['min_cbm_bits'])
            except cbm.InvalidMask as exc:
                _refuse('cache domain %s: %s' % (dom, exc))
        return masks, info

    # -- low-level -----------------------------------------------------
    def _check(self, group):
        if self.owner is not None:
            return self.owner.check(group)
        return resctrl.check_group_name(group)

    @contextlib.contextmanager
    def _group_fd(self, group):
        self._check(group)
        try:
            fd = os.open(group, _DIR_FLAGS, dir_fd=self.tree.fd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                _refuse('resctrl group %s/%s is a symbolic link or not a '
                        'directory; refusing it: remove it (a group is a '
                        'directory the kernel creates with mkdir)'
                        % (self.root, group))
            if exc.errno == errno.ENOENT:
                _refuse('resctrl group %s/%s does not exist; create it '
                        'first' % (self.root, group))
            raise
        try:
            yield fd
        finally:
            os.close(fd)

    def _write_at(self, dir_fd, name, text, append=False):
        SYSCALLS.write_file(dir_fd, name, text, append, 'in %s' % self.root)

    def _default_schemata(self):
        if self._default is None:
            self._default = resctrl.parse_schemata(
                self.tree._read('schemata'))
        return self._default

    def _mba_rules(self):
        """``(MbaInfo or None, MB domain ids)`` of the tree."""
        if self._mba is None:
            info = None
            st = self.tree._stat(('info', 'MB'))
            if st is not None and stat.S_ISDIR(st.st_mode):
                key = (self.root, st.st_dev, st.st_ino, st.st_ctime_ns)
                info = _MBA_INFO.get(key)
                if info is None:
                    info = mba.read_info(self.root)
                    if len(_MBA_INFO) >= _MBA_INFO_MAX:
                        _MBA_INFO.clear()
                    _MBA_INFO[key] = info
            self._mba = (info, set(self._default_schemata().get('MB', {}))
                         if info is not None else set())
        return self._mba

    @staticmethod
    def mb_range(info):
        """``(lowest, highest)`` ``MB:`` value the agent may write.

        The kernel's range for the tree's mode; never 0 (a group that
        could move no data), whatever ``min_bandwidth`` says.
        """
        low = max(info.min_bandwidth, 1)
        if info.mode == mba.MODE_MBPS:
            low = 1
        return low, info.max_value

    def _mb_values(self, values):
        """The checked ``{MB domain: value}`` of a schemata write."""
        if not isinstance(values, dict) or not values:
            _refuse('MB values must be a non-empty {domain id: value} map, '
                    'got %r' % (values,))
        doms = self._ints(values.keys(), 'memory bandwidth domain ids', 0,
                          4095)
        vals = self._ints(values.values(), 'MB values', 0, mba.MBPS_MAX)
        info, known = self._mba_rules()
        if info is None:
            _refuse('%s has no info/MB: the kernel offers no memory '
                    'bandwidth allocation here; write the L3 masks alone '
                    '(the agent does so where discovery finds no info/MB)'
                    % self.root)
        low, high = self.mb_range(info)
        gran = info.bandwidth_gran if info.mode == mba.MODE_PERCENT else 1
        for dom, value in zip(doms, vals):
            if dom not in known:
                _refuse('memory bandwidth domain %s does not exist under %s;'
                        ' known domains (the default group\'s MB line): %s'
                        % (dom, self.root, sorted(known)))
            if not low <= value <= high:
                _refuse('MB value %d of domain %d is outside %d-%d, the '
                        'kernel\'s range for %s MBA under %s (info/MB); '
                        'write %d for no limit' % (
                            value, dom, low, high, info.mode, self.root,
                            high))
            if value % gran:
                _refuse('MB value %d of domain %d is not a multiple of '
                        'info/MB/bandwidth_gran (%d): the kernel would make '
                        'it %d; write that'
                        % (value, dom, gran, -(-value // gran) * gran))
        return {d: '%d' % v for d, v in zip(doms, vals)}

    def _code_masks(self, code, masks, info):
        """``{domain: (code mask, data mask)}`` of a group's split ways.

        Code and data prioritization: ``code`` holds, for some domains,
        the ways of the group's mask (``masks``) that hold code; the rest
        of that mask holds data. Each part must be a valid mask of its own
        and the split needs a tree mounted with ``cdp``.
        """
        if not isinstance(code, dict) or not code:
            _refuse('code masks must be a non-empty {cache domain id: '
                    'mask} map, got %r' % (code,))
        if not info['cdp']:
            _refuse('code masks need resctrl mounted with cdp (info/L3CODE '
                    'and info/L3DATA); %s has one L3 mask per group: send '
                    'none' % self.root)
        doms = self._ints(code.keys(), 'cache domain ids', 0, 4095)
        vals = self._ints(code.values(), 'code masks', 1,
                          (1 << MAX_WAYS) - 1)
        split = {}
        for dom, mask in zip(doms, vals):
            whole = masks.get(dom)
            if whole is None or mask & ~whole or mask == whole:
                _refuse('cache domain %s: code mask %x must be some of the '
                        'group\'s ways %s, leaving ways for data'
                        % (dom, mask, '%x' % whole if whole else '(none)'))
            for part, what in ((mask, 'code'), (whole & ~mask, 'data')):
                try:
                    cbm.validate(part, info['cbm_mask'],
                                 info['min_cbm_bits'])
                except cbm.InvalidMask as exc:
                    _refuse('cache domain %s: the %s part of %x: %s'
                            % (dom, what, whole, exc))
            split[dom] = (mask, whole & ~mask)
        return split

    def _write_l3(self, dir_fd, masks, mb=None, code=None):
        """The L3 (or L3CODE and L3DATA) lines, and MB's, in one write.

        :param mb: ``{MB domain id: value}``, in the tree's units; None
            writes no MB line (the kernel keeps the group's).
        :param code: ``{domain id: code mask}``: of the group's ways in
            those domains, the ones holding code (the rest hold data);
            needs cdp. None: code and data share every way.
        """
        masks, info = self._masks(masks)
        if code is not None:
            split = self._code_masks(code, masks, info)
            resources = {
                'L3CODE': {d: split[d][0] if d in split else m
                           for d, m in masks.items()},
                'L3DATA': {d: split[d][1] if d in split else m
                           for d, m in masks.items()}}
        elif info['cdp']:
            resources = {'L3CODE': masks, 'L3DATA': masks}
        else:
            resources = {'L3': masks}
        if mb is not None:
            resources['MB'] = self._mb_values(mb)
        self._write_at(dir_fd, 'schemata', resctrl.format_schemata(resources))

    # -- operations ----------------------------------------------------
    def _room_for_group(self, group):
        """Refuse a new group beyond the tree's classes of service.

        The kernel refuses it on a real mount (ENOSPC); a plain directory
        tree (devstack's fake kernel) would take any number, so the limit
        is the tree's own ``info/*/num_closids``, the default group
        included.
        """
        groups = self.tree.groups()
        if group in groups:
            return
        limits = self.tree.closid_limits()
        if not limits:
            _refuse('%s has no info/*/num_closids: not a resctrl tree with '
                    'cache allocation' % self.root)
        closids = min(limits.values())
        # A finished pseudo-locked region holds ways but no class.
        holders = [g for g in groups
                   if self.tree.group_mode(g) != resctrl.MODE_LOCKED]
        if 1 + len(holders) >= closids:
            _refuse('no class of service left in %s for group %s: %d '
                    'groups and the default group hold all %d '
                    '(info/*/num_closids)'
                    % (self.root, group, len(holders), closids))

    def create_group(self, group):
        self._check(group)
        self._room_for_group(group)
        try:
            SYSCALLS.mkdir(group, self.tree.fd)
        except FileExistsError:
            pass
        with self._group_fd(group):
            pass  # refuses an existing symlink or file of that name
        return os.path.join(self.root, group)

    def write_l3_masks(self, group, masks, mb=None, code=None):
        with self._group_fd(group) as gfd:
            self._write_l3(gfd, masks, mb, code)

    def write_default_l3_masks(self, masks, mb=None):
        self._write_l3(self.tree.fd, masks, mb)

    def _owns(self, group):
        if self.owner is not None:
            return self.owner.owns(group)
        return bool(resctrl.GROUP_RE.fullmatch(group))

    def _cpus_held_by_others(self):
        """``{CPU: holder}`` of CPUs groups this writer does not own hold.

        Writing a group's ``cpus_list`` moves each CPU out of whichever
        control or monitoring group held it (the kernel's
        ``cpus_ctrl_write``), so taking a CPU another tool's group, the
        profiler's or a monitoring group of the default group holds would
        rewrite that group. The default group's own CPUs are free to take.
        Read once per writer (one privileged call or batch): the writer's
        own writes never move a CPU those groups hold.
        """
        if self._held is not None:
            return self._held
        held = self._held = {}

        def add(where, *parts):
            try:
                cpus = resctrl.parse_cpu_list(self.tree._read(*parts))
            except (OSError, ValueError, exception.ResQException):
                return
            for cpu in cpus:
                held.setdefault(cpu, where)

        for name in self.tree.groups():
            if self._owns(name):
                continue
            add(name, name, 'cpus_list')
            for mon in self.tree._subdirs(name, resctrl.MON_GROUPS):
                add('%s/%s/%s' % (name, resctrl.MON_GROUPS, mon), name,
                    resctrl.MON_GROUPS, mon, 'cpus_list')
        for mon in self.tree._subdirs(resctrl.MON_GROUPS):
            add('%s/%s' % (resctrl.MON_GROUPS, mon), resctrl.MON_GROUPS, mon,
                'cpus_list')
        return held

    def assign_cpus(self, group, cpus):
        if isinstance(cpus, (str, bytes)):
            _refuse('CPU numbers must be a list of integers, got %r' % cpus)
        cpus = sorted(set(self._ints(cpus, 'CPU numbers', 0, MAX_CPU)))
        self._check(group)
        held = self._cpus_held_by_others()
        taken = sorted(c for c in cpus if c in held)
        if taken:
            _refuse('CPUs %s of %s are held by %s, a group %s does not own: '
                    'writing them would move them out of it; free them '
                    'there first' % (
                        ','.join(str(c) for c in taken), self.root,
                        ', '.join(sorted({held[c] for c in taken})),
                        self.owner.name if self.owner else 'resq-nova'))
        with self._group_fd(group) as gfd:
            self._write_at(gfd, 'cpus_list',
                           ','.join(str(c) for c in cpus) + '\n')

    def assign_task(self, group, pid):
        (pid,) = self._ints([pid], 'PIDs', 1, MAX_PID)
        with self._group_fd(group) as gfd:
            self._write_at(gfd, 'tasks', '%d\n' % pid, append=True)

    # -- monitoring groups (CMT/MBM of a subset of a group's CPUs) ------
    def _rmids_in_use(self):
        """RMIDs the tree holds.

        The default group's, one per control group and one per monitoring
        group (the kernel's count, less RMIDs in limbo).
        """
        used = 1 + len(self.tree.mon_groups_of_root())
        for g in self.tree.groups():
            used += 1 + len(self.tree.mon_groups_of(g))
        return used

    @contextlib.contextmanager
    def _mon_dir_fd(self, gfd, group):
        try:
            fd = os.open(resctrl.MON_GROUPS, _DIR_FLAGS, dir_fd=gfd)
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                raise exception.MonitoringUnavailable(
                    reason='resctrl group %s/%s has no %s directory: the '
                    'kernel offers no resource monitoring there (CMT/MBM '
                    'need a CPU with cqm_llc/cqm_mbm_total and a kernel '
                    'built with resctrl monitoring)'
                    % (self.root, group, resctrl.MON_GROUPS))
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                _refuse('%s/%s/%s is a symbolic link or not a directory; '
                        'refusing it' % (self.root, group,
                                         resctrl.MON_GROUPS))
            raise
        try:
            yield fd
        finally:
            os.close(fd)

    def create_mon_group(self, group, mon, cpus):
        """Make monitoring group ``mon`` of ``group`` count ``cpus``.

        Idempotent: an existing one gets its CPUs rewritten.

        :raises exception.ResctrlError: a name that is not ours, CPUs that
            are not all the control group's.
        :raises exception.MonitoringUnavailable: no L3 monitoring.
        :raises exception.RmidsExhausted: no RMID left.
        """
        resctrl.check_group_name(mon)
        if isinstance(cpus, (str, bytes)):
            _refuse('CPU numbers must be a list of integers, got %r' % cpus)
        cpus = sorted(set(self._ints(cpus, 'CPU numbers', 0, MAX_CPU)))
        if not cpus:
            _refuse('monitoring group %s of %s needs at least one CPU'
                    % (mon, group))
        if not self.tree.has_monitoring():
            raise exception.MonitoringUnavailable(
                reason='%s has no info/L3_MON: the kernel offers no L3 '
                'monitoring (CMT/MBM) on this host' % self.root)
        with self._group_fd(group) as gfd:
            try:
                parent = set(resctrl.parse_cpu_list(
                    self.tree._read(group, 'cpus_list')))
            except OSError as exc:
                _refuse('cannot read the CPUs of resctrl group %s (%s): '
                        'write its cpus_list before making monitoring '
                        'groups in it' % (group, exc.strerror))
            outside = [c for c in cpus if c not in parent]
            if outside:
                _refuse('CPUs %s are not CPUs of resctrl group %s (it has '
                        '%s): a monitoring group\'s CPUs must be a subset '
                        'of its parent control group\'s; write the '
                        'group\'s cpus_list first'
                        % (','.join(map(str, outside)), group,
                           ','.join(map(str, sorted(parent))) or 'none'))
            with self._mon_dir_fd(gfd, group) as mfd:
                created = False
                if not os.path.isdir(os.path.join(
                        self.root, group, resctrl.MON_GROUPS, mon)):
                    self._check_rmids(group, mon)
                try:
                    SYSCALLS.mkdir(mon, mfd)
                    created = True
                except FileExistsError:
                    pass
                except OSError as exc:
                    if exc.errno in (errno.ENOSPC, errno.EBUSY):
                        raise exception.RmidsExhausted(
                            reason='the kernel has no free RMID for '
                            'monitoring group %s/%s (%s; info/L3_MON/'
                            'num_rmids is %s, freed RMIDs stay busy until '
                            'their occupancy drains)' % (
                                group, mon, exc.strerror,
                                self.tree.num_rmids()))
                    raise
                try:
                    mon_fd = os.open(mon, _DIR_FLAGS, dir_fd=mfd)
                except OSError as exc:
                    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                        _refuse('monitoring group %s/%s/%s/%s is a symbolic '
                                'link or not a directory; refusing it'
                                % (self.root, group, resctrl.MON_GROUPS,
                                   mon))
                    raise
                try:
                    self._write_at(mon_fd, 'cpus_list',
                                   ','.join(str(c) for c in cpus) + '\n')
                except BaseException:
                    if created:
                        # All or nothing: no RMID is left behind.
                        os.close(mon_fd)
                        mon_fd = None
                        self._remove_mon_at(mfd, mon)
                    raise
                finally:
                    if mon_fd is not None:
                        os.close(mon_fd)
        return os.path.join(self.root, group, resctrl.MON_GROUPS, mon)

    def _check_rmids(self, group, mon):
        total = self.tree.num_rmids()
        used = self._rmids_in_use()
        if total is not None and used >= total:
            raise exception.RmidsExhausted(
                reason='no free RMID for monitoring group %s/%s: %d of the '
                'platform\'s %d (info/L3_MON/num_rmids) are in use by '
                'resctrl groups' % (group, mon, used, total))

    def remove_mon_group(self, group, mon):
        """rmdir monitoring group ``mon`` of ``group`` (idempotent)."""
        resctrl.check_group_name(mon)
        with self._group_fd(group) as gfd:
            try:
                with self._mon_dir_fd(gfd, group) as mfd:
                    return self._remove_mon_at(mfd, mon)
            except exception.MonitoringUnavailable:
                return False

    def _remove_mon_at(self, mfd, mon):
        try:
            SYSCALLS.rmdir(mon, mfd)
            return True
        except FileNotFoundError:
            return False
        except OSError as exc:
            if exc.errno == errno.ENOTDIR:
                _refuse('monitoring group %s is a symbolic link or a file; '
                        'refusing to remove it' % mon)
            if exc.errno != errno.ENOTEMPTY:
                raise
        # A copied tree keeps the files the kernel would remove.
        self._remove_dir_at(mfd, mon)
        return True

    def remove_group(self, group):
        """rmdir a group (idempotent); the kernel removes its files.

        A copied tree keeps them, so there they are removed first.
        """
        self._check(group)
        try:
            SYSCALLS.rmdir(group, self.tree.fd)
            return True
        except FileNotFoundError:
            return False
        except OSError as exc:
            # ENOTDIR: a symlink or file of that name, refused below.
            if exc.errno not in (errno.ENOTEMPTY, errno.ENOTDIR):
                raise
        with self._group_fd(group) as gfd:
            for name in os.listdir(gfd):
                st = os.stat(name, dir_fd=gfd, follow_symlinks=False)
                if stat.S_ISDIR(st.st_mode):
                    self._remove_dir_at(gfd, name)
                else:
                    os.unlink(name, dir_fd=gfd)
        os.rmdir(group, dir_fd=self.tree.fd)
        return True

    def _remove_dir_at(self, parent_fd, name):
        fd = os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
        try:
            for child in os.listdir(fd):
                st = os.stat(child, dir_fd=fd, follow_symlinks=False)
                if stat.S_ISDIR(st.st_mode):
                    self._remove_dir_at(fd, child)
                else:
                    os.unlink(child, dir_fd=fd)
        finally:
            os.close(fd)
        os.rmdir(name, dir_fd=parent_fd)
