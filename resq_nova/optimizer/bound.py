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
"""Lower bounds that stay cheap at any size: hosts pooled by shape.

The per-host plan MILP has a row per host and a column per instance shape
and cache domain; at 10,000 hosts its LP relaxation alone takes minutes.
These bounds pool instead, as the evaluation's pattern MILP pools servers:

* **hosts**: hosts of one shape (the same cache domains, classes of
  service, node resources, zone, and whether they accept instances) form
  a pool with an integer count of open hosts; hosts that must stay open
  (other load, or an instance that cannot move) form one pool whose free
  capacity is summed. Instance shapes are counted per pool against the
  pool's capacity in every dimension, at most one of a shape per host than
  fits in its domains, and big instances at most one per domain. Every
  real plan is a solution of this model (it only forgets which host of a
  pool and which domain of a host), so its optimum, or HiGHS's bound on
  it, is a proven lower bound on the hosts any plan needs. Anti-affinity
  is left out, which only weakens it.
* **moves**: a plan that leaves ``after`` hosts in use closes at least
  ``before - after`` of the hosts in use now, and every instance of a
  closed host moves: the fewest instances on that many closable hosts is
  a lower bound on its live migrations; the pooled model refines it per
  pool (:func:`pooled_moves_bound`), and a Lagrangian relaxation by cache
  domain (:func:`lagrangian_moves_bound`) adds the evictions that small
  holes force on domains that stay.
"""

import collections
import functools
import math
import time

import numpy

from oslo_log import log as logging

from resq_nova.admission import milp
from resq_nova.optimizer import highs

LOG = logging.getLogger(__name__)

FORCED = ('forced-open',)


def _host_shape(host):
    doms = tuple(sorted((d.cores, d.ways, d.clos, d.memory_mb,
                         d.hugepages_mb, d.mem_bw_mibps)
                        for d in host.domains))
    return (doms, host.clos, tuple(sorted(host.resources.items())),
            host.az, host.accepts)


def _inst_shape(inst, memo=None):
    """The instance's shape; ``memo``, a dict, remembers them by fields."""
    if memo is None:
        return (inst.cores, inst.ways, inst.clos, inst.az,
                tuple(sorted(inst.numa_need().items())),
                tuple(sorted(inst.resources.items())))
    key = (inst.cores, inst.ways, inst.clos, inst.az, inst.memory_mb,
           inst.hugepages, inst.mem_bw_mibps, tuple(inst.resources.items()))
    got = memo.get(key)
    if got is None:
        got = memo[key] = _inst_shape(inst)
    return got


