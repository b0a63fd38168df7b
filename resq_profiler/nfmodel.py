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
"""Analytic performance model of a network function on a CAT platform.

The planner's model: what the ``model`` profiling driver measures by
default, and what planning tools and tests reason with. The cluster
evaluation judges placements with a testbed model of its own,
:mod:`resq_profiler.truth`, which shares this one's Table 1 calibration but
not its simplifications.

Per packet an NF spends a fixed number of cycles on compute and I/O, plus
one miss penalty for every L3 reference that misses. The miss ratio with
``c`` bytes of cache follows the access-skew model of Durner et al.: with a
working set of ``M`` bytes and skew ``alpha``, the hottest ``c`` bytes
serve ``1 - (1 - c/M)**(alpha + 1)`` of the references, so

    miss(c) = m_inf + (1 - m_inf) * (1 - min(c, M)/M)**(alpha + 1)

where ``m_inf`` is the compulsory miss ratio (Table 1's hit rate with the
whole 45 MB). The miss penalty grows as the memory controller gets busy
(ResQ Figure 3: linear to about 90% load, then super-linear down to 40%
speed). Memory traffic comes from the NFs' misses and, when DMA buffers
are not sized, from packet buffers that no longer fit in DDIO's share of
the LLC and bounce to DRAM (the leaky-DMA effect, ResQ §4.3).

When several NFs share one cache partition, each one's occupancy follows
its insertion pressure (its miss rate): the partition is divided in
proportion to misses per second, no NF holding more than its working set.
The fixed point of occupancy, throughput and memory speed is found by
damped iteration.

Everything here is pure: plain data in, plain data out.
"""

import dataclasses
import math

CACHE_LINE = 64
MIB = 1024 * 1024


def buffer_lines(packet_bytes):
    """Cache lines one packet buffer occupies: the data plus one line.

    ResQ §4.3: 24576 buffers take 3 MB at 64 B (2 lines each) and 37.5 MB
    at 1518 B (25 lines each).
    """
    return math.ceil(packet_bytes / CACHE_LINE) + 1


def buffer_bytes(packet_bytes):
    """LLC bytes DDIO fills for one packet buffer of ``packet_bytes``."""
    return buffer_lines(packet_bytes) * CACHE_LINE


