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
"""How an L3 cache domain appears in Placement. Pure.

One child resource provider per cache domain, under the compute node's
provider, owned by the resq agent:

* name ``<hypervisor hostname>_llc_<domain id>``, UUID ``uuid5(<compute
  node provider UUID>, "resq-llc-<domain id>")``: deterministic, so the agent
  finds its providers again after a restart and the scheduler filter can
  tell which domain serves a request group from the UUID alone;
* ``CUSTOM_LLC_WAY``: the domain's ways, with the I/O (DDIO) ways and the
  default group's minimum reserved; ``min_unit`` is the platform's
  ``min_cbm_bits``;
* ``CUSTOM_LLC_CLOS``: classes of service, one reserved for the default
  group, so Placement never hands out more partitions than CAT can enforce.
  A class of service is host-wide but has a mask per domain, and with the
  resctrl backend one class serves one instance in each domain, so every
  domain offers ``num_closids - 1`` (less the on-demand lease's classes).
  With libpqos a class serves one instance, so a host with ``n`` domains
  offers each ``(num_closids - 1) // n`` of them (``domains_on_host``);
* traits ``CUSTOM_CAT_L3`` (CAT-capable), ``CUSTOM_RESQ_L3_<id>`` and the
  platform traits ``CUSTOM_RESQ_LLC_WAYS_<n>`` and
  ``CUSTOM_RESQ_LLC_WAY_KIB_<k>`` (the domain's way count and way size).
  ``CUSTOM_RESQ_CORE``: the domain's dedicated cores for reserved SLOs
  (those of its NUMA cell in Nova's ``cpu_dedicated_set``, less the
  on-demand lease's ``ondemand_cores``); flavors made by SLO admission ask
  for one per vCPU in their LLC group, so reserved instances never take a
  lease's cores and a socket's cores are accounted per cache domain;
  ``CUSTOM_RESQ_CORES_<n>`` says how many dedicated cores the domain's
  NUMA cell has (Placement keeps PCPU on the compute node, not per cell;
  the optimizer reads the cell's size from this trait).
  ``CUSTOM_RESQ_NUMA_<cell>`` names each NUMA cell whose cores all share
  the domain's cache, as the agent found them in sysfs: the filter maps
  the cell Nova pins to onto the domain through these traits
  (:mod:`resq_nova.nova.scheduler.cells`), so sub-NUMA clustering (two cells,
  one cache) and caches whose ids are not the cells' ids are handled; a
  cell in no domain (its cores span several caches) gets no ResQ
  instance.
  ``CUSTOM_RESQ_ONDEMAND_WAYS_<n>`` says the domain leases ``n`` ways to
  on-demand NFs (``[resq_agent] ondemand_ways``): they are part of the
  ``CUSTOM_LLC_WAY`` reserved amount, and the lease's classes of service
  are not offered as ``CUSTOM_LLC_CLOS``, so no reserved SLO takes them.
  ``CUSTOM_RESQ_ONDEMAND_CORE`` counts the cores on-demand NFs may hold
  there: an on-demand flavor asks for one per vCPU, so Placement only
  offers domains whose lease has room for one more instance (ResQ §5.1's
  on-demand admission).
  ``CUSTOM_MEM_BW_MIBPS``: the memory bandwidth (MiB/s) of the domain's
  memory instances may share, less the default group's, where the kernel
  offers memory bandwidth allocation and the operator has said how much
  there is (``[resq_agent] memory_bandwidth_mibps``); the trait
  ``CUSTOM_RESQ_MBA_<MODE>`` says how it is enforced
  (:mod:`resq_common.mba`). A flavor asks for it in its LLC request group.
  ``CUSTOM_RESQ_L3_CDP``: the kernel mounted resctrl with code and data
  prioritization; its classes of service are already halved in
  ``info/L3CODE/num_closids``. A flavor with ``resq:code_ways`` requires it.
  Classes of service (``CUSTOM_LLC_CLOS``) stay the ways' count: an MB line
  is written in the same group as the L3 line, so it needs no class of
  its own.
  A profile is only valid on the platform it was measured on; flavors made
  by SLO admission require the profile's platform traits in their LLC
  request group, so Placement only offers cache domains of that shape.

The domain id is the L3 cache id. On Intel Xeons without sub-NUMA
clustering it is also the socket and the NUMA cell; the filter assumes so
only for hosts whose agent publishes no ``CUSTOM_RESQ_NUMA_<cell>`` trait.
"""

