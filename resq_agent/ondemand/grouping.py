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
"""Merge NFs into fewer classes of service: NetContainer's min-cost flow.

When more NFs need a class of their own than there are classes of service
left, NFs that hurt each other least share one, as NetContainer (Hu et
al., seed 003 §5) groups buffers into cache colours:

* **Cost of a class** (§4.2): the miss bandwidth its members lose by
  sharing a class of the class's size, against each alone in its share of
  it, from each NF's miss-ratio curve by footprint composition
  (:mod:`.mrc`): every member against all the others, not against one.
  A member's losses count times its priority (``model.NF.priority``).
* **Flow graph** (§5.1-5.2): a bipartite graph from NFs to classes, each
  class seeded with an *anchor* NF (the anchors are the NFs that are
  dearest to put together, chosen farthest-point), the edge from an NF to
  a class costing what the NF adds to the class as it stands (the paper's
  "cost of the edge as a function" of the cluster), the sink edges
  carrying each class's budget of NFs (its colour budget). The flow is a
  transportation linear program solved by HiGHS (integral, so the simplex
  answer is an assignment); its edge costs are then re-priced against the
  classes it formed and it is solved again, a few rounds.
* **Priorities** (§5.2) on the source edges: every NF sends one unit, so a
  constant cost there could not change the answer; the priority instead
  weighs the NF's own losses in every class cost, so that fewer NFs share
  with a high-priority one, the effect the paper wants of it.
* **Local search**: from each round's answer, moves and swaps of NFs
  between classes on the exact class costs while one lowers the total
  (the edge costs of a flow are only marginal: a class's cost is not a
  sum of its members' edges); the cheapest result wins. A search makes at
  most ``SEARCH_PASSES`` passes and ``SEARCH_STEPS_PER_NF`` improving
  moves or swaps per NF: a bound in steps, not in seconds, so the answer
  does not depend on the machine's speed or load.
* **Between rounds** (the agent re-plans every period): given the last
  period's grouping (``start``), the search also starts from it, beside
  the flow's rounds, when it still covers at least half of the NFs in no
  more classes than there are: NFs that left are dropped, new ones go
  to a free class or where they add least, and classes are split while
  there are fewer than ``k``. The cheapest result wins and the last
  grouping's on a tie: a re-plan is never worse than one from scratch,
  the same NFs with the same curves give the same grouping again, and an
  NF whose curve changed is moved where it now costs least.
"""

import math

import numpy as np

from resq_agent.ondemand import mrc

DEFAULT_WAY_BYTES = 1441792
# Re-pricing rounds of the flow, and passes of the local search.
FLOW_ROUNDS = 3
SEARCH_PASSES = 8
# Improving moves and swaps one local search makes at most, per NF.
SEARCH_STEPS_PER_NF = 4
_TOL = 1e-9


class Costs:
    """Exact, memoised class costs of one grouping problem.

    :param curves: one :class:`mrc.Curve` per NF (by index).
    :param weights: one priority per NF.
    :param ways_per_nf: ways each member brings to its class (a class of
        ``m`` NFs has ``m * ways_per_nf`` ways, as :mod:`.maxmin` sizes
        them); None: a class is as large as its members' occupancy.
    :param occupancy: measured bytes per NF (for ``ways_per_nf`` None).

    A class is memoised by the bit mask of its members' indices (bit
    ``i`` for NF ``i``), so a lookup costs an integer or, not a set.
    """

    def __init__(self, curves, weights, ways_per_nf, way_bytes, occupancy):
        self.curves = curves
        self.composer = mrc.Composer(curves)
        self.weights = weights
        self.ways_per_nf = ways_per_nf
        self.way_bytes = way_bytes
        self.occupancy = occupancy
        self._memo = {}

    def size(self, members):
        """Bytes of a class of ``members`` (indices)."""
        if self.ways_per_nf is not None:
            return len(members) * self.ways_per_nf * self.way_bytes
        return max(sum(self.occupancy[i] for i in members), self.way_bytes)

    def of(self, members):
        """The class cost of ``members`` (an iterable of indices)."""
        return self.of_mask(mask(members))

    def of_mask(self, key):
        """The class cost of the members of bit mask ``key``."""
        got = self._memo.get(key)
        if got is not None:
            return got
        if key & (key - 1) == 0:
            # Fewer than two members.
            return 0.0
        idx = indices(key)
        got = self._memo[key] = self.composer.extra(
            idx, self.size(idx), [self.weights[i] for i in idx])
        return got

    def of_each(self, members, candidates):
        """``[of(members + [u]) for u in candidates]``, vectorised."""
        members = list(members)
        base = mask(members)
        keys = [base | 1 << u for u in candidates]
        memo = self._memo
        todo = [u for u, key in zip(candidates, keys) if key not in memo]
        if todo and (members or len(todo) > 1):
            size = self.size(members + [todo[0]])
            if self.ways_per_nf is None:
                # Sizes differ per candidate: one at a time.
                for u in todo:
                    self.of_mask(base | 1 << u)
            else:
                for u, c in zip(todo, self.composer.extra_with(
                        members, size, todo, self.weights)):
                    memo[base | 1 << u] = float(c)
        return [self.of_mask(key) for key in keys]

    def pairs(self):
        """Every class of two NFs, costed at once.

        Classes of a fixed size per member only; each pair's cost is
        exactly the one :meth:`of` gives. The anchors, the flow's first
        edges and a search among classes of one or two NFs ask for most
        of the pairs: one array operation instead of one each.
        """
        if self.ways_per_nf is None or len(self.curves) < 2:
            return
        n = len(self.curves)
        first, second = [], []
        for i in range(n):
            for j in range(i + 1, n):
                if (1 << i | 1 << j) not in self._memo:
                    first.append(i)
                    second.append(j)
        got = self.composer.pair_extras(first, second, self.size((0, 1)),
                                        self.weights)
        for i, j, c in zip(first, second, got):
            self._memo[1 << i | 1 << j] = float(c)

    def total(self, groups):
        return sum(self.of(g) for g in groups)


