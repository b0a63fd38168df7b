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
"""The agent's Placement side: its cache-domain providers and allocations.

The agent owns one child provider per cache domain under the compute
node's provider (which Nova creates and names after the hypervisor
hostname); :func:`resq_agent.reporter.report` writes them
idempotently and retries generation conflicts. Instances' LLC allocations
are read back from the same providers: the provider UUID alone tells the
cache domain (:func:`resq_common.cache_domain.domain_of`).
"""

import socket
import typing

from oslo_log import log as logging

from resq_agent import discovery
from resq_agent import l2
from resq_agent import reporter
from resq_common import cache_domain
from resq_common.clients import placement as placement_client
from resq_common import extra_specs

LOG = logging.getLogger(__name__)
# llc_allocation's answer for an instance whose LLC ways Placement holds
# only on another host: a live migration away from here is in flight (Nova
# moved this host's allocation to the migration record).
MOVING_OUT = 'moving-out'


class Allocation(typing.NamedTuple):
    """An instance's LLC allocation on this host, as Placement holds it."""

    domain_id: int
    ways: int
    # CUSTOM_MEM_BW_MIBPS beside the ways on the same provider; 0: none.
    mem_bw_mibps: int = 0


def _allocation(domain_id, resources):
    """The :class:`Allocation` of one provider's resources, or None."""
    ways = resources.get(extra_specs.RC_LLC_WAY)
    if not ways:
        return None
    return Allocation(domain_id, int(ways),
                      int(resources.get(extra_specs.RC_MEM_BW) or 0))


def hypervisor_hostname(conf, hypervisor=None):
    """``[resq_agent] hypervisor_hostname``, libvirt's, or the FQDN."""
    if conf.resq_agent.hypervisor_hostname:
        return conf.resq_agent.hypervisor_hostname
    if hypervisor is not None:
        try:
            return hypervisor.hostname()
        except Exception as exc:
            LOG.warning('Cannot ask libvirt for the host name (%s); using '
                        'the FQDN', exc)
    return socket.getfqdn()