def ddio_buffers(ddio_bytes, packet_bytes):
    """Packet buffers of ``packet_bytes`` that fit in ``ddio_bytes`` of LLC.

    The one leaky-DMA formula (ResQ §4.4): the in-flight buffer bound is
    DDIO's LLC share divided by what one buffer occupies. The agent, the
    profiler's command driver and the simulator all size with it.
    """
    return int(ddio_bytes // buffer_bytes(packet_bytes))


@dataclasses.dataclass(frozen=True)
class Platform:
    """A server's CPU and LLC shape (defaults: ResQ's Xeon E5-2695 v4)."""

    cpu_model: str = 'Intel(R) Xeon(R) CPU E5-2695 v4 @ 2.10GHz'
    cpu_ghz: float = 2.1
    llc_ways: int = 20
    way_size_bytes: int = 45 * MIB // 20
    io_ways: int = 2
    mem_bw_gbps: float = 60.0

    @property
    def llc_bytes(self):
        return self.llc_ways * self.way_size_bytes

    def as_dict(self):
        return {'cpu_model': self.cpu_model, 'llc_ways': self.llc_ways,
                'way_size_bytes': self.way_size_bytes}


@dataclasses.dataclass(frozen=True)
class Traffic:
    """The traffic profile a measurement or a profile is valid for."""

    packet_bytes: int = 64
    flows: int = 100000

    def as_dict(self):
        return {'packet_bytes': self.packet_bytes, 'flows': self.flows}


@dataclasses.dataclass(frozen=True)
class NFSpec:
    """One network function of the catalog and its model parameters.

    The first block is ResQ Table 1 (measured alone, whole 45 MB LLC, 64 B
    packets, 100k flows); the second is this model's calibration.
    """

    name: str
    description: str
    mpps: float
    ipc: float
    l3_refs_per_packet: float
    l3_hit_rate_pct: float
    kilocycles_per_packet: float
    io: str
    sensitivity: str
    # Calibration: working set at 100k flows and how it grows with flows,
    # the miss ratio with one 2.25 MB way, throughput with one way relative
    # to the whole LLC, and the latency floor of the packet pipeline.
    working_set_mb: float
    flow_state_bytes: float
    miss_ratio_one_way: float
    relative_throughput_one_way: float
    base_latency_us: float

    def working_set_bytes(self, flows):
        extra = (flows - 100000) * self.flow_state_bytes
        return max(self.working_set_mb * MIB + extra, 256 * 1024)

    @property
    def compulsory_miss_ratio(self):
        return 1.0 - self.l3_hit_rate_pct / 100.0


@dataclasses.dataclass(frozen=True)
class Instance:
    """One NF instance on a server, as the server simulation sees it.

    :param partition: the cache ways it may fill (a frozenset of way
        indexes); instances with the same set share it, sets must be either
        equal or disjoint.
    :param offered_mpps: load offered to it; ``None`` means saturate.
    :param dma_buffers: packet buffers it may have in flight (RX plus TX
        descriptors); ``None`` means the ResQ-sized budget that fits DDIO.
    """

    spec: NFSpec
    partition: frozenset
    traffic: Traffic = Traffic()
    offered_mpps: float = None
    dma_buffers: int = None


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What one instance achieves on a simulated server."""

    throughput_mpps: float
    capacity_mpps: float
    latency_p95_us: float
    occupancy_bytes: float
    miss_ratio: float
    mem_bw_utilisation: float


class NFModel:
    """The calibrated model of one NF on one platform."""

    # Unsized DMA buffers: queues of 2048 descriptors, as in ResQ §4.3.
    DEFAULT_DESCRIPTORS = 2048
    # A leaked buffer crosses the memory bus several times (RX write-back,
    # re-fetch for processing, re-fetch for TX): ResQ §4.3 "bounce back and
    # forth between LLC and DRAM multiple times". 3.7 reproduces ResQ
    # Table 2: 94-99% memory-bus load and 12-15% loss for MazuNAT and Stats.
    LEAK_BOUNCES = 3.7

    def __init__(self, spec, platform=Platform()):
        self.spec = spec
        self.platform = platform
        ref = Platform()
        self._hz = platform.cpu_ghz * 1e9
        # Calibrate on the reference platform, where Table 1 was measured.
        self._full_cycles = ref.cpu_ghz * 1e9 / (spec.mpps * 1e6)
        m_inf = spec.compulsory_miss_ratio
        ws = spec.working_set_bytes(100000)
        one_way = ref.way_size_bytes
        frac = (spec.miss_ratio_one_way - m_inf) / (1.0 - m_inf)
        if ws <= one_way or frac <= 0:
            self._alpha = 0.0
        else:
            self._alpha = max(math.log(frac) / math.log(1.0 - one_way / ws)
                              - 1.0, 0.0)
        extra = self._full_cycles * (1.0 / spec.relative_throughput_one_way
                                     - 1.0)
        delta = spec.miss_ratio_one_way - m_inf
        refs = spec.l3_refs_per_packet
        self._penalty = extra / (refs * delta) if delta > 0 else 0.0
        self._base_cycles = self._full_cycles - refs * m_inf * self._penalty

    # -- single-instance curves -------------------------------------------
    def miss_ratio(self, cache_bytes, traffic=Traffic()):
        m_inf = self.spec.compulsory_miss_ratio
        ws = self.spec.working_set_bytes(traffic.flows)
        c = min(max(cache_bytes, 0.0), ws)
        return m_inf + (1.0 - m_inf) * (1.0 - c / ws) ** (self._alpha + 1.0)

    def cycles_per_packet(self, cache_bytes, traffic=Traffic(),
                          mem_speed=1.0):
        # Bigger packets cost a little more I/O work per packet (copying
        # descriptors and touching headers is constant; the rest scales
        # with cache lines touched by the NIC path).
        lines = math.ceil(traffic.packet_bytes / CACHE_LINE)
        io_cycles = 4.0 * (lines - 1)
        misses = self.spec.l3_refs_per_packet * self.miss_ratio(
            cache_bytes, traffic)
        return self._base_cycles + io_cycles + misses * (
            self._penalty / mem_speed)

    def throughput_mpps(self, ways, traffic=Traffic(), mem_speed=1.0):
        """Saturation throughput alone with ``ways`` ways of LLC."""
        cache = ways * self.platform.way_size_bytes
        return self._hz / self.cycles_per_packet(cache, traffic,
                                                 mem_speed) / 1e6

    def latency_p95_us(self, load_fraction, traffic=Traffic()):
        """p95 latency when offered ``load_fraction`` of current capacity.

        Below saturation: a fixed pipeline latency plus the p95 sojourn of
        a single-server queue, ``ln(20) / mu / (1 - 0.95 rho)``, with the
        solo service time. It depends on the load as a fraction of what
        the NF can do, not on its cache share: ResQ §5.2 found the latency
        curves of an NF "vary only slightly" with the LLC allocation. The
        0.95 bounds it at full load: a full ring admits no more packets.
        Past saturation (``load_fraction > 1``) the ring stays full and
        drains at the slower current rate, so latency grows with the
        overload.
        """
        rho = max(load_fraction, 0.0)
        solo = self.throughput_mpps(self.platform.llc_ways, traffic)
        queue_us = math.log(20.0) / solo
        if rho <= 1.0:
            return self.spec.base_latency_us + queue_us / (1.0 - 0.95 * rho)
        return (self.spec.base_latency_us + queue_us / 0.05) * rho

    def dma_footprint_bytes(self, traffic, buffers):
        return buffers * buffer_bytes(traffic.packet_bytes)


def sized_buffers(platform, packet_bytes, instances):
    """DMA buffers each of ``instances`` may hold so all fit in DDIO's share.

    ResQ §4.4: bound the in-flight buffers so that MTU-sized packets of all
    instances fit in the LLC space DDIO uses.
    """
    ddio = platform.io_ways * platform.way_size_bytes
    return max(ddio_buffers(ddio, packet_bytes) // max(instances, 1), 32)


def memory_speed(utilisation):
    """Relative memory access speed at a memory-controller load (Fig. 3)."""
    u = min(max(utilisation, 0.0), 1.0)
    if u <= 0.9:
        return 1.0 - 0.2 * u
    return 0.82 - 0.42 * ((u - 0.9) / 0.1) ** 1.5


def _share_partition(models, instances, rates, capacity):
    """Split ``capacity`` bytes by insertion pressure (water-filling)."""
    pressure = []
    for model, inst, rate in zip(models, instances, rates):
        ws = model.spec.working_set_bytes(inst.traffic.flows)
        miss = model.miss_ratio(capacity / len(instances), inst.traffic)
        pressure.append((rate * model.spec.l3_refs_per_packet * miss, ws))
    alloc = [0.0] * len(instances)
    left = capacity
    active = [i for i in range(len(instances))]
    while active and left > 1.0:
        total = sum(pressure[i][0] for i in active) or 1.0
        capped = [i for i in active
                  if alloc[i] + left * pressure[i][0] / total
                  >= pressure[i][1]]
        if not capped:
            for i in active:
                alloc[i] += left * pressure[i][0] / total
            break
        for i in capped:
            left -= pressure[i][1] - alloc[i]
            alloc[i] = pressure[i][1]
            active.remove(i)
    return alloc


def simulate_server(instances, platform=Platform(), iterations=80):
    """Steady state of NF instances that share one server.

    :param instances: a list of :class:`Instance`, one per dedicated core.
    :returns: a list of :class:`Outcome` in the same order.
    """
    if not instances:
        return []
    models = [NFModel(inst.spec, platform) for inst in instances]
    partitions = {}
    for idx, inst in enumerate(instances):
        partitions.setdefault(inst.partition, []).append(idx)
    keys = list(partitions)
    for i, a in enumerate(keys):
        for b in keys[i + 1:]:
            if a & b:
                raise ValueError('cache partitions must be equal or disjoint;'
                                 ' %s and %s overlap' % (sorted(a), sorted(b)))
    ddio = platform.io_ways * platform.way_size_bytes
    footprint = 0.0
    for model, inst in zip(models, instances):
        buffers = inst.dma_buffers
        if buffers is None:
            buffers = sized_buffers(platform, inst.traffic.packet_bytes,
                                    len(instances))
        footprint += model.dma_footprint_bytes(inst.traffic, buffers)
    leak = max(0.0, 1.0 - ddio / footprint) if footprint else 0.0

    hz = platform.cpu_ghz * 1e9
    rates = [model.throughput_mpps(platform.llc_ways, inst.traffic)
             for model, inst in zip(models, instances)]
    occupancy = [0.0] * len(instances)
    speed = 1.0
    util = 0.0
    caps = list(rates)
    for _ in range(iterations):
        for key, members in partitions.items():
            cap = len(key) * platform.way_size_bytes
            shares = _share_partition([models[i] for i in members],
                                      [instances[i] for i in members],
                                      [rates[i] for i in members], cap)
            for i, share in zip(members, shares):
                occupancy[i] = 0.5 * occupancy[i] + 0.5 * share
        traffic_bytes = 0.0
        for i, (model, inst) in enumerate(zip(models, instances)):
            caps[i] = hz / model.cycles_per_packet(
                occupancy[i], inst.traffic, speed) / 1e6
            offered = inst.offered_mpps
            rate = caps[i] if offered is None else min(offered, caps[i])
            rates[i] = 0.5 * rates[i] + 0.5 * rate
            misses = rates[i] * 1e6 * model.spec.l3_refs_per_packet * (
                model.miss_ratio(occupancy[i], inst.traffic))
            traffic_bytes += misses * CACHE_LINE
            traffic_bytes += (rates[i] * 1e6 * inst.traffic.packet_bytes
                              * 2 * leak * NFModel.LEAK_BOUNCES)
        util = traffic_bytes / (platform.mem_bw_gbps * 1e9)
        speed = 0.5 * speed + 0.5 * memory_speed(util)
    outcomes = []
    for i, (model, inst) in enumerate(zip(models, instances)):
        offered = caps[i] if inst.offered_mpps is None else inst.offered_mpps
        served = min(offered, caps[i])
        outcomes.append(Outcome(
            throughput_mpps=served,
            capacity_mpps=caps[i],
            latency_p95_us=model.latency_p95_us(offered / caps[i],
                                                inst.traffic),
            occupancy_bytes=occupancy[i],
            miss_ratio=model.miss_ratio(occupancy[i], inst.traffic),
            mem_bw_utilisation=util))
    return outcomes
