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
"""The optimal schedule of reserved SLO terms (ResQ Appendix A), linear.

ResQ's own MILP assigns every instance to a server with a binary and
multiplies LLC and server variables, which needs a quadratic solver and is
highly symmetric. This model solves the same problem, exactly, with a
linear program over two kinds of integer counts (see
:mod:`resq_nova.admission.packing`):

* ``y[g, c]``: how many terms of group ``g`` (identical terms) use minimal
  configuration ``c`` (a multiset of instance sizes meeting the target);
* ``x[p]``: how many servers use pattern ``p`` (slot sizes filling the
  usable ways, at most one slot per core).

::

    minimise   sum_p x[p]
    subject to sum_c y[g, c] = |g|                        for every group
               sum_p x[p] #{slots >= s in p}
                   >= sum_{g,c} y[g, c] #{instances >= s in c}   for every s

It is a Gilmore-Gomory style formulation: its LP relaxation is tight and
it has no server symmetry, so HiGHS proves optimality at ResQ's scale in
seconds where the direct formulation stalls. Terms with more minimal
configurations than a limit (very large targets) get per-term count
variables ``n[i, w]`` instead, with their throughput constraint written
out; the model stays exact.

Memory bandwidth, where terms ask for it (MiB/s per instance) and servers
have a limit, is a second dimension: the instances' bandwidth is at most
what the servers used offer together (one row, valid for every schedule).
Patterns count slots by ways, not by whose they are, so the row cannot
keep each server's bandwidth on its own; the caller checks the schedule
server by server (:func:`bandwidth_over`) and does not use one that
over-commits a server.

The schedule is warm-started from the greedy's, the solve stops at a time
limit or relative gap, and the result always carries the best schedule, the
proven lower bound and the gap.
"""

import dataclasses
import math
import time

from oslo_log import log as logging

from resq_nova.admission import packing

LOG = logging.getLogger(__name__)


class SolverUnavailable(Exception):
    """Pyomo or HiGHS cannot be loaded."""


@dataclasses.dataclass
class Result:
    """The best schedule found and how good it provably is."""

    servers: int
    lower_bound: int
    gap_pct: float
    optimal: bool
    status: str
    build_s: float
    solve_s: float
    # term name -> tuple of ways of its instances
    configs: dict
    # list of server patterns used (one per server)
    patterns: list
    # list of (term name, ways, server index)
    assignment: list


def _missing(exc):
    return SolverUnavailable('the optimizer needs Pyomo and HiGHS (pip '
                             'install pyomo highspy): %s' % exc)


def load_pyomo_and_highspy():
    """``(pyomo.environ, highspy)`` for models HiGHS reads from a file.

    :raises SolverUnavailable: naming what to install.
    """
    try:
        import highspy
        import pyomo.environ as pyo
    except ImportError as exc:
        raise _missing(exc)
    return pyo, highspy


def _load_solver():
    try:
        from pyomo.contrib.appsi.solvers import highs
        import pyomo.environ as pyo
    except ImportError as exc:
        raise _missing(exc)
    solver = highs.Highs()
    if not solver.available():
        raise SolverUnavailable(
            'HiGHS is not available to Pyomo; install highspy (pip install '
            'highspy)')
    return pyo, solver


def groups_from_terms(terms, capacity_of):
    """Group identical terms.

    :param terms: list of ``(name, target_mpps, key)``; terms with the same
        key and target share a capacity curve.
    :param capacity_of: ``key -> {ways: Mpps}``.
    """
    grouped = {}
    for name, target, key in terms:
        grouped.setdefault((key, round(target, 9)), []).append(name)
    return [packing.TermGroup('%s@%g' % (key, target), target,
                              capacity_of(key), tuple(members))
            for (key, target), members in sorted(grouped.items())]


