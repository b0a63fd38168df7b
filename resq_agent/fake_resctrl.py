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
"""Kernel-like resctrl and sysfs cache trees for hosts without Intel RDT.

A CI virtual machine has no cache allocation, so the agent would report no
LLC inventory and nothing could be scheduled. devstack
(``RESQ_FAKE_RESCTRL=True``) and the tests build, in ordinary directories,
what the kernel shows on a CAT host: ``info/L3/*``, the default group's
``schemata``, ``cpus_list`` and ``tasks``, ``mon_data/mon_L3_<id>/*`` and
the CPU cache topology under ``devices/system/cpu``. Pointing
``[resq_agent] resctrl_root`` and ``sysfs_root`` at them lets discovery,
inventory, scheduling and enforcement run unchanged. Plain directories do
not check writes the way the kernel does, and the agent enforces the
kernel's rules itself; tests that want the kernel's side as well (a
``mkdir`` making the group's files, CPUs moving between groups, a
monitoring group's CPUs a subset of its parent's, the RMID and class of
service limits) put :class:`Kernel` in front of the tree.

Run it as ``python -m resq_agent.fake_resctrl --help``.
"""

import argparse
import errno
import os
import shutil
import sys

from resq_common import exception
from resq_common import resctrl
from resq_common import resctrl_writer

DEFAULT_WAYS = 20
# The way size of the model driver's reference platform (45 MiB, 20 ways),
# so profiles made with it match the fake cache's shape traits.
DEFAULT_WAY_KIB = 45 * 1024 // 20
MAX_WAYS = 32


class InvalidTree(ValueError):
    """The requested tree cannot exist on a CAT host."""


def _mask(ways):
    return format((1 << ways) - 1, 'x')


def format_cpus(cpus):
    """``(0, 1, 2, 5)`` -> ``"0-2,5"``, as the kernel writes CPU lists."""
    out, first, last = [], None, None
    for cpu in sorted(set(cpus)):
        if last is not None and cpu == last + 1:
            last = cpu
            continue
        if first is not None:
            out.append(str(first) if first == last else
                       '%d-%d' % (first, last))
        first = last = cpu
    if first is not None:
        out.append(str(first) if first == last else '%d-%d' % (first, last))
    return ','.join(out)


def parse_cpus(text):
    """``"0-3,8"`` -> ``[0, 1, 2, 3, 8]``.

    :raises InvalidTree: for anything but CPU numbers and ranges.
    """
    try:
        return list(resctrl.parse_cpu_list(text))
    except exception.InvalidCpuList as exc:
        raise InvalidTree(str(exc))


def online_cpus(sysfs_root='/sys'):
    """The host's online CPUs, from ``devices/system/cpu/online``."""
    path = os.path.join(sysfs_root, 'devices', 'system', 'cpu', 'online')
    try:
        with open(path, encoding='ascii') as f:
            return parse_cpus(f.read())
    except OSError:
        return list(range(os.cpu_count() or 1))


def split_cpus(cpus, domains):
    """``{domain id: CPUs}``: ``cpus`` cut into ``domains`` contiguous runs.

    :raises InvalidTree: when there are fewer CPUs than domains.
    """
    cpus = sorted(cpus)
    if domains < 1 or len(cpus) < domains:
        raise InvalidTree('cannot share %d CPUs among %d cache domains: '
                          'each domain needs at least one CPU'
                          % (len(cpus), domains))
    size, extra = divmod(len(cpus), domains)
    result, start = {}, 0
    for dom in range(domains):
        end = start + size + (1 if dom < extra else 0)
        result[dom] = tuple(cpus[start:end])
        start = end
    return result


def _write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w', encoding='ascii') as f:
        f.write(text)


def check(ways, domains, min_cbm_bits, num_closids, max_ways=MAX_WAYS):
    """Refuse what no CAT platform has, naming the value to change."""
    if not 1 <= ways <= max_ways:
        raise InvalidTree('ways must be between 1 and %d, got %d'
                          % (max_ways, ways))
    if not 1 <= min_cbm_bits <= ways:
        raise InvalidTree('min_cbm_bits must be between 1 and the %d ways, '
                          'got %d' % (ways, min_cbm_bits))
    if num_closids < 1:
        raise InvalidTree('num_closids must be at least 1, got %d'
                          % num_closids)
    if not domains or any(d < 0 for d in domains):
        raise InvalidTree('cache domain ids must be non-negative, got %r'
                          % (list(domains),))


