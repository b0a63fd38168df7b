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


def drain(snap, fixed, rng=None, noise=0.0, only=None):
    """``({uuid: (host, domain)}, {drained host names})``.

    :param rng: with ``noise``, a :class:`random.Random` that perturbs the
        order hosts are tried in by up to ``noise`` ways, for restarts.
    :param only: drain exactly these hosts (into the others); ``None``
        when one of them cannot be drained.
    """
    hosts = {h.name: h for h in snap.hosts}
    free = {}
    for h in snap.hosts:
        for d in h.domains:
            free[h.name, d.id] = [d.cores, d.ways,
                                  d.clos if d.clos is not None else h.clos]
    clos = {h.name: h.clos for h in snap.hosts}
    keys_of = {h.name: [(h.name, d.id) for d in h.domains]
               for h in snap.hosts}
    on_host = collections.defaultdict(list)
    for inst in snap.instances:
        free[inst.host, inst.domain][0] -= inst.cores
        free[inst.host, inst.domain][1] -= inst.ways
        free[inst.host, inst.domain][2] -= inst.clos
        clos[inst.host] -= inst.clos
        on_host[inst.host].append(inst)
    mates = collections.defaultdict(set)
    for g in snap.server_groups:
        if g.policy == 'anti-affinity':
            for u in g.members:
                mates[u].update(x for x in g.members if x != u)
    where = {i.uuid: i.host for i in snap.instances}
    in_use = snap.hosts_in_use()
    keep = set(in_use)
    # Domains by free ways, for best fit.
    buckets = collections.defaultdict(set)
    for key, (_, ways, _) in free.items():
        if key[0] in keep and hosts[key[0]].accepts:
            buckets[ways].add(key)
    max_ways = max((d.ways for h in snap.hosts for d in h.domains),
                   default=0)

    def rebucket(key, old_ways):
        buckets[old_ways].discard(key)
        if key[0] in keep and hosts[key[0]].accepts:
            buckets[free[key][1]].add(key)

    def place(inst, exclude):
        for ways in range(inst.ways, max_ways + 1):
            for key in sorted(buckets.get(ways, ())):
                name = key[0]
                if name == exclude or free[key][0] < inst.cores:
                    continue
                if min(clos[name], free[key][2]) < inst.clos:
                    continue
                if inst.az and hosts[name].az != inst.az:
                    continue
                if any(where.get(u) == name for u in mates[inst.uuid]):
                    continue
                return key
        return None

    def movable_load(name):
        return sum(i.ways for i in on_host[name])

    targets = {}
    drained = set()
    if only is not None:
        keep.difference_update(only)
        for key in (k for n in only for k in keys_of[n]):
            buckets[free[key][1]].discard(key)
    candidates = sorted(
        (n for n in (in_use if only is None else only)
         if not hosts[n].other_load
         and not any(i.uuid in fixed for i in on_host[n])),
        key=lambda n: (movable_load(n) + (rng.uniform(0, noise) if rng
                                          else 0), n))
    for name in candidates:
        keep.discard(name)
        for key in keys_of[name]:
            buckets[free[key][1]].discard(key)
        done = []
        for inst in sorted(on_host[name], key=lambda i: (-i.ways, -i.cores,
                                                         i.uuid)):
            key = place(inst, name)
            if key is None:
                break
            old = free[key][1]
            free[key][0] -= inst.cores
            free[key][1] -= inst.ways
            free[key][2] -= inst.clos
            clos[key[0]] -= inst.clos
            where[inst.uuid] = key[0]
            rebucket(key, old)
            done.append((inst, key))
        else:
            drained.add(name)
            for inst, key in done:
                targets[inst.uuid] = key
                on_host[key[0]].append(inst)
            on_host[name] = []
            continue
        if only is not None:
            return None
        # Undo: the host stays in use.
        for inst, key in done:
            old = free[key][1]
            free[key][0] += inst.cores
            free[key][1] += inst.ways
            free[key][2] += inst.clos
            clos[key[0]] += inst.clos
            where[inst.uuid] = name
            rebucket(key, old)
        keep.add(name)
        for key in keys_of[name]:
            if hosts[name].accepts:
                buckets[free[key][1]].add(key)
    return targets, drained


def best_of(snap, fixed, deadline, lower=0, seed=0, clock=None,
            patience=100):
    """Drain with restarts until ``deadline``; the best plan found.

    The first pass is the plain order; later passes perturb it. Plans
    compare by hosts in use, then moves. Stops early at ``lower`` hosts or
    after ``patience`` passes without a better plan.

    :returns: ``(targets, drained, passes)``.
    """
    import random
    import time

    clock = clock or time.monotonic
    rng = random.Random(seed)
    in_use = len(snap.hosts_in_use())
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
        if value[0] <= lower or clock() >= deadline or since >= patience:
            return best[1], best[2], passes