def mask(members):
    """The bit mask of ``members`` (indices)."""
    key = 0
    for i in members:
        key |= 1 << i
    return key


def indices(key):
    """The indices of bit mask ``key``, increasing."""
    out, i = [], 0
    while key:
        if key & 1:
            out.append(i)
        key >>= 1
        i += 1
    return out


def _weights(nfs):
    out = []
    for n in nfs:
        p = getattr(n, 'priority', 1.0)
        p = 1.0 if p is None else float(p)
        if not math.isfinite(p) or p <= 0:
            raise ValueError('on-demand NF %s has priority %r: a priority '
                             'must be a positive number (1 is the default, '
                             'higher shares less)' % (n.uuid, p))
        out.append(p)
    return out


def _budgets(budgets, n, k):
    """The colour budget (most NFs) of each of ``k`` classes."""
    if budgets is None:
        return [math.ceil(n / k)] * k
    budgets = [int(b) for b in budgets]
    if len(budgets) != k or min(budgets) < 1 or sum(budgets) < n:
        raise ValueError('class budgets %s cannot take %d NFs in %d classes:'
                         ' give one budget of at least 1 per class, adding '
                         'up to the NFs or more' % (budgets, n, k))
    return budgets


def anchors(costs, k):
    """Indices of ``k`` NFs that should not share a class.

    The NF that loses most (weighted) when squeezed to half its share
    first, then each time the NF whose cheapest pairing with a chosen
    anchor costs the most (farthest-point).
    """
    n = len(costs.curves)

    def squeeze(i):
        alone = costs.size([i])
        c = costs.curves[i]
        return costs.weights[i] * (c.miss_bw(alone / 2) - c.miss_bw(alone))

    order = sorted(range(n), key=lambda i: (-squeeze(i), i))
    chosen = [order[0]]
    rest = order[1:]
    near = costs.of_each([order[0]], rest)
    while len(chosen) < k:
        j = max(range(len(rest)), key=lambda x: (near[x], -x))
        best = rest.pop(j)
        near.pop(j)
        chosen.append(best)
        near = [min(c, d)
                for c, d in zip(near, costs.of_each([best], rest))]
    return chosen