def build_resctrl(root, ways=DEFAULT_WAYS, domains=(0,), min_cbm_bits=1,
                  num_closids=16, shareable_bits=0, cdp=False, foreign=(),
                  cpus=(), num_rmids=224, max_ways=MAX_WAYS,
                  monitoring=True):
    """Lay out a mounted resctrl file system under ``root``.

    ``max_ways`` may be raised beyond real platforms' for scale tests (the
    agent benchmark's 128-way domains).

    :param domains: L3 cache domain ids.
    :param cdp: ``info/L3CODE`` and ``info/L3DATA`` instead of ``info/L3``.
    :param foreign: groups that belong to someone else (tests check the
        agent leaves them alone).
    :param cpus: CPUs of the default group (``cpus_list``).
    :param num_rmids: RMIDs (``info/L3_MON/num_rmids``): the default group,
        every control group and every monitoring group hold one.
    :param monitoring: lay out L3 monitoring (``info/L3_MON``,
        ``mon_data`` and ``mon_groups`` in every group); False for a
        platform with CAT but without CMT/MBM.
    :returns: the text of the default group's ``schemata``.
    :raises InvalidTree: for a shape no CAT platform has.
    """
    domains = tuple(domains)
    check(ways, domains, min_cbm_bits, num_closids, max_ways)
    full = _mask(ways)
    kinds = ('L3CODE', 'L3DATA') if cdp else ('L3',)
    for kind in kinds:
        _write(root, 'info/%s/cbm_mask' % kind, full + '\n')
        _write(root, 'info/%s/min_cbm_bits' % kind, '%d\n' % min_cbm_bits)
        _write(root, 'info/%s/num_closids' % kind, '%d\n' % num_closids)
        _write(root, 'info/%s/shareable_bits' % kind,
               format(shareable_bits, 'x') + '\n')
    if monitoring:
        _write(root, 'info/L3_MON/num_rmids', '%d\n' % num_rmids)
        _write(root, 'info/L3_MON/mon_features',
               'llc_occupancy\nmbm_total_bytes\nmbm_local_bytes\n')
    schemata = ''.join('%s:%s\n' % (kind, ';'.join(
        '%d=%s' % (d, full) for d in domains)) for kind in kinds)
    for group in ('',) + tuple(foreign):
        _write(root, os.path.join(group, 'schemata'), schemata)
        _write(root, os.path.join(group, 'tasks'),
               '1\n' if not group else '4242\n')
        _write(root, os.path.join(group, 'cpus_list'),
               format_cpus(cpus) + '\n' if cpus and not group else '')
        if monitoring:
            _mon_files(os.path.join(root, group), domains)
    return schemata


MON_FILES = ('llc_occupancy', 'mbm_total_bytes', 'mbm_local_bytes')


def _mon_files(group_path, domains, mon_groups=True):
    """A group's ``mon_data`` (counters at 0) and ``mon_groups``."""
    for d in domains:
        for name in MON_FILES:
            _write(group_path, os.path.join('mon_data', 'mon_L3_%02d' % d,
                                            name), '0\n')
    if mon_groups:
        os.makedirs(os.path.join(group_path, 'mon_groups'), exist_ok=True)


