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
"""From a snapshot to a plan document. Pure apart from the solver.

::

    {"id", "created_at", "snapshot_id", "hosts_used_before",
     "hosts_used_after", "lower_bound", "gap_pct", "proposed", "reason",
     "moves": [{"uuid", "from_host", "from_domain", "to_host",
                "to_domain", ...}],
     "moves_lower_bound", "left_out", "fixed", "min_hosts_freed",
     "solver": {...}, "status"}

``moves`` are in execution order. ``lower_bound`` and ``gap_pct`` are the
hosts HiGHS proved necessary and how far ``hosts_used_after`` may be from
the optimum; ``moves_lower_bound`` the moves any plan with that many hosts
needs. A plan is ``proposed`` only when it frees at least
``min_hosts_freed`` hosts (ResQ's threshold: moving NFs costs more than it
saves otherwise); ``reason`` says why, or why not.

The planner alone runs the stages, each a module that imports no other
stage (see the contributor's "optimizer pipeline" page): the snapshot
(:mod:`snapshot`, split by cell), the bounds (:mod:`bound`), the
repacking heuristic (:mod:`heuristic`), the MILP (:mod:`model`, when the
movable instances are few enough; otherwise, while the moves are far from
their bound, on neighbourhoods of the heuristic's plan,
:mod:`neighbourhood`) and the safe order of the moves (:mod:`ordering`).
:func:`solve` is the walk of one cell through the first five,
:func:`_plan_cell` adds the last.
"""

import concurrent.futures
import dataclasses
import datetime
import math
import multiprocessing
import os
import time
import uuid as uuid_mod

from oslo_log import log as logging

from resq_nova.optimizer import bound
from resq_nova.optimizer import common
from resq_nova.optimizer import heuristic
from resq_nova.optimizer import model
from resq_nova.optimizer import neighbourhood
from resq_nova.optimizer import ordering
from resq_nova.optimizer import snapshot as snap_mod

LOG = logging.getLogger(__name__)
PROPOSED = 'proposed'
# Hosts in use in a cell up to which the bin completion runs (and the undo
# pass and the pooled moves bound with it). Its eviction index keeps a
# pass near linear: a cell of 10,000 hosts of four shapes (50,000
# instances) is planned in about 8.5 s at a 0.58% gap with it, against
# 12.9% without, on the benchmark's two-core machine. Past it (cells
# larger than Nova's largest deployments run) the repack and the drain
# plan alone.
COMPLETE_MAX_HOSTS = 12000
# Hosts in use in a cell up to which the heuristic's plan, when its moves
# are not within moves_gap of their bound and the cell is too large for
# the whole per-host MILP, gets fewer moves a neighbourhood at a time
# (:mod:`neighbourhood`), until NEIGHBOURHOOD_SHARE of the time limit has
# passed (the rest is the safe ordering's). Larger cells (the 100,000-host
# cloud's) spend their time on the plan's hosts.
NEIGHBOURHOOD_MAX_HOSTS = 5000
# Hosts in use in a cell up to which the moves bound is also the
# Lagrangian one (bound.lagrangian_moves_bound: it sees that large
# instances do not fit in small holes; its cost grows with the kinds of
# cache domain and the hosts, under a second for a cell of 10,000 hosts of
# four shapes). Larger cells keep the pooled bound alone.
LAGRANGE_MAX_HOSTS = COMPLETE_MAX_HOSTS
# Hosts in use in a cell past which it is large: its pooled host bound is
# the LP relaxation first (a tenth of a second at 10,000 hosts, where the
# MILP takes seconds to prove no more), the MILP only when that does not
# prove the heuristic's plan within mip_gap; and moves are undone in one
# round (see solve).
LARGE_CELL_HOSTS = 5000
NEIGHBOURHOOD_SHARE = 0.75
NOT_PROPOSED = 'not-proposed'
# Snapshots with at least this many instances in more than one cell have
# their cells planned in parallel processes (each cell is planned on its
# own anyway); below it a process's start costs more than it saves.
PARALLEL_MIN_INSTANCES = 20000


