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
"""The agent's local scheduler for on-demand NFs: when to re-plan.

:class:`LocalScheduler` owns the plan of one lease (one cache domain) and
is called once per monitoring period with the NFs, the lease and the
checked readings. It

* starts every NF in one shared class over the whole lease, and starts
  again so whenever the lease or the set of NFs changes;
* waits ``settle_s`` after every change before believing a reading (the
  cache refills, the latency follows);
* then, per policy: ``resq`` re-plans with the max-min procedure
  (:mod:`.maxmin`) on violations, ``durner`` takes one step of
  Algorithm 1 (:mod:`.durner`), ``shared`` never splits;
* never moves an NF whose latency source failed (the caller says which
  and why): when it has a class of its own (``resq`` policy), that class
  keeps its mask and the others are planned around it; when it shares a
  class, nothing changes until its source is back;
* escalates NFs that still violate once the plan is stable (a re-plan
  gives the same classes, ``max_replans`` re-plans in a row did not help,
  or the procedure could not isolate them); each NF once until it meets
  its target again.

Every plan is turned into masks (:func:`model.masks`) before it is
adopted, so a plan the kernel would refuse is never handed out. Pure: time
comes in as an argument.

Miss-ratio curves for the grouping (:mod:`.mrc`): once a plan has settled,
every NF read that period leaves one point, its occupancy and memory
bandwidth, for the allocation it had (its class's ways and members); a
later reading under the same allocation replaces the point. Each NF keeps
its ``history_points`` most recent allocations and is forgotten when it
leaves. A re-plan hands :func:`.maxmin.plan` a curve per NF, built only if
the grouping asks for it: from the NF's profile when ``profiles`` gives its
throughput-vs-ways points, else fitted to its latest reading and the points
of its other allocations (:func:`.mrc.curve_for`). A fit is a search, so it
is kept until the NF has been read under another allocation; meanwhile the
kept shape is scaled through each latest reading, as a profile's is.
"""

import collections
from collections import abc
import dataclasses

from resq_agent.ondemand import durner
from resq_agent.ondemand import maxmin
from resq_agent.ondemand import model
from resq_agent.ondemand import mrc

POLICIES = ('resq', 'durner', 'shared')
# Allocations (distinct classes) remembered per NF for its curve.
HISTORY_POINTS = 16


@dataclasses.dataclass
class Decision:
    """What one period decided.

    :param masks: ``[(mask, ClassOfService)]`` to enforce (the previous
        ones when nothing changed).
    :param changed: the masks differ from the previous period's.
    :param escalate: ``[(uuid, reason)]`` newly unmet NFs.
    :param state: ``settling``, ``stable``, ``replanned``, ``frozen``,
        ``reset`` or ``error``.
    :param reason: why, for the log.
    """

    masks: list
    changed: bool = False
    escalate: list = dataclasses.field(default_factory=list)
    state: str = 'stable'
    reason: str = ''
    violating: tuple = ()
    failed: dict = dataclasses.field(default_factory=dict)


