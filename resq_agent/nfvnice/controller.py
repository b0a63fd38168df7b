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

import time

from oslo_log import log as logging

from resq_agent.nfvnice import backpressure as bp_mod
from resq_agent.nfvnice import chains as chains_mod
from resq_agent.nfvnice import costs as costs_mod
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

    def __init__(self, conf, hypervisor, ports, clock=time.monotonic):
        opts = conf.resq_agent
        self.conf = conf
        self.hypervisor = hypervisor
        self.ports = ports
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
        self.tracker = rates_mod.RateTracker(clock)
        self._applied = {}        # uuid -> (domain id, shares, outcome)
        self._chains_error = None
        self._unconfirmed = set()
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
        could not be read.
        """
        opts = self.conf.resq_agent
        errors, actions = [], []
        try:
            instances = self.hypervisor.instances()
        except Exception as exc:
            LOG.warning('NFVnice: cannot list instances from libvirt (%s); '
                        'shares and policers stay as they are', exc)
            return {'error': 'libvirt: %s' % exc}
        ifaces, ovs_ok = {}, self.ports is not None
        if self.ports is not None:
            try:
                ifaces = self.ports.interfaces()
            except ovs.OvsUnavailable as exc:
                LOG.warning('NFVnice: %s', exc)
                errors.append(str(exc))
                ovs_ok = False
        port_rates = {}
        if ovs_ok:
            port_rates = self.tracker.update(
                {n: i.statistics for n, i in ifaces.items()})
        inst_ports = {}
        for name, iface in ifaces.items():
            uuid = iface.instance_uuid
            if uuid and iface.type in ovs.VHOST_TYPES:
                inst_ports.setdefault(uuid.lower(), []).append(name)
        nf_rates = rates_mod.instance_rates(port_rates, inst_ports)
        chain_set, chains_ok = chains_mod.ChainSet(), True
        try:
            chain_set = self.chain_file.load()
            self._chains_error = None
        except chains_mod.InvalidChains as exc:
            chains_ok = False
            errors.append(str(exc))
            if str(exc) != self._chains_error:
                LOG.error('NFVnice: %s', exc)
            self._chains_error = str(exc)
        summary = {'rates': {u: {'arrival_pps': _round(a),
                                 'drop_pps': _round(d)}
                             for u, (a, d) in sorted(nf_rates.items())},
                   'shares': {}, 'chains': {}}
        # Without the statistics (OVSDB down) shares stay as they are:
        # unknown rates would reset them to equal.
        if opts.cpu_shares and (ovs_ok or self.ports is None):
            actions += self._shares(instances, nf_rates, chain_set.costs,
                                    summary['shares'])
        if ovs_ok and chains_ok:
            actions += self._police(chain_set if opts.backpressure
                                    else chains_mod.ChainSet(),
                                    nf_rates, port_rates, summary['chains'])
        summary['actions'] = actions
        summary['errors'] = errors
        self.last = summary
        return summary

    # -- CPU shares -------------------------------------------------------
    def _shares(self, instances, nf_rates, costs, report):
        opts = self.conf.resq_agent
        reserved = {i.uuid for i in instances
                    if i.extra_specs.get('resq:slo') == extra_specs.RESERVED}
        cpus = {i.uuid: i.cpus for i in instances}
        by_uuid = {i.uuid: i for i in instances}
        actions = []
        for group in shares_mod.groups(cpus, reserved):
            cost = {u: costs.get(u) or self.profile_costs.cost(by_uuid[u])
                    for u in group}
            wanted = shares_mod.compute(
                [shares_mod.Demand(u, nf_rates.get(u, (None, None))[0],
                                   cost[u]) for u in group],
                opts.cpu_shares_min, opts.cpu_shares_max)
            for uuid in group:
                action = self._apply_share(uuid, wanted[uuid],
                                           opts.cpu_shares_hysteresis)
                report[uuid] = wanted[uuid]
                if action is not None:
                    actions.append(action)
        for uuid in set(self._applied) - set(cpus):
            del self._applied[uuid]
        self._unconfirmed &= set(cpus)
        return actions

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
        wanted = {}
        for chain in chain_set.chains:
            entry = port_rates.get(chain.entry_port)
            decision = self.backpressure.step_chain(
                chain, nf_rates, entry.rx_kbps if entry else None)
            report[chain.name] = {
                'action': decision.action, 'rate_kbps': decision.rate_kbps,
                'burst_kb': decision.burst_kb,
                'bottleneck': decision.bottleneck,
                'drop_ratio': _round(decision.drop_ratio, 4),
                'reason': decision.reason}
            if decision.action in ('mark', 'tighten', 'release', 'relax'):
                LOG.info('NFVnice: chain %s: %s (%s), entry %s policed at '
                         '%d kbit/s', chain.name, decision.action,
                         decision.reason, chain.entry_port,
                         decision.rate_kbps)
            rate, burst = decision.rate_kbps, decision.burst_kb
            if chain.max_kbps and (not rate or rate > chain.max_kbps):
                rate = chain.max_kbps
                burst = self.backpressure.burst(rate)
                report[chain.name]['rate_kbps'] = rate
                report[chain.name]['burst_kb'] = burst
            if rate:
                have = wanted.get(chain.entry_port)
                if have is None or rate < have[0]:
                    wanted[chain.entry_port] = (rate, burst, chain.name)
        self.backpressure.forget(c.name for c in chain_set.chains)
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


def _round(value, digits=1):
    return None if value is None else round(value, digits)
