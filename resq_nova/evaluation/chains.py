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
"""Service chains on a shared core: NFVnice's mechanisms, simulated.

NFVnice (SIGCOMM 2017) shows two things about NFs that share a core: the
scheduler's default equal split starves the costly NF of an unbalanced
chain, and without backpressure the NFs upstream of a bottleneck spend
cycles on packets it then drops ("wasted work"). This module measures
both, for the agent's own mechanisms, on deterministic scenarios:

* the core is a work-conserving proportional-share scheduler (as CFS is
  with cgroup weights): in each tick of 1 microsecond every NF with
  packets queued gets cycles in proportion to its weight, and what an NF
  cannot use goes to the others;
* ``equal`` weights are the default; ``rate_cost`` weights are
  recomputed every control period by the agent's function
  (:func:`resq_agent.nfvnice.shares.compute`) from each NF's measured
  arrival rate and its cost per packet;
* ``backpressure`` is the agent's state machine
  (:class:`resq_agent.nfvnice.backpressure.Backpressure`) fed each
  control period with every NF's arrivals and drops, policing the chain's
  entry: packets above the policed rate are dropped at the entry, before
  any NF touched them.

A packet that finds the next NF's ring full is dropped there; the cycles
the NFs before spent on it are wasted work. Everything is fluid (packets
are fractional) and deterministic, so the same scenario gives the same
numbers everywhere.
"""

import dataclasses

from resq_agent.nfvnice import backpressure as bp_mod
from resq_agent.nfvnice import chains as chains_mod
from resq_agent.nfvnice import shares as shares_mod

CORE_CYCLES_PER_US = 2600.0     # one 2.6 GHz core, ResQ's E5-2695 v4 class
VARIANTS = ('default', 'rate_cost', 'backpressure', 'nfvnice')
EPS = 1e-9


@dataclasses.dataclass(frozen=True)
class Scenario:
    """One chain on one core.

    :param costs: cycles per packet of each NF, upstream first.
    :param rates: offered load (Mpps = packets per microsecond), one per
        phase; the phases repeat, each ``phase_us`` long.
    :param cost_bursts: ``(nf index, factor, every_us, for_us)``: the NF
        costs ``factor`` times more for ``for_us`` out of every
        ``every_us`` (a bursty NF, e.g. DPI on a heavy flow).
    """

    name: str
    costs: tuple
    rates: tuple
    phase_us: int = 500
    duration_us: int = 20000
    ring: float = 256.0
    period_us: int = 100
    cost_bursts: tuple = ()


SCENARIOS = (
    # The costly middle NF of a chain whose input bursts above the core's
    # capacity (1.54 Mpps for these costs) for 2 ms out of every 4 ms.
    Scenario('unbalanced', costs=(260.0, 1040.0, 390.0),
             rates=(2.4, 0.8), phase_us=2000),
    # A chain within the core's capacity (2.36 Mpps) whose middle NF
    # turns three times as costly (DPI on a heavy flow) for 1 ms out of
    # every 2.5 ms, when the chain can do 1.24 Mpps.
    Scenario('bursty_nf', costs=(300.0, 500.0, 300.0), rates=(1.9,),
             cost_bursts=((1, 3.0, 2500, 1000),)),
)
# The agent's backpressure with its default thresholds, but re-checked
# every control period (100 us here, where the agent runs every few
# seconds against Open vSwitch's statistics), so one clear period raises
# the policer.
BACKPRESSURE = {'clear_passes': 1, 'min_kbps': 1}


def _allocate(capacity, demands, weights):
    """Work-conserving weighted split of ``capacity`` cycles."""
    grant = [0.0] * len(demands)
    active = [i for i, d in enumerate(demands) if d > EPS]
    left = capacity
    while active and left > EPS:
        total = sum(weights[i] for i in active)
        spare, still = 0.0, []
        for i in active:
            offer = left * weights[i] / total
            need = demands[i] - grant[i]
            if need <= offer:
                grant[i] += need
                spare += offer - need
            else:
                grant[i] += offer
                still.append(i)
        left, active = spare, still
    return grant


def _check(sc):
    def positive(value):
        return (isinstance(value, (int, float)) and not isinstance(
            value, bool) and value == value and 0 < value < float('inf'))

    if not sc.costs or not all(positive(c) for c in sc.costs):
        raise ValueError('chain scenario %s: costs must be positive cycles '
                         'per packet, one per NF, got %r'
                         % (sc.name, sc.costs))
    if not sc.rates or not all(positive(r) or r == 0 for r in sc.rates):
        raise ValueError('chain scenario %s: rates must be offered loads '
                         'in Mpps, zero or more, got %r' % (sc.name,
                                                            sc.rates))
    for field in ('phase_us', 'duration_us', 'ring', 'period_us'):
        if not positive(getattr(sc, field)):
            raise ValueError('chain scenario %s: %s must be positive, got '
                             '%r' % (sc.name, field, getattr(sc, field)))
    for burst in sc.cost_bursts:
        nf, factor, every, length = burst
        if not (0 <= nf < len(sc.costs) and positive(factor)
                and positive(every) and 0 <= length <= every):
            raise ValueError('chain scenario %s: cost burst %r must be '
                             '(NF index, factor > 0, every_us > 0, '
                             'for_us <= every_us)' % (sc.name, burst))


