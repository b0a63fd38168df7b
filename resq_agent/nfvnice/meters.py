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
"""One OpenFlow meter per chain: its counters and its rate.

:class:`ChainMeters` keeps, for every chain of the chains file that has a
``match``, one meter and one flow on the bridge
(:mod:`resq_agent.nfvnice.openflow`), reads each chain's entry rate from
its meter's counters, and sets the meter's rate to what backpressure (or
the chain's cap) wants, or unlimited. Every write goes through the
privileged functions of :mod:`resq_agent.privsep.openflow` and is reported
with its true outcome. After a failed write, or on the first pass after
the agent started, it first removes every flow and meter the agent owns
on the bridge and installs the chains again (what a crashed agent left is
never trusted).

A meter's counters restart from zero when its rate changes (ovs-vswitchd
resets a modified meter's statistics): the next rate is measured from the
moment of the change.
"""

import dataclasses
import time

from oslo_log import log as logging

from resq_agent.nfvnice import openflow

LOG = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class ChainRates:
    """A chain's traffic at its entry, per second; None where unknown."""

    entry_pps: float = None
    entry_kbps: float = None
    metered_pps: float = None     # dropped by the chain's meter


@dataclasses.dataclass(frozen=True)
class Installed:
    port: str
    match: str
    rate_kbps: int
    burst_kb: int


class ChainMeters:
    """The agent's meters and flows on one bridge.

    :param ops: the privileged functions (:mod:`resq_agent.privsep.openflow`
        or an object with the same functions).
    """

    def __init__(self, ops, meter_base, meter_count, clock=time.monotonic):
        self.ops = ops
        self.first, self.count = meter_base, meter_count
        self._clock = clock
        self._ids = {}            # chain name -> meter id
        self._installed = {}      # meter id -> Installed
        self._last = {}           # meter id -> (time, packets, bytes)
        self._synced = False

    def meter_of(self, chain_name):
        return self._ids.get(chain_name)

    def rates(self):
        """``{chain name: ChainRates}`` of the chains installed.

        :raises OpenFlowError: when the bridge cannot be read.
        """
        now = self._clock()
        stats = self.ops.meter_stats()
        result = {}
        for name, meter in self._ids.items():
            counters = stats.get(meter)
            prev = self._last.get(meter)
            if counters is None:
                self._last.pop(meter, None)
                result[name] = ChainRates()
                continue
            packets, nbytes, dropped = counters
            self._last[meter] = (now, packets, nbytes, dropped)
            if prev is None or now <= prev[0] or packets < prev[1]:
                result[name] = ChainRates()
                continue
            dt = now - prev[0]
            result[name] = ChainRates(
                entry_pps=(packets - prev[1]) / dt,
                entry_kbps=(nbytes - prev[2]) * 8 / 1000.0 / dt,
                metered_pps=max(0, dropped - prev[3]) / dt)
        return result

    def _allocate(self, name):
        used = set(self._ids.values())
        for meter in range(self.first, self.first + self.count):
            if meter not in used:
                self._ids[name] = meter
                return meter
        raise ValueError('no free meter id in %d..%d for chain %s: raise '
                         '[resq_agent] nfvnice_meter_count'
                         % (self.first, self.first + self.count - 1, name))

    def _resync(self):
        """Remove everything the agent owns on the bridge."""
        flows, meters = self.ops.owned()
        for meter in sorted(set(flows) | set(meters)):
            self.ops.remove_chain(meter)
        self._installed.clear()
        self._last.clear()
        self._ids.clear()
        self._synced = True

    def apply(self, wanted):
        """Make the bridge hold exactly the chains of ``wanted``.

        :param wanted: ``{chain name: (entry port, match, rate kbps or 0
            for unlimited, burst kb)}``.
        :returns: actions ``{'action', 'chain', 'meter', 'outcome', ...}``,
            one per write, with ``outcome`` ``set``, ``removed`` or
            ``failed`` (with ``error``).
        """
        actions = []
        if not self._synced:
            try:
                self._resync()
            except Exception as exc:
                LOG.warning('NFVnice: cannot clear the agent\'s OpenFlow '
                            'meters and flows: %s', exc)
                return [{'action': 'meter_sync', 'outcome': 'failed',
                         'error': str(exc)}]
        for name in sorted(set(self._ids) - set(wanted)):
            actions.append(self._remove(name))
        pending, mods = [], []
        for name, (port, match, rate_kbps, burst_kb) in sorted(
                wanted.items()):
            rate = int(rate_kbps) if rate_kbps else openflow.UNLIMITED_KBPS
            burst = int(burst_kb) if rate_kbps else openflow.UNLIMITED_KBPS
            action = {'action': 'meter', 'chain': name,
                      'rate_kbps': rate_kbps or None, 'burst_kb': burst}
            meter = self._ids.get(name)
            if meter is None:
                try:
                    meter = self._allocate(name)
                except ValueError as exc:
                    self._fail(action, exc)
                    actions.append(action)
                    continue
            action['meter'] = meter
            have = self._installed.get(meter)
            new = Installed(port, match, rate, burst)
            if have == new:
                continue
            if have is None or (have.rate_kbps, have.burst_kb) != (
                    rate, burst):
                mods.append((meter, rate, burst, have is None))
            pending.append((action, have, new))
        refused = {}
        if mods:
            try:
                refused = self.ops.set_meters(mods)
            except Exception as exc:
                refused = {m[0]: str(exc) for m in mods}
        for action, have, new in pending:
            actions.append(self._finish(action, have, new, refused))
        return actions

    def _finish(self, action, have, new, refused):
        meter = action['meter']
        if meter in refused:
            self._fail(action, refused[meter])
            return action
        try:
            if have is None or (have.port, have.match) != (new.port,
                                                           new.match):
                self.ops.set_chain_flow(meter, new.port, new.match)
        except Exception as exc:
            self._fail(action, exc)
            return action
        if have is None or (have.rate_kbps, have.burst_kb) != (
                new.rate_kbps, new.burst_kb):
            # A new or changed meter counts from zero, from now.
            self._last[meter] = (self._clock(), 0, 0, 0)
        self._installed[meter] = new
        action['outcome'] = 'set'
        return action

    def _remove(self, name):
        meter = self._ids[name]
        action = {'action': 'meter_remove', 'chain': name, 'meter': meter}
        try:
            self.ops.remove_chain(meter)
            action['outcome'] = 'removed'
            del self._ids[name]
            self._installed.pop(meter, None)
            self._last.pop(meter, None)
        except Exception as exc:
            self._fail(action, exc)
        return action

    def _fail(self, action, exc):
        action['outcome'] = 'failed'
        action['error'] = str(exc)
        # What is on the bridge is unknown now: start over next pass.
        self._synced = False
        LOG.warning('NFVnice: %s of chain %s failed: %s; the agent clears '
                    'and reinstalls its meters next pass', action['action'],
                    action['chain'], exc)

    def clear(self):
        """Remove every flow and meter the agent owns (``cleanup``)."""
        self._synced = False
        self._resync()
