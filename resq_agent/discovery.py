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
service, ways shared with I/O, CDP, MBA). libvirt's host capabilities are a
third opinion, compared and warned about, never trusted over the kernel.
"""

import dataclasses
import glob
import os
import re
import xml.etree.ElementTree as ET

from oslo_log import log as logging

from resq_agent import layout
from resq_common import cache_domain
from resq_common import cbm
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


@dataclasses.dataclass(frozen=True)
class HostTopology:
    domains: tuple
    resctrl_available: bool
    reason: str = ''
    cdp: bool = False
    mba: bool = False

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
    result = {}
    pattern = os.path.join(sysfs_root, 'devices', 'system', 'cpu',
                           'cpu[0-9]*', 'cache', 'index[0-9]*')
    for index in sorted(glob.glob(pattern)):
        try:
            if _read(os.path.join(index, 'level')) != '3':
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
    ``reason`` and its domains carry ``cat=False`` (no inventory).

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
    reason = None
    try:
        info = tree.info()
        ids = tree.domains()
        foreign = [g for g in tree.groups()
                   if not resctrl.GROUP_RE.fullmatch(g)
                   or g.startswith(resctrl.PROFILER_PREFIX)]
    except (exception.ResctrlError, OSError, ValueError) as exc:
        reason = str(getattr(exc, 'message', exc))
    if reason is not None:
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
    mba = os.path.isdir(os.path.join(tree.root, 'info', 'MB'))
    ways = cbm.bits(info['cbm_mask'])
    # Every resource group holds a class of service, ours or not (libvirt's
    # cachetune groups, other tools'): the others are not ours to give.
    num_closids = max(info['num_closids'] - len(foreign), 0)
    if foreign:
        warn('resctrl groups the agent does not own hold %d of the %d '
             'classes of service: %s; %d remain for the default group and '
             'ResQ instances', len(foreign), info['num_closids'],
             ', '.join(sorted(foreign)), num_closids)
    iom = io_mask(info['cbm_mask'], info['shareable_bits'], ddio_ways)
    doms = []
    for cid in ids:
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
        doms.append(CacheDomainInfo(
            id=cid, cpus=sys_dom['cpus'], ways=ways,
            way_size_bytes=sys_dom['size_bytes'] // ways,
            cbm_mask=info['cbm_mask'], min_cbm_bits=info['min_cbm_bits'],
            num_closids=num_closids, io_ways=cbm.bits(iom),
            shareable_bits=info['shareable_bits'], cdp=info['cdp'],
            mba=mba, size_bytes=sys_dom['size_bytes'], io_mask=iom,
            numa_cells=numa_cells_of(sys_dom['cpus'], numa),
            **_cells_memory(numa_cells_of(sys_dom['cpus'], numa), memory)))
    for cid in sorted(set(sysfs) - set(ids)):
        warn('sysfs has L3 cache %d but resctrl does not; it gets no '
             'inventory', cid)
    return HostTopology(tuple(doms), True, cdp=info['cdp'], mba=mba)


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
                    lease_classes=0, lease_cores=0):
    """The Placement view of a domain (inventory, traits).

    :param dedicated_cpus: the CPUs Nova pins instances to (its
        ``cpu_dedicated_set``); the domain's cores are those of its CPUs in
        the set, all of them when it is not given.

    :param domains_on_host: cache domains of the host; classes of service
        are host-wide, so each domain is offered its share of them.
    :param lease_ways: ways leased to on-demand NFs; reported as reserved.
    :param lease_classes: classes of service of the on-demand lease (host
        wide); not offered to reserved instances.
    :param lease_cores: cores on-demand NFs may hold (0: the domain's).
    """
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
                  if dedicated_cpus else dom.cpus))


def describe(topology, default_group_ways, default_io=False):
    """The JSON document ``resq-agent inspect`` prints."""
    doms = []
    for dom in topology.domains:
        placement = cache_domain_of(dom, default_group_ways,
                                    len(topology.domains),
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
            'inventory': placement.inventory(),
            'traits': placement.traits() if dom.cat else [],
        })
    doc = {'cache_domains': doms,
           'resctrl_available': topology.resctrl_available}
    if topology.reason:
        doc['reason'] = topology.reason
    return doc
