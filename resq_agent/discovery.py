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
"""Which L3 cache domains this host has and what CAT can do with them.

Two sources, both under configurable roots: the sysfs CPU cache topology
(``devices/system/cpu/cpu*/cache/index*``: which CPUs share which L3, its
size) and resctrl's ``info/`` (way mask, ``min_cbm_bits``, classes of
service, ways shared with I/O, CDP, MBA). Where the kernel also offers L2
CAT (``info/L2``, or ``info/L2CODE`` and ``info/L2DATA`` with ``cdpl2``),
the L2 domains the same way (:class:`L2DomainInfo`). libvirt's host
capabilities are a third opinion, compared and warned about, never
trusted over the kernel.
"""

import dataclasses
import glob
import os
import re
import xml.etree.ElementTree as ET

from oslo_log import log as logging

from resq_agent import l2
from resq_agent import layout
from resq_common import cache_domain
from resq_common import cbm
from resq_common import mba
from resq_common import resctrl
from resq_profiler import exception

LOG = logging.getLogger(__name__)
_UNITS = {'': 1, 'B': 1, 'K': 1024, 'KIB': 1024, 'M': 1024 ** 2,
          'MIB': 1024 ** 2, 'G': 1024 ** 3, 'GIB': 1024 ** 3}


@dataclasses.dataclass(frozen=True)
class CacheDomainInfo:
    """One L3 cache domain as the agent found it."""

    id: int
    cpus: tuple
    ways: int
    way_size_bytes: int
    cbm_mask: int
    min_cbm_bits: int
    num_closids: int
    io_ways: int
    shareable_bits: int
    cdp: bool
    mba: bool
    size_bytes: int = 0
    # The ways treated as I/O (DDIO) ways: shareable_bits, or the
    # configured ddio_ways at the top of the cache when the kernel does
    # not say.
    io_mask: int = 0
    cat: bool = True
    # NUMA cells (kernel node ids, which Nova's libvirt driver uses as
    # cell ids) whose CPUs all share this cache: with sub-NUMA clustering
    # two cells share one L3; a cell split over several L3 caches (AMD's
    # CCXs) belongs to none. Empty when sysfs has no NUMA nodes.
    numa_cells: tuple = ()
    # Memory of those cells in small pages and in huge pages (MB); None
    # when sysfs does not say for every one of them.
    memory_mb: int = None
    hugepages_mb: int = None
    # Whether the kernel takes masks with gaps (info/L3/sparse_masks, or
    # an AMD CPU, which always does); the agent writes contiguous masks
    # either way.
    sparse_masks: bool = False
    # 'intel', 'amd', 'hygon', '' when unknown.
    vendor: str = ''
    # Ways of this domain exclusive to, or pseudo-locked by, groups that
    # are not the agent's: in no mask the agent writes.
    foreign_mask: int = 0
    # The kernel's memory bandwidth allocation (resq_common.mba.MbaInfo),
    # None without info/MB.
    mba_info: object = None


@dataclasses.dataclass(frozen=True)
class L2DomainInfo:
    """One L2 cache domain (cores sharing an L2) as the agent found it."""

    id: int
    cpus: tuple
    # Ways CAT controls (bits of info/L2/cbm_mask) and the cache's
    # associativity and size from sysfs (0 when sysfs does not say).
    ways: int
    cbm_mask: int
    min_cbm_bits: int
    shareable_bits: int
    num_closids: int
    size_bytes: int = 0
    way_size_bytes: int = 0
    associativity: int = 0
    # The contiguous ways the agent divides among the CPUs
    # (resq_agent.l2): cbm_mask less ways shared with other agents
    # (shareable_bits) and ways others' exclusive groups hold.
    usable_mask: int = 0
    cdp: bool = False
    sparse_masks: bool = False

    def l2_domain(self):
        """The :class:`resq_agent.l2.L2Domain` the agent divides."""
        return l2.L2Domain(self.id, tuple(self.cpus), self.usable_mask,
                           self.min_cbm_bits)


@dataclasses.dataclass(frozen=True)
class HostTopology:
    domains: tuple
    resctrl_available: bool
    reason: str = ''
    cdp: bool = False
    mba: bool = False
    vendor: str = ''
    sparse_masks: bool = False
    # The kernel's group limit: the smallest num_closids of all allocation
    # resources (0 without resctrl).
    closid_limit: int = 0
    mba_info: object = None
    # L2 cache domains (L2DomainInfo) where the kernel offers L2 CAT;
    # empty without info/L2 (and then nothing about L2 is reported).
    l2_domains: tuple = ()
    # Mounted with cdpl2: info/L2CODE and info/L2DATA.
    cdpl2: bool = False

    def l2_share(self, dedicated_cpus=None):
        """The L2 ways each dedicated CPU gets (resq_agent.l2.host_share).

        0 without L2 CAT, or when a domain cannot give its CPUs a slice the
        kernel takes (a :class:`resq_agent.l2.L2Error`, which is raised).
        """
        return l2.host_share([d.l2_domain() for d in self.l2_domains],
                             dedicated_cpus)

    def domain(self, domain_id):
        for dom in self.domains:
            if dom.id == domain_id:
                return dom
        return None


