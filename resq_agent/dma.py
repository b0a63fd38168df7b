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
"""DMA buffer sizing: the leaky-DMA fix of ResQ §4.3-4.4.

DDIO writes incoming packets into a few LLC ways that CAT cannot partition.
When more buffers are in flight than those ways hold, DMA evicts packets
still being processed and they bounce between LLC and DRAM. The fix is to
bound the buffers: ``io_ways * way_size // buffer_bytes(packet)`` per
cache domain (the formula lives in :func:`resq_profiler.nfmodel.
ddio_buffers`, shared with the profiler and the simulator).

Each domain's DDIO bytes are split in two: ``ovs_share`` for the RX/TX
rings of Open vSwitch's physical DPDK ports, sized at the configured
(MTU) packet size, and the rest evenly among the domain's ResQ instances
as guest mbuf budgets, at each instance's own packet size.

The planning functions are pure; :class:`DmaSizer` is the agent's
post-apply hook that applies a plan through :mod:`resq_agent.ovs` and
:mod:`resq_agent.metadata`.
"""

import dataclasses

from oslo_log import log as logging

from resq_agent import metadata
from resq_agent import ovs
from resq_profiler import nfmodel

LOG = logging.getLogger(__name__)

# OVS's schema allows n_rxq_desc / n_txq_desc in 1..4096 and DPDK ports
# reject anything but a power of two (falling back to 2048).
MAX_DESCRIPTORS = 4096
OVS_DEFAULT_DESCRIPTORS = 2048


@dataclasses.dataclass(frozen=True)
class GuestBudget:
    instance_uuid: str
    domain_id: int
    packet_bytes: int
    mbufs: int


@dataclasses.dataclass(frozen=True)
class DomainBudget:
    """What one cache domain's DDIO share allows."""

    domain_id: int
    ddio_bytes: int
    ovs_buffers: int
    descriptors: int          # per ring (RX and TX alike) of its ports
    ports: tuple
    guests: tuple
    warnings: tuple = ()


def ddio_bytes(io_ways, way_size_bytes):
    return io_ways * way_size_bytes


def total_buffers(io_ways, way_size_bytes, packet_bytes):
    """Buffers of ``packet_bytes`` that may be in flight in one domain."""
    return nfmodel.ddio_buffers(ddio_bytes(io_ways, way_size_bytes),
                                packet_bytes)


def ring_size(buffers, minimum=1):
    """The largest ring OVS accepts that holds at most ``buffers``.

    Rounds down to a power of two (rounding up would overflow DDIO) and
    clamps to ``minimum`` (itself rounded down to a power of two) and
    :data:`MAX_DESCRIPTORS`.

    :returns: ``(descriptors, clamped)``; ``clamped`` is True when the
        floor is larger than ``buffers`` allowed.
    """
    floor = _pow2_floor(max(min(minimum, MAX_DESCRIPTORS), 1))
    if buffers < floor:
        return floor, True
    return min(_pow2_floor(buffers), MAX_DESCRIPTORS), False


def _pow2_floor(n):
    return 1 << (int(n).bit_length() - 1)


def plan_domain(domain_id, io_ways, way_size_bytes, assignments, ports,
                packet_bytes=1518, ovs_share=0.5, min_descriptors=64,
                min_guest_buffers=256):
    """Plan one cache domain.

    :param assignments: this domain's instances; objects with
        ``instance_uuid`` and ``packet_bytes`` (None: use ``packet_bytes``).
    :param ports: the physical ports whose DMA lands in this domain
        (:class:`resq_agent.ovs.NicPort`: ``name``, ``numa_id``,
        ``rx_queues``).
    :returns: a :class:`DomainBudget`.
    """
    if not 0.0 <= ovs_share <= 1.0:
        raise ValueError('ovs_share must be within 0..1, got %r' % ovs_share)
    ddio = ddio_bytes(io_ways, way_size_bytes)
    warnings = []
    ovs_buffers = nfmodel.ddio_buffers(ddio * ovs_share, packet_bytes)
    # Every RX queue has a ring of n_rxq_desc and, as forwarded packets
    # keep their buffer, an equally sized TX ring: 2 rings per queue.
    rings = 2 * sum(max(p.rx_queues, 1) for p in ports)
    descriptors = 0
    if ports and ovs_share > 0:
        descriptors, clamped = ring_size(ovs_buffers // rings,
                                         min_descriptors)
        if clamped:
            warnings.append(
                'domain %d: %d rings share %d buffers; the floor of %d '
                'descriptors (dma_min_descriptors) lets DMA exceed DDIO\'s '
                '%d bytes' % (domain_id, rings, ovs_buffers, descriptors,
                              ddio))
    guests = []
    guest_bytes = ddio * (1.0 - ovs_share)
    if assignments and guest_bytes > 0:
        each = guest_bytes / len(assignments)
        for a in sorted(assignments, key=lambda a: a.instance_uuid):
            pkt = a.packet_bytes or packet_bytes
            mbufs = nfmodel.ddio_buffers(each, pkt)
            if mbufs < min_guest_buffers:
                warnings.append(
                    'domain %d: instance %s gets %d buffers of %d B; '
                    'publishing the floor of %d (dma_min_guest_buffers)'
                    % (domain_id, a.instance_uuid, mbufs, pkt,
                       min_guest_buffers))
                mbufs = min_guest_buffers
            guests.append(GuestBudget(a.instance_uuid, domain_id, pkt,
                                      mbufs))
    return DomainBudget(domain_id, ddio, ovs_buffers, descriptors,
                        tuple(p.name for p in ports), tuple(guests),
                        tuple(warnings))


