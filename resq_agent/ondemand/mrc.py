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
"""Miss-ratio curves of on-demand NFs and footprint composition. Pure.

NetContainer (seed 003, §4.2) prices a group of buffers sharing a cache
colour with footprint theory: a miss-ratio curve per buffer, composed into
the misses of the group. Here the buffers are NFs and the colour a class of
service. One NF's curve is its *capacity miss bandwidth* ``M(c)``: the
bytes/s it misses, beyond what it would miss holding all it reuses, when
it holds ``c`` bytes of LLC, at its current traffic. By the higher-order
theory of locality the same curve is the slope of its footprint over time
(``dfp/dt = M(fp)``), so the *lifetime* ``lf(c) = integral of dc / M(c)``
is the time it takes to fill ``c`` bytes, and NFs sharing ``C`` bytes each
hold ``fp_i(t)`` for the one window ``t`` with ``sum fp_i(t) = C``
(:func:`compose`).

Where a curve comes from, best first (:func:`curve_for`):

1. **A profile** (the NF's flavor names one, ``resq:profile``, and its
   document reached the agent): its throughput-vs-ways curve gives the
   *shape*. ``1/T(w) - 1/T(peak)`` is the per-packet time the NF loses to
   capacity misses with ``w`` ways, proportional to them at a fixed miss
   penalty (:func:`from_throughput`). The NF's latest CMT/MBM reading sets
   the *scale*: its memory bandwidth at its measured occupancy.
2. **Its CMT/MBM readings** under different allocations (occupancy,
   memory bandwidth pairs the agent has seen over the periods):
   a power-law footprint model ``M(c) = A (1 - c/W)**beta`` is fitted to
   them (:func:`from_readings`), working set ``W`` and skew ``beta`` by
   least squares on the logarithms when the points allow it.
3. **One reading only**: the same model through that point with the prior
   skew ``beta`` = 2 and a working set of twice the occupancy.

:func:`.grouping.group` and :func:`.maxmin.plan` take curves by NF; an NF
given none gets :func:`curve_for` its latest reading, so the prior (3)
until the caller keeps profiles or past readings for it. MBM counts every
miss, compulsory ones and leaked packet data too, so a curve's scale is an
upper bound of the capacity misses.

A curve is tabulated (bytes, bytes/s) and taken as piecewise linear.
"""

import math

import numpy as np

# Prior of a curve fitted to one reading: skew and working set over the
# measured occupancy.
PRIOR_BETA = 2.0
PRIOR_WS_FACTOR = 2.0
# Where a profile's shape is flat (the NF holds more than its knee), its
# scale still comes from the reading, against this share of the one-way
# loss.
_FLAT_FLOOR = 0.05
_BETAS = (1.25, 1.5, 2.0, 2.5, 3.0, 4.0, 6.0)
_GRID = 40
# The grids every fit and tabulation uses, made once: the fit's coarse
# working sets over the top occupancy, its fine ones around the best (one
# coarse step either side), and where a power law is tabulated (1 - c/ws).
_COARSE_WS = np.geomspace(1.02, 50.0, 60)
_STEP = 50.0 ** (1.0 / 59)
_FINE_WS = np.geomspace(1.0 / _STEP, _STEP, 21)
_BETA_GRID = np.array(_BETAS)
_U = np.concatenate(([1.0], np.geomspace(0.95, 1e-3, _GRID - 1)))
_FINE_BETAS = {}