# The one CPU-list parser (sysfs, resctrl and libvirt write the same form).
parse_cpu_list = resctrl.parse_cpu_list


def parse_size(text, unit=''):
    """``"30720K"`` or (``"15"``, ``"MiB"``) -> bytes."""
    text = text.strip().upper()
    digits = text.rstrip('KMGIB')
    suffix = text[len(digits):] or unit.upper()
    return int(digits) * _UNITS[suffix]


def _read(path):
    with open(path, encoding='ascii') as f:
        return f.read().strip()


def read_sysfs_l3(sysfs_root):
    """``{cache id: {'cpus', 'size_bytes', 'ways_of_associativity'}}``."""
    return read_sysfs_cache(sysfs_root, 3)


def read_sysfs_l2(sysfs_root):
    """:func:`read_sysfs_l3` of the level-2 caches."""
    return read_sysfs_cache(sysfs_root, 2)


def read_sysfs_cache(sysfs_root, level):
    """``{cache id: {...}}`` of the unified (or data) caches of ``level``.

    Cache ids are unique per level only (the kernel numbers each level's
    caches on its own).
    """
    result = {}
    pattern = os.path.join(sysfs_root, 'devices', 'system', 'cpu',
                           'cpu[0-9]*', 'cache', 'index[0-9]*')
    for index in sorted(glob.glob(pattern)):
        try:
            if _read(os.path.join(index, 'level')) != str(level):
                continue
            if _read(os.path.join(index, 'type')) not in ('Unified', 'Data'):
                continue
            cache_id = int(_read(os.path.join(index, 'id')))
            if cache_id in result:
                continue
            result[cache_id] = {
                'cpus': parse_cpu_list(
                    _read(os.path.join(index, 'shared_cpu_list'))),
                'size_bytes': parse_size(_read(os.path.join(index,
                                                            'size'))),
                'ways_of_associativity': int(_read(os.path.join(
                    index, 'ways_of_associativity'))),
            }
        except (OSError, ValueError, KeyError) as exc:
            LOG.warning('Ignoring unreadable CPU cache description %s: %s',
                        index, exc)
    return result


def io_mask(cbm_mask, shareable_bits, ddio_ways):
    """The ways DMA writes into: ``shareable_bits`` or the top ways."""
    if shareable_bits & cbm_mask:
        return shareable_bits & cbm_mask
    ways = cbm.bits(cbm_mask)
    ddio_ways = min(ddio_ways, ways)
    if not ddio_ways:
        return 0
    return cbm.make(ways - ddio_ways, ddio_ways)


# The x86 vendor number in a CPU's modalias ("cpu:type:x86,ven0002fam...",
# the kernel's X86_VENDOR_* numbers).
MODALIAS_RE = re.compile(r'cpu:type:x86,ven([0-9A-Fa-f]{4})fam')
X86_VENDORS = {0: 'intel', 2: 'amd', 9: 'hygon'}
# Vendors whose caches have no DDIO: DMA writes allocate into no fixed
# ways, so there are no I/O ways to keep instances out of unless the
# kernel reports shareable_bits.
NO_DDIO = ('amd', 'hygon')


def read_cpu_vendor(sysfs_root):
    """``'intel'``, ``'amd'``, ``'hygon'``, ``'other'`` or ``''``.

    From the first CPU's ``devices/system/cpu/cpu<N>/modalias``; ``''``
    when sysfs has none (not x86, or a tree without it).
    """
    pattern = os.path.join(sysfs_root, 'devices', 'system', 'cpu',
                           'cpu[0-9]*', 'modalias')
    for path in sorted(glob.glob(pattern)):
        try:
            m = MODALIAS_RE.match(_read(path))
        except (OSError, UnicodeDecodeError, ValueError):
            continue
        if m:
            return X86_VENDORS.get(int(m.group(1), 16), 'other')
    return ''


# ``0xff00f`` -> ``0xff000``; ``0xf0f`` -> ``0xf``; ``0`` -> ``0``.
largest_run = l2.largest_run