def new_id(prefix):
    now = datetime.datetime.now(datetime.timezone.utc)
    return '%s-%s-%s' % (prefix, now.strftime('%Y%m%dT%H%M%S'),
                         uuid_mod.uuid4().hex[:6])


def make_plan(snap, min_hosts_freed=1, time_limit=20.0, mip_gap=0.01,
              snapshot_id=None, moves_gap=0.10, full_model_max=1000,
              workers=1):
    """Plan on ``snap``; the plan document (see the module doc).

    Each Nova cell is planned on its own (nothing moves between cells),
    with a share of ``time_limit`` by its instances; the plan document
    sums them and lists each cell's figures under ``cells``. With
    ``workers`` above one (0: one per CPU), a snapshot of at least
    :data:`PARALLEL_MIN_INSTANCES` instances in several cells has its cells
    planned in that many processes at once, each cell's share of the time
    multiplied by them.
    """
    started = time.monotonic()
    parts = snap_mod.cells(snap)
    workers = min(workers or os.cpu_count() or 1, len(parts))
    if len(snap.instances) < PARALLEL_MIN_INSTANCES:
        workers = 1
    args = (mip_gap, moves_gap, full_model_max)
    if workers > 1:
        cells = _plan_cells_apart(parts, time_limit, workers, args)
    else:
        cells = _plan_cells(parts, time_limit, started, args)
    moves = [mv for c in cells for mv in c['moves']]
    left_out = [lo for c in cells for lo in c['left_out']]
    before = sum(c['before'] for c in cells)
    after = sum(c['after'] for c in cells)
    lower = sum(c['lower'] for c in cells)
    freed = before - after
    reasons = [c['why'] for c in cells if c['why']]
    if not moves:
        proposed = False
        reason = '; '.join(reasons) or ('no plan uses fewer than the %d '
                                        'hosts in use now' % before)
    elif freed < min_hosts_freed:
        proposed = False
        reason = ('the plan frees %d host(s) with %d move(s); '
                  'min_hosts_freed is %d, so nothing moves'
                  % (freed, len(moves), min_hosts_freed))
        if reasons:
            reason += ' (%s)' % '; '.join(reasons)
    else:
        proposed = True
        reason = ('frees %d host(s) (%d -> %d in use) with %d live '
                  'migration(s)' % (freed, before, after, len(moves)))
        if reasons:
            reason += '; %s' % '; '.join(reasons)
    detours = sum(1 for mv in moves if mv.get('detour'))
    if detours and proposed:
        reason += ('; %d of them through a host with room, to break a '
                   'swap' % detours)
    fixed = {}
    for c in cells:
        fixed.update(c['result'].fixed)
    statuses = ['%s: %s' % (c['cell'], c['result'].status)
                if len(cells) > 1 else c['result'].status for c in cells]
    return {
        'id': new_id('plan'),
        'created_at': datetime.datetime.now(
            datetime.timezone.utc).isoformat(timespec='seconds'),
        'snapshot_id': snapshot_id,
        'hosts_used_before': before,
        'hosts_used_after': after,
        'lower_bound': lower,
        'gap_pct': round(common.gap_pct(after, lower), 3),
        'proposed': proposed,
        'reason': reason,
        'moves': moves,
        'moves_lower_bound': sum(c['moves_lower'] for c in cells),
        'left_out': left_out,
        'fixed': [{'uuid': u, 'reason': r} for u, r in sorted(fixed.items())],
        'freed_hosts': sorted(h for c in cells for h in c['freed']),
        'cells': [{'cell': c['cell'], 'hosts_used_before': c['before'],
                   'hosts_used_after': c['after'],
                   'lower_bound': c['lower'], 'moves': len(c['moves'])}
                  for c in cells] if len(cells) > 1 else [],
        'min_hosts_freed': min_hosts_freed,
        'solver': {'status': '; '.join(statuses),
                   'build_seconds': round(sum(c['result'].build_s
                                              for c in cells), 3),
                   'solve_seconds': round(sum(c['result'].solve_s
                                              for c in cells), 3),
                   'seconds': round(time.monotonic() - started, 3),
                   'time_limit': time_limit, 'mip_gap': mip_gap,
                   'workers': workers},
        'status': PROPOSED if proposed else NOT_PROPOSED,
    }


