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
"""Memory bandwidth allocation (MBA): Placement's unit, resctrl's values.

Placement counts memory bandwidth in one unit on every host, MiB/s
(:data:`resq_common.extra_specs.RC_MEM_BW`, ``CUSTOM_MEM_BW_MIBPS``): a
cache domain's provider offers the bandwidth of its memory that the
operator says instances may share (``[resq_agent]
memory_bandwidth_mibps``; no kernel file gives it), less what the default
group keeps. A flavor asks for MiB/s whatever the host, so the same flavor
means the same on every host, and Placement refuses to over-commit a
domain.

What the kernel takes on the group's ``MB:`` line differs
(Documentation/filesystems/resctrl.rst, "Memory bandwidth Allocation and
monitoring"); :func:`schemata_value` turns MiB/s into it:

``mbps`` (Intel, mounted with ``mba_MBps``: the software controller)
    MiB/s, any u32: the kernel's controller holds the group near it from
    its MBM readings. The value is the request.
``percent`` (Intel without ``mba_MBps``)
    A percentage of each core's peak request rate, from
    ``info/MB/min_bandwidth`` to 100, rounded up by the kernel to a
    multiple of ``info/MB/bandwidth_gran``. The request becomes its share
    of the domain's bandwidth, rounded up to the next step and never below
    the minimum, so a group gets at least what it asked for. The throttle
    applies per core, not per group (a group of two cores at 30 % may use
    up to 30 % of each core's peak): on such hosts a flavor's bandwidth is
    a bound on each of its cores' rate, not a share of the memory
    controller, and the docs say so.
``amd`` (AMD, Hygon; ``info/MB/delay_linear`` is 0)
    Absolute, in multiples of 1/8 GB/s, up to 2048 on the parts there are.
    1/8 GB/s is taken as 125,000,000 bytes/s (119.2 MiB/s); the request is
    rounded up to whole units, so a group gets at least what it asked for
    whether the vendor's GB is 10^9 or 2^30 bytes.

Pure, apart from :func:`read_info`, which reads a resctrl tree.
"""

import dataclasses
import math
import os

MODE_MBPS = 'mbps'
MODE_PERCENT = 'percent'
MODE_AMD = 'amd'
MODES = (MODE_MBPS, MODE_PERCENT, MODE_AMD)
# The most a value may be (what a new group starts at): Intel's percentages,
# AMD's 1/8 GB/s units, the software controller's u32.
INTEL_MAX_PERCENT = 100
AMD_MAX_UNITS = 2048
MBPS_MAX = 2 ** 32 - 1
# One AMD unit, 1/8 GB/s, in MiB/s.
AMD_UNIT_MIBPS = 125_000_000 / 2 ** 20
# The file every group has under mba_MBps on kernels since 6.14.
MBPS_EVENT = 'mba_MBps_event'


class InvalidBandwidth(ValueError):
    """A bandwidth the kernel cannot be given; says which and why."""


@dataclasses.dataclass(frozen=True)
class MbaInfo:
    """What ``info/MB`` and the mount say of a tree's MB values."""

    mode: str
    min_bandwidth: int = 0
    bandwidth_gran: int = 1
    delay_linear: bool = True
    num_closids: int = 0

    @property
    def max_value(self):
        """The most an ``MB:`` value may be: no limit."""
        return {MODE_MBPS: MBPS_MAX, MODE_AMD: AMD_MAX_UNITS}.get(
            self.mode, INTEL_MAX_PERCENT)

    @property
    def trait(self):
        """``CUSTOM_RESQ_MBA_<MODE>``: how a domain enforces bandwidth."""
        return 'CUSTOM_RESQ_MBA_' + self.mode.upper()


def _int_file(path):
    try:
        with open(path, encoding='ascii') as f:
            text = f.read().strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None