import dataclasses
import functools
import uuid

from resq_common import extra_specs

TRAIT_DOMAIN_PREFIX = 'CUSTOM_RESQ_L3_'
TRAIT_WAYS_PREFIX = extra_specs.TRAIT_WAYS_PREFIX
TRAIT_WAY_KIB_PREFIX = extra_specs.TRAIT_WAY_KIB_PREFIX
TRAIT_CORES_PREFIX = 'CUSTOM_RESQ_CORES_'
TRAIT_NUMA_PREFIX = 'CUSTOM_RESQ_NUMA_'
# Memory (MB) of the domain's NUMA cell instances may use, in small pages
# and in huge pages: the optimizer checks a move against them.
TRAIT_MEMORY_PREFIX = 'CUSTOM_RESQ_MEMORY_MB_'
TRAIT_HUGEPAGES_PREFIX = 'CUSTOM_RESQ_HUGEPAGES_MB_'
TRAIT_ONDEMAND_PREFIX = extra_specs.TRAIT_ONDEMAND_PREFIX
# How the domain enforces memory bandwidth: CUSTOM_RESQ_MBA_MBPS (the
# kernel's software controller), _PERCENT or _AMD (resq_common.mba).
TRAIT_MBA_PREFIX = 'CUSTOM_RESQ_MBA_'
MAX_DOMAINS = 64


@functools.lru_cache(maxsize=65536)
def provider_uuid(compute_rp_uuid, domain_id):
    return str(uuid.uuid5(uuid.UUID(str(compute_rp_uuid)),
                          'resq-llc-%d' % domain_id))


def provider_name(hypervisor_hostname, domain_id):
    return '%s_llc_%d' % (hypervisor_hostname, domain_id)


@functools.lru_cache(maxsize=65536)
def domain_map(compute_rp_uuid):
    """``{provider uuid: domain id}`` of a compute node's cache domains."""
    return {provider_uuid(compute_rp_uuid, d): d for d in range(MAX_DOMAINS)}


