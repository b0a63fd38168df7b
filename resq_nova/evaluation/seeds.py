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
"""One seed for every random draw of the evaluation, and the spread of a
run over several.

``resq-evaluate --seed N`` seeds every draw from ``N``: :func:`sub_seeds`
says which. Each draw mixes its sub-seed with its own name (an SLO set's
name, an NF's name, what a predictor measures), so the streams differ
although the sub-seeds are equal, and seed 0 draws exactly what runs before
the profiler's noise was reseeded drew (its ``model_seed`` was 0).

``--seeds A-B`` evaluates every seed from A to B and reports, for each
headline number, its minimum, median and maximum (:func:`spread`).
"""

import statistics

# At most this many seeds in one run: each is a whole evaluation.
MAX_SEEDS = 100

# The draws a seed governs, each with what it seeds (the docs list them).
DRAWS = (
    ('slo_sets', 'which NF each term names and which latency targets bind '
                 '(resq_nova.evaluation.slosets)'),
    ('profiler_noise', "the noise of the adaptive profiler's runs on the "
                       'testbed ([resq_profiler] model_seed)'),
    ('prediction_noise', "the noise of the prediction baseline's profiling "
                         'runs (resq_nova.evaluation.dobrescu)'),
    ('slomo', "the noise of SLOMO's training runs and its training plan "
              '(resq_nova.evaluation.slomo)'),
    ('on_demand', "the on-demand simulation's traffic "
                  '(resq_nova.evaluation.ondemand)'),
    ('durner', "the VNFs of Durner et al.'s scheduler runs "
               '(resq_nova.evaluation.durner)'),
    ('grouping', "the NFs and traffic of the grouping scenarios (seed N "
                 'runs 3N, 3N+1 and 3N+2; resq_nova.evaluation.grouping)'),
)


def sub_seeds(seed):
    """``{draw: sub-seed}`` for every draw of :data:`DRAWS`.

    Deterministic in ``seed``. Every sub-seed is ``seed`` itself: each
    consumer already mixes it with the name of what it draws, which keeps
    the streams apart and keeps seed 0's results as they were.
    """
    seed = int(seed)
    return {name: seed for name, _ in DRAWS}


def parse(text):
    """The seeds of ``--seeds``: ``A-B`` (inclusive), ``A,B,C`` or ``A``.

    :raises ValueError: for anything else, a descending range, a negative
        seed or more than :data:`MAX_SEEDS` seeds.
    """
    result = []
    for part in str(text).split(','):
        part = part.strip()
        lo, sep, hi = part.partition('-')
        try:
            first = int(lo)
            last = int(hi) if sep else first
        except ValueError:
            raise ValueError('--seeds takes A-B, A,B,C or A with '
                             'non-negative integers, got %r' % text)
        if first < 0 or last < first:
            raise ValueError('--seeds: %r is not a range of non-negative '
                             'seeds, lowest first' % part)
        result.extend(range(first, last + 1))
        if len(result) > MAX_SEEDS:
            raise ValueError('--seeds: at most %d seeds in one run, got %r'
                             % (MAX_SEEDS, text))
    if len(set(result)) != len(result):
        raise ValueError('--seeds: %r names a seed twice' % text)
    return result


# The headline numbers whose spread is reported, as paths into the
# document; '*' stands for every key at that level (taken from the first
# seed's document).
HEADLINES = (
    ('sets', '*', '*', 'servers'),
    ('sets', '*', '*', 'violation_pct'),
    ('sets', '*', '*', 'throughput_violation_pct'),
    ('sets', '*', '*', 'latency_violation_pct'),
    ('sets', '*', '*', 'latency_binding_violation_pct'),
    ('sets', '*', '*', 'prediction_error_pct'),
    ('sets', '*', '*', 'prediction_error_max_pct'),
    ('ratios', '*', '*'),
    # Each SLO setup (resq-evaluate --slo-targets); the first is also the
    # top level's.
    ('setups', '*', 'sets', '*', '*', 'servers'),
    ('setups', '*', 'sets', '*', '*', 'violation_pct'),
    ('setups', '*', 'sets', '*', '*', 'throughput_violation_pct'),
    ('setups', '*', 'sets', '*', '*', 'latency_violation_pct'),
    ('setups', '*', 'ratios', '*', '*'),
    ('predictor', 'mean_pp'),
    ('predictor', 'max_abs_pp'),
    ('predictor', 'mean_relative_pct'),
    ('slomo_predictor', 'mean_pp'),
    ('slomo_predictor', 'max_abs_pp'),
    ('slomo_predictor', 'mean_relative_pct'),
    ('profiles', 'runs_median'),
    ('profiles', 'runs_max'),
    ('profiles', 'throughput_error_max_pct'),
    ('profiles', 'latency_error_max_pct'),
    ('on_demand', 'policies', '*', 'violation_pct'),
    ('on_demand', 'policies', '*', 'ways_isolated'),
    ('on_demand', 'policies', '*', 'moves'),
    ('on_demand', 'policies', '*', 'escalations'),
    ('durner', 'gain_pts', '*'),
    ('grouping', 'scenarios', '*', 'policies', '*', 'violation_pct'),
)


