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
"""Rate-cost proportional CPU shares (NFVnice's weights).

NFs pinned to the same cores compete for them through the Linux scheduler;
an NF's cgroup CPU weight decides its part. NFVnice gives each NF a weight
proportional to the CPU work its traffic needs, arrival rate times cost
per packet, so an NF that receives twice the packets, or spends twice the
cycles on each, gets twice the CPU, and a chain is not throttled by the
NF that the fair (equal) split starves.

Within one group of NFs sharing cores, the mean share is ``base`` (1024,
the kernel's default weight), so groups sharing no core do not depend on
each other and an instance outside any group keeps the default.

Bad rates never produce a zero or negative share: a rate that is zero
gives the floor ``minimum``; one that is missing, negative, NaN or
infinite is unknown and the NF gets the group's mean weight (``base``
when no NF of the group has a usable rate); the same for costs. Every
share is clamped to ``[minimum, maximum]``.
"""

import dataclasses
import math

# libvirt's cpu_shares: cgroup v1 cpu.shares takes 2..262144, cgroup v2
# cpu.weight 1..10000 (libvirt maps the value it is given there).
LIBVIRT_MIN = 2
LIBVIRT_MAX = 262144
DEFAULT_BASE = 1024


@dataclasses.dataclass(frozen=True)
class Demand:
    """One NF's traffic: packets per second and cycles per packet.

    Either may be None (unknown). ``priority`` (NFVnice's per-NF
    priority, 1 by default) multiplies the NF's weight: an NF of priority
    2 gets twice the CPU of one with the same load and cost.
    """

    uuid: str
    rate_pps: float = None
    cost: float = None
    priority: float = 1.0


def _usable(value):
    return (value is not None and isinstance(value, (int, float))
            and not isinstance(value, bool) and math.isfinite(value)
            and value >= 0)


def _priority(demand):
    p = demand.priority
    return p if _usable(p) and p > 0 else 1.0


def check_bounds(minimum, maximum, base=DEFAULT_BASE):
    """:raises ValueError: naming the option to fix."""
    if not LIBVIRT_MIN <= minimum <= LIBVIRT_MAX:
        raise ValueError('cpu_shares_min must be within %d..%d (libvirt\'s '
                         'cpu_shares range), got %r'
                         % (LIBVIRT_MIN, LIBVIRT_MAX, minimum))
    if not LIBVIRT_MIN <= maximum <= LIBVIRT_MAX:
        raise ValueError('cpu_shares_max must be within %d..%d (libvirt\'s '
                         'cpu_shares range), got %r'
                         % (LIBVIRT_MIN, LIBVIRT_MAX, maximum))
    if minimum > maximum:
        raise ValueError('cpu_shares_min (%d) is above cpu_shares_max (%d); '
                         'lower the minimum or raise the maximum'
                         % (minimum, maximum))
    if not minimum <= base <= maximum:
        raise ValueError('the mean share %d is outside cpu_shares_min..'
                         'cpu_shares_max (%d..%d); widen the range'
                         % (base, minimum, maximum))


def compute(demands, minimum=64, maximum=10000, base=DEFAULT_BASE):
    """``{uuid: share}`` for one group of NFs sharing cores.

    :param demands: :class:`Demand` objects of the group.
    :returns: integer shares within ``[minimum, maximum]``; their mean is
        ``base`` up to the clamping and rounding.
    """
    check_bounds(minimum, maximum, base)
    demands = list(demands)
    if not demands:
        return {}
    costs = [d.cost for d in demands if _usable(d.cost) and d.cost > 0]
    mean_cost = sum(costs) / len(costs) if costs else 1.0
    weights = {}
    unknown = []
    for d in demands:
        cost = d.cost if _usable(d.cost) and d.cost > 0 else mean_cost
        if not _usable(d.rate_pps):
            unknown.append(d.uuid)
            continue
        weights[d.uuid] = d.rate_pps * cost * _priority(d)
    known = [w for w in weights.values() if w > 0]
    # An NF whose rate is unknown is treated as an average one; with no
    # usable rate at all every NF is average: equal shares (each still
    # scaled by its priority).
    neutral = sum(known) / len(known) if known else 1.0
    for d in demands:
        if d.uuid in unknown:
            weights[d.uuid] = neutral * _priority(d)
    total = sum(weights.values())
    shares = {}
    for uuid, weight in weights.items():
        if total <= 0:
            share = base
        else:
            share = base * len(weights) * weight / total
        shares[uuid] = int(min(maximum, max(minimum, round(share))))
    return shares


def needs_write(current, wanted, hysteresis):
    """Whether ``wanted`` differs enough from ``current`` to be written.

    :param hysteresis: relative change (0.1 = 10 %) below which a share is
        left as it is, so rates that wobble do not rewrite every pass.
        Unknown ``current`` (never written, or unreadable) always writes.
    """
    if current is None or current <= 0:
        return True
    if wanted == current:
        return False
    return abs(wanted - current) / float(current) > hysteresis


def groups(instances, reserved):
    """Instances that compete for cores, as lists of UUIDs.

    :param instances: ``{uuid: tuple of pinned pCPUs}``; an empty tuple is
        an instance whose vCPUs float over the host's shared CPUs.
    :param reserved: UUIDs left out (they own their cores).
    :returns: connected components of "shares a pCPU" (all floating
        instances are one group); groups of one NF are left out, as a
        weight matters only against another.
    """
    floating = sorted(u for u, cpus in instances.items()
                      if not cpus and u not in reserved)
    pinned = {u: set(c) for u, c in instances.items()
              if c and u not in reserved}
    result = [floating] if len(floating) > 1 else []
    seen = set()
    for uuid in sorted(pinned):
        if uuid in seen:
            continue
        group, todo, cpus = [], [uuid], set()
        while todo:
            cur = todo.pop()
            if cur in seen:
                continue
            seen.add(cur)
            group.append(cur)
            cpus |= pinned[cur]
            todo.extend(u for u in pinned if u not in seen
                        and pinned[u] & cpus)
        if len(group) > 1:
            result.append(sorted(group))
    return result
