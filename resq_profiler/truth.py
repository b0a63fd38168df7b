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
"""The simulated testbed: a ground truth apart from the profiling model.

The cluster evaluation judges placements with this model, and the profiler
measures profiles from it (``[resq_profiler] model_truth = testbed``), with
measurement noise. Nothing of it reaches a scheduler except through those
measurements, so a scheduler that works from profiles earns its results.

It differs from :mod:`resq_profiler.nfmodel` where that one is a planner's
simplification:

* **Footprint, not an oracle.** Each NF references its working set ``M``
  with Durner et al.'s density ``r(m) ~ (alpha + 1)(1 - m/M)**alpha``
  (seed 002). Its *footprint* ``fp(n)``, the distinct bytes touched in a
  window of ``n`` references, and its miss ratio ``mr(c) = fp'(fp^-1(c))``
  follow the footprint theory NetContainer builds on (seed 003): an LRU-like
  cache of ``c`` bytes holds what the last ``fp^-1(c)`` references touched,
  and the next reference misses when it goes to a byte outside that window.
* **Sharing by footprint.** NFs that share cache ways share one window of
  time: each holds the footprint of the references it issued in the last
  ``t`` seconds, ``t`` being the window whose footprints together fill the
  cache (the "natural partition" of footprint composition). A fast NF with
  a wide, flat access pattern takes more than a slow one with a hot core.
* **Memory bandwidth.** Misses, leaked packet data and streaming
  competitors load the memory controller; the miss penalty then grows as
  ResQ Figure 3 measured.
* **Leaky DMA.** When the in-flight buffers of the NFs exceed DDIO's ways
  (unsized queues: 2 x 2048 descriptors per NF), the excess is written to
  DRAM, crosses the bus again when the NIC sends it and costs the NF a
  miss for each line of metadata and headers it reads; buffers in DDIO's ways
  also take that space from NFs whose partition includes them.
* **Latency under contention.** The p95 sojourn of a queue whose load is
  the offered rate over the *contended* capacity: an NF slowed by its
  neighbours runs closer to saturation at the same offered rate.

Calibration keeps the catalog's facts (ResQ Table 1's solo throughput,
hit rate and references per packet; the one-way miss ratio and throughput):
the skew ``alpha`` is solved so that the footprint miss ratio with one way
is the catalog's. See ``doc/source/contributor/nf-model.rst``.
"""

import dataclasses
import functools
import math
import random

import numpy

from resq_profiler import nfmodel

CACHE_LINE = nfmodel.CACHE_LINE
# A leaked packet crosses the memory bus twice, the NIC's write to DRAM and
# its read to transmit; the core reads only the buffer's metadata and the
# headers, which miss.
LEAK_TRANSFERS = 2
HEADER_LINES = 2
# References per cache line over which footprint tables are tabulated.
_LOG_K = numpy.linspace(math.log(1e-5), math.log(1e7), 721)
_NODES, _WEIGHTS = numpy.polynomial.legendre.leggauss(160)
_U = 0.5 * (_NODES + 1.0)
_W = 0.5 * _WEIGHTS


@functools.lru_cache(maxsize=256)
def _tables(alpha):
    """``(fpn, mr)`` over ``_LOG_K`` for skew ``alpha``.

    ``fpn``: the fraction of the working set a window of ``k`` references
    per line touches; ``mr``: the chance that the next reference goes to a
    line outside the window (the capacity miss ratio of a cache holding
    exactly that window).
    """
    k = numpy.exp(_LOG_K)[:, None]
    dens = (alpha + 1.0) * (1.0 - _U) ** alpha
    ek = numpy.exp(-k * dens[None, :])
    fpn = ((1.0 - ek) * _W).sum(axis=1)
    mr = ((dens * ek) * _W).sum(axis=1)
    # Make both strictly monotone for interpolation.
    fpn = numpy.maximum.accumulate(fpn)
    return fpn, mr


def capacity_miss(alpha, fraction):
    """Capacity miss ratio with a cache of ``fraction`` of the working set."""
    if fraction >= 1.0:
        return 0.0
    if fraction <= 0.0:
        return 1.0
    fpn, mr = _tables(alpha)
    log_k = numpy.interp(fraction, fpn, _LOG_K)
    return float(numpy.interp(log_k, _LOG_K, mr))


