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
"""Merge NFs into fewer classes of service with a min-cost flow. Pure.

When more NFs need a class of their own than there are classes of service
left, NFs that hurt each other least share one, as NetContainer (Hu et
al.) groups buffers into cache colours: a bipartite flow graph from NFs to
classes, each class seeded with an *anchor* NF, each edge costing what
the NF and the anchor would lose by sharing, each class taking at most its
share of the NFs. The flow is solved as a linear program by HiGHS (the
transportation polytope is integral, so the simplex answer is an
assignment); nothing here is a hand-written flow solver.

The sharing cost follows footprint theory's intuition: sharing a class
leaves each NF the part of it that its own footprint holds, so NF ``a``
loses about ``miss_a * fp_b / (fp_a + fp_b)`` and the pair costs the sum
(``fp`` the LLC occupancy, ``miss`` the memory bandwidth; both measured by
CMT/MBM, no miss-ratio curve profiling needed).
"""

import math

import numpy as np

_EPS = 1.0


def sharing_cost(a, b):
    """Extra misses (bytes/s) ``a`` and ``b`` cause each other by sharing.

    :param a: :class:`model.Reading` of one NF; ``b`` of the other.
    """
    fa = max(a.occupancy_bytes, 0.0) + _EPS
    fb = max(b.occupancy_bytes, 0.0) + _EPS
    return (max(a.miss_bw, 0.0) * fb + max(b.miss_bw, 0.0) * fa) / (fa + fb)


def anchors(nfs, readings, k):
    """``k`` NFs that should not share a class.

    The heaviest misser first, then each time the NF whose cheapest
    pairing with a chosen anchor costs the most (farthest-point).
    """
    order = sorted(nfs, key=lambda n: (-readings[n.uuid].miss_bw, n.uuid))
    chosen = [order[0]]
    # Cheapest pairing of each candidate with the anchors so far, kept up
    # to date as anchors are added: k passes over the NFs, not k squared.
    rest = order[1:]
    near = [sharing_cost(readings[n.uuid], readings[order[0].uuid])
            for n in rest]
    while len(chosen) < k:
        # Highest cheapest-pairing cost; ties to the earlier (heavier) NF.
        i = max(range(len(rest)), key=lambda j: (near[j], -j))
        best = rest.pop(i)
        near.pop(i)
        chosen.append(best)
        r = readings[best.uuid]
        near = [min(c, sharing_cost(readings[n.uuid], r))
                for n, c in zip(rest, near)]
    return chosen


def group(nfs, readings, k):
    """Split ``nfs`` into at most ``k`` groups of least total sharing cost.

    :returns: a list of lists of NFs, anchors' groups in anchor order.
    :raises ValueError: when ``k`` < 1 and there are NFs.
    """
    nfs = list(nfs)
    if not nfs:
        return []
    if k < 1:
        raise ValueError('cannot group %d NFs into no class of service'
                         % len(nfs))
    if len(nfs) <= k:
        return [[n] for n in nfs]
    heads = anchors(nfs, readings, k)
    others = [n for n in nfs if n not in heads]
    # Balanced class budgets, as the colour budgets of the sink edges.
    cap = math.ceil(len(nfs) / k) - 1
    assign = _min_cost_assignment(
        [[sharing_cost(readings[u.uuid], readings[h.uuid]) for h in heads]
         for u in others], cap)
    groups = [[h] for h in heads]
    for u, v in zip(others, assign):
        groups[v].append(u)
    return groups


def _min_cost_assignment(cost, cap):
    """Each row to one column, at most ``cap`` rows per column, least cost.

    :returns: the column of each row.
    """
    import highspy

    rows, cols = len(cost), len(cost[0])
    n = rows * cols
    lp = highspy.HighsLp()
    lp.num_col_ = n
    lp.num_row_ = rows + cols
    scale = max((c for r in cost for c in r), default=0.0) or 1.0
    lp.col_cost_ = np.array([cost[u][v] / scale for u in range(rows)
                             for v in range(cols)])
    lp.col_lower_ = np.zeros(n)
    lp.col_upper_ = np.ones(n)
    # Rows 0..rows-1: each NF sends one unit; then each class takes <= cap.
    lp.row_lower_ = np.array([1.0] * rows + [0.0] * cols)
    lp.row_upper_ = np.array([1.0] * rows + [float(cap)] * cols)
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