def group(nfs, readings, k, ways_per_nf=None, way_bytes=DEFAULT_WAY_BYTES,
          curves=None, budgets=None, start=None):
    """Split ``nfs`` into at most ``k`` groups of least total class cost.

    :param readings: ``{uuid: model.Reading}``.
    :param ways_per_nf: ways per member of a class (see :class:`Costs`).
    :param curves: ``{uuid: mrc.Curve}``; an NF without one gets
        :func:`mrc.curve_for` its reading.
    :param budgets: most NFs per class, one per class (colour budgets);
        None: balanced, ``ceil(len(nfs) / k)`` each.
    :param start: the last grouping, uuids per class (any NFs): the
        local search also starts from it, first, when it still fits
        (:func:`carry`; module doc); balanced budgets only.
    :returns: a list of lists of NFs, one per class (budget order).
    :raises ValueError: when ``k`` < 1 and there are NFs, on budgets that
        cannot take the NFs, or on a priority that is not positive.
    """
    nfs = list(nfs)
    if not nfs:
        return []
    if k < 1:
        raise ValueError('cannot group %d NFs into no class of service'
                         % len(nfs))
    if len(nfs) <= k:
        return [[n] for n in nfs]
    caps = _budgets(budgets, len(nfs), k)
    curves = curves or {}
    table = [curves.get(n.uuid)
             or mrc.curve_for(readings[n.uuid], way_bytes) for n in nfs]
    costs = Costs(table, _weights(nfs), ways_per_nf, way_bytes,
                  [readings[n.uuid].occupancy_bytes for n in nfs])
    costs.pairs()
    begin = None
    if start is not None and budgets is None:
        begin = carry(costs, [n.uuid for n in nfs], start, caps)
    # The local search from every round of the flow: each is a start.
    starts = flow_rounds(costs, caps)
    if begin is not None:
        # And from the last grouping, first: the cheapest wins, that one
        # on a tie. From the last alone the search can stay in a local
        # optimum well above the flow's (twice its cost in a fifth of the
        # re-plans of bench ondemand); beside it, a re-plan is never
        # worse than one from scratch and keeps its classes when they
        # are as good.
        starts.insert(0, begin)
    groups = min((local_search(costs, g, caps) for g in starts),
                 key=costs.total)
    return [[nfs[i] for i in g] for g in groups]


def carry(costs, uuids, start, caps):
    """The last grouping ``start`` (uuids per class) over ``uuids`` now.

    :returns: index groups, one per class of ``caps`` (all equal), or None
        when ``start`` does not fit: it places fewer than half of the NFs,
        has more classes than ``caps`` or a class over its cap, or names
        an NF twice.
    """
    k, cap = len(caps), caps[0]
    index = {u: i for i, u in enumerate(uuids)}
    groups, placed = [], set()
    for members in start:
        g = [index[u] for u in members if u in index]
        if not g:
            continue
        if placed.intersection(g) or len(g) > cap:
            return None
        placed.update(g)
        groups.append(g)
    if len(groups) > k or 2 * len(placed) < len(uuids):
        return None
    for i in range(len(uuids)):
        if i in placed:
            continue
        if len(groups) < k:
            groups.append([i])
            continue
        # Where it adds least; the first such class on a tie.
        room = [v for v, g in enumerate(groups) if len(g) < cap]
        adds = [costs.of(groups[v] + [i]) - costs.of(groups[v])
                for v in room]
        groups[room[adds.index(min(adds))]].append(i)
    while len(groups) < k:
        # Fewer classes than there are: the member whose leaving saves
        # its class most gets one of its own.
        best = None
        for v, g in enumerate(groups):
            if len(g) < 2:
                continue
            whole = costs.of(g)
            for u in g:
                saves = whole - costs.of([i for i in g if i != u])
                if best is None or saves > best[0]:
                    best = (saves, v, u)
        _, v, u = best
        groups[v].remove(u)
        groups.append([u])
    return groups


def flow_rounds(costs, caps):
    """Anchors and the re-priced min-cost flow: each round's index groups.

    :returns: a list of groupings (index groups per class), one a round,
        until a round gives back the classes it was priced on.
    """
    k = len(caps)
    heads = anchors(costs, k)
    # The dearest anchor to the class of the smallest budget.
    slots = sorted(range(k), key=lambda v: (caps[v], v))
    seeds = [None] * k
    for h, v in zip(heads, slots):
        seeds[v] = h
    others = [i for i in range(len(costs.curves)) if i not in heads]
    row = {u: r for r, u in enumerate(others)}
    current = [[h] for h in seeds]
    rounds = []
    for _ in range(FLOW_ROUNDS):
        # Marginal cost of each NF in each class as the class stands.
        edge = [[0.0] * k for _ in others]
        for v, g in enumerate(current):
            out = [u for u in others if u not in g]
            base = costs.of(g)
            for u, c in zip(out, costs.of_each(g, out)):
                edge[row[u]][v] = c - base
            for u in g:
                if u in row:
                    rest = [i for i in g if i != u]
                    edge[row[u]][v] = (base - costs.of(rest))
        assign = min_cost_assignment(edge, [c - 1 for c in caps])
        groups = [[h] for h in seeds]
        for u, v in zip(others, assign):
            groups[v].append(u)
        if groups == current:
            break
        rounds.append(groups)
        current = groups
    return rounds