def read_sysfs_numa(sysfs_root):
    """``{NUMA node id: CPUs}`` from ``devices/system/node/node*``."""
    result = {}
    pattern = os.path.join(sysfs_root, 'devices', 'system', 'node',
                           'node[0-9]*')
    for path in sorted(glob.glob(pattern)):
        try:
            node = int(os.path.basename(path)[len('node'):])
            cpus = parse_cpu_list(_read(os.path.join(path, 'cpulist')))
        except (OSError, ValueError) as exc:
            LOG.warning('Ignoring unreadable NUMA node description %s: %s',
                        path, exc)
            continue
        if cpus:
            # Memory-only nodes (CXL, HBM) hold no cores to pin.
            result[node] = cpus
    return result


MEMTOTAL_RE = re.compile(r'Node (\d{1,6}) MemTotal:\s+(\d{1,15}) kB')
HUGEPAGES_RE = re.compile(r'hugepages-(\d{1,10})kB')
MAX_NODE_FILE = 64 * 1024


def read_sysfs_numa_memory(sysfs_root):
    """``{NUMA node: (small-page MB, huge-page MB)}`` from sysfs.

    ``MemTotal`` of ``node<N>/meminfo`` less the node's huge pages (which
    the kernel counts in it), and the huge pages of every size the node
    holds (``hugepages/hugepages-<kB>kB/nr_hugepages``). A node whose
    files cannot be read or parsed is left out.
    """
    result = {}
    pattern = os.path.join(sysfs_root, 'devices', 'system', 'node',
                           'node[0-9]*')
    for path in sorted(glob.glob(pattern)):
        name = os.path.basename(path)[len('node'):]
        if not (name.isascii() and name.isdigit()):
            continue
        node = int(name)
        try:
            with open(os.path.join(path, 'meminfo'), encoding='ascii') as f:
                text = f.read(MAX_NODE_FILE)
            total_kb = None
            for line in text.splitlines():
                m = MEMTOTAL_RE.fullmatch(line.strip())
                if m and int(m.group(1)) == node:
                    total_kb = int(m.group(2))
            if total_kb is None:
                raise ValueError('no MemTotal line for node %d' % node)
            huge_kb = 0
            for sub in sorted(glob.glob(os.path.join(path, 'hugepages',
                                                     'hugepages-*kB'))):
                m = HUGEPAGES_RE.fullmatch(os.path.basename(sub))
                if not m:
                    continue
                count = _read(os.path.join(sub, 'nr_hugepages'))
                if not (count.isascii() and count.isdigit()
                        and len(count) <= 15):
                    raise ValueError('nr_hugepages %r in %s' % (count, sub))
                huge_kb += int(m.group(1)) * int(count)
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            LOG.warning('Ignoring the memory of NUMA node %d (%s): %s',
                        node, path, exc)
            continue
        result[node] = (max(total_kb - huge_kb, 0) // 1024, huge_kb // 1024)
    return result


def _cells_memory(cells, memory):
    """``{'memory_mb', 'hugepages_mb'}`` of ``cells``; empty if unknown."""
    if not cells or any(c not in memory for c in cells):
        return {}
    return {'memory_mb': sum(memory[c][0] for c in cells),
            'hugepages_mb': sum(memory[c][1] for c in cells)}


def numa_cells_of(cpus, numa):
    """The NUMA cells whose CPUs are all in ``cpus``, sorted."""
    cpus = set(cpus)
    return tuple(sorted(n for n, node_cpus in numa.items()
                        if cpus and set(node_cpus) <= cpus))


def discover(resctrl_root, sysfs_root, ddio_ways=2, quiet=False):
    """The host's L3 cache domains.

    Never raises for a host without CAT: the topology then says why in
    ``reason`` and its domains carry ``cat=False`` (no inventory). Every
    kernel rule that limits what ``mkdir`` or a schemata write accepts is
    applied here (see ``doc/source/admin/resctrl-kernel-rules.rst``), so
    Placement is only offered ways and classes of service the kernel takes.

    :param quiet: log at DEBUG only (the agent's rediscovery on every
        reconcile, which logs changes itself).
    """
    warn = LOG.debug if quiet else LOG.warning
    info_log = LOG.debug if quiet else LOG.info
    sysfs = read_sysfs_l3(sysfs_root)
    numa = read_sysfs_numa(sysfs_root)
    memory = read_sysfs_numa_memory(sysfs_root)
    for node, node_cpus in sorted(numa.items()):
        caches = {cid for cid, d in sysfs.items()
                  for c in node_cpus if c in d['cpus']}
        if len(caches) > 1:
            warn('The CPUs of NUMA cell %d share no single L3 cache (they '
                 'are in caches %s): an instance pinned there cannot get '
                 'its cores and ways from one cache domain', node,
                 ', '.join(str(c) for c in sorted(caches)))
    tree = resctrl.Resctrl(resctrl_root)
    try:
        rules = _kernel_rules(tree, sysfs_root, warn, info_log)
    except (exception.ResctrlError, OSError, ValueError) as exc:
        reason = str(getattr(exc, 'message', exc))
        warn('No L3 cache allocation on this host, reporting no LLC '
             'inventory and enforcing nothing: %s', reason)
        doms = tuple(CacheDomainInfo(
            id=cid, cpus=d['cpus'], ways=d['ways_of_associativity'],
            way_size_bytes=d['size_bytes'] // max(
                d['ways_of_associativity'], 1),
            cbm_mask=0, min_cbm_bits=0, num_closids=0, io_ways=0,
            shareable_bits=0, cdp=False, mba=False,
            size_bytes=d['size_bytes'], cat=False,
            numa_cells=numa_cells_of(d['cpus'], numa),
            **_cells_memory(numa_cells_of(d['cpus'], numa), memory))
            for cid, d in sorted(sysfs.items()))
        return HostTopology(doms, False, reason)
    info = rules['info']
    ways = cbm.bits(info['cbm_mask'])
    iom = io_mask(info['cbm_mask'], info['shareable_bits'], ddio_ways)
    if rules['vendor'] in NO_DDIO and not info['shareable_bits']:
        if ddio_ways:
            info_log('%s CPUs have no DDIO and the kernel reports no '
                     'shareable_bits: no I/O ways are kept out of '
                     'instances ([resq_agent] ddio_ways = %d is ignored)',
                     rules['vendor'].upper(), ddio_ways)
        iom = 0
    doms = []
    for cid in rules['ids']:
        sys_dom = sysfs.get(cid)
        if sys_dom is None:
            warn('resctrl has L3 cache domain %d but sysfs (%s) does not '
                 'describe it: its CPUs and way size are unknown', cid,
                 sysfs_root)
            sys_dom = {'cpus': (), 'size_bytes': 0,
                       'ways_of_associativity': ways}
        elif sys_dom['ways_of_associativity'] != ways:
            info_log('L3 cache %d is %d-way associative, CAT controls %d '
                     'ways; a way is 1/%d of the cache', cid,
                     sys_dom['ways_of_associativity'], ways, ways)
        foreign = rules['reserved'].get(cid, 0) & info['cbm_mask']
        usable = _usable_ways(cid, info, foreign, warn)
        doms.append(CacheDomainInfo(
            id=cid, cpus=sys_dom['cpus'], ways=ways,
            way_size_bytes=sys_dom['size_bytes'] // ways,
            cbm_mask=usable, min_cbm_bits=info['min_cbm_bits'],
            num_closids=rules['num_closids'] if usable else 0,
            io_ways=cbm.bits(iom & usable),
            shareable_bits=info['shareable_bits'], cdp=info['cdp'],
            mba=rules['mba'], size_bytes=sys_dom['size_bytes'],
            io_mask=iom & usable, cat=bool(usable),
            numa_cells=numa_cells_of(sys_dom['cpus'], numa),
            sparse_masks=rules['sparse'], vendor=rules['vendor'],
            foreign_mask=foreign, mba_info=rules['mba_info'],
            **_cells_memory(numa_cells_of(sys_dom['cpus'], numa), memory)))
    for cid in sorted(set(sysfs) - set(rules['ids'])):
        warn('sysfs has L3 cache %d but resctrl does not; it gets no '
             'inventory', cid)
    l2_doms, cdpl2 = discover_l2(tree, sysfs_root, warn, info_log,
                                 rules['vendor'])
    return HostTopology(tuple(doms), True, cdp=info['cdp'],
                        mba=rules['mba'], vendor=rules['vendor'],
                        sparse_masks=rules['sparse'],
                        closid_limit=rules['closid_limit'],
                        mba_info=rules['mba_info'],
                        l2_domains=l2_doms, cdpl2=cdpl2)