class Curve:
    """Capacity miss bandwidth (bytes/s) against LLC bytes held.

    :param nbytes: increasing cache sizes from 0.
    :param miss_bw: the miss bandwidth at each, not increasing.
    :param source: ``profile``, ``readings`` or ``prior`` (see above).
    """

    def __init__(self, nbytes, miss_bw, source='readings'):
        c = [float(x) for x in nbytes]
        m = [max(float(x), 0.0) for x in miss_bw]
        if len(c) < 2 or len(c) != len(m):
            raise ValueError('a miss-ratio curve needs at least two (bytes, '
                             'miss bandwidth) points of equal count, got %d '
                             'and %d' % (len(c), len(m)))
        if c[0] != 0.0 or any(b <= a for a, b in zip(c, c[1:])):
            raise ValueError('a miss-ratio curve must start at 0 bytes and '
                             'increase, got %s' % c[:4])
        for i in range(1, len(m)):
            m[i] = min(m[i], m[i - 1])
        self.source = source
        self.nbytes = np.array(c)
        self.miss = np.array(m)
        floor = max(m[0] * 1e-9, 1e-3)
        self._lf = np.concatenate(([0.0], np.cumsum(_segment_times(
            self.nbytes, np.maximum(self.miss, floor)))))
        self.tail = max(m[-1], floor)

    @classmethod
    def _tabulated(cls, nbytes, miss, source):
        """A curve of arrays known to be valid.

        ``nbytes`` from 0 and increasing, ``miss`` not negative and not
        increasing: what the constructor checks and makes of any input.
        """
        out = cls.__new__(cls)
        out.source = source
        out.nbytes = nbytes
        out.miss = miss
        floor = max(float(miss[0]) * 1e-9, 1e-3)
        out._lf = np.concatenate(([0.0], np.cumsum(_segment_times(
            nbytes, np.maximum(miss, floor)))))
        out.tail = max(float(miss[-1]), floor)
        return out

    def scaled(self, k):
        """This curve with every miss bandwidth times ``k`` >= 0.

        The same curve as ``Curve(self.nbytes, self.miss * k,
        self.source)``, without checking again what this one's
        construction checked (a non-increasing curve scaled by a
        non-negative factor stays one).
        """
        if not k >= 0.0:
            raise ValueError('a miss-ratio curve scales by a factor of 0 or '
                             'more, got %r' % (k,))
        return Curve._tabulated(self.nbytes, self.miss * float(k),
                                self.source)

    def miss_bw(self, nbytes):
        """Capacity miss bandwidth holding ``nbytes`` (clamped at ends)."""
        return float(np.interp(nbytes, self.nbytes, self.miss))

    def footprint(self, t):
        """Bytes held after a window of ``t`` seconds (array or scalar)."""
        t = np.asarray(t, dtype=float)
        last = self._lf[-1]
        inside = np.interp(t, self._lf, self.nbytes)
        beyond = self.nbytes[-1] + self.tail * (t - last)
        return np.where(t <= last, inside, beyond)

    def lifetimes(self):
        return self._lf


def _segment_times(nbytes, miss):
    """Seconds to fill each segment, the rate linear along it."""
    width = np.diff(nbytes)
    m0, m1 = miss[:-1], miss[1:]
    d = m1 - m0
    flat = np.abs(d) <= 1e-12 * np.maximum(m0, m1)
    ratio = np.log(m1 / m0) / np.where(flat, 1.0, d)
    return width * np.where(flat, 1.0 / m0, ratio)


