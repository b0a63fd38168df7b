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
"""A fast repacking heuristic: drain the emptiest hosts into the others.

It gives the plan MILP a good first solution (HiGHS then improves it and
proves how far from the optimum it can be) and is the plan itself when
the solver finds nothing better in its time. Hosts are tried emptiest
first; a host is drained only if every one of its instances finds a place,
best fit, on a host that stays in use, with the same rules as the MILP:
capacity of each cache domain (cores, ways, classes of service, NUMA
memory and memory bandwidth) and classes of service of each host,
destinations that accept instances, pinned availability zones, one member
of an anti-affinity group per host, and fixed instances stay.
"""

import bisect
import collections
import functools
import heapq
import itertools


# Hosts are drained in the order of their movable load (ways) plus this
# share of their capacity (ways): among equally loaded hosts the smaller
# ones empty first, so the large ones are kept.
CAPACITY_WEIGHT = 1.0


def drain(snap, fixed, rng=None, noise=0.0, only=None, base=None):
    """``({uuid: (host, domain)}, {drained host names})``.

    :param rng: with ``noise``, a :class:`random.Random` that perturbs the
        order hosts are tried in by up to ``noise`` ways, for restarts.
    :param only: drain exactly these hosts (into the others); ``None``
        when one of them cannot be drained.
    :param base: :func:`prepare` of ``snap``, to start from.
    """
    room = _start_room(snap, base)
    capacity = {h.name: sum(d.ways for d in h.domains) for h in snap.hosts}
    targets = {}
    drained = set()
    if only is not None:
        room.keep.difference_update(only)
        for key in (k for n in only for k in room.keys_of[n]):
            room.buckets[room.free[key][1]].pop(key, None)
    forced = snap.forced_open(fixed)
    in_use = snap.hosts_in_use()
    candidates = sorted(
        (n for n in (in_use if only is None else only) if n not in forced),
        key=lambda n: (room.movable_load(n) + CAPACITY_WEIGHT * capacity[n]
                       + (rng.uniform(0, noise) if rng else 0), n))
    for name in candidates:
        room.keep.discard(name)
        for key in room.keys_of[name]:
            room.buckets[room.free[key][1]].pop(key, None)
        done = []
        for inst in sorted(room.on_host[name],
                           key=lambda i: (-i.ways, -i.cores, i.uuid)):
            key = room.place(inst, name)
            if key is None:
                break
            room.take(inst, key)
            done.append((inst, key))
        else:
            drained.add(name)
            for inst, key in done:
                targets[inst.uuid] = key
                room.on_host[key[0]].append(inst)
            room.on_host[name] = []
            continue
        if only is not None:
            return None
        # Undo: the host stays in use.
        for inst, key in done:
            room.take(inst, key, -1, home=name)
        room.keep.add(name)
        for key in room.keys_of[name]:
            if name in room.accepting:
                room.buckets[room.free[key][1]][key] = None
    return targets, drained