class Kernel(resctrl_writer.Syscalls):
    """The kernel's side of resctrl on a tree :func:`build_resctrl` made.

    Install it as :data:`resq_common.resctrl_writer.SYSCALLS` and the
    privileged writer's ``mkdir``, ``rmdir`` and writes get what the kernel
    does with them (Documentation/filesystems/resctrl.rst):

    * ``mkdir`` only in the root (a control group: a class of service and
      an RMID) or in a ``mon_groups`` directory (a monitoring group: an
      RMID); ``ENOSPC`` when either runs out, ``EPERM`` elsewhere; the new
      group gets its files (``schemata`` of full masks, empty
      ``cpus_list`` and ``tasks``, ``mon_data`` counters, ``mon_groups``);
    * ``rmdir`` removes a group with its files and monitoring groups;
    * ``cpus_list`` of a monitoring group takes only CPUs of its parent
      control group (``EINVAL`` and ``info/last_cmd_status`` otherwise), a
      CPU moves from the sibling monitoring group that had it; a control
      group's CPUs leave every other control group, and CPUs it drops leave
      its monitoring groups.

    RMIDs in limbo and task moves are not modelled.
    """

    def __init__(self, root):
        self.root = os.path.realpath(root)

    # -- reading the tree ------------------------------------------------
    def _path(self, dir_fd):
        return os.path.realpath('/proc/self/fd/%d' % dir_fd)

    def _read(self, *parts):
        with open(os.path.join(*parts), encoding='ascii') as f:
            return f.read()

    def _int_info(self, *parts):
        try:
            return int(self._read(self.root, 'info', *parts))
        except OSError:
            return None

    def _dirs(self, path):
        try:
            names = os.listdir(path)
        except OSError:
            return []
        return sorted(os.path.join(path, n) for n in names
                      if os.path.isdir(os.path.join(path, n)))

    def ctrl_groups(self):
        return [p for p in self._dirs(self.root) if os.path.basename(p)
                not in ('info', 'mon_groups', 'mon_data')]

    def mon_groups(self, ctrl):
        return self._dirs(os.path.join(ctrl, 'mon_groups'))

    def rmids_in_use(self):
        return sum(1 + len(self.mon_groups(g))
                   for g in [self.root] + self.ctrl_groups())

    def _cpus(self, group):
        try:
            return set(parse_cpus(self._read(group, 'cpus_list')))
        except (OSError, InvalidTree):
            return set()

    def _set_cpus(self, group, cpus):
        with open(os.path.join(group, 'cpus_list'), 'w') as f:
            f.write(format_cpus(cpus) + '\n')

    def _status(self, text):
        _write(self.root, 'info/last_cmd_status', text + '\n')

    def _domains(self):
        for line in self._read(self.root, 'schemata').splitlines():
            if line.startswith(('L3:', 'L3CODE:')):
                return [int(item.split('=')[0]) for item in
                        line.split(':', 1)[1].split(';')]
        return []

    # -- system calls ----------------------------------------------------
    def mkdir(self, name, dir_fd):
        parent = self._path(dir_fd)
        path = os.path.join(parent, name)
        if os.path.lexists(path):
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST),
                                  path)
        monitoring = self._int_info('L3_MON', 'num_rmids')
        is_mon = (os.path.basename(parent) == 'mon_groups' and (
            os.path.dirname(parent) == self.root
            or os.path.dirname(parent) in self.ctrl_groups()))
        if parent != self.root and not is_mon:
            raise PermissionError(errno.EPERM, os.strerror(errno.EPERM),
                                  path)
        if not is_mon:
            closids = self._int_info('L3', 'num_closids') or self._int_info(
                'L3CODE', 'num_closids')
            if closids is not None and 1 + len(self.ctrl_groups()) >= closids:
                self._status('Out of CLOSIDs')
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)
        if monitoring is not None and self.rmids_in_use() >= monitoring:
            self._status('Out of RMIDs')
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)
        os.mkdir(path, 0o755)
        for fname in ('cpus_list', 'tasks'):
            _write(path, fname, '\n' if fname == 'cpus_list' else '')
        if not is_mon:
            info = 'L3' if os.path.isdir(os.path.join(
                self.root, 'info', 'L3')) else 'L3CODE'
            full = self._read(self.root, 'info', info, 'cbm_mask').strip()
            kinds = ('L3',) if info == 'L3' else ('L3CODE', 'L3DATA')
            _write(path, 'schemata', ''.join('%s:%s\n' % (kind, ';'.join(
                '%d=%s' % (d, full) for d in self._domains()))
                for kind in kinds))
        if monitoring is not None:
            _mon_files(path, self._domains(), mon_groups=not is_mon)
        self._status('ok')

    def rmdir(self, name, dir_fd):
        parent = self._path(dir_fd)
        path = os.path.join(parent, name)
        if not os.path.lexists(path):
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT),
                                    path)
        if parent != self.root and os.path.basename(parent) != 'mon_groups':
            raise PermissionError(errno.EPERM, os.strerror(errno.EPERM),
                                  path)
        if not os.path.isdir(path) or os.path.islink(path):
            raise NotADirectoryError(errno.ENOTDIR,
                                     os.strerror(errno.ENOTDIR), path)
        shutil.rmtree(path)

    def write_file(self, dir_fd, name, text, append, where):
        group = self._path(dir_fd)
        if name == 'cpus_list':
            try:
                cpus = set(parse_cpus(text))
            except InvalidTree:
                self._status('Bad CPU list/mask')
                raise OSError(errno.EINVAL, os.strerror(errno.EINVAL),
                              os.path.join(group, name))
            parent = os.path.dirname(group)
            if os.path.basename(parent) == 'mon_groups':
                ctrl = os.path.dirname(parent)
                if ctrl != self.root and not cpus <= self._cpus(ctrl):
                    self._status("Can only assign subset of parent's cpus")
                    raise OSError(errno.EINVAL, os.strerror(errno.EINVAL),
                                  os.path.join(group, name))
                for sibling in self.mon_groups(ctrl):
                    if sibling != group and self._cpus(sibling) & cpus:
                        self._set_cpus(sibling, self._cpus(sibling) - cpus)
            else:
                dropped = self._cpus(group) - cpus
                for mon in self.mon_groups(group):
                    if self._cpus(mon) & dropped:
                        self._set_cpus(mon, self._cpus(mon) - dropped)
                for other in self.ctrl_groups():
                    if other == group:
                        continue
                    for g in [other] + self.mon_groups(other):
                        if self._cpus(g) & cpus:
                            self._set_cpus(g, self._cpus(g) - cpus)
            self._status('ok')
        super().write_file(dir_fd, name, text, append, where)


