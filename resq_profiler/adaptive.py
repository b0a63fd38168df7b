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
"""Adaptive sampling of a monotone curve (ResQ §5.2).

Measure both ends of a grid and its midpoint; while linear interpolation
between an interval's ends misses the measured midpoint by more than the
tolerance, split the interval in two and measure their midpoints. Intervals
are split breadth first, so a measurement budget cuts evenly.

The midpoint test alone can be fooled: a concave curve that bends sharply
near one end of a long interval passes its midpoint test while the chord
misses the bend by more than the tolerance (IPsec's throughput, which is
flat from two ways on, is the example in the catalog). When the caller
says the curve is concave or convex, a second pass bounds the error of
every remaining interval with the chords of its neighbours (the curve is
sandwiched between the chord and their extensions) and splits intervals
whose bound exceeds the tolerance. Pure: the caller passes the measuring
function.
"""

import dataclasses

from resq_profiler import profile


@dataclasses.dataclass
class Result:
    points: list          # sorted (x, y) of every measurement
    checks: list          # (x, predicted, measured, error_pct) per midpoint
    budget_exhausted: bool
    # The worst error of a check whose interval was to be split but the
    # budget ran out first: the interpolation there is still that far off.
    unresolved_error_pct: float = 0.0

    @property
    def max_check_error_pct(self):
        return max((c[3] for c in self.checks), default=0.0)


def _err_pct(predicted, measured):
    if measured == 0:
        return 0.0 if predicted == 0 else float('inf')
    return abs(predicted - measured) / abs(measured) * 100.0


def _line_at(p, q, x):
    return p[1] + (q[1] - p[1]) * (x - p[0]) / (q[0] - p[0])


def _bound_pct(pts, k, shape):
    """Bound on the interpolation error between pts[k] and pts[k+1]."""
    a, b = pts[k], pts[k + 1]
    lines = []
    if k >= 1:
        lines.append((pts[k - 1], a))
    if k + 2 < len(pts):
        lines.append((b, pts[k + 2]))
    if not lines:
        return 0.0
    xs = [a[0], b[0]]
    if len(lines) == 2:
        (p1, q1), (p2, q2) = lines
        s1 = (q1[1] - p1[1]) / (q1[0] - p1[0])
        s2 = (q2[1] - p2[1]) / (q2[0] - p2[0])
        if s1 != s2:
            x = (p2[1] - p1[1] + s1 * p1[0] - s2 * p2[0]) / (s1 - s2)
            if a[0] < x < b[0]:
                xs.append(x)
    worst = 0.0
    for x in xs:
        ext = [_line_at(p, q, x) for p, q in lines]
        chord = _line_at(a, b, x)
        if shape == 'concave':
            gap = min(ext) - chord
        else:
            gap = chord - max(ext)
        if chord:
            worst = max(worst, gap / abs(chord) * 100.0)
    return worst


def sample(measure, grid, tolerance_pct=1.0, max_points=None,
           progress=None, shape=None):
    """Sample ``measure`` on ``grid`` adaptively.

    :param measure: callable ``x -> y``; called once per grid point used.
    :param grid: strictly increasing candidate x values (at least 2).
    :param tolerance_pct: largest accepted interpolation error at a
        midpoint, in percent of the measured value.
    :param max_points: stop splitting once this many points are measured.
    :param progress: optional callable ``(x, y, count)`` after each
        measurement.
    :param shape: ``'concave'``, ``'convex'`` or ``None``; enables the
        neighbour-chord bound described in the module docstring.
    :returns: a :class:`Result`.
    """
    grid = list(grid)
    if len(grid) < 2:
        raise ValueError('an adaptive sample needs at least two grid points')
    if any(b <= a for a, b in zip(grid, grid[1:])):
        raise ValueError('grid must be strictly increasing: %s' % grid)
    if tolerance_pct <= 0:
        raise ValueError('tolerance must be positive, got %s' % tolerance_pct)
    values = {}

    def get(i):
        if i not in values:
            values[i] = measure(grid[i])
            if progress:
                progress(grid[i], values[i], len(values))
        return values[i]

    checks = []
    exhausted = False
    pending = {}          # interval -> error of the check that split it
    get(0)
    get(len(grid) - 1)
    queue = [(0, len(grid) - 1)]
    while queue:
        next_queue = []
        for lo, hi in queue:
            if hi - lo < 2:
                continue
            if max_points is not None and len(values) >= max_points:
                exhausted = True
                break
            mid = (lo + hi) // 2
            y = get(mid)
            x0, x1, xm = grid[lo], grid[hi], grid[mid]
            predicted = values[lo] + (values[hi] - values[lo]) * (
                (xm - x0) / (x1 - x0))
            err = _err_pct(predicted, y)
            checks.append((xm, predicted, y, err))
            pending.pop((lo, hi), None)
            if err > tolerance_pct:
                next_queue.extend([(lo, mid), (mid, hi)])
                for half in ((lo, mid), (mid, hi)):
                    if half[1] - half[0] >= 2:
                        pending[half] = err
        if exhausted:
            break
        queue = next_queue
    if shape not in (None, 'concave', 'convex'):
        raise ValueError('shape must be concave, convex or None: %r' % shape)
    while shape and not exhausted:
        idx = sorted(values)
        pts = [(grid[i], values[i]) for i in idx]
        split = [k for k in range(len(idx) - 1)
                 if idx[k + 1] - idx[k] >= 2
                 and _bound_pct(pts, k, shape) > tolerance_pct]
        if not split:
            break
        for k in split:
            if max_points is not None and len(values) >= max_points:
                exhausted = True
                break
            get((idx[k] + idx[k + 1]) // 2)
    points = sorted((grid[i], y) for i, y in values.items())
    unresolved = max(pending.values(), default=0.0) if exhausted else 0.0
    return Result(points=points, checks=checks, budget_exhausted=exhausted,
                  unresolved_error_pct=unresolved)


def max_error_pct(points, reference):
    """Worst relative error of interpolating ``points`` at ``reference``.

    :param reference: ``(x, y)`` pairs of an exhaustive sweep.
    """
    return max((_err_pct(profile.interpolate(points, x), y)
                for x, y in reference), default=0.0)