class _Room:
    """The room left in every domain and host while hosts drain."""

    def __init__(self, snap, at=None):
        """The room as ``snap`` has it.

        ``at``: ``{uuid: (host, domain)}`` of instances that are there
        instead.
        """
        self.snap = snap
        self.hosts = {h.name: h for h in snap.hosts}
        # (Whether a host accepts instances does not change while a plan
        # is made.)
        self.accepting = {h.name for h in snap.hosts if h.accepts}
        free = self.free = {}
        # Memory of the NUMA cells and memory bandwidth of the domains
        # that limit it and resources of each node (only those that are
        # limited).
        numa = self.numa = {}
        keys_of = self.keys_of = {}
        for h in snap.hosts:
            name, clos = h.name, h.clos
            keys = keys_of[name] = []
            for d in h.domains:
                key = (name, d.id)
                keys.append(key)
                free[key] = [d.cores, d.ways,
                             clos if d.clos is None else d.clos]
                if d.limited:
                    numa[key] = d.numa_caps()
        clos = self.clos = {h.name: h.clos for h in snap.hosts}
        res = self.res = {h.name: dict(h.resources) for h in snap.hosts}
        on_host = self.on_host = collections.defaultdict(list)
        self.where = where = {}
        for inst in snap.instances:
            key = (inst.host, inst.domain)
            if at:
                key = at.get(inst.uuid, key)
            use = free[key]
            use[0] -= inst.cores
            use[1] -= inst.ways
            use[2] -= inst.clos
            clos[key[0]] -= inst.clos
            # (numa_need() is empty without memory or bandwidth; tested inline:
            # this runs for every instance.)
            if (inst.memory_mb or inst.mem_bw_mibps) and key in numa:
                _take(numa[key], inst.numa_need())
            if inst.resources:
                held = res[key[0]]
                for rc, amount in inst.resources.items():
                    if rc in held:
                        held[rc] -= amount
            on_host[key[0]].append(inst)
            where[inst.uuid] = key[0]
        self.mates = collections.defaultdict(set)
        for g in snap.server_groups:
            if g.policy == 'anti-affinity':
                for u in g.members:
                    self.mates[u].update(x for x in g.members if x != u)
        self.inst_of = {i.uuid: i for i in snap.instances}
        self.keep = set(snap.hosts_in_use()) if not at else (
            set(where.values()) | {h.name for h in snap.hosts
                                   if h.other_load})
        # Domains by free ways, for best fit (insertion-ordered dicts: the
        # same order on every run without sorting on every placement).
        self.buckets = collections.defaultdict(dict)
        for key, (_, ways, _) in sorted(free.items()):
            if key[0] in self.keep and key[0] in self.accepting:
                self.buckets[ways][key] = None
        self.max_ways = max((d.ways for h in snap.hosts for d in h.domains),
                            default=0)
        # Best fit, but a domain left with fewer ways than the smallest
        # instance has is room lost: such fits come last.
        self.smallest = min((i.ways for i in snap.instances), default=1)
        self._levels = {}
        # Domains whose room changed, for an index kept over the room.
        self.watch = None

    def copy(self):
        """A room as this one is, to change apart from it."""
        new = object.__new__(_Room)
        new.__dict__.update(self.__dict__)
        new.free = {k: v[:] for k, v in self.free.items()}
        new.numa = {k: dict(v) for k, v in self.numa.items()}
        new.clos = dict(self.clos)
        new.res = {k: dict(v) for k, v in self.res.items()}
        new.on_host = collections.defaultdict(
            list, ((k, v[:]) for k, v in self.on_host.items()))
        new.where = dict(self.where)
        new.mates = collections.defaultdict(
            set, ((k, set(v)) for k, v in self.mates.items()))
        new.keep = set(self.keep)
        new.buckets = collections.defaultdict(
            dict, ((k, dict(v)) for k, v in self.buckets.items()))
        new.watch = None
        return new

    def rebucket(self, key, old_ways):
        self.buckets[old_ways].pop(key, None)
        if key[0] in self.keep and key[0] in self.accepting:
            self.buckets[self.free[key][1]][key] = None

    def levels(self, need):
        got = self._levels.get(need)
        if got is None:
            tight = range(need + 1, need + self.smallest)
            got = self._levels[need] = (
                [need]
                + [w for w in range(need + self.smallest,
                                    self.max_ways + 1)]
                + [w for w in tight if w <= self.max_ways])
        return got

    def place(self, inst, exclude):
        """The domain (best fit) ``inst`` goes to, not on ``exclude``."""
        buckets, fits = self.buckets, self.fits
        for ways in self.levels(inst.ways):
            for key in buckets.get(ways, ()):
                if key[0] != exclude and fits(inst, key):
                    return key
        return None

    def fits(self, inst, key):
        """Whether ``inst`` fits in domain ``key`` as things are now."""
        free, name = self.free[key], key[0]
        if name not in self.accepting:
            return False
        if free[1] < inst.ways or free[0] < inst.cores:
            return False
        if free[2] < inst.clos or self.clos[name] < inst.clos:
            return False
        if inst.az and self.hosts[name].az != inst.az:
            return False
        if ((inst.memory_mb or inst.mem_bw_mibps) and key in self.numa
                and not _room(self.numa[key], inst.numa_need())):
            return False
        if inst.resources and not _room(self.res[name], inst.resources):
            return False
        mates = self.mates.get(inst.uuid)
        if mates:
            where = self.where
            return not any(where.get(u) == name for u in mates)
        return True

    def fits_without(self, inst, key, out):
        """Whether ``inst`` would fit in domain ``key`` were ``out`` gone.

        ``out`` is in ``key``; ``inst`` is on another host. As
        :meth:`fits` after taking ``out`` out, without doing it.
        """
        free, name = self.free[key], key[0]
        if name not in self.accepting:
            return False
        if (free[1] + out.ways < inst.ways or free[0] + out.cores < inst.cores
                or free[2] + out.clos < inst.clos
                or self.clos[name] + out.clos < inst.clos):
            return False
        if inst.az and self.hosts[name].az != inst.az:
            return False
        if (inst.memory_mb or inst.mem_bw_mibps) and key in self.numa:
            back = out.numa_need()
            caps = self.numa[key]
            if not all(amount <= caps[k] + back.get(k, 0)
                       for k, amount in inst.numa_need().items()
                       if k in caps):
                return False
        if inst.resources:
            held = self.res[name]
            if not all(amount <= held[rc] + out.resources.get(rc, 0)
                       for rc, amount in inst.resources.items()
                       if rc in held):
                return False
        mates = self.mates.get(inst.uuid)
        if mates:
            where = self.where
            return not any(where.get(u) == name for u in mates
                           if u != out.uuid)
        return True

    def take(self, inst, key, sign=1, home=None):
        """Put ``inst`` in ``key`` (``sign`` -1: back on ``home``)."""
        free = self.free[key]
        old = free[1]
        free[0] -= sign * inst.cores
        free[1] -= sign * inst.ways
        free[2] -= sign * inst.clos
        self.clos[key[0]] -= sign * inst.clos
        if (inst.memory_mb or inst.mem_bw_mibps) and key in self.numa:
            _take(self.numa[key], inst.numa_need(), sign)
        if inst.resources:
            _take(self.res[key[0]], inst.resources, sign)
        self.where[inst.uuid] = key[0] if sign > 0 else home
        self.rebucket(key, old)
        if self.watch is not None:
            self.watch.add(key)

    def movable_load(self, name):
        return sum(i.ways for i in self.on_host[name])