class Inventory:
    """Reports cache domains and reads LLC allocations for one host."""

    def __init__(self, client, hostname, default_group_ways,
                 dedicated_cpus=None, default_io=False, lease_ways=0,
                 lease_classes=0, lease_cores=0, shared_classes=True,
                 mem_bw_mibps=0, default_mem_bw_mibps=0):
        """See :meth:`from_conf`.

        :param shared_classes: a class of service serves one instance in
            each cache domain (the resctrl backend), so every domain is
            offered all of them; else (libpqos, a class per instance) each
            domain gets its share of the host's.
        """
        self.shared_classes = shared_classes
        self.mem_bw_mibps = mem_bw_mibps
        self.default_mem_bw_mibps = default_mem_bw_mibps
        self.client = client
        self.lease_cores = lease_cores
        self.lease_ways = lease_ways
        self.lease_classes = lease_classes
        self.hostname = hostname
        self.default_group_ways = default_group_ways
        self.dedicated_cpus = dedicated_cpus
        self.default_io = default_io
        self._compute_uuid = None
        self._l2_refusal = None
        self._l2_ladder_known = False

    @classmethod
    def from_conf(cls, conf, hostname):
        dedicated = conf.resq_agent.cpu_dedicated_set
        return cls(placement_client.PlacementClient.from_conf(conf),
                   hostname, conf.resq_agent.default_group_ways,
                   discovery.parse_cpu_list(dedicated) if dedicated
                   else None, conf.resq_agent.default_group_io_ways,
                   conf.resq_agent.ondemand_ways,
                   conf.resq_agent.ondemand_classes,
                   conf.resq_agent.ondemand_cores,
                   shared_classes=conf.resq_agent.backend == 'resctrl',
                   mem_bw_mibps=conf.resq_agent.memory_bandwidth_mibps,
                   default_mem_bw_mibps=(
                       conf.resq_agent.default_group_memory_bandwidth_mibps))

    def compute_uuid(self):
        if self._compute_uuid is None:
            self._compute_uuid = self.client.find_provider(
                self.hostname)['uuid']
        return self._compute_uuid

    def cache_domains(self, topology):
        """The Placement view of each domain of ``topology``; no I/O."""
        sharing = 1 if self.shared_classes else len(topology.domains)
        # Each leasing domain's on-demand scheduler may hold lease_classes
        # groups, each a host-wide class of service.
        leased = self.lease_classes * sum(1 for d in topology.domains
                                          if d.cat)
        return [discovery.cache_domain_of(d, self.default_group_ways,
                                          sharing,
                                          self.dedicated_cpus,
                                          self.default_io,
                                          self.lease_ways,
                                          leased,
                                          self.lease_cores,
                                          self.mem_bw_mibps,
                                          self.default_mem_bw_mibps)
                for d in topology.domains]

    def l2_traits(self, topology):
        """The compute node traits of the host's L2 ways per core.

        The ladder of :func:`resq_agent.l2.traits` for the smallest share
        of the L2 domains holding dedicated CPUs; none without L2 CAT, or
        when a domain cannot give its CPUs a slice the kernel takes (said
        once per change in the log). No I/O.
        """
        if not topology.l2_domains:
            return []
        try:
            per_cpu = topology.l2_share(self.dedicated_cpus)
        except l2.L2Error as exc:
            reason = str(exc)
            if reason != self._l2_refusal:
                LOG.warning('The kernel offers L2 cache allocation but this '
                            'host publishes no L2 ways per core: %s', reason)
            self._l2_refusal = reason
            return []
        self._l2_refusal = None
        return l2.traits(per_cpu)

    def report(self, topology):
        """Write the topology's providers; ``{domain id: provider uuid}``.

        :raises resq_common.clients.placement.PlacementError: Placement down
            or the compute node not registered yet (Nova creates it).
        """
        doms = self.cache_domains(topology)
        if topology.l2_domains and not self._l2_ladder_known:
            # Every rung exists in Placement, so a flavor asking for more
            # L2 ways per core than any host offers gets "No valid host",
            # not Placement's 400 for an unknown trait.
            for trait in l2.traits(extra_specs.L2_LADDER_MAX):
                self.client.ensure_trait(trait)
            self._l2_ladder_known = True
        result = reporter.report(self.client, self.hostname, doms,
                                 compute_traits=self.l2_traits(topology))
        LOG.info('Reported %d cache domain(s) of %s to Placement: %s',
                 len(doms), self.hostname, ', '.join(
                     '%d=%s' % (d.domain_id, d.inventory().get(
                         extra_specs.RC_LLC_WAY, {}).get('total', 0))
                     for d in doms) or 'none')
        return result

    def llc_allocations(self, instances, domain_ids):
        """:meth:`llc_allocation` of many instances, in few requests.

        One ``GET /resource_providers/<domain>/allocations`` per cache
        domain of this host answers for every instance holding ways here;
        only the instances whose flavor asks for ways but that hold none
        here are asked about one by one (a live migration away, or none).

        :param instances: :class:`resq_agent.virt.Instance` objects.
        :returns: ``{uuid: Allocation or None or MOVING_OUT}``.
        :raises resq_common.clients.placement.PlacementError: Placement down.
        """
        root = self.compute_uuid()
        here = {}
        for domain_id in sorted(domain_ids):
            rp = cache_domain.provider_uuid(root, domain_id)
            try:
                allocs = self.client.get_provider_allocations(rp)
            except placement_client.ProviderNotFound:
                continue
            for consumer, resources in allocs.items():
                alloc = _allocation(domain_id, resources)
                if alloc:
                    here.setdefault(consumer.lower(), []).append(alloc)
        result = {}
        for inst in instances:
            found = here.get(inst.uuid)
            if found:
                if len(found) > 1:
                    LOG.warning('Instance %s holds LLC ways in %d cache '
                                'domains of this host (%s); using the first',
                                inst.uuid, len(found), found)
                result[inst.uuid] = sorted(found)[0]
            elif inst.llc_ways:
                result[inst.uuid] = self.llc_allocation(inst.uuid)
            else:
                result[inst.uuid] = None
        return result

    def move_llc(self, instance_uuid, from_domain, to_domain):
        """Move an instance's ways, class and bandwidth between domains.

        For an instance whose cores Nova pinned in another cache domain
        than the one Placement gave its ways (a forced host, a race with
        another claim): the allocation follows the cores, in one atomic
        ``PUT /allocations`` that Placement refuses when the domain has no
        room.

        :raises resq_common.clients.placement.Conflict: no room there.
        :raises resq_common.clients.placement.PlacementError: Placement down.
        """
        root = self.compute_uuid()
        self.client.move_resources(
            instance_uuid, cache_domain.provider_uuid(root, from_domain),
            cache_domain.provider_uuid(root, to_domain),
            (extra_specs.RC_LLC_WAY, extra_specs.RC_LLC_CLOS,
             extra_specs.RC_MEM_BW))

    def llc_allocation(self, instance_uuid):
        """Where and how many ways (and MiB/s) the instance holds here.

        :returns: an :class:`Allocation`; None when it holds none anywhere;
            :data:`MOVING_OUT` when it holds ways only on another host.

        :raises resq_common.clients.placement.PlacementError: Placement down.
        """
        allocs = self.client.get_allocations(instance_uuid)
        root = self.compute_uuid()
        found = []
        elsewhere = False
        for rp_uuid, resources in allocs.items():
            if not resources.get(extra_specs.RC_LLC_WAY):
                continue
            domain_id = cache_domain.domain_of(root, rp_uuid)
            if domain_id is None:
                # LLC ways on another host's provider: a migration in
                # flight holds both; the other side is not ours.
                elsewhere = True
                continue
            found.append(_allocation(domain_id, resources))
        if not found and elsewhere:
            return MOVING_OUT
        if len(found) > 1:
            LOG.warning('Instance %s holds LLC ways in %d cache domains of '
                        'this host (%s); using the first', instance_uuid,
                        len(found), found)
        return sorted(found)[0] if found else None
