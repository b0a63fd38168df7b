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
"""The plan MILP: fewest hosts in use, then fewest live migrations.

Instances are interchangeable when they have the same shape: dedicated
cores, ways, classes of service, the availability zone they are pinned to
and the anti-affinity groups they belong to. The model counts them per
cache domain instead of placing each one, which keeps it linear and small
(shapes x domains integers, not instances x domains binaries):

* ``m[k, d]``: instances of shape ``k`` in domain ``d`` after the plan;
* ``dep[k, d]``: instances of shape ``k`` that leave ``d`` (at most what is
  there now); ``arr = m - cur + dep`` arrive;
* ``open[h]``: host ``h`` holds something after the plan.

Constraints: every shape keeps its count; cores and ways of a domain and
classes of service of a host hold what is placed there (and nothing on a
host that is not open), and so do the domain's NUMA memory and memory
bandwidth where they are limited (a shape's ``numa_need()``, a domain's
``numa_caps()``); instances that cannot move (not migratable, on a
host whose compute service is down, members of an affinity group) are
fixed load; nothing arrives at a disabled or down host, outside an
instance's pinned availability zone, or next to another member of its
anti-affinity group. A live migration goes to another host, so for every
shape and host, what leaves the host plus what arrives there is at most
what moves in all (the condition for pairing leavers with arrivals on other
hosts).

The objective is lexicographic and solved in two stages: first the fewest
open hosts; then, with at most that many hosts, the fewest departures.
Both stages report HiGHS's own bound. The current placement is always a
feasible answer, so a stage that finds nothing better keeps it.

This is the MILP stage of the plan (see :mod:`planner`): :class:`Milp`
is its entry point. It imports no other stage; the planner gives it the
pooled bound and the heuristic's plan, and runs the heuristic and the
moves bound between its two stages.
"""

import collections
import math
import time
import types

from oslo_log import log as logging

from resq_nova.admission import milp
from resq_nova.optimizer import common
from resq_nova.optimizer import highs

LOG = logging.getLogger(__name__)

# Kept here for the callers that name them through this module.
Result = common.Result
Hint = common.Hint
fixed_instances = common.fixed_instances
gap_pct = common.gap_pct


class PairingFailed(Exception):
    """Leavers could not be paired with arrivals on other hosts.

    ``groups`` names the anti-affinity groups that stood in the way.
    """

    def __init__(self, message, groups=()):
        super().__init__(message)
        self.groups = set(groups)


def _shape_key(inst, anti_groups):
    return (inst.cores, inst.ways, inst.clos, inst.az,
            tuple(sorted(anti_groups.get(inst.uuid, ()))),
            tuple(sorted(inst.numa_need().items())),
            tuple(sorted(inst.resources.items())))


def _fits(need, free):
    """``need`` (pairs) within ``free`` (a dict; absent is unlimited)."""
    return all(amount <= free[key] for key, amount in need if key in free)


