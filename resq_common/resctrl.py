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
"""The resctrl file system, read side, under a configurable root.

Every resctrl path resq-nova uses is built here from a root directory
(``/sys/fs/resctrl`` on a real host, a copied tree in tests). Writes are
privileged: :mod:`resq_common.resctrl_writer` does them below a root the
privileged side chose, and the ``privsep`` packages of the agent and the
profiler are its only callers.
"""

import os
import re

from resq_common import cbm
from resq_common import exception

DEFAULT_ROOT = '/sys/fs/resctrl'
GROUP_PREFIX = 'resq-'
# Matched whole (fullmatch): "$" would also accept a trailing newline.
GROUP_RE = re.compile(r'resq-[a-z0-9][a-z0-9_.-]{0,62}')
# The profiler's groups: resq-nova's, but never the agent's. The agent
# removes the resq- groups no instance owns, so a profiling run on a
# compute host needs a name the agent leaves alone.
PROFILER_PREFIX = 'resq-profiler'


class Owner:
    """Which ``resq-`` groups one privileged context may touch."""

    def __init__(self, name, prefix, excluded=None):
        self.name = name
        self.prefix = prefix
        self.excluded = excluded

    def owns(self, group):
        return (group.startswith(self.prefix)
                and not (self.excluded and group.startswith(self.excluded)))

    def check(self, group):
        """:raises ResctrlError: ``group`` is not this owner's."""
        check_group_name(group)
        if not self.owns(group):
            raise exception.ResctrlError(
                reason='resctrl group %s is not %s\'s (its groups are %s*%s); '
                'refusing to touch it' % (
                    group, self.name, self.prefix,
                    ' except %s*' % self.excluded if self.excluded else ''))
        return group


# The agent's groups (instances, the on-demand lease) and the profiler's:
# neither privileged context touches the other's.
AGENT = Owner('resq-agent', GROUP_PREFIX, PROFILER_PREFIX)
PROFILER = Owner('resq-profiler', PROFILER_PREFIX)
REQUIRED_INFO = ('cbm_mask', 'min_cbm_bits', 'num_closids')
# Files the kernel creates in a new group; a copied tree lacks them.
GROUP_FILES = ('schemata', 'cpus_list', 'tasks')
_NOT_GROUPS = ('info', 'mon_groups', 'mon_data')
# Monitoring groups live in a control group's mon_groups directory.
MON_GROUPS = 'mon_groups'
L3_MON_INFO = ('info', 'L3_MON', 'num_rmids')


def check_group_name(name):
    """Reject any group name that resq-nova does not own."""
    if not isinstance(name, str) or not GROUP_RE.fullmatch(name):
        raise exception.ResctrlError(
            reason='resctrl group name %r is not one of ours: names must '
            'start with %r and use lower-case letters, digits, ".", "_" '
            'or "-"' % (name, GROUP_PREFIX))
    return name


def parse_cpu_list(text):
    """``"0-3,8"`` -> ``(0, 1, 2, 3, 8)``.

    The one parser of the kernel's CPU lists (resctrl's ``cpus_list``,
    sysfs's ``cpulist``, the cache's ``shared_cpu_list``) and of libvirt's
    ``cpuset`` attributes.

    :raises exception.InvalidCpuList: (a ``ResctrlError`` and a
        ``ValueError``) for anything but CPU numbers and ranges.
    """
    cpus = set()
    for part in text.replace('\n', ',').split(','):
        part = part.strip()
        if not part:
            continue
        lo, sep, hi = part.partition('-')
        try:
            first, last = int(lo), int(hi if sep else lo)
        except ValueError:
            first, last = 0, -1
        if first < 0 or last < first:
            raise exception.InvalidCpuList(
                reason='%r is not a CPU list such as 0-3,8' % text)
        cpus.update(range(first, last + 1))
    return tuple(sorted(cpus))


def parse_schemata(text):
    """``{'L3': {0: 0xfffff, 1: 0xfffff}, ...}`` from a schemata file."""
    result = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or ':' not in line:
            continue
        resource, _, rest = line.partition(':')
        domains = {}
        for item in rest.split(';'):
            if '=' not in item:
                continue
            dom, _, value = item.partition('=')
            if resource.strip().startswith('L3'):
                domains[int(dom)] = cbm.parse(value)
            else:
                domains[int(dom)] = value.strip()
        result[resource.strip()] = domains
    return result


