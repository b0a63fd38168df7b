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
"""Way masks for instances in each L3 cache domain. Pure, no I/O.

How a domain's ways are split (ways numbered from bit 0 of ``cbm_mask``):

* the **I/O ways** (``shareable_bits``, or ``[resq_agent] ddio_ways`` at
  the top when the kernel reports none) are where DDIO writes packets. No
  instance gets them: an instance's private ways would otherwise be
  evicted by other NFs' DMA. As in ResQ, no core allocates into them
  either: the default group (the host, non-ResQ guests) stays out of them
  too, unless ``default_io`` (``[resq_agent] default_group_io_ways``) lets
  it share them;
* the **instance region** is the larger run of ways on one side of the
  I/O ways (all of them when the I/O ways sit at an end; the whole span
  from the lowest to the highest I/O way counts as I/O when the kernel's
  shareable bits are split). Instances are packed from the end away from
  the I/O ways; the **default group** gets the free ways at the end next to
  the I/O ways (plus the I/O ways with ``default_io`` when that keeps its
  mask contiguous), always at least ``default_ways`` of them. The
  region's size minus ``default_ways`` is :attr:`DomainShape.capacity`:
  exactly what Placement is offered;
* a class of service is host-wide but its masks are per domain, and an
  instance is pinned to one domain. With ``shared`` (the resctrl backend)
  one class serves at most one instance in *each* domain: its mask in a
  domain is that instance's ways, so every domain holds up to
  ``num_closids - 1`` partitions (one class stays with the default group)
  instead of that many per host. An instance keeps its class while it
  runs; a new one takes the lowest class free in its domain. Without
  ``shared`` (libpqos, which keeps a class per instance) each instance is
  a class of its own, ``num_closids - 1`` per host.

Memory bandwidth rides along: a request's ``mb`` (its ``MB:`` value, in
the kernel's units, :func:`resq_common.mba.schemata_value`) is its
assignment's, and the layout's ``default_mb`` and ``mb_max`` (the value of
no limit) say what the default group and a group's domains without a
member with bandwidth get; both None where the host has no MBA. Placement
keeps a domain's bandwidth from being over-committed, so the layout
refuses nothing for it.

Running instances keep their masks when they still fit; new instances go
first-fit into the gaps; only when a request fits in the free ways but not
in any gap are all instances of the domain re-laid out contiguously (the
running ones in their current order), because moving an instance costs it
its warm cache. Requests that cannot be honoured are returned as refusals
with the reason and never get a mask; the others are unaffected.
"""

import collections
import dataclasses

from resq_common import cbm


@dataclasses.dataclass(frozen=True)
class DomainShape:
    """What the layout needs to know about one cache domain."""

    id: int
    cbm_mask: int
    min_cbm_bits: int = 1
    io_mask: int = 0
    default_ways: int = 1
    default_io: bool = False
    # Ways leased to on-demand NFs (resq_agent.ondemand.lease), between
    # the instances and the default group; not offered to instances.
    lease_ways: int = 0

    @property
    def ways(self):
        return cbm.bits(self.cbm_mask)

    def region(self):
        """The instance region: ``(lo, hi, upward)``.

        Instance ways are ``lo..hi-1``; ``upward`` when instances start at
        ``lo`` (the I/O ways lie above).
        """
        top = self.cbm_mask.bit_length()
        low = (self.cbm_mask & -self.cbm_mask).bit_length() - 1
        io = self.io_mask & self.cbm_mask
        if not io:
            return low, top, True
        io_lo = (io & -io).bit_length() - 1
        io_hi = io.bit_length()
        if io_lo - low >= top - io_hi:
            return low, io_lo, True
        return io_hi, top, False

    @property
    def capacity(self):
        lo, hi, _ = self.region()
        return max(hi - lo - self.default_ways - self.lease_ways, 0)

    def mask_at(self, start, ways):
        """The mask of region positions ``start .. start+ways-1``."""
        lo, hi, upward = self.region()
        if upward:
            return cbm.make(lo + start, ways)
        return cbm.make(hi - start - ways, ways)

    def position_of(self, mask):
        """``(start, ways)`` of a mask inside the instance region.

        ``None`` when it is not a contiguous mask there.
        """
        lo, hi, upward = self.region()
        if not cbm.is_contiguous(mask) or mask & ~cbm.make(lo, hi - lo):
            return None
        first = (mask & -mask).bit_length() - 1
        ways = cbm.bits(mask)
        return (first - lo, ways) if upward else (hi - first - ways, ways)

    def default_mask(self, used_end):
        """Free ways from position ``used_end`` on (plus the I/O ways).

        The I/O ways only with ``default_io``, and only when the mask stays
        contiguous (split shareable bits would make it invalid).
        """
        lo, hi, _ = self.region()
        free = hi - lo - used_end
        mask = self.mask_at(used_end, free) if free > 0 else 0
        if not self.default_io:
            return mask
        both = mask | (self.io_mask & self.cbm_mask)
        return both if cbm.is_contiguous(both) else mask