def _cap(need, free, limit):
    """How many of ``need`` fit in ``free``, at most ``limit``."""
    for key, amount in need:
        if amount and key in free:
            limit = min(limit, free[key] // amount)
    return limit


class Milp:
    """The per-host model of one snapshot, in two stages.

    The planner builds it, runs :meth:`fewest_hosts`, gives it the
    heuristic's drain of the hosts HiGHS chose to close
    (:meth:`restart`), then runs :meth:`fewest_moves` with the moves bound.

    :raises PairingFailed: from :meth:`fewest_moves`, when an
        anti-affinity group needs its own constraints (``explicit``).
    """

    def __init__(self, snap, fixed, explicit, time_limit, started):
        pyo, highspy = milp.load_pyomo_and_highspy()
        self.stage_started = time.monotonic()
        self.snap, self.fixed, self.started = snap, fixed, started
        self.time_limit = time_limit
        self.c = _count(snap, fixed, explicit)
        self.hosts_before = len(snap.hosts_in_use())
        self.closing = None
        if self.c is None:
            return
        self.m, self.v = _variables(pyo, snap, self.c)
        _pairing_rows(pyo, snap, self.c, self.m, self.v, explicit)
        self.runner = highs.Run(self.m, highspy)
        self.build_s = time.monotonic() - self.stage_started

    def start_from(self, targets):
        """Variable values of the plan that moves ``targets``."""
        c, v = self.c, self.v
        return _start(self.m, self.snap, self.fixed, c.anti, v.kpos, c.didx,
                      c.hidx, c.forced_open, v.mindex, v.dindex, v.deps_of,
                      targets)

    def fewest_hosts(self, hint, mip_gap, first_share):
        """Stage 1: fewest hosts; a :class:`common.Result` when done.

        The LP relaxation bounds it; the heuristic's plan (``hint``) is
        the start; HiGHS's branch and bound then tries to close the gap in
        the time left. Sets :attr:`closing` to the hosts HiGHS chose to
        close when its plan is better than the heuristic's.
        """
        if self.c is None:
            return common.unchanged(self.snap, self.hosts_before, self.fixed,
                                    self.started, 'nothing movable')
        m, runner, hosts = self.m, self.runner, self.c.hosts
        deadline1 = self.stage_started + self.time_limit * first_share
        t0 = time.monotonic()
        relaxed = runner.relaxation_bound(max(deadline1 - time.monotonic(),
                                              1.0))
        lower = max(math.ceil(relaxed - 1e-6) if relaxed is not None
                    else len(self.c.forced_open), hint.lower)
        self.h_targets, passes = hint.targets, hint.passes
        start_values = self.start_from(self.h_targets)
        h_hosts = int(sum(start_values[id(m.open[hi])] for hi in m.open))
        self.h_hosts, self.h_moves = h_hosts, len(self.h_targets)
        hosts_after, stage1_start, stage1_moves = (h_hosts, start_values,
                                                   self.h_moves)
        from_solver = False
        status1 = 'heuristic (%d passes)' % passes
        if (common.gap_pct(h_hosts, lower) > mip_gap * 100.0 + 1e-9
                and time.monotonic() < deadline1 - 1.0):
            best, mip_bound, status1, values = runner.run(
                deadline1 - time.monotonic(), mip_gap, start_values)
            if mip_bound is not None:
                lower = max(lower, math.ceil(mip_bound - 1e-6))
            if best is not None and round(best) < h_hosts:
                hosts_after = int(round(best))
                stage1_start = values
                stage1_moves = int(round(sum(values[id(m.dep[v])]
                                             for v in self.v.dindex)))
                from_solver = True
                # HiGHS chose which hosts close; draining exactly those
                # moves only what must move, a better start for stage 2.
                used_now = self.v.used_now
                self.closing = [
                    hosts[hi].name for hi in m.open
                    if values.get(id(m.open[hi]), m.open[hi].value) < 0.5
                    and hosts[hi].name in used_now]
        else:
            status1 = ('optimal' if h_hosts <= lower else status1)
        self.solve_s = time.monotonic() - t0
        self.lower, self.status1 = lower, status1
        self.hosts_after, self.stage1_start = hosts_after, stage1_start
        self.stage1_moves, self.from_solver = stage1_moves, from_solver
        if hosts_after >= self.hosts_before:
            LOG.info('Plan MILP: no placement with fewer than %d hosts (%s)',
                     self.hosts_before, status1)
            result = common.unchanged(self.snap, self.hosts_before,
                                      self.fixed, self.started, status1)
            result.lower_bound = min(lower, self.hosts_before)
            result.gap_pct = common.gap_pct(self.hosts_before,
                                            result.lower_bound)
            result.build_s, result.solve_s = self.build_s, self.solve_s
            return result
        return None

    def moves_from(self, targets, hosts_after):
        """Stage 2 alone: fewest moves from the plan moving ``targets``.

        With at most ``hosts_after`` hosts in use (the plan's own), and no
        other tolerance: the moves ``{uuid: (host, domain)}`` of the best
        plan found in the time, ``targets`` when none moves fewer.
        """
        self.h_targets, self.h_moves = targets, len(targets)
        self.stage1_start = self.start_from(targets)
        self.stage1_moves = len(targets)
        self.hosts_after = self.h_hosts = hosts_after
        self.lower, self.status1, self.from_solver = 0, 'given', False
        self.solve_s = 0.0
        return self.fewest_moves(0, 0.0, 0.0).targets

    def restart(self, targets):
        """Start stage 2 from ``targets`` when they move fewer instances."""
        if targets is not None and len(targets) < self.stage1_moves:
            self.h_targets = targets
            self.stage1_start = self.start_from(targets)
            self.stage1_moves = len(targets)
            self.from_solver = False

    def fewest_moves(self, moves_floor, mip_gap, moves_gap):
        """Stage 2: with at most stage 1's hosts, fewest departures.

        ``moves_floor`` is a lower bound on them found elsewhere.
        """
        m, runner, dindex = self.m, self.runner, self.v.dindex
        stage1_moves, lower = self.stage1_moves, self.lower
        runner.objective([(m.dep[v], 1) for v in dindex],
                         cap=([m.open[hi] for hi in m.open],
                              self.hosts_after))
        t0 = time.monotonic()
        # Leave a little of the time for pairing and ordering the moves.
        deadline2 = (self.stage_started + self.time_limit
                     - max(0.5, 0.05 * self.time_limit))
        bound2 = runner.relaxation_bound(max(deadline2 - time.monotonic(),
                                             1.0))
        moves_lower = max(math.ceil(bound2 - 1e-6) if bound2 is not None
                          else 0, moves_floor)
        status2 = 'optimal' if stage1_moves <= moves_lower else 'bounded'
        best2 = None
        if (stage1_moves > moves_lower * (1.0 + moves_gap) + 1e-9
                and time.monotonic() < deadline2 - 1.0):
            best2, mip_bound2, status2, values2 = runner.run(
                deadline2 - time.monotonic(), mip_gap, self.stage1_start)
            if mip_bound2 is not None:
                moves_lower = max(moves_lower, math.ceil(mip_bound2 - 1e-6))
        solve_s = self.solve_s + time.monotonic() - t0
        if best2 is not None and round(best2) < stage1_moves:
            targets = self._pair(values2)
        elif self.from_solver:
            targets = self._pair(self.stage1_start)
        else:
            targets = self.h_targets
        moves, hosts_after = len(targets), self.hosts_after
        LOG.info('Plan MILP: %d -> %d hosts (bound %d, %s), %d moves (bound '
                 '%d, %s); heuristic %d hosts, %d moves; built in %.1fs, '
                 'solved in %.1fs', self.hosts_before, hosts_after, lower,
                 self.status1, moves, moves_lower, status2, self.h_hosts,
                 self.h_moves, self.build_s, solve_s)
        return common.Result(
            hosts_before=self.hosts_before, hosts_after=hosts_after,
            lower_bound=min(lower, hosts_after),
            gap_pct=common.gap_pct(hosts_after, lower), targets=targets,
            moves_lower_bound=min(moves_lower, moves),
            status='%s/%s' % (self.status1, status2), build_s=self.build_s,
            solve_s=solve_s, fixed=self.fixed)

    def _pair(self, values):
        c, m = self.c, self.m
        counts = {v: int(round(values[id(m.m[v])])) for v in self.v.mindex}
        return _pair(c.keys, c.doms, c.hosts, c.cur, c.members, counts,
                     self.v.mindex, c.groups_of, self.snap)


def _count(snap, fixed, explicit):
    """What the model counts: shapes, domains, fixed load.

    ``None`` when no instance can go anywhere.
    """
    anti = {}
    groups_of = {}
    for gi, g in enumerate(snap.server_groups):
        if g.policy == 'anti-affinity':
            for m in g.members:
                groups_of.setdefault(m, []).append(gi)
                if gi in explicit:
                    anti.setdefault(m, []).append(gi)

    hosts = snap.hosts
    hidx = {h.name: i for i, h in enumerate(hosts)}
    doms = [(hi, dom) for hi, h in enumerate(hosts) for dom in h.domains]
    didx = {(hosts[hi].name, dom.id): di for di, (hi, dom) in enumerate(doms)}
    fixed_dom = collections.defaultdict(lambda: [0, 0, 0])
    fixed_clos = collections.Counter()
    fixed_anti = collections.Counter()
    fixed_numa = collections.defaultdict(collections.Counter)
    fixed_res = collections.defaultdict(collections.Counter)
    forced_open = {hi for hi, h in enumerate(hosts) if h.other_load}
    cur = collections.Counter()
    members = collections.defaultdict(list)     # (k, d) -> instances
    for inst in snap.instances:
        di = didx[(inst.host, inst.domain)]
        if inst.uuid in fixed:
            fixed_dom[di][0] += inst.cores
            fixed_dom[di][1] += inst.ways
            fixed_dom[di][2] += inst.clos
            fixed_clos[hidx[inst.host]] += inst.clos
            fixed_numa[di].update(inst.numa_need())
            fixed_res[hidx[inst.host]].update(inst.resources)
            for gi in groups_of.get(inst.uuid, ()):
                fixed_anti[gi, hidx[inst.host]] += 1
            forced_open.add(hidx[inst.host])
            continue
        k = _shape_key(inst, anti)
        cur[k, di] += 1
        members[k, di].append(inst)
    keys = sorted({k for k, _ in cur}, key=str)
    total = collections.Counter()
    for (k, di), n in cur.items():
        total[k] += n

    def free(di):
        hi, dom = doms[di]
        host_clos = hosts[hi].clos - fixed_clos[hi]
        if dom.clos is not None:
            host_clos = min(host_clos, dom.clos - fixed_dom[di][2])
        return (dom.cores - fixed_dom[di][0], dom.ways - fixed_dom[di][1],
                host_clos)

    frees = [free(di) for di in range(len(doms))]
    numa_free = [{name: cap - fixed_numa[di][name]
                  for name, cap in dom.numa_caps().items()}
                 for di, (_, dom) in enumerate(doms)]
    res_free = [{rc: cap - fixed_res[hi][rc]
                 for rc, cap in h.resources.items()}
                for hi, h in enumerate(hosts)]
    index, eligible = _index(keys, doms, hosts, frees, numa_free, res_free,
                             cur)
    if not index:
        return None
    return types.SimpleNamespace(
        anti=anti, groups_of=groups_of, hosts=hosts, hidx=hidx, doms=doms,
        didx=didx, fixed_dom=fixed_dom, fixed_clos=fixed_clos,
        fixed_anti=fixed_anti, forced_open=forced_open, cur=cur,
        members=members, keys=keys, total=total, frees=frees,
        numa_free=numa_free, res_free=res_free, index=index,
        eligible=eligible)


def _index(keys, doms, hosts, frees, numa_free, res_free, cur):
    """``(index, eligible)`` of the ``m`` variables.

    The ``(k, di)`` of every variable, and those that may receive
    instances.
    """
    index = []
    eligible = set()
    for k in keys:
        cores, ways, clos, az = k[:4]
        for di, (hi, dom) in enumerate(doms):
            h = hosts[hi]
            fc, fw, fcl = frees[di]
            ok = (h.accepts and (az is None or h.az == az) and cores <= fc
                  and ways <= fw and clos <= fcl
                  and _fits(k[5], numa_free[di])
                  and _fits(k[6], res_free[hi]))
            if ok:
                eligible.add((k, di))
            if ok or cur[k, di]:
                index.append((k, di))
    return index, eligible


def _variables(pyo, snap, c):
    """The model, its variables, counts kept and capacities."""
    keys, doms, hosts, cur, total = c.keys, c.doms, c.hosts, c.cur, c.total
    frees, numa_free, res_free = c.frees, c.numa_free, c.res_free
    eligible, forced_open = c.eligible, c.forced_open
    m = pyo.ConcreteModel()
    m.open = pyo.Var(range(len(hosts)), domain=pyo.Binary)
    used_now = snap.hosts_in_use()
    for hi, h in enumerate(hosts):
        if hi in forced_open:
            m.open[hi].fix(1)
        elif h.name not in used_now and not h.accepts:
            m.open[hi].fix(0)

    def m_bounds(model, kk, di):
        k = keys[kk]
        if (k, di) not in eligible:
            return (0, cur[k, di])
        fc, fw, fcl = frees[di]
        cap = min(fc // k[0], fw // k[1], fcl // k[2] if k[2] else total[k])
        cap = _cap(k[5], numa_free[di], cap)
        cap = _cap(k[6], res_free[doms[di][0]], cap)
        return (0, min(cap, total[k]))

    kpos = {k: i for i, k in enumerate(keys)}
    mindex = [(kpos[k], di) for k, di in c.index]
    m.m = pyo.Var(mindex, domain=pyo.NonNegativeIntegers, bounds=m_bounds)
    dindex = [(kpos[k], di) for (k, di) in cur]
    m.dep = pyo.Var(dindex, domain=pyo.NonNegativeIntegers,
                    bounds=lambda model, kk, di: (0, cur[keys[kk], di]))
    quick = pyo.quicksum
    m.c = pyo.ConstraintList()
    by_dom = collections.defaultdict(list)
    by_host = collections.defaultdict(list)
    by_key = collections.defaultdict(list)
    for kk, di in mindex:
        by_dom[di].append((kk, di))
        by_host[doms[di][0]].append((kk, di))
        by_key[kk].append((kk, di))
    # Counts kept; leavers and arrivals.
    for kk, k in enumerate(keys):
        m.c.add(quick(m.m[v] for v in by_key[kk]) == total[k])
    for kk, di in dindex:
        k = keys[kk]
        if (k, di) in eligible:
            m.c.add(m.m[kk, di] + m.dep[kk, di] >= cur[k, di])
        else:
            m.c.add(m.m[kk, di] + m.dep[kk, di] == cur[k, di])
    # Capacity, and nothing on a host that is not open.
    for di, vs in by_dom.items():
        hi = doms[di][0]
        fc, fw, _ = frees[di]
        m.c.add(quick(keys[kk][0] * m.m[kk, d] for kk, d in vs)
                <= fc * m.open[hi])
        m.c.add(quick(keys[kk][1] * m.m[kk, d] for kk, d in vs)
                <= fw * m.open[hi])
        if doms[di][1].clos is not None:
            m.c.add(quick(keys[kk][2] * m.m[kk, d] for kk, d in vs)
                    <= frees[di][2] * m.open[hi])
        _resource_rows(m, quick, keys, vs, 5, numa_free[di], m.open[hi])
    for hi, vs in by_host.items():
        m.c.add(quick(keys[kk][2] * m.m[kk, d] for kk, d in vs)
                <= (hosts[hi].clos - c.fixed_clos[hi]) * m.open[hi])
        _resource_rows(m, quick, keys, vs, 6, res_free[hi], m.open[hi])
    return m, types.SimpleNamespace(kpos=kpos, mindex=mindex, dindex=dindex,
                                    used_now=used_now, by_host=by_host)


def _pairing_rows(pyo, snap, c, m, v, explicit):
    """Leavers pair with arrivals on other hosts; the hosts objective.

    Also: a closing host empties; explicit anti-affinity. Sets
    ``v.deps_of``.
    """
    keys, doms, cur = c.keys, c.doms, c.cur
    mindex, dindex = v.mindex, v.dindex
    quick = pyo.quicksum
    # (One variable per shape for what moves in all keeps these sparse.)
    deps_of = collections.defaultdict(list)
    hosts_with = collections.defaultdict(set)
    for kk, di in dindex:
        deps_of[kk].append((kk, di))
        hosts_with[kk].add(doms[di][0])
    m.leaving = pyo.Var(sorted(deps_of), domain=pyo.NonNegativeReals)
    host_vars = collections.defaultdict(list)
    for kk, di in mindex:
        host_vars[kk, doms[di][0]].append(di)
    for kk, vs in deps_of.items():
        k = keys[kk]
        m.c.add(m.leaving[kk] == quick(m.dep[x] for x in vs))
        for hi in hosts_with[kk]:
            terms = []
            for di in host_vars[kk, hi]:
                terms.append(m.m[kk, di] - cur[k, di])
                if (kk, di) in m.dep:
                    terms.append(2 * m.dep[kk, di])
            m.c.add(quick(terms) <= m.leaving[kk])
    # A host that closes sees all its movable instances leave: valid for
    # every integer solution, and it gives the moves stage a strong bound.
    deps_on_host = collections.defaultdict(list)
    for kk, di in dindex:
        deps_on_host[doms[di][0]].append((kk, di))
    for hi, vs in deps_on_host.items():
        if hi in c.forced_open:
            continue
        n_here = sum(cur[keys[kk], di] for kk, di in vs)
        m.c.add(quick(m.dep[x] for x in vs) >= n_here * (1 - m.open[hi]))
    # Anti-affinity: one member per host.
    for gi, g in enumerate(snap.server_groups):
        if g.policy != 'anti-affinity' or gi not in explicit:
            continue
        gkeys = {kk for kk, k in enumerate(keys) if gi in k[4]}
        if not gkeys:
            continue
        for hi, vs in v.by_host.items():
            terms = [m.m[x] for x in vs if x[0] in gkeys]
            if terms:
                m.c.add(quick(terms) <= 1 - c.fixed_anti[gi, hi])
    m.hosts = pyo.Objective(expr=quick(m.open[hi] for hi in m.open))
    v.deps_of = deps_of


def _resource_rows(m, quick, keys, vs, pos, free, is_open):
    """``sum(need * m) <= free * open`` for each limited resource."""
    for name, cap in free.items():
        terms = [dict(keys[kk][pos]).get(name, 0) * m.m[kk, d]
                 for kk, d in vs if dict(keys[kk][pos]).get(name)]
        if terms:
            m.c.add(quick(terms) <= cap * is_open)


def _start(m, snap, fixed, anti, kpos, didx, hidx, forced_open, mindex,
           dindex, deps_of, targets):
    """Variable values (``{id(var): value}``) of a plan's moves."""
    where = {i.uuid: (i.host, i.domain) for i in snap.instances}
    where.update(targets)
    counts = collections.Counter()
    dep = collections.Counter()
    for inst in snap.instances:
        if inst.uuid in fixed:
            continue
        k = kpos[_shape_key(inst, anti)]
        counts[k, didx[where[inst.uuid]]] += 1
        if inst.uuid in targets:
            dep[k, didx[(inst.host, inst.domain)]] += 1
    opened = {hidx[name] for name, _ in where.values()} | forced_open
    values = {id(m.open[hi]): 1 if hi in opened else 0 for hi in m.open}
    for v in mindex:
        values[id(m.m[v])] = counts[v]
    for v in dindex:
        values[id(m.dep[v])] = dep[v]
    for kk in m.leaving:
        values[id(m.leaving[kk])] = sum(dep[v] for v in deps_of[kk])
    return values


def _pair(keys, doms, hosts, cur, members, counts, mindex, groups_of,
          snap):
    """Which instance goes where: leavers to arrivals on other hosts.

    Same-shaped instances are interchangeable, so the pairing is free to
    choose which one leaves a domain and which slot it takes; it uses that
    freedom to keep members of an anti-affinity group on different hosts.
    """
    final = {i.uuid: i.host for i in snap.instances}
    mates = {}
    for g in snap.server_groups:
        if g.policy == 'anti-affinity':
            for u in g.members:
                mates.setdefault(u, set()).update(x for x in g.members
                                                  if x != u)
    targets = {}
    leaving_all = []
    per_key = []
    for kk, k in enumerate(keys):
        leavers = collections.defaultdict(list)   # host index -> instances
        slots = collections.defaultdict(list)     # host index -> domains
        for di in sorted({d for (k2, d) in cur if k2 == k}
                         | {d for (k2, d) in mindex if k2 == kk}):
            now = cur[k, di]
            after = counts.get((kk, di), 0)
            hi, dom = doms[di]
            if now > after:
                # Ordinary instances leave first, groupmates stay.
                insts = sorted(members[k, di],
                               key=lambda i: (i.uuid not in mates, i.uuid))
                leavers[hi].extend(insts[after:])
            elif after > now:
                slots[hi].extend([dom.id] * (after - now))
        if leavers:
            per_key.append((leavers, slots))
            leaving_all += [i for lv in leavers.values() for i in lv]
    for inst in leaving_all:
        final[inst.uuid] = None
    for leavers, slots in per_key:
        _derange(leavers, slots, hosts, targets, final, mates, groups_of)
    return targets


def _derange(leavers, slots, hosts, targets, final, mates, groups_of):
    """Pair every leaver with a slot on another host (largest first)."""
    def weight(hi):
        return len(leavers.get(hi, ())) + len(slots.get(hi, ()))

    def free_of_mates(inst, hi):
        name = hosts[hi].name
        return not any(final.get(u) == name for u in mates.get(inst.uuid,
                                                               ()))

    def take(src, dst):
        """A leaver of host ``src`` that may go to host ``dst``."""
        for pos in range(len(leavers[src]) - 1, -1, -1):
            inst = leavers[src][pos]
            if free_of_mates(inst, dst):
                del leavers[src][pos]
                return inst
        return None

    while any(leavers.values()):
        a = max((hi for hi in set(leavers) | set(slots) if weight(hi)),
                key=lambda hi: (weight(hi), -hi))
        if leavers.get(a):
            partners = [hi for hi, s in slots.items() if s and hi != a]
            pairs = [(a, b) for b in partners]
        else:
            partners = [hi for hi, lv in leavers.items() if lv and hi != a]
            pairs = [(b, a) for b in partners]

        def partner_weight(pair, a=a):
            return weight(pair[0] if pair[1] == a else pair[1])

        for src, dst in _heaviest_first(pairs, partner_weight):
            inst = take(src, dst)
            if inst is not None:
                dom_id = slots[dst].pop()
                targets[inst.uuid] = (hosts[dst].name, dom_id)
                final[inst.uuid] = hosts[dst].name
                break
        else:
            blocked = {g for src, _ in pairs for i in leavers[src]
                       for g in groups_of.get(i.uuid, ())}
            if not pairs:
                raise PairingFailed('no partner host for host %s'
                                    % hosts[a].name)
            raise PairingFailed('anti-affinity keeps the leavers of these '
                                'hosts apart from every free slot',
                                blocked)
    if any(slots.values()):
        raise PairingFailed('arrivals left without a leaver')


def _heaviest_first(pairs, key):
    """The heaviest pair, then (only if asked for) the rest by weight."""
    if not pairs:
        return
    best = max(pairs, key=key)
    yield best
    yield from sorted((p for p in pairs if p != best), key=key, reverse=True)
