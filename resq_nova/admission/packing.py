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
"""Combinatorics of the optimal schedule: term configurations and server
patterns. Pure, no solver.

A **configuration** of an SLO term is a multiset of instance sizes (LLC ways,
one core each) whose capped throughputs meet the term's target and which is
minimal: dropping an instance or a way from any instance breaks the target.
Every optimal schedule can use minimal configurations only.

A **pattern** is what one server offers: a multiset of slots, at most one
per core, whose sizes add up to exactly the server's usable ways. An
instance fits a slot at least as large as itself. Because every instance
needs exactly one core, which term an instance belongs to does not matter
for packing, only its size: a set of instances fits into a set of servers
with given patterns if and only if, for every size ``s``, there are at least
as many slots of size ``>= s`` as instances of size ``>= s`` (Hall's
condition for nested sets). That turns ResQ Appendix A's bin packing with
per-instance server variables into a small, linear, symmetry-free model.
"""

import dataclasses
import math


class TooManyConfigurations(Exception):
    """A term has more minimal configurations than the enumeration limit."""


@dataclasses.dataclass(frozen=True)
class TermGroup:
    """Identical SLO terms: same capacity curve and target.

    :param capacity: ``{ways: Mpps}``, the capped throughput of one instance
        with that many ways, for every allowed size.
    """

    key: str
    target_mpps: float
    capacity: dict
    members: tuple


MAX_ENUMERATED_INSTANCES = 6


def configurations(capacity, target, limit=5000):
    """Minimal configurations (tuples of ways, largest first) for a target.

    :raises TooManyConfigurations: past ``limit`` configurations, when a
        configuration could need more than ``MAX_ENUMERATED_INSTANCES``
        instances, or when the search visits more than ``50 * limit``
        partial configurations; callers then fall back to per-term counts.
    """
    sizes = sorted(capacity)
    smallest = sizes[0]
    eps = 1e-9
    if capacity[smallest] <= 0:
        raise ValueError('capacity must be positive: %s' % capacity)
    kmax = max(1, math.ceil(target / capacity[smallest] - eps))
    best = capacity[sizes[-1]]
    if kmax > MAX_ENUMERATED_INSTANCES:
        raise TooManyConfigurations('up to %d instances per term' % kmax)
    found = []
    visits = [0]

    def minimal(config):
        total = sum(capacity[w] for w in config)
        if total < target - eps:
            return False
        if total - capacity[config[-1]] >= target - eps:
            return False  # the smallest instance is superfluous
        for i, w in enumerate(config):
            if w == smallest:
                continue
            if i > 0 and config[i - 1] == w:
                continue  # same reduction as the previous equal size
            lower = max(s for s in sizes if s < w)
            if total - capacity[w] + capacity[lower] >= target - eps:
                return False
        return True

    def dfs(prefix, total, cap_size):
        visits[0] += 1
        if visits[0] > 50 * limit:
            raise TooManyConfigurations('search exceeded %d steps'
                                        % (50 * limit))
        if total >= target - eps:
            if minimal(prefix):
                found.append(tuple(prefix))
                if len(found) > limit:
                    raise TooManyConfigurations(
                        '%d+ configurations' % limit)
            return
        if len(prefix) >= kmax:
            return
        if total + (kmax - len(prefix)) * capacity[cap_size] < target - eps:
            return
        for w in reversed(sizes):
            if w > cap_size:
                continue
            prefix.append(w)
            dfs(prefix, total + capacity[w], w)
            prefix.pop()

    if best * kmax < target - eps:
        return []
    dfs([], 0.0, sizes[-1])
    return found


def patterns(cores, ways, sizes=None):
    """Maximal server patterns: slot sizes (largest first) adding to ``ways``.

    :param sizes: allowed slot sizes (default ``1..ways``).
    """
    sizes = sorted(set(sizes or range(1, ways + 1)), reverse=True)
    result = []

    def dfs(prefix, left, start):
        if left == 0:
            result.append(tuple(prefix))
            return
        if len(prefix) == cores:
            return
        for idx in range(start, len(sizes)):
            s = sizes[idx]
            if s <= left:
                prefix.append(s)
                dfs(prefix, left - s, idx)
                prefix.pop()

    dfs([], ways, 0)
    if not result:
        # The sizes cannot add up to exactly ``ways``: fall back to the
        # fullest patterns.
        raise ValueError('no pattern of %s fills %d ways on %d cores'
                         % (sizes, ways, cores))
    return result


def at_least(multiset, size):
    return sum(1 for w in multiset if w >= size)


def assign(instances, servers):
    """Map instances to server slots, largest instance to largest slot.

    :param instances: list of ``(item, ways)``.
    :param servers: list of patterns (tuples of slot sizes).
    :returns: list of ``(item, ways, server index)``.
    :raises ValueError: when the instances do not fit (Hall's condition).
    """
    slots = sorted(((size, idx) for idx, pat in enumerate(servers)
                    for size in pat), reverse=True)
    ordered = sorted(instances, key=lambda x: -x[1])
    if len(ordered) > len(slots):
        raise ValueError('%d instances but only %d slots'
                         % (len(ordered), len(slots)))
    result = []
    for (item, ways), (size, idx) in zip(ordered, slots):
        if ways > size:
            raise ValueError('instance of %d ways does not fit a %d-way '
                             'slot' % (ways, size))
        result.append((item, ways, idx))
    return result