L2_INFO_DIRS = ('L2', 'L2CODE')


def read_l2_info(resctrl_root):
    """``info/L2`` (or ``info/L2CODE`` with cdpl2), or None without it.

    :returns: ``{'cbm_mask', 'min_cbm_bits', 'num_closids',
        'shareable_bits', 'sparse_masks' (None when the file is absent),
        'cdp'}``.
    :raises OSError, ValueError: unreadable files.
    """
    for name in L2_INFO_DIRS:
        base = os.path.join(resctrl_root, 'info', name)
        if os.path.isdir(base):
            break
    else:
        return None

    def opt(fname, default):
        path = os.path.join(base, fname)
        return _read(path) if os.path.isfile(path) else default

    sparse = opt('sparse_masks', None)
    return {'cbm_mask': cbm.parse(_read(os.path.join(base, 'cbm_mask'))),
            'min_cbm_bits': int(_read(os.path.join(base, 'min_cbm_bits'))),
            'num_closids': int(_read(os.path.join(base, 'num_closids'))),
            'shareable_bits': cbm.parse(opt('shareable_bits', '0')),
            'sparse_masks': None if sparse is None else sparse == '1',
            'cdp': name == 'L2CODE'}


def _foreign_l2_ways(tree):
    """``{L2 domain: ways}`` exclusive to or locked by others' groups."""
    reserved = {}
    for group in tree.groups():
        if resctrl.GROUP_RE.fullmatch(group) and not group.startswith(
                resctrl.PROFILER_PREFIX):
            continue
        if tree.group_mode(group) not in (resctrl.MODE_EXCLUSIVE,
                                          resctrl.MODE_LOCKED):
            continue
        for kind, masks in tree.group_schemata(group).items():
            if kind.startswith('L2'):
                for dom, mask in masks.items():
                    # parse_schemata leaves all but L3 masks as text.
                    reserved[dom] = reserved.get(dom, 0) | cbm.parse(
                        str(mask))
    return reserved


