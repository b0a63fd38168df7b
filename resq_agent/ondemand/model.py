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
"""Plain data of the local scheduler, and laying classes out as masks.

Pure, no I/O. A :class:`Lease` is a contiguous run of ways of one cache
domain plus a budget of classes of service; a :class:`Plan` is a list of
classes, each with a number of ways and its NFs. :func:`masks` turns a
plan into CAT masks and checks every one of them the way the kernel would
(contiguous, at least ``min_cbm_bits``, inside the lease), so nothing the
kernel refuses ever reaches the enforcer.
"""

import dataclasses
import math

from resq_common import cbm


class PlanError(ValueError):
    """A plan or a lease that cannot be laid out; the message says why."""


@dataclasses.dataclass(frozen=True)
class Lease:
    """The ways and classes of service leased to on-demand NFs.

    :param domain_id: the cache domain.
    :param first_way: lowest way of the lease (bit number in the CBM).
    :param ways: ways of the lease, contiguous from ``first_way``.
    :param classes: classes of service the on-demand NFs may use.
    :param min_cbm_bits: the platform's smallest mask.
    :param way_bytes: bytes of LLC per way (occupancy to ways).
    """

    domain_id: int
    first_way: int
    ways: int
    classes: int
    min_cbm_bits: int = 1
    way_bytes: int = 1441792

    def check(self):
        """:raises PlanError: when no class could ever be laid out."""
        if self.ways < max(self.min_cbm_bits, 1):
            raise PlanError(
                'the on-demand lease of cache domain %d has %d ways, fewer '
                'than min_cbm_bits %d: raise [resq_agent] ondemand_ways or '
                'free reserved ways' % (self.domain_id, self.ways,
                                        self.min_cbm_bits))
        if self.classes < 1:
            raise PlanError(
                'the on-demand lease of cache domain %d has no class of '
                'service: raise [resq_agent] ondemand_classes' %
                self.domain_id)
        if self.first_way < 0 or self.way_bytes <= 0:
            raise PlanError('lease of cache domain %d starts at way %d with '
                            '%d bytes per way' % (self.domain_id,
                                                  self.first_way,
                                                  self.way_bytes))
        return self

    @property
    def mask(self):
        return cbm.make(self.first_way, self.ways)

    def ways_of(self, nbytes):
        """Ways holding ``nbytes``, rounded to the nearest way."""
        return int(math.floor(nbytes / self.way_bytes + 0.5))


@dataclasses.dataclass(frozen=True)
class NF:
    """An on-demand NF: an instance, its pinned CPUs, its latency target."""

    uuid: str
    target_us: float
    cpus: tuple = ()
    # resq:profile of its flavor: names its SLOMO model, if any.
    profile: str = None
    # Weight of its own losses when NFs are merged into a class (grouping,
    # NetContainer's source-edge priority): higher shares with fewer.
    priority: float = 1.0


@dataclasses.dataclass(frozen=True)
class Reading:
    """What was measured of one NF over the last period.

    :param latency_us: the NF's latency (from its latency source).
    :param occupancy_bytes: LLC occupancy (CMT).
    :param miss_bw: memory bandwidth in bytes/s (MBM): LLC misses times
        the line size, so the NF's miss rate.
    :param load: CPU utilisation in [0, 1] if the source reports it (for
        Durner's policy); None otherwise.
    :param mpps: the rate offered to the NF if the source reports it (for
        SLOMO's sharing check); None otherwise.
    """

    latency_us: float
    occupancy_bytes: float = 0.0
    miss_bw: float = 0.0
    load: float = None
    mpps: float = None


@dataclasses.dataclass(frozen=True)
class ClassOfService:
    """One class: ``ways`` ways shared by ``members`` (NF uuids)."""

    ways: int
    members: tuple
    kind: str = 'shared'      # shared | isolated | grouped


@dataclasses.dataclass(frozen=True)
class Plan:
    classes: tuple
    unmet: tuple = ()         # NFs the lease cannot satisfy: escalate
    rounds: int = 1

    def class_of(self, uuid):
        for i, c in enumerate(self.classes):
            if uuid in c.members:
                return i
        return None

    def key(self):
        """What decides the masks; two plans with equal keys are equal."""
        return tuple((c.ways, tuple(sorted(c.members))) for c in
                     self.classes)


def shared(lease, nfs):
    """Every NF in one class over the whole lease (the starting point)."""
    members = tuple(sorted(n.uuid for n in nfs))
    return Plan((ClassOfService(lease.ways, members),))


def masks(lease, plan):
    """``[(mask, ClassOfService)]``: the plan's classes packed in the lease.

    Classes are packed from the lease's lowest way in plan order; the last
    class gets any ways left over so no leased way is idle.

    :raises PlanError: when the plan needs more classes or ways than the
        lease has, or a class is under ``min_cbm_bits``; the caller keeps
        its previous masks.
    """
    lease.check()
    classes = [c for c in plan.classes if c.members]
    if not classes:
        return []
    if len(classes) > lease.classes:
        raise PlanError('plan needs %d classes of service, the lease of '
                        'cache domain %d has %d' % (len(classes),
                                                    lease.domain_id,
                                                    lease.classes))
    total = sum(c.ways for c in classes)
    if total > lease.ways:
        raise PlanError('plan needs %d ways, the lease of cache domain %d '
                        'has %d' % (total, lease.domain_id, lease.ways))
    out, start = [], lease.first_way
    for i, c in enumerate(classes):
        ways = c.ways if i < len(classes) - 1 else lease.ways - (
            start - lease.first_way)
        if ways < max(lease.min_cbm_bits, 1):
            raise PlanError('class of %s has %d ways, fewer than '
                            'min_cbm_bits %d' % (', '.join(c.members), ways,
                                                 lease.min_cbm_bits))
        mask = cbm.validate(cbm.make(start, ways), lease.mask,
                            lease.min_cbm_bits)
        out.append((mask, dataclasses.replace(c, ways=ways)))
        start += ways
    return out