def footprint_fraction(alpha, refs_per_line):
    """Fraction of the working set a window of references touches.

    :param refs_per_line: references in the window per line of the
        working set.
    """
    if refs_per_line <= 0:
        return 0.0
    fpn, _ = _tables(alpha)
    return float(numpy.interp(math.log(refs_per_line), _LOG_K, fpn))


@functools.lru_cache(maxsize=256)
def solve_alpha(target_miss, fraction):
    """The skew whose capacity miss ratio at ``fraction`` is ``target``."""
    lo, hi = 0.0, 40.0
    if capacity_miss(lo, fraction) <= target_miss:
        return lo
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if capacity_miss(mid, fraction) > target_miss:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


@dataclasses.dataclass(frozen=True)
class Synthetic:
    """A synthetic competitor of tunable cache pressure (Dobrescu et al.).

    It issues ``refs_per_s`` LLC references a second, uniformly over a
    buffer of ``buffer_bytes`` (``alpha`` 0), whatever the cache does.
    With ``packet_mpps`` it also does packet I/O: the NIC writes
    ``packet_mpps`` million packets of ``packet_bytes`` a second into
    ``dma_buffers`` DMA buffers through DDIO, so its buffers take DDIO's
    ways like an NF's do and, when all of them overflow DDIO, its leaked
    packets load the memory bus (the default does no I/O).
    """

    refs_per_s: float
    buffer_bytes: float = 64 * nfmodel.MIB
    name: str = 'synthetic'
    packet_mpps: float = 0.0
    packet_bytes: int = 64
    dma_buffers: int = 0

    @property
    def does_io(self):
        return self.packet_mpps > 0 and self.dma_buffers > 0


class TruthNF:
    """The testbed's behaviour of one catalog NF under one traffic."""

    def __init__(self, spec, traffic=nfmodel.Traffic()):
        self.spec = spec
        self.traffic = traffic
        ref = nfmodel.Platform()
        self.ws = spec.working_set_bytes(traffic.flows)
        self.m_inf = spec.compulsory_miss_ratio
        ws100k = spec.working_set_bytes(100000)
        one_way = ref.way_size_bytes
        target = (spec.miss_ratio_one_way - self.m_inf) / (1.0 - self.m_inf)
        self.alpha = solve_alpha(round(max(target, 0.0), 6),
                                 round(min(one_way / ws100k, 1.0), 6))
        hz = ref.cpu_ghz * 1e9
        full = hz / (spec.mpps * 1e6)
        refs = spec.l3_refs_per_packet
        miss_full = self._miss(ref.llc_bytes, ws100k)
        miss_one = self._miss(one_way, ws100k)
        extra = full * (1.0 / spec.relative_throughput_one_way - 1.0)
        self.penalty = (extra / (refs * (miss_one - miss_full))
                        if miss_one > miss_full else 0.0)
        self.base_cycles = full - refs * miss_full * self.penalty
        lines = math.ceil(traffic.packet_bytes / CACHE_LINE)
        self.io_cycles = 4.0 * (lines - 1)
        self.solo_mpps = hz / self.cycles(ref.llc_bytes) / 1e6

    def _miss(self, cache_bytes, ws=None):
        ws = ws or self.ws
        return self.m_inf + (1.0 - self.m_inf) * capacity_miss(
            self.alpha, cache_bytes / ws)

    def miss_ratio(self, cache_bytes):
        return self._miss(cache_bytes)

    def cycles(self, cache_bytes, mem_speed=1.0, leaked_lines=0.0):
        misses = self.spec.l3_refs_per_packet * self.miss_ratio(cache_bytes)
        return self.base_cycles + self.io_cycles + (
            misses + leaked_lines) * self.penalty / mem_speed

    def latency_p95_us(self, offered_mpps, capacity_mpps):
        """p95 latency offered ``offered_mpps`` at ``capacity_mpps``.

        The load that counts is the offered load over the *current*
        capacity, which contention lowers; the queue's time scale is the
        solo one: ResQ §5.2 measured latency-against-load curves that
        barely move with the LLC allocation (packets are served in
        batches from a ring whose depth sets the waiting time). Past
        saturation the ring stays full and latency grows with overload.
        """
        rho = max(offered_mpps, 0.0) / capacity_mpps
        queue_us = math.log(20.0) / self.solo_mpps
        if rho <= 1.0:
            return self.spec.base_latency_us + queue_us / (1.0 - 0.95 * rho)
        return (self.spec.base_latency_us + queue_us / 0.05) * rho


