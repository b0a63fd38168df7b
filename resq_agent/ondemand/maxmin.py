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
"""ResQ's max-min fair split of an on-demand lease (§5.3.2). Pure.

One round over a pool of NFs sharing ``space`` ways, with the fair share
``space / len(pool)``:

* NFs that occupy less than the fair share and either meet their target
  or miss little (memory bandwidth under ``high_miss_bw``) go together to
  one shared class sized to their summed occupancy;
* violating NFs that occupy less than the fair share but miss a lot get an
  isolated class of about the fair share each;
* the rest stay in the shared class, which keeps what is left of the
  space, and the next round runs on them.

With a sharing check (``may_share``, SLOMO's models: :mod:`.sharing`), a
violating NF of the first kind that the models predict cannot carry its
offered rate next to the other sharers is isolated as well, rather than
shared again.

Rounds stop when the pool meets every target, when a round moves no NF
(everyone left occupies at least the fair share: each already gets what
max-min fairness gives it), or when classes of service or ways run out.
When the isolated NFs need more classes than are left, they are merged
into the classes there are with a min-cost flow (:mod:`.grouping`).
"""

import dataclasses
import math

from resq_agent.ondemand import grouping
from resq_agent.ondemand import model


def violating(nfs, readings):
    """Uuids of the NFs whose latency is above their target."""
    return {n.uuid for n in nfs
            if readings[n.uuid].latency_us > n.target_us}


def plan(lease, nfs, readings, high_miss_bw, may_share=None, curves=None,
         start=None):
    """Split ``lease`` among ``nfs`` from their latest ``readings``.

    :param lease: :class:`model.Lease`.
    :param nfs: list of :class:`model.NF`.
    :param readings: ``{uuid: model.Reading}`` for every NF (checked
        readings: the caller drops sources that failed).
    :param high_miss_bw: bytes/s of memory bandwidth from which a violating
        NF counts as missing a lot.
    :param may_share: ``(nfs, readings) -> uuids`` of the NFs predicted
        not to keep up if ``nfs`` share one class; None: no prediction.
    :param curves: ``{uuid: mrc.Curve}`` miss-ratio curves for grouping
        (from profiles or past readings); an NF without one is fitted to
        its reading (:func:`.mrc.curve_for`).
    :param start: the last plan's isolated and grouped classes (uuids per
        class): where the grouping starts its search from, when it still
        fits (:func:`.grouping.group`); None: from the flow.
    :returns: :class:`model.Plan`; ``unmet`` lists violating NFs it could
        not isolate (no class of service or ways left, or a fair share
        under ``min_cbm_bits``).
    """
    lease.check()
    min_bits = max(lease.min_cbm_bits, 1)
    pool = sorted(nfs, key=lambda n: n.uuid)
    space, classes_left = lease.ways, lease.classes
    done, unmet, rounds = [], set(), 0
    while pool and classes_left > 1:
        rounds += 1
        bad = violating(pool, readings)
        if not bad:
            break
        fair = space / len(pool)
        low, iso, rest = [], [], []
        for n in pool:
            r = readings[n.uuid]
            if r.occupancy_bytes / lease.way_bytes < fair:
                if n.uuid in bad and r.miss_bw >= high_miss_bw:
                    iso.append(n)
                else:
                    low.append(n)
            else:
                rest.append(n)
        if may_share is not None and len(low) > 1:
            cannot = may_share(low, readings)
            moved = [n for n in low if n.uuid in bad and n.uuid in cannot]
            if moved:
                iso.extend(moved)
                low = [n for n in low if n not in moved]
        if not low and not iso:
            break
        iso_ways = max(int(math.floor(fair)), min_bits)
        low_want = max(lease.ways_of(sum(readings[n.uuid].occupancy_bytes
                                         for n in low)), min_bits)
        # Classes: one for the low sharers, one for the rest, one per
        # isolated group with what is left of the budget.
        iso_classes = classes_left - (1 if low else 0) - 1
        if iso and (iso_classes < 1 or len(iso) * iso_ways + min_bits + (
                min_bits if low else 0) > space):
            # No class left for them, or not even the fair share for
            # each: isolation cannot help here.
            unmet.update(n.uuid for n in iso)
            rest.extend(iso)
            iso = []
        rest_min = min_bits if rest else 0
        iso_total = len(iso) * iso_ways
        low_ways = min(low_want, space - iso_total - rest_min)
        if low and (low_ways < min_bits or classes_left < 2 + (
                1 if iso else 0)):
            rest.extend(low)
            low = []
        if not low and not iso:
            break
        groups = grouping.group(
            iso, readings, min(len(iso), iso_classes), ways_per_nf=iso_ways,
            way_bytes=lease.way_bytes, curves=curves,
            start=start) if iso else []
        for members in groups:
            kind = 'isolated' if len(members) == 1 else 'grouped'
            done.append(model.ClassOfService(
                iso_ways * len(members),
                tuple(sorted(n.uuid for n in members)), kind))
        if low:
            done.append(model.ClassOfService(
                low_ways, tuple(sorted(n.uuid for n in low))))
        space -= iso_total + (low_ways if low else 0)
        classes_left -= len(groups) + (1 if low else 0)
        pool = sorted(rest, key=lambda n: n.uuid)
    if pool:
        done.append(model.ClassOfService(
            space, tuple(sorted(n.uuid for n in pool))))
    elif done and space > 0:
        # The last class takes what no round handed out.
        done[-1] = dataclasses.replace(done[-1], ways=done[-1].ways + space)
    return model.Plan(tuple(done), tuple(sorted(unmet)), rounds)