def solve(groups, cores, ways, time_limit=60.0, mip_gap=0.0,
          warm_start=None, max_servers=None, config_limit=2000,
          existing=(), mem_bw=None, server_mem_bw=None,
          existing_mem_bw=()):
    """Solve for the fewest servers.

    :param mem_bw: ``{term name: MiB/s per instance}`` of the terms that
        hold memory bandwidth; the terms of one group must agree.
    :param server_mem_bw: MiB/s a new server offers (None: not limited).
    :param existing_mem_bw: free MiB/s of each existing server, in the
        order of ``existing`` (None: not limited).

    :param existing: ``(free cores, free ways)`` of servers already in
        use; they take instances at no cost (their own patterns, at most
        as many as there are such servers) and only new servers count.
        ``Result.patterns`` then lists the existing servers first (one
        entry per existing server, in order, possibly empty), then the new
        ones; ``servers`` counts the new ones.

    :param groups: list of :class:`resq_nova.admission.packing.TermGroup`.
    :param warm_start: ``(configs, servers)``: a feasible schedule, as
        ``{term name: ways tuple}`` and a list of per-server ways lists.
    :raises SolverUnavailable: without Pyomo or HiGHS.
    :raises ValueError: for a time limit that is not positive.
    """
    if time_limit is None or time_limit <= 0:
        raise ValueError('the solver time limit must be positive, got %r'
                         % time_limit)
    pyo, solver = _load_solver()
    started = time.monotonic()
    configs, expanded = _configurations(groups, config_limit, warm_start)
    sizes = set(range(1, ways + 1))
    pats = packing.patterns(cores, ways, sizes)

    m = pyo.ConcreteModel()
    yi = [(gi, ci) for gi, g in enumerate(groups) if g.key in configs
          for ci in range(len(configs[g.key]))]
    m.y = pyo.Var(yi, domain=pyo.NonNegativeIntegers)
    m.x = pyo.Var(range(len(pats)), domain=pyo.NonNegativeIntegers)
    ni = [(gi, mi, w) for gi, g in enumerate(groups) if g in expanded
          for mi in range(len(g.members)) for w in sorted(g.capacity)]
    m.n = pyo.Var(ni, domain=pyo.NonNegativeIntegers)
    shapes = {}
    for fc, fw in existing:
        if fc > 0 and fw > 0:
            shapes[(min(fc, cores), min(fw, ways))] = shapes.get(
                (min(fc, cores), min(fw, ways)), 0) + 1
    epats = {shape: _partial_patterns(*shape) for shape in shapes}
    eindex = [(shape, pi) for shape in sorted(epats)
              for pi in range(len(epats[shape]))]
    m.e = pyo.Var(eindex, domain=pyo.NonNegativeIntegers)
    m.ecap = pyo.ConstraintList()
    for shape in sorted(epats):
        m.ecap.add(sum(m.e[shape, pi] for pi in range(len(epats[shape])))
                   <= shapes[shape])
    m.obj = pyo.Objective(
        expr=_objective(m, groups, configs, yi, ni, cores, ways, existing),
        sense=pyo.minimize)
    _cover_and_slots(pyo, m, groups, configs, yi, ni, sizes, pats, epats,
                     eindex)
    if max_servers is not None:
        m.cap = pyo.Constraint(expr=sum(m.x[p] for p in m.x)
                               <= max_servers)
    _bandwidth_row(pyo, m, groups, configs, yi, ni, mem_bw, server_mem_bw,
                   existing_mem_bw)
    if warm_start and not existing:
        _set_warm_start(m, groups, configs, pats, warm_start, ways, ni)
    else:
        warm_start = None
    build_s = time.monotonic() - started
    res, _, solve_s = _run(pyo, solver, m, time_limit - build_s, mip_gap,
                           pyo.value(m.obj) if warm_start else None)
    bound = res.best_objective_bound
    servers = int(round(sum(pyo.value(m.x[p]) for p in m.x)))
    if bound is None:
        lower = 0
    elif existing:
        # The objective carries the secondary term (< 0.5 in all).
        lower = math.floor(bound + 1e-6)
    else:
        lower = math.ceil(bound - 1e-6)
    lower = min(lower, servers)
    gap = (servers - lower) / servers * 100.0 if servers else 0.0
    chosen = _chosen(pyo, m, groups, configs)
    used = []
    # Existing servers first, in their order, each with the pattern chosen
    # for its shape (or none).
    left = {sh: [] for sh in epats}
    for sh, pi in eindex:
        left[sh] += [epats[sh][pi]] * int(round(pyo.value(m.e[sh, pi])))
    for fc, fw in existing:
        sh = (min(fc, cores), min(fw, ways))
        used.append(left[sh].pop() if left.get(sh) else ())
    for pi, p in enumerate(pats):
        used += [p] * int(round(pyo.value(m.x[pi])))
    instances = [(name, w) for name, cfg in chosen.items() for w in cfg]
    assignment = packing.assign(instances, used)
    return Result(servers=servers, lower_bound=lower, gap_pct=gap,
                  optimal=lower == servers,
                  status=str(res.termination_condition).split('.')[-1],
                  build_s=build_s, solve_s=solve_s, configs=chosen,
                  patterns=used, assignment=assignment)