# What one instance really achieves: the same record as the planning
# model's.
Outcome = nfmodel.Outcome


def _share(members, cap_bytes):
    """Footprint composition: bytes each of ``members`` holds.

    :param members: ``(working set bytes, alpha, refs per second)``.
    """
    total_ws = sum(m[0] for m in members)
    if total_ws <= cap_bytes:
        return [m[0] for m in members]
    if cap_bytes <= 0:
        return [0.0] * len(members)
    # The occupancy of every member over a grid of window lengths, then the
    # window whose footprints add up to the cache.
    log_t = numpy.linspace(math.log(1e-9), math.log(1e3), 601)
    occ = numpy.zeros((len(members), log_t.size))
    for i, (ws, alpha, rate) in enumerate(members):
        if rate <= 0:
            continue
        fpn, _ = _tables(alpha)
        log_k = log_t + math.log(rate * CACHE_LINE / ws)
        occ[i] = ws * numpy.interp(log_k, _LOG_K, fpn)
    total = occ.sum(axis=0)
    j = int(numpy.searchsorted(total, cap_bytes))
    if j <= 0:
        return list(occ[:, 0])
    if j >= log_t.size:
        return list(occ[:, -1])
    f = (cap_bytes - total[j - 1]) / max(total[j] - total[j - 1], 1e-12)
    return list(occ[:, j - 1] + f * (occ[:, j] - occ[:, j - 1]))


@dataclasses.dataclass(frozen=True)
class Counters:
    """What one core's performance counters read over a run, per second.

    The readings SLOMO composes into contentiousness (seed 001): LLC
    references (the cache access rate Dobrescu et al. use alone), LLC misses,
    LLC occupancy (CMT), memory bandwidth (MBM: misses plus packet data DDIO
    leaked to DRAM) and the packet data the NIC writes for the core (DDIO,
    the I/O pressure on the LLC). Synthetic competitors do no packet I/O.
    """

    llc_refs_per_s: float
    llc_misses_per_s: float
    llc_occupancy_bytes: float
    mem_bw_bytes_per_s: float
    io_bytes_per_s: float

    def noisy(self, noise):
        """The same readings through measurement ``noise`` (never < 0)."""
        return Counters(*(max(noise(float(v)), 0.0)
                          for v in dataclasses.astuple(self)))


def simulate_server(instances, platform=nfmodel.Platform(), synthetic=(),
                    iterations=40):
    """Steady state of NF instances (and synthetic competitors) on a server.

    :param instances: :class:`resq_profiler.nfmodel.Instance` objects, one
        per core; their partitions must be equal or disjoint.
    :param synthetic: ``(Synthetic, partition)`` pairs, each on a core of
        its own, competing for the cache and the memory bus.
    :returns: a list of :class:`Outcome`, one per instance.
    """
    if not instances:
        return []
    return run_server(instances, platform, synthetic, iterations)[0]


def run_server(instances, platform=nfmodel.Platform(), synthetic=(),
               iterations=40):
    """:func:`simulate_server` with every core's counter readings.

    Runs with synthetic competitors only are allowed (a competitor's solo
    run, to read its counters).

    :returns: ``(outcomes, nf_counters, synthetic_counters)``: a list of
        :class:`Outcome` and one of :class:`Counters` per instance, and one
        of :class:`Counters` per synthetic competitor.
    """
    if not instances and not synthetic:
        return [], [], []
    key = (tuple(instances), platform, tuple(synthetic), iterations)
    try:
        hash(key)
    except TypeError:
        # A partition given as a plain set: simulated, not remembered.
        steady = _steady_state.__wrapped__
    else:
        steady = _steady_state
    outcomes, nf_counters, syn_counters = steady(*key)
    return list(outcomes), list(nf_counters), list(syn_counters)


# The simulation is a pure function of its (frozen, hashable) inputs, and
# the evaluation asks for the same server many times (each profile point,
# each scheme's placement of the same NFs): an evaluation run repeats
# about nine calls in ten. The results are frozen records, shared.
@functools.lru_cache(maxsize=16384)
def _steady_state(instances, platform, synthetic, iterations):
    server = _Server(instances, platform, synthetic)
    for _ in range(iterations):
        server.iterate()
    outcomes, nf_counters = server.nf_results()
    return (tuple(outcomes), tuple(nf_counters),
            tuple(server.synthetic_counters()))