class LocalScheduler:

    def __init__(self, policy='resq', settle_s=10.0, high_miss_bw=1e9,
                 max_replans=12, may_share=None, profiles=None,
                 history_points=HISTORY_POINTS):
        """See the module doc.

        :param profiles: ``nf -> [(ways, Mpps)]`` or None: the NF's
            profile's throughput curve (:class:`.profiles.ProfileCurves`);
            None: curves from readings only.
        :param history_points: allocations remembered per NF.
        """
        if policy not in POLICIES:
            raise ValueError('on-demand policy %r is unknown; use one of %s'
                             % (policy, ', '.join(POLICIES)))
        if history_points < 1:
            raise ValueError('the local scheduler must remember at least '
                             'one allocation per NF, got history_points=%r'
                             % (history_points,))
        self.policy = policy
        self.settle_s = settle_s
        self.high_miss_bw = high_miss_bw
        self.max_replans = max_replans
        self.may_share = may_share
        self.lease = None
        self.nfs = ()
        self.plan = None
        self.masks = []
        self.changed_at = None
        self.replans = 0
        self.rounds = 0
        self._durner = None
        self._escalated = set()
        self._replanned_for = None   # violators of the last re-plan
        self._held = frozenset()     # violators a re-plan did not help
        self.profiles = profiles
        self.history_points = history_points
        # uuid -> {(class ways, members): (occupancy, miss bw, ways)},
        # least recently read first.
        self._history = {}
        self.curve_sources = {}      # uuid -> source of its last curve
        # uuid -> (allocations it was fitted to, curve): fitting costs a
        # search, so a curve is fitted again only when the NF has been
        # read under another allocation.
        self._fits = {}

    def update(self, lease, nfs, readings, now, failed=None):
        """One period.

        :param lease: :class:`model.Lease`.
        :param nfs: list of :class:`model.NF`.
        :param readings: ``{uuid: model.Reading}`` of the NFs whose source
            answered with a sane value.
        :param now: seconds, monotonic.
        :param failed: ``{uuid: reason}`` of NFs whose source failed.
        :returns: :class:`Decision`.
        """
        failed = dict(failed or {})
        for n in nfs:
            if n.uuid not in readings and n.uuid not in failed:
                failed[n.uuid] = 'no reading'
        self._remember(lease, nfs, readings, now, failed)
        decision = self._decide(lease, nfs, readings, now, failed)
        decision.failed = failed
        return decision

    def _decide(self, lease, nfs, readings, now, failed):
        nfs = tuple(sorted(nfs, key=lambda n: n.uuid))
        if lease != self.lease or nfs != self.nfs:
            why = ('the lease changed' if lease != self.lease
                   else 'the on-demand NFs changed')
            return self._reset(lease, nfs, now, why)
        if not nfs:
            return Decision(self.masks, state='stable', reason='no NFs')
        pinned = ()
        if failed:
            why = '; '.join('%s: %s' % item for item in sorted(
                failed.items()))
            pinned = tuple(c for c in self.plan.classes
                           if set(c.members) & set(failed))
            if self.policy != 'resq' or any(c.kind == 'shared'
                                            for c in pinned):
                # An NF we cannot read shares a class: any change of the
                # split moves it; keep everything.
                return Decision(self.masks, state='frozen', reason=why)
            # The NFs we cannot read are in classes of their own: those
            # keep their masks, the others are planned around them.
            held = {u for c in pinned for u in c.members}
            nfs = tuple(n for n in nfs if n.uuid not in held)
        if now - self.changed_at < self.settle_s:
            return Decision(self.masks, state='settling',
                            reason='%.1f s of %.1f s settling' % (
                                now - self.changed_at, self.settle_s))
        bad = maxmin.violating(nfs, readings)
        self._escalated &= bad
        if self.policy == 'shared':
            new = self.plan
        elif self.policy == 'durner':
            new = self._durner.step(readings)
        elif not bad:
            self.replans = 0
            self._replanned_for, self._held = None, frozenset()
            return Decision(self.masks, state='stable',
                            reason='every NF meets its target')
        else:
            if (self._replanned_for is not None
                    and self._replanned_for <= bad):
                # The last re-plan fixed none of the NFs it was for: the
                # lease cannot do better for them; hold until others
                # violate.
                self._held = self._held | self._replanned_for
                self._replanned_for = None
            if bad <= self._held:
                return Decision(self.masks, state='stable',
                                reason='re-planning did not help',
                                violating=tuple(sorted(bad)),
                                escalate=self._escalate(bad, now))
            new = self._replan(lease, nfs, readings, bad, pinned)
            self.rounds = new.rounds
            self._replanned_for = frozenset(bad)
        stuck = set(new.unmet)
        if new.key() != self.plan.key() and (
                self.policy != 'resq' or self.replans < self.max_replans):
            try:
                masks = model.masks(lease, new)
            except model.PlanError as exc:
                return Decision(self.masks, state='error', reason=str(exc),
                                violating=tuple(sorted(bad)))
            old = {c.members: m for m, c in self.masks}
            if any(old.get(c.members) != m for m, c in masks
                   if c.members in {p.members for p in pinned}):
                # The new split would move an NF we cannot read.
                return Decision(self.masks, state='frozen', reason=why,
                                violating=tuple(sorted(bad)))
            self.plan, self.masks = new, masks
            self.changed_at = now
            self.replans += 1
            return Decision(masks, changed=True, state='replanned',
                            reason='%d NF(s) violate their target'
                            % len(bad), violating=tuple(sorted(bad)),
                            escalate=self._escalate(stuck & bad, now))
        if self.policy == 'durner' and not self._durner.done:
            return Decision(self.masks, state='stable',
                            violating=tuple(sorted(bad)))
        return Decision(self.masks, state='stable',
                        reason='the plan is stable',
                        violating=tuple(sorted(bad)),
                        escalate=self._escalate(bad, now))

    def _replan(self, lease, nfs, readings, bad, pinned=()):
        """Max-min over the lease, keeping compliant isolated classes.

        A class of isolated (or grouped) NFs that all meet their target
        keeps its ways; the procedure runs on what is left. Re-planning
        from scratch would put such an NF back into a shared class, where
        it violates again: the plans would flap instead of converging.
        """
        # In the previous plan's order, so kept classes keep their place.
        kept = [c for c in self.plan.classes if c in pinned or (
            c.kind != 'shared' and not set(c.members) & bad)]
        rest_ways = lease.ways - sum(c.ways for c in kept)
        if kept and (rest_ways < max(lease.min_cbm_bits, 1)
                     or lease.classes - len(kept) < 1):
            kept = [c for c in self.plan.classes if c in pinned]
            rest_ways = lease.ways - sum(c.ways for c in kept)
        if rest_ways < max(lease.min_cbm_bits, 1) or (
                lease.classes - len(kept) < 1):
            return self.plan
        held = {u for c in kept for u in c.members}
        sub = dataclasses.replace(lease, ways=rest_ways,
                                  classes=lease.classes - len(kept))
        todo = [n for n in nfs if n.uuid not in held]
        # The grouping goes on from the classes it formed last time.
        start = [c.members for c in self.plan.classes
                 if c.kind != 'shared' and c not in kept]
        plan = maxmin.plan(sub, todo, readings, self.high_miss_bw,
                           self.may_share,
                           curves=self.curves(todo, readings,
                                              lease.way_bytes),
                           start=start)
        return model.Plan(tuple(kept) + plan.classes, plan.unmet,
                          plan.rounds)

    # -- miss-ratio curves --------------------------------------------------
    def _remember(self, lease, nfs, readings, now, failed):
        """Keep this period's points, if the plan in force has settled."""
        if (self.plan is None or lease != self.lease
                or tuple(sorted(n.uuid for n in nfs))
                != tuple(n.uuid for n in self.nfs)
                or now - self.changed_at < self.settle_s):
            return
        for n in nfs:
            r = readings.get(n.uuid)
            idx = self.plan.class_of(n.uuid)
            if (r is None or n.uuid in failed or idx is None
                    or not r.occupancy_bytes > 0):
                continue
            cls = self.plan.classes[idx]
            hist = self._history.setdefault(n.uuid,
                                            collections.OrderedDict())
            key = (cls.ways, cls.members)
            hist.pop(key, None)
            hist[key] = (float(r.occupancy_bytes), float(r.miss_bw),
                         cls.ways)
            while len(hist) > self.history_points:
                hist.popitem(last=False)

    def history(self, uuid):
        """``[(occupancy, miss bw, class ways)]`` of ``uuid``, oldest first."""
        return list(self._history.get(uuid, {}).values())

    def _allocation(self, uuid):
        idx = self.plan.class_of(uuid) if self.plan is not None else None
        if idx is None:
            return None
        cls = self.plan.classes[idx]
        return (cls.ways, cls.members)

    def curve(self, nf, reading, way_bytes):
        """The best :class:`.mrc.Curve` of ``nf`` now (module doc)."""
        points = self.profiles(nf) if self.profiles is not None else None
        if points:
            try:
                return mrc.curve_for(reading, way_bytes, throughput=points)
            except ValueError:
                pass        # not a shape mrc can use: the readings decide
        hist = self._history.get(nf.uuid, {})
        now_at = self._allocation(nf.uuid)
        # The points of other allocations stay as they are until the NF
        # is read under one of them again: they and where it is now
        # decide the shape.
        past = tuple((k, p) for k, p in hist.items() if k != now_at)
        if not past:
            # One allocation: the prior through the reading, cheap.
            return mrc.curve_for(reading, way_bytes)
        shape = (way_bytes, now_at, past)
        cached = self._fits.get(nf.uuid)
        if cached is None or cached[0] != shape:
            cached = (shape, mrc.curve_for(reading, way_bytes, history=[
                (o, b) for _, (o, b, _) in past]))
            self._fits[nf.uuid] = cached
        return _through(cached[1], reading)

    def curves(self, nfs, readings, way_bytes):
        """``{uuid: mrc.Curve}`` of ``nfs``, each built when asked for."""
        self.curve_sources = {}
        return _Curves(self, {n.uuid: n for n in nfs if n.uuid in readings},
                       readings, way_bytes)

    def _escalate(self, uuids, now):
        out = []
        for uuid in sorted(set(uuids) - self._escalated):
            idx = self.plan.class_of(uuid)
            cls = self.plan.classes[idx] if idx is not None else None
            out.append((uuid, 'latency above target with %s of %d ways '
                        '(%s policy)' % (
                            'an isolated class' if cls is not None and
                            len(cls.members) == 1 else 'a shared class',
                            cls.ways if cls is not None else 0,
                            self.policy)))
            self._escalated.add(uuid)
        return out

    def _reset(self, lease, nfs, now, why):
        self.lease, self.nfs = lease, nfs
        present = {n.uuid for n in nfs}
        for gone in set(self._history) - present:
            del self._history[gone]
        for gone in set(self._fits) - present:
            del self._fits[gone]
        self.changed_at = now
        self.replans = 0
        self._replanned_for, self._held = None, frozenset()
        self._escalated &= {n.uuid for n in nfs}
        if not nfs:
            self.plan, self.masks = model.Plan(()), []
            self._durner = None
            return Decision([], changed=True, state='reset', reason=why)
        try:
            plan = model.shared(lease, nfs)
            masks = model.masks(lease, plan)
            self._durner = (durner.DurnerPolicy(lease, nfs)
                            if self.policy == 'durner' else None)
        except model.PlanError as exc:
            # Keep what is enforced; the caller logs the reason.
            self.lease = None
            return Decision(self.masks, state='error', reason=str(exc))
        self.plan, self.masks = plan, masks
        return Decision(masks, changed=True, state='reset', reason=why)