def _plan_cells(parts, time_limit, started, args):
    """Each cell's plan, one after the other, by its share of the time."""
    total = max(sum(len(sub.instances) for _, sub in parts), 1)
    cells = []
    for n, (cell, sub) in enumerate(parts):
        left = time_limit - (time.monotonic() - started)
        share = (left if n == len(parts) - 1 else
                 time_limit * len(sub.instances) / total)
        cells.append(_plan_cell(cell, sub, max(share, 1.0), *args))
    return cells


def _plan_cells_apart(parts, time_limit, workers, args):
    """Each cell's plan in ``workers`` processes at once.

    A cell's share of the time is its share of the instances times the
    workers (at most the whole time); the largest cells start first. The
    processes are spawned, not forked: the optimizer service runs threads.
    A pool that breaks (a worker killed, out of memory) leaves the cells it
    did not plan to this process, one after the other.
    """
    started = time.monotonic()
    total = max(sum(len(sub.instances) for _, sub in parts), 1)
    order = sorted(range(len(parts)),
                   key=lambda n: -len(parts[n][1].instances))
    cells = [None] * len(parts)
    try:
        with concurrent.futures.ProcessPoolExecutor(
                max_workers=workers,
                mp_context=multiprocessing.get_context('spawn')) as pool:
            futures = {}
            for n in order:
                cell, sub = parts[n]
                share = min(time_limit * workers * len(sub.instances)
                            / total, time_limit)
                futures[pool.submit(_plan_cell, cell, sub,
                                    max(share, 1.0), *args)] = n
            for future in concurrent.futures.as_completed(futures):
                cells[futures[future]] = future.result()
    except concurrent.futures.process.BrokenProcessPool as exc:
        left = [parts[n] for n in range(len(parts)) if cells[n] is None]
        LOG.warning('Plan: the planning processes stopped (%s); planning '
                    'the %d cell(s) left here, one after the other', exc,
                    len(left))
        rest = iter(_plan_cells(left, max(
            time_limit - (time.monotonic() - started), 1.0),
            time.monotonic(), args))
        cells = [c if c is not None else next(rest) for c in cells]
    return cells