def _groups(instances, synthetic):
    """``{partition: [('nf' or 'syn', index)]}``; partitions must not overlap.

    :raises ValueError: when two partitions overlap without being equal.
    """
    groups = {}
    for idx, inst in enumerate(instances):
        groups.setdefault(inst.partition, []).append(('nf', idx))
    for idx, (_, part) in enumerate(synthetic):
        groups.setdefault(part, []).append(('syn', idx))
    keys = list(groups)
    for i, a in enumerate(keys):
        for b in keys[i + 1:]:
            if a & b:
                raise ValueError('cache partitions must be equal or disjoint;'
                                 ' %s and %s overlap' % (sorted(a), sorted(b)))
    return groups


def _dma_leak(platform, instances, synthetic=()):
    """``(fraction of packet data leaked to DRAM, bytes held in DDIO)``."""
    ddio = platform.io_ways * platform.way_size_bytes
    footprint = 0.0
    for inst in instances:
        buffers = inst.dma_buffers
        if buffers is None:
            buffers = nfmodel.sized_buffers(platform,
                                            inst.traffic.packet_bytes,
                                            len(instances))
        footprint += buffers * nfmodel.buffer_bytes(inst.traffic.packet_bytes)
    for syn, _ in synthetic:
        if syn.does_io:
            footprint += syn.dma_buffers * nfmodel.buffer_bytes(
                syn.packet_bytes)
    leak = max(0.0, 1.0 - ddio / footprint) if footprint else 0.0
    return leak, min(footprint, ddio)