def _configurations(groups, config_limit, warm_start):
    """``(configs, expanded)``: each group's ways configurations.

    ``configs`` maps a group's key to its configurations (the warm
    start's own added); ``expanded`` lists the groups with too many, whose
    members choose their ways one by one instead.

    :raises ValueError: a group no configuration can serve.
    """
    configs = {}
    expanded = []
    for g in groups:
        try:
            configs[g.key] = packing.configurations(g.capacity,
                                                    g.target_mpps,
                                                    config_limit)
        except packing.TooManyConfigurations:
            expanded.append(g)
            continue
        if not configs[g.key]:
            raise ValueError('terms %s cannot meet %.3f Mpps on one '
                             'server size' % (', '.join(g.members),
                                              g.target_mpps))
    if warm_start:
        for g in groups:
            if g.key in configs:
                for name in g.members:
                    cfg = tuple(sorted(warm_start[0][name], reverse=True))
                    if cfg not in configs[g.key]:
                        configs[g.key].append(cfg)
    return configs, expanded


def _objective(m, groups, configs, yi, ni, cores, ways, existing):
    """New servers; with ``existing`` ones, then the least of the cluster."""
    new_servers = sum(m.x[p] for p in m.x)
    if not existing:
        return new_servers

    # Among plans with as few new servers, the one that takes the least of
    # the cluster (cores and ways as fractions of a server), so the next
    # terms find room: weighted to stay below one server.
    def taken(config):
        return len(config) / cores + sum(config) / ways

    use = sum(taken(configs[groups[gi].key][ci]) * m.y[gi, ci]
              for gi, ci in yi)
    use += sum((1.0 / cores + w / ways) * m.n[gi, mi, w]
               for gi, mi, w in ni)
    most = sum(len(g.members) * max(
        (taken(c) for c in configs.get(g.key, ())), default=2.0 + ways)
        for g in groups) or 1.0
    return new_servers + use * (0.5 / most)


def _cover_and_slots(pyo, m, groups, configs, yi, ni, sizes, pats, epats,
                     eindex):
    """Every term served; per allocation size, slots enough for it."""
    m.cover = pyo.ConstraintList()
    for gi, g in enumerate(groups):
        if g.key in configs:
            m.cover.add(sum(m.y[gi, ci] for ci in range(len(configs[g.key])))
                        == len(g.members))
        else:
            for mi in range(len(g.members)):
                m.cover.add(sum(g.capacity[w] * m.n[gi, mi, w]
                                for w in g.capacity) >= g.target_mpps)
    m.slots = pyo.ConstraintList()
    for s in sorted(sizes):
        demand = [packing.at_least(configs[groups[gi].key][ci], s)
                  * m.y[gi, ci] for gi, ci in yi
                  if packing.at_least(configs[groups[gi].key][ci], s)]
        demand += [m.n[gi, mi, w] for gi, mi, w in ni if w >= s]
        supply = [packing.at_least(p, s) * m.x[pi]
                  for pi, p in enumerate(pats) if packing.at_least(p, s)]
        supply += [packing.at_least(epats[sh][pi], s) * m.e[sh, pi]
                   for sh, pi in eindex
                   if packing.at_least(epats[sh][pi], s)]
        if demand:
            m.slots.add(sum(supply) >= sum(demand))


def _bandwidth_row(pyo, m, groups, configs, yi, ni, mem_bw, server_mem_bw,
                   existing_mem_bw):
    """The instances' bandwidth within what the servers offer together.

    Nothing when no term holds bandwidth or a server is not limited.
    """
    per = {gi: (mem_bw or {}).get(g.members[0], 0) or 0
           for gi, g in enumerate(groups)}
    if not any(per.values()) or server_mem_bw is None or any(
            b is None for b in existing_mem_bw):
        return
    demand = [len(configs[groups[gi].key][ci]) * per[gi] * m.y[gi, ci]
              for gi, ci in yi if per[gi]]
    demand += [per[gi] * m.n[gi, mi, w] for gi, mi, w in ni if per[gi]]
    supply = server_mem_bw * sum(m.x[p] for p in m.x)
    m.bandwidth = pyo.Constraint(
        expr=sum(demand) <= supply + sum(max(b, 0) for b in existing_mem_bw))