def solve(snap, time_limit=20.0, mip_gap=0.01, first_share=0.6,
          moves_gap=0.10, full_model_max=1000):
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
    # (This was model.solve; the MILP stage is now model.Milp, run by
    # _milp below.)
    if time_limit is None or time_limit <= 0:
        raise ValueError('the plan time limit must be positive, got %r'
                         % time_limit)
    started = time.monotonic()
    fixed = common.fixed_instances(snap)
    hosts_before = len(snap.hosts_in_use())
    movable = sum(1 for i in snap.instances if i.uuid not in fixed)
    if not movable:
        return common.unchanged(snap, hosts_before, fixed, started,
                                'nothing movable')
    full = movable <= full_model_max
    agg, agg_status, h_targets, drained, passes, pooled = _first_plan(
        snap, fixed, started, time_limit, mip_gap, first_share, full,
        hosts_before)
    # Up to COMPLETE_MAX_HOSTS (the cells the bound guides), moves are
    # undone at the same hosts and the moves bound is the pooled one's;
    # past it both would cost the larger cells more than they gain. (A
    # large cell's undo makes one round: in a 10,000-host cell the second
    # and third undid 3 moves of 15,801, in 40% of the time.)
    small = hosts_before <= COMPLETE_MAX_HOSTS
    if small:
        h_targets = heuristic.undo_moves(
            snap, fixed, h_targets,
            rounds=1 if hosts_before > LARGE_CELL_HOSTS else 3)
    h_hosts = hosts_before - len(drained)
    lower = min(agg, h_hosts)
    # (A large cell's pooled moves bound only when the Lagrangian one does
    # not prove its plan within moves_gap.)
    moves_lb = bound.moves_lower_bound(
        snap, fixed, h_hosts,
        pooled_seconds=min(0.05 * time_limit, 2.0) if small else 0,
        lagrange_seconds=_lagrange_seconds(hosts_before, time_limit),
        upper=len(h_targets), cache=pooled,
        enough=(len(h_targets) / (1.0 + moves_gap)
                if hosts_before > LARGE_CELL_HOSTS else None)) or 0
    hint = common.Hint(agg, h_targets, passes)
    met = (common.gap_pct(h_hosts, lower) <= mip_gap * 100.0 + 1e-9
           and len(h_targets) <= moves_lb * (1.0 + moves_gap) + 1e-9)
    areas = ''
    if (not full and h_hosts < hosts_before
            and hosts_before <= NEIGHBOURHOOD_MAX_HOSTS
            and len(h_targets) > moves_lb * (1.0 + moves_gap) + 1e-9):
        h_targets, areas = _neighbourhoods(
            snap, fixed, h_targets, started + NEIGHBOURHOOD_SHARE * time_limit)
        met = (common.gap_pct(h_hosts, lower) <= mip_gap * 100.0 + 1e-9
               and len(h_targets) <= moves_lb * (1.0 + moves_gap) + 1e-9)
    if met or not full:
        status = ('heuristic (%d passes; pooled bound %s)%s%s'
                  % (passes, agg_status, areas, '' if met else
                     '; gap not met, %d movable instances is past '
                     'full_model_max_instances' % movable))
        LOG.info('Plan: %d -> %d hosts (pooled bound %d), %d moves (bound '
                 '%d): %s', hosts_before, h_hosts, lower, len(h_targets),
                 moves_lb, status)
        return _heuristic_result(snap, fixed, started, hosts_before,
                                 h_hosts, lower, h_targets, moves_lb,
                                 status)
    return _milp(snap, fixed, hint, time_limit, mip_gap, first_share,
                 moves_gap, started)


def _first_plan(snap, fixed, started, time_limit, mip_gap, first_share,
                full, hosts_before):
    """The cheap part of :func:`solve`: the pooled bound, the heuristics.

    :returns: ``(bound, its status, targets, drained, passes, cache)``;
        ``cache`` the pooled model's parts, for the moves bound.
    """
    keep, pooled = {}, {}
    # A large cell's pooled bound is its LP relaxation first: its MILP
    # runs only when that bound does not prove the heuristic's plan
    # within mip_gap (below).
    large = hosts_before > LARGE_CELL_HOSTS
    bound_seconds = min(0.15 * time_limit, 10.0)
    agg, agg_status = bound.hosts_lower_bound(
        snap, fixed, bound_seconds, keep=keep, cache=pooled,
        milp=not large)
    share = first_share * 0.5 if full else 0.9
    # Without the MILP to follow, the restarts may use most of the time.
    good_enough = (math.floor(agg / (1.0 - mip_gap) + 1e-9)
                   if mip_gap < 1.0 else None)
    # (In a large cell of several host shapes the completion is the one
    # that gets close: the drain leaves holes too small for the large
    # instances, and runs only when the completion falls short.)
    h_targets, drained, passes = _heuristics(
        snap, fixed, started, share * time_limit, agg, keep, good_enough,
        restart_share=0.6 if full else 0.9,
        complete_first=large and len(
            {tuple((d.cores, d.ways) for d in h.domains)
             for h in snap.hosts}) > 1)
    after = hosts_before - len(drained)
    if large and common.gap_pct(after, min(agg, after)) \
            > mip_gap * 100.0 + 1e-9:
        more, more_status = bound.hosts_lower_bound(
            snap, fixed, bound_seconds, cache=pooled)
        if more > agg:
            agg, agg_status = more, more_status
    return agg, agg_status, h_targets, drained, passes, pooled


