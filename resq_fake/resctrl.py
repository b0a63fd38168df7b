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
service limits) put :class:`Kernel` in front of the tree, and programs
that are not ours see it mounted through FUSE
(:mod:`resq_fake.resctrl_fuse`).

Run it as ``python -m resq_fake.resctrl --help``.
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
# Memory bandwidth allocation (Documentation/filesystems/resctrl.rst, "Memory
# bandwidth Allocation and monitoring"; x86's __get_mem_config_intel and
# __rdt_get_mem_config_amd): Intel's values are percentages, 100 the most;
# AMD's (MB and SMBA) are in 1/8 GB/s, 2048 the most (MAX_MBA_BW_AMD, now
# 1 << CPUID 0x80000020's bandwidth length, 11 on the parts there are).
# No info/ file says the most; it is what the default group shows.
INTEL_MAX_BW = 100
AMD_MAX_BW = 2048
# With the mba_MBps mount option (the software controller) values are MiBps,
# any u32: a group starts at MBA_MAX_MBPS.
MBA_MAX_MBPS = 2 ** 32 - 1
AMD_VENDORS = ('amd', 'hygon')
BW_RESOURCES = ('MB', 'SMBA')
# ``--mba`` of the command line: no MBA, Intel's percentages, mba_MBps.
MBA_CHOICES = ('none', 'percent', 'mbps')
L2_KINDS = ('L2', 'L2CODE', 'L2DATA')
L2_DEFAULT_WAYS = 8
# 8 ways of 256 KiB: a 2 MiB L2 shared by a cluster of cores (an E-core
# module's size).
L2_DEFAULT_WAY_KIB = 256


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


def check(ways, domains, min_cbm_bits, num_closids, max_ways=MAX_WAYS,
          min_floor=1):
    """Refuse what no CAT platform has, naming the value to change.

    :param min_floor: the smallest ``min_cbm_bits`` allowed: 0 only for a
        platform that takes sparse masks (AMD, whose kernel accepts an
        empty mask).
    """
    if not 1 <= ways <= max_ways:
        raise InvalidTree('ways must be between 1 and %d, got %d'
                          % (max_ways, ways))
    if not min_floor <= min_cbm_bits <= ways:
        raise InvalidTree('min_cbm_bits must be between %d and the %d ways, '
                          'got %d' % (min_floor, ways, min_cbm_bits))
    if num_closids < 1:
        raise InvalidTree('num_closids must be at least 1, got %d'
                          % num_closids)
    if not domains or any(d < 0 for d in domains):
        raise InvalidTree('cache domain ids must be non-negative, got %r'
                          % (list(domains),))