@dataclasses.dataclass(frozen=True)
class Request:
    """An instance's allocation: ``ways`` ways in ``domain_id``.

    ``current_mask`` is what it has now, if anything.
    """

    instance_uuid: str
    domain_id: int
    ways: int
    cpus: tuple = ()
    packet_bytes: int = None
    current_mask: int = None
    # The shared class it is in now (see the module), if any.
    current_clos: int = None
    # Placement's CUSTOM_MEM_BW_MIBPS, and its MB value (None: no limit).
    mem_bw_mibps: int = 0
    mb: int = None
    # Of its ways, those holding code (resq:code_ways, on a host mounted
    # with cdp); 0: code and data share them.
    code_ways: int = 0


@dataclasses.dataclass(frozen=True)
class Assignment:
    instance_uuid: str
    domain_id: int
    ways: int
    mask: int
    cpus: tuple = ()
    packet_bytes: int = None
    moved: bool = False
    # The shared class of service (1 .. num_closids - 1) serving it; None
    # when it has a class of its own.
    clos: int = None
    mem_bw_mibps: int = 0
    mb: int = None
    # The lowest ``code_ways`` ways of ``mask``, which hold code (the
    # rest hold data); None when code and data share the mask.
    code_mask: int = None


@dataclasses.dataclass(frozen=True)
class Refusal:
    instance_uuid: str
    domain_id: int
    ways: int
    reason: str


@dataclasses.dataclass
class Layout:
    assignments: list
    refused: list
    default_masks: dict
    # The default group's MB values {domain: value} and the value of no
    # limit; None where the host has no MBA (no MB line is written).
    default_mb: dict = None
    mb_max: int = None

    def assignment(self, instance_uuid):
        for a in self.assignments:
            if a.instance_uuid == instance_uuid:
                return a
        return None


def compute(shapes, requests, num_closids, shared=False):
    """Lay out ``requests`` over the domains ``shapes``.

    :param shapes: list of :class:`DomainShape`.
    :param requests: list of :class:`Request`; among new instances, earlier
        ones win when there is not room for all.
    :param num_closids: the platform's classes of service (one is kept for
        the default group).
    :param shared: one class serves one instance per domain (see the
        module); else one class per instance.
    :returns: a :class:`Layout`.
    """
    by_id = {s.id: s for s in shapes}
    # Instances that already have a group keep priority over new ones, so
    # an over-commit never evicts something that runs protected.
    ordered = ([r for r in requests if r.current_mask is not None]
               + [r for r in requests if r.current_mask is None])
    classes = _Classes(num_closids, shared)
    used = collections.Counter()
    accepted = collections.defaultdict(list)
    refused = []
    seen = set()
    for req in ordered:
        shape = by_id.get(req.domain_id)
        reason = None
        if req.instance_uuid in seen:
            reason = 'instance has more than one LLC allocation'
        elif shape is None:
            reason = ('cache domain %s does not exist on this host (it has '
                      '%s)' % (req.domain_id, sorted(by_id) or 'none'))
        elif req.ways < max(shape.min_cbm_bits, 1):
            reason = ('%d ways is below the platform minimum of %d '
                      '(min_cbm_bits)' % (req.ways, shape.min_cbm_bits))
        elif req.code_ways and min(
                req.code_ways, req.ways - req.code_ways) < max(
                shape.min_cbm_bits, 1):
            reason = ('%d code ways of %d leave %d for data: each part '
                      'needs at least %d ways (min_cbm_bits)' % (
                          req.code_ways, req.ways,
                          req.ways - req.code_ways, shape.min_cbm_bits))
        elif not classes.free(shape.id):
            reason = classes.exhausted(shape.id)
        elif used[shape.id] + req.ways > shape.capacity:
            reason = ('needs %d ways but only %d of the %d instance ways of '
                      'cache domain %d are free (%d I/O and %d default-'
                      'group ways are never given out): over-commit' % (
                          req.ways, shape.capacity - used[shape.id],
                          shape.capacity, shape.id, cbm.bits(shape.io_mask),
                          shape.default_ways))
        seen.add(req.instance_uuid)
        if reason:
            refused.append(Refusal(req.instance_uuid, req.domain_id,
                                   req.ways, reason))
            continue
        classes.take(shape.id)
        used[shape.id] += req.ways
        accepted[shape.id].append(req)
    assignments = []
    defaults = {}
    for shape in shapes:
        placed = _place(shape, accepted.get(shape.id, []))
        end = max((start + req.ways for start, req in placed), default=0)
        defaults[shape.id] = shape.default_mask(end)
        clos_of = classes.number(shape.id, [r for _, r in placed])
        for start, req in placed:
            mask = shape.mask_at(start, req.ways)
            assignments.append(Assignment(
                req.instance_uuid, shape.id, req.ways, mask,
                tuple(req.cpus), req.packet_bytes,
                moved=(req.current_mask is not None
                       and req.current_mask != mask),
                clos=clos_of.get(req.instance_uuid),
                mem_bw_mibps=req.mem_bw_mibps, mb=req.mb,
                code_mask=cbm.make((mask & -mask).bit_length() - 1,
                                   req.code_ways)
                if req.code_ways else None))
    assignments.sort(key=lambda a: (a.domain_id, a.mask))
    return Layout(assignments, refused, defaults)


