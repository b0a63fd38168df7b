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
  with cgroup weights): in each tick (1 microsecond at the default
  period) every NF with packets to serve gets cycles in proportion to
  its weight, and what an NF cannot use goes to the others;
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

A scenario's NFs share one core, or each has its own (``cores``, as
NFVnice's "Three NF Chain (NF per core)", :data:`PAPER_3NF` and
:func:`paper_3nf_table`). The control period defaults to 100 us, far
faster than the real agent's loop; :func:`evaluate_at_period` and
:func:`gain_by_period` run the scenarios at the agent's period (10 to
500 ms), where the fluid tick grows with the period (:func:`tick_for`,
1/1000 of it: within a tick each NF serves at a steady rate what it has
and what comes in, so a coarse tick changes the throughput by well under
1 % against 1 us ticks) and the runs last at least :data:`MIN_PERIODS`
periods. :data:`AGENT_SCALE_SCENARIOS` are loads that change over
seconds, which an agent polling every few tens of milliseconds can
follow; the millisecond phases of :data:`SCENARIOS` it cannot.
"""

import dataclasses
import math

from resq_agent.nfvnice import backpressure as bp_mod
from resq_agent.nfvnice import chains as chains_mod
from resq_agent.nfvnice import shares as shares_mod

CORE_CYCLES_PER_US = 2600.0     # one 2.6 GHz core, ResQ's E5-2695 v4 class
VARIANTS = ('default', 'rate_cost', 'backpressure', 'nfvnice')
EPS = 1e-9


@dataclasses.dataclass(frozen=True)
class Scenario:
    """One chain, on one shared core or on a core per NF.

    :param costs: cycles per packet of each NF, upstream first.
    :param rates: offered load (Mpps = packets per microsecond), one per
        phase; the phases repeat, each ``phase_us`` long.
    :param cost_bursts: ``(nf index, factor, every_us, for_us)``: the NF
        costs ``factor`` times more for ``for_us`` out of every
        ``every_us`` (a bursty NF, e.g. DPI on a heavy flow).
    :param cores: ``'shared'``: all the NFs on one core, split by the
        scheduler's weights; ``'per_nf'``: each NF alone on its own core
        (NFVnice's "Three NF Chain (NF per core)"), where weights do
        nothing and only backpressure can change anything.
    :param priorities: NFVnice's per-NF priority, one per NF (empty: all
        1); it multiplies the NF's rate-cost weight
        (:class:`resq_agent.nfvnice.shares.Demand`), so it matters in the
        ``rate_cost`` and ``nfvnice`` variants only (the default variant
        is the scheduler's equal split).
    """

    name: str
    costs: tuple
    rates: tuple
    phase_us: int = 500
    duration_us: int = 20000
    ring: float = 256.0
    period_us: int = 100
    cost_bursts: tuple = ()
    cores: str = 'shared'
    priorities: tuple = ()


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
# NFVnice's "Three NF Chain (NF per core)": NFs of 550, 2200 and 4500
# cycles per packet, each on its own core, fed at 10 GbE's line rate for
# 64-byte frames (14.88 Mpps), far above even NF1's capacity (4.73 Mpps
# on a 2.6 GHz core), steadily.
PAPER_3NF = Scenario('paper_3nf', costs=(550.0, 2200.0, 4500.0),
                     rates=(14.88,), phase_us=1000, cores='per_nf')
# Load that changes on the agent's timescale (its loop runs every 10 ms
# or more; phases of a few milliseconds, as above, are over before it
# sees them): the scenarios above with phases of seconds.
AGENT_SCALE_SCENARIOS = (
    # Overloaded (2.4 Mpps, the core does 1.54) for 2 s out of every 5 s,
    # 0.8 Mpps the other 3 s.
    Scenario('unbalanced_slow', costs=(260.0, 1040.0, 390.0),
             rates=(2.4, 2.4, 0.8, 0.8, 0.8), phase_us=1000000,
             duration_us=5000000),
    # The middle NF three times as costly for 2 s out of every 5 s.
    Scenario('bursty_nf_slow', costs=(300.0, 500.0, 300.0), rates=(1.9,),
             phase_us=1000000, duration_us=5000000,
             cost_bursts=((1, 3.0, 5000000, 2000000),)),
    # The paper's chain overloaded for 2 s out of every 5 s: 1 Mpps
    # (above NF3's 0.58) then 0.4 Mpps.
    Scenario('paper_3nf_slow', costs=(550.0, 2200.0, 4500.0),
             rates=(1.0, 1.0, 0.4, 0.4, 0.4), phase_us=1000000,
             duration_us=5000000, cores='per_nf'),
)
ALL_SCENARIOS = SCENARIOS + (PAPER_3NF,) + AGENT_SCALE_SCENARIOS
CORES = ('shared', 'per_nf')
# The agent's backpressure with its default thresholds, but one clear
# control period raises the policer (the agent's default waits three).
BACKPRESSURE = {'clear_passes': 1, 'min_kbps': 1}
# A simulation at a control period P lasts at least this many periods.
MIN_PERIODS = 20
# The fluid tick is at least P / TICKS_PER_PERIOD (and at most P / 4),
# and a run takes no more than about MAX_TICKS ticks.
TICKS_PER_PERIOD = 1000
MAX_TICKS = 100000

# NFVnice (SIGCOMM 2017), its talk's slides "Three NF Chain (NF per
# core)" (../shared/seeds/004_b1beb684a43c042e.txt, "Lots of Wasted
# Work! Burning CPU!!"): per NF, service rate (Mpps), drop rate (Mpps;
# packets it served that the next NF's ring dropped) and CPU use (%).
PAPER_3NF_FIGURES = {
    'source': 'NFVnice talk slides, "Three NF Chain (NF per core)"',
    'default': {'nf': [(5.95, 4.76, 100.0), (1.18, 0.58, 100.0),
                       (0.6, None, 100.0)],
                'aggregate_mpps': 0.6},
    'nfvnice': {'nf': [(0.82, 0.15, 11.0), (0.72, 0.07, 64.0),
                       (0.6, None, 100.0)],
                'aggregate_mpps': 0.6},
}


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


def _positive(value):
    return (isinstance(value, (int, float)) and not isinstance(
        value, bool) and value == value and 0 < value < float('inf'))


def _whole(value):
    return isinstance(value, int) and not isinstance(value, bool) and (
        value > 0)


def _check(sc):
    if not sc.costs or not all(_positive(c) for c in sc.costs):
        raise ValueError('chain scenario %s: costs must be positive cycles '
                         'per packet, one per NF, got %r'
                         % (sc.name, sc.costs))
    if not sc.rates or not all(_positive(r) or r == 0 for r in sc.rates):
        raise ValueError('chain scenario %s: rates must be offered loads '
                         'in Mpps, zero or more, got %r' % (sc.name,
                                                            sc.rates))
    if not _positive(sc.ring):
        raise ValueError('chain scenario %s: ring must be positive, got %r'
                         % (sc.name, sc.ring))
    for field in ('phase_us', 'duration_us', 'period_us'):
        if not _whole(getattr(sc, field)):
            raise ValueError('chain scenario %s: %s must be positive, a '
                             'whole number of microseconds, got %r'
                             % (sc.name, field, getattr(sc, field)))
    for burst in sc.cost_bursts:
        nf, factor, every, length = burst
        if not (0 <= nf < len(sc.costs) and _positive(factor)
                and _whole(every) and isinstance(length, int)
                and 0 <= length <= every):
            raise ValueError('chain scenario %s: cost burst %r must be '
                             '(NF index, factor > 0, every_us > 0, '
                             'for_us <= every_us, whole microseconds)'
                             % (sc.name, burst))
    if sc.cores not in CORES:
        raise ValueError('chain scenario %s: cores must be one of %s, got '
                         '%r' % (sc.name, ', '.join(CORES), sc.cores))
    if sc.priorities and (
            len(sc.priorities) != len(sc.costs)
            or not all(_positive(p) for p in sc.priorities)):
        raise ValueError('chain scenario %s: priorities must be empty (all '
                         '1) or one positive number per NF (%d), got %r'
                         % (sc.name, len(sc.costs), sc.priorities))


def tick_for(scenario, period_us=None):
    """The fluid tick (microseconds) a run of ``scenario`` uses.

    The coarsest of 1 us, ``period / TICKS_PER_PERIOD`` and ``duration /
    MAX_TICKS``, but never above a quarter of the control period, and
    lowered to divide the period, the phases and the cost bursts, so
    every change of load and every control pass falls on a tick.
    """
    period = period_us or scenario.period_us
    tick = max(1, period // TICKS_PER_PERIOD,
               scenario.duration_us // MAX_TICKS)
    tick = min(tick, max(1, period // 4))
    times = [period, scenario.phase_us]
    for _nf, _factor, every, length in scenario.cost_bursts:
        times += [every, length] if length else [every]
    for value in times:
        tick = math.gcd(tick, value)
    return tick


class _Run:
    """The state of one simulation; :meth:`tick` advances it ``dt`` us."""

    def __init__(self, sc, rate_cost, backpressure, period, dt):
        n = len(sc.costs)
        self.sc, self.n, self.period, self.dt = sc, n, period, dt
        self.rate_cost = rate_cost
        self.priorities = sc.priorities or (1,) * n
        self.queue = [0.0] * n
        self.weights = [shares_mod.DEFAULT_BASE] * n
        self.last_done = [0.0] * n
        self.period_in = [0.0] * n
        self.period_drop = [0.0] * n
        self.period_entry = 0.0
        self.chain = chains_mod.Chain(sc.name, 'entry',
                                      tuple('nf%d' % i for i in range(n)))
        # The state machine's rates are in kbit/s; here they are packets
        # per microsecond x 1000: the arithmetic is the same.
        self.bp = bp_mod.Backpressure(**BACKPRESSURE) if backpressure \
            else None
        self.police = None               # packets per microsecond, or None
        self.offered = self.delivered = self.entry_drops = 0.0
        self.ring_drops = self.wasted_packets = 0.0
        self.policed_us = 0
        self.served = [0.0] * n          # packets each NF processed
        self.lost_after = [0.0] * n      # of those, lost at the next ring
        self.used = [0.0] * n            # cycles each NF spent
        self.wasted = [0.0] * n          # of those, on packets lost later

    def _costs(self, t):
        costs = list(self.sc.costs)
        for nf, factor, every, length in self.sc.cost_bursts:
            if t % every < length:
                costs[nf] *= factor
        return costs

    def _grants(self, costs, admitted):
        """Cycles each NF may use this tick."""
        cycles = CORE_CYCLES_PER_US * self.dt
        if self.sc.cores == 'per_nf':
            return [cycles] * self.n
        # One core: an NF's demand is its queue plus what the NF before
        # it passes on this tick, which depends on the split; iterate
        # from last tick's flows (the same in a steady state).
        inflow = [admitted] + self.last_done[:-1]
        for _ in range(self.n):
            demand = [(q + a) * c
                      for q, a, c in zip(self.queue, inflow, costs)]
            grant = _allocate(cycles, demand, self.weights)
            done = [min(g / c, q + a) for g, c, q, a in zip(
                grant, costs, self.queue, inflow)]
            settled = all(abs(x - y) <= EPS
                          for x, y in zip(done[:-1], inflow[1:]))
            if settled:
                break
            inflow = [admitted] + done[:-1]
        return grant

    def tick(self, t):
        sc, dt = self.sc, self.dt
        costs = self._costs(t)
        rate = sc.rates[(t // sc.phase_us) % len(sc.rates)]
        self.offered += rate * dt
        admitted = rate * dt
        if self.police is not None:
            admitted = min(rate, self.police) * dt
            self.entry_drops += rate * dt - admitted
            self.policed_us += dt
        self.period_entry += admitted
        grant = self._grants(costs, admitted)
        inflow = admitted
        for i in range(self.n):
            # Fluid within the tick: the NF serves what it has and what
            # comes in, up to its cycles; what is left above the ring is
            # dropped (the ring was full when it came).
            done = min(grant[i] / costs[i], self.queue[i] + inflow)
            left = self.queue[i] + inflow - done
            lost = max(0.0, left - sc.ring)
            self.queue[i] = left - lost
            self.period_in[i] += inflow
            self.period_drop[i] += lost
            self.ring_drops += lost
            if i and lost > EPS:
                self.wasted_packets += lost
                self.lost_after[i - 1] += lost
                # Every NF before i worked on each lost packet.
                for j in range(i):
                    self.wasted[j] += lost * costs[j]
            self.served[i] += done
            self.used[i] += done * costs[i]
            self.last_done[i] = done
            inflow = done
        self.delivered += inflow

    def control(self):
        """One pass of the agent's loop over the period just ended."""
        n, per_us = self.n, float(self.period)
        if self.rate_cost:
            got = shares_mod.compute([
                shares_mod.Demand(str(i), self.period_in[i] / per_us,
                                  self.sc.costs[i],
                                  priority=self.priorities[i])
                for i in range(n)])
            self.weights = [got[str(i)] for i in range(n)]
        if self.bp is not None:
            decision = self.bp.step_chain(self.chain, {
                'nf%d' % i: (self.period_in[i], self.period_drop[i])
                for i in range(n)}, self.period_entry / per_us * 1000)
            self.police = (decision.rate_kbps / 1000.0
                           if decision.rate_kbps else None)
        self.period_in = [0.0] * n
        self.period_drop = [0.0] * n
        self.period_entry = 0.0

    def figures(self, us):
        n, sc = self.n, self.sc
        cores = 1 if sc.cores == 'shared' else n
        cycles = CORE_CYCLES_PER_US * us
        used, offered = sum(self.used), self.offered
        nf = []
        for i in range(n):
            served = self.served[i]
            nf.append({
                'service_mpps': round(served / us, 4),
                'dropped_after_mpps': (round(self.lost_after[i] / us, 4)
                                       if i < n - 1 else None),
                'drop_pct': (round(100.0 * self.lost_after[i] / served, 2)
                             if i < n - 1 and served > EPS else
                             (0.0 if i < n - 1 else None)),
                'cpu_pct': round(100.0 * self.used[i] / cycles, 2),
                'wasted_cycles_per_us': round(self.wasted[i] / us, 2),
            })
        if cores == 1:
            core_cpu = [round(100.0 * used / cycles, 2)]
        else:
            core_cpu = [row['cpu_pct'] for row in nf]
        return {
            'offered_mpps': round(offered / us, 4),
            'throughput_mpps': round(self.delivered / us, 4),
            'drop_pct': round(100.0 * (self.entry_drops + self.ring_drops)
                              / offered, 2) if offered else 0.0,
            'entry_drop_pct': round(100.0 * self.entry_drops / offered, 2)
            if offered else 0.0,
            'chain_drop_pct': round(100.0 * self.ring_drops / offered, 2)
            if offered else 0.0,
            'wasted_work_pct': round(100.0 * sum(self.wasted) / used, 2)
            if used else 0.0,
            'wasted_cycles_per_us': round(sum(self.wasted) / us, 2),
            'wasted_packets_pct': round(100.0 * self.wasted_packets
                                        / offered, 2) if offered else 0.0,
            'cpu_busy_pct': round(100.0 * used / (cycles * cores), 2),
            'core_cpu_pct': core_cpu,
            'nf': nf,
            'policed_pct': round(100.0 * self.policed_us / us, 2),
            'in_flight_packets': round(sum(self.queue), 2),
            'period_us': self.period,
            'tick_us': self.dt,
        }


def simulate(scenario, rate_cost=False, backpressure=False, period_us=None,
             tick_us=None):
    """Run one scenario; returns its figures.

    :param period_us: the control period, overriding the scenario's.
    :param tick_us: the fluid tick; by default :func:`tick_for`'s. It
        must divide the control period.
    :returns: chain-wide figures (``throughput_mpps``, drops in % of the
        offered packets, ``wasted_work_pct``: cycles spent on packets a
        later NF dropped, in % of the cycles used), ``core_cpu_pct``
        (cycles used over cycles available, one per core) and ``nf``:
        per NF its service rate, the packets it served that the next
        ring dropped (Mpps and % of its service; None for the last NF),
        its CPU use (% of one core) and the cycles it wasted per us.
    :raises ValueError: for a scenario that cannot run, naming the field.
    """
    if period_us is not None:
        scenario = dataclasses.replace(scenario, period_us=period_us)
    _check(scenario)
    period = scenario.period_us
    dt = tick_us or tick_for(scenario)
    if not _whole(dt) or period % dt:
        raise ValueError('chain scenario %s: tick_us must be a whole number '
                         'of microseconds dividing the control period %d, '
                         'got %r' % (scenario.name, period, tick_us))
    run = _Run(scenario, rate_cost, backpressure, period, dt)
    ticks = -(-scenario.duration_us // dt)
    for k in range(ticks):
        t = k * dt
        run.tick(t)
        if (t + dt) % period == 0:
            run.control()
    return run.figures(float(ticks * dt))


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
                       'cost_bursts': [list(b) for b in sc.cost_bursts],
                       'cores': sc.cores,
                       'priorities': list(sc.priorities)},
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


VARIANT_FLAGS = {'default': (False, False), 'rate_cost': (True, False),
                 'backpressure': (False, True), 'nfvnice': (True, True)}


def at_period(scenario, period_us, periods=MIN_PERIODS):
    """``scenario`` controlled every ``period_us``, long enough for it.

    Its duration becomes at least ``periods`` control periods, rounded
    up to whole cycles of its load (phases and cost bursts), so the
    averages are over whole cycles.
    """
    cycle = scenario.phase_us * len(scenario.rates)
    for _nf, _factor, every, _length in scenario.cost_bursts:
        cycle = cycle * every // math.gcd(cycle, every)
    duration = max(scenario.duration_us, periods * period_us)
    duration = -(-duration // cycle) * cycle
    return dataclasses.replace(scenario, period_us=period_us,
                               duration_us=duration)


def _gain(with_bp, without):
    if without <= 0:
        return 0.0
    return round(100.0 * (with_bp / without - 1), 2)


def evaluate_at_period(period_us, scenarios=ALL_SCENARIOS,
                       periods=MIN_PERIODS):
    """Each variant of each scenario, the agent's loop every period_us.

    Each runs at least ``periods`` periods (:func:`at_period`).

    :returns: ``{scenario: {'throughput_mpps': {variant: Mpps},
        'backpressure_gain_pct': {'nfvnice_vs_rate_cost': %,
        'backpressure_vs_default': %, 'nfvnice_vs_default': %,
        'rate_cost_vs_default': %}, 'core_cpu_pct': {variant: [% per
        core]}, 'wasted_work_pct': {variant: %}, 'period_us',
        'duration_us', 'tick_us'}}``; a gain below zero is throughput
        that backpressure costs at that period. Each key names its
        baseline after ``_vs_``: ``default`` is the scheduler's equal
        split without backpressure, ``rate_cost`` rate-cost shares
        without backpressure; ``nfvnice`` is both mechanisms.
    """
    doc = {}
    for sc in scenarios:
        sc = at_period(sc, period_us, periods)
        runs = {v: simulate(sc, *flags) for v, flags in
                VARIANT_FLAGS.items()}
        thr = {v: r['throughput_mpps'] for v, r in runs.items()}
        doc[sc.name] = {
            'throughput_mpps': thr,
            'backpressure_gain_pct': {
                'nfvnice_vs_rate_cost': _gain(thr['nfvnice'],
                                              thr['rate_cost']),
                'backpressure_vs_default': _gain(thr['backpressure'],
                                                 thr['default']),
                'nfvnice_vs_default': _gain(thr['nfvnice'],
                                            thr['default']),
                'rate_cost_vs_default': _gain(thr['rate_cost'],
                                              thr['default'])},
            'core_cpu_pct': {v: r['core_cpu_pct'] for v, r in runs.items()},
            'wasted_work_pct': {v: r['wasted_work_pct']
                                for v, r in runs.items()},
            'period_us': period_us,
            'duration_us': sc.duration_us,
            'tick_us': runs['default']['tick_us'],
        }
    return doc


GAIN_PERIODS_US = (100, 1000, 10000, 50000, 100000, 500000)
# The comparisons of :func:`evaluate_at_period`, each naming its
# baseline after ``_vs_`` (issue 45: NFVnice's gain against the default
# scheduler as well as against rate-cost shares).
GAIN_KEYS = ('nfvnice_vs_rate_cost', 'backpressure_vs_default',
             'nfvnice_vs_default', 'rate_cost_vs_default')


def gain_by_period(periods_us=GAIN_PERIODS_US, scenarios=ALL_SCENARIOS,
                   periods=MIN_PERIODS):
    """Backpressure's throughput gain against the control period.

    :returns: ``{'periods_us': [...], 'gain_pct': {scenario:
        {'nfvnice_vs_rate_cost': [% per period], ... one list per key
        of :data:`GAIN_KEYS`}}, 'at': {period: the
        :func:`evaluate_at_period` document}}``.
    """
    at = {p: evaluate_at_period(p, scenarios, periods) for p in periods_us}
    gains = {}
    for sc in scenarios:
        gains[sc.name] = {
            key: [at[p][sc.name]['backpressure_gain_pct'][key]
                  for p in periods_us]
            for key in GAIN_KEYS}
    return {'periods_us': list(periods_us), 'gain_pct': gains, 'at': at}


def gain_text(doc):
    """:func:`gain_by_period`'s gains as a plain-text table (ms)."""
    periods = doc['periods_us']
    head = '%-16s %-24s' % ('chain', 'gain % at period (ms)')
    lines = [head + ''.join('%9g' % (p / 1000.0) for p in periods)]
    for name, rows in doc['gain_pct'].items():
        for key, values in rows.items():
            lines.append('%-16s %-24s' % (name, key) + ''.join(
                '%9.2f' % v for v in values))
    return '\n'.join(lines)


def paper_3nf_table(period_us, periods=2 * MIN_PERIODS,
                    scenario=PAPER_3NF):
    """NFVnice's 3-NF chain (NF per core) here, beside the paper's.

    ``default`` is the chain alone; ``nfvnice`` adds the agent's
    backpressure, re-checked every ``period_us`` (rate-cost shares do
    nothing with a core per NF). Each NF's service rate, the packets it
    served that the next NF's ring dropped (Mpps and % of its service)
    and its core's use (%), and the chain's throughput, next to
    :data:`PAPER_3NF_FIGURES`.

    Where the numbers differ, and why:

    * The slide's rates need faster cores than this module's 2.6 GHz
      (:data:`CORE_CYCLES_PER_US`): NF1's 5.95 Mpps at 550 cycles is
      3.3 GHz, NF3's 0.6 Mpps at 4500 cycles 2.7 GHz (NF2's 1.18 Mpps
      at 2200 is 2.6 GHz). Here the capacities are 4.73, 1.18 and 0.578
      Mpps (capacities, from the costs): NF1 serves less than the
      slide's, so a smaller part of it is lost at NF2's ring, and the
      chain does a little less than 0.6.
    * With NFVnice the slide's NF1 serves 0.82 Mpps on 11 % of its core,
      which at 550 cycles a packet would be a 4.1 GHz core; the slide
      likely counts only the time the NF is scheduled, not its polling.
      Here the CPU is cycles used over cycles available, so NF1 shows
      more for about the same service rate.
    * NFVnice throttles per packet batch with ring watermarks; here the
      agent polices the chain's entry once per control period, with a
      margin of 5 % below the bottleneck and a step of 25 % up when
      clear. Between periods the chain runs unthrottled or tight, so the
      upstream NFs still serve and lose some packets (the slide too shows
      0.15 and 0.07 Mpps of drops), and a short period follows the
      bottleneck so nervously that the policer spends more time below it
      (the docs' table gives the loss at each period).
    * The slide's aggregate row prints 71 (72 on the next slide) in the
      NFVnice CPU column, without a unit; ``mean_cpu_pct`` here is the
      mean over the three cores.

    :returns: ``{'period_us', 'core_ghz', 'offered_mpps', 'duration_us',
        'default': {'nf': [{'service_mpps', 'dropped_after_mpps',
        'drop_pct', 'cpu_pct'}, ...], 'aggregate_mpps', 'mean_cpu_pct',
        'wasted_work_pct', 'wasted_cycles_per_us'}, 'nfvnice': {...},
        'paper': PAPER_3NF_FIGURES}``
    """
    sc = at_period(scenario, period_us, periods)
    doc = {'period_us': period_us,
           'core_ghz': CORE_CYCLES_PER_US / 1000.0,
           'offered_mpps': list(sc.rates),
           'duration_us': sc.duration_us,
           'paper': PAPER_3NF_FIGURES}
    for variant, flags in (('default', (False, False)),
                           ('nfvnice', (True, True))):
        r = simulate(sc, *flags)
        nf = [{k: row[k] for k in ('service_mpps', 'dropped_after_mpps',
                                   'drop_pct', 'cpu_pct')}
              for row in r['nf']]
        doc[variant] = {
            'nf': nf,
            'aggregate_mpps': r['throughput_mpps'],
            'mean_cpu_pct': round(sum(r['core_cpu_pct'])
                                  / len(r['core_cpu_pct']), 2),
            'wasted_work_pct': r['wasted_work_pct'],
            'wasted_cycles_per_us': r['wasted_cycles_per_us'],
        }
    return doc


def paper_3nf_text(doc):
    """:func:`paper_3nf_table` as plain text, here beside the paper."""
    def cell(value, fmt):
        return '-' if value is None else fmt % value

    lines = ['3-NF chain, NF per core, agent period %g ms, %.1f GHz cores'
             % (doc['period_us'] / 1000.0, doc['core_ghz']),
             '%-9s %-8s %19s %19s %15s' % (
                 '', '', 'service Mpps', 'dropped Mpps (%)', 'CPU %'),
             '%-9s %-8s %19s %19s %15s' % (
                 'variant', 'NF', 'here / paper', 'here / paper',
                 'here / paper')]
    for variant in ('default', 'nfvnice'):
        here, paper = doc[variant], doc['paper'][variant]
        for i, (row, ref) in enumerate(zip(here['nf'], paper['nf'])):
            dropped = '-' if row['dropped_after_mpps'] is None else (
                '%.2f (%.0f%%)' % (row['dropped_after_mpps'],
                                   row['drop_pct']))
            lines.append('%-9s %-8s %19s %19s %15s' % (
                variant, 'NF%d' % (i + 1),
                '%.3f / %.2f' % (row['service_mpps'], ref[0]),
                '%s / %s' % (dropped, cell(ref[1], '%.2f')),
                '%.0f / %.0f' % (row['cpu_pct'], ref[2])))
        lines.append('%-9s %-8s %19s' % (
            variant, 'chain', '%.3f / %.2f' % (here['aggregate_mpps'],
                                               paper['aggregate_mpps'])))
    return '\n'.join(lines)


DOC_PERIODS_US = (100, 10000, 100000, 200000, 500000)
DOC_PAPER_PERIODS_US = (10000, 100000, 200000)


def _ms(period_us):
    return '%g' % (period_us / 1000.0)


def _nf_rows(rows):
    return {'nf%d' % (i + 1): row for i, row in enumerate(rows)}


def doc_figures(periods_us=DOC_PERIODS_US,
                paper_periods_us=DOC_PAPER_PERIODS_US):
    """What the NFVnice page quotes, as nested mappings (no lists).

    ``gain/<period ms>/<scenario>/<comparison>``: backpressure's
    throughput gain (%) at that control period; ``cpu/<period
    ms>/<scenario>/<variant>/core<i>``: each core's use (%);
    ``paper_3nf/<period ms>/<variant>/...`` the paper's 3-NF chain here,
    and ``paper_3nf/paper/...`` the slide's figures.
    """
    doc = gain_by_period(periods_us)
    gain, cpu = {}, {}
    for i, period in enumerate(doc['periods_us']):
        at = doc['at'][period]
        gain[_ms(period)] = {
            name: {key: values[i] for key, values in rows.items()}
            for name, rows in doc['gain_pct'].items()}
        cpu[_ms(period)] = {
            name: {variant: {'core%d' % j: c for j, c in enumerate(cores)}
                   for variant, cores in at[name]['core_cpu_pct'].items()}
            for name in at}
    paper = {}
    for period in paper_periods_us:
        table = paper_3nf_table(period)
        paper[_ms(period)] = {
            v: dict(_nf_rows(table[v]['nf']),
                    aggregate_mpps=table[v]['aggregate_mpps'],
                    mean_cpu_pct=table[v]['mean_cpu_pct'],
                    wasted_work_pct=table[v]['wasted_work_pct'])
            for v in ('default', 'nfvnice')}
    paper['paper'] = {
        v: dict(_nf_rows([{'service_mpps': s, 'dropped_after_mpps': d,
                           'cpu_pct': c}
                          for s, d, c in PAPER_3NF_FIGURES[v]['nf']]),
                aggregate_mpps=PAPER_3NF_FIGURES[v]['aggregate_mpps'])
        for v in ('default', 'nfvnice')}
    return {'gain': gain, 'cpu': cpu, 'paper_3nf': paper}