def build_resctrl(root, ways=DEFAULT_WAYS, domains=(0,), min_cbm_bits=1,
                  num_closids=16, shareable_bits=0, cdp=False, foreign=(),
                  cpus=(), num_rmids=224, max_ways=MAX_WAYS,
                  monitoring=True, resources=None, sparse_masks=None,
                  bit_usage=False, groups=None, vendor=None, mba_mbps=False,
                  l2_domains=None, cdpl2=False):
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
    :param resources: other allocation resources, ``{'MB': num_closids,
        'L2': ..., 'SMBA': ...}``: their ``info/`` and schemata lines.
        A value is ``num_closids`` or a dict of ``num_closids`` and, for
        L2, ``ways`` (8), ``min_cbm_bits`` (1), ``shareable_bits`` (0),
        ``sparse_masks`` (None: no file); for Intel's MB,
        ``min_bandwidth`` and ``bandwidth_gran`` (10 each).
    :param vendor: ``'amd'`` or ``'hygon'``: MB (and SMBA, which only AMD
        has) in AMD's units, 1/8 GB/s from 0 to 2048 in steps of 1; else
        Intel's percentages, from ``min_bandwidth`` to 100.
    :param mba_mbps: mounted with ``mba_MBps``: MB values in MiBps (any
        u32, 4294967295 at first), ``mba_MBps_event`` in every group.
        Intel's MB with L3 monitoring only, as the kernel requires.
    :param l2_domains: ``{L2 cache id: CPUs sharing it}``: the L2 lines'
        domains. None: the L3 domain ids (one L2 per L3).
    :param cdpl2: ``info/L2CODE`` and ``info/L2DATA`` instead of
        ``info/L2`` (the ``cdpl2`` mount option).
    :param sparse_masks: None writes no ``sparse_masks`` file (an older
        kernel), else ``info/L3*/sparse_masks`` says it.
    :param bit_usage: write ``info/L3*/bit_usage`` (:class:`Kernel` keeps
        it up to date).
    :param groups: foreign groups with a ``mode``: ``{name: {'mode':
        'exclusive' | 'pseudo-locked' | 'shareable', 'masks': {domain:
        mask}}}``. Giving it (even ``{}``) also writes every group's
        ``mode`` file, as kernels since 4.19 have. The default group and
        ``foreign`` groups keep out of exclusive and pseudo-locked ways, as
        the kernel requires before a group can be made exclusive.
    :returns: the text of the default group's ``schemata``.
    :raises InvalidTree: for a shape no CAT platform has.
    """
    domains = tuple(domains)
    check(ways, domains, min_cbm_bits, num_closids, max_ways,
          min_floor=0 if sparse_masks else 1)
    full = (1 << ways) - 1
    kinds = ('L3CODE', 'L3DATA') if cdp else ('L3',)
    for kind in kinds:
        _write(root, 'info/%s/cbm_mask' % kind, _mask(ways) + '\n')
        _write(root, 'info/%s/min_cbm_bits' % kind, '%d\n' % min_cbm_bits)
        _write(root, 'info/%s/num_closids' % kind, '%d\n' % num_closids)
        _write(root, 'info/%s/shareable_bits' % kind,
               format(shareable_bits, 'x') + '\n')
        if sparse_masks is not None:
            _write(root, 'info/%s/sparse_masks' % kind,
                   '%d\n' % bool(sparse_masks))
    others = _other_resources(root, resources or {}, domains, vendor,
                              mba_mbps, l2_domains, cdpl2, monitoring,
                              max_ways)
    if monitoring:
        _write(root, 'info/L3_MON/num_rmids', '%d\n' % num_rmids)
        _write(root, 'info/L3_MON/mon_features',
               'llc_occupancy\nmbm_total_bytes\nmbm_local_bytes\n')
    groups = None if groups is None else dict(groups)
    taken = {}
    for name, spec in sorted((groups or {}).items()):
        if spec.get('mode') not in (resctrl.MODE_EXCLUSIVE,
                                    resctrl.MODE_LOCKED):
            continue
        if spec['mode'] == resctrl.MODE_EXCLUSIVE and set(
                spec['masks']) != set(domains):
            raise InvalidTree('exclusive group %s needs a mask in every '
                              'cache domain %s' % (name, list(domains)))
        for d, m in spec['masks'].items():
            taken[d] = taken.get(d, 0) | m
    shared = {d: _first_run(full & ~taken.get(d, 0)) for d in domains}
    if not all(shared.values()):
        raise InvalidTree('exclusive and pseudo-locked groups leave no way '
                          'for the default group in some cache domain')
    schemata = ''.join('%s:%s\n' % (kind, ';'.join(
        '%d=%x' % (d, shared[d]) for d in domains)) for kind in kinds)
    schemata += others
    for group in ('',) + tuple(foreign):
        _lay_group(root, group, schemata, cpus if not group else (),
                   domains if monitoring else None,
                   None if groups is None else resctrl.MODE_SHAREABLE)
        if mba_mbps:
            _write(root, os.path.join(group, MBPS_EVENT), MBPS_DEFAULT)
    for name, spec in sorted((groups or {}).items()):
        mode = spec.get('mode', resctrl.MODE_SHAREABLE)
        masks = dict(shared)
        masks.update(spec.get('masks', {}))
        if mode == resctrl.MODE_LOCKED:
            # A region locks one domain; its schemata shows that one.
            (d, m), = spec['masks'].items()
            text = '%s:%d=%x\n' % (kinds[-1], d, m)
        else:
            text = ''.join('%s:%s\n' % (kind, ';'.join(
                '%d=%x' % (d, masks[d]) for d in domains))
                for kind in kinds) + others
        locked = mode in (resctrl.MODE_LOCKED, resctrl.MODE_LOCKSETUP)
        _lay_group(root, name, text, (),
                   domains if monitoring and not locked else None, mode)
        if mba_mbps and not locked:
            _write(root, os.path.join(name, MBPS_EVENT), MBPS_DEFAULT)
    if bit_usage:
        write_bit_usage(root)
    return schemata


def _first_run(mask):
    """The lowest run of adjacent set bits of ``mask``."""
    low = mask & -mask
    # Adding the lowest bit carries through the run to the way above it.
    return ((mask + low) & ~mask) - low if mask else 0


# The file of every group under mba_MBps (kernels since 6.14) naming the
# MBM event the software controller follows, and the one it starts with.
MBPS_EVENT = 'mba_MBps_event'
MBPS_DEFAULT = 'mbm_local_bytes\n'


def _spec(value):
    """A ``resources`` value as a dict (an int is its num_closids)."""
    return dict(value) if isinstance(value, dict) else {
        'num_closids': value}


def _other_resources(root, resources, domains, vendor=None, mba_mbps=False,
                     l2_domains=None, cdpl2=False, monitoring=True,
                     max_ways=MAX_WAYS):
    """``info/`` of MB, SMBA, L2 (or L2CODE and L2DATA); their lines.

    The default schemata lines, in the kernel's order.

    :raises InvalidTree: for what no platform or mount has.
    """
    if vendor not in (None, 'intel') + AMD_VENDORS:
        raise InvalidTree('vendor must be intel, amd or hygon, got %r'
                          % (vendor,))
    amd = vendor in AMD_VENDORS
    resources = dict(resources)
    if 'SMBA' in resources and not amd:
        raise InvalidTree('SMBA is AMD\'s: give vendor=\'amd\'')
    if mba_mbps and ('MB' not in resources or amd or not monitoring):
        raise InvalidTree('mba_MBps needs Intel\'s MB and L3 bandwidth '
                          'monitoring (the kernel refuses the mount '
                          'otherwise)')
    if (cdpl2 or l2_domains is not None) and 'L2' not in resources:
        raise InvalidTree('cdpl2 and l2_domains need an L2 resource')
    if cdpl2:
        spec = resources.pop('L2')
        resources['L2CODE'] = resources['L2DATA'] = spec
    l2_ids = tuple(domains)
    if l2_domains is not None:
        l2_ids = tuple(sorted(l2_domains))
        seen = set()
        for cache_id, cpus in sorted(l2_domains.items()):
            if cache_id < 0 or seen & set(cpus):
                raise InvalidTree('L2 cache ids must be non-negative and '
                                  'CPUs in one L2 each, got %r'
                                  % (l2_domains,))
            seen |= set(cpus)
        if not l2_ids:
            raise InvalidTree('l2_domains must name at least one L2')
    lines = ''
    for name, value in sorted(resources.items()):
        spec = _spec(value)
        closids = spec.get('num_closids', 16)
        if closids < 1:
            raise InvalidTree('num_closids of %s must be at least 1, got %d'
                              % (name, closids))
        _write(root, 'info/%s/num_closids' % name, '%d\n' % closids)
        if name.startswith('L2'):
            ways = spec.get('ways', L2_DEFAULT_WAYS)
            min_bits = spec.get('min_cbm_bits', 1)
            sparse = spec.get('sparse_masks')
            check(ways, l2_ids, min_bits, closids, max_ways,
                  min_floor=0 if sparse else 1)
            for fname, text in (
                    ('cbm_mask', _mask(ways)), ('min_cbm_bits', min_bits),
                    ('shareable_bits',
                     format(spec.get('shareable_bits', 0), 'x'))):
                _write(root, 'info/%s/%s' % (name, fname), '%s\n' % text)
            if sparse is not None:
                _write(root, 'info/%s/sparse_masks' % name,
                       '%d\n' % bool(sparse))
            ids, value = l2_ids, _mask(ways)
        else:
            if amd:
                files = (('min_bandwidth', 0), ('bandwidth_gran', 1),
                         ('delay_linear', 0))
                value = AMD_MAX_BW
            else:
                low = spec.get('min_bandwidth', 10)
                gran = spec.get('bandwidth_gran', 10)
                if not (1 <= low <= INTEL_MAX_BW
                        and 1 <= gran <= INTEL_MAX_BW):
                    raise InvalidTree('min_bandwidth and bandwidth_gran '
                                      'must be between 1 and 100')
                files = (('min_bandwidth', low), ('bandwidth_gran', gran),
                         ('delay_linear', 1), ('thread_throttle_mode', 'max'))
                value = MBA_MAX_MBPS if mba_mbps else INTEL_MAX_BW
            for fname, text in files:
                _write(root, 'info/%s/%s' % (name, fname), '%s\n' % text)
            ids = tuple(domains)
        lines += '%s:%s\n' % (name, ';'.join('%d=%s' % (d, value)
                                             for d in ids))
    return lines


def _lay_group(root, group, schemata, cpus, mon_domains, mode):
    _write(root, os.path.join(group, 'schemata'), schemata)
    _write(root, os.path.join(group, 'tasks'), '1\n' if not group
           else '4242\n')
    _write(root, os.path.join(group, 'cpus_list'),
           format_cpus(cpus) + '\n' if cpus else '')
    if mode is not None:
        _write(root, os.path.join(group, 'mode'), mode + '\n')
    if mon_domains is not None:
        _mon_files(os.path.join(root, group), mon_domains)


def _l3_kind_dirs(root):
    return [k for k in resctrl.L3_KINDS
            if os.path.isdir(os.path.join(root, 'info', k))]


def _read_text(*parts):
    try:
        with open(os.path.join(*parts), encoding='ascii') as f:
            return f.read()
    except OSError:
        return None


def group_mode(group_path):
    """A group's ``mode`` (``shareable`` without the file)."""
    text = _read_text(group_path, 'mode')
    return text.strip() if text else resctrl.MODE_SHAREABLE