def prepare(snap):
    """The room of ``snap`` as it is, for the heuristics to start from.

    Each of :func:`drain`, :func:`complete`, :func:`repack` and
    :func:`best_of` given it (``base``) starts from a copy instead of
    working the room out again (half a second in a cell of 10,000 hosts);
    ``snap`` must not change meanwhile.
    """
    return _Room(snap)


def _start_room(snap, base):
    """A room of ``snap`` to change: a copy of ``base`` when it is one."""
    if base is not None and base.snap is snap:
        return base.copy()
    return _Room(snap)


def _take(free, need, sign=1):
    for key, amount in need.items():
        if key in free:
            free[key] -= sign * amount


def _room(free, need):
    return all(amount <= free[key] for key, amount in need.items()
               if key in free)


def best_of(snap, fixed, deadline, lower=0, seed=0, clock=None,
            patience=100, restart_share=0.6, good_enough=None, base=None):
    """Drain with restarts, then again from the best; the best plan found.

    The first pass is the plain order; later passes perturb it, for up to
    ``restart_share`` of the time (or ``patience`` passes without a better
    plan). Then the best plan's end state is drained once more, round
    after round while that frees more hosts: instances that moved once may
    move on, and hosts that took instances may empty in their turn. Plans
    compare by hosts in use, then moves; an instance that comes back to
    its own host does not move. Stops early at ``lower`` hosts, or at
    ``good_enough`` hosts (the stop rule: proven close enough).

    :returns: ``(targets, drained, passes)``.
    """
    import random
    import time

    clock = clock or time.monotonic
    rng = random.Random(seed)
    in_use = len(snap.hosts_in_use())
    started = clock()
    restarts_until = started + restart_share * max(deadline - started, 0.0)
    best = None
    passes = 0
    while True:
        noise = 0.0 if passes == 0 else rng.choice((1.0, 2.0, 4.0, 8.0))
        targets, drained = drain(snap, fixed, rng, noise, base=base)
        passes += 1
        value = (in_use - len(drained), len(targets))
        if best is None or value < best[0]:
            best = (value, targets, drained)
            since = 0
        else:
            since += 1
        if (value[0] <= max(lower, good_enough or 0)
                or clock() >= deadline):
            return best[1], best[2], passes
        if clock() >= restarts_until or since >= patience:
            break
    targets, drained = best[1], best[2]
    while clock() < deadline and in_use - len(drained) > lower:
        state = moved(snap, targets)
        more, newly = drain(state, fixed, rng, 0.0)
        passes += 1
        if not newly:
            break
        combined = compose(snap, targets, more)
        if combined is None:
            break
        targets = combined
        drained = drained | newly
    return targets, drained, passes


def moved(snap, targets):
    """``snap`` with ``targets`` carried out (a new snapshot)."""
    import dataclasses

    from resq_nova.optimizer import snapshot as snap_mod

    insts = [dataclasses.replace(i, host=targets[i.uuid][0],
                                 domain=targets[i.uuid][1])
             if i.uuid in targets else i for i in snap.instances]
    return snap_mod.Snapshot(snap.hosts, insts, snap.server_groups,
                             snap.source, snap.taken_at)


def compose(snap, first, then):
    """Targets of ``first`` followed by ``then``, from ``snap``'s places.

    ``None`` when an instance would end on its own host in another cache
    domain (that is no live migration).
    """
    origin = {i.uuid: (i.host, i.domain) for i in snap.instances}
    out = dict(first)
    out.update(then)
    if any(t[0] == origin[u][0] and t != origin[u] for u, t in out.items()):
        return None         # back home in another domain: not a migration
    return {u: t for u, t in out.items() if t != origin[u]}


# Instances of at most this many ways may be evicted from a kept domain to
# make room for a larger one (they are the fillers that fit small holes).
EVICT_WAYS = 3
# Domains that could take an instance by evictions compared for it, at
# most (the fewest evictions of these wins): the search stays short at
# any cloud size.
LOOK_AT = 64
# Domains compared for an eviction by the bin completion, at most, when
# none leaves no room unused.
EVICT_LOOK = 16 * LOOK_AT
# Kept domains past which the completion finds evictions through an index
# of the ways each domain can offer instead of a scan by free ways (the
# scan's cost grows with domains times instances to place).
INDEX_DOMAINS = 2048
# Domains the index offers for an instance, at most: it offers those left
# with the least room first, so more only cost time (in a cell of 10,000
# hosts of four shapes, 16 rather than 64 closed as many hosts or more
# with as few moves or fewer, in two thirds of the time).
INDEX_LOOK_AT = 16


