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
"""NF profile documents and the queries the schedulers ask of them.

A profile says how one NF, with one configuration and traffic profile, on
one platform, performs as a function of its LLC share (ResQ §5.2):

* ``throughput``: saturation throughput (Mpps) against LLC ways, measured
  alone on one core; monotone and concave;
* ``latency``: p95 latency (µs) against offered load, as a fraction of the
  throughput at the allocation that maximises it (``latency.ways``);
  monotone and convex.

Between measured points both curves are linear interpolations.
"""

import bisect
import dataclasses
import hashlib
import json
import math
import re

from resq_common import exception
from resq_common import jsonutils
from resq_common import profile_schema as schema

ID_RE = re.compile(r'^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$')


def interpolate(points, x):
    """Linear interpolation over sorted ``(x, y)`` points, clamped at ends."""
    xs = [p[0] for p in points]
    if x <= xs[0]:
        return points[0][1]
    if x >= xs[-1]:
        return points[-1][1]
    i = bisect.bisect_right(xs, x)
    (x0, y0), (x1, y1) = points[i - 1], points[i]
    return y0 + (y1 - y0) * (x - x0) / (x1 - x0)


def config_digest(text):
    """The digest a profile records for an NF configuration."""
    return 'sha256:' + hashlib.sha256(text.encode('utf-8')).hexdigest()


@dataclasses.dataclass(frozen=True)
class Piece:
    """One piece of a concave piecewise-linear throughput fit.

    Valid for ``pivot <= ways <= end``: ``throughput = slope * ways +
    intercept`` (Mpps). ResQ Appendix A's pi, alpha and beta.
    """

    pivot: float
    end: float
    slope: float
    intercept: float

    def at(self, ways):
        return self.slope * ways + self.intercept


# A profile holds two curves of a few dozen points: 1 MiB is far more than
# one needs, and caps what a reader takes in.
MAX_PROFILE_BYTES = 1024 * 1024


def _non_finite(value, path=''):
    """The JSON path of the first NaN or infinite number, or ``None``."""
    if isinstance(value, float) and not math.isfinite(value):
        return path or '(document)'
    if isinstance(value, dict):
        for key, item in value.items():
            found = _non_finite(item, '%s.%s' % (path, key) if path else key)
            if found:
                return found
    elif isinstance(value, (list, tuple)):
        for n, item in enumerate(value):
            found = _non_finite(item, '%s[%d]' % (path, n))
            if found:
                return found
    return None