def discover_l2(tree, sysfs_root, warn, info_log, vendor=''):
    """``(L2 domains, cdpl2)``; ``((), False)`` without L2 CAT.

    Never raises: an unreadable ``info/L2`` is logged and taken as none
    (the L3 side goes on as before).
    """
    try:
        info = read_l2_info(tree.root)
        if info is None:
            return (), False
        sch = resctrl.parse_schemata(_read(os.path.join(tree.root,
                                                        'schemata')))
        ids = sorted(sch.get('L2') or sch.get('L2CODE') or ())
        foreign = _foreign_l2_ways(tree)
    except (exception.ResctrlError, OSError, ValueError) as exc:
        warn('Ignoring L2 cache allocation: its resctrl files cannot be '
             'read (%s)', getattr(exc, 'message', exc))
        return (), False
    sysfs = read_sysfs_l2(sysfs_root)
    ways = cbm.bits(info['cbm_mask'])
    sparse = info['sparse_masks']
    if sparse is None:
        sparse = vendor in NO_DDIO
    doms = []
    for cid in ids:
        sys_dom = sysfs.get(cid)
        if sys_dom is None:
            warn('resctrl has L2 cache domain %d but sysfs (%s) does not '
                 'describe it: its CPUs are unknown and it gets no L2 ways '
                 'per core', cid, sysfs_root)
            sys_dom = {'cpus': (), 'size_bytes': 0,
                       'ways_of_associativity': 0}
        held = foreign.get(cid, 0) & info['cbm_mask']
        usable = largest_run(info['cbm_mask'] & ~info['shareable_bits']
                             & ~held)
        if usable != info['cbm_mask']:
            info_log('L2 cache domain %d: the agent divides ways %s of %s '
                     '(shareable_bits %s, others\' exclusive ways %s)', cid,
                     cbm.fmt(usable), cbm.fmt(info['cbm_mask']),
                     cbm.fmt(info['shareable_bits']), cbm.fmt(held))
        doms.append(L2DomainInfo(
            id=cid, cpus=tuple(sys_dom['cpus']), ways=ways,
            cbm_mask=info['cbm_mask'], min_cbm_bits=info['min_cbm_bits'],
            shareable_bits=info['shareable_bits'],
            num_closids=info['num_closids'],
            size_bytes=sys_dom['size_bytes'],
            way_size_bytes=sys_dom['size_bytes'] // ways if ways else 0,
            associativity=sys_dom['ways_of_associativity'],
            usable_mask=usable, cdp=info['cdp'], sparse_masks=sparse))
    for cid in sorted(set(sysfs) - set(ids)):
        warn('sysfs has L2 cache %d but resctrl does not', cid)
    return tuple(doms), info['cdp']


def _usable_ways(cid, info, foreign, warn):
    """The contiguous ways of domain ``cid`` no foreign group holds.

    0 (the domain gets no inventory) when fewer than ``min_cbm_bits``
    remain.
    """
    usable = largest_run(info['cbm_mask'] & ~foreign)
    if foreign:
        warn('L3 cache domain %d: ways %s are exclusive to or pseudo-locked '
             'by resctrl groups the agent does not own; the agent uses '
             'only ways %s (%d of %d)', cid, cbm.fmt(foreign),
             cbm.fmt(usable), cbm.bits(usable), cbm.bits(info['cbm_mask']))
    if cbm.bits(usable) < max(info['min_cbm_bits'], 1):
        warn('L3 cache domain %d has no run of %d adjacent ways outside '
             'the exclusive and pseudo-locked groups of others (%s); it '
             'gets no inventory until they release ways', cid,
             max(info['min_cbm_bits'], 1), cbm.fmt(foreign))
        return 0
    return usable