def repack(snap, fixed, keep, deadline, clock=None, base=None):
    """Close the hosts the pooled bound's solution closes; the best plan.

    ``keep`` is :func:`bound.hosts_lower_bound`'s ``{(host names): hosts
    kept open}``: per pool of hosts of one shape, the bound's solution
    says how many stay. The fullest stay; the others are drained, their
    largest instances first, each to the best-fitting domain or, when no
    hole is big enough, to a domain where evicting a few small instances
    (:data:`EVICT_WAYS`) makes room; the evicted go to other hosts'
    holes. This packs hosts of several shapes where the emptiest-first
    drain (:func:`drain`) leaves many small holes: it closes the shape
    the bound says to close, and lets large instances into full hosts.
    When not every host can close, fewer do: the emptiest of the list
    first, the count found by bisection.

    :returns: ``(targets, drained)``, or ``None`` when no host closes.
    """
    import time

    clock = clock or time.monotonic
    forced = snap.forced_open(fixed)
    in_use = snap.hosts_in_use()
    load = collections.Counter(i.host for i in snap.instances)
    close = []
    for names, count in keep.items():
        mine = sorted((n for n in names if n in in_use and n not in forced),
                      key=lambda n: (load[n], n))
        close.extend(mine[:max(len(mine) - count, 0)])
    close.sort(key=lambda n: (load[n], n))
    best = None
    lo, hi = 0, len(close)
    while lo < hi and clock() < deadline:
        mid = (lo + hi + 1) // 2
        got = _repack_once(snap, fixed, close[:mid], base)
        if got is None:
            hi = mid - 1
        else:
            best, lo = got, mid
    return best


def _repack_once(snap, fixed, close, base=None):
    """Drain exactly ``close`` with evictions; ``None`` if one is stuck."""
    room = _start_room(snap, base)
    room.keep.difference_update(close)
    for key in (k for n in close for k in room.keys_of[n]):
        room.buckets[room.free[key][1]].pop(key, None)
    origin = {i.uuid: (i.host, i.domain) for i in snap.instances}
    at = collections.defaultdict(list)      # kept domain -> evictable
    for inst in sorted(snap.instances,
                       key=lambda i: (-i.ways, -i.cores, i.uuid)):
        if (inst.host not in close and inst.uuid not in fixed
                and inst.ways <= EVICT_WAYS):
            at[inst.host, inst.domain].append(inst)
    items = sorted((i for n in close for i in room.on_host[n]),
                   key=lambda i: (-i.ways, -i.cores, i.uuid))
    # What each domain could offer at most, its free ways and all its
    # small instances': it only falls as instances arrive, so the search
    # for evictions stops at the first domain below what it needs.
    most = {key: room.free[key][1] + sum(s.ways for s in small)
            for key, small in at.items()}
    order = sorted(most, key=lambda k: (-most[k], k))
    targets, evicted = {}, []
    for inst in items:
        key = room.place(inst, inst.host)
        if key is None and inst.ways > EVICT_WAYS:
            key = _evict_for(room, inst, at, evicted, order, most)
        if key is None:
            evicted.append(inst)        # placed with the small ones
            continue
        room.take(inst, key)
        targets[inst.uuid] = key
    for inst in sorted(evicted, key=lambda i: (-i.ways, -i.cores, i.uuid)):
        key = room.place(inst, origin[inst.uuid][0])
        if key is None:
            return None
        room.take(inst, key)
        targets[inst.uuid] = key
    return targets, set(close)


def _evict_for(room, inst, at, evicted, order, most, tries=8):
    """A kept domain where evicting small instances lets ``inst`` in.

    Of the domains that could hold it once their small instances leave
    (``order``: by the most each could offer, ``most``), those needing
    the fewest evictions are tried first (at most ``tries``); the evicted
    are taken out and appended to ``evicted``. ``None`` when none will
    do.
    """
    found, ones = [], 0
    for key in order:
        if most[key] < inst.ways:
            break
        small = at[key]
        if (not small or key[0] not in room.keep
                or key[0] not in room.accepting):
            continue
        free = room.free[key]
        short_w, short_c = inst.ways - free[1], inst.cores - free[0]
        out = []
        for s in small:
            if short_w <= 0 and short_c <= 0:
                break
            out.append(s)
            short_w -= s.ways
            short_c -= s.cores
        if short_w <= 0 and short_c <= 0:
            found.append((len(out), key, out))
            ones += len(out) == 1
            if ones >= tries or len(found) >= LOOK_AT:
                break               # enough to choose from
    found.sort(key=lambda f: (f[0], f[1]))
    for _, key, out in found[:tries]:
        for s in out:
            room.take(s, key, -1, home=None)
        if room.fits(inst, key):
            for s in out:
                at[key].remove(s)
            evicted.extend(out)
            return key
        for s in out:
            room.take(s, key)
    return None


