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
"""Backpressure: throttle a chain at its entry while an NF of it drops.

NFVnice marks a chain whose NF is overloaded and stops admitting the
chain's packets upstream, so no NF spends cycles on packets a later one
drops; unmarked chains sharing those NFs go on. Here the signal is an NF's
drop ratio (packets it lost over packets offered to it, :mod:`.rates`) and
the cut is an Open vSwitch ingress policer on the chain's entry port:

* **mark** when some NF of the chain drops at least ``high`` of its
  arrivals: police the entry at the rate the bottleneck actually got
  through, ``entry rate x (1 - drop ratio) x (1 - margin)``;
* **tighten** the same way when the NF still drops ``high`` or more while
  marked (the measured entry rate is then the policed one);
* **hold** while the drop ratio is between ``low`` and ``high``;
* **relax** after ``clear_passes`` consecutive passes with every NF at or
  below ``low``: raise the rate by ``step``; **release** (remove the
  policer) once it reaches the entry rate measured when the chain was
  marked.

So the policer converges near the bottleneck's capacity instead of
flapping on and off, and leaves once the input fits again. The rate never
goes below ``min_kbps``; the burst is ``burst_ratio`` of the rate, at
least one 9000-byte frame (OVS advises a burst of at least the MTU).
"""

import dataclasses

MIN_BURST_KB = 72      # a 9000-byte jumbo frame in kilobits


@dataclasses.dataclass
class ChainState:
    marked: bool = False
    bottleneck: str = None
    rate_kbps: int = 0
    demand_kbps: float = 0.0     # entry rate when marked
    clear: int = 0


@dataclasses.dataclass(frozen=True)
class Decision:
    chain: str
    action: str                  # mark, tighten, hold, relax, release, none
    rate_kbps: int = 0           # 0: no policer
    burst_kb: int = 0
    bottleneck: str = None
    drop_ratio: float = None
    reason: str = ''


class Backpressure:

    def __init__(self, high=0.01, low=0.001, clear_passes=3, margin=0.05,
                 step=0.25, min_kbps=1000, burst_ratio=0.1):
        if not 0 <= low < high <= 1:
            raise ValueError('backpressure_low_drop_ratio (%r) must be below '
                             'backpressure_high_drop_ratio (%r), both within '
                             '0..1' % (low, high))
        self.high, self.low = high, low
        self.clear_passes = clear_passes
        self.margin, self.step = margin, step
        self.min_kbps, self.burst_ratio = min_kbps, burst_ratio
        self._state = {}

    def state(self, chain):
        return self._state.get(chain)

    def forget(self, names):
        """Drop the state of chains not in ``names``."""
        for name in set(self._state) - set(names):
            del self._state[name]

    def burst(self, rate_kbps):
        """The policer burst (kbit) for a rate."""
        return max(MIN_BURST_KB, int(rate_kbps * self.burst_ratio))

    def _police(self, chain, action, st, ratio, reason):
        burst = self.burst(st.rate_kbps)
        return Decision(chain, action, st.rate_kbps, burst, st.bottleneck,
                        ratio, reason)

    def step_chain(self, chain, nf_rates, entry_kbps):
        """One pass for one chain.

        :param nf_rates: ``{uuid: (arrival pps, drop pps)}`` of the
            chain's NFs; None where unknown.
        :param entry_kbps: the entry port's received rate, or None.
        """
        st = self._state.setdefault(chain.name, ChainState())
        worst, ratio, unknown = None, 0.0, []
        for uuid in chain.instances:
            arrival, drops = nf_rates.get(uuid, (None, None))
            if arrival is None or drops is None:
                unknown.append(uuid)
                continue
            r = drops / arrival if arrival > 0 else 0.0
            if worst is None or r > ratio:
                worst, ratio = uuid, r
        if worst is None:
            # Nothing measured this pass: keep what is in place.
            if st.marked:
                return self._police(chain.name, 'hold', st, None,
                                    'no rates this pass')
            return Decision(chain.name, 'none', reason='no rates yet for '
                            '%s' % ', '.join(unknown))
        if ratio >= self.high:
            st.clear = 0
            if entry_kbps is None or entry_kbps <= 0:
                if st.marked:
                    return self._police(chain.name, 'hold', st, ratio,
                                        'entry rate unknown')
                return Decision(chain.name, 'none', bottleneck=worst,
                                drop_ratio=ratio,
                                reason='entry rate of %s unknown'
                                % chain.entry_port)
            target = entry_kbps * (1 - ratio) * (1 - self.margin)
            target = int(max(self.min_kbps, target))
            action = 'tighten' if st.marked else 'mark'
            if not st.marked:
                st.demand_kbps = entry_kbps
            elif target >= st.rate_kbps:
                # The policer already passes less than that: keep it.
                return self._police(chain.name, 'hold', st, ratio,
                                    'still dropping')
            st.marked, st.bottleneck, st.rate_kbps = True, worst, target
            return self._police(chain.name, action, st, ratio,
                                '%s drops %.1f%% of its packets'
                                % (worst, 100 * ratio))
        if not st.marked:
            return Decision(chain.name, 'none', bottleneck=worst,
                            drop_ratio=ratio)
        if ratio > self.low:
            st.clear = 0
            return self._police(chain.name, 'hold', st, ratio,
                                'drops between the thresholds')
        st.clear += 1
        if st.clear < self.clear_passes:
            return self._police(chain.name, 'hold', st, ratio,
                                'clear for %d of %d passes'
                                % (st.clear, self.clear_passes))
        st.clear = 0
        raised = int(st.rate_kbps * (1 + self.step))
        if raised >= st.demand_kbps:
            self._state[chain.name] = ChainState()
            return Decision(chain.name, 'release', bottleneck=worst,
                            drop_ratio=ratio,
                            reason='bottleneck cleared')
        st.rate_kbps = raised
        return self._police(chain.name, 'relax', st, ratio,
                            'bottleneck clear, raising the rate')