class _Server:
    """The state :func:`run_server` iterates to its steady state."""

    def __init__(self, instances, platform, synthetic):
        self.instances = instances
        self.platform = platform
        self.synthetic = synthetic
        self.models = [truth_nf(inst.spec, inst.traffic)
                       for inst in instances]
        self.groups = _groups(instances, synthetic)
        self.io_ways = frozenset(range(platform.llc_ways - platform.io_ways,
                                       platform.llc_ways))
        self.leak, self.in_ddio = _dma_leak(platform, instances, synthetic)
        self.hz = platform.cpu_ghz * 1e9
        self.caps = [self.hz / m.cycles(platform.llc_bytes) / 1e6
                     for m in self.models]
        self.rates = [c if i.offered_mpps is None else min(c, i.offered_mpps)
                      for c, i in zip(self.caps, instances)]
        self.occupancy = [0.0] * len(instances)
        self.syn_read = [(0.0, 0.0)] * len(synthetic)
        self.speed, self.util = 1.0, 0.0

    def capacity_of(self, part):
        """Bytes of a partition, less what DDIO's packet buffers hold."""
        # Packet buffers DDIO holds sit in the I/O ways whoever shares them.
        platform = self.platform
        overlap = len(part & self.io_ways)
        return max(len(part) * platform.way_size_bytes
                   - self.in_ddio * overlap / platform.io_ways, 0.0)

    def iterate(self):
        """One round: cache shares, then rates, then memory speed."""
        traffic_bytes = self.share_cache()
        leak = self.leak
        for i, (m, inst) in enumerate(zip(self.models, self.instances)):
            lines = leak * min(HEADER_LINES, nfmodel.buffer_lines(
                inst.traffic.packet_bytes))
            self.caps[i] = self.hz / m.cycles(self.occupancy[i], self.speed,
                                              lines) / 1e6
            offered = inst.offered_mpps
            rate = (self.caps[i] if offered is None
                    else min(offered, self.caps[i]))
            self.rates[i] = 0.5 * self.rates[i] + 0.5 * rate
            traffic_bytes += self.rates[i] * 1e6 * (
                m.spec.l3_refs_per_packet * m.miss_ratio(self.occupancy[i])
                * CACHE_LINE
                + leak * (inst.traffic.packet_bytes * LEAK_TRANSFERS
                          + HEADER_LINES * CACHE_LINE))
        for syn, _ in self.synthetic:
            if syn.does_io:
                traffic_bytes += syn.packet_mpps * 1e6 * leak * (
                    syn.packet_bytes * LEAK_TRANSFERS
                    + HEADER_LINES * CACHE_LINE)
        self.util = traffic_bytes / (self.platform.mem_bw_gbps * 1e9)
        self.speed = 0.5 * self.speed + 0.5 * nfmodel.memory_speed(self.util)

    def share_cache(self):
        """Share every partition by footprint; the synthetic miss bytes/s."""
        syn_bytes = 0.0
        for part, members in self.groups.items():
            rows = []
            for kind, idx in members:
                if kind == 'nf':
                    m = self.models[idx]
                    rows.append((m.ws, m.alpha, self.rates[idx] * 1e6
                                 * m.spec.l3_refs_per_packet
                                 * (1.0 - m.m_inf)))
                else:
                    s = self.synthetic[idx][0]
                    rows.append((s.buffer_bytes, 0.0, s.refs_per_s))
            shares = _share(rows, self.capacity_of(part))
            for (kind, idx), share, row in zip(members, shares, rows):
                if kind == 'nf':
                    self.occupancy[idx] = (0.5 * self.occupancy[idx]
                                           + 0.5 * share)
                else:
                    miss = capacity_miss(0.0, share / row[0])
                    syn_bytes += row[2] * miss * CACHE_LINE
                    self.syn_read[idx] = (float(share), row[2] * miss)
        return syn_bytes

    def nf_results(self):
        """``(outcomes, counters)``, one of each per instance."""
        outcomes = []
        nf_counters = []
        leak, caps, occupancy = self.leak, self.caps, self.occupancy
        for i, (m, inst) in enumerate(zip(self.models, self.instances)):
            offered = (caps[i] if inst.offered_mpps is None
                       else inst.offered_mpps)
            outcomes.append(Outcome(
                throughput_mpps=min(offered, caps[i]),
                capacity_mpps=caps[i],
                latency_p95_us=m.latency_p95_us(offered, caps[i]),
                occupancy_bytes=occupancy[i],
                miss_ratio=m.miss_ratio(occupancy[i]),
                mem_bw_utilisation=self.util))
            pps = outcomes[-1].throughput_mpps * 1e6
            refs = pps * m.spec.l3_refs_per_packet
            leaked = leak * min(HEADER_LINES, nfmodel.buffer_lines(
                inst.traffic.packet_bytes))
            misses = refs * outcomes[-1].miss_ratio + pps * leaked
            nf_counters.append(Counters(
                llc_refs_per_s=refs,
                llc_misses_per_s=misses,
                llc_occupancy_bytes=float(occupancy[i]),
                mem_bw_bytes_per_s=misses * CACHE_LINE + pps * leak
                * inst.traffic.packet_bytes * LEAK_TRANSFERS,
                io_bytes_per_s=pps * inst.traffic.packet_bytes))
        return outcomes, nf_counters

    def synthetic_counters(self):
        """One :class:`Counters` per synthetic competitor."""
        out = []
        for (s, _), (share, misses) in zip(self.synthetic, self.syn_read):
            if not s.does_io:
                out.append(Counters(
                    llc_refs_per_s=s.refs_per_s, llc_misses_per_s=misses,
                    llc_occupancy_bytes=share,
                    mem_bw_bytes_per_s=misses * CACHE_LINE,
                    io_bytes_per_s=0.0))
                continue
            # Packet I/O as an NF's: leaked headers miss, leaked data
            # crosses the bus twice.
            pps = s.packet_mpps * 1e6
            misses += pps * self.leak * min(HEADER_LINES, nfmodel.buffer_lines(
                s.packet_bytes))
            out.append(Counters(
                llc_refs_per_s=s.refs_per_s, llc_misses_per_s=misses,
                llc_occupancy_bytes=share,
                mem_bw_bytes_per_s=misses * CACHE_LINE + pps * self.leak
                * s.packet_bytes * LEAK_TRANSFERS,
                io_bytes_per_s=pps * s.packet_bytes))
        return out


@functools.lru_cache(maxsize=64)
def truth_nf(spec, traffic=nfmodel.Traffic()):
    return TruthNF(spec, traffic)


def solo(spec, ways, traffic=nfmodel.Traffic(), offered_mpps=None,
         platform=nfmodel.Platform()):
    """One instance alone with ``ways`` ways of CAT and sized buffers."""
    inst = nfmodel.Instance(spec, frozenset(range(int(ways))), traffic,
                            offered_mpps, None)
    return simulate_server([inst], platform)[0]


class Noise:
    """Seeded Gaussian measurement noise of ``pct`` percent (relative)."""

    def __init__(self, pct, seed):
        if pct < 0:
            raise ValueError('measurement noise must not be negative, got '
                             '%s%%' % pct)
        self.pct = pct
        self._rng = random.Random(seed)

    def __call__(self, value):
        if not self.pct:
            return value
        return value * (1.0 + self._rng.gauss(0.0, self.pct / 100.0))