# The characters of info/<resource>/bit_usage (Documentation/arch/x86/
# resctrl.rst): "0" unused, "H" used by hardware only (shareable_bits in no
# group), "X" shareable bits a group uses too, "S" used by groups that
# share, "E" used by one exclusive group, "P" pseudo-locked. Ways marked E
# or P cannot go into any other group's mask.
BIT_USAGE_CHARS = frozenset('0HXSEP')
NOT_SHAREABLE = frozenset('EP')
# The values of a group's "mode" file.
MODE_SHAREABLE = 'shareable'
MODE_EXCLUSIVE = 'exclusive'
MODE_LOCKSETUP = 'pseudo-locksetup'
MODE_LOCKED = 'pseudo-locked'
GROUP_MODES = (MODE_SHAREABLE, MODE_EXCLUSIVE, MODE_LOCKSETUP, MODE_LOCKED)
# Resources whose schemata values are cache bit masks.
CACHE_RESOURCES = ('L3', 'L3CODE', 'L3DATA', 'L2', 'L2CODE', 'L2DATA')
L3_KINDS = ('L3', 'L3CODE', 'L3DATA')


def parse_bit_usage(text):
    """``"0=SSEE;1=SSSS"`` -> ``{0: "SSEE", 1: "SSSS"}``.

    The leftmost character is the highest way (the kernel prints from bit
    ``cbm_len - 1`` down to bit 0).

    :raises ValueError: for anything but ``<id>=<legend characters>``.
    """
    result = {}
    for item in text.replace('\n', ';').split(';'):
        item = item.strip()
        if not item:
            continue
        dom, sep, chars = item.partition('=')
        chars = chars.strip().upper()
        if not sep or not dom.strip().isdigit() or not chars or (
                set(chars) - BIT_USAGE_CHARS):
            raise ValueError('%r is not a bit_usage entry such as '
                             '0=SSSSEE00' % item)
        result[int(dom)] = chars
    return result


def usage_mask(chars, legend):
    """The ways of one domain's bit_usage marked with one of ``legend``."""
    mask = 0
    for pos, char in enumerate(reversed(chars)):
        if char in legend:
            mask |= 1 << pos
    return mask


def format_schemata(resources):
    lines = []
    for resource, domains in resources.items():
        items = ';'.join('%d=%s' % (d, cbm.fmt(m) if isinstance(m, int)
                                    else m)
                         for d, m in sorted(domains.items()))
        lines.append('%s:%s' % (resource, items))
    return '\n'.join(lines) + '\n'


