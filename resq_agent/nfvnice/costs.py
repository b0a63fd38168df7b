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
"""Per-packet cost of an NF from its ResQ profile.

An instance whose flavor names a profile (``resq:profile``) has a
measured saturation throughput on one core; its cost per packet is the
inverse, ``cpu_ghz x 1000 / peak Mpps`` cycles, at the best throughput the
profile measured (the NF's cost with its working set in the cache). The
profiles are the ones ``resq-profiler`` writes (``[resq_agent]
nfvnice_profile_dir``, the same directory as ``[resq] profile_dir``). A
``cycles_per_packet`` in the chains file wins over the profile.

A profile that is missing or invalid gives no cost (the NF then counts as
costing its group's mean) and is reported once, with the reason.
"""

from oslo_log import log as logging

from resq_profiler import store as store_mod

LOG = logging.getLogger(__name__)
PROFILE_SPEC = 'resq:profile'


class ProfileCosts:

    def __init__(self, directory, cpu_ghz):
        self.cpu_ghz = cpu_ghz
        self.profiles = (store_mod.WatchedProfiles(directory, self._cycles)
                         if directory else None)

    def _cycles(self, prof):
        peak = prof.peak_mpps
        return self.cpu_ghz * 1000.0 / peak if peak > 0 else None

    def cost(self, instance):
        """Cycles per packet of ``instance`` (virt.Instance), or None."""
        profile_id = instance.extra_specs.get(PROFILE_SPEC)
        if self.profiles is None or not profile_id:
            return None
        return self.profiles.get(profile_id, lambda reason: LOG.warning(
            'NFVnice: no cost per packet for instance %s from profile %s: '
            '%s; it counts as costing its group\'s mean', instance.uuid,
            profile_id, reason))
