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
"""One NFVnice pass: measure rates, set CPU shares, police chains.

:class:`Controller` is driven by the agent service every
``[resq_agent] nfvnice_interval`` seconds (``resq-agent nfvnice`` runs a
few passes by hand). It makes no decision from what it did not measure:
a pass without readable rates sets equal shares for the instances it
knows nothing about, and keeps the policers that are in place.
"""

import dataclasses
import time

from oslo_log import log as logging

from resq_agent.nfvnice import backpressure as bp_mod
from resq_agent.nfvnice import chains as chains_mod
from resq_agent.nfvnice import costs as costs_mod
from resq_agent.nfvnice import meters as meters_mod
from resq_agent.nfvnice import rates as rates_mod
from resq_agent.nfvnice import shares as shares_mod
from resq_agent import ovs
from resq_agent import virt
from resq_common import exception
from resq_common import extra_specs

LOG = logging.getLogger(__name__)


class InvalidNfvniceConfig(exception.ResQException):
    msg_fmt = 'Invalid NFVnice options in [resq_agent]: %(reason)s'


class Controller:
    """Rate-cost CPU shares and backpressure for one compute host.

    :param hypervisor: :class:`resq_agent.virt.Hypervisor`.
    :param ports: :class:`resq_agent.ovs.OvsPorts` or None (no OVS: no
        rates, equal shares, no policing).
    """

    def __init__(self, conf, hypervisor, ports, clock=time.monotonic,
                 openflow_ops=None):
        opts = conf.resq_agent
        self.conf = conf
        self.hypervisor = hypervisor
        self.ports = ports
        self._clock = clock
        try:
            shares_mod.check_bounds(opts.cpu_shares_min, opts.cpu_shares_max)
            self.backpressure = bp_mod.Backpressure(
                high=opts.backpressure_high_drop_ratio,
                low=opts.backpressure_low_drop_ratio,
                clear_passes=opts.backpressure_clear_passes,
                margin=opts.policing_margin,
                step=opts.policing_release_step,
                min_kbps=opts.policing_min_kbps,
                burst_ratio=opts.policing_burst_ratio)
        except ValueError as exc:
            raise InvalidNfvniceConfig(reason=exc)
        self.chain_file = chains_mod.ChainFile(opts.nfvnice_chains_file)
        self.profile_costs = costs_mod.ProfileCosts(
            opts.nfvnice_profile_dir, opts.nfvnice_cpu_ghz)
        self.measured = costs_mod.MeasuredCosts(opts.nfvnice_cpu_ghz)
        self.meters = None
        if opts.nfvnice_bridge:
            if openflow_ops is None:
                from resq_agent.privsep import openflow as openflow_ops
            self.meters = meters_mod.ChainMeters(
                openflow_ops, opts.nfvnice_meter_base,
                opts.nfvnice_meter_count, clock)
        self.tracker = rates_mod.RateTracker(clock,
                                             fresh=self.meters is not None)
        self._applied = {}        # uuid -> (domain id, shares, outcome)
        self._chains_error = None
        self._unconfirmed = set()
        self._slow = False
        self.last = None

    @classmethod
    def from_conf(cls, conf, hypervisor=None):
        hyp = hypervisor or virt.Hypervisor(
            conf.resq_agent.libvirt_uri, conf.resq_agent.libvirt_timeout)
        return cls(conf, hyp, ovs.OvsPorts.from_conf(conf))

    # -- one pass ------------------------------------------------------------
    def run_once(self):
        """Measure and act; returns what was done, JSON-able.

        ``actions`` lists every write with its outcome; ``errors`` what
        could not be read; ``pass_ms`` what the pass cost.
        """
        started = self._clock()
        opts = self.conf.resq_agent
        errors, actions = [], []
        try:
            instances = self.hypervisor.instances()
        except Exception as exc:
            LOG.warning('NFVnice: cannot list instances from libvirt (%s); '
                        'shares and policers stay as they are', exc)
            return {'error': 'libvirt: %s' % exc}
        ifaces, stats = self._read_ports(errors)
        ovs_ok = stats is not None
        port_rates = self.tracker.update(stats) if ovs_ok else {}
        inst_ports = {}
        for name, iface in ifaces.items():
            uuid = iface.instance_uuid
            if uuid and iface.type in ovs.GUEST_TYPES:
                inst_ports.setdefault(uuid.lower(), []).append(name)
        nf_rates = rates_mod.instance_rates(port_rates, inst_ports)
        if ovs_ok and opts.nfvnice_measure_costs:
            self._measure_costs(inst_ports, stats, nf_rates, errors)
        chain_set, chains_ok = self._chains(errors)
        summary = {'rates': {u: {'arrival_pps': _round(a),
                                 'drop_pps': _round(d)}
                             for u, (a, d) in sorted(nf_rates.items())},
                   'shares': {}, 'chains': {},
                   'measured_costs': {u: _round(c) for u, c in
                                      sorted(self.measured.costs().items())}}
        # Without the statistics (OVSDB down) shares stay as they are:
        # unknown rates would reset them to equal.
        if opts.cpu_shares and (ovs_ok or self.ports is None):
            actions += self._shares(instances, nf_rates, chain_set,
                                    summary['shares'])
        if ovs_ok and chains_ok and self.ports is not None:
            if not opts.backpressure:
                chain_set = dataclasses.replace(chain_set, policed=False)
            actions += self._police(chain_set, nf_rates, port_rates,
                                    summary['chains'])
        summary['actions'] = actions
        summary['errors'] = errors
        summary['pass_ms'] = round((self._clock() - started) * 1000.0, 2)
        self._check_pace(summary['pass_ms'], opts.nfvnice_interval)
        self.last = summary
        return summary

    def _check_pace(self, pass_ms, interval):
        """Warn once when a pass takes more than half the period."""
        slow = pass_ms > interval * 500.0
        if slow and not self._slow:
            LOG.warning('NFVnice: a pass took %.0f ms, more than half of '
                        'nfvnice_interval (%g s): the agent cannot hold '
                        'this period; raise [resq_agent] nfvnice_interval',
                        pass_ms, interval)
        elif self._slow and not slow:
            LOG.info('NFVnice: passes fit nfvnice_interval again (%.0f ms)',
                     pass_ms)
        self._slow = slow

    def _read_ports(self, errors):
        """``(interfaces, counters by port)``; counters None if unread.

        Interfaces (which port is whose) come from OVSDB; the counters
        from OpenFlow when ``nfvnice_bridge`` is set (fresh), else from
        the database's statistics column.
        """
        if self.ports is None:
            return {}, {}
        try:
            ifaces = self.ports.interfaces()
        except ovs.OvsUnavailable as exc:
            LOG.warning('NFVnice: %s', exc)
            errors.append(str(exc))
            return {}, None
        if self.meters is None:
            return ifaces, {n: i.statistics for n, i in ifaces.items()}
        try:
            return ifaces, self.meters.ops.port_stats()
        except Exception as exc:
            LOG.warning('NFVnice: cannot read port counters over OpenFlow: '
                        '%s', exc)
            errors.append('openflow: %s' % exc)
            return ifaces, None

    def _measure_costs(self, inst_ports, stats, nf_rates, errors):
        try:
            cpu = self.hypervisor.cpu_times(sorted(inst_ports))
        except Exception as exc:
            errors.append('libvirt CPU time: %s' % exc)
            return
        delivered = {}
        for uuid, names in inst_ports.items():
            counts = [stats.get(n, {}).get('tx_packets') for n in names]
            if all(isinstance(c, int) for c in counts):
                delivered[uuid] = sum(counts)
        busy = {u for u, (_, drops) in nf_rates.items() if drops}
        self.measured.update(cpu, delivered, busy)

    def _chains(self, errors):
        try:
            chain_set = self.chain_file.load()
            self._chains_error = None
            return chain_set, True
        except chains_mod.InvalidChains as exc:
            errors.append(str(exc))
            if str(exc) != self._chains_error:
                LOG.error('NFVnice: %s', exc)
            self._chains_error = str(exc)
            return chains_mod.ChainSet(), False

    # -- CPU shares -------------------------------------------------------
    def _shares(self, instances, nf_rates, chain_set, report):
        opts = self.conf.resq_agent
        reserved = {i.uuid for i in instances
                    if i.extra_specs.get('resq:slo') == extra_specs.RESERVED}
        cpus = {i.uuid: i.cpus for i in instances}
        by_uuid = {i.uuid: i for i in instances}
        actions = []
        for group in shares_mod.groups(cpus, reserved):
            wanted = shares_mod.compute(
                [shares_mod.Demand(u, nf_rates.get(u, (None, None))[0],
                                   self._cost(chain_set, by_uuid[u]),
                                   chain_set.priorities.get(u, 1.0))
                 for u in group],
                opts.cpu_shares_min, opts.cpu_shares_max)
            for uuid in group:
                if self._unchanged(by_uuid[uuid], wanted[uuid],
                                   opts.cpu_shares_hysteresis):
                    report[uuid] = wanted[uuid]
                    continue
                action = self._apply_share(uuid, wanted[uuid],
                                           opts.cpu_shares_hysteresis)
                report[uuid] = wanted[uuid]
                if action is not None:
                    actions.append(action)
        for uuid in set(self._applied) - set(cpus):
            del self._applied[uuid]
        self._unconfirmed &= set(cpus)
        return actions

    def _cost(self, chain_set, instance):
        """Cycles per packet: chains file, else measured, else profile.

        None: the NF counts as costing its group's mean.
        """
        return (chain_set.costs.get(instance.uuid)
                or self.measured.cost(instance.uuid)
                or self.profile_costs.cost(instance))

    def _unchanged(self, instance, shares, hysteresis):
        """Whether this run of the domain already has a close share.

        The agent wrote it (libvirt took it) to the same run of
        the domain (same id from the listing): no need to ask libvirt.
        """
        cached = self._applied.get(instance.uuid)
        return (cached is not None and instance.domain_id is not None
                and cached[0] == instance.domain_id
                and cached[2] in ('applied', 'unconfirmed')
                and not shares_mod.needs_write(cached[1], shares,
                                               hysteresis))

    def _apply_share(self, uuid, shares, hysteresis):
        action = {'action': 'cpu_shares', 'uuid': uuid, 'shares': shares}
        try:
            found = self.hypervisor.cpu_shares(uuid)
            if found is None:
                return None
            dom_id, _, value = found
            cached = self._applied.get(uuid)
            current = value
            if cached is not None and cached[0] == dom_id and (
                    cached[2] != 'applied'):
                # The driver does not report weights: trust what this
                # agent wrote to this run of the domain.
                current = cached[1]
            if not shares_mod.needs_write(current, shares, hysteresis):
                return None
            action['previous'] = current
            outcome, after = self.hypervisor.set_cpu_shares(uuid, shares)
            action['outcome'] = outcome
            action['read_back'] = after
            self._applied[uuid] = (dom_id, shares, outcome)
            if outcome == 'applied':
                LOG.info('NFVnice: CPU shares of %s %s -> %d', uuid,
                         current, shares)
            elif uuid not in self._unconfirmed:
                # Once per instance: a driver that keeps no weight (the
                # test driver) would otherwise warn at every write.
                self._unconfirmed.add(uuid)
                LOG.warning('NFVnice: libvirt accepted CPU shares %d for %s '
                            'but reports %s; its driver may not keep CPU '
                            'weights', shares, uuid, after)
        except Exception as exc:
            action['outcome'] = 'failed'
            action['error'] = str(exc)
            LOG.warning('NFVnice: cannot set the CPU shares of %s to %d: '
                        '%s; retrying next pass', uuid, shares, exc)
        return action

    # -- backpressure -----------------------------------------------------
    def _police(self, chain_set, nf_rates, port_rates, report):
        metered = [c for c in chain_set.chains
                   if c.match and self.meters is not None]
        ported = [c for c in chain_set.chains if c not in metered]
        chain_rates, actions = {}, []
        if self.meters is not None:
            try:
                chain_rates = self.meters.rates()
            except Exception as exc:
                LOG.warning('NFVnice: cannot read the chains\' meters: %s',
                            exc)
                actions.append({'action': 'meter_stats', 'outcome': 'failed',
                                'error': str(exc)})
        wanted_ports, wanted_meters = {}, {}
        for chain in chain_set.chains:
            if chain in metered:
                rates = chain_rates.get(chain.name)
                entry = _passed_kbps(rates)
                report_entry = {'entry_kbps': _round(
                    rates.entry_kbps if rates else None),
                    'metered_pps': _round(
                        rates.metered_pps if rates else None)}
            else:
                rates = port_rates.get(chain.entry_port)
                entry = rates.rx_kbps if rates else None
                report_entry = {'entry_kbps': _round(entry)}
            rate, burst = self._decide(chain, chain_set.policed, nf_rates,
                                       entry, report)
            report[chain.name].update(report_entry)
            if chain in metered:
                wanted_meters[chain.name] = (chain.entry_port, chain.match,
                                             rate, burst)
            elif rate:
                have = wanted_ports.get(chain.entry_port)
                if have is None or rate < have[0]:
                    wanted_ports[chain.entry_port] = (rate, burst, chain.name)
        self.backpressure.forget(c.name for c in chain_set.chains)
        if self.meters is not None:
            actions += self.meters.apply(wanted_meters)
        return actions + self._police_ports(wanted_ports, ported)

    def _decide(self, chain, policed, nf_rates, entry_kbps, report):
        """``(rate kbps, burst kb)`` for the chain's entry; 0: none."""
        if policed:
            decision = self.backpressure.step_chain(chain, nf_rates,
                                                    entry_kbps)
        else:
            decision = bp_mod.Decision(chain.name, 'none',
                                       reason='backpressure is off')
        report[chain.name] = {
            'action': decision.action, 'rate_kbps': decision.rate_kbps,
            'burst_kb': decision.burst_kb,
            'bottleneck': decision.bottleneck,
            'drop_ratio': _round(decision.drop_ratio, 4),
            'reason': decision.reason}
        if decision.action in ('mark', 'tighten', 'release', 'relax'):
            LOG.info('NFVnice: chain %s: %s (%s), entry %s at %d kbit/s',
                     chain.name, decision.action, decision.reason,
                     chain.entry_port, decision.rate_kbps)
        rate, burst = decision.rate_kbps, decision.burst_kb
        if chain.max_kbps and (not rate or rate > chain.max_kbps):
            rate = chain.max_kbps
            burst = self.backpressure.burst(rate)
            report[chain.name]['rate_kbps'] = rate
            report[chain.name]['burst_kb'] = burst
        return rate, burst

    def _police_ports(self, wanted, chains):
        actions = []
        try:
            results = self.ports.set_policing(wanted)
        except ovs.OvsUnavailable as exc:
            LOG.warning('NFVnice: %s', exc)
            return [{'action': 'police', 'outcome': 'failed',
                     'error': str(exc), 'ports': sorted(wanted)}]
        for name, outcome, chain in results:
            rate, burst, _ = wanted.get(name, (0, 0, chain))
            actions.append({'action': 'police', 'port': name,
                            'chain': chain, 'rate_kbps': rate,
                            'burst_kb': burst, 'outcome': outcome})
            if outcome in ('missing', 'foreign'):
                LOG.warning('NFVnice: cannot police entry port %s of chain '
                            '%s: %s', name, chain,
                            'no such Open vSwitch interface'
                            if outcome == 'missing' else
                            'an operator\'s policer is set there; the agent '
                            'leaves it alone')
        return actions


def _passed_kbps(rates):
    """What a chain's meter let through (kbit/s), or None."""
    if rates is None or rates.entry_kbps is None:
        return None
    if not rates.entry_pps or rates.metered_pps is None:
        return rates.entry_kbps
    kept = max(0.0, 1.0 - rates.metered_pps / rates.entry_pps)
    return rates.entry_kbps * kept


def _round(value, digits=1):
    return None if value is None else round(value, digits)