def complete(snap, fixed, keep, deadline, clock=None, base=None):
    """Close the hosts the bound closes by filling the kept domains' holes.

    Bin completion, after the minimum bin slack heuristic of Gupta and Ho
    (1999) for bin packing: the instances of the hosts to close are the
    items and the free room of every kept cache domain a bin. The large
    items go first, each to the best-fitting hole or, when none is big
    enough, to the kept domain where evicting a few smaller instances
    leaves the least room unused (the evicted join the items). Then each
    hole in turn (the largest first) takes the set of small items that
    leaves it the least slack, ways then cores; a hole the items cannot
    fill may give up one of its own small instances when the items then
    fill it better. The hosts to close are, per pool of one shape, as
    many as the bound's solution closes (``keep``), those holding the
    fewest instances. A host one of whose instances finds no place stays
    open after all, and what left it comes back; only when an evicted
    instance finds no place either are fewer hosts tried, by bisection,
    until ``deadline`` (the first pass always finishes).

    :returns: ``(targets, drained)``, or ``None`` when no host closes.
    """
    import time

    clock = clock or time.monotonic
    forced = snap.forced_open(fixed)
    in_use = snap.hosts_in_use()
    count = collections.Counter(i.host for i in snap.instances)
    close = []
    for names, n_keep in keep.items():
        mine = sorted((n for n in names if n in in_use and n not in forced),
                      key=lambda n: (count[n], n))
        close.extend(mine[:max(len(mine) - n_keep, 0)])
    close.sort(key=lambda n: (count[n], n))

    def past():
        return clock() > deadline

    # (The first pass, at the bound's hosts, is the plan of a large cell:
    # it always finishes, however late; only the retries with fewer hosts
    # stop at the deadline.)
    best = _complete_once(snap, fixed, close, base=base) if close else None
    lo, hi = 0, len(close) - 1
    while best is None and lo < hi and not past():
        mid = (lo + hi + 1) // 2
        got = _complete_once(snap, fixed, close[:mid], past, base)
        if got is None:
            hi = mid - 1
        else:
            best, lo = got, mid
    return best if best and best[1] else None


def _complete_once(snap, fixed, close, past=lambda: False, base=None):
    """``(targets, drained)`` of closing ``close``, or ``None``.

    The large instances first, each to the best-fitting hole or to a kept
    domain where evicting smaller ones leaves the least room unused (the
    evicted join the queue); then every hole, the largest first, takes
    the small instances (:data:`EVICT_WAYS`) that fill it best. A host
    one of whose instances finds no place stays open after all: what it
    still holds stays, and what left it comes back where it fits. ``None``
    when an instance evicted from a kept host finds no place, or once
    ``past()`` says the time is up.
    """
    room = _start_room(snap, base)
    room.keep.difference_update(close)
    for key in (k for n in close for k in room.keys_of[n]):
        room.buckets[room.free[key][1]].pop(key, None)
    origin = {i.uuid: (i.host, i.domain) for i in snap.instances}
    fill = _Fill(room, origin, set(close))
    small = _Smalls(snap, fixed, room, fill.closing)
    pending = []
    queue = [(-i.ways, -i.cores, i.uuid, i)
             for n in close for i in room.on_host[n]]
    heapq.heapify(queue)
    while queue:
        if past():
            return None
        inst = heapq.heappop(queue)[3]
        if origin[inst.uuid][0] in fill.reopened:
            continue
        if inst.ways <= EVICT_WAYS:
            pending.append(inst)
            continue
        out = []
        key = (room.place(inst, origin[inst.uuid][0])
               or small.evict_for(inst, out, origin[inst.uuid][0]))
        if key is None and not fill.stuck(inst):
            return None
        for s in out:
            heapq.heappush(queue, (-s.ways, -s.cores, s.uuid, s))
        if key is not None:
            fill.put(inst, key)
    items = collections.defaultdict(_Kind)      # (cores, ways) -> _Kind
    for inst in sorted(pending, key=lambda i: i.uuid):
        items[inst.cores, inst.ways].append(inst)
    holes = sorted((key for key in room.free if key[0] in room.keep
                    and key[0] in room.accepting),
                   key=lambda k: (-room.free[k][1], -room.free[k][0], k))
    for key in holes:
        if not any(items.values()):
            break
        _fill_hole(room, key, items, fill)
    _squeeze(room, holes, items, fill, small)
    for inst in sorted((i for insts in items.values() for i in insts),
                       key=lambda i: (-i.ways, -i.cores, i.uuid)):
        if origin[inst.uuid][0] in fill.reopened:
            continue
        key = room.place(inst, origin[inst.uuid][0])
        if key is None and not fill.stuck(inst):
            # An evicted instance: a host to close stays open instead,
            # and what left it comes back, freeing the holes it took.
            for victim in close[::-1]:
                if victim not in fill.reopened:
                    fill.reopen(victim)
                    key = room.place(inst, origin[inst.uuid][0])
                    if key is not None:
                        break
        if key is not None:
            fill.put(inst, key)
        elif origin[inst.uuid][0] not in fill.reopened:
            return None
    return fill.targets, fill.closing - fill.reopened