def _kernel_rules(tree, sysfs_root, warn, info_log):
    """What the kernel lets the agent create and write.

    :returns: ``{'info', 'ids', 'num_closids', 'closid_limit', 'reserved'
        ({domain: ways others hold exclusively}), 'sparse', 'vendor',
        'mba'}``.
    :raises exception.ResctrlError, OSError, ValueError: no usable
        resctrl tree.
    """
    info = tree.info()
    ids = tree.domains()
    modes = {g: tree.group_mode(g) for g in tree.groups()
             if not resctrl.GROUP_RE.fullmatch(g)
             or g.startswith(resctrl.PROFILER_PREFIX)}
    vendor = read_cpu_vendor(sysfs_root)
    if not vendor and info['min_cbm_bits'] == 0:
        # Only AMD lets a mask be empty (min_cbm_bits 0); Intel needs 1
        # or 2 ways.
        vendor = 'amd'
    sparse = tree.sparse_masks()
    if sparse is None:
        # Kernels before the sparse_masks file took masks with gaps on
        # AMD only.
        sparse = vendor in NO_DDIO
    closid_limit, num_closids = _class_budget(tree, info, modes, warn,
                                              info_log)
    return {'info': info, 'ids': ids, 'num_closids': num_closids,
            'closid_limit': closid_limit,
            'reserved': _foreign_ways(tree, ids, modes, warn),
            'sparse': sparse, 'vendor': vendor,
            'mba': os.path.isdir(os.path.join(tree.root, 'info', 'MB')),
            'mba_info': mba.read_info(tree.root, vendor)}


def _class_budget(tree, info, modes, warn, info_log):
    """``(kernel group limit, classes the agent may use)``.

    The kernel makes at most the smallest ``num_closids`` of all
    allocation resources groups, the default group included. A foreign
    group holds one of them unless it is a finished pseudo-locked region
    (the kernel frees its class). Every control group also takes an RMID,
    as does every monitoring group, so RMIDs can be the tighter limit.
    """
    limits = tree.closid_limits() or {'L3': info['num_closids']}
    limit = min(limits.values())
    l3 = info['num_closids']
    if limit < l3:
        warn('The kernel makes at most %d resctrl groups (the default group '
             'included): the smallest num_closids of the allocation '
             'resources %s, although L3 alone has %d', limit, ', '.join(
                 '%s=%d' % kv for kv in sorted(limits.items())), l3)
    holders = sorted(g for g, m in modes.items() if m != resctrl.MODE_LOCKED)
    for g, m in sorted(modes.items()):
        if m == resctrl.MODE_LOCKED:
            info_log('resctrl group %s is a pseudo-locked region: it holds '
                     'ways but no class of service', g)
    num_closids = max(limit - len(holders), 0)
    if holders:
        warn('resctrl groups the agent does not own hold %d of the %d '
             'classes of service: %s; %d remain for the default group and '
             'ResQ instances', len(holders), limit, ', '.join(holders),
             num_closids)
    rmids = tree.rmid_limits()
    if rmids:
        # Groups in pseudo-lock set-up or locked give their RMID back.
        used = len(tree.mon_groups_of_root()) + sum(
            1 + len(tree.mon_groups_of(g)) for g, m in modes.items()
            if m not in (resctrl.MODE_LOCKED, resctrl.MODE_LOCKSETUP))
        room = max(min(rmids.values()) - used, 0)
        if room < num_closids:
            warn('Only %d RMIDs are left for the default group and ResQ\'s '
                 'groups (num_rmids %s, %d held by groups the agent does not '
                 'own): every resctrl group needs one, so %d classes of '
                 'service are offered instead of %d', room, ', '.join(
                     '%s=%d' % kv for kv in sorted(rmids.items())), used,
                 room, num_closids)
            num_closids = room
    return limit, num_closids