def plan(domains, assignments, ports, **kwargs):
    """Plan every cache domain of a host.

    A port whose NUMA node matches a domain id belongs to that domain
    (cache domain ids are socket ids on the Xeons ResQ targets); a port of
    unknown or unmatched node counts in every domain and gets the
    smallest ring of them, so no domain overflows.

    :param domains: objects with ``id``, ``io_ways``, ``way_size_bytes``.
    :param assignments: objects with ``instance_uuid``, ``domain_id``,
        ``packet_bytes``.
    :param ports: :class:`resq_agent.ovs.NicPort` list.
    :param kwargs: passed to :func:`plan_domain`.
    :returns: ``(budgets, rings)``: the list of :class:`DomainBudget` and
        ``{port name: descriptors}``.
    """
    ids = {d.id for d in domains}
    budgets = []
    rings = {}
    for dom in domains:
        mine = [p for p in ports if p.numa_id == dom.id or p.numa_id
                not in ids]
        budget = plan_domain(
            dom.id, dom.io_ways, dom.way_size_bytes,
            [a for a in assignments if a.domain_id == dom.id], mine,
            **kwargs)
        budgets.append(budget)
        if budget.descriptors:
            for port in mine:
                rings[port.name] = min(rings.get(port.name, MAX_DESCRIPTORS),
                                       budget.descriptors)
    return budgets, rings


class DmaSizer:
    """The agent's post-apply hook: size OVS rings, publish budgets.

    Called as ``hook(topology, assignments)`` after every apply, so a
    failed step (OVS or Nova down) is simply retried at the next one. It
    never raises: DMA sizing must not stop cache enforcement.

    :param conf: a ConfigOpts with ``[resq_agent]`` and ``[nova]``.
    :param ports: an :class:`resq_agent.ovs.OvsPorts` (default: from
        ``ovsdb_connection``; None there means no OVS on this host).
    :param server_metadata: a :class:`resq_agent.metadata.ServerMetadata`
        (default: built from ``[nova]`` on first use).
    """

    def __init__(self, conf, ports=None, server_metadata=None):
        self.conf = conf
        self._ports = ports if ports is not None else (
            ovs.OvsPorts.from_conf(conf))
        self._metadata = server_metadata
        self._published = {}
        self._metadata_failed = False
        self._ovs_down = False
        self.budgets = []

    def __call__(self, topology, assignments):
        opts = self.conf.resq_agent
        if not opts.dma_sizing:
            return []
        try:
            return self._size(opts, topology, assignments)
        except Exception:
            LOG.exception('DMA buffer sizing failed; cache partitions are '
                          'unaffected, sizing is retried at the next apply')
            return []

    def _size(self, opts, topology, assignments):
        nics, ovs_ok = [], self._ports is not None
        if ovs_ok:
            nics, failure = self._ovs(self._ports.nic_ports)
            ovs_ok = failure is None
        budgets, rings = plan(
            topology.domains, assignments, nics,
            packet_bytes=opts.dma_packet_bytes, ovs_share=opts.dma_ovs_share,
            min_descriptors=opts.dma_min_descriptors,
            min_guest_buffers=opts.dma_min_guest_buffers)
        for budget in budgets:
            for text in budget.warnings:
                LOG.warning('Leaky DMA risk: %s', text)
        guests = [g for b in budgets for g in b.guests]
        if ovs_ok:
            changed, failure = self._ovs(self._ports.set_rings, rings)
            for name in changed:
                LOG.info('DPDK port %s: n_rxq_desc = n_txq_desc = %d',
                         name, rings[name])
            if failure is None:
                self._ovs(self._ports.set_instance_budgets,
                          {g.instance_uuid: g.mbufs for g in guests})
        if opts.publish_guest_budget:
            self._publish(guests)
        self.budgets = budgets
        return budgets

    def _ovs(self, call, *args):
        """``(call's result, None)``, or ``([], the failure)``."""
        failure = None
        try:
            result = call(*args)
        except ovs.OvsUnavailable as exc:
            failure = exc
        if failure is not None:
            # Logged outside the handler: oslo.log would append the
            # exception a second time.
            self._ovs_failed(failure)
            return [], failure
        if self._ovs_down:
            LOG.info('Open vSwitch database %s answers again; DPDK port '
                     'rings are sized again', self._ports.connection_string)
            self._ovs_down = False
        return result, None

    def _ovs_failed(self, exc):
        # Once per outage: a host without Open vSwitch would say it at
        # every pass otherwise.
        (LOG.debug if self._ovs_down else LOG.warning)('%s', exc)
        self._ovs_down = True

    def _client(self):
        if self._metadata is None:
            self._metadata = metadata.ServerMetadata.from_conf(self.conf)
        return self._metadata

    def _publish(self, guests):
        live = {g.instance_uuid for g in guests}
        self._published = {u: v for u, v in self._published.items()
                           if u in live}
        for guest in guests:
            value = (guest.mbufs, guest.packet_bytes)
            if self._published.get(guest.instance_uuid) == value:
                continue
            try:
                if self._client().publish_budget(guest):
                    LOG.info('Instance %s: guest mbuf budget %d buffers of '
                             '%d B published', guest.instance_uuid,
                             guest.mbufs, guest.packet_bytes)
                self._published[guest.instance_uuid] = value
                self._metadata_failed = False
            except metadata.NovaUnavailable as exc:
                # One line per outage, not one per instance and reconcile.
                log = LOG.debug if self._metadata_failed else LOG.warning
                log('%s', exc)
                self._metadata_failed = True
                return
            except metadata.ServerGone:
                LOG.debug('Instance %s is gone; no budget to publish',
                          guest.instance_uuid)
            except metadata.MetadataError as exc:
                LOG.warning('%s; retrying at the next apply', exc)

    def status(self):
        """JSON-able view of the last plan, for ``resq-agent status``."""
        return [dataclasses.asdict(b) for b in self.budgets]
