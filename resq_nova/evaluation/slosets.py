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
"""The SLO sets of ResQ §6: about 200 reserved terms each.

``sensitive`` draws its NFs from the cache-sensitive class, ``insensitive``
from the insensitive one, ``mixed`` from all nine. Every term targets 90% of
what one instance sustains alone with the whole LLC (ResQ §6). Its p95
latency target is the solo p95 at full load for most terms, which never
binds; for a share of the terms (``LATENCY_BINDING_SHARE``) it is the solo
p95 at a lower load, drawn from ``LATENCY_BINDING_LOADS``, so the latency
SLO limits how much traffic one instance may carry: a scheme that sizes by
throughput alone violates it, and ResQ's latency cap has work to do.
These are the ``binding`` targets, the default.

The ``paper`` targets (``resq-evaluate --slo-targets paper``) are ResQ §6's
own: every term's latency target is 100% of what one instance shows alone,
the NF's solo p95 at the load of its solo run, which is saturated (ResQ §2,
§6.1: each NF is first run alone on a dedicated server to determine its
throughput and latency), i.e. ``latency_at(PAPER_LATENCY_LOAD)``. No target
binds. Both draw the same NFs for the same seed, so the two sets differ in
their latency targets only. Deterministic for a seed.
"""

import random

from resq_nova.admission import greedy
from resq_nova.admission import slo
from resq_profiler import catalog
from resq_profiler import exception

SETS = {
    'sensitive': catalog.SENSITIVE,
    'insensitive': catalog.INSENSITIVE,
    'mixed': None,
}
THROUGHPUT_FRACTION = 0.9
LATENCY_FRACTION = 1.0
# A third of the terms have a latency target that binds: the solo p95 at
# 60-85% load.
LATENCY_BINDING_SHARE = 1.0 / 3
LATENCY_BINDING_LOADS = (0.6, 0.85)
# ResQ §6's latency target: the solo p95 at the load of the solo run.
PAPER_LATENCY_LOAD = 1.0

# The latency targets a set may have, with what they are (figures and text
# name them).
BINDING = 'binding'
PAPER = 'paper'
TARGETS = {
    BINDING: 'binding latency targets (default): a third of the terms '
             'target the solo p95 at 60-85% load',
    PAPER: "the paper's latency targets: every term targets the solo p95 "
           'at full load (ResQ section 6)',
}
# Short names for table headers and figure titles.
TARGET_LABELS = {BINDING: 'binding latency targets',
                 PAPER: "paper's latency targets (solo p95)"}


class UnknownSet(ValueError):
    pass


def make(name, profiles, terms=200, seed=0, targets=BINDING):
    """Build SLO set ``name`` from ``profiles`` (``{nf name: Profile}``).

    :param targets: the latency targets, a key of :data:`TARGETS`.
    :returns: a list of :class:`resq_nova.admission.greedy.SLOTerm`.
    """
    if targets not in TARGETS:
        raise ValueError('unknown SLO targets %r; choose from %s'
                         % (targets, ', '.join(sorted(TARGETS))))
    if name not in SETS:
        raise UnknownSet('unknown SLO set %r; choose from %s'
                         % (name, ', '.join(sorted(SETS))))
    if terms <= 0:
        raise ValueError('an SLO set needs at least one term, got %d'
                         % terms)
    nfs = catalog.names(SETS[name])
    rng = random.Random('%s/%d' % (name, seed))
    lat_rng = random.Random('%s/%d/latency' % (name, seed))
    result = []
    for i in range(terms):
        nf = rng.choice(nfs)
        prof = profiles[nf]
        load = LATENCY_FRACTION
        if lat_rng.random() < LATENCY_BINDING_SHARE:
            load = lat_rng.uniform(*LATENCY_BINDING_LOADS)
        if targets == PAPER:
            load = PAPER_LATENCY_LOAD
        result.append(greedy.SLOTerm(
            name='%s-%03d-%s' % (name, i, nf.lower()), profile=prof,
            throughput_mpps=THROUGHPUT_FRACTION * prof.peak_mpps,
            latency_p95_us=prof.latency_at(load),
            packet_bytes=prof.traffic['packet_bytes']))
    return result


def binding(term):
    """Whether ``term``'s latency SLO binds.

    It does when the target caps one instance's load below its solo peak.
    """
    try:
        return term.profile.max_load_for_latency(term.latency_p95_us) < 0.999
    except exception.TargetUnreachable:
        return True


CUSTOM = 'custom'


def load(path, profiles):
    """An SLO set from a JSON file naming catalog NFs.

    ``{"terms": [{"name": "a", "nf": "Stats", "throughput_mpps": 3.0,
    "latency_p95_us": 30}]}``; the latency target may be omitted (the NF's
    solo p95 at full load).

    :raises resq_nova.admission.slo.InvalidSLOFile: naming the file and the
        field.
    """
    result = []
    for i, item in enumerate(slo.read_items(path)):
        where = 'terms[%d]' % i
        if not isinstance(item, dict) or 'nf' not in item:
            raise slo.InvalidSLOFile(path=path, reason='%s needs an "nf"'
                                     % where)
        try:
            prof = profiles[catalog.get(item['nf']).name]
        except exception.UnknownNF as exc:
            raise slo.InvalidSLOFile(path=path, reason='%s.nf: %s'
                                     % (where, exc))
        thr = slo.positive(path, where + '.throughput_mpps',
                           item.get('throughput_mpps'))
        lat = slo.positive(path, where + '.latency_p95_us',
                           item.get('latency_p95_us', prof.latency_at(1.0)))
        result.append(greedy.SLOTerm(
            name=str(item.get('name', 'term-%03d' % i)), profile=prof,
            throughput_mpps=thr, latency_p95_us=lat,
            packet_bytes=prof.traffic['packet_bytes']))
    return result