def _foreign_ways(tree, ids, modes, warn):
    """``{domain: ways exclusive to or pseudo-locked by other groups}``.

    From ``info/L3/bit_usage`` (``E`` and ``P``) and, for kernels without
    it or regions it does not show, the masks of foreign groups whose
    ``mode`` is ``exclusive`` or ``pseudo-locked``.
    """
    reserved = {}
    try:
        usage = tree.bit_usage() or {}
    except (OSError, ValueError) as exc:
        warn('Ignoring unreadable %s/info/%s/bit_usage (%s); the foreign '
             'groups\' modes say which ways are exclusive', tree.root,
             tree.l3_info_dir, exc)
        usage = {}
    for dom, chars in usage.items():
        reserved[dom] = resctrl.usage_mask(chars, resctrl.NOT_SHAREABLE)
    for group, mode in sorted(modes.items()):
        if mode not in (resctrl.MODE_EXCLUSIVE, resctrl.MODE_LOCKED):
            continue
        for kind, masks in tree.group_schemata(group).items():
            if kind not in resctrl.L3_KINDS:
                continue
            for dom, mask in masks.items():
                reserved[dom] = reserved.get(dom, 0) | mask
    return {d: m for d, m in reserved.items() if m and d in ids}


def discover_from_conf(conf, quiet=False):
    opts = conf.resq_agent
    return discover(opts.resctrl_root, opts.sysfs_root, opts.ddio_ways,
                    quiet)


def cross_check(topology, capabilities_xml):
    """Compare with libvirt's ``<host><cache>`` banks.

    Logs and returns the differences (libvirt may be older or see another
    mount); the kernel's view wins.
    """
    problems = []
    try:
        root = ET.fromstring(capabilities_xml)
    except ET.ParseError as exc:
        problems.append('libvirt capabilities are not XML: %s' % exc)
    else:
        banks = {}
        for bank in root.findall('./host/cache/bank'):
            if bank.get('level') != '3':
                continue
            banks[int(bank.get('id'))] = bank
        if not banks:
            LOG.debug('libvirt reports no L3 cache banks; nothing to '
                      'cross-check')
            return []
        for dom in topology.domains:
            bank = banks.pop(dom.id, None)
            if bank is None:
                problems.append('L3 cache %d is not in libvirt\'s host '
                                'capabilities' % dom.id)
                continue
            size = parse_size(bank.get('size', '0'), bank.get('unit', 'B'))
            if dom.size_bytes and size != dom.size_bytes:
                problems.append('L3 cache %d: sysfs says %d bytes, libvirt '
                                '%d' % (dom.id, dom.size_bytes, size))
            cpus = parse_cpu_list(bank.get('cpus', ''))
            if dom.cpus and cpus != tuple(dom.cpus):
                problems.append('L3 cache %d: sysfs says CPUs %s, libvirt '
                                '%s' % (dom.id, format_cpus(dom.cpus),
                                        format_cpus(cpus)))
        for cid in sorted(banks):
            problems.append('libvirt reports L3 cache %d, which neither '
                            'resctrl nor sysfs has' % cid)
    for problem in problems:
        LOG.warning('Cache topology mismatch: %s; the agent uses the '
                    'kernel\'s view', problem)
    return problems


def format_cpus(cpus):
    """``(0, 1, 2, 5)`` -> ``"0-2,5"``."""
    out, run = [], []
    for cpu in sorted(cpus):
        if run and cpu == run[-1] + 1:
            run.append(cpu)
            continue
        if run:
            out.append(_span(run))
        run = [cpu]
    if run:
        out.append(_span(run))
    return ','.join(out)


def _span(run):
    return str(run[0]) if len(run) == 1 else '%d-%d' % (run[0], run[-1])


def default_group_ways(dom, configured, default_io=False):
    """Non-I/O ways the default group keeps in ``dom``.

    CAT wants at least ``min_cbm_bits`` in the default group's mask, which
    holds the I/O ways too only with ``default_io``.
    """
    io_ways = dom.io_ways if default_io else 0
    return max(configured, dom.min_cbm_bits - io_ways, 0)


def shape_of(dom, configured_default_ways, default_io=False, lease_ways=0):
    """The layout's view of a domain (:class:`layout.DomainShape`).

    :param lease_ways: ways leased to on-demand NFs (``[resq_agent]
        ondemand_ways``), taken out of what instances are offered.
    """
    return layout.DomainShape(
        dom.id, dom.cbm_mask, dom.min_cbm_bits, dom.io_mask,
        default_group_ways(dom, configured_default_ways, default_io),
        default_io, lease_ways)