def _through(curve, reading):
    """``curve`` scaled to pass through ``reading``.

    The allocations give a fitted curve its shape; the latest reading its
    scale (the traffic moves it), as a profile's curve gets it.
    """
    at = curve.miss_bw(reading.occupancy_bytes)
    if reading.occupancy_bytes <= 0 or at <= 0:
        return curve
    k = max(reading.miss_bw, 0.0) / at
    if abs(k - 1.0) < 1e-9:
        return curve
    return curve.scaled(k)


class _Curves(abc.Mapping):
    """NF curves for :func:`.maxmin.plan`, built on first access.

    Most re-plans group nobody; a curve fitted to readings costs a search
    over working sets and skews, so none is built unless asked for.
    """

    def __init__(self, sched, nfs, readings, way_bytes):
        self._sched = sched
        self._nfs = nfs
        self._readings = readings
        self._way_bytes = way_bytes
        self._built = {}

    def __getitem__(self, uuid):
        if uuid not in self._built:
            nf = self._nfs[uuid]          # KeyError: not one of ours
            c = self._sched.curve(nf, self._readings[uuid], self._way_bytes)
            self._sched.curve_sources[uuid] = c.source
            self._built[uuid] = c
        return self._built[uuid]

    def __iter__(self):
        return iter(self._nfs)

    def __len__(self):
        return len(self._nfs)