def _paths(doc, pattern, prefix=()):
    """The concrete paths to numbers in ``doc`` that ``pattern`` matches."""
    if not pattern:
        if isinstance(doc, (int, float)) and not isinstance(doc, bool):
            yield prefix
        return
    if not isinstance(doc, dict):
        return
    head, rest = pattern[0], pattern[1:]
    keys = list(doc) if head == '*' else [head] if head in doc else []
    for key in keys:
        yield from _paths(doc[key], rest, prefix + (key,))


def _get(doc, path):
    for key in path:
        if not isinstance(doc, dict) or key not in doc:
            return None
        doc = doc[key]
    return doc


def spread(docs, seeds):
    """The spread of every headline number over the seeds' documents.

    :param docs: one :func:`resq_nova.evaluation.run.evaluate` document per
        seed, in the order of ``seeds``.
    :returns: ``{"seeds": [...], "numbers": {...}}``, ``numbers`` nested as
        the documents are, each headline number replaced by ``{"min",
        "median", "max", "values"}`` (``values`` in the order of
        ``seeds``; ``null`` where a seed's document lacks the number, which
        the three statistics leave out).
    """
    if len(docs) != len(seeds) or not docs:
        raise ValueError('one document per seed, and at least one')
    numbers = {}
    for pattern in HEADLINES:
        for path in _paths(docs[0], pattern):
            values = [_get(d, path) for d in docs]
            present = [v for v in values if v is not None]
            node = numbers
            for key in path[:-1]:
                node = node.setdefault(key, {})
            node[path[-1]] = {'min': min(present),
                              'median': statistics.median(present),
                              'max': max(present), 'values': values}
    return {'seeds': list(seeds), 'numbers': numbers}


def _mmm(stat, fmt):
    if stat is None:
        return '-'
    return '/'.join(fmt % stat[k] for k in ('min', 'median', 'max'))


def table(doc):
    """The spread as text: one line per set and scheme, then the rest."""
    numbers = doc['numbers']
    seeds = doc['seeds']
    lines = ['spread over %d seed%s (%s), min/median/max:' % (
        len(seeds), '' if len(seeds) == 1 else 's', _seeds_text(seeds))]
    sets = numbers.get('sets', {})
    if sets:
        lines.append('%-12s %-17s %11s %17s %17s %17s' % (
            'set', 'scheme', 'servers', 'violated%', 'thr viol%',
            'lat viol%'))
    for set_name, rows in sets.items():
        for scheme, row in rows.items():
            lines.append('%-12s %-17s %11s %17s %17s %17s' % (
                set_name, scheme, _mmm(row.get('servers'), '%g'),
                _mmm(row.get('violation_pct'), '%.1f'),
                _mmm(row.get('throughput_violation_pct'), '%.1f'),
                _mmm(row.get('latency_violation_pct'), '%.1f')))
    for set_name, ratios in numbers.get('ratios', {}).items():
        lines.append('%s: %s' % (set_name, ', '.join(
            '%s %s' % (key, _mmm(stat, '%.2f'))
            for key, stat in ratios.items())))
    lines += _setup_lines(numbers.get('setups', {}))
    sections = [(s, numbers[s]) for s in ('predictor', 'slomo_predictor',
                                          'profiles') if s in numbers]
    if 'durner' in numbers:
        sections.append(('durner_gain_pts', numbers['durner']['gain_pts']))
    for name, stats in sections:
        lines.append('%s: %s' % (name, ', '.join(
            '%s %s' % (key, _mmm(stat, '%.1f'))
            for key, stat in stats.items())))
    for name, scen in numbers.get('grouping', {}).get(
            'scenarios', {}).items():
        lines.append('grouping %s violated%%: %s' % (name, ', '.join(
            '%s %s' % (policy, _mmm(stats.get('violation_pct'), '%.2f'))
            for policy, stats in scen.get('policies', {}).items())))
    for policy, stats in numbers.get('on_demand', {}).get(
            'policies', {}).items():
        lines.append('on-demand %s: %s' % (policy, ', '.join(
            '%s %s' % (key, _mmm(stat, '%.2f'))
            for key, stat in stats.items())))
    return '\n'.join(lines)


def _setup_lines(setups):
    """Servers and violations per setup, when there are several."""
    lines = []
    if len(setups) < 2:
        return lines
    for targets, setup in setups.items():
        lines.append('%s latency targets: servers and violated%% per set '
                     'and scheme' % targets)
        for set_name, rows in setup.get('sets', {}).items():
            lines.append('  %-12s %s' % (set_name, ', '.join(
                '%s %s (%s%%)' % (scheme, _mmm(row.get('servers'), '%g'),
                                  _mmm(row.get('violation_pct'), '%.1f'))
                for scheme, row in rows.items())))
        for set_name, ratios in setup.get('ratios', {}).items():
            lines.append('  %s: %s' % (set_name, ', '.join(
                '%s %s' % (key, _mmm(stat, '%.2f'))
                for key, stat in ratios.items())))
    return lines


def _seeds_text(seeds):
    if seeds == list(range(seeds[0], seeds[0] + len(seeds))):
        return '%d-%d' % (seeds[0], seeds[-1]) if len(seeds) > 1 \
            else '%d' % seeds[0]
    return ','.join('%d' % s for s in seeds)
