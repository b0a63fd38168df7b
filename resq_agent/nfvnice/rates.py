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
"""Rates from Open vSwitch interface counters.

ovs-vswitchd publishes each interface's counters in the database's
``Interface.statistics`` column, from the switch's side: on an instance's
vhost-user port ``tx_packets`` are the packets OVS delivered into the
guest's ring and ``tx_dropped`` the ones it could not, because the ring
was full (the NF did not keep up). So an NF's arrival rate is the rate of
``tx_packets + tx_dropped`` over its vhost-user ports and its drop rate
the rate of ``tx_dropped``. On a chain's entry port (where traffic enters
the switch) ``rx_packets`` and ``rx_bytes`` give the chain's input.

A rate is the difference of two readings over the time between them. A
reading identical to the previous one for every interface is no new
sample (ovs-vswitchd publishes every ``stats-update-interval``, 5 s by
default) and gives the previous rates again. The first reading, a counter
that went backwards (OVS restarted) and a counter that is missing give an
unknown rate (None), never a made-up one.
"""

import dataclasses
import time


@dataclasses.dataclass(frozen=True)
class PortRates:
    """Per-second rates of one interface; None where unknown."""

    tx_pps: float = None
    tx_drop_pps: float = None
    rx_pps: float = None
    rx_kbps: float = None

    @property
    def arrival_pps(self):
        """Packets offered to the guest behind the port (delivered+lost)."""
        if self.tx_pps is None or self.tx_drop_pps is None:
            return None
        return self.tx_pps + self.tx_drop_pps


COUNTERS = ('tx_packets', 'tx_dropped', 'rx_packets', 'rx_bytes')


class RateTracker:
    """Turns successive counter readings into :class:`PortRates`."""

    def __init__(self, clock=time.monotonic, fresh=False):
        # fresh: the counters are read from the ports themselves (OpenFlow)
        # at every call, so equal counters mean no traffic, not "not
        # published yet".
        self._clock = clock
        self.fresh = fresh
        self._last = {}           # name -> (time, {counter: value})
        self._snapshot = None
        self._rates = None

    def update(self, statistics, now=None):
        """``{name: PortRates}`` from ``{name: {counter: value}}``.

        Interfaces no longer reported are forgotten.
        """
        now = self._clock() if now is None else now
        if (not self.fresh and statistics == self._snapshot
                and self._rates is not None):
            # ovs-vswitchd has not published since the last reading (it
            # does every few seconds): not a new sample, and no change in
            # the counters must not read as "no traffic".
            return dict(self._rates)
        self._snapshot = statistics
        rates = {}
        for name, stats in statistics.items():
            values = {}
            for key in COUNTERS:
                try:
                    values[key] = int(stats[key])
                except (KeyError, TypeError, ValueError):
                    values[key] = None
            prev = self._last.get(name)
            self._last[name] = (now, values)
            if prev is None or now <= prev[0]:
                rates[name] = PortRates()
                continue
            dt = now - prev[0]

            def rate(key, scale=1.0):
                a, b = prev[1][key], values[key]
                if a is None or b is None or b < a:
                    return None
                return (b - a) * scale / dt

            rates[name] = PortRates(
                tx_pps=rate('tx_packets'), tx_drop_pps=rate('tx_dropped'),
                rx_pps=rate('rx_packets'), rx_kbps=rate('rx_bytes',
                                                        8 / 1000.0))
        for name in set(self._last) - set(statistics):
            del self._last[name]
        self._rates = rates
        return dict(rates)


def instance_rates(port_rates, instance_ports):
    """``{uuid: (arrival pps, drop pps)}`` summed over each instance's ports.

    An instance with any port of unknown rate gets ``(None, None)``.
    """
    result = {}
    for uuid, names in instance_ports.items():
        arrival = drops = 0.0
        for name in names:
            r = port_rates.get(name)
            if r is None or r.arrival_pps is None:
                arrival = drops = None
                break
            arrival += r.arrival_pps
            drops += r.tx_drop_pps
        result[uuid] = (arrival, drops)
    return result
