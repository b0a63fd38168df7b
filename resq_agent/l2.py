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
"""L2 cache ways as a per-core property. Pure.

Where cores share an L2 in clusters (Atom-based parts, E-core modules),
each L2 domain's usable ways are divided statically among its CPUs: CPU
``i`` of the domain (in ascending order) owns ``share`` contiguous ways
starting ``i * share`` ways above the lowest usable way. A pinned guest
that asks for L2 isolation gets, in every L2 domain its pinned CPUs belong
to, the slices of those CPUs; the default group keeps the rest: the slices
of CPUs no such guest holds and the ways above the last slice. No
accounting is needed beyond Nova's PCPU claim: two guests never hold the
same CPU, so they never hold the same slice.

``share`` is ``floor((ways - reserve) / cpus)`` with ``reserve`` the
``min_cbm_bits`` the kernel requires of the default group's mask (at least
one way): the same as ``floor(ways / cpus)`` whenever the remainder already
holds them, one way less per CPU only where every way would otherwise be
in a slice. So the default group keeps a mask the kernel takes even when
guests hold every CPU of a domain.

doc/source/contributor/l2-cat.rst says why L2 ways are not a Placement
resource class.
"""

import dataclasses

from resq_common import cbm
from resq_common import extra_specs


class L2Error(ValueError):
    """An L2 domain cannot give its CPUs a slice the kernel takes."""


@dataclasses.dataclass(frozen=True)
class L2Domain:
    """One L2 cache shared by ``cpus``, as CAT can divide it.

    :param mask: the contiguous ways the agent may divide (the domain's
        ``cbm_mask`` less ways others hold).
    :param min_cbm_bits: the kernel's smallest mask (``info/L2``).
    """

    id: int
    cpus: tuple
    mask: int
    min_cbm_bits: int = 1


def reserve(dom):
    """Ways of ``dom`` above every slice the default group always keeps."""
    return max(dom.min_cbm_bits, 1)


def share(dom):
    """The L2 ways each CPU of ``dom`` owns.

    :raises L2Error: ``dom`` has no CPU, or its CPUs' share would be
        smaller than the kernel's ``min_cbm_bits``.
    """
    cpus = len(set(dom.cpus))
    if not cpus:
        raise L2Error('L2 domain %d has no CPUs to share its ways among'
                      % dom.id)
    ways = cbm.bits(dom.mask)
    per_cpu = max(ways - reserve(dom), 0) // cpus
    if per_cpu < max(dom.min_cbm_bits, 1):
        raise L2Error(
            'L2 domain %d cannot give each of its %d CPUs the %d way(s) the '
            'kernel needs in a mask (min_cbm_bits): it has %d usable ways, '
            '%d of them kept for the default group' % (
                dom.id, cpus, max(dom.min_cbm_bits, 1), ways, reserve(dom)))
    return per_cpu


def _low(mask):
    """The position of the lowest set bit of ``mask``."""
    return (mask & -mask).bit_length() - 1


def cpu_slice(dom, cpu):
    """The ways CPU ``cpu`` of ``dom`` owns (a contiguous mask).

    :raises L2Error: as :func:`share`.
    :raises KeyError: ``cpu`` is not in ``dom``.
    """
    order = sorted(set(dom.cpus))
    if cpu not in order:
        raise KeyError('CPU %d is not in L2 domain %d' % (cpu, dom.id))
    per_cpu = share(dom)
    return cbm.make(_low(dom.mask) + order.index(cpu) * per_cpu, per_cpu)


def _slices(dom, cpus):
    """The union of the slices of those of ``cpus`` that ``dom`` has."""
    mask = 0
    for cpu in set(cpus) & set(dom.cpus):
        mask |= cpu_slice(dom, cpu)
    return mask


def largest_run(mask):
    """The longest run of adjacent set bits of ``mask``, lowest on a tie."""
    best, pos = 0, 0
    while mask >> pos:
        if not (mask >> pos) & 1:
            pos += 1
            continue
        start = pos
        while (mask >> pos) & 1:
            pos += 1
        if pos - start > cbm.bits(best):
            best = cbm.make(start, pos - start)
    return best


def guest_masks(domains, pinned_cpus, sparse=False):
    """``{L2 domain id: mask}`` of a guest pinned to ``pinned_cpus``.

    Only the domains holding one of its CPUs. Where the kernel takes masks
    with gaps (``sparse``) the mask is the union of its CPUs' slices; else,
    when its CPUs are not adjacent in a domain, the longest run of their
    slices (lowest on a tie): still ways no other guest holds, though fewer
    than ``share`` per CPU (:func:`shortfall` says how many fewer).

    :raises L2Error: a domain holding one of its CPUs cannot be divided.
    """
    result = {}
    for dom in domains:
        mask = _slices(dom, pinned_cpus)
        if mask:
            result[dom.id] = mask if sparse else largest_run(mask)
    return result


def shortfall(domains, pinned_cpus, masks):
    """``{L2 domain id: ways}`` a guest's ``masks`` lack of its share."""
    result = {}
    for dom in domains:
        cpus = set(pinned_cpus) & set(dom.cpus)
        if not cpus:
            continue
        lost = len(cpus) * share(dom) - cbm.bits(masks.get(dom.id, 0))
        if lost > 0:
            result[dom.id] = lost
    return result


def default_masks(domains, held_cpus, sparse=False):
    """``{L2 domain id: mask}`` the default group keeps in every domain.

    Every usable way but the slices of ``held_cpus`` (the CPUs of guests
    with L2 isolation). Where the kernel wants contiguous masks, the run
    holding the top way, which no slice ever covers (:func:`reserve`).

    :raises L2Error: a domain cannot be divided.
    """
    result = {}
    for dom in domains:
        share(dom)
        left = dom.mask & ~_slices(dom, held_cpus)
        if not sparse:
            pos = dom.mask.bit_length() - 1
            run = 0
            while pos >= 0 and (left >> pos) & 1:
                run |= 1 << pos
                pos -= 1
            left = run
        result[dom.id] = left
    return result


def host_share(domains, dedicated_cpus=None):
    """The L2 ways every CPU Nova may pin gets: the smallest share.

    Over the domains holding one of ``dedicated_cpus`` (every domain with
    CPUs when None). 0 when there is no such domain.

    :raises L2Error: such a domain cannot be divided.
    """
    shares = []
    for dom in domains:
        if not dom.cpus or dedicated_cpus is not None and not (
                set(dom.cpus) & set(dedicated_cpus)):
            continue
        shares.append(share(dom))
    return min(shares) if shares else 0


def traits(per_cpu):
    """The compute node's traits for ``per_cpu`` ways per core.

    ``CUSTOM_RESQ_L2_CAT`` and the ladder ``..._WAYS_PER_CORE_1`` to
    ``_<per_cpu>`` (at most :data:`extra_specs.L2_LADDER_MAX`), so a
    flavor asking for ``k`` requires ``..._WAYS_PER_CORE_<k>`` alone and
    every host offering at least ``k`` matches. Empty for 0.
    """
    if per_cpu < 1:
        return []
    return [extra_specs.TRAIT_L2_CAT] + [
        extra_specs.l2_trait(n)
        for n in range(1, min(per_cpu, extra_specs.L2_LADDER_MAX) + 1)]


def owns_trait(trait):
    """Whether ``trait`` is one the agent publishes for L2 (and removes)."""
    return (trait == extra_specs.TRAIT_L2_CAT
            or trait.startswith(extra_specs.TRAIT_L2_WAYS_PER_CORE_PREFIX))
