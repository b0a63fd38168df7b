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
"""The ResQ scheduler filter.

Requests without ``resq:`` extra specs pass untouched. For a reserved ResQ
request the filter keeps a host only if one of its Placement allocation
candidates takes the LLC ways from one of the host's cache-domain providers
and that domain's cache is the one shared by the cores of the NUMA cell
Nova will pin the instance to (as the host's agent found it:
:mod:`resq_nova.nova.scheduler.cells`); it prunes the other candidates, so
the candidate the scheduler claims is a right one. A flavor whose ResQ
specs are inconsistent never passes: the reason goes to the scheduler
log.

The filter works from what the flavor carries (its ways, class of
service, the cache shape its profile was measured on as required traits,
``resq:min_ways``; see :func:`resq_common.extra_specs.parse`), so no
scheduler host needs the profile files. As Nova's filters do, a refused
host is logged at DEBUG; a refused request at INFO.

An on-demand request (``resq:slo=on-demand``) asks for
``CUSTOM_RESQ_ONDEMAND_CORE`` from a cache domain with an on-demand lease
instead of ways: the same pruning keeps the candidates whose lease is in
the NUMA cell its cores will be pinned to (ResQ §5.1: on-demand admission
only checks that one instance fits in some host's lease).
"""

from nova.scheduler import filters
from oslo_log import log as logging

from resq_common import cache_domain
from resq_nova.nova import internals
from resq_nova.nova import scheduler
from resq_nova.nova.scheduler import cells as cells_mod

LOG = logging.getLogger(__name__)


class ResQFilter(filters.BaseHostFilter):
    """Cores and LLC ways of a ResQ instance in one cache domain."""

    RUN_ON_REBUILD = False

    def __init__(self):
        super().__init__()
        self.conf = scheduler.conf()
        self.cells = cells_mod.CellMap(scheduler.placement_client,
                                       self.conf.resq.cell_map_refresh_s)

    def filter_all(self, filter_obj_list, spec_obj):
        """Filter the hosts of one request.

        Everything that depends only on the request (flavor parsing and
        its consistency, the rebuild test) is done once here rather than
        per host, and requests without ``resq:`` specs return the host list
        as it came: the filter costs them nothing.
        """
        request, error = scheduler.resq_request(spec_obj)
        if error:
            LOG.info('ResQFilter refuses every host for flavor %s: %s',
                     spec_obj.flavor.name, error)
            return []
        if request is None or request.group_suffix is None:
            return filter_obj_list
        if (not self.RUN_ON_REBUILD
                and internals.request_is_rebuild(spec_obj)):
            return filter_obj_list
        self.cells.refresh_if_due()
        pci_requests = None
        if spec_obj.obj_attr_is_set('pci_requests') and spec_obj.pci_requests:
            pci_requests = spec_obj.pci_requests.requests
        return self._filter(filter_obj_list, spec_obj.numa_topology, request,
                            pci_requests)

    def host_passes(self, host_state, spec_obj):
        return bool(self.filter_all([host_state], spec_obj))

    def _filter(self, hosts, instance_numa, request, pci_requests=None):
        """The hosts that pass, their candidates pruned.

        One flat loop: at a thousand hosts per request, function calls and
        attribute lookups per host are what the filter costs.
        """
        fits = {}
        numa_state = scheduler.numa_state
        cached_state = scheduler.numa_states()
        domain_map = cache_domain.domain_map
        provider_uuid = cache_domain.provider_uuid
        host_cells = self.cells.hosts()
        suffix = request.group_suffix
        passed = []
        for host in hosts:
            topology = host.numa_topology
            # "is None", not truth: a NUMATopology's truth value reads its
            # cells through oslo.versionedobjects.
            if topology is None or instance_numa is None:
                cell = None
            else:
                limits = host.limits.get('numa_topology')
                pci_stats = host.pci_stats
                if pci_requests or (pci_stats is not None
                                    and pci_stats.pools):
                    # Nova's fit places PCI requests next to their devices
                    # and keeps other instances off cells with devices:
                    # hosts with PCI devices get a fit of their own.
                    cell = _pinned_cell(topology, instance_numa, limits,
                                        pci_requests, pci_stats)
                else:
                    entry = cached_state(id(topology))
                    if entry is not None and entry[0]() is topology:
                        key = entry[1].key
                    else:
                        key = numa_state(topology).key
                    if limits is not None:
                        key = (key, limits.cpu_allocation_ratio,
                               limits.ram_allocation_ratio)
                    cell = fits.get(key)
                    if cell is None:
                        cell = fits[key] = _pinned_cell(
                            topology, instance_numa, limits)
            if cell is False:
                LOG.debug('ResQFilter: %s cannot pin %d dedicated cores in '
                          'one NUMA cell', host, request.vcpus)
                continue
            # The same pruning as CandidateFilterMixin.filter_candidates,
            # minus its per-candidate debug strings.
            if cell is None:
                domains = domain_map(host.uuid)
                good = [c for c in host.allocation_candidates
                        if any(rp in domains
                               for rp in c['mappings'].get(suffix, ()))]
            else:
                cells = host_cells.get(host.uuid)
                if cells is None:
                    rp = provider_uuid(host.uuid, cell)
                else:
                    rp = cells.get(cell)
                if rp is None:
                    LOG.debug('ResQFilter: the cores of NUMA cell %s of %s '
                              'share no single cache domain', cell, host)
                    continue
                good = [c for c in host.allocation_candidates
                        if rp in c['mappings'].get(suffix, ())]
            host.allocation_candidates = good
            if good:
                passed.append(host)
            else:
                LOG.debug('ResQFilter: no allocation candidate of %s takes '
                          '%s from the cache domain of NUMA cell %s, '
                          'where the cores would be pinned', host,
                          '%d LLC ways' % request.ways if request.ways
                          else 'on-demand lease cores', cell)
        return passed


def _pinned_cell(topology, instance_numa, limits, pci_requests=None,
                 pci_stats=None):
    """The NUMA cell Nova will pin to, or False if none.

    Nova's own NUMA fit, with what NUMATopologyFilter and the compute claim
    give it: the PCI requests (SR-IOV ports, passthrough) and the host's
    PCI devices, which decide the cell as much as the cores do. Without
    PCI on either side the caller memoises it per request on the state
    that decides it (:func:`resq_nova.nova.scheduler.numa_state` and the
    limits): hosts in the same state get the same answer, so a fleet costs
    one fit per distinct state rather than one per host.
    """
    # The fit writes CPU pinning into the topology it is given: fit a
    # copy, as NUMATopologyFilter does.
    fitted = internals.numa_fit(
        topology, instance_numa.obj_clone(), limits=limits,
        pci_requests=pci_requests, pci_stats=pci_stats)
    cells = {c.id for c in fitted.cells} if fitted else set()
    return cells.pop() if len(cells) == 1 else False