class Resctrl:
    """A resctrl tree rooted at ``root``."""

    def __init__(self, root=DEFAULT_ROOT):
        self.root = os.path.abspath(root)

    def _read(self, *parts):
        with open(os.path.join(self.root, *parts), encoding='ascii') as f:
            return f.read().strip()

    def _isdir(self, *parts):
        return os.path.isdir(os.path.join(self.root, *parts))

    def _isfile(self, *parts):
        return os.path.isfile(os.path.join(self.root, *parts))

    def _subdirs(self, *parts):
        """Names of the directories in ``root/parts...`` ([] if none)."""
        try:
            names = os.listdir(os.path.join(self.root, *parts))
        except OSError:
            return []
        return [n for n in names if self._isdir(*parts, n)]

    @property
    def l3_info_dir(self):
        for name in ('L3', 'L3CODE'):
            if self._isdir('info', name):
                return name
        return 'L3'

    def check(self):
        """Make sure the root looks like a mounted resctrl file system.

        :raises resq_common.exception.ResctrlError: naming what is
            missing and how to fix it.
        """
        hint = ('mount it with "mount -t resctrl resctrl %s" on a host with '
                'Intel RDT, or point the resctrl_root option at a tree laid '
                'out like the kernel\'s' % DEFAULT_ROOT)
        if not self._isdir():
            raise exception.ResctrlError(
                reason='resctrl root %s does not exist; %s' % (self.root,
                                                               hint))
        for name in REQUIRED_INFO:
            if not self._isfile('info', self.l3_info_dir, name):
                raise exception.ResctrlError(
                    reason='%s is not a resctrl file system with L3 CAT: '
                    'missing info/%s/%s; %s' % (self.root, self.l3_info_dir,
                                                name, hint))
        if not self._isfile('schemata'):
            raise exception.ResctrlError(
                reason='%s is not a resctrl file system: missing the '
                'default group\'s schemata file; %s' % (self.root, hint))
        return self

    def info(self):
        """CAT parameters of the platform, from ``info/L3``."""
        self.check()
        d = self.l3_info_dir
        shareable = '0'
        if self._isfile('info', d, 'shareable_bits'):
            shareable = self._read('info', d, 'shareable_bits')
        return {
            'cbm_mask': cbm.parse(self._read('info', d, 'cbm_mask')),
            'min_cbm_bits': int(self._read('info', d, 'min_cbm_bits')),
            'num_closids': int(self._read('info', d, 'num_closids')),
            'shareable_bits': cbm.parse(shareable),
            'cdp': d == 'L3CODE',
        }

    def domains(self):
        """L3 cache domain ids, from the default group's schemata."""
        sch = parse_schemata(self._read('schemata'))
        for key in ('L3', 'L3CODE'):
            if key in sch:
                return sorted(sch[key])
        raise exception.ResctrlError(
            reason='%s/schemata has no L3 line; is L3 CAT enabled?'
            % self.root)

    # -- rules that limit what mkdir and schemata writes accept ----------
    def _info_dirs(self):
        return sorted(self._subdirs('info'))

    def closid_limits(self):
        """``{resource: num_closids}`` of every allocation resource.

        The kernel makes at most the smallest of them groups (the default
        group included); with CDP the L3CODE and L3DATA counts are already
        halved.
        """
        limits = {}
        for name in self._info_dirs():
            if name.endswith('_MON') or not self._isfile(
                    'info', name, 'num_closids'):
                continue
            limits[name] = int(self._read('info', name, 'num_closids'))
        return limits

    def rmid_limits(self):
        """``{monitoring resource: num_rmids}`` (L3_MON and any other)."""
        limits = {}
        for name in self._info_dirs():
            if name.endswith('_MON') and self._isfile('info', name,
                                                      'num_rmids'):
                limits[name] = int(self._read('info', name, 'num_rmids'))
        return limits

    def sparse_masks(self):
        """``info/L3/sparse_masks``: True, False, or None when absent."""
        d = self.l3_info_dir
        if not self._isfile('info', d, 'sparse_masks'):
            return None
        return self._read('info', d, 'sparse_masks') == '1'

    def bit_usage(self):
        """``{domain: legend}`` from ``info/L3/bit_usage``, or None."""
        d = self.l3_info_dir
        if not self._isfile('info', d, 'bit_usage'):
            return None
        return parse_bit_usage(self._read('info', d, 'bit_usage'))

    @staticmethod
    def _any_group(name):
        if (not isinstance(name, str) or not name or '/' in name
                or name in ('.', '..') or name in _NOT_GROUPS):
            raise exception.ResctrlError(
                reason='%r is not a resctrl group directory name' % (name,))
        return name

    def group_mode(self, name):
        """The ``mode`` of any group, ours or not.

        ``shareable`` when the group has no mode file (a kernel without
        one shares everything).
        """
        if self._isfile(self._any_group(name), 'mode'):
            return self._read(name, 'mode')
        return MODE_SHAREABLE

    def group_schemata(self, name):
        """The parsed schemata of any group (ours or not); {} if none."""
        if not self._isfile(self._any_group(name), 'schemata'):
            return {}
        return parse_schemata(self._read(name, 'schemata'))

    def group_path(self, name):
        return os.path.join(self.root, check_group_name(name))

    def groups(self):
        """Every resource group directory (ours and foreign)."""
        return sorted(n for n in self._subdirs() if n not in _NOT_GROUPS)

    def owned_groups(self):
        """The agent's groups: ``resq-`` ones but the profiler's."""
        return [g for g in self.groups() if GROUP_RE.fullmatch(g)
                and not g.startswith(PROFILER_PREFIX)]

    def read_schemata(self, name):
        return parse_schemata(self._read(check_group_name(name),
                                         'schemata'))

    def read_cpus(self, name):
        return self._read(check_group_name(name), 'cpus_list')

    def read_tasks(self, name):
        text = self._read(check_group_name(name), 'tasks')
        return [int(t) for t in text.split()]

    def has_monitoring(self):
        """Whether the kernel offers L3 monitoring (``info/L3_MON``)."""
        return self._isfile(*L3_MON_INFO)

    def num_rmids(self):
        """RMIDs of the platform, or None without L3 monitoring."""
        if not self.has_monitoring():
            return None
        return int(self._read(*L3_MON_INFO))

    def mon_groups(self, name):
        """Names of the monitoring groups of control group ``name``."""
        return sorted(self._subdirs(check_group_name(name), MON_GROUPS))

    def mon_groups_of(self, name):
        """Monitoring groups of any group, ours or not (to count RMIDs)."""
        return self._subdirs(name, MON_GROUPS)

    def mon_groups_of_root(self):
        """Monitoring groups of the default group."""
        return self._subdirs(MON_GROUPS)

    def read_mon_cpus(self, name, mon):
        return parse_cpu_list(self._read(check_group_name(name), MON_GROUPS,
                                         check_group_name(mon), 'cpus_list'))

    def validate_masks(self, masks):
        """Check a ``{domain: mask}`` map against the platform's rules."""
        info = self.info()
        known = set(self.domains())
        for dom, mask in masks.items():
            if dom not in known:
                raise exception.ResctrlError(
                    reason='cache domain %s does not exist under %s; known '
                    'domains: %s' % (dom, self.root, sorted(known)))
            try:
                cbm.validate(mask, info['cbm_mask'], info['min_cbm_bits'])
            except cbm.InvalidMask as exc:
                raise exception.ResctrlError(
                    reason='cache domain %s: %s' % (dom, exc))
        return info