class _Fill:
    """Where :func:`_complete_once` put each instance; hosts it reopens."""

    def __init__(self, room, origin, closing):
        self.room, self.origin, self.closing = room, origin, closing
        self.targets = {}
        self.reopened = set()
        # Origin host -> uuids put elsewhere (some may be in targets no
        # more), for reopen.
        self.left = collections.defaultdict(set)

    def put(self, inst, key):
        self.room.take(inst, key)
        self.targets[inst.uuid] = key
        self.left[self.origin[inst.uuid][0]].add(inst.uuid)

    def stuck(self, inst):
        """``inst`` found no place: its host stays open, if it may.

        What already left that host comes back (its room there was never
        given up), unless a groupmate arrived there meanwhile.
        """
        home = self.origin[inst.uuid][0]
        if home not in self.closing:
            return False
        self.reopen(home)
        return True

    def reopen(self, home):
        """Keep ``home`` open after all; what left it comes back."""
        if home in self.reopened:
            return
        self.reopened.add(home)
        room = self.room
        room.keep.add(home)
        for uuid in sorted(self.left.pop(home, ())):
            key = self.targets.get(uuid)
            if key is None:
                continue
            back = room.inst_of[uuid]
            room.take(back, key, -1, home=home)
            if any(room.where.get(u) == home for u in room.mates[uuid]):
                room.take(back, key)
            else:
                del self.targets[uuid]
        for key in room.keys_of[home]:
            room.rebucket(key, room.free[key][1])


class _Smalls:
    """The small instances of kept domains, to evict for a large one."""

    def __init__(self, snap, fixed, room, closing):
        self.room = room
        self.subsets = {}
        self.at = collections.defaultdict(list)
        for inst in sorted(snap.instances, key=lambda i: (i.ways, i.uuid)):
            if inst.host not in closing and inst.uuid not in fixed:
                self.at[inst.host, inst.domain].append(inst)
        # Past INDEX_DOMAINS kept domains, an index of them by the ways
        # they can offer (free ways plus a subset of their instances'),
        # their free ways and the smallest largest instance to evict:
        # {ways: {free: {largest: {domain: None}}}}, kept up to date as
        # their room changes.
        self.index = None
        if len(self.at) > INDEX_DOMAINS:
            self.index = collections.defaultdict(
                lambda: collections.defaultdict(
                    lambda: collections.defaultdict(dict)))
            self.offers = {}
            room.watch = set(self.at)

    def _reindex(self):
        room = self.room
        for key in sorted(room.watch):
            for at in self.offers.pop(key, ()):
                self.index[at[0]][at[1]][at[2]].pop(key, None)
            free = room.free[key][1]
            offers = self.offers[key] = [
                (free + w, free, most) for w, most in self._of(key)[2]]
            for ways, _, most in offers:
                self.index[ways][free][most][key] = None
        room.watch.clear()

    def _candidates(self, inst, home):
        """Ranked evictions for ``inst``, the least room left first.

        From the index: domains with fewer free ways than ``inst`` needs
        whose instances smaller than it can make up the rest.
        """
        self._reindex()
        room, found = self.room, []
        top = max(self.index, default=0)
        for ways in range(inst.ways, top + 1):
            by_free = self.index.get(ways)
            if not by_free:
                continue
            for free in sorted((f for f in by_free if f < inst.ways),
                               reverse=True):
                for most, keys in sorted(by_free[free].items()):
                    if most >= inst.ways:
                        break
                    for key in keys:
                        if key not in room.buckets.get(free, ()):
                            continue
                        got = self._out_for(inst, key, home)
                        if got is not None:
                            found.append(got)
                            if len(found) >= INDEX_LOOK_AT:
                                return found
        return found

    def _of(self, key):
        """:func:`_subset_table` of domain ``key``'s small instances."""
        got = self.subsets.get(key)
        if got is None:
            got = self.subsets[key] = _subset_table(tuple(
                (s.ways, s.cores) for s in self.at.get(key, ())))
        return got

    def _out_for(self, inst, key, home):
        """``(rank, evicted)`` for ``inst`` in ``key``, or ``None``."""
        room = self.room
        if key[0] == home or (inst.az
                              and room.hosts[key[0]].az != inst.az):
            return None
        subsets, ws, _ = self._of(key)
        free = room.free[key]
        ways, cores = inst.ways - free[1], inst.cores - free[0]
        for at in range(bisect.bisect_left(ws, ways), len(subsets)):
            w, n, c, most, picked = subsets[at]
            if c >= cores and most < inst.ways:
                smalls = self.at[key]
                return (w - ways, n, most, key), [smalls[i] for i in picked]
        return None

    def evict(self, key, out):
        """``out`` leave domain ``key`` (taken out of the room too)."""
        for s in out:
            self.room.take(s, key, -1, home=None)
            self.at[key].remove(s)
        self.subsets.pop(key, None)
        if self.index is not None:
            self.room.watch.add(key)

    def evict_for(self, inst, evicted, home, tries=8):
        """A kept domain ``inst`` fits in once a few smaller ones leave.

        Of the domains where it can (not on ``home``), the one left with
        the least unused room, then the fewest evictions, the smallest
        evicted; the evicted are taken out and appended to ``evicted``.
        ``None`` when none will do.
        """
        room = self.room
        found, exact = [], 0
        if self.index is not None:
            free_levels = ()
            found = self._candidates(inst, home)
        else:
            free_levels = range(min(inst.ways - 1, room.max_ways), -1, -1)
        # Domains with the most room first (fewest evictions), by the
        # free-ways buckets of the best fit.
        for free_ways in free_levels:
            for key in room.buckets.get(free_ways, ()):
                got = self._out_for(inst, key, home)
                if got is None:
                    continue
                found.append(got)
                exact += got[0][0] == 0
                if (exact >= tries or len(found) >= EVICT_LOOK
                        or (exact and len(found) >= LOOK_AT)):
                    break
            else:
                continue
            break
        found.sort(key=lambda f: f[0])
        for rank, out in found[:tries]:
            key = rank[3]
            for s in out:
                room.take(s, key, -1, home=None)
            fits = room.fits(inst, key)
            for s in out:
                room.take(s, key)
            if fits:
                self.evict(key, out)
                evicted.extend(out)
                return key
        return None


