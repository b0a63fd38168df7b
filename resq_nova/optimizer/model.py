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
host that is not open); instances that cannot move (not migratable, on a
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
"""

import collections
import dataclasses
import math
import os
import sys
import tempfile
import time

from oslo_log import log as logging

from resq_nova.admission import milp
from resq_nova.optimizer import bound
from resq_nova.optimizer import heuristic

LOG = logging.getLogger(__name__)


class PairingFailed(Exception):
    """Leavers could not be paired with arrivals on other hosts.

    ``groups`` names the anti-affinity groups that stood in the way.
    """

    def __init__(self, message, groups=()):
        super().__init__(message)
        self.groups = set(groups)


@dataclasses.dataclass
class Result:
    hosts_before: int
    hosts_after: int
    lower_bound: int
    gap_pct: float
    # uuid -> (host, domain) for the instances that move
    targets: dict
    moves_lower_bound: int
    status: str
    build_s: float
    solve_s: float
    # uuid -> reason of the instances that cannot move
    fixed: dict


def fixed_instances(snap):
    """``{uuid: reason}`` of the instances the plan must leave in place."""
    fixed = {}
    down = {h.name for h in snap.hosts if h.down}
    for inst in snap.instances:
        if not inst.migratable:
            fixed[inst.uuid] = inst.reason or 'not migratable'
        elif inst.host in down:
            fixed[inst.uuid] = ('its host %s has its compute service down'
                                % inst.host)
    for g in snap.server_groups:
        if g.policy == 'affinity':
            for m in g.members:
                fixed.setdefault(m, 'member of affinity group %s (Nova '
                                 'keeps its members on one host)'
                                 % (g.id or ','.join(g.members)))
    return fixed


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


def solve(snap, time_limit=20.0, mip_gap=0.01, first_share=0.6,
          moves_gap=0.10, full_model_max=6000):
    """Plan on ``snap``; see the module doc.

    First the cheap part: the pooled lower bound on hosts
    (:mod:`~resq_nova.optimizer.bound`) and the repacking heuristic. When
    the heuristic's plan is proven within ``mip_gap`` of the fewest hosts
    and its moves within ``moves_gap`` of the fewest such a plan needs, it
    is returned at once (the stop rule). Otherwise, up to
    ``full_model_max`` movable instances, the per-host MILP improves it in
    the time left; above that the heuristic's plan is returned with its
    proven gaps.

    Anti-affinity is added lazily in the MILP: members first count as
    ordinary instances of their shape (a relaxation, so its bounds stay
    valid) and the pairing keeps groupmates apart; only a group the pairing
    cannot keep apart gets its own shapes and one-member-per-host
    constraints, and the model is solved again with it.

    :raises resq_nova.admission.milp.SolverUnavailable: without Pyomo or HiGHS.
    """
    if time_limit is None or time_limit <= 0:
        raise ValueError('the plan time limit must be positive, got %r'
                         % time_limit)
    started = time.monotonic()
    fixed = fixed_instances(snap)
    hosts_before = len(snap.hosts_in_use())
    movable = sum(1 for i in snap.instances if i.uuid not in fixed)
    if not movable:
        return _unchanged(snap, hosts_before, fixed, started,
                          'nothing movable')
    agg, agg_status = bound.hosts_lower_bound(snap, fixed,
                                              min(0.15 * time_limit, 10.0))
    full = movable <= full_model_max
    share = first_share * 0.5 if full else 0.9
    # Without the MILP to follow, the restarts may use most of the time.
    good_enough = (math.floor(agg / (1.0 - mip_gap) + 1e-9)
                   if mip_gap < 1.0 else None)
    h_targets, drained, passes = heuristic.best_of(
        snap, fixed, started + share * time_limit, agg,
        restart_share=0.6 if full else 0.9, good_enough=good_enough)
    h_hosts = hosts_before - len(drained)
    lower = min(agg, h_hosts)
    moves_lb = bound.moves_lower_bound(snap, fixed, h_hosts) or 0
    hint = Hint(agg, h_targets, passes)
    met = (gap_pct(h_hosts, lower) <= mip_gap * 100.0 + 1e-9
           and len(h_targets) <= moves_lb * (1.0 + moves_gap) + 1e-9)
    if met or not full:
        status = ('heuristic (%d passes; pooled bound %s)%s'
                  % (passes, agg_status, '' if met else
                     '; gap not met, %d movable instances is past '
                     'full_model_max_instances' % movable))
        LOG.info('Plan: %d -> %d hosts (pooled bound %d), %d moves (bound '
                 '%d): %s', hosts_before, h_hosts, lower, len(h_targets),
                 moves_lb, status)
        if h_hosts >= hosts_before:
            result = _unchanged(snap, hosts_before, fixed, started, status)
            result.lower_bound = lower
            result.gap_pct = gap_pct(hosts_before, lower)
            return result
        return Result(hosts_before=hosts_before, hosts_after=h_hosts,
                      lower_bound=lower, gap_pct=gap_pct(h_hosts, lower),
                      targets=h_targets,
                      moves_lower_bound=min(moves_lb, len(h_targets)),
                      status=status, build_s=0.0,
                      solve_s=time.monotonic() - started, fixed=fixed)
    explicit = set()
    while True:
        left = time_limit - (time.monotonic() - started)
        try:
            return _solve(snap, max(left, 1.0), mip_gap, first_share,
                          explicit, started, hint, moves_gap)
        except PairingFailed as exc:
            new = exc.groups - explicit
            if not new:
                raise
            LOG.info('Plan MILP: anti-affinity group(s) %s need their own '
                     'constraints; solving again', sorted(new))
            explicit |= new


@dataclasses.dataclass
class Hint:
    """What the cheap part found: the pooled bound and the heuristic plan."""
    lower: int
    targets: dict
    passes: int


def _solve(snap, time_limit, mip_gap, first_share, explicit, started,
           hint, moves_gap):
    pyo, highspy = milp.load_pyomo_and_highspy()
    stage_started = time.monotonic()
    fixed = fixed_instances(snap)
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
    hosts_before = len(snap.hosts_in_use())
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
    index = []          # (k, di) of every m variable
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
    if not index:
        return _unchanged(snap, hosts_before, fixed, started, 'nothing '
                          'movable')

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
    mindex = [(kpos[k], di) for k, di in index]
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
                <= (hosts[hi].clos - fixed_clos[hi]) * m.open[hi])
        _resource_rows(m, quick, keys, vs, 6, res_free[hi], m.open[hi])
    # Leavers pair with arrivals on other hosts.
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
        m.c.add(m.leaving[kk] == quick(m.dep[v] for v in vs))
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
        if hi in forced_open:
            continue
        n_here = sum(cur[keys[kk], di] for kk, di in vs)
        m.c.add(quick(m.dep[v] for v in vs) >= n_here * (1 - m.open[hi]))
    # Anti-affinity: one member per host.
    for gi, g in enumerate(snap.server_groups):
        if g.policy != 'anti-affinity' or gi not in explicit:
            continue
        gkeys = {kk for kk, k in enumerate(keys) if gi in k[4]}
        if not gkeys:
            continue
        for hi, vs in by_host.items():
            terms = [m.m[v] for v in vs if v[0] in gkeys]
            if terms:
                m.c.add(quick(terms) <= 1 - fixed_anti[gi, hi])
    m.hosts = pyo.Objective(expr=quick(m.open[hi] for hi in m.open))

    runner = _HighsRun(m, highspy)
    build_s = time.monotonic() - stage_started
    deadline1 = stage_started + time_limit * first_share
    t0 = time.monotonic()

    # Stage 1: fewest hosts. The LP relaxation bounds it; the repacking
    # heuristic (with restarts) gives a plan fast; HiGHS's branch and bound
    # then tries to close the gap in the time left.
    relaxed = runner.relaxation_bound(max(deadline1 - time.monotonic(),
                                          1.0))
    lower = max(math.ceil(relaxed - 1e-6) if relaxed is not None
                else len(forced_open), hint.lower)
    h_targets, passes = hint.targets, hint.passes
    start_values = _start(m, snap, fixed, anti, kpos, didx, hidx,
                          forced_open, mindex, dindex, deps_of, h_targets)
    h_hosts = int(sum(start_values[id(m.open[hi])] for hi in m.open))
    h_moves = len(h_targets)
    hosts_after, stage1_start, stage1_moves = h_hosts, start_values, h_moves
    from_solver = False
    status1 = 'heuristic (%d passes)' % passes
    if (gap_pct(h_hosts, lower) > mip_gap * 100.0 + 1e-9
            and time.monotonic() < deadline1 - 1.0):
        best, mip_bound, status1, values = runner.run(
            deadline1 - time.monotonic(), mip_gap, start_values)
        if mip_bound is not None:
            lower = max(lower, math.ceil(mip_bound - 1e-6))
        if best is not None and round(best) < h_hosts:
            hosts_after = int(round(best))
            stage1_start = values
            stage1_moves = int(round(sum(values[id(m.dep[v])]
                                         for v in dindex)))
            from_solver = True
            # HiGHS chose which hosts close; draining exactly those moves
            # only what must move, a better start for the moves stage.
            closing = [hosts[hi].name for hi in m.open
                       if values.get(id(m.open[hi]), m.open[hi].value) < 0.5
                       and hosts[hi].name in used_now]
            drained = heuristic.drain(snap, fixed, only=closing)
            if drained is not None and len(drained[0]) < stage1_moves:
                h_targets = drained[0]
                stage1_start = _start(m, snap, fixed, anti, kpos, didx,
                                      hidx, forced_open, mindex, dindex,
                                      deps_of, h_targets)
                stage1_moves = len(h_targets)
                from_solver = False
    else:
        status1 = ('optimal' if h_hosts <= lower else status1)
    solve_s = time.monotonic() - t0
    if hosts_after >= hosts_before:
        LOG.info('Plan MILP: no placement with fewer than %d hosts (%s)',
                 hosts_before, status1)
        result = _unchanged(snap, hosts_before, fixed, started, status1)
        result.lower_bound = min(lower, hosts_before)
        result.gap_pct = gap_pct(hosts_before, result.lower_bound)
        result.build_s, result.solve_s = build_s, solve_s
        return result

    # Stage 2: with at most that many hosts, fewest departures.
    runner.objective([(m.dep[v], 1) for v in dindex],
                     cap=([m.open[hi] for hi in m.open], hosts_after))
    t0 = time.monotonic()
    # Leave a little of the time for pairing and ordering the moves.
    deadline2 = stage_started + time_limit - max(0.5, 0.05 * time_limit)
    bound2 = runner.relaxation_bound(max(deadline2 - time.monotonic(), 1.0))
    moves_lower = max(math.ceil(bound2 - 1e-6) if bound2 is not None
                      else 0,
                      bound.moves_lower_bound(snap, fixed, hosts_after) or 0)
    status2 = 'optimal' if stage1_moves <= moves_lower else 'bounded'
    best2 = None
    if (stage1_moves > moves_lower * (1.0 + moves_gap) + 1e-9
            and time.monotonic() < deadline2 - 1.0):
        best2, mip_bound2, status2, values2 = runner.run(
            deadline2 - time.monotonic(), mip_gap, stage1_start)
        if mip_bound2 is not None:
            moves_lower = max(moves_lower, math.ceil(mip_bound2 - 1e-6))
    solve_s += time.monotonic() - t0
    if best2 is not None and round(best2) < stage1_moves:
        counts = {v: int(round(values2[id(m.m[v])])) for v in mindex}
        targets = _pair(keys, doms, hosts, cur, members, counts, mindex,
                        groups_of, snap)
    elif from_solver:
        counts = {v: int(round(stage1_start[id(m.m[v])])) for v in mindex}
        targets = _pair(keys, doms, hosts, cur, members, counts, mindex,
                        groups_of, snap)
    else:
        targets = h_targets
    moves = len(targets)
    LOG.info('Plan MILP: %d -> %d hosts (bound %d, %s), %d moves (bound '
             '%d, %s); heuristic %d hosts, %d moves; built in %.1fs, solved '
             'in %.1fs', hosts_before, hosts_after, lower, status1, moves,
             moves_lower, status2, h_hosts, h_moves, build_s, solve_s)
    return Result(hosts_before=hosts_before, hosts_after=hosts_after,
                  lower_bound=min(lower, hosts_after),
                  gap_pct=gap_pct(hosts_after, lower), targets=targets,
                  moves_lower_bound=min(moves_lower, moves),
                  status='%s/%s' % (status1, status2), build_s=build_s,
                  solve_s=solve_s, fixed=fixed)


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


class _HighsRun:
    """HiGHS on a Pyomo model, with a MIP start and a second objective.

    Pyomo writes the model as an LP file that HiGHS reads, which is much
    faster than Pyomo's in-memory HiGHS interface at tens of thousands of
    variables, and lets us give HiGHS our own first solution (that
    interface loaded the start back instead of HiGHS's solution with
    highspy 1.16).
    """

    def __init__(self, model, highspy):
        self._highspy = highspy
        with tempfile.TemporaryDirectory(prefix='resq-plan-') as tmp:
            path = os.path.join(tmp, 'plan.lp')
            _, smap_id = model.write(
                path, io_options={'symbolic_solver_labels': False})
            smap = model.solutions.symbol_map[smap_id]
            # The model lives in an instance that never runs; each run gets
            # its own (see _fresh).
            self.model = _new_highs(highspy)
            self.model.readModel(path)
        self.h = None
        # HiGHS's own time limit is not checked everywhere (its dual simplex
        # at the root of a large model overran it threefold): interrupt it
        # from its callbacks at our deadline as well.
        self._deadline = None
        lp = self.model.getLp()
        self.lower = list(lp.col_lower_)
        self.cols = [smap.bySymbol.get(n) for n in lp.col_names_]
        self.col_of = {id(v): i for i, v in enumerate(self.cols)
                       if v is not None}

    def objective(self, costs, cap=None):
        """Replace the objective with ``[(var, cost)]``.

        ``cap``, ``(vars, n)``, adds the row ``sum(vars) <= n``.
        """
        n = len(self.cols)
        self.model.changeColsCost(n, list(range(n)), [0.0] * n)
        pairs = [(self.col_of[id(v)], float(c)) for v, c in costs
                 if id(v) in self.col_of]
        self.model.changeColsCost(len(pairs), [i for i, _ in pairs],
                                  [c for _, c in pairs])
        if cap is not None:
            cols = [self.col_of[id(v)] for v in cap[0]
                    if id(v) in self.col_of]
            fixed_ones = sum(1 for v in cap[0] if id(v) not in self.col_of
                             and v.value)
            self.model.addRow(-self._highspy.kHighsInf,
                              cap[1] - fixed_ones, len(cols), cols,
                              [1.0] * len(cols))

    def _watch(self, h):
        for event in (h.cbSimplexInterrupt, h.cbIpmInterrupt,
                      h.cbMipInterrupt):
            event += self._interrupt

    def _fresh(self, interruptible):
        """A new HiGHS on the model, for one run.

        The model itself lives in an instance that never runs: with
        highspy 1.16 a run after one we interrupted stopped at once, and
        our interrupt callbacks cut the LP relaxation short; each run gets
        its own instance, with the callbacks only for branch and bound.
        """
        h = _new_highs(self._highspy)
        h.passModel(self.model.getLp())
        if interruptible:
            self._watch(h)
        self.h = h

    def _interrupt(self, event):
        if self._deadline is not None and time.monotonic() > self._deadline:
            event.interrupt()

    def relaxation_bound(self, time_limit):
        """The LP relaxation's optimum: a lower bound HiGHS proves."""
        self._fresh(interruptible=False)
        self.h.setOptionValue('time_limit', float(time_limit))
        self._deadline = time.monotonic() + time_limit
        self.h.setOptionValue('solve_relaxation', True)
        self.h.setOptionValue('solver', 'ipm')
        try:
            self.h.run()
            ok = (self.h.getModelStatus()
                  == self._highspy.HighsModelStatus.kOptimal)
            value = self.h.getInfo().objective_function_value
        finally:
            self.h.setOptionValue('solve_relaxation', False)
            self.h.setOptionValue('solver', 'choose')
        return value if ok else None

    def run(self, time_limit, mip_gap, start):
        """Solve from ``start`` (``{id(var): value}``).

        :returns: ``(best, bound, status, {id(var): value})``; ``best`` is
            None when HiGHS found no solution.
        """
        self._fresh(interruptible=True)
        self.h.setOptionValue('time_limit', float(time_limit))
        self._deadline = time.monotonic() + time_limit
        self.h.setOptionValue('mip_rel_gap', float(mip_gap))
        if start:
            sol = self._highspy.HighsSolution()
            # Columns the start does not name (the LP writer's constant
            # column) take their lower bound.
            sol.col_value = [float(start.get(id(v), low))
                             for v, low in zip(self.cols, self.lower)]
            sol.value_valid = True
            self.h.setSolution(sol)
        self.h.run()
        status = self.h.modelStatusToString(self.h.getModelStatus())
        info = self.h.getInfo()
        sol = self.h.getSolution()
        if not sol.value_valid or info.primal_solution_status == 0:
            return None, _finite(info.mip_dual_bound), status, {}
        col_value = list(sol.col_value)     # one copy, not one per column
        values = {id(v): x for v, x in zip(self.cols, col_value)
                  if v is not None}
        return (info.objective_function_value, _finite(info.mip_dual_bound),
                status, values)


def _new_highs(highspy):
    """A HiGHS instance, without the banner it prints on standard output.

    HiGHS writes its copyright banner from C++ when the first instance is
    made; commands print their results on standard output.
    """
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, 'w') as null:
            os.dup2(null.fileno(), 1)
            h = highspy.Highs()
            h.setOptionValue('output_flag', False)
    finally:
        os.dup2(saved, 1)
        os.close(saved)
    return h


def _finite(value):
    return value if value is not None and math.isfinite(value) else None


def gap_pct(value, lower):
    """How far ``value`` may be above the proven ``lower``, in percent."""
    return (value - lower) / value * 100.0 if value else 0.0


def _unchanged(snap, hosts_before, fixed, started, status):
    return Result(hosts_before=hosts_before, hosts_after=hosts_before,
                  lower_bound=0, gap_pct=0.0, targets={},
                  moves_lower_bound=0, status=status,
                  build_s=time.monotonic() - started, solve_s=0.0,
                  fixed=fixed)


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