def l3_masks(group_path):
    """``{domain: mask}``: the union of a group's L3 (or CDP) lines."""
    text = _read_text(group_path, 'schemata') or ''
    masks = {}
    for kind, doms in resctrl.parse_schemata(text).items():
        if kind in resctrl.L3_KINDS:
            for d, m in doms.items():
                masks[d] = masks.get(d, 0) | m
    return masks


def bit_usage_text(root):
    """``info/L3/bit_usage`` as the kernel would show the tree."""
    kind = _l3_kind_dirs(root)[0]
    full = int(_read_text(root, 'info', kind, 'cbm_mask'), 16)
    hw = int(_read_text(root, 'info', kind, 'shareable_bits') or '0', 16)
    paths = [root] + [os.path.join(root, n) for n in sorted(os.listdir(root))
                      if n not in ('info', 'mon_groups', 'mon_data')
                      and os.path.isdir(os.path.join(root, n))]
    by_mode = {}
    for path in paths:
        mode = group_mode(path)
        for d, m in l3_masks(path).items():
            by_mode.setdefault(d, {}).setdefault(mode, 0)
            by_mode[d][mode] |= m
    items = []
    for d in sorted(l3_masks(root)):
        modes = by_mode.get(d, {})
        used = 0
        for m in modes.values():
            used |= m
        chars = []
        for bit in reversed(range(full.bit_length())):
            b = 1 << bit
            if b & modes.get(resctrl.MODE_LOCKED, 0):
                chars.append('P')
            elif b & modes.get(resctrl.MODE_EXCLUSIVE, 0):
                chars.append('E')
            elif b & used:
                chars.append('X' if b & hw else 'S')
            else:
                chars.append('H' if b & hw else '0')
        items.append('%d=%s' % (d, ''.join(chars)))
    return ';'.join(items) + '\n'


