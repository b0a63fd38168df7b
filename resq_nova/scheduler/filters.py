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
and that domain is the NUMA cell Nova will pin the instance's dedicated
cores to; it prunes the other candidates, so the candidate the scheduler
claims is a right one. A flavor whose ResQ specs are inconsistent never
passes: the reason goes to the scheduler log.
"""

from nova.scheduler import filters
from nova.virt import hardware
from oslo_log import log as logging

from resq_nova import extra_specs
from resq_nova.placement import cache_domain
from resq_nova import scheduler
from resq_profiler import exception
from resq_profiler import store as store_mod

LOG = logging.getLogger(__name__)


class ResQFilter(filters.BaseHostFilter):
    """Cores and LLC ways of a ResQ instance in one cache domain."""

    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec_obj):
        request, error = scheduler.resq_request(spec_obj)
        if error:
            LOG.info('ResQFilter refuses %s for flavor %s: %s', host_state,
                     spec_obj.flavor.name, error)
            return False
        if request is None or request.slo != extra_specs.RESERVED:
            return True
        self._start_request(spec_obj, request)
        if self._profile_error:
            LOG.info('ResQFilter refuses %s for flavor %s: %s', host_state,
                     spec_obj.flavor.name, self._profile_error)
            return False
        cell = self._pinned_cell(host_state, spec_obj)
        if cell is False:
            LOG.info('ResQFilter: %s cannot pin %d dedicated cores in one '
                     'NUMA cell', host_state, request.vcpus)
            return False
        domains = cache_domain.domain_map(host_state.uuid)

        def serves(candidate):
            for rp in candidate['mappings'].get(request.group_suffix, ()):
                domain = domains.get(rp)
                if domain is not None and (cell is None or domain == cell):
                    return True
            return False

        # The same pruning as CandidateFilterMixin.filter_candidates, minus
        # its per-candidate debug strings, which cost more than the check.
        good = [c for c in host_state.allocation_candidates if serves(c)]
        host_state.allocation_candidates = good
        if not good:
            LOG.info('ResQFilter: no allocation candidate of %s takes %d LLC '
                     'ways from the cache domain of NUMA cell %s, where the '
                     'cores would be pinned', host_state, request.ways, cell)
            return False
        return True

    def __init__(self):
        super().__init__()
        self.conf = scheduler.conf()
        self._fits = {}
        self._fits_for = None
        self._profile_error = None

    def _check_profile(self, request):
        """Why the request's profile is unusable, or None."""
        if not request.profile:
            return None
        store = store_mod.ProfileStore(self.conf.resq.profile_dir)
        try:
            store.get(request.profile)
        except exception.ResQException as exc:
            return str(exc)
        return None

    def _start_request(self, spec_obj, request):
        """Per-request state: checked once, used for every host."""
        owner = (spec_obj.instance_uuid, id(spec_obj))
        if owner != self._fits_for:
            self._fits, self._fits_for = {}, owner
            self._profile_error = self._check_profile(request)

    def _pinned_cell(self, host_state, spec_obj):
        """The NUMA cell Nova will pin to; None if unknown, False if none.

        Runs Nova's own NUMA fit, memoised per request on the state that
        decides it (each cell's free dedicated CPUs, free memory and pages,
        the limits): hosts in the same state get the same answer, so a
        fleet costs one fit per distinct state rather than one per host.
        """
        if not host_state.numa_topology or not spec_obj.numa_topology:
            return None
        limits = host_state.limits.get('numa_topology')
        key = (tuple((c.id, frozenset(c.pcpuset - c.pinned_cpus),
                      c.memory - c.memory_usage,
                      tuple((p.size_kb, p.total, p.used)
                            for p in (c.mempages or ())))
                     for c in host_state.numa_topology.cells),
               None if limits is None else (limits.cpu_allocation_ratio,
                                            limits.ram_allocation_ratio))
        if key not in self._fits:
            # The fit writes CPU pinning into the topology it is given:
            # fit a copy, as NUMATopologyFilter does.
            fitted = hardware.numa_fit_instance_to_host(
                host_state.numa_topology, spec_obj.numa_topology.obj_clone(),
                provider_mapping=None, limits=limits)
            cells = {c.id for c in fitted.cells} if fitted else set()
            self._fits[key] = cells.pop() if len(cells) == 1 else False
        return self._fits[key]
