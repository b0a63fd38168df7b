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
        self._multiplier = self.conf.resq.weigher_multiplier

    def weight_multiplier(self, host_state):
        # Nova asks once per host, right after weigh_objects; the option
        # is read once per request there.
        return self._multiplier

    def weigh_objects(self, weighed_obj_list, weight_properties):
        """Weights of one request's hosts; zeros for non-ResQ requests."""
        self._multiplier = self.conf.resq.weigher_multiplier
        request, _ = scheduler.resq_request(weight_properties)
        if request is None:
            return [0.0] * len(weighed_obj_list)
        need = max(request.vcpus, 1)
        return [_fullness(w.obj, need) for w in weighed_obj_list]

    def _weigh_object(self, host_state, spec_obj):
        request, _ = scheduler.resq_request(spec_obj)
        if request is None:
            return 0.0
        return _fullness(host_state, max(request.vcpus, 1))


def _fullness(host_state, need):
    """Share of the host's dedicated cores pinned after placing ``need``."""
    topology = host_state.numa_topology
    total = 0
    if topology is not None:
        state = scheduler.numa_state(topology)
        used, total = state.pinned, state.total
    if not total:
        # No NUMA topology reported: count vCPUs instead.
        used, total = host_state.vcpus_used, host_state.vcpus_total
    if not total:
        return 0.0
    return min((used + need) / total, 1.0)
