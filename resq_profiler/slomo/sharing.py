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
"""Which NFs may share one cache class, and admission warnings.

For on-demand NFs, which ResQ does not give reserved partitions: NFs that
share a class of service slow each other, and SLOMO's models say by how
much. An NF without a valid model gets no prediction; it may not share
and is treated as needing its own partition (isolation).

Every question names the class's size (``ways``): NFs confined to a class
of a few ways slow each other far more than on the whole LLC. A model of
format version 1 (trained on the whole LLC only) answers only for the
whole LLC; asked about a smaller class it counts as no model, with the
advice to retrain it.
"""

import math

from resq_profiler.slomo import document


def _check_targets(names, targets):
    for name in names:
        value = targets.get(name) if isinstance(targets, dict) else None
        if (isinstance(value, bool) or not isinstance(value, (int, float))
                or not math.isfinite(value) or value <= 0):
            raise ValueError('throughput target of %r must be a positive '
                             'number of Mpps, got %r; give every NF that '
                             'shares the class a target' % (name, value))


def _missing(models, names):
    return ['%s has no valid SLOMO model, so nothing predicts how sharing '
            'would slow it: it needs its own partition (isolation)' % name
            for name in names if models.get(name) is None]


def _platforms(models, names):
    seen = {}
    for name in names:
        key = tuple(sorted(models[name].platform.items()))
        seen.setdefault(key, []).append(name)
    if len(seen) > 1:
        return ['the models of %s were trained on different platforms; '
                'retrain them on this one' % ', '.join(
                    sorted(n for group in seen.values() for n in group))]
    return []


def _unsupported(models, names, ways):
    """Reasons for models that cannot answer for a class of ``ways``."""
    reasons = []
    for name in names:
        try:
            models[name].row([], ways)
        except document.ClassSizeUnsupported as exc:
            reasons.append('%s: %s' % (name, exc.reason))
    return reasons


def _check_ways(ways):
    if ways is not None and (isinstance(ways, bool)
                             or not isinstance(ways, int) or ways < 1):
        raise ValueError('the class of service shared must have a whole '
                         'number of ways >= 1, got %r' % (ways,))


def predictions(nf_profile_models, members, ways=None):
    """Predicted Mpps of every instance of ``members`` next to the rest.

    :param ways: ways of the class they share (``None``: whole LLC).
    :returns: ``[(name, Mpps)]`` in the order of ``members``.
    """
    result = []
    for i, name in enumerate(members):
        others = members[:i] + members[i + 1:]
        result.append((name, nf_profile_models[name].predict_mpps(
            [nf_profile_models[o].contentiousness for o in others], ways)))
    return result


def _problems(models, names, ways):
    """What keeps the models of ``names`` from predicting the class."""
    problems = _missing(models, names)
    problems += [] if problems else _platforms(models, names)
    problems += [] if problems else _unsupported(models, names, ways)
    return problems


def can_share(nf_profile_models, competitors, targets, ways=None):
    """Whether NFs may share one cache class, each meeting its target.

    :param nf_profile_models: ``{NF: Model or None}``
        (:class:`resq_profiler.slomo.document.Model`, ``None`` when the NF
        has no valid model).
    :param competitors: the instances that would share the class, by NF
        (an NF named twice is two instances).
    :param targets: ``{NF: Mpps each of its instances must carry}``.
    :param ways: ways of the class they would share (``None``: the whole
        LLC).
    :returns: ``(ok, reasons)``; ``reasons`` says why not, one line per
        problem, and is empty when ``ok``.
    :raises ValueError: when an NF has no positive target, or ``ways`` is
        not a class the models' platform can have.
    """
    members = list(competitors)
    names = sorted(set(members))
    _check_targets(names, targets)
    _check_ways(ways)
    reasons = _problems(nf_profile_models, names, ways)
    if reasons:
        return False, reasons
    reported = set()
    for name, mpps in predictions(nf_profile_models, members, ways):
        if mpps < targets[name] and name not in reported:
            reported.add(name)
            others = list(members)
            others.remove(name)
            reasons.append(
                '%s: predicted %.3f Mpps next to %s%s, below its target '
                'of %.3f Mpps' % (name, mpps, ', '.join(others) or 'nothing',
                                  _in(ways), targets[name]))
    return not reasons, reasons


def _in(ways):
    return ' in a class of %d ways' % ways if ways else ''


def admission_warning(nf_profile_models, shared, candidate, targets,
                      ways=None):
    """Warn when admitting ``candidate`` to a shared class costs targets.

    The warning is due when an NF already in the host's shared class (or
    the candidate) would be pushed below its target.

    :param shared: the NFs in the class now (one entry per instance).
    :param candidate: the NF being admitted.
    :param ways: ways of the shared class (``None``: the whole LLC).
    :returns: the warning text, or ``None`` when every NF is predicted to
        keep its target.
    :raises ValueError: when an NF has no positive target, or ``ways`` is
        not a class the models' platform can have.
    """
    before = list(shared)
    after = before + [candidate]
    names = sorted(set(after))
    _check_targets(names, targets)
    _check_ways(ways)
    problems = _problems(nf_profile_models, names, ways)
    if not problems:
        was = dict(predictions(nf_profile_models, before, ways))
        seen = set()
        for name, mpps in predictions(nf_profile_models, after, ways):
            if mpps >= targets[name] or name in seen:
                continue
            seen.add(name)
            if name == candidate and name not in was:
                problems.append('%s itself: predicted %.3f Mpps, below its '
                                'target of %.3f Mpps' % (name, mpps,
                                                         targets[name]))
            else:
                problems.append('%s: predicted %.3f Mpps (%s now), below '
                                'its target of %.3f Mpps' % (
                                    name, mpps, '%.3f' % was[name]
                                    if name in was else 'not there',
                                    targets[name]))
    if not problems:
        return None
    return ('admitting %s to the shared cache class (with %s)%s would '
            'push NFs past their targets: %s' % (
                candidate, ', '.join(before) or 'nothing',
                ' of %d ways' % ways if ways else '', '; '.join(problems)))
