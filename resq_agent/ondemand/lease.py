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
"""Where a cache domain's on-demand lease lies. Pure.

The instance region of a domain (:class:`resq_agent.layout.DomainShape`)
is, from the end away from the I/O ways: reserved instances, free ways,
the ``lease_ways`` leased to on-demand NFs, the default group's ways.
Placement is offered only the first part (``capacity``), so reserved
instances never land on the lease. With ``lend_spare`` the lease also
takes the free ways after the last reserved instance: they are lent, and
taken back as soon as a reserved instance needs them (the lease shrinks,
the local scheduler starts over in it). The lease is always one
contiguous run, so every class cut from it is a valid mask.
"""

from resq_agent.ondemand import model


def _position_end(shape, assignments):
    end = 0
    for a in assignments:
        if a.domain_id != shape.id:
            continue
        pos = shape.position_of(a.mask)
        if pos is not None:
            end = max(end, pos[0] + pos[1])
    return end


def bounds(shape, assignments, lend_spare):
    """``(start, end)`` region positions of the lease; start == end: none.

    :param assignments: the reserved instances' assignments (any domain).
    """
    if shape.lease_ways <= 0:
        return (0, 0)
    lo, hi, _ = shape.region()
    end = min(shape.capacity + shape.lease_ways,
              max(hi - lo - shape.default_ways, 0))
    start = shape.capacity
    if lend_spare:
        start = min(_position_end(shape, assignments), shape.capacity)
    return (start, max(end, start))


def lease_of(shape, assignments, classes, lend_spare, way_bytes):
    """The :class:`model.Lease` of ``shape``, or None when it has no ways."""
    start, end = bounds(shape, assignments, lend_spare)
    if end <= start:
        return None
    mask = shape.mask_at(start, end - start)
    first = (mask & -mask).bit_length() - 1
    return model.Lease(shape.id, first, end - start, classes,
                       shape.min_cbm_bits, way_bytes)


def default_mask(shape, assignments, lend_spare):
    """The default group's mask when the lease is in use: after the lease."""
    _, end = bounds(shape, assignments, lend_spare)
    return shape.default_mask(end)
