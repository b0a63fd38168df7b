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

import os

from oslo_log import log as logging

from resq_profiler import exception
from resq_profiler import store as store_mod

LOG = logging.getLogger(__name__)
PROFILE_SPEC = 'resq:profile'


class ProfileCosts:

    def __init__(self, directory, cpu_ghz):
        self.store = store_mod.ProfileStore(directory) if directory else None
        self.cpu_ghz = cpu_ghz
        self._cache = {}          # id -> (file stamp, cycles or None)
        self._reported = set()

    def cost(self, instance):
        """Cycles per packet of ``instance`` (virt.Instance), or None."""
        profile_id = instance.extra_specs.get(PROFILE_SPEC)
        if self.store is None or not profile_id:
            return None
        try:
            path = self.store.path(profile_id)
            st = os.stat(path)
        except (exception.ResQException, OSError) as exc:
            self._report(profile_id, instance.uuid,
                         'not in %s (%s)' % (self.store.directory, exc))
            self._cache.pop(profile_id, None)
            return None
        stamp = (st.st_mtime_ns, st.st_size)
        cached = self._cache.get(profile_id)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        try:
            peak = store_mod.load_file(path).peak_mpps
            cycles = self.cpu_ghz * 1000.0 / peak if peak > 0 else None
        except exception.ResQException as exc:
            self._report(profile_id, instance.uuid, exc)
            cycles = None
        self._cache[profile_id] = (stamp, cycles)
        if cycles is not None:
            self._reported.discard(profile_id)
        return cycles

    def _report(self, profile_id, uuid, reason):
        if profile_id in self._reported:
            return
        self._reported.add(profile_id)
        LOG.warning('NFVnice: no cost per packet for instance %s from '
                    'profile %s: %s; it counts as costing its group\'s '
                    'mean', uuid, profile_id, reason)