class Composer:
    """Footprint composition of any subset of ``curves``, fast.

    Every curve's footprint, and its miss bandwidth holding that
    footprint, are tabulated once over one logarithmic grid of windows;
    composing a subset is then a sum of rows and one search.
    """

    GRID = 160

    def __init__(self, curves):
        self.curves = list(curves)
        self._alone = {}
        if not self.curves:
            self.times = np.zeros(1)
            return
        first = min(float(c.lifetimes()[1]) for c in self.curves)
        last = max(float(c.lifetimes()[-1]) for c in self.curves)
        self.times = np.concatenate(([0.0], np.geomspace(
            max(first, 1e-30) * 1e-3, max(last, first) * 1e3, self.GRID)))
        self.held = np.array([c.footprint(self.times) for c in self.curves])
        self.miss = np.array([np.interp(h, c.nbytes, c.miss)
                              for h, c in zip(self.held, self.curves)])
        self.tails = np.array([c.tail for c in self.curves])

    def _own(self, i, nbytes):
        key = (i, nbytes)
        if key not in self._alone:
            self._alone[key] = self.curves[i].miss_bw(nbytes)
        return self._alone[key]

    def shares(self, members, cap_bytes):
        """What ``members`` (indices) hold sharing ``cap_bytes``.

        :returns: ``(bytes held, miss bandwidth)``, arrays.
        """
        idx = list(members)
        held, miss = self.held[idx], self.miss[idx]
        if len(idx) == 1:
            c = self.curves[idx[0]]
            return (np.array([float(cap_bytes)]),
                    np.array([c.miss_bw(cap_bytes)]))
        total = np.add.reduce(held, axis=0)
        j = int(total.searchsorted(cap_bytes))
        if j >= total.size:
            # Beyond the grid every member grows at its tail rate.
            tails = self.tails[idx]
            dt = (cap_bytes - total[-1]) / tails.sum()
            return held[:, -1] + tails * dt, miss[:, -1]
        j = max(j, 1)
        f = (cap_bytes - total[j - 1]) / max(total[j] - total[j - 1], 1e-12)
        f = min(max(f, 0.0), 1.0)
        return (held[:, j - 1] + f * (held[:, j] - held[:, j - 1]),
                miss[:, j - 1] + f * (miss[:, j] - miss[:, j - 1]))

    def extra_with(self, members, cap_bytes, candidates, weights):
        """:meth:`extra` of ``members`` plus each of ``candidates`` in turn.

        :param weights: one weight per curve (all of them, by index).
        :returns: an array, one cost per candidate.
        """
        idx, cand = list(members), list(candidates)
        if not cand:
            return np.zeros(0)
        if not idx:
            return np.zeros(len(cand))
        w = np.asarray(weights, dtype=float)
        totals = self.held[idx].sum(axis=0)[None, :] + self.held[cand]
        j = (totals < cap_bytes).sum(axis=1)
        out = np.empty(len(cand))
        beyond = j >= totals.shape[1]
        for r in np.nonzero(beyond)[0]:
            out[r] = self.extra(idx + [cand[r]], cap_bytes,
                                w[idx + [cand[r]]])
        rows = np.nonzero(~beyond)[0]
        if rows.size:
            jr = np.maximum(j[rows], 1)
            lo = totals[rows, jr - 1]
            hi = totals[rows, jr]
            f = np.clip((cap_bytes - lo) / np.maximum(hi - lo, 1e-12),
                        0.0, 1.0)
            alone = cap_bytes / (len(idx) + 1)
            # The members (a row each) and the candidate, at each window.
            mm = self.miss[idx]
            shared = mm[:, jr - 1] + f * (mm[:, jr] - mm[:, jr - 1])
            own = np.array([self._own(i, alone) for i in idx])
            loss = (w[idx][:, None] * np.maximum(
                shared - own[:, None], 0.0)).sum(axis=0)
            cr = np.array(cand)[rows]
            m0, m1 = self.miss[cr, jr - 1], self.miss[cr, jr]
            own = np.array([self._own(int(i), alone) for i in cr])
            out[rows] = loss + w[cr] * np.maximum(m0 + f * (m1 - m0) - own,
                                                  0.0)
        return out

    def pair_extras(self, first, second, cap_bytes, weights):
        """:meth:`extra` of each class of two, all in one go.

        Row ``r`` is the class of ``first[r]`` and ``second[r]``. The
        same arithmetic as :meth:`extra_with` of one member and one
        candidate, row by row, so each cost is exactly the one that or
        :meth:`extra` gives (two members' losses add up in either order).

        :param weights: one weight per curve (all of them, by index).
        :returns: an array, one cost per pair.
        """
        a = np.asarray(first, dtype=np.intp)
        b = np.asarray(second, dtype=np.intp)
        out = np.empty(a.size)
        if not a.size:
            return out
        w = np.asarray(weights, dtype=float)
        totals = self.held[a] + self.held[b]
        j = (totals < cap_bytes).sum(axis=1)
        beyond = j >= totals.shape[1]
        for r in np.nonzero(beyond)[0]:
            pair = [int(a[r]), int(b[r])]
            out[r] = self.extra(pair, cap_bytes, w[pair])
        rows = np.nonzero(~beyond)[0]
        if rows.size:
            jr = np.maximum(j[rows], 1)
            lo = totals[rows, jr - 1]
            hi = totals[rows, jr]
            f = np.clip((cap_bytes - lo) / np.maximum(hi - lo, 1e-12),
                        0.0, 1.0)
            alone = cap_bytes / 2
            ar, br = a[rows], b[rows]
            own = np.array([self._own(int(i), alone) for i in ar])
            m0, m1 = self.miss[ar, jr - 1], self.miss[ar, jr]
            loss = w[ar] * np.maximum(m0 + f * (m1 - m0) - own, 0.0)
            own = np.array([self._own(int(i), alone) for i in br])
            m0, m1 = self.miss[br, jr - 1], self.miss[br, jr]
            out[rows] = loss + w[br] * np.maximum(m0 + f * (m1 - m0) - own,
                                                  0.0)
        return out

    def extra(self, members, cap_bytes, weights=None):
        """:func:`extra_misses` of ``members`` (indices)."""
        idx = list(members)
        if len(idx) < 2:
            return 0.0
        _, shared = self.shares(idx, cap_bytes)
        alone = cap_bytes / len(idx)
        own = np.array([self._own(i, alone) for i in idx])
        loss = np.maximum(shared - own, 0.0)
        if weights is not None:
            loss = loss * np.asarray(weights, dtype=float)
        return float(loss.sum())


