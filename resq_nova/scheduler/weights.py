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
"""The ResQ weigher: pack ResQ instances, first fit.

For a ResQ request a host weighs the share of its dedicated cores (pCPUs)
that would be pinned after placing the instance, so the fullest host that
still fits wins and the number of active servers stays small (ResQ's
first-fit decreasing packing; admission boots the largest instances
first). Other requests get
the same weight everywhere, which Nova's normalisation turns into no effect
at all. ``[resq] weigher_multiplier`` scales it against Nova's weighers.
"""

from nova.scheduler import weights

from resq_nova import scheduler


class ResQWeigher(weights.BaseHostWeigher):

    def __init__(self):
        super().__init__()
        self.conf = scheduler.conf()

    def weight_multiplier(self, host_state):
        return self.conf.resq.weigher_multiplier

    def _weigh_object(self, host_state, spec_obj):
        request, _ = scheduler.resq_request(spec_obj)
        if request is None:
            return 0.0
        used, total = _dedicated_cores(host_state)
        if not total:
            # No NUMA topology reported: count vCPUs instead.
            used, total = host_state.vcpus_used, host_state.vcpus_total
        if not total:
            return 0.0
        return min((used + max(request.vcpus, 1)) / total, 1.0)


def _dedicated_cores(host_state):
    """``(pinned, dedicated)`` pCPU counts of a host."""
    topology = host_state.numa_topology
    if not topology:
        return 0, 0
    pinned = sum(len(cell.pinned_cpus) for cell in topology.cells)
    total = sum(len(cell.pcpuset) for cell in topology.cells)
    return pinned, total