def _mounted_mbps(root, mountinfo='/proc/self/mountinfo'):
    """Whether ``root`` is a resctrl mount with the ``mba_MBps`` option."""
    try:
        with open(mountinfo, encoding='utf-8', errors='replace') as f:
            lines = f.read().splitlines()
    except OSError:
        return False
    root = os.path.realpath(root)
    for line in lines:
        fields = line.split()
        if ' - ' not in line or len(fields) < 6:
            continue
        _, _, rest = line.partition(' - ')
        fstype, _, opts = (rest.split() + ['', '', ''])[:3]
        if fstype == 'resctrl' and fields[4] == root and \
                'mba_MBps' in opts.split(','):
            return True
    return False


def read_info(root, vendor='', mountinfo='/proc/self/mountinfo'):
    """The :class:`MbaInfo` of the resctrl tree at ``root``, or None.

    None when the tree has no ``info/MB``. The software controller is on
    when the default group has ``mba_MBps_event`` (kernels since 6.14) or
    the mount has ``mba_MBps``.
    """
    info = os.path.join(root, 'info', 'MB')
    if not os.path.isdir(info):
        return None
    delay_linear = _int_file(os.path.join(info, 'delay_linear'))
    amd = vendor in ('amd', 'hygon') or delay_linear == 0
    if amd:
        mode = MODE_AMD
    elif os.path.isfile(os.path.join(root, MBPS_EVENT)) or _mounted_mbps(
            root, mountinfo):
        mode = MODE_MBPS
    else:
        mode = MODE_PERCENT
    return MbaInfo(
        mode=mode,
        min_bandwidth=_int_file(os.path.join(info, 'min_bandwidth')) or 0,
        bandwidth_gran=max(
            _int_file(os.path.join(info, 'bandwidth_gran')) or 1, 1),
        delay_linear=delay_linear != 0,
        num_closids=_int_file(os.path.join(info, 'num_closids')) or 0)


def schemata_value(mibps, info, domain_mibps=None):
    """The ``MB:`` value that gives a group at least ``mibps`` MiB/s.

    :param mibps: the group's bandwidth, MiB/s (an integer >= 1).
    :param info: the tree's :class:`MbaInfo`.
    :param domain_mibps: the domain's bandwidth, MiB/s; needed for
        percentages.
    :raises InvalidBandwidth: naming what is wrong and what would fix it.
    """
    if isinstance(mibps, bool) or not isinstance(mibps, int) or mibps < 1:
        raise InvalidBandwidth('a group\'s memory bandwidth is a whole '
                               'number of MiB/s of at least 1, got %r'
                               % (mibps,))
    if info.mode == MODE_MBPS:
        if mibps > MBPS_MAX:
            raise InvalidBandwidth('%d MiB/s is more than the kernel takes '
                                   '(%d)' % (mibps, MBPS_MAX))
        return mibps
    if info.mode == MODE_AMD:
        units = math.ceil(mibps / AMD_UNIT_MIBPS)
        return max(min(units, AMD_MAX_UNITS), info.min_bandwidth, 1)
    if not domain_mibps or domain_mibps < 1:
        raise InvalidBandwidth(
            'percentage MBA needs the cache domain\'s memory bandwidth to '
            'turn %d MiB/s into a percentage: set [resq_agent] '
            'memory_bandwidth_mibps' % mibps)
    percent = math.ceil(100 * mibps / domain_mibps)
    gran = max(info.bandwidth_gran, 1)
    percent = -(-percent // gran) * gran
    return max(min(percent, INTEL_MAX_PERCENT), info.min_bandwidth)


def granted_mibps(value, info, domain_mibps=None):
    """What a group with ``MB:`` value ``value`` may use, in MiB/s.

    The inverse of :func:`schemata_value`, for reports (``None`` when a
    percentage has no domain bandwidth to be a share of).
    """
    if info.mode == MODE_MBPS:
        return int(value)
    if info.mode == MODE_AMD:
        return int(value * AMD_UNIT_MIBPS)
    if not domain_mibps:
        return None
    return domain_mibps * int(value) // 100