def cache_domain_of(dom, configured_default_ways, domains_on_host=1,
                    dedicated_cpus=None, default_io=False, lease_ways=0,
                    lease_classes=0, lease_cores=0, mem_bw_mibps=0,
                    default_mem_bw_mibps=0):
    """The Placement view of a domain (inventory, traits).

    :param dedicated_cpus: the CPUs Nova pins instances to (its
        ``cpu_dedicated_set``); the domain's cores are those of its CPUs in
        the set, all of them when it is not given.

    :param domains_on_host: cache domains sharing the host's classes of
        service, each offered its share of them: 1 when a class serves
        one instance in every domain (the resctrl backend), the host's
        domain count when a class serves one instance (libpqos).
    :param lease_ways: ways leased to on-demand NFs; reported as reserved.
    :param lease_classes: classes of service of the on-demand lease (host
        wide); not offered to reserved instances.
    :param lease_cores: cores on-demand NFs may hold (0: the domain's).
    :param mem_bw_mibps: the domain's memory bandwidth instances may share
        (``[resq_agent] memory_bandwidth_mibps``); offered only where the
        kernel has MBA.
    :param default_mem_bw_mibps: the part of it kept for the default
        group, reserved.
    """
    mba_info = dom.mba_info if dom.cat else None
    instance_ways = None
    if dom.cat:
        # Exactly what the layout can hand out, also when the I/O ways sit
        # in the middle of the mask or are split.
        instance_ways = shape_of(dom, configured_default_ways,
                                 default_io, lease_ways).capacity
    return cache_domain.CacheDomain(
        domain_id=dom.id, ways=dom.ways, min_cbm_bits=dom.min_cbm_bits,
        num_closids=dom.num_closids, io_ways=dom.io_ways,
        default_group_ways=default_group_ways(dom, configured_default_ways,
                                              default_io),
        instance_ways=instance_ways,
        cat=dom.cat,
        way_size_bytes=dom.way_size_bytes,
        domains_on_host=domains_on_host,
        numa_cells=dom.numa_cells,
        lease_ways=lease_ways if dom.cat else 0,
        lease_classes=lease_classes if lease_ways and dom.cat else 0,
        lease_cores=lease_cores,
        memory_mb=dom.memory_mb, hugepages_mb=dom.hugepages_mb,
        cores=len(set(dom.cpus) & set(dedicated_cpus)
                  if dedicated_cpus else dom.cpus),
        mem_bw_mibps=mem_bw_mibps if mba_info else 0,
        mem_bw_reserved_mibps=min(default_mem_bw_mibps, mem_bw_mibps)
        if mba_info else 0,
        mba_mode=mba_info.mode if mba_info else '',
        cdp=dom.cdp)


def describe(topology, default_group_ways, default_io=False,
             shared_classes=True):
    """The JSON document ``resq-agent inspect`` prints.

    :param shared_classes: a class of service serves an instance in each
        domain (the resctrl backend), see :func:`cache_domain_of`.
    """
    doms = []
    sharing = 1 if shared_classes else len(topology.domains)
    for dom in topology.domains:
        placement = cache_domain_of(dom, default_group_ways, sharing,
                                    default_io=default_io)
        doms.append({
            'id': dom.id, 'cpus': list(dom.cpus), 'ways': dom.ways,
            'way_size_bytes': dom.way_size_bytes,
            'size_bytes': dom.size_bytes,
            'min_cbm_bits': dom.min_cbm_bits,
            'num_closids': dom.num_closids, 'io_ways': dom.io_ways,
            'io_mask': cbm.fmt(dom.io_mask),
            'cbm_mask': cbm.fmt(dom.cbm_mask),
            'shareable_bits': cbm.fmt(dom.shareable_bits),
            'cdp': dom.cdp, 'mba': dom.mba, 'cat': dom.cat,
            'sparse_masks': dom.sparse_masks, 'vendor': dom.vendor,
            'foreign_mask': cbm.fmt(dom.foreign_mask),
            'inventory': placement.inventory(),
            'traits': placement.traits() if dom.cat else [],
        })
    doc = {'cache_domains': doms,
           'resctrl_available': topology.resctrl_available}
    if topology.resctrl_available:
        doc['closid_limit'] = topology.closid_limit
    if topology.l2_domains:
        doc['l2_domains'] = [_describe_l2(d) for d in topology.l2_domains]
        doc['cdpl2'] = topology.cdpl2
    if topology.reason:
        doc['reason'] = topology.reason
    return doc


def _describe_l2(dom):
    """An L2 domain for ``resq-agent inspect``: what each CPU gets."""
    doc = {'id': dom.id, 'cpus': list(dom.cpus), 'ways': dom.ways,
           'size_bytes': dom.size_bytes,
           'way_size_bytes': dom.way_size_bytes,
           'cbm_mask': cbm.fmt(dom.cbm_mask),
           'usable_mask': cbm.fmt(dom.usable_mask),
           'min_cbm_bits': dom.min_cbm_bits,
           'shareable_bits': cbm.fmt(dom.shareable_bits),
           'num_closids': dom.num_closids, 'cdp': dom.cdp}
    try:
        doc['ways_per_cpu'] = l2.share(dom.l2_domain())
    except l2.L2Error as exc:
        doc['ways_per_cpu'] = 0
        doc['reason'] = str(exc)
    return doc
