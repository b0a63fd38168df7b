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

:class:`MeasuredCosts` measures the cost on the host instead: the guest's
CPU time (libvirt, from the domain's cgroup) over the packets OVS
delivered into it, ``cpu seconds x GHz x 1e9 / packets``, taken only over
passes where the NF dropped packets. Then it was busy the whole pass, so
its CPU time is the work its packets cost; at a light load a poll-mode NF
spins on an empty ring and CPU time says nothing about its packets. The
samples are smoothed (exponentially), and a sample of fewer than
``min_packets`` packets is ignored.
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


class MeasuredCosts:
    """Cycles per packet of each NF, from CPU time over packets.

    :param cpu_ghz: the core clock that turns CPU time into cycles.
    :param smoothing: weight of a new sample (1: the last sample only).
    """

    def __init__(self, cpu_ghz, smoothing=0.5, min_packets=100):
        self.cpu_ghz = cpu_ghz
        self.smoothing = smoothing
        self.min_packets = min_packets
        self._last = {}         # uuid -> (cpu ns, delivered packets)
        self._cost = {}

    def update(self, cpu_ns, delivered, busy):
        """Take one pass's readings.

        :param cpu_ns: ``{uuid: cumulative guest CPU time in ns}``.
        :param delivered: ``{uuid: cumulative packets delivered to it}``.
        :param busy: UUIDs that dropped packets this pass.
        """
        for uuid in set(self._last) - set(cpu_ns):
            del self._last[uuid]
            self._cost.pop(uuid, None)
        for uuid, ns in cpu_ns.items():
            packets = delivered.get(uuid)
            prev = self._last.get(uuid)
            if packets is None:
                self._last.pop(uuid, None)
                continue
            self._last[uuid] = (ns, packets)
            if prev is None or uuid not in busy:
                continue
            d_ns, d_pk = ns - prev[0], packets - prev[1]
            if d_ns <= 0 or d_pk < self.min_packets:
                continue
            sample = d_ns * self.cpu_ghz / d_pk
            old = self._cost.get(uuid)
            self._cost[uuid] = sample if old is None else (
                old + self.smoothing * (sample - old))

    def cost(self, uuid):
        return self._cost.get(uuid)

    def costs(self):
        return dict(self._cost)