def compose(curves, cap_bytes):
    """Bytes each of ``curves`` holds when they share ``cap_bytes``.

    The window ``t`` at which their footprints add up to the cache; each
    holds its footprint over that window (footprint composition).
    """
    if not curves:
        return []
    if cap_bytes <= 0:
        return [0.0] * len(curves)
    held, _ = Composer(curves).shares(range(len(curves)), cap_bytes)
    return [float(h) for h in held]


def extra_misses(curves, cap_bytes, weights=None):
    """What sharing ``cap_bytes`` costs, against each alone in its share.

    Each member alone would hold ``cap_bytes / n``; sharing, it holds its
    footprint composition share. The cost is the sum over members of the
    miss bandwidth each *loses* (a member that gains cache does not make
    up for one that loses it: the SLO is each one's), times its weight.

    :returns: bytes/s (weighted), 0 for fewer than two members.
    """
    if len(curves) < 2:
        return 0.0
    return Composer(curves).extra(range(len(curves)), cap_bytes, weights)


def from_throughput(points, way_bytes, occupancy_bytes, miss_bw):
    """A curve shaped by a profile's throughput-vs-ways points.

    :param points: ``[(ways, Mpps)]`` measured alone (a profile's
        ``throughput``), increasing ways.
    :param way_bytes: bytes per way on this host.
    :param occupancy_bytes: the NF's measured occupancy (CMT) and
        ``miss_bw`` its memory bandwidth (MBM): the scale.
    :raises ValueError: on fewer than two points or non-positive rates.
    """
    pts = sorted((float(w), float(t)) for w, t in points)
    if len(pts) < 2 or any(t <= 0 or w <= 0 for w, t in pts):
        raise ValueError('a throughput curve needs two or more (ways, '
                         'Mpps) points with positive values, got %s'
                         % (pts,))
    peak = max(t for _, t in pts)
    loss = [1.0 / t - 1.0 / peak for _, t in pts]
    for i in range(len(loss) - 2, -1, -1):
        loss[i] = max(loss[i], loss[i + 1])
    c = [w * way_bytes for w, _ in pts]
    # Down to 0 bytes along the first segment's slope, at most doubling.
    slope = (loss[0] - loss[1]) / (c[1] - c[0])
    first = min(loss[0] + slope * c[0], 2.0 * loss[0])
    c, loss = [0.0] + c, [first] + loss
    at = float(np.interp(occupancy_bytes, c, loss))
    at = max(at, _FLAT_FLOOR * loss[0])
    if at <= 0.0:
        # No capacity miss anywhere on the curve: it never loses.
        return Curve(c, [0.0] * len(c), 'profile')
    scale = max(miss_bw, 0.0) / at
    return Curve(c, [x * scale for x in loss], 'profile')


