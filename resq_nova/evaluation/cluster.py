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
"""A simulated cluster and the ground truth of what a schedule achieves.

A schedule is a list of :class:`Placed` instances. Its ground truth comes
from the simulated testbed (:func:`resq_profiler.truth.simulate_server`),
server by server: footprint-shared caches, CAT partitions, memory bandwidth
and leaky DMA. It is not the model the profiles were planned with: the
schedulers see only profiles the profiler measured from the testbed, with
noise (``run.profile_catalog``), or, for the prediction baseline, what its
own profiling runs measured.

A term's traffic is split over its instances in proportion to the capacity
each was planned for (the fabric's job, ResQ §5.3). The term is violated
when its delivered throughput falls more than 5% short of the target or any
instance's p95 latency exceeds the target by more than 5% (ResQ Figure 8).
"""

import dataclasses

from resq_profiler import catalog
from resq_profiler import nfmodel
from resq_profiler import truth

VIOLATION_TOLERANCE = 0.05
PLATFORM = nfmodel.Platform()
ALL_WAYS = frozenset(range(PLATFORM.llc_ways))
USABLE_WAYS = PLATFORM.llc_ways - PLATFORM.io_ways
UNSIZED_BUFFERS = 2 * nfmodel.NFModel.DEFAULT_DESCRIPTORS


@dataclasses.dataclass
class Placed:
    """One NF instance of a schedule.

    :param partition: frozenset of ways (CAT), or ``ALL_WAYS`` when shared.
    :param planned_mpps: the capacity the scheduler planned for it; the
        term's traffic is split in proportion.
    :param dma_buffers: in-flight buffers; ``None`` means ResQ-sized.
    :param predicted_mpps: what a prediction-based scheme predicted this
        instance can carry where it stands (its error is reported).
    """

    term: object
    server: int
    partition: frozenset
    planned_mpps: float
    dma_buffers: int = UNSIZED_BUFFERS
    predicted_mpps: float = None


@dataclasses.dataclass(frozen=True)
class TermOutcome:
    term: str
    target_mpps: float
    delivered_mpps: float
    target_us: float
    worst_p95_us: float

    @property
    def throughput_violated(self):
        return self.delivered_mpps < self.target_mpps * (
            1 - VIOLATION_TOLERANCE)

    @property
    def latency_violated(self):
        return self.worst_p95_us > self.target_us * (1 + VIOLATION_TOLERANCE)

    @property
    def violated(self):
        return self.throughput_violated or self.latency_violated


def offered_loads(placed):
    """Each instance's share of its term's target traffic."""
    planned = {}
    for p in placed:
        planned[p.term.name] = planned.get(p.term.name, 0.0) + max(
            p.planned_mpps, 1e-9)
    return [p.term.throughput_mpps * max(p.planned_mpps, 1e-9)
            / planned[p.term.name] for p in placed]


_SERVER_CACHE = {}
_SERVER_CACHE_LIMIT = 20000


def _simulate(insts):
    """One server's truth, memoised on what is on it.

    Schemes that measure and react simulate the same servers again and
    again.
    """
    key = tuple((i.spec.name, i.partition, i.traffic,
                 round(i.offered_mpps, 9), i.dma_buffers) for i in insts)
    outs = _SERVER_CACHE.get(key)
    if outs is None:
        if len(_SERVER_CACHE) >= _SERVER_CACHE_LIMIT:
            _SERVER_CACHE.clear()
        outs = _SERVER_CACHE[key] = truth.simulate_server(insts, PLATFORM)
    return outs


def instance_outcomes(placed, packet_bytes=64):
    """The testbed's :class:`resq_profiler.truth.Outcome` per instance."""
    traffic = nfmodel.Traffic(packet_bytes)
    loads = offered_loads(placed)
    by_server = {}
    for idx, (p, load) in enumerate(zip(placed, loads)):
        by_server.setdefault(p.server, []).append((idx, p, load))
    result = [None] * len(placed)
    for members in by_server.values():
        insts = [nfmodel.Instance(catalog.get(p.term.profile.name),
                                  p.partition, traffic, load, p.dma_buffers)
                 for _, p, load in members]
        for (idx, _, _), out in zip(members, _simulate(insts)):
            result[idx] = out
    return result


def ground_truth(placed, packet_bytes=64, outcomes=None):
    """Simulate every server; return ``{term name: TermOutcome}``.

    :param outcomes: :func:`instance_outcomes` of ``placed``, if known.
    """
    if outcomes is None:
        outcomes = instance_outcomes(placed, packet_bytes)
    delivered, worst = {}, {}
    terms = {}
    for p, out in zip(placed, outcomes):
        name = p.term.name
        terms[name] = p.term
        delivered[name] = delivered.get(name, 0.0) + out.throughput_mpps
        worst[name] = max(worst.get(name, 0.0), out.latency_p95_us)
    return {name: TermOutcome(name, t.throughput_mpps, delivered[name],
                              t.latency_p95_us, worst[name])
            for name, t in terms.items()}


def servers_used(placed):
    return len({p.server for p in placed})


def contiguous_partitions(sizes, offset=0):
    """Disjoint contiguous way sets of the given sizes, from way ``offset``."""
    parts = []
    start = offset
    for size in sizes:
        parts.append(frozenset(range(start, start + size)))
        start += size
    if start > offset + USABLE_WAYS:
        raise ValueError('partitions of %s ways exceed the %d usable ways'
                         % (sizes, USABLE_WAYS))
    return parts