def local_search(costs, groups, caps, steps=None):
    """Moves and swaps between classes while one lowers the total cost.

    :param steps: improving moves and swaps made at most; None:
        ``SEARCH_STEPS_PER_NF`` per NF.
    """
    groups = [list(g) for g in groups]
    if steps is None:
        steps = SEARCH_STEPS_PER_NF * sum(len(g) for g in groups)
    # Pairs of classes found with no improving swap, as they were then.
    settled = set()
    for _ in range(SEARCH_PASSES):
        improved = False
        for s in range(len(groups)):
            for u in list(groups[s]):
                # A class keeps at least one NF.
                if steps > 0 and len(groups[s]) > 1 and _best_move(
                        costs, groups, caps, s, u):
                    improved = True
                    steps -= 1
        for s in range(len(groups)):
            for v in range(s + 1, len(groups)):
                if steps <= 0:
                    return groups
                if len(groups[s]) == len(groups[v]) == 1:
                    # Two NFs alone: swapping them changes nothing.
                    continue
                key = (frozenset(groups[s]), frozenset(groups[v]))
                if key in settled:
                    continue
                made = _swaps(costs, groups[s], groups[v], steps)
                if made:
                    improved = True
                    steps -= made
                else:
                    settled.add(key)
        if not improved:
            break
    return groups


def _best_move(costs, groups, caps, s, u):
    """Move ``u`` out of class ``s`` where that helps most; True if moved."""
    src = groups[s]
    without = [i for i in src if i != u]
    gain_src = costs.of(src) - costs.of(without)
    best, best_v = -_TOL, None
    for v, g in enumerate(groups):
        if v == s or len(g) >= caps[v]:
            continue
        delta = costs.of(g + [u]) - costs.of(g) - gain_src
        if delta < best:
            best, best_v = delta, v
    if best_v is None:
        return False
    src.remove(u)
    groups[best_v].append(u)
    return True


def _swaps(costs, a, b, most=None):
    """Swap members of ``a`` and ``b``, best first, while that helps.

    :param most: swaps made at most (None: ``len(a) + len(b)``).
    :returns: how many swaps were made.
    """
    made = 0
    for _ in range(len(a) + len(b) if most is None
                   else min(len(a) + len(b), most)):
        before = costs.of(a) + costs.of(b)
        # into_a[x][y]: a without its x-th member, plus b's y-th.
        into_a = [costs.of_each([i for i in a if i != u], b) for u in a]
        into_b = [costs.of_each([i for i in b if i != w], a) for w in b]
        delta, x, y = min((into_a[x][y] + into_b[y][x] - before, x, y)
                          for x in range(len(a)) for y in range(len(b)))
        if delta >= -_TOL - 1e-9 * before:
            break
        a[x], b[y] = b[y], a[x]
        made += 1
    return made


def min_cost_assignment(cost, caps):
    """Each row to one column, at most ``caps[v]`` rows in column v.

    :returns: the column of each row.
    """
    import highspy

    rows, cols = len(cost), len(cost[0])
    n = rows * cols
    lp = highspy.HighsLp()
    lp.num_col_ = n
    lp.num_row_ = rows + cols
    scale = max((abs(c) for r in cost for c in r), default=0.0) or 1.0
    lp.col_cost_ = np.array([cost[u][v] / scale for u in range(rows)
                             for v in range(cols)])
    lp.col_lower_ = np.zeros(n)
    lp.col_upper_ = np.ones(n)
    # Rows 0..rows-1: each NF sends one unit; then each class takes <= cap.
    lp.row_lower_ = np.array([1.0] * rows + [0.0] * cols)
    lp.row_upper_ = np.array([1.0] * rows + [float(c) for c in caps])
    starts, index = [0], []
    for u in range(rows):
        for v in range(cols):
            index.extend((u, rows + v))
            starts.append(len(index))
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = np.array(starts)
    lp.a_matrix_.index_ = np.array(index)
    lp.a_matrix_.value_ = np.ones(len(index))
    solver = highspy.Highs()
    solver.setOptionValue('output_flag', False)
    solver.passModel(lp)
    solver.run()
    status = solver.getModelStatus()
    if status != highspy.HighsModelStatus.kOptimal:
        raise RuntimeError('HiGHS could not group the NFs: %s'
                           % solver.modelStatusToString(status))
    x = solver.getSolution().col_value
    return [max(range(cols), key=lambda v: x[u * cols + v])
            for u in range(rows)]