@functools.lru_cache(maxsize=4096)
def _subset_table(sizes):
    """The subsets of up to four of the small instances of ``sizes``.

    ``sizes``: ``(ways, cores)`` of each, in their order. ``(subsets,
    ways of each, [(ways, smallest largest)])``: ``subsets`` are ``(ways,
    count, cores, largest ways, (positions))``, fewest ways first, then
    fewest instances, smallest largest, fewest cores; then, per ways a
    subset frees, the smallest largest instance one evicts, by ways.
    Domains holding the same small shapes share it (there are few such
    lists: small instances have few shapes).
    """
    out = []
    for n in range(1, min(len(sizes), 4) + 1):
        for picked in itertools.combinations(range(len(sizes)), n):
            w = c = most = 0
            for i in picked:
                sw, sc = sizes[i]
                w += sw
                c += sc
                if sw > most:
                    most = sw
            out.append((w, n, most, c, picked))
    out.sort(key=lambda x: x[:4])
    subsets = [(w, n, c, most, p) for w, n, most, c, p in out]
    least = {}
    for w, _, _, most, _ in subsets:
        least[w] = min(least.get(w, most), most)
    return subsets, [x[0] for x in subsets], sorted(least.items())


# Subsets tried per hole, at most (the search stops at the first one that
# fills the hole exactly).
FILL_NODES = 400


def _fill_hole(room, key, items, fill):
    """Fill domain ``key``'s hole with the items leaving the least slack."""
    free = room.free[key]
    got = _best_fill(free[0], free[1], min(room.clos[key[0]], free[2]),
                     items)
    _assign(room, key, got[1], items, fill)
    return got[0]


def _squeeze(room, holes, items, fill, small):
    """Place what no hole took, making room where a hole is too small.

    A domain with room left may give up one of its own small instances
    (it joins the items) when the items then fill it with less room left
    unused: each such exchange leaves less room unused, so it ends.
    """
    progress = True
    while progress and any(items.values()):
        progress = False
        for key in holes:
            if not any(items.values()):
                return
            free = room.free[key]
            if free[1] <= 0:
                continue
            slots = min(room.clos[key[0]], free[2])
            (ways, _), plan = _best_fill(free[0], free[1], slots, items)
            best = (free[1] - ways, None, plan)
            for own in {(o.cores, o.ways): o for o in small.at.get(key, ())
                        if o.ways <= EVICT_WAYS}.values():
                (w, _), p = _best_fill(free[0] + own.cores,
                                       free[1] + own.ways,
                                       slots + own.clos, items)
                if free[1] + own.ways - w < best[0]:
                    best = (free[1] + own.ways - w, own, p)
            if best[1] is not None:
                own = best[1]
                small.evict(key, [own])
                items[own.cores, own.ways].append(own)
            elif not ways:
                continue
            progress = _assign(room, key, best[2], items, fill) or progress