class _Classes:
    """Classes of service left, per domain (shared) or per host."""

    def __init__(self, num_closids, shared):
        self.num_closids = num_closids
        self.shared = shared
        self.usable = max(num_closids - 1, 0)
        self.used = collections.Counter()

    def _key(self, domain_id):
        return domain_id if self.shared else None

    def free(self, domain_id):
        return self.used[self._key(domain_id)] < self.usable

    def take(self, domain_id):
        self.used[self._key(domain_id)] += 1

    def exhausted(self, domain_id):
        if self.shared:
            return ('no class of service left in cache domain %d: its '
                    'instances hold all %d (a class serves one instance '
                    'per domain; one is kept for the default group)'
                    % (domain_id, self.usable))
        return ('no class of service left: all %d are in use, one kept '
                'for the default group' % self.num_closids)

    def number(self, domain_id, reqs):
        """``{uuid: class}`` of one domain's accepted requests (shared).

        A running instance keeps its class when no other of the domain
        claims it first; the others take the lowest free ones.
        """
        if not self.shared:
            return {}
        result, taken = {}, set()
        for req in sorted(reqs, key=lambda r: r.instance_uuid):
            k = req.current_clos
            if k is not None and 1 <= k <= self.usable and k not in taken:
                result[req.instance_uuid] = k
                taken.add(k)
        free = (k for k in range(1, self.usable + 1) if k not in taken)
        for req in sorted(reqs, key=lambda r: r.instance_uuid):
            if req.instance_uuid not in result:
                result[req.instance_uuid] = next(free)
        return result


def _place(shape, reqs):
    """``[(start position, request)]`` for one domain's requests.

    Their ways are known to fit in ``shape.capacity``.
    """
    kept, new = [], []
    for req in reqs:
        pos = (shape.position_of(req.current_mask)
               if req.current_mask is not None else None)
        if (pos is not None and pos[1] == req.ways
                and pos[0] + pos[1] <= shape.capacity
                and not any(_overlap(pos[0], req.ways, s, r.ways)
                            for s, r in kept)):
            kept.append((pos[0], req))
        else:
            new.append(req)
    kept.sort(key=lambda item: item[0])
    new.sort(key=lambda r: (-r.ways, r.instance_uuid))
    placed = list(kept)
    for req in new:
        start = _first_fit(placed, req.ways, shape.capacity)
        if start is None:
            return _compact(kept, new)
        placed.append((start, req))
        placed.sort(key=lambda item: item[0])
    return placed


def _compact(kept, new):
    """Everything packed from position 0.

    Running instances first, in their current order, so the fewest move.
    """
    placed, start = [], 0
    for req in [r for _, r in kept] + new:
        placed.append((start, req))
        start += req.ways
    return placed


def _first_fit(placed, ways, capacity):
    cursor = 0
    for start, req in placed:
        if start - cursor >= ways:
            return cursor
        cursor = max(cursor, start + req.ways)
    return cursor if capacity - cursor >= ways else None


def _overlap(a_start, a_ways, b_start, b_ways):
    return a_start < b_start + b_ways and b_start < a_start + a_ways