def _heuristic_result(snap, fixed, started, hosts_before, h_hosts, lower,
                      h_targets, moves_lb, status):
    """:func:`solve`'s result when the heuristic's plan is the plan."""
    if h_hosts >= hosts_before:
        result = common.unchanged(snap, hosts_before, fixed, started,
                                  status)
        result.lower_bound = lower
        result.gap_pct = common.gap_pct(hosts_before, lower)
        return result
    return common.Result(
        hosts_before=hosts_before, hosts_after=h_hosts,
        lower_bound=lower, gap_pct=common.gap_pct(h_hosts, lower),
        targets=h_targets,
        moves_lower_bound=min(moves_lb, len(h_targets)),
        status=status, build_s=0.0,
        solve_s=time.monotonic() - started, fixed=fixed)


def _lagrange_seconds(hosts_before, time_limit):
    """Time for the Lagrangian moves bound; 0 past LAGRANGE_MAX_HOSTS."""
    if hosts_before > LAGRANGE_MAX_HOSTS:
        return 0.0
    return min(0.1 * time_limit, 3.0)


def _neighbourhoods(snap, fixed, targets, deadline):
    """``(targets, status)``: the per-host model's fewer moves, by areas.

    :func:`neighbourhood.improve` with the MILP's second stage
    (:meth:`model.Milp.moves_from`) on each neighbourhood, every
    anti-affinity group explicit there.
    """
    def solve(sub, sub_fixed, now, hosts_after, seconds):
        groups = {gi for gi, g in enumerate(sub.server_groups)
                  if g.policy == 'anti-affinity'}
        milp = model.Milp(sub, sub_fixed, groups, seconds, time.monotonic())
        if milp.c is None:
            return None
        return milp.moves_from(now, hosts_after)

    if time.monotonic() + neighbourhood.SOLVE_SECONDS > deadline:
        return targets, ''
    got = neighbourhood.improve(snap, fixed, targets, deadline, solve)
    LOG.info('Plan: %d neighbourhood(s) of the per-host model, %d with '
             'fewer moves: %d -> %d moves', got.tried, got.improved,
             len(targets), len(got.targets))
    return got.targets, ('; %d neighbourhoods, %d fewer moves'
                         % (got.tried, got.saved))


def _heuristics(snap, fixed, started, seconds, lower, keep, good_enough,
                restart_share, complete_first=False):
    """``(targets, drained, passes)``: the best plan of the heuristics.

    One plain drain (:func:`heuristic.drain`, emptiest hosts first); when
    it is not within ``good_enough`` hosts and the bound's solution can
    guide one, the bin completion that closes the hosts that solution
    closes (:func:`heuristic.complete`, up to 80% of the time; up to
    :data:`COMPLETE_MAX_HOSTS` hosts in use) and the
    repack (:func:`heuristic.repack`, up to 60%); then, still not within
    ``good_enough``, the drain with restarts (:func:`heuristic.best_of`)
    in the rest. Fewer hosts win, then fewer moves. With
    ``complete_first``, the completion goes before the plain drain, which
    runs only when the completion is not within ``good_enough``.
    """
    in_use = len(snap.hosts_in_use())
    enough = max(lower, good_enough or 0)
    guided = bool(keep) and in_use <= COMPLETE_MAX_HOSTS
    # (The room of snap worked out once, for all of them.)
    base = heuristic.prepare(snap)
    stages = [
        lambda: heuristic.drain(snap, fixed, base=base),
        lambda: (heuristic.complete(snap, fixed, keep,
                                    started + 0.8 * seconds, base=base)
                 if guided else None),
        lambda: (heuristic.repack(snap, fixed, keep, started + 0.6 * seconds,
                                  base=base)
                 if guided else None)]
    if complete_first:
        stages[:2] = stages[1::-1]
    best, passes = None, 0
    for stage in stages:
        got = stage()
        if got is None:
            continue
        passes += 1
        if best is None or _fewer(got, best):
            best = got
            if in_use - len(got[1]) <= enough:
                return best[0], best[1], passes
    targets, drained, more = heuristic.best_of(
        snap, fixed, started + seconds, lower, restart_share=restart_share,
        good_enough=good_enough, base=base)
    if _fewer((targets, drained), best):
        return targets, drained, passes + more
    return best[0], best[1], passes + more