def platform_traits(ways, way_size_bytes):
    """Traits naming a cache shape: way count and way size in KiB.

    A profile measured with ``ways`` ways of ``way_size_bytes`` is valid on
    domains that carry both traits.
    """
    ways, way_size_bytes = int(ways), int(way_size_bytes)
    if ways <= 0 or way_size_bytes <= 0:
        raise ValueError('a cache shape needs a positive way count and way '
                         'size; got %r ways of %r bytes'
                         % (ways, way_size_bytes))
    kib = -(-way_size_bytes // 1024)
    return ['%s%d' % (TRAIT_WAYS_PREFIX, ways),
            '%s%d' % (TRAIT_WAY_KIB_PREFIX, kib)]


def domain_of(compute_rp_uuid, rp_uuid):
    """The domain id whose provider has ``rp_uuid``, or ``None``."""
    return domain_map(compute_rp_uuid).get(rp_uuid)


@dataclasses.dataclass(frozen=True)
class CacheDomain:
    """What the agent discovered about one L3 cache domain."""

    domain_id: int
    ways: int
    min_cbm_bits: int = 1
    num_closids: int = 16
    io_ways: int = 2
    default_group_ways: int = 0
    cat: bool = True
    way_size_bytes: int = 0
    domains_on_host: int = 1
    # Dedicated (pinnable) cores of the domain's NUMA cell; 0 = unknown.
    cores: int = 0
    # Ways the agent's layout can give instances; None: all but the I/O
    # and default-group ways.
    instance_ways: int = None
    # NUMA cells whose cores all share this cache (from discovery).
    numa_cells: tuple = ()
    # The on-demand lease: its ways (inside the reserved amount) and its
    # classes of service (host-wide).
    lease_ways: int = 0
    lease_classes: int = 0
    # Cores on-demand NFs may hold in the domain; 0: the domain's cores
    # (or, unknown, one per leased way).
    lease_cores: int = 0
    # Memory of the domain's NUMA cell for instances (MB), in small and in
    # huge pages; None: not known (the optimizer then keeps instances that
    # need huge pages where they are).
    memory_mb: int = None
    hugepages_mb: int = None
    # Memory bandwidth (MiB/s) of the domain's memory that instances may
    # share, the part of it kept for the default group, and how the kernel
    # enforces it (resq_common.mba.MODES; '' without MBA).
    mem_bw_mibps: int = 0
    mem_bw_reserved_mibps: int = 0
    mba_mode: str = ''
    # The kernel mounted resctrl with cdp: code and data masks apart.
    cdp: bool = False

    def inventory(self):
        """Placement inventories of the domain's provider."""
        reserved = min(self.io_ways + self.default_group_ways, self.ways)
        if self.instance_ways is not None:
            reserved = self.ways - min(max(self.instance_ways, 0), self.ways)
        inv = {extra_specs.RC_LLC_WAY: {
            'total': self.ways, 'reserved': reserved,
            'min_unit': max(self.min_cbm_bits, 1),
            'max_unit': max(self.ways - reserved, 1), 'step_size': 1,
            'allocation_ratio': 1.0}}
        usable_clos = (self.num_closids - 1 - self.lease_classes) // max(
            self.domains_on_host, 1)
        if usable_clos >= 1:
            inv[extra_specs.RC_LLC_CLOS] = {
                'total': usable_clos + 1, 'reserved': 1, 'min_unit': 1,
                'max_unit': 1, 'step_size': 1, 'allocation_ratio': 1.0}
        if self.cores:
            # Reserved SLOs' cores: the domain's, less the lease's when
            # the lease keeps cores of its own (lease_cores).
            keep = self.lease_cores if self.lease_ways > 0 else 0
            res_cores = max(self.cores - keep, 0)
            if res_cores:
                inv[extra_specs.RC_RESQ_CORE] = {
                    'total': res_cores, 'reserved': 0, 'min_unit': 1,
                    'max_unit': res_cores, 'step_size': 1,
                    'allocation_ratio': 1.0}
        if self.cat and self.lease_ways > 0:
            cores = self.lease_cores or self.cores or self.lease_ways
            inv[extra_specs.RC_ONDEMAND_CORE] = {
                'total': cores, 'reserved': 0, 'min_unit': 1,
                'max_unit': cores, 'step_size': 1,
                'allocation_ratio': 1.0}
        if self.mba_mode and self.mem_bw_mibps > self.mem_bw_reserved_mibps:
            inv[extra_specs.RC_MEM_BW] = {
                'total': self.mem_bw_mibps,
                'reserved': self.mem_bw_reserved_mibps, 'min_unit': 1,
                'max_unit': self.mem_bw_mibps - self.mem_bw_reserved_mibps,
                'step_size': 1, 'allocation_ratio': 1.0}
        if not self.cat or reserved >= self.ways or not usable_clos:
            return {}
        return inv

    def traits(self):
        traits = ['%s%d' % (TRAIT_DOMAIN_PREFIX, self.domain_id)]
        if self.cat:
            traits.append(extra_specs.TRAIT_CAT_L3)
        if self.way_size_bytes:
            traits.extend(platform_traits(self.ways, self.way_size_bytes))
        if self.cores:
            traits.append('%s%d' % (TRAIT_CORES_PREFIX, self.cores))
        traits.extend('%s%d' % (TRAIT_NUMA_PREFIX, c)
                      for c in self.numa_cells)
        if self.cat and self.lease_ways > 0:
            traits.append('%s%d' % (TRAIT_ONDEMAND_PREFIX, self.lease_ways))
        if self.memory_mb is not None:
            traits.append('%s%d' % (TRAIT_MEMORY_PREFIX, self.memory_mb))
        if self.hugepages_mb is not None:
            traits.append('%s%d' % (TRAIT_HUGEPAGES_PREFIX,
                                    self.hugepages_mb))
        if self.mba_mode:
            traits.append(TRAIT_MBA_PREFIX + self.mba_mode.upper())
        if self.cat and self.cdp:
            traits.append(extra_specs.TRAIT_CDP)
        return sorted(traits)