@dataclasses.dataclass(frozen=True)
class Profile:
    """An NF profile (see the module docstring for the curves)."""

    profile_id: str
    nf: dict
    traffic: dict
    platform: dict
    throughput: tuple
    latency_ways: int
    latency: tuple
    measurement: dict

    # -- serialisation ----------------------------------------------------
    def to_dict(self):
        return {
            'schema_version': schema.SCHEMA_VERSION,
            'id': self.profile_id,
            'nf': dict(self.nf),
            'traffic': dict(self.traffic),
            'platform': dict(self.platform),
            'throughput': {'unit': 'Mpps',
                           'points': [list(p) for p in self.throughput]},
            'latency': {'unit': 'us', 'percentile': 95,
                        'ways': self.latency_ways,
                        'load': 'fraction of throughput at "ways"',
                        'points': [list(p) for p in self.latency]},
            'measurement': dict(self.measurement),
        }

    def to_json(self):
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + '\n'

    @classmethod
    def from_dict(cls, doc, source='<memory>'):
        """Validate ``doc`` and build a profile.

        :raises resq_common.exception.InvalidProfile: naming ``source``
            and the JSON path of the first offending field.
        """
        where = _non_finite(doc)
        if where is not None:
            raise exception.InvalidProfile(
                source, where, 'is not a finite number (NaN and infinity '
                'would make any target look reachable); measure again')
        schema.validate(doc, source)
        thr = tuple((float(w), float(t))
                    for w, t in doc['throughput']['points'])
        lat = tuple((float(x), float(y))
                    for x, y in doc['latency']['points'])
        _check_increasing(thr, source, 'throughput.points')
        _check_increasing(lat, source, 'latency.points')
        ways = doc['platform']['llc_ways']
        if thr[-1][0] > ways:
            raise exception.InvalidProfile(
                source, 'throughput.points[%d][0]' % (len(thr) - 1),
                '%s ways measured but the platform has only %d; measure on '
                'the platform the profile names' % (thr[-1][0], ways))
        if doc['latency']['ways'] > ways:
            raise exception.InvalidProfile(
                source, 'latency.ways', '%d exceeds platform.llc_ways %d'
                % (doc['latency']['ways'], ways))
        if not ID_RE.match(doc['id']):
            raise exception.InvalidProfile(
                source, 'id', 'must be 1-128 letters, digits, ".", "_" or '
                '"-", starting with a letter or digit')
        return cls(profile_id=doc['id'], nf=doc['nf'],
                   traffic=doc['traffic'], platform=doc['platform'],
                   throughput=thr, latency_ways=doc['latency']['ways'],
                   latency=lat, measurement=doc['measurement'])

    @classmethod
    def from_json(cls, text, source='<memory>'):
        try:
            doc = jsonutils.loads(text, max_bytes=MAX_PROFILE_BYTES)
        except ValueError as exc:
            raise exception.InvalidProfile(
                source, '(document)', 'not JSON: %s' % exc)
        return cls.from_dict(doc, source)

    # -- curves -----------------------------------------------------------
    @property
    def name(self):
        return self.nf['name']

    @property
    def min_ways(self):
        return int(self.throughput[0][0])

    @property
    def max_ways(self):
        return int(self.throughput[-1][0])

    @property
    def peak_mpps(self):
        return max(t for _, t in self.throughput)

    def throughput_at(self, ways):
        """Interpolated saturation throughput (Mpps) with ``ways`` ways."""
        return interpolate(self.throughput, ways)

    def latency_at(self, load_fraction):
        """Interpolated p95 latency (µs) at a load fraction."""
        return interpolate(self.latency, load_fraction)

    @property
    def latency_floor_us(self):
        return min(y for _, y in self.latency)

    def max_load_for_latency(self, target_us):
        """Largest load fraction whose p95 latency stays within target.

        Follows the measured curve from its lowest load up to the first
        crossing of ``target_us``.

        :raises resq_common.exception.TargetUnreachable: when even the
            lowest measured load exceeds the target.
        """
        pts = self.latency
        if pts[0][1] > target_us:
            raise exception.TargetUnreachable(
                reason='p95 latency target %.2f us is below the floor of '
                'profile %s (%.2f us at %.0f%% load); raise the target or '
                'give the NF a faster configuration'
                % (target_us, self.profile_id, pts[0][1], pts[0][0] * 100))
        for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
            if y1 > target_us:
                if y1 == y0:
                    return x0
                return x0 + (x1 - x0) * (target_us - y0) / (y1 - y0)
        return pts[-1][0]

    def min_ways_for(self, target_mpps, load_cap=1.0):
        """Fewest whole ways whose throughput times ``load_cap`` meets target.

        :returns: an int, or ``None`` when even the largest measured
            allocation falls short.
        """
        for ways in range(self.min_ways, self.max_ways + 1):
            if self.throughput_at(ways) * load_cap >= target_mpps:
                return ways
        return None

    def concave_fit(self):
        """Concave piecewise-linear fit of throughput against ways.

        The fit is the least concave majorant of the measured points (the
        upper hull), which equals the interpolated curve whenever the
        measurements are concave, as ResQ observed for every NF. It is
        stored with the profile and shown by ``resq-profiler show``; the
        MILP does not read it (it enumerates configurations on the
        measured curve itself, see :mod:`resq_nova.admission.packing`).

        :returns: ``(pieces, max_overestimate_pct)``, where the second
            value says how far the fit lies above the measured curve at
            any whole way count (0 for concave measurements).
        """
        hull = []
        for p in self.throughput:
            while len(hull) >= 2 and _cross(hull[-2], hull[-1], p) >= 0:
                hull.pop()
            hull.append(p)
        pieces = []
        for (x0, y0), (x1, y1) in zip(hull, hull[1:]):
            slope = (y1 - y0) / (x1 - x0)
            pieces.append(Piece(x0, x1, slope, y0 - slope * x0))
        if not pieces:
            x, y = hull[0]
            pieces.append(Piece(x, x, 0.0, y))
        worst = 0.0
        for ways in range(self.min_ways, self.max_ways + 1):
            fit = min(p.at(ways) for p in pieces)
            real = self.throughput_at(ways)
            worst = max(worst, (fit - real) / real * 100.0)
        return tuple(pieces), worst


def _cross(o, a, b):
    return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])


def _check_increasing(points, source, field):
    for i in range(1, len(points)):
        if points[i][0] <= points[i - 1][0]:
            raise exception.InvalidProfile(
                source, '%s[%d][0]' % (field, i),
                'x values must be strictly increasing (%s follows %s)'
                % (points[i][0], points[i - 1][0]))


def make_profile_id(nf_name, traffic, digest):
    """A readable, deterministic id for an NF, traffic and configuration."""
    short = digest.split(':', 1)[-1][:8]
    return '%s-%dB-%dflows-%s' % (nf_name.lower(), traffic['packet_bytes'],
                                  traffic['flows'], short)