def _fewer(plan, than):
    """Whether ``plan`` keeps fewer hosts than ``than``, then moves less."""
    return (-len(plan[1]), len(plan[0])) < (-len(than[1]), len(than[0]))


def _milp(snap, fixed, hint, time_limit, mip_gap, first_share, moves_gap,
          started):
    """The MILP stage; the heuristic and the moves bound between its two.

    Solved again with the anti-affinity groups it could not pair.
    """
    explicit = set()
    while True:
        left = max(time_limit - (time.monotonic() - started), 1.0)
        try:
            return _milp_once(snap, fixed, hint, left, mip_gap, first_share,
                              moves_gap, started, explicit)
        except model.PairingFailed as exc:
            new = exc.groups - explicit
            if not new:
                raise
            LOG.info('Plan MILP: anti-affinity group(s) %s need their own '
                     'constraints; solving again', sorted(new))
            explicit |= new


def _milp_once(snap, fixed, hint, time_limit, mip_gap, first_share,
               moves_gap, started, explicit):
    """Fewest hosts; drain what HiGHS closes; the moves bound; fewest moves."""
    milp = model.Milp(snap, fixed, explicit, time_limit, started)
    done = milp.fewest_hosts(hint, mip_gap, first_share)
    if done is not None:
        return done
    if milp.closing is not None:
        # (Its moves undone where the hosts allow: the second stage starts
        # from the fewer, and a busy machine that cuts it short keeps
        # them.)
        drained = heuristic.drain(snap, fixed, only=milp.closing)
        milp.restart(None if drained is None else
                     heuristic.undo_moves(snap, fixed, drained[0]))
    floor = bound.moves_lower_bound(
        snap, fixed, milp.hosts_after,
        pooled_seconds=min(0.05 * time_limit, 2.0),
        lagrange_seconds=_lagrange_seconds(milp.hosts_before,
                                           time_limit)) or 0
    return milp.fewest_moves(floor, mip_gap, moves_gap)


def _plan_cell(cell, snap, time_limit, mip_gap, moves_gap, full_model_max):
    """One cell's moves, in a safe order, each one needed; and why.

    The cyclic garbage collector waits meanwhile (:func:`common.no_gc`):
    the heuristics and the ordering make and drop objects by the million,
    and its collections took a quarter to a third of their time in a cell
    of 10,000 hosts.
    """
    with common.no_gc():
        return _plan_cell_now(cell, snap, time_limit, mip_gap, moves_gap,
                              full_model_max)