def simulate(scenario, rate_cost=False, backpressure=False):
    """Run one scenario; returns its figures.

    :raises ValueError: for a scenario that cannot run, naming the field.
    """
    _check(scenario)
    n = len(scenario.costs)
    queue = [0.0] * n
    weights = [shares_mod.DEFAULT_BASE] * n
    period_in = [0.0] * n
    period_drop = [0.0] * n
    period_entry = 0.0
    chain = chains_mod.Chain(scenario.name, 'entry',
                             tuple('nf%d' % i for i in range(n)))
    # The state machine's rates are in kbit/s; here they are packets per
    # microsecond x 1000: the arithmetic is the same.
    bp = bp_mod.Backpressure(**BACKPRESSURE) if backpressure else None
    police = None                    # packets per microsecond, or None
    offered = delivered = entry_drops = ring_drops = 0.0
    wasted = wasted_packets = used = 0.0
    policed_us = 0
    for t in range(scenario.duration_us):
        costs = list(scenario.costs)
        for nf, factor, every, length in scenario.cost_bursts:
            if t % every < length:
                costs[nf] *= factor
        rate = scenario.rates[(t // scenario.phase_us)
                              % len(scenario.rates)]
        offered += rate
        admitted = rate
        if police is not None:
            admitted = min(rate, police)
            entry_drops += rate - admitted
            policed_us += 1
        period_entry += admitted
        # The entry port feeds the first NF's ring.
        room = scenario.ring - queue[0]
        taken = min(admitted, room)
        ring_drops += admitted - taken
        period_in[0] += admitted
        period_drop[0] += admitted - taken
        queue[0] += taken
        demand = [queue[i] * costs[i] for i in range(n)]
        grant = _allocate(CORE_CYCLES_PER_US, demand, weights)
        for i in range(n):
            done = grant[i] / costs[i]
            queue[i] -= done
            used += grant[i]
            if i == n - 1:
                delivered += done
                continue
            room = scenario.ring - queue[i + 1]
            taken = min(done, room)
            lost = done - taken
            queue[i + 1] += taken
            period_in[i + 1] += done
            period_drop[i + 1] += lost
            if lost > EPS:
                ring_drops += lost
                wasted_packets += lost
                # Every NF up to i worked on each lost packet.
                wasted += lost * sum(costs[:i + 1])
        if (t + 1) % scenario.period_us == 0:
            per_us = float(scenario.period_us)
            if rate_cost:
                got = shares_mod.compute([
                    shares_mod.Demand(str(i), period_in[i] / per_us,
                                      scenario.costs[i])
                    for i in range(n)])
                weights = [got[str(i)] for i in range(n)]
            if bp is not None:
                decision = bp.step_chain(chain, {
                    'nf%d' % i: (period_in[i], period_drop[i])
                    for i in range(n)}, period_entry / per_us * 1000)
                police = (decision.rate_kbps / 1000.0
                          if decision.rate_kbps else None)
            period_in = [0.0] * n
            period_drop = [0.0] * n
            period_entry = 0.0
    us = float(scenario.duration_us)
    in_flight = sum(queue)
    return {
        'offered_mpps': round(offered / us, 4),
        'throughput_mpps': round(delivered / us, 4),
        'drop_pct': round(100.0 * (entry_drops + ring_drops)
                          / offered, 2),
        'entry_drop_pct': round(100.0 * entry_drops / offered, 2),
        'chain_drop_pct': round(100.0 * ring_drops / offered, 2),
        'wasted_work_pct': round(100.0 * wasted / used, 2) if used else 0.0,
        'wasted_packets_pct': round(100.0 * wasted_packets / offered, 2),
        'cpu_busy_pct': round(100.0 * used
                              / (CORE_CYCLES_PER_US * us), 2),
        'policed_pct': round(100.0 * policed_us / us, 2),
        'in_flight_packets': round(in_flight, 2),
    }


def evaluate(scenarios=SCENARIOS):
    """``{scenario: {variant: figures}}`` with and without each mechanism.

    ``default`` is equal shares and no backpressure, ``nfvnice`` both
    mechanisms.
    """
    doc = {}
    for sc in scenarios:
        doc[sc.name] = {
            'default': simulate(sc),
            'rate_cost': simulate(sc, rate_cost=True),
            'backpressure': simulate(sc, backpressure=True),
            'nfvnice': simulate(sc, rate_cost=True, backpressure=True),
            'config': {'costs_cycles': list(sc.costs),
                       'offered_mpps_phases': list(sc.rates),
                       'phase_us': sc.phase_us,
                       'duration_us': sc.duration_us,
                       'ring_packets': sc.ring,
                       'control_period_us': sc.period_us,
                       'cost_bursts': [list(b) for b in sc.cost_bursts]},
        }
    return doc


def table(doc):
    """The chain results as a plain-text table."""
    lines = ['%-11s %-13s %9s %7s %8s %8s %8s' % (
        'chain', 'variant', 'thr Mpps', 'drop%', 'entry%', 'in-chain%',
        'wasted%')]
    for name, rows in doc.items():
        for variant in VARIANTS:
            r = rows[variant]
            lines.append('%-11s %-13s %9.3f %7.2f %8.2f %8.2f %8.2f' % (
                name, variant, r['throughput_mpps'], r['drop_pct'],
                r['entry_drop_pct'], r['chain_drop_pct'],
                r['wasted_work_pct']))
    return '\n'.join(lines)