def bandwidth_over(assignment, mem_bw, free_mem_bw):
    """Servers of a schedule whose memory bandwidth it over-commits.

    :param assignment: ``[(term name, ways, server index)]``.
    :param mem_bw: ``{term name: MiB/s per instance}``.
    :param free_mem_bw: free MiB/s per server index (None: not limited).
    :returns: ``{server index: (MiB/s held, MiB/s free)}``, empty when
        every server keeps its bandwidth.
    """
    held = {}
    for name, _, index in assignment:
        need = (mem_bw or {}).get(name) or 0
        if need:
            held[index] = held.get(index, 0) + need
    return {i: (n, free_mem_bw[i]) for i, n in sorted(held.items())
            if free_mem_bw[i] is not None and n > free_mem_bw[i]}


def _run(pyo, solver, m, seconds, mip_gap, warm_obj):
    """``(result, best objective, solve seconds)``; the values loaded.

    :raises ValueError: HiGHS found nothing and there is no warm start.
    """
    solver.config.time_limit = max(seconds, 0.1)
    solver.config.mip_gap = mip_gap
    # The warm start is kept as our own incumbent rather than handed to
    # HiGHS: with highspy 1.16, Pyomo's appsi interface loads the MIP start
    # back instead of the better solution HiGHS reports (objective and
    # values disagree).
    solver.config.warmstart = False
    solver.config.load_solution = False
    # HiGHS output goes to the debug log, not the console.
    solver.config.log_level = 10
    solved_at = time.monotonic()
    res = solver.solve(m)
    solve_s = time.monotonic() - solved_at
    best = res.best_feasible_objective
    if best is None or (warm_obj is not None and warm_obj < best - 0.5):
        if warm_obj is None:
            raise ValueError('the solver found no schedule (%s)'
                             % res.termination_condition)
        best = warm_obj          # the warm start's values stay loaded
    else:
        res.solution_loader.load_vars()
    return res, best, solve_s


def _chosen(pyo, m, groups, configs):
    """``{term name: ways tuple}`` of the loaded solution."""
    chosen = {}
    for gi, g in enumerate(groups):
        if g.key in configs:
            names = list(g.members)
            for ci, cfg in enumerate(configs[g.key]):
                count = int(round(pyo.value(m.y[gi, ci])))
                for _ in range(count):
                    chosen[names.pop()] = cfg
        else:
            for mi, name in enumerate(g.members):
                cfg = []
                for w in sorted(g.capacity, reverse=True):
                    cfg += [w] * int(round(pyo.value(m.n[gi, mi, w])))
                chosen[name] = tuple(cfg)
    return chosen


def _partial_patterns(cores, ways):
    """Patterns of a partly used server.

    Slot sizes adding to its free ways, on at most its free cores.
    """
    return packing.patterns(cores, ways)


def _set_warm_start(m, groups, configs, pats, warm_start, ways, ni):
    term_cfg, servers = warm_start
    for var in m.y.values():
        var.set_value(0)
    for gi, g in enumerate(groups):
        if g.key not in configs:
            continue
        for name in g.members:
            cfg = tuple(sorted(term_cfg[name], reverse=True))
            ci = configs[g.key].index(cfg)
            m.y[gi, ci].set_value(m.y[gi, ci].value + 1)
    for gi, mi, w in ni:
        cfg = term_cfg[groups[gi].members[mi]]
        m.n[gi, mi, w].set_value(sum(1 for v in cfg if v == w))
    index = {p: i for i, p in enumerate(pats)}
    counts = [0] * len(pats)
    for server in servers:
        if not server:
            continue
        slots = sorted(server, reverse=True)
        slots[0] += ways - sum(slots)
        counts[index[tuple(slots)]] += 1
    for i, c in enumerate(counts):
        m.x[i].set_value(c)