def write_bit_usage(root):
    text = bit_usage_text(root)
    for kind in _l3_kind_dirs(root):
        _write(root, 'info/%s/bit_usage' % kind, text)


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
      group's CPUs leave every other control group and the default group,
      CPUs it drops leave its monitoring groups and return to the default
      group (as do a removed group's), and the default group cannot drop
      any;
    * classes of service run out at the smallest ``num_closids`` of all
      allocation resources (L3, L3CODE/L3DATA, L2, MB, SMBA); a
      pseudo-locked group holds none, nor an RMID;
    * a new group's masks leave out the ways of exclusive and
      pseudo-locked groups (``ENOSPC`` when fewer than ``min_cbm_bits``
      remain);
    * a ``schemata`` write changes only the lines and domains it names and
      is refused whole (``EINVAL``, ``info/last_cmd_status``) for an
      unknown resource or domain, a mask out of range, with gaps when
      ``sparse_masks`` is not 1, shorter than ``min_cbm_bits``, over a
      pseudo-locked region or an exclusive group's ways;
    * ``info/L3*/bit_usage``, when the tree has it, follows every change.

    Memory bandwidth (MB, SMBA) and L2 lines follow x86's
    ``rdtgroup_schemata_write`` (Documentation/filesystems/resctrl.rst,
    "Memory bandwidth Allocation and monitoring", "L2 schemata file
    details"):

    * Intel's MB takes a decimal percentage from ``min_bandwidth`` to 100,
      rounded up to a multiple of ``bandwidth_gran``; AMD's MB and SMBA
      (``info/MB/delay_linear`` 0) a number of 1/8 GB/s from 0 to 2048;
      under ``mba_MBps`` (the tree has ``mba_MBps_event``) MB takes any
      u32 of MiBps as it is; otherwise ``Invalid MB value`` or ``MB value
      <v> out of range [<min>,<max>]``;
    * L2, L2CODE and L2DATA masks are checked as L3's, against their own
      ``info/`` (exclusive and pseudo-locked groups are L3's only here);
    * a line with no value (``Missing '<name>' value``), a domain twice
      (``Duplicate domain <id>``) or an unknown domain (``EINVAL`` with no
      reason: ``last_cmd_status`` reads ``ok``) is refused, and a refused
      write changes no line;
    * a new group starts at each of these resources' default: the most
      bandwidth, every L2 way.

    RMIDs in limbo, task moves and writes to ``mode`` are not modelled.
    """

    def __init__(self, root, mba_mbps=None):
        """The kernel of the tree at ``root``.

        :param mba_mbps: whether the tree is mounted with ``mba_MBps``;
            None: when its default group has ``mba_MBps_event``.
        """
        self.root = os.path.realpath(root)
        self._mba_mbps = mba_mbps

    def mba_mbps(self):
        """Whether MB values are MiBps (the software controller)."""
        if self._mba_mbps is not None:
            return self._mba_mbps
        return os.path.isfile(os.path.join(self.root, MBPS_EVENT))

    def _bw_info(self, kind):
        """``(min, granularity, max, MiBps)`` of MB or SMBA's values."""
        low = self._int_info(kind, 'min_bandwidth') or 0
        gran = self._int_info(kind, 'bandwidth_gran') or 1
        if kind == 'MB' and self.mba_mbps():
            return 0, 1, MBA_MAX_MBPS, True
        # Only AMD's memory bandwidth has a delay scale that is not linear.
        amd = self._int_info(kind, 'delay_linear') == 0
        return low, gran, AMD_MAX_BW if amd else INTEL_MAX_BW, False

    def _check_bw(self, kind, value, path):
        """The kernel's bw_validate: the value the group gets.

        :raises OSError: ``EINVAL``, the reason in last_cmd_status.
        """
        low, gran, high, mbps = self._bw_info(kind)
        # kstrtou32(buf, 10): decimal digits (a leading "+"), a u32.
        digits = value[1:] if value.startswith('+') else value
        if not digits.isdigit() or not digits.isascii() or int(
                digits) > MBA_MAX_MBPS:
            self._refuse('Invalid MB value %s' % value, path)
        bw = int(digits)
        if mbps:
            return bw
        if not low <= bw <= high:
            self._refuse('MB value %d out of range [%d,%d]'
                         % (bw, low, high), path)
        # roundup(bw, bw_gran): "Intermediate values are rounded to the
        # next control step available on the hardware."
        return -(-bw // gran) * gran

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
                   for g in [self.root] + self.ctrl_groups()
                   if group_mode(g) not in (resctrl.MODE_LOCKED,
                                            resctrl.MODE_LOCKSETUP))

    def closids_in_use(self):
        return 1 + sum(1 for g in self.ctrl_groups()
                       if group_mode(g) != resctrl.MODE_LOCKED)

    def closid_limit(self):
        """The smallest num_closids of the allocation resources."""
        limits = [self._int_info(name, 'num_closids')
                  for name in os.listdir(os.path.join(self.root, 'info'))
                  if not name.endswith('_MON')]
        limits = [n for n in limits if n is not None]
        return min(limits) if limits else None

    def _cache_info(self, resource):
        """``(cbm_mask, min_cbm_bits, sparse)`` of a cache resource."""
        full = int(self._read(self.root, 'info', resource,
                              'cbm_mask').strip(), 16)
        sparse = _read_text(self.root, 'info', resource, 'sparse_masks')
        return (full, self._int_info(resource, 'min_cbm_bits') or 0,
                (sparse or '').strip() == '1')

    def _held_elsewhere(self, group, domain, modes):
        """Ways of ``domain`` held by other groups in one of ``modes``."""
        held = 0
        for other in [self.root] + self.ctrl_groups():
            if other != group and group_mode(other) in modes:
                held |= l3_masks(other).get(domain, 0)
        return held

    def _refresh(self):
        if any(os.path.isfile(os.path.join(self.root, 'info', k,
                                           'bit_usage'))
               for k in _l3_kind_dirs(self.root)):
            write_bit_usage(self.root)

    def _refuse(self, status, path, err=errno.EINVAL):
        self._status(status)
        raise OSError(err, os.strerror(err), path)

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

    def set_status(self, text):
        """Write ``info/last_cmd_status`` (``text``, one line)."""
        self._status(text)

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
        schemata = None
        if not is_mon:
            closids = self.closid_limit()
            if closids is not None and self.closids_in_use() >= closids:
                self._refuse('Out of CLOSIDs', path, errno.ENOSPC)
            schemata = self._new_schemata(path)
        if monitoring is not None and self.rmids_in_use() >= monitoring:
            self._refuse('Out of RMIDs', path, errno.ENOSPC)
        os.mkdir(path, 0o755)
        for fname in ('cpus_list', 'tasks'):
            _write(path, fname, '\n' if fname == 'cpus_list' else '')
        if schemata is not None:
            _write(path, 'schemata', schemata)
            if os.path.isfile(os.path.join(self.root, 'mode')):
                _write(path, 'mode', resctrl.MODE_SHAREABLE + '\n')
        if monitoring is not None:
            _mon_files(path, self._domains(), mon_groups=not is_mon)
        if os.path.isfile(os.path.join(self.root, MBPS_EVENT)):
            _write(path, MBPS_EVENT, MBPS_DEFAULT)
        self._refresh()
        self._status('ok')

    def _new_schemata(self, path):
        """A new group's schemata, as the kernel makes it.

        Every way no exclusive or pseudo-locked group holds (their lowest
        run without sparse masks), and the default group's values of the
        other resources.

        :raises OSError: ``ENOSPC`` when a domain has too few such ways.
        """
        lines = []
        for line in self._read(self.root, 'schemata').splitlines():
            kind, _, rest = line.partition(':')
            kind = kind.strip()
            doms = [item.split('=')[0].strip() for item in rest.split(';')
                    if '=' in item]
            if kind in BW_RESOURCES:
                # rdtgroup_init_mba: the most bandwidth.
                high = self._bw_info(kind)[2]
                lines.append('%s:%s' % (kind, ';'.join(
                    '%s=%d' % (d, high) for d in doms)))
                continue
            if kind in L2_KINDS:
                # rdtgroup_init_cat: every way no exclusive or
                # pseudo-locked group holds (L3's only, here).
                full = self._cache_info(kind)[0]
                lines.append('%s:%s' % (kind, ';'.join(
                    '%s=%x' % (d, full) for d in doms)))
                continue
            if kind not in resctrl.L3_KINDS:
                lines.append(line.strip())
                continue
            full, min_bits, sparse = self._cache_info(kind)
            items = []
            for d in self._domains():
                free = full & ~self._held_elsewhere(
                    path, d, (resctrl.MODE_EXCLUSIVE, resctrl.MODE_LOCKED))
                mask = free if sparse else _first_run(free)
                if bin(mask).count('1') < max(min_bits, 1):
                    self._refuse('No space on %s:%d' % (kind, d), path,
                                 errno.ENOSPC)
                items.append('%d=%x' % (d, mask))
            lines.append('%s:%s' % (kind, ';'.join(items)))
        return '\n'.join(lines) + '\n'

    def rmdir(self, name, dir_fd):
        parent = self._path(dir_fd)
        path = os.path.join(parent, name)
        if not os.path.lexists(path):
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT),
                                    path)
        if (parent != self.root and os.path.basename(parent) != 'mon_groups'
                or parent == self.root and name in ('info', 'mon_data',
                                                    'mon_groups')):
            raise PermissionError(errno.EPERM, os.strerror(errno.EPERM),
                                  path)
        if not os.path.isdir(path) or os.path.islink(path):
            raise NotADirectoryError(errno.ENOTDIR,
                                     os.strerror(errno.ENOTDIR), path)
        if parent == self.root:
            # Its CPUs return to the default group.
            freed = self._cpus(path)
            if freed:
                self._set_cpus(self.root, self._cpus(self.root) | freed)
        shutil.rmtree(path)
        self._refresh()

    def write_file(self, dir_fd, name, text, append, where):
        group = self._path(dir_fd)
        if name == 'schemata' and (group == self.root
                                   or group in self.ctrl_groups()):
            text = self._schemata_update(group, text)
            super().write_file(dir_fd, name, text, False, where)
            self._refresh()
            self._status('ok')
            return
        if name == MBPS_EVENT and os.path.isfile(
                os.path.join(group, MBPS_EVENT)):
            # rdtgroup_mba_mbps_event_write: an MBM event the tree counts.
            event = text[:-1] if text.endswith('\n') else text
            features = (_read_text(self.root, 'info', 'L3_MON',
                                   'mon_features') or '').split()
            if event not in ('mbm_local_bytes', 'mbm_total_bytes') or (
                    event not in features):
                self._refuse("Unsupported event id '%s'" % event,
                             os.path.join(group, name))
            super().write_file(dir_fd, name, event + '\n', False, where)
            self._status('ok')
            return
        if name == 'cpus_list':
            # The kernel keeps a CPU mask and reads it back as a list.
            text = format_cpus(self._move_cpus(group, text)) + '\n'
        super().write_file(dir_fd, name, text, append, where)

    def _move_cpus(self, group, text):
        """The kernel's side of a ``cpus_list`` write to ``group``.

        :returns: the group's new CPUs.
        :raises OSError: ``EINVAL`` (and ``info/last_cmd_status``) for
            what the kernel refuses; nothing is changed then.
        """
        path = os.path.join(group, 'cpus_list')
        try:
            cpus = set(parse_cpus(text))
        except InvalidTree:
            self._refuse('Bad CPU list/mask', path)
        parent = os.path.dirname(group)
        if os.path.basename(parent) == 'mon_groups':
            ctrl = os.path.dirname(parent)
            if ctrl != self.root and not cpus <= self._cpus(ctrl):
                self._refuse("Can only assign subset of parent's cpus", path)
            for sibling in self.mon_groups(ctrl):
                if sibling != group and self._cpus(sibling) & cpus:
                    self._set_cpus(sibling, self._cpus(sibling) - cpus)
            self._status('ok')
            return cpus
        dropped = self._cpus(group) - cpus
        if group == self.root and dropped:
            self._refuse("Can't drop CPUs from default group", path)
        for mon in self.mon_groups(group):
            if self._cpus(mon) & dropped:
                self._set_cpus(mon, self._cpus(mon) - dropped)
        if dropped:
            # CPUs a control group gives up return to the default group.
            self._set_cpus(self.root, self._cpus(self.root) | dropped)
        for other in [self.root] + self.ctrl_groups():
            if other == group:
                continue
            for g in [other] + self.mon_groups(other):
                if self._cpus(g) & cpus:
                    self._set_cpus(g, self._cpus(g) - cpus)
        self._status('ok')
        return cpus

    # -- schemata writes --------------------------------------------------
    def _schemata_update(self, group, text):
        """The group's schemata with ``text``'s values in.

        :raises OSError: ``EINVAL`` naming the first thing the kernel
            would refuse; nothing is changed then.
        """
        path = os.path.join(group, 'schemata')
        if group_mode(group) == resctrl.MODE_LOCKED:
            self._refuse('Resource group is pseudo-locked', path)
        current = []
        for line in self._read(group, 'schemata').splitlines():
            kind, _, rest = line.partition(':')
            if kind.strip():
                current.append((kind.strip(), dict(
                    item.strip().split('=', 1) for item in rest.split(';')
                    if '=' in item)))
        values = dict(current)
        staged = set()
        for line in text.splitlines():
            if not line.strip():
                continue
            kind, sep, rest = line.partition(':')
            kind = kind.strip()
            if not sep:
                self._refuse("Missing ':'", path)
            if kind not in values:
                self._refuse('Unknown or unsupported resource name '
                             "'%s'" % kind, path)
            if kind not in resctrl.L3_KINDS:
                self._stage(group, kind, rest, values[kind], staged, path)
                continue
            for item in rest.split(';'):
                if not item.strip():
                    continue
                dom, sep, value = item.partition('=')
                dom, value = dom.strip(), value.strip()
                if not sep or not dom.isdigit():
                    self._refuse("Missing '=' or non-numeric domain", path)
                if dom not in values[kind]:
                    self._refuse('Unknown domain %s of %s' % (dom, kind),
                                 path)
                if kind in resctrl.CACHE_RESOURCES:
                    self._check_cbm(group, kind, int(dom), value, path)
                values[kind][dom] = value
        return ''.join('%s:%s\n' % (kind, ';'.join(
            '%s=%s' % kv for kv in doms.items())) for kind, doms in current)

    def _stage(self, group, kind, rest, values, staged, path):
        """One line of L2, MB or SMBA into ``values``, as parse_line.

        :param staged: ``(kind, domain)`` pairs of this write so far.
        :raises OSError: ``EINVAL`` for the first thing the kernel refuses.
        """
        if not rest:
            self._refuse("Missing '%s' value" % kind, path)
        items = rest.split(';')
        if len(items) > 1 and not items[-1]:
            # A ";" at the end of the line ends it ("L2:0=f;").
            items.pop()
        for item in items:
            dom, sep, value = item.partition('=')
            # kstrtoul(id, 10): digits, not even a space around them.
            if not sep or not (dom.isdigit() and dom.isascii()):
                self._refuse("Missing '=' or non-numeric domain", path)
            dom, value = str(int(dom)), value.strip()
            if dom not in values:
                # parse_line's -EINVAL with nothing in last_cmd_status.
                self._refuse('ok', path)
            if (kind, dom) in staged:
                self._refuse('Duplicate domain %s' % dom, path)
            staged.add((kind, dom))
            if kind in BW_RESOURCES:
                values[dom] = '%d' % self._check_bw(kind, value, path)
            else:
                self._check_cbm(group, kind, int(dom), value, path)
                values[dom] = '%x' % int(value, 16)

    def _check_cbm(self, group, kind, dom, value, path):
        """The kernel's checks of one cache mask (cbm_validate, parse_cbm).

        :raises OSError: ``EINVAL``, the reason in last_cmd_status.
        """
        full, min_bits, sparse = self._cache_info(kind)
        try:
            mask = int(value, 16)
        except ValueError:
            self._refuse('Non-hex character in the mask %s' % value, path)
        if (min_bits > 0 and mask == 0) or mask > full:
            self._refuse('Mask out of range', path)
        run = _first_run(mask)
        if not sparse and mask != run:
            self._refuse('The mask %x has non-consecutive 1-bits' % mask,
                         path)
        if bin(run).count('1') < min_bits:
            self._refuse('Need at least %d bits in the mask' % min_bits,
                         path)
        if kind not in resctrl.L3_KINDS:
            return
        if mask & self._held_elsewhere(group, dom, (resctrl.MODE_LOCKED,)):
            self._refuse('CBM overlaps with pseudo-locked region', path)
        if mask & self._held_elsewhere(group, dom,
                                       (resctrl.MODE_EXCLUSIVE,)):
            self._refuse('Overlaps with exclusive group', path)
        if group_mode(group) == resctrl.MODE_EXCLUSIVE and (
                mask & self._held_elsewhere(group, dom, (
                    resctrl.MODE_SHAREABLE, resctrl.MODE_LOCKSETUP))):
            self._refuse('Overlaps with other group', path)


def real_memory(sysfs_root='/sys'):
    """``(small-page MB, huge-page MB)`` of this machine's NUMA nodes."""
    from resq_agent import discovery

    nodes = discovery.read_sysfs_numa_memory(sysfs_root)
    return (sum(m for m, _ in nodes.values()),
            sum(h for _, h in nodes.values()))


# x86 vendor numbers of a CPU's modalias (the kernel's X86_VENDOR_*), and
# a family of each.
VENDORS = {'intel': (0, 6), 'amd': (2, 0x19), 'hygon': (9, 0x18)}


def build_sysfs(root, domains, way_kib=DEFAULT_WAY_KIB, ways=DEFAULT_WAYS,
                memory_mb=None, hugepages_mb=None, vendor=None,
                l2_domains=None, l2_ways=L2_DEFAULT_WAYS,
                l2_way_kib=L2_DEFAULT_WAY_KIB):
    """The L3 part of ``devices/system/cpu``, and the NUMA cells.

    :param domains: ``{L3 cache id: CPUs sharing it}``.
    :param l2_domains: ``{L2 cache id: CPUs sharing it}``: their
        ``cache/index2`` entries (a unified level-2 cache of ``l2_ways``
        ways of ``l2_way_kib``); None writes no L2.
    :param memory_mb: small-page memory of each cell (its ``meminfo``);
        with ``hugepages_mb``, 2 MiB huge pages of each cell. ``None``
        writes no memory (the agent then reports none).
    :param vendor: ``'intel'``, ``'amd'`` or ``'hygon'``: every CPU's
        ``modalias`` names it as the kernel does; None writes none.
    """
    every = sorted(c for cpus in domains.values() for c in cpus)
    _write(root, 'devices/system/cpu/online', format_cpus(every) + '\n')
    if vendor is not None:
        number, family = VENDORS[vendor]
        for cpu in every:
            _write(root, 'devices/system/cpu/cpu%d/modalias' % cpu,
                   'cpu:type:x86,ven%04Xfam%04Xmod0001:feature:,0000,0001\n'
                   % (number, family))
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
    for cache_id, cpus in sorted((l2_domains or {}).items()):
        for cpu in cpus:
            base = 'devices/system/cpu/cpu%d/cache/index2' % cpu
            for name, value in (('level', '2'), ('type', 'Unified'),
                                ('id', str(cache_id)),
                                ('shared_cpu_list', format_cpus(cpus)),
                                ('size', '%dK' % (l2_way_kib * l2_ways)),
                                ('ways_of_associativity', str(l2_ways))):
                _write(root, '%s/%s' % (base, name), value + '\n')


def has_rdt(resctrl_root='/sys/fs/resctrl'):
    """Whether the kernel offers L3 cache allocation here."""
    return os.path.isdir(os.path.join(resctrl_root, 'info', 'L3'))


def add_tree_options(parser):
    """Add the options that shape the fake cache to ``parser``.

    ``python -m resq_fake.resctrl`` and
    ``python -m resq_fake.resctrl_fuse`` take the same ones;
    :func:`tree_layout` reads them back.
    """
    parser.add_argument('--ways', type=int, default=DEFAULT_WAYS,
                        help='LLC ways (bits of info/L3/cbm_mask); default '
                             '%(default)s')
    parser.add_argument('--domains', type=int, default=1,
                        help='L3 cache domains; the CPUs are split among '
                             'them; default %(default)s')
    parser.add_argument('--num-closids', type=int, default=16,
                        help='classes of service; default %(default)s')
    parser.add_argument('--num-rmids', type=int, default=224,
                        help='RMIDs (info/L3_MON/num_rmids); default '
                             '%(default)s')
    parser.add_argument('--min-cbm-bits', type=int, default=1,
                        help='smallest mask; default %(default)s')
    parser.add_argument('--cpus',
                        help='CPUs of the fake caches, e.g. 0-7 (default: '
                             'this host\'s online CPUs)')
    parser.add_argument('--mba', choices=MBA_CHOICES, default='none',
                        help='memory bandwidth allocation: none, Intel\'s '
                             'percentages (info/MB, min_bandwidth and '
                             'bandwidth_gran 10) or the software controller '
                             '(mounted with mba_MBps: MiBps); default '
                             '%(default)s')
    parser.add_argument('--l2', type=int, default=0, metavar='CPUS',
                        help='L2 cache allocation: L2 caches shared by '
                             'clusters of CPUS consecutive CPUs (info/L2, '
                             '%d ways of %d KiB), as Atom-based parts have; '
                             'default 0, no L2 CAT' % (L2_DEFAULT_WAYS,
                                                       L2_DEFAULT_WAY_KIB))
    return parser


def tree_layout(args):
    """``(CPUs, {domain id: CPUs})`` that :func:`add_tree_options` asks.

    :raises InvalidTree: for a shape no CAT platform has.
    """
    cpus = parse_cpus(args.cpus) if args.cpus else online_cpus()
    layout = split_cpus(cpus, args.domains)
    check(args.ways, tuple(layout), args.min_cbm_bits, args.num_closids)
    if args.num_rmids < 1:
        raise InvalidTree('num_rmids must be at least 1, got %d'
                          % args.num_rmids)
    l2_layout(cpus, getattr(args, 'l2', 0))
    return cpus, layout


def l2_layout(cpus, per_cluster):
    """``{L2 cache id: CPUs}``: ``cpus`` in clusters of ``per_cluster``.

    None for 0 (no L2 CAT); the last cluster may be smaller (a part with a
    core disabled).

    :raises InvalidTree: a negative size.
    """
    if per_cluster < 0:
        raise InvalidTree('--l2 must be a number of CPUs per L2 cluster '
                          '(0: none), got %d' % per_cluster)
    if not per_cluster:
        return None
    cpus = sorted(cpus)
    return {i: tuple(cpus[start:start + per_cluster])
            for i, start in enumerate(range(0, len(cpus), per_cluster))}


def build_from_args(root, args, cpus, layout):
    """:func:`build_resctrl` in ``root`` as the tree options say."""
    mba = getattr(args, 'mba', 'none')
    resources = {'MB': {}} if mba != 'none' else {}
    l2 = l2_layout(cpus, getattr(args, 'l2', 0))
    if l2:
        resources['L2'] = {'ways': L2_DEFAULT_WAYS,
                           'num_closids': args.num_closids}
    return build_resctrl(root, args.ways, tuple(layout), args.min_cbm_bits,
                         args.num_closids, cpus=cpus,
                         num_rmids=args.num_rmids,
                         resources=resources or None,
                         mba_mbps=mba == 'mbps', l2_domains=l2)


def _parser():
    p = argparse.ArgumentParser(
        prog='python -m resq_fake.resctrl',
        description='Build kernel-like resctrl and sysfs cache trees so the '
                    'resq agent runs on a host without Intel RDT (point '
                    '[resq_agent] resctrl_root and sysfs_root at them).')
    p.add_argument('--resctrl-root', required=True,
                   help='directory for the resctrl tree')
    p.add_argument('--sysfs-root', required=True,
                   help='directory for the CPU cache topology')
    add_tree_options(p)
    p.add_argument('--way-kib', type=int, default=DEFAULT_WAY_KIB,
                   help='size of one way in KiB; default %(default)s, the '
                        'model driver\'s platform, so its profiles match')
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
        cpus, layout = tree_layout(args)
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
                memory, huge, l2_domains=l2_layout(cpus, args.l2))
    build_from_args(args.resctrl_root, args, cpus, layout)
    print('Fake resctrl tree in %s (%d cache domain(s) of %d ways of %d KiB, '
          '%d classes of service, CPUs %s); CPU cache topology and NUMA '
          'cells (%d MB and %d MB of huge pages each) in %s%s' % (
              args.resctrl_root, len(layout), args.ways, args.way_kib,
              args.num_closids, format_cpus(cpus), memory, huge,
              args.sysfs_root,
              '; L2 CAT, %d-way L2 caches shared by clusters of %d CPUs'
              % (L2_DEFAULT_WAYS, args.l2) if args.l2 else ''),
          file=out)
    return 0


if __name__ == '__main__':
    sys.exit(main())
