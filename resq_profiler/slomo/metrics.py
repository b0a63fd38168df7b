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
"""Contentiousness: counter readings of one NF, and their composition.

Each NF's contentiousness is read twice (SLOMO's multivariable metrics,
seed 001 §3): alone on the server (``solo``) and next to a fixed synthetic
probe (``pressured``). The pressured reading says how much of the cache
and memory bandwidth the NF still claims when something else competes for
them, which its solo reading cannot tell: an NF with a hot core of its
working set keeps less cache under pressure than a streaming one with the
same access rate. A competitor set's contentiousness is the sum of its
members' readings, plus the number of competitors.

NFs that share a class of service share only its ways, so the features
also carry the class's size (:data:`CLASS_FEATURES`): the ways the mix
shares, and how much of them the competitors' pressured occupancy would
fill. Models of format version 1 were trained on the whole LLC without
them (:data:`FEATURES_V1`).
"""

import dataclasses
import math

# Per-core counters (resq_profiler.truth.Counters, or pcm/perf on hardware).
COUNTERS = ('llc_refs_per_s', 'llc_misses_per_s', 'llc_occupancy_bytes',
            'mem_bw_bytes_per_s', 'io_bytes_per_s')
CONDITIONS = ('solo', 'pressured')
FEATURES_V1 = tuple('%s.%s' % (cond, name) for cond in CONDITIONS
                    for name in COUNTERS) + ('competitors',)
# The class the mix shares: its ways, and the competitors' pressured
# occupancy over the class's bytes.
CLASS_FEATURES = ('class_ways', 'class_fill')
FEATURES = FEATURES_V1 + CLASS_FEATURES


def _reading(values, where):
    """``{counter: value}`` checked: every counter, finite, not negative."""
    if not isinstance(values, dict):
        raise ValueError('%s: expected an object of counter readings, got '
                         '%r' % (where, type(values).__name__))
    missing = [c for c in COUNTERS if c not in values]
    if missing:
        raise ValueError('%s: missing counter readings %s; measure them '
                         'again' % (where, ', '.join(missing)))
    out = {}
    for name in COUNTERS:
        value = values[name]
        if (isinstance(value, bool) or not isinstance(value, (int, float))
                or not math.isfinite(value) or value < 0):
            raise ValueError('%s.%s: a counter reading must be a finite '
                             'number >= 0, got %r' % (where, name, value))
        out[name] = float(value)
    return out


@dataclasses.dataclass(frozen=True)
class Contentiousness:
    """One NF's (or synthetic competitor's) measured contentiousness."""

    solo: dict
    pressured: dict

    @classmethod
    def from_counters(cls, solo, pressured):
        """From two :class:`resq_profiler.truth.Counters` readings."""
        return cls.from_dict({'solo': dataclasses.asdict(solo),
                              'pressured': dataclasses.asdict(pressured)})

    @classmethod
    def from_dict(cls, doc, where='contentiousness'):
        """Validate and build; :raises ValueError: naming the field."""
        if not isinstance(doc, dict):
            raise ValueError('%s: expected an object with "solo" and '
                             '"pressured", got %r' % (where,
                                                      type(doc).__name__))
        return cls(*(_reading(doc.get(cond), '%s.%s' % (where, cond))
                     for cond in CONDITIONS))

    def as_dict(self):
        return {'solo': dict(self.solo), 'pressured': dict(self.pressured)}

    def vector(self):
        return [getattr(self, cond)[name] for cond in CONDITIONS
                for name in COUNTERS]


def compose(competitors, ways=None, way_bytes=None):
    """The feature vector of a set of competitors.

    :param competitors: :class:`Contentiousness` objects, one per competing
        instance (an NF twice is two instances).
    :param ways: ways of the class they share with the NF; ``None`` gives
        the version-1 vector (:data:`FEATURES_V1`, whole LLC, no class
        features), a number the full one (:data:`FEATURES`).
    :param way_bytes: bytes of one way (needed with ``ways``).
    :raises ValueError: for a class of no ways or ways of no bytes.
    """
    total = [0.0] * (len(FEATURES_V1) - 1)
    count = 0
    for item in competitors:
        for i, value in enumerate(item.vector()):
            total[i] += value
        count += 1
    row = total + [float(count)]
    if ways is None:
        return row
    return with_class(row, ways, way_bytes)


def with_class(row, ways, way_bytes):
    """A version-1 ``row`` with the class features of ``ways`` ways."""
    if len(row) != len(FEATURES_V1):
        raise ValueError('expected a row of the %d whole-LLC features, got '
                         '%d values' % (len(FEATURES_V1), len(row)))
    if (isinstance(ways, bool) or not isinstance(ways, (int, float))
            or not ways >= 1):
        raise ValueError('a class of service needs at least one way, got '
                         '%r' % (ways,))
    if not way_bytes or way_bytes <= 0:
        raise ValueError('bytes per way must be positive, got %r'
                         % (way_bytes,))
    occupancy = row[FEATURES_V1.index('pressured.llc_occupancy_bytes')]
    return list(row) + [float(ways), occupancy / (ways * way_bytes)]