def real_memory(sysfs_root='/sys'):
    """``(small-page MB, huge-page MB)`` of this machine's NUMA nodes."""
    from resq_agent import discovery

    nodes = discovery.read_sysfs_numa_memory(sysfs_root)
    return (sum(m for m, _ in nodes.values()),
            sum(h for _, h in nodes.values()))


def build_sysfs(root, domains, way_kib=DEFAULT_WAY_KIB, ways=DEFAULT_WAYS,
                memory_mb=None, hugepages_mb=None):
    """The L3 part of ``devices/system/cpu``, and the NUMA cells.

    :param domains: ``{L3 cache id: CPUs sharing it}``.
    :param memory_mb: small-page memory of each cell (its ``meminfo``);
        with ``hugepages_mb``, 2 MiB huge pages of each cell. ``None``
        writes no memory (the agent then reports none).
    """
    every = sorted(c for cpus in domains.values() for c in cpus)
    _write(root, 'devices/system/cpu/online', format_cpus(every) + '\n')
    # One NUMA cell per cache, numbered as the caches (a Xeon without
    # sub-NUMA clustering).
    for cache_id, cpus in sorted(domains.items()):
        _write(root, 'devices/system/node/node%d/cpulist' % cache_id,
               format_cpus(cpus) + '\n')
        if memory_mb is not None:
            huge = hugepages_mb or 0
            _write(root, 'devices/system/node/node%d/meminfo' % cache_id,
                   'Node %d MemTotal:       %d kB\n'
                   % (cache_id, (memory_mb + huge) * 1024))
            _write(root, 'devices/system/node/node%d/hugepages/'
                   'hugepages-2048kB/nr_hugepages' % cache_id,
                   '%d\n' % (huge // 2))
    for cache_id, cpus in sorted(domains.items()):
        for cpu in cpus:
            base = 'devices/system/cpu/cpu%d/cache/index3' % cpu
            for name, value in (('level', '3'), ('type', 'Unified'),
                                ('id', str(cache_id)),
                                ('shared_cpu_list', format_cpus(cpus)),
                                ('size', '%dK' % (way_kib * ways)),
                                ('ways_of_associativity', str(ways))):
                _write(root, '%s/%s' % (base, name), value + '\n')


def has_rdt(resctrl_root='/sys/fs/resctrl'):
    """Whether the kernel offers L3 cache allocation here."""
    return os.path.isdir(os.path.join(resctrl_root, 'info', 'L3'))


def _parser():
    p = argparse.ArgumentParser(
        prog='python -m resq_agent.fake_resctrl',
        description='Build kernel-like resctrl and sysfs cache trees so the '
                    'resq agent runs on a host without Intel RDT (point '
                    '[resq_agent] resctrl_root and sysfs_root at them).')
    p.add_argument('--resctrl-root', required=True,
                   help='directory for the resctrl tree')
    p.add_argument('--sysfs-root', required=True,
                   help='directory for the CPU cache topology')
    p.add_argument('--ways', type=int, default=DEFAULT_WAYS,
                   help='LLC ways (bits of info/L3/cbm_mask); default '
                        '%(default)s')
    p.add_argument('--way-kib', type=int, default=DEFAULT_WAY_KIB,
                   help='size of one way in KiB; default %(default)s, the '
                        'model driver\'s platform, so its profiles match')
    p.add_argument('--domains', type=int, default=1,
                   help='L3 cache domains; the CPUs are split among them; '
                        'default %(default)s')
    p.add_argument('--num-closids', type=int, default=16,
                   help='classes of service; default %(default)s')
    p.add_argument('--min-cbm-bits', type=int, default=1,
                   help='smallest mask; default %(default)s')
    p.add_argument('--cpus',
                   help='CPUs of the fake caches, e.g. 0-7 (default: this '
                        'host\'s online CPUs)')
    p.add_argument('--memory-mb', type=int,
                   help='small-page memory of each NUMA cell, MB (default: '
                        'this machine\'s, shared among the cells)')
    p.add_argument('--hugepages-mb', type=int,
                   help='2 MiB huge pages of each NUMA cell, MB (default: '
                        'this machine\'s, shared among the cells)')
    p.add_argument('--replace', action='store_true',
                   help='rebuild trees that exist (drops the groups in them)')
    return p


def main(argv=None, out=None):
    """Build both trees; exit status 0, or 2 with one line on bad input."""
    out = out or sys.stdout
    args = _parser().parse_args(argv)
    try:
        if args.way_kib < 1:
            raise InvalidTree('--way-kib must be at least 1, got %d'
                              % args.way_kib)
        for name in ('memory_mb', 'hugepages_mb'):
            if (getattr(args, name) or 0) < 0:
                raise InvalidTree('--%s must not be negative, got %d'
                                  % (name.replace('_', '-'),
                                     getattr(args, name)))
        cpus = parse_cpus(args.cpus) if args.cpus else online_cpus()
        layout = split_cpus(cpus, args.domains)
        check(args.ways, tuple(layout), args.min_cbm_bits, args.num_closids)
    except InvalidTree as exc:
        print('ERROR: %s' % exc, file=sys.stderr)
        return 2
    if has_rdt(args.resctrl_root) and not args.replace:
        print('%s already holds a resctrl tree; left as it is (--replace '
              'rebuilds it)' % args.resctrl_root, file=out)
        return 0
    if args.replace:
        for root in (args.resctrl_root, args.sysfs_root):
            shutil.rmtree(root, ignore_errors=True)
    memory, huge = args.memory_mb, args.hugepages_mb
    if memory is None or huge is None:
        real = real_memory()
        cells = max(len(layout), 1)
        memory = real[0] // cells if memory is None else memory
        huge = real[1] // cells if huge is None else huge
    build_sysfs(args.sysfs_root, layout, args.way_kib, args.ways,
                memory, huge)
    build_resctrl(args.resctrl_root, args.ways, tuple(layout),
                  args.min_cbm_bits, args.num_closids, cpus=cpus)
    print('Fake resctrl tree in %s (%d cache domain(s) of %d ways of %d KiB, '
          '%d classes of service, CPUs %s); CPU cache topology and NUMA '
          'cells (%d MB and %d MB of huge pages each) in %s' % (
              args.resctrl_root, len(layout), args.ways, args.way_kib,
              args.num_closids, format_cpus(cpus), memory, huge,
              args.sysfs_root),
          file=out)
    return 0


if __name__ == '__main__':
    sys.exit(main())
