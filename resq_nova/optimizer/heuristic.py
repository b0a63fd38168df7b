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
capacity of each cache domain and classes of service of each host,
destinations that accept instances, pinned availability zones, one member
of an anti-affinity group per host, and fixed instances stay.
"""

import collections


# Hosts are drained in the order of their movable load (ways) plus this
# share of their capacity (ways): among equally loaded hosts the smaller
# ones empty first, so the large ones are kept.
CAPACITY_WEIGHT = 1.0


def drain(snap, fixed, rng=None, noise=0.0, only=None):
    """``({uuid: (host, domain)}, {drained host names})``.

    :param rng: with ``noise``, a :class:`random.Random` that perturbs the
        order hosts are tried in by up to ``noise`` ways, for restarts.
    :param only: drain exactly these hosts (into the others); ``None``
        when one of them cannot be drained.
    """
    room = _Room(snap)
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
            if room.hosts[name].accepts:
                room.buckets[room.free[key][1]][key] = None
    return targets, drained


class _Room:
    """The room left in every domain and host while hosts drain."""

    def __init__(self, snap):
        self.hosts = {h.name: h for h in snap.hosts}
        free = self.free = {}
        for h in snap.hosts:
            for d in h.domains:
                free[h.name, d.id] = [d.cores, d.ways,
                                      d.clos if d.clos is not None
                                      else h.clos]
        self.clos = {h.name: h.clos for h in snap.hosts}
        # Memory of each NUMA cell and resources of each node (only those
        # that are limited).
        self.numa = {(h.name, d.id): dict(d.numa_caps()) for h in snap.hosts
                     for d in h.domains}
        self.res = {h.name: dict(h.resources) for h in snap.hosts}
        self.keys_of = {h.name: [(h.name, d.id) for d in h.domains]
                        for h in snap.hosts}
        self.on_host = collections.defaultdict(list)
        for inst in snap.instances:
            free[inst.host, inst.domain][0] -= inst.cores
            free[inst.host, inst.domain][1] -= inst.ways
            free[inst.host, inst.domain][2] -= inst.clos
            self.clos[inst.host] -= inst.clos
            _take(self.numa[inst.host, inst.domain], inst.numa_need())
            _take(self.res[inst.host], inst.resources)
            self.on_host[inst.host].append(inst)
        self.mates = collections.defaultdict(set)
        for g in snap.server_groups:
            if g.policy == 'anti-affinity':
                for u in g.members:
                    self.mates[u].update(x for x in g.members if x != u)
        self.where = {i.uuid: i.host for i in snap.instances}
        self.keep = set(snap.hosts_in_use())
        # Domains by free ways, for best fit (insertion-ordered dicts: the
        # same order on every run without sorting on every placement).
        self.buckets = collections.defaultdict(dict)
        for key, (_, ways, _) in sorted(free.items()):
            if key[0] in self.keep and self.hosts[key[0]].accepts:
                self.buckets[ways][key] = None
        self.max_ways = max((d.ways for h in snap.hosts for d in h.domains),
                            default=0)
        # Best fit, but a domain left with fewer ways than the smallest
        # instance has is room lost: such fits come last.
        self.smallest = min((i.ways for i in snap.instances), default=1)

    def rebucket(self, key, old_ways):
        self.buckets[old_ways].pop(key, None)
        if key[0] in self.keep and self.hosts[key[0]].accepts:
            self.buckets[self.free[key][1]][key] = None

    def levels(self, need):
        tight = range(need + 1, need + self.smallest)
        return ([need]
                + [w for w in range(need + self.smallest, self.max_ways + 1)]
                + [w for w in tight if w <= self.max_ways])

    def place(self, inst, exclude):
        """The domain (best fit) ``inst`` goes to, not on ``exclude``."""
        for ways in self.levels(inst.ways):
            for key in self.buckets.get(ways, ()):
                if key[0] != exclude and self.fits(inst, key):
                    return key
        return None

    def fits(self, inst, key):
        """Whether ``inst`` fits in domain ``key`` as things are now."""
        free, name = self.free[key], key[0]
        if not self.hosts[name].accepts:
            return False
        if free[1] < inst.ways or free[0] < inst.cores:
            return False
        if min(self.clos[name], free[2]) < inst.clos:
            return False
        if inst.az and self.hosts[name].az != inst.az:
            return False
        if not (_room(self.numa[key], inst.numa_need())
                and _room(self.res[name], inst.resources)):
            return False
        return not any(self.where.get(u) == name
                       for u in self.mates[inst.uuid])

    def take(self, inst, key, sign=1, home=None):
        """Put ``inst`` in ``key`` (``sign`` -1: back on ``home``)."""
        free = self.free[key]
        old = free[1]
        free[0] -= sign * inst.cores
        free[1] -= sign * inst.ways
        free[2] -= sign * inst.clos
        self.clos[key[0]] -= sign * inst.clos
        _take(self.numa[key], inst.numa_need(), sign)
        _take(self.res[key[0]], inst.resources, sign)
        self.where[inst.uuid] = key[0] if sign > 0 else home
        self.rebucket(key, old)

    def movable_load(self, name):
        return sum(i.ways for i in self.on_host[name])


def _take(free, need, sign=1):
    for key, amount in need.items():
        if key in free:
            free[key] -= sign * amount


def _room(free, need):
    return all(amount <= free[key] for key, amount in need.items()
               if key in free)


def best_of(snap, fixed, deadline, lower=0, seed=0, clock=None,
            patience=100, restart_share=0.6, good_enough=None):
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
        targets, drained = drain(snap, fixed, rng, noise)
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


def repack(snap, fixed, keep, deadline, clock=None):
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
        got = _repack_once(snap, fixed, close[:mid])
        if got is None:
            hi = mid - 1
        else:
            best, lo = got, mid
    return best


def _repack_once(snap, fixed, close):
    """Drain exactly ``close`` with evictions; ``None`` if one is stuck."""
    room = _Room(snap)
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
                or not room.hosts[key[0]].accepts):
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