def _best_fill(cores_free, ways_free, slots, items):
    """``((ways, cores), [(kind, count)])``: the fullest fill of a hole."""
    kinds = sorted((k for k, insts in items.items() if insts
                    and k[0] <= cores_free and k[1] <= ways_free),
                   key=lambda k: (-k[1], -k[0]))
    best = [(0, 0), ()]
    counts = []
    nodes = [0]

    def walk(i, cores, ways, n):
        nodes[0] += 1
        if (ways, cores) > best[0]:
            best[0], best[1] = (ways, cores), tuple(counts)
        if ways == ways_free or i == len(kinds) or nodes[0] > FILL_NODES:
            return
        c, w = kinds[i]
        most = min(len(items[kinds[i]]), (ways_free - ways) // w,
                   (cores_free - cores) // c, slots - n)
        for m in range(most, -1, -1):
            counts.append(m)
            walk(i + 1, cores + m * c, ways + m * w, n + m)
            counts.pop()
            if best[0][0] == ways_free:
                return

    walk(0, 0, 0, 0)
    return best[0], list(zip(kinds, best[1]))


class _Kind:
    """The items of one shape: those pinned to a zone, by zone, and the rest.

    A hole is offered the items pinned to its host's zone first, then the
    others, each in the order they came; it never looks at those pinned
    elsewhere.
    """

    __slots__ = ('zones', 'rest')

    def __init__(self):
        self.zones = {}
        self.rest = []

    def append(self, inst):
        (self.zones.setdefault(inst.az, []) if inst.az
         else self.rest).append(inst)

    def __len__(self):
        return len(self.rest) + sum(len(z) for z in self.zones.values())

    def __iter__(self):
        for zone in self.zones.values():
            yield from zone
        yield from self.rest

    def lists(self, zone):
        """The lists of the items a host of ``zone`` may take."""
        mine = self.zones.get(zone) if zone else None
        return (mine, self.rest) if mine else (self.rest,)


def _assign(room, key, plan, items, fill):
    """Put ``plan``'s items in ``key`` where they fit; whether any went."""
    placed = False
    zone = room.hosts[key[0]].az
    for kind, m in plan:
        if m <= 0:
            continue
        for insts in items[kind].lists(zone):
            # The items looked at that stay in the list, then the rest
            # (no copy of the list, no search for what leaves it).
            kept, n = [], 0
            while n < len(insts) and m > 0:
                inst = insts[n]
                n += 1
                home = fill.origin[inst.uuid][0]
                if home in fill.reopened:
                    continue            # stays home
                if home != key[0] and room.fits(inst, key):
                    fill.put(inst, key)
                    m -= 1
                    placed = True
                else:
                    kept.append(inst)
            insts[:n] = kept
    return placed


def undo_moves(snap, fixed, targets, rounds=3):
    """``targets`` with moves undone where the hosts in use stay the same.

    After the plan's hosts are fixed, an instance that left a host that
    stays in use goes back to its own cache domain when it fits there
    again; or when one instance that moved into that domain can go
    elsewhere instead (back to its own domain, or the best fit on a host
    that stays in use). Each undo lowers the moves by one and opens no
    host; placement rules are checked as in :func:`drain`. Fixed
    instances never move (they are in no plan's targets).

    :returns: new targets (``{uuid: (host, domain)}``).
    """
    origin = {i.uuid: (i.host, i.domain) for i in snap.instances}
    room = _Room(snap, at=targets)
    state = _Undo(snap, room, origin, dict(targets))
    for _ in range(rounds):
        done = 0
        for uuid in sorted(state.out, key=lambda u: (
                -room.inst_of[u].ways, -room.inst_of[u].cores, u)):
            if uuid in state.out and uuid not in fixed:
                done += state.back(room.inst_of[uuid])
        if not done:
            break
    return state.out


class _Undo:
    """The end state of a plan while :func:`undo_moves` undoes moves."""

    def __init__(self, snap, room, origin, out):
        self.room, self.origin, self.out = room, origin, out
        self.load = collections.Counter(i.host for i in snap.instances)
        for uuid, key in out.items():
            self.load[origin[uuid][0]] -= 1
            self.load[key[0]] += 1
        self.other = {h.name for h in snap.hosts if h.other_load}
        self.inside = collections.defaultdict(set)
        for uuid, key in out.items():
            self.inside[key].add(uuid)
        room.keep = {n for n in room.hosts if self.is_open(n)}
        room.buckets = collections.defaultdict(dict)
        for key in sorted(room.free):
            room.rebucket(key, room.free[key][1])

    def is_open(self, name):
        return self.load[name] > 0 or name in self.other

    def _go(self, inst, src, dst):
        """Move ``inst`` in the end state from domain ``src`` to ``dst``."""
        room = self.room
        room.take(inst, src, -1, home=None)
        room.take(inst, dst)
        self.load[src[0]] -= 1
        self.load[dst[0]] += 1
        if dst[0] not in room.keep:
            room.keep.add(dst[0])
            for key in room.keys_of[dst[0]]:
                room.rebucket(key, room.free[key][1])
        self.inside[src].discard(inst.uuid)
        if dst == self.origin[inst.uuid]:
            self.out.pop(inst.uuid, None)
        else:
            self.out[inst.uuid] = dst
            self.inside[dst].add(inst.uuid)
        if not self.is_open(src[0]):
            room.keep.discard(src[0])
            for key in room.keys_of[src[0]]:
                room.rebucket(key, room.free[key][1])

    def back(self, inst):
        """Put ``inst`` back home if it fits (after one relocation)."""
        room, home, cur = self.room, self.origin[inst.uuid], \
            self.out[inst.uuid]
        if not self.is_open(home[0]) or home[0] == cur[0]:
            return 0
        # (Its room on cur, another host, does not count at home.)
        if room.fits(inst, home):
            self._go(inst, cur, home)
            return 1
        for other in sorted(self.inside[home]):
            mover = room.inst_of[other]
            if self._swap(inst, cur, home, mover):
                return 1
        return 0

    def _swap(self, inst, cur, home, mover):
        """``mover`` leaves ``home`` for ``inst``: its own or a best fit."""
        room = self.room
        if not room.fits_without(inst, home, mover):
            return False
        room.take(inst, cur, -1, home=None)
        room.take(mover, home, -1, home=None)
        ok = room.fits(inst, home)
        if ok:
            room.take(inst, home)
            own = self.origin[mover.uuid]
            dest = (own if self.is_open(own[0]) and room.fits(mover, own)
                    else None)
            if dest is None:
                # (cur's own room is counted free while inst is out.)
                dest = room.place(mover, own[0])
            room.take(inst, home, -1, home=None)
            ok = (dest is not None and dest != home and
                  room.hosts[dest[0]].cell == room.hosts[own[0]].cell)
        room.take(mover, home)
        room.take(inst, cur)
        if not ok:
            return False
        self._go(inst, cur, home)
        self._go(mover, home, dest)
        return True
