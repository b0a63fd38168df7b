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
"""Fewer moves for a plan, a neighbourhood of hosts at a time.

Large neighbourhood search (Shaw, 1998; for reassigning a data centre's
processes to machines, Mehta, O'Sullivan and Simonis, *Comparing solution
methods for the machine reassignment problem*, CP 2012): the heuristic's
plan is kept everywhere but in a few dozen hosts linked by its moves, and
there the per-host model (the planner's ``solve``: :mod:`model`'s second
stage) finds, exactly or within its time, the fewest moves that keep at
most as many of those hosts in use. An
instance is free in the neighbourhood only when it starts and ends there;
one that arrives from outside stays where the plan puts it, one that
leaves for outside still leaves. A neighbourhood's answer replaces the
plan's there only when it moves fewer instances, so the plan never keeps
more hosts and never moves more.

A stage of the planner, after the heuristics and the MILP's stages;
like every stage it imports :mod:`common` and :mod:`snapshot` only (the
planner hands it the model as ``solve``).
"""

import collections
import dataclasses
import logging
import random
import time

from resq_nova.optimizer import common
from resq_nova.optimizer import snapshot as snap_mod

LOG = logging.getLogger(__name__)

# Hosts per neighbourhood: the per-host model of this many is built and
# solved in about a second (the gap study solves 60 to optimality).
HOSTS = 30
# Time one neighbourhood's model may take, at most (seconds).
SOLVE_SECONDS = 2.0


@dataclasses.dataclass
class Outcome:
    targets: dict
    tried: int = 0
    improved: int = 0
    saved: int = 0


def improve(snap, fixed, targets, deadline, solve, hosts=HOSTS, seed=0,
            clock=time.monotonic):
    """``targets`` with fewer moves, found until ``deadline``.

    Neighbourhoods are seeded by the closed hosts whose instances moved,
    the most first, each once.

    :param targets: ``{uuid: (host, domain)}`` of the plan's moves.
    :param solve: ``solve(sub, fixed, targets, hosts_after, seconds)``:
        the fewest moves ``{uuid: (host, domain)}`` in the snapshot
        ``sub`` from the plan moving ``targets`` there, with at most
        ``hosts_after`` hosts in use; ``None`` when it has none.
    :returns: an :class:`Outcome` whose ``targets`` keep no more hosts in
        use than the plan's and move no more instances.
    """
    out = Outcome(dict(targets))
    rng = random.Random(seed)
    tried = set()
    while clock() + SOLVE_SECONDS * 0.5 < deadline:
        area = _neighbourhood(snap, fixed, out.targets, hosts, rng, tried)
        if area is None:
            break
        tried.add(area[0])
        out.tried += 1
        got = _solve(snap, fixed, out.targets, area, solve,
                     min(SOLVE_SECONDS, deadline - clock()))
        if got is not None:
            saved, new = got
            out.targets = new
            out.improved += 1
            out.saved += saved
    LOG.debug('Neighbourhoods: %d tried, %d improved, %d moves fewer',
              out.tried, out.improved, out.saved)
    return out


def end_state(snap, targets):
    """``{uuid: (host, domain)}`` of every instance after the plan."""
    return {i.uuid: targets.get(i.uuid, (i.host, i.domain))
            for i in snap.instances}


def _neighbourhood(snap, fixed, targets, size, rng, tried):
    """``[hosts]`` around the costliest closed host not yet tried.

    The hosts its instances went to, and theirs, breadth first along the
    plan's moves; then lightly loaded hosts that stay in use (which might
    close instead). ``None`` when every closed host has been a seed.
    """
    end = end_state(snap, targets)
    inst_of = {i.uuid: i for i in snap.instances}
    links = collections.defaultdict(set)
    for uuid, key in targets.items():
        src = inst_of[uuid].host
        links[src].add(key[0])
        links[key[0]].add(src)
    load = collections.Counter(key[0] for key in end.values())
    left = collections.Counter(inst_of[u].host for u in targets)
    in_use = snap.hosts_in_use()
    closed = sorted((n for n in in_use if not load[n] and n not in tried),
                    key=lambda n: (-left[n], n))
    if not closed:
        return None
    seed = closed[0]
    area, queue = [seed], collections.deque([seed])
    seen = {seed}
    while queue and len(area) < size * 2 // 3:
        for nxt in sorted(links[queue.popleft()]):
            if nxt not in seen and len(area) < size * 2 // 3:
                seen.add(nxt)
                area.append(nxt)
                queue.append(nxt)
    cell = snap.host(seed).cell
    forced = snap.forced_open(fixed)
    light = sorted((n for n in in_use if load[n] and n not in seen
                    and n not in forced and snap.host(n).cell == cell),
                   key=lambda n: (load[n], n))[:size * 3]
    rng.shuffle(light)
    area.extend(light[:size - len(area)])
    return area


def _sub(snap, fixed, end, area):
    """The neighbourhood as a snapshot; ``(sub, free, in_use_after)``.

    Instances that start and end in ``area`` (and are not ``fixed``, and
    whose anti-affinity groupmates do too) are free, at their start;
    those that arrive from outside are pinned where they end.
    """
    inside = set(area)
    free = {i.uuid for i in snap.instances
            if i.host in inside and end[i.uuid][0] in inside
            and i.uuid not in fixed}
    for g in snap.server_groups:
        if any(m not in free for m in g.members):
            free.difference_update(g.members)
    insts = []
    for i in snap.instances:
        if i.uuid in free:
            insts.append(i)
        elif end[i.uuid][0] in inside:
            host, dom = end[i.uuid]
            insts.append(dataclasses.replace(
                i, host=host, domain=dom, migratable=False,
                reason='kept by the plan outside the neighbourhood'))
    uuids = {i.uuid for i in insts}
    groups = []
    for g in snap.server_groups:
        members = [m for m in g.members if m in uuids]
        if members:
            groups.append(snap_mod.ServerGroup(g.policy, members, g.id))
    hosts = [snap.host(n) for n in area]
    sub = snap_mod.Snapshot(hosts, insts, groups, snap.source, snap.taken_at)
    after = {end[i.uuid][0] for i in insts}
    after.update(h.name for h in hosts if h.other_load)
    return sub, free, after


def _solve(snap, fixed, targets, area, solve, seconds):
    """``(moves saved, new targets)`` in ``area``, or ``None``."""
    end = end_state(snap, targets)
    sub, free, after = _sub(snap, fixed, end, area)
    now = {u: end[u] for u in free if u in targets}
    if not now:
        return None
    got = solve(sub, common.fixed_instances(sub), now, len(after),
                max(seconds, 1.0))
    if got is None or len(got) >= len(now):
        return None
    if set(got) - free:
        LOG.warning('Neighbourhood of %s: the model moved instances it had '
                    'to keep; its answer is not used', area[0])
        return None
    open_after = {got.get(i.uuid, (i.host, i.domain))[0]
                  for i in sub.instances}
    open_after.update(h.name for h in sub.hosts if h.other_load)
    if len(open_after) > len(after):
        LOG.warning('Neighbourhood of %s: the model kept more hosts in use '
                    '(%d > %d); its answer is not used', area[0],
                    len(open_after), len(after))
        return None
    new = {u: key for u, key in targets.items() if u not in free}
    new.update(got)
    return len(now) - len(got), new