def _plan_cell_now(cell, snap, time_limit, mip_gap, moves_gap,
                   full_model_max):
    result = solve(snap, time_limit=time_limit, mip_gap=mip_gap,
                   moves_gap=moves_gap, full_model_max=full_model_max)
    before = result.hosts_before
    lower = min(result.lower_bound, before)
    first_fixed = result.fixed
    where = '' if cell is None else 'cell %s: ' % cell
    if not result.targets:
        return _cell(cell, result, before, before, lower, [], [], set(),
                     '%sno plan uses fewer than the %d hosts in use now '
                     '(at least %d are needed)' % (where, before, lower))
    moves, left_out = ordering.order(snap, result.targets, detour=True)
    moves, dropped = ordering.needed_only(snap, moves)
    resolved = False
    if left_out:
        # Solve again with the blocked instances kept where they are; keep
        # whichever plan frees more hosts (then, fewer moves).
        again = _without_blocked(snap, left_out, time_limit / 2, mip_gap,
                                 moves_gap, full_model_max)
        if again is not None and _better(snap, again[0], moves):
            LOG.info('Plan: solved again without the %d blocked move(s)',
                     len(left_out))
            result, moves, dropped = again[1], again[0], []
            resolved = True
    after_hosts = ordering.hosts_in_use_after(snap, moves)
    after = len(after_hosts)
    freed = snap.hosts_in_use() - after_hosts
    why = ''
    if left_out and resolved:
        why = ('%s%d move(s) of the first plan had no safe order, even '
               'through a host with room; solved again with those '
               'instances kept in place (first: %s: %s)'
               % (where, len(left_out), left_out[0]['uuid'],
                  left_out[0]['reason']))
    elif left_out:
        first = '%s: %s' % (left_out[0]['uuid'], left_out[0]['reason'])
        why = ('%s%d move(s) of the solver\'s plan (%d -> %d hosts) left '
               'out for want of a safe order, even through a host with '
               'room (first: %s)'
               % (where, len(left_out), before, result.hosts_after, first))
        if dropped:
            why += ('; %d move(s) that then freed nothing dropped'
                    % len(dropped))
        if not moves:
            why += '; so nothing moves'
    if after == result.hosts_after and not resolved:
        moves_lower = result.moves_lower_bound
    else:
        # (A plan solved again is bounded as the first problem is.)
        moves_lower = bound.moves_lower_bound(
            snap, first_fixed, after,
            pooled_seconds=(min(0.05 * time_limit, 2.0)
                            if before <= COMPLETE_MAX_HOSTS else 0),
            lagrange_seconds=_lagrange_seconds(before, time_limit),
            upper=len(moves)) or 0
    moves_lower = min(moves_lower, len(moves))
    return _cell(cell, result, before, after, min(lower, after), moves,
                 left_out, freed, why, moves_lower)


def _without_blocked(snap, left_out, time_limit, mip_gap, moves_gap,
                     full_model_max):
    """``(moves, result)`` of a plan that keeps ``left_out`` in place."""
    blocked = {lo['uuid']: lo['reason'] for lo in left_out}
    insts = [dataclasses.replace(i, migratable=False,
                                 reason='no safe order for its move (%s)'
                                 % blocked[i.uuid])
             if i.uuid in blocked else i for i in snap.instances]
    fixed_snap = snap_mod.Snapshot(snap.hosts, insts, snap.server_groups,
                                   snap.source, snap.taken_at)
    result = solve(fixed_snap, time_limit=max(time_limit, 1.0),
                   mip_gap=mip_gap, moves_gap=moves_gap,
                   full_model_max=full_model_max)
    moves, still = ordering.order(snap, result.targets, detour=True)
    if still:
        return None
    moves, _ = ordering.needed_only(snap, moves)
    return moves, result


def _better(snap, moves, than):
    """Whether ``moves`` free more hosts than ``than`` (then: fewer)."""
    def key(mv):
        return (len(ordering.hosts_in_use_after(snap, mv)), len(mv))
    return key(moves) < key(than)


def _cell(cell, result, before, after, lower, moves, left_out, freed, why,
          moves_lower=0):
    return {'cell': cell, 'result': result, 'before': before,
            'after': after, 'lower': lower, 'moves': moves,
            'left_out': left_out, 'freed': freed, 'why': why,
            'moves_lower': moves_lower}