def _per_domain(kshape, dom):
    """How many of instance shape ``kshape`` one domain ``dom`` holds."""
    cores, ways, clos, _, numa, _ = kshape
    cores_cap, ways_cap, clos_cap, mem, huge, bw = dom
    n = min(cores_cap // cores, ways_cap // ways)
    if clos and clos_cap is not None:
        n = min(n, clos_cap // clos)
    caps = {'memory_mb': mem, 'hugepages_mb': huge, 'mem_bw_mibps': bw}
    for key, amount in numa:
        if amount and caps.get(key) is not None:
            n = min(n, caps[key] // amount)
    return max(n, 0)


def _dims(kshape):
    """``{dimension: amount}`` of one instance of a shape."""
    cores, ways, clos, _, numa, res = kshape
    dims = {'cores': cores, 'ways': ways, 'clos': clos}
    dims.update(('numa:' + k, v) for k, v in numa)
    dims.update(('rc:' + k, v) for k, v in res)
    return dims


def _host_caps(shape):
    """``{dimension: capacity}`` of one host of a pool shape."""
    doms, clos, res, _, _ = shape
    caps = {'cores': sum(d[0] for d in doms),
            'ways': sum(d[1] for d in doms), 'clos': clos}
    dom_clos = [d[2] for d in doms]
    if all(c is not None for c in dom_clos):
        caps['clos'] = min(clos, sum(dom_clos))
    for pos, key in ((3, 'numa:memory_mb'), (4, 'numa:hugepages_mb'),
                     (5, 'numa:mem_bw_mibps')):
        if all(d[pos] is not None for d in doms):
            caps[key] = sum(d[pos] for d in doms)
    caps.update(('rc:' + k, v) for k, v in res)
    return caps


def pools(snap, fixed):
    """``(pools, forced, demand, stay)`` of the pooled model.

    ``pools``: ``{shape: [host names]}`` of hosts a plan may close;
    ``forced``: hosts that stay open; ``demand``: ``Counter`` of movable
    instance shapes; ``stay``: ``{shape: Counter(kshape)}`` of what the
    movable instances on hosts that accept nothing hold (they may stay, no
    more may come).
    """
    forced = snap.forced_open(fixed)
    by_pool = collections.defaultdict(list)
    for h in snap.hosts:
        if h.name not in forced:
            by_pool[_host_shape(h)].append(h.name)
    demand = collections.Counter()
    stay = collections.defaultdict(collections.Counter)
    host_of = {h.name: h for h in snap.hosts}
    memo = {}
    for inst in snap.instances:
        if inst.uuid in fixed:
            continue
        k = _inst_shape(inst, memo)
        demand[k] += 1
        h = host_of[inst.host]
        if inst.host not in forced and not h.accepts:
            stay[_host_shape(h)][k] += 1
    return by_pool, forced, demand, stay


def hosts_lower_bound(snap, fixed, time_limit=10.0, keep=None, cache=None,
                      milp=True):
    """Proven fewest hosts any plan of ``snap`` uses (see the module doc).

    The LP relaxation of the pooled model first (fast at any size, and
    within a host or so of its optimum: the pattern rows make it a
    Gilmore-Gomory relaxation), then the MILP in the time left; the bound
    is the better of the two, so a MILP stopped by the time limit still
    leaves the LP's bound rather than whatever its search had proven.
    Without ``milp``, the LP relaxation alone (its solution rounded up
    fills ``keep``). ``cache``, a dict, keeps the pooled model's parts for
    another bound of the same snapshot (this one with the MILP, or
    :func:`moves_lower_bound`).

    :returns: ``(bound, status)``.
    """
    started = time.monotonic()
    pooled = _pooled(snap, fixed, cache)
    by_pool, forced, demand, stay = pooled[:4]
    if not demand:
        return len(forced), 'nothing movable'
    highspy = _highspy()
    built = _build(snap, fixed, highspy, pooled)
    if built is None:
        return len(snap.hosts_in_use()), 'an instance shape fits nowhere'
    h, opened = built
    lp_value, lp_status = _relaxation(h, highspy, started, time_limit)
    lp_x = list(h.getSolution().col_value) if lp_value is not None else None
    if lp_status == 'infeasible':
        # The current placement is a solution: only a bug gets here.
        LOG.warning('Aggregated plan bound found no solution; using the '
                    'forced-open hosts as the bound')
        return len(forced), 'infeasible (a bug: the placement is a solution)'
    if not milp:
        if keep is not None and lp_x is not None:
            keep.update(_kept(None, highspy, opened, by_pool, lp_x, None))
        return (len(forced) + math.ceil((lp_value or 0.0) - 1e-6),
                'LP relaxation bound' if lp_value is not None else lp_status)
    h.setOptionValue('solve_relaxation', False)
    h.setOptionValue('time_limit', float(max(
        time_limit - (time.monotonic() - started), 0.5)))
    h.run()
    status = h.modelStatusToString(h.getModelStatus())
    value = h.getInfo().mip_dual_bound
    if value is None or not math.isfinite(value):
        value = 0.0
    if h.getModelStatus() == highspy.HighsModelStatus.kInfeasible:
        value = 0.0
    if lp_value is not None and math.ceil(lp_value - 1e-6) > math.ceil(
            value - 1e-6):
        status = '%s; LP relaxation bound' % status
        value = lp_value
    if keep is not None:
        keep.update(_kept(h, highspy, opened, by_pool, lp_x, value))
    bound = len(forced) + math.ceil(value - 1e-6)
    LOG.debug('Aggregated host bound %d (%d pools, %d shapes, %s, %.2fs)',
              bound, len(opened), len(demand), status,
              time.monotonic() - started)
    return bound, status


def _pooled(snap, fixed, cache=None):
    """:func:`pools` and :func:`_forced_pool` of ``snap``, kept in ``cache``.

    ``(pools, forced, demand, stay, forced pool)``.
    """
    if cache is not None and 'pooled' in cache:
        return cache['pooled']
    by_pool, forced, demand, stay = pools(snap, fixed)
    got = (by_pool, forced, demand, stay,
           _forced_pool(snap, fixed, forced) if demand else None)
    if cache is not None:
        cache['pooled'] = got
    return got


def _build(snap, fixed, highspy, pooled):
    """``(highs, {pool shape: open hosts var})``: the pooled model.

    The objective counts the open hosts. ``None`` when an instance shape
    fits nowhere. ``pooled``: :func:`_pooled`'s.
    """
    by_pool, forced, demand, stay, fp = pooled
    h = highs.new_highs(highspy)
    integer = highspy.HighsVarType.kInteger
    cols, opened = _columns(h, integer, snap, by_pool, forced, demand, stay,
                            fp)
    for k, n in demand.items():
        vs = [v for (kk, _), v in cols.items() if kk == k]
        if not vs:
            return None
        h.addConstr(sum(vs) == n)
    _pool_rows(h, integer, cols, opened, fp)
    return h, opened


def _kept(h, highspy, opened, by_pool, lp_x, value):
    """``{(host names): hosts kept open}`` of the model's solution.

    The MILP's solution when it has one within 1% (and a host) of the
    bound ``value``; else the LP relaxation's, rounded up (a MILP stopped
    early may hold a poor solution, such as every host open); ``h`` None:
    the LP relaxation's.
    """
    if h is None:
        return {tuple(by_pool[shape]): min(math.ceil(lp_x[var.index] - 1e-6),
                                           len(by_pool[shape]))
                for shape, var in opened.items()}
    info = h.getInfo()
    close_enough = (info.objective_function_value
                    <= value * 1.01 + 1.0 + 1e-6)
    if (info.primal_solution_status
            == highspy.SolutionStatus.kSolutionStatusFeasible
            and (close_enough or lp_x is None)):
        x, up = h.getSolution().col_value, round
    elif lp_x is not None:
        x, up = lp_x, (lambda v: math.ceil(v - 1e-6))
    else:
        return {}
    return {tuple(by_pool[shape]): min(int(up(x[var.index])),
                                       len(by_pool[shape]))
            for shape, var in opened.items()}


def _highspy():
    try:
        import highspy
    except ImportError as exc:
        raise milp.SolverUnavailable(
            'the optimizer needs HiGHS (pip install highspy): %s' % exc)
    return highspy


def _relaxation(h, highspy, started, time_limit):
    """``(value, status)`` of the pooled model's LP relaxation.

    ``value`` None when it did not finish in half the time left.
    """
    h.setOptionValue('solve_relaxation', True)
    h.setOptionValue('time_limit', float(max(
        0.5 * (time_limit - (time.monotonic() - started)), 0.25)))
    h.run()
    model_status = h.getModelStatus()
    if model_status == highspy.HighsModelStatus.kInfeasible:
        return None, 'infeasible'
    if model_status != highspy.HighsModelStatus.kOptimal:
        return None, h.modelStatusToString(model_status)
    return h.getInfo().objective_function_value, 'optimal'


def _forced_pool(snap, fixed, forced):
    """The forced-open hosts, pooled: their free capacity summed.

    :returns: ``(free, domains, left per domain, stays)``: what cannot
        move takes its room, per domain too (``domains``: each kind of
        domain once); movable instances there count in the forced pool if
        they stay.
    """
    # (Plain dicts and remembered shapes: a cell of 10,000 hosts has
    # thousands of forced-open hosts.)
    forced_free = collections.Counter()
    forced_doms = set()
    host_of = {x.name: x for x in snap.hosts}
    caps_of = {}
    for name in forced:
        host = host_of[name]
        if not host.accepts:
            continue
        shape = _host_shape(host)
        caps = caps_of.get(shape)
        if caps is None:
            caps = caps_of[shape] = _host_caps(shape)
        for dim, cap in caps.items():
            forced_free[dim] += cap
        forced_doms.update((d.cores, d.ways, d.clos, d.memory_mb,
                            d.hugepages_mb, d.mem_bw_mibps)
                           for d in host.domains)
    taken = {}
    memo, dims_of = {}, {}
    for inst in snap.instances:
        if (inst.uuid in fixed and inst.host in forced
                and host_of[inst.host].accepts):
            k = _inst_shape(inst, memo)
            dims = dims_of.get(k)
            if dims is None:
                dims = dims_of[k] = _dims(k)
            for dim, amount in dims.items():
                forced_free[dim] -= amount
            use = taken.setdefault((inst.host, inst.domain), {})
            for key, amount in (('cores', inst.cores), ('ways', inst.ways),
                                ('clos', inst.clos),
                                *inst.numa_need().items()):
                use[key] = use.get(key, 0) + amount
    forced_left = collections.Counter()
    for name in forced:
        host = host_of[name]
        if not host.accepts:
            continue
        for d in host.domains:
            use = taken.get((name, d.id), {})
            forced_left[(d.cores - use.get('cores', 0),
                         d.ways - use.get('ways', 0),
                         None if d.clos is None
                         else d.clos - use.get('clos', 0),
                         None if d.memory_mb is None
                         else d.memory_mb - use.get('memory_mb', 0),
                         None if d.hugepages_mb is None
                         else d.hugepages_mb - use.get('hugepages_mb', 0),
                         None if d.mem_bw_mibps is None
                         else d.mem_bw_mibps - use.get('mem_bw_mibps', 0))] \
                += 1
    forced_stays = collections.Counter(
        _inst_shape(i, memo) for i in snap.instances if i.uuid not in fixed
        and i.host in forced and not host_of[i.host].accepts)
    return forced_free, sorted(forced_doms, key=repr), forced_left, \
        forced_stays


def _columns(h, integer, snap, by_pool, forced, demand, stay, fp):
    """``(cols, opened)``: ``{(kshape, pool): var}`` and hosts per pool."""
    _, forced_doms, _, forced_stays = fp
    host_of = {x.name: x for x in snap.hosts}
    cols = {}           # (kshape, pool) -> variable
    opened = {}
    for shape, names in by_pool.items():
        if not shape[4] and not stay.get(shape):
            continue            # accepts nothing and holds nothing movable
        opened[shape] = h.addVariable(lb=0, ub=len(names), obj=1.0,
                                      type=integer)
    for k in demand:
        for shape in opened:
            if shape[4]:
                ok = (k[3] is None or shape[3] == k[3]) and max(
                    _per_domain(k, d) for d in shape[0]) > 0
            else:
                ok = stay[shape][k] > 0
            if ok:
                cols[k, shape] = h.addVariable(
                    lb=0, ub=demand[k] if shape[4] else stay[shape][k],
                    type=integer)
        if k[3] is None or any(host_of[n].az == k[3] for n in forced):
            if forced_doms and max(_per_domain(k, d)
                                   for d in forced_doms) > 0:
                cols[k, FORCED] = h.addVariable(lb=0, ub=demand[k],
                                                type=integer)
        ub = forced_stays[k]
        if ub:
            cols[k, ('forced-stay',)] = h.addVariable(lb=0, ub=ub,
                                                      type=integer)
    return cols, opened


def _pool_rows(h, integer, cols, opened, fp):
    """Each pool's capacity, per host and per domain; the forced pool's."""
    forced_free, _, forced_left, _ = fp
    for shape, y in opened.items():
        caps = _host_caps(shape)
        here = [(k, v) for (k, p), v in cols.items() if p == shape]
        for dim, cap in caps.items():
            terms = [_dims(k).get(dim, 0) * v for k, v in here
                     if _dims(k).get(dim, 0)]
            if terms:
                h.addConstr(sum(terms) - cap * y <= 0)
        doms = shape[0]
        for k, v in here:
            per_host = sum(_per_domain(k, d) for d in doms)
            h.addConstr(v - per_host * y <= 0)
        # Instances of which no two fit in one domain: one per domain.
        big = [v for k, v in here
               if all(_per_domain(k, d) <= 1 for d in doms)]
        if big:
            h.addConstr(sum(big) - len(doms) * y <= 0)
        if shape[4]:
            _pattern_rows(h, integer, y, doms, here)
    forced_here = [(k, v) for (k, p), v in cols.items() if p == FORCED]
    if forced_here:
        _pattern_rows(h, integer, None, forced_left, forced_here)
    for dim in set(forced_free) | {d for k, _ in forced_here
                                   for d in _dims(k)}:
        terms = [_dims(k).get(dim, 0) * v for k, v in forced_here
                 if _dims(k).get(dim, 0)]
        if terms and dim in forced_free:
            h.addConstr(sum(terms) <= max(forced_free[dim], 0))


MAX_PATTERNS = 4000


def _fill(kind, dom):
    """``(cores, ways, clos, {numa: MB})`` one instance of ``kind`` takes."""
    cores, ways, clos, numa = kind
    return cores, ways, clos, dict(numa)


def patterns(kinds, dom, limit=MAX_PATTERNS):
    """Maximal multisets of ``kinds`` that fit together in domain ``dom``.

    ``kinds`` are ``(cores, ways, clos, numa pairs)``; a pattern is a tuple
    of counts. ``None`` past ``limit`` patterns (the caller then keeps the
    summed rows only). Remembered: the pools of a cloud, and the hosts and
    moves bounds of one plan, ask for the same ones.
    """
    got = _patterns(tuple(kinds), dom, limit)
    return None if got is None else list(got)


@functools.lru_cache(maxsize=1024)
def _patterns(kinds, dom, limit):
    cores_cap, ways_cap, clos_cap, mem, huge, bw = dom
    caps = {'memory_mb': mem, 'hugepages_mb': huge, 'mem_bw_mibps': bw}
    out = []
    counts = [0] * len(kinds)

    def fits(left, kind):
        c, w, cl, numa = _fill(kind, dom)
        if c > left[0] or w > left[1]:
            return False
        if clos_cap is not None and cl > left[2]:
            return False
        return all(v <= left[3].get(k, v) for k, v in numa.items())

    def take(left, kind, sign=1):
        c, w, cl, numa = _fill(kind, dom)
        nl = dict(left[3])
        for k, v in numa.items():
            if k in nl:
                nl[k] -= sign * v
        return (left[0] - sign * c, left[1] - sign * w,
                left[2] - sign * cl, nl)

    def walk(i, left):
        if len(out) > limit:
            return
        if i == len(kinds):
            if not any(fits(left, k) for k in kinds):
                out.append(tuple(counts))
            return
        n = 0
        cur = left
        while True:
            counts[i] = n
            walk(i + 1, cur)
            if not fits(cur, kinds[i]):
                break
            cur = take(cur, kinds[i])
            n += 1
        counts[i] = 0

    start = (cores_cap, ways_cap, clos_cap if clos_cap is not None else 0,
             {k: v for k, v in caps.items() if v is not None})
    walk(0, start)
    return tuple(out) if len(out) <= limit else None


def _pattern_rows(h, integer, y, doms, here):
    """Cover the pool's instances with whole-domain packings (patterns).

    Each open host offers its domains (``y`` None: the always-open hosts,
    whose domains ``doms`` counts with their free room); each domain holds
    one maximal packing of instance kinds. Any real placement is such a
    cover, so the rows keep the bound valid and add what summing
    capacities forgets: the room lost inside each domain.
    """
    kinds = sorted({(k[0], k[1], k[2], k[4]) for k, _ in here})
    if not kinds:
        return
    cover = {kind: [] for kind in kinds}
    counted = doms if isinstance(doms, dict) else collections.Counter(doms)
    rows = []
    for dom, n_dom in counted.items():
        pats = patterns(kinds, dom)
        if pats is None:
            return
        ws = []
        for pat in pats:
            if not any(pat):
                continue
            w = h.addVariable(lb=0, type=integer)
            ws.append(w)
            for kind, count in zip(kinds, pat):
                if count:
                    cover[kind].append(count * w)
        if ws:
            rows.append((ws, n_dom))
    for ws, n_dom in rows:
        if y is None:
            h.addConstr(sum(ws) <= n_dom)
        else:
            h.addConstr(sum(ws) - n_dom * y <= 0)
    for kind in kinds:
        xs = [v for k, v in here if (k[0], k[1], k[2], k[4]) == kind]
        if cover[kind]:
            h.addConstr(sum(xs) - sum(cover[kind]) <= 0)
        else:
            h.addConstr(sum(xs) <= 0)


def moves_lower_bound(snap, fixed, hosts_after, pooled_seconds=0.0,
                      lagrange_seconds=0.0, upper=None, cache=None,
                      enough=None):
    """Fewest live migrations any plan leaving ``hosts_after`` in use needs.

    ``None`` when no plan with that many hosts can exist (more hosts would
    have to close than may). With ``pooled_seconds``, also the pooled
    model's bound (:func:`pooled_moves_bound`, in about that time); with
    ``lagrange_seconds``, the Lagrangian one
    (:func:`lagrangian_moves_bound`, ``upper`` the moves of a known plan);
    the largest of them. With ``enough``, the Lagrangian one goes first
    and the pooled one only when it is below ``enough`` (the caller needs
    no more). ``cache``: as :func:`hosts_lower_bound`'s.
    """
    in_use = snap.hosts_in_use()
    close = len(in_use) - hosts_after
    if close <= 0:
        return 0
    forced = snap.forced_open(fixed)
    counts = collections.Counter(i.host for i in snap.instances)
    closable = sorted(counts[name] for name in in_use - forced)
    if len(closable) < close:
        return None
    least = sum(closable[:close])
    if lagrange_seconds > 0 and enough is not None:
        least = max(least, lagrangian_moves_bound(
            snap, fixed, hosts_after, lagrange_seconds, upper))
        lagrange_seconds = 0
        if least >= enough:
            return least
    if pooled_seconds > 0:
        least = max(least, pooled_moves_bound(snap, fixed, hosts_after,
                                              pooled_seconds, cache))
    if lagrange_seconds > 0:
        least = max(least, lagrangian_moves_bound(
            snap, fixed, hosts_after, lagrange_seconds, upper))
    return least


def pooled_moves_bound(snap, fixed, hosts_after, time_limit=5.0,
                       cache=None):
    """Fewest moves by the pooled model: the hosts closed per pool.

    A plan with ``hosts_after`` hosts in use keeps ``y`` hosts of each
    pool of one shape open, a solution of the pooled model of
    :func:`hosts_lower_bound` with at most ``hosts_after`` open; the
    hosts in use it closes number at least the pool's hosts in use less
    ``y``, and every instance on them moves: at least the instances of
    that many of the pool's least loaded hosts. Its minimum over the
    pooled model (the LP relaxation's, or HiGHS's proven MILP bound) is
    then a lower bound on the moves. ``0`` when the model has nothing to
    say (nothing movable, no solver answer in the time).
    """
    started = time.monotonic()
    pooled = _pooled(snap, fixed, cache)
    by_pool, forced, demand = pooled[:3]
    open_max = hosts_after - len(forced)
    if not demand or open_max < 0:
        return 0
    highspy = _highspy()
    built = _build(snap, fixed, highspy, pooled)
    if built is None:
        return 0
    h, opened = built
    count = collections.Counter(i.host for i in snap.instances)
    ys = []
    for shape, y in opened.items():
        h.changeColCost(y.index, 0.0)
        ys.append(y)
        loads = collections.Counter(count[n] for n in by_pool[shape]
                                    if count[n])
        if not loads:
            continue
        us = [h.addVariable(lb=0, ub=m, obj=float(v))
              for v, m in sorted(loads.items())]
        # Hosts of the pool in use that close: at least in use - open.
        h.addConstr(sum(us) + y >= sum(loads.values()))
    for shape, names in by_pool.items():
        if shape not in opened and any(count[n] for n in names):
            return 0            # (holds nothing movable: cannot be)
    if not ys:
        return 0
    h.addConstr(sum(ys) <= open_max)
    lp_value, lp_status = _relaxation(h, highspy, started, time_limit)
    if lp_status == 'infeasible':
        return 0
    h.setOptionValue('solve_relaxation', False)
    h.setOptionValue('time_limit', float(max(
        time_limit - (time.monotonic() - started), 0.25)))
    h.run()
    value = h.getInfo().mip_dual_bound
    if value is None or not math.isfinite(value):
        value = 0.0
    if h.getModelStatus() == highspy.HighsModelStatus.kInfeasible:
        value = 0.0
    value = max(value, lp_value or 0.0)
    LOG.debug('Pooled moves bound %.1f (%s, %.2fs)', value, lp_status,
              time.monotonic() - started)
    return max(int(math.ceil(value - 1e-6)), 0)


# Subgradient steps of the Lagrangian moves bound, at most; and without a
# better value, after which it stops.
LAGRANGE_STEPS = 300
LAGRANGE_PATIENCE = 40
# Sub-multisets of a domain's movable instances (by shape) up to which the
# Lagrangian bound weighs every one that could stay; past it, the domain's
# gain is bounded from above (a weaker, still valid, relaxation).
KEEP_SUBSETS_MAX = 1024


def lagrangian_moves_bound(snap, fixed, hosts_after, time_limit=2.0,
                           upper=None):
    """Fewest moves, by a Lagrangian relaxation that sees the holes.

    The plan's moves are the instances of the hosts it closes plus those
    it evicts from domains that stay in use; every instance that leaves
    its domain must land in some open domain, per instance shape (cores,
    ways). Relaxing that balance with a price per shape splits the
    problem by cache domain: a domain that stays keeps the subset of its
    instances, and takes the arrivals, that pay best in its cores and ways
    (a knapsack: an instance of nine ways never fits in two holes of
    three), and the hosts that stay are the ``hosts_after`` that gain the
    most from staying (hosts that cannot close always stay). For any
    prices the relaxation's optimum is a lower bound on the moves of
    every plan with at most ``hosts_after`` hosts in use (classes of
    service, memory, zones and anti-affinity are left out, which only
    weakens it): weak duality, whatever the prices, so the bound is the
    best value the relaxation took at any prices tried, each worked out
    on the whole snapshot (:class:`_Lagrange`). The prices start at the
    best of a few (none; and each shape priced by its ways, its cores,
    or the larger of the two, in units of the smallest shape's: what an
    instance that leaves frees, counted in small instances); subgradient
    steps (Held and Karp; Fisher, *The Lagrangian relaxation method for
    solving integer programming problems*, Management Science 27(1),
    1981) raise it, for up to ``time_limit`` seconds, until
    :data:`LAGRANGE_PATIENCE` steps bring nothing. ``upper``, the moves of
    a known plan, sets the step length.

    :returns: the bound (an integer), 0 when it has nothing to say.
    """
    started = time.monotonic()
    lag = _Lagrange(snap, fixed, hosts_after)
    if lag.kinds is None:
        return 0
    # (The starts are weighed whatever the time: four steps' worth, and
    # on a busy machine often the whole bound.)
    prices, (value, grad) = None, (None, None)
    for start in _price_starts(lag.kinds):
        got = lag.solve(start)
        if prices is None or got[0] > value:
            prices, (value, grad) = start, got
    best, theta, stall, since = 0.0, 1.0, 0, 0
    for n in range(LAGRANGE_STEPS):
        if n:
            value, grad = lag.solve(prices)
        if value > best + 1e-9:
            best, stall, since = value, 0, 0
        else:
            stall += 1
            since += 1
            if stall >= 10:
                theta, stall = theta / 2.0, 0
        norm = sum(g * g for g in grad)
        if (not norm or theta < 1e-3 or since >= LAGRANGE_PATIENCE
                or time.monotonic() - started > time_limit
                or (upper is not None and best > upper - 1.0 + 1e-9)):
            break
        target = upper if upper is not None else best * 1.1 + 1.0
        step = theta * max(target - value, 1e-3) / norm
        prices = [p + step * g for p, g in zip(prices, grad)]
    LOG.debug('Lagrangian moves bound %.2f (%.2fs)', best,
              time.monotonic() - started)
    return max(int(math.ceil(best - 1e-6)), 0)


def _price_starts(kinds):
    """Prices the subgradient may start from (see the caller)."""
    least_c = min(c for c, _ in kinds)
    least_w = min(w for _, w in kinds)
    return [[0.0] * len(kinds),
            [w / least_w - 1.0 for _, w in kinds],
            [c / least_c - 1.0 for c, _ in kinds],
            [max(c / least_c, w / least_w) - 1.0 for c, w in kinds]]


class _Lagrange:
    """The relaxation of :func:`lagrangian_moves_bound`, by kind of domain.

    Domains with the same room for movable instances (cores and ways
    less what cannot move), the same movable instances (a count per
    shape) and whether they accept arrivals are one kind: they have the
    same best choice at any prices. Every sub-multiset of a kind's
    instances that may stay is a row (its cores, ways and count of each
    shape), rows grouped by kind; so one step is a few array operations
    on the kinds (about 1,300 in a cell of 10,000 hosts of four shapes,
    where its domains number 17,500) and one over the hosts.
    """

    def __init__(self, snap, fixed, hosts_after):
        movable = [i for i in snap.instances if i.uuid not in fixed]
        self.kinds = sorted({(i.cores, i.ways) for i in movable}) or None
        if self.kinds is None:
            return
        kpos = {k: n for n, k in enumerate(self.kinds)}
        n_k = len(self.kinds)
        forced = snap.forced_open(fixed)
        self.slots = hosts_after - len(forced)
        on = collections.defaultdict(list)
        for inst in snap.instances:
            on[inst.host, inst.domain].append(inst)
        self.max_cores = max(d.cores for h in snap.hosts for d in h.domains)
        self.max_ways = max(d.ways for h in snap.hosts for d in h.domains)
        types, dom_type, dom_host, host_rows = {}, [], [], []
        for hi, h in enumerate(snap.hosts):
            counts = [0] * n_k
            for d in h.domains:
                cores, ways, have = d.cores, d.ways, [0] * n_k
                for i in on.get((h.name, d.id), ()):
                    if i.uuid in fixed:
                        cores -= i.cores
                        ways -= i.ways
                    else:
                        have[kpos[i.cores, i.ways]] += 1
                        counts[kpos[i.cores, i.ways]] += 1
                dom_type.append(types.setdefault(
                    (cores, ways, h.accepts, tuple(have)), len(types)))
                dom_host.append(hi)
            host_rows.append(counts)
        self.forced = numpy.array([h.name in forced for h in snap.hosts])
        self.host_counts = numpy.array(host_rows, dtype=float).reshape(
            len(snap.hosts), n_k)
        self.dom_type = numpy.array(dom_type, dtype=int)
        self.dom_host = numpy.array(dom_host, dtype=int)
        self._rows(list(types), n_k)

    def _rows(self, types, n_k):
        """The rows of each kind of domain ``types`` lists."""
        shape = numpy.array(self.kinds, dtype=int).reshape(n_k, 2)
        rows, row_type, first, loose = [], [], [], []
        at = 0
        for t, (_, _, _, have) in enumerate(types):
            first.append(at)
            if math.prod(n + 1 for n in have) > KEEP_SUBSETS_MAX:
                # Too many to weigh: the empty one only, and the kind's
                # gain bounded from above instead (solve).
                loose.append(t)
                got = numpy.zeros((1, n_k), dtype=int)
            else:
                got = numpy.indices([n + 1 for n in have]).reshape(
                    n_k, -1).T
            rows.append(got)
            row_type.append(numpy.full(len(got), t))
            at += len(got)
        counts = numpy.concatenate(rows)
        self.row_counts = counts.astype(float)
        self.row_type = numpy.concatenate(row_type)
        self.first = numpy.array(first, dtype=int)
        cap = numpy.array([(c, w) for c, w, _, _ in types],
                          dtype=int).reshape(len(types), 2)
        self.type_cap = cap
        self.type_accepts = numpy.array([a for _, _, a, _ in types])
        self.all_counts = numpy.array([have for _, _, _, have in types],
                                      dtype=float).reshape(len(types), n_k)
        self.loose = numpy.array(loose, dtype=int)
        room = cap[self.row_type] - counts @ shape
        self.fits = (room >= 0).all(axis=1)
        self.room = numpy.maximum(room, 0)
        self.row_accepts = self.type_accepts[self.row_type]

    def fill(self, prices):
        """The best arrivals per room: values and counts per shape.

        ``value[c, w]``: the most the paying shapes (price above 0) that
        fit together in ``c`` cores and ``w`` ways are worth, one row of
        cores at a time (every shape takes a core: row ``c`` only looks at
        rows below it, and a running maximum along the ways carries the
        room left unused).
        """
        n_k = len(self.kinds)
        n_c, n_w = self.max_cores + 1, self.max_ways + 1
        value = numpy.zeros((n_c, n_w))
        count = numpy.zeros((n_c, n_w, n_k))
        paying = [(k, c, w, p) for k, ((c, w), p)
                  in enumerate(zip(self.kinds, prices)) if p > 0 and w < n_w]
        cols = numpy.arange(n_w)
        for c in range(n_c):
            if c:
                cand, cnt = value[c - 1].copy(), count[c - 1].copy()
            else:
                cand, cnt = numpy.zeros(n_w), numpy.zeros((n_w, n_k))
            for k, kc, kw, p in paying:
                if kc > c:
                    continue
                v = value[c - kc, :n_w - kw] + p
                better = numpy.flatnonzero(v > cand[kw:] + 1e-12)
                if len(better):
                    cand[better + kw] = v[better]
                    cnt[better + kw] = count[c - kc, better]
                    cnt[better + kw, k] += 1
            value[c] = numpy.maximum.accumulate(cand)
            # Where each running maximum was reached.
            count[c] = cnt[numpy.maximum.accumulate(
                numpy.where(cand == value[c], cols, 0))]
        return value, count

    def solve(self, prices):
        """``(value, subgradient)`` of the relaxation at ``prices``."""
        price = numpy.asarray(prices, dtype=float)
        value, count = self.fill(prices)
        pay = 1.0 + price
        arrive = value[self.room[:, 0], self.room[:, 1]]
        gain = self.row_counts @ pay + numpy.where(self.row_accepts, arrive,
                                                   0.0)
        gain = numpy.where(self.fits, gain, -numpy.inf)
        best = numpy.maximum.reduceat(gain, self.first)
        # The first row of each kind reaching its best.
        hit = numpy.flatnonzero(gain >= best[self.row_type] - 1e-12)
        pick = hit[numpy.unique(self.row_type[hit], return_index=True)[1]]
        kept_type = self.all_counts @ pay - best
        if len(self.loose):
            # (Above any sub-multiset's gain: keep what pays, arrivals in
            # the whole room.)
            lo = self.loose
            kept_type[lo] = self.all_counts[lo] @ numpy.minimum(pay, 0.0)
            cap = self.type_cap[lo]
            kept_type[lo] -= numpy.where(self.type_accepts[lo],
                                         value[cap[:, 0], cap[:, 1]], 0.0)
        kept = numpy.bincount(self.dom_host, kept_type[self.dom_type],
                              minlength=len(self.forced))
        closed = self.host_counts @ pay
        delta = kept - closed
        stays = self.forced.copy()
        free = numpy.flatnonzero(~self.forced & (delta < 0))
        if self.slots > 0 and len(free):
            order = free[numpy.argsort(delta[free], kind='stable')]
            stays[order[:self.slots]] = True
        total = closed.sum() + delta[stays].sum()
        grad = self.host_counts[~stays].sum(axis=0)
        n_stay = numpy.bincount(self.dom_type[stays[self.dom_host]],
                                minlength=len(self.first)).astype(float)
        grad += n_stay @ (self.all_counts - self.row_counts[pick])
        rooms = self.room[pick]
        grad -= (n_stay * self.type_accepts) @ count[rooms[:, 0],
                                                     rooms[:, 1]]
        return float(total), grad.tolist()