def power_law(amp, ws, beta, source='readings'):
    """``M(c) = amp (1 - c/ws)**beta`` tabulated to (nearly) ``ws``."""
    if not (ws > 0 and amp >= 0):
        return Curve(ws * (1.0 - _U), amp * _U ** beta, source)
    # From 0 and increasing, not negative and not increasing: valid as
    # they are (the constructor would give the same arrays).
    return Curve._tabulated(ws * (1.0 - _U),
                            np.minimum.accumulate(amp * _U ** beta), source)


def from_readings(points):
    """A power-law footprint model fitted to ``[(occupancy, miss_bw)]``.

    One distinct occupancy: the prior (``PRIOR_BETA``, a working set of
    ``PRIOR_WS_FACTOR`` times the occupancy) through the point. More: the
    working set and skew of least squared log error, the amplitude in
    closed form.

    :raises ValueError: when no point has a positive occupancy.
    """
    pts = sorted({(float(o), max(float(b), 1.0)) for o, b in points
                  if o > 0})
    if not pts:
        raise ValueError('fitting a miss-ratio curve needs a reading with '
                         'a positive LLC occupancy (CMT); got %s'
                         % (list(points),))
    top = pts[-1][0]
    if len({o for o, _ in pts}) < 2:
        o, b = pts[-1]
        ws = PRIOR_WS_FACTOR * o
        beta = PRIOR_BETA
        return power_law(b / (1.0 - o / ws) ** beta, ws, beta, 'prior')
    x = np.array([o for o, _ in pts])
    y = np.log([b for _, b in pts])
    # Every (working set, skew) of the coarse grid at once, then finer
    # around the best; the first of equal errors wins, as in a loop.
    ws, beta = _best_fit(x, y, top * _COARSE_WS, _BETA_GRID)
    fine = ws * _FINE_WS
    fine = fine[fine > top]
    # beta is one of _BETAS: the fine skews around it are made once.
    betas = _FINE_BETAS.get(beta)
    if betas is None:
        betas = _FINE_BETAS[beta] = np.linspace(max(beta * 0.7, 1.05),
                                                beta * 1.3, 13)
    err, amp = _err(x, y, ws, beta)
    if fine.size:
        ws2, beta2 = _best_fit(x, y, fine, betas)
        err2, amp2 = _err(x, y, ws2, beta2)
        if err2 < err - 1e-12:
            ws, beta, amp = ws2, beta2, amp2
    return power_law(amp, ws, beta, 'readings')


def _err(x, y, ws, beta):
    """Squared log error and amplitude of one working set and skew."""
    lx = np.log(1.0 - x / ws)
    la = float(np.mean(y - beta * lx))
    return float(np.sum((y - la - beta * lx) ** 2)), math.exp(la)


def _best_fit(x, y, wss, betas):
    """``(ws, beta)`` of least squared log error over the grid."""
    lx = np.log(1.0 - x[None, :] / wss[:, None])          # (ws, point)
    r = y[None, None, :] - betas[None, :, None] * lx[:, None, :]
    r = r - r.mean(axis=2, keepdims=True)
    err = (r ** 2).sum(axis=2)                             # (ws, beta)
    i, j = np.unravel_index(int(np.argmin(err)), err.shape)
    return float(wss[i]), float(betas[j])


def curve_for(reading, way_bytes, throughput=None, history=()):
    """The best curve the agent can have for one NF (see module doc).

    :param reading: its latest :class:`model.Reading`.
    :param throughput: its profile's ``[(ways, Mpps)]``, or None.
    :param history: ``[(occupancy, miss_bw)]`` it showed before, under
        other allocations.
    """
    if throughput:
        return from_throughput(throughput, way_bytes,
                               reading.occupancy_bytes, reading.miss_bw)
    pts = [(reading.occupancy_bytes, reading.miss_bw)] + list(history)
    if not any(o > 0 for o, _ in pts):
        # Nothing measured yet: a small NF of the prior shape.
        pts = [(way_bytes / 4.0, reading.miss_bw)]
    return from_readings(pts)
