"""NFVnice on the agent against real libvirt (test driver) and OVSDB.

The test starts its own ovsdb-server, creates the ports os-vif would and
plays ovs-vswitchd by writing ``Interface.statistics``; instances are
Nova-shaped domains of libvirt's test:///default driver. The controller's
clock is the test's, so that the rates are exact.
"""

import contextlib
import io
import json
import os
import re
import subprocess
import time

import fixtures

from resq_agent.cmd import agent as agent_cmd
from resq_agent.nfvnice import controller
from resq_agent import ovs
from resq_agent import virt
from resq_common import profile as profile_mod
from resq_profiler import store as store_mod
from tests import base
from tests.fixtures import libvirt as libvirt_fixture
from tests.fixtures import ovsdb
from tests.unit.resq_profiler import test_profile

VM_A = '6f3c1a9e-6d0a-4c4b-9a53-0c1f7b1c0b01'
VM_B = '6f3c1a9e-6d0a-4c4b-9a53-0c1f7b1c0b02'
VM_R = '6f3c1a9e-6d0a-4c4b-9a53-0c1f7b1c0b03'
VM_D = '6f3c1a9e-6d0a-4c4b-9a53-0c1f7b1c0b04'
VM_E = '6f3c1a9e-6d0a-4c4b-9a53-0c1f7b1c0b05'
VM_F = '6f3c1a9e-6d0a-4c4b-9a53-0c1f7b1c0b06'
COUNTERS = ('tx_packets', 'tx_dropped', 'rx_packets', 'rx_bytes')


class NfvniceTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.logs = self.useFixture(fixtures.FakeLogger())
        self.ovsdb = self.useFixture(ovsdb.OvsdbServer())
        self.domains = self.useFixture(libvirt_fixture.NovaDomains())
        # A and B (on-demand, no reserved SLO) share pCPU 2 with the
        # reserved R; D runs alone on pCPU 5.
        self.domains.add(VM_A, [2])
        self.domains.add(VM_B, [2])
        self.domains.add(VM_R, [2], ways=2)
        self.domains.add(VM_D, [5])
        add = self.ovsdb.add_interface
        add('br-phy', 'dpdk0', 'dpdk')
        add('br-phy', 'dpdk1', 'dpdk')
        for vm, name in ((VM_A, 'vhu-a'), (VM_B, 'vhu-b'), (VM_R, 'vhu-r'),
                         (VM_D, 'vhu-d')):
            add('br-int', name, 'dpdkvhostuserclient',
                external_ids={'vm-uuid': vm, 'iface-id': 'port-' + name})
        self.chains = os.path.join(self.tmp, 'chains.json')
        self.write_chains([{'name': 'fw-nat', 'entry_port': 'dpdk0',
                            'instances': [
                                {'uuid': VM_A, 'cycles_per_packet': 300},
                                {'uuid': VM_B, 'cycles_per_packet': 300}]}])
        self.flags('resq_agent', libvirt_uri=libvirt_fixture.URI,
                   ovsdb_connection=self.ovsdb.connection, ovsdb_timeout=2,
                   nfvnice=True, nfvnice_chains_file=self.chains,
                   backpressure=True, backpressure_clear_passes=1)
        self.now = 100.0
        self.counters = {}
        self.ports = ovs.OvsPorts.from_conf(self.conf)
        self.addCleanup(self.ports.close)
        self.ctl = controller.Controller(
            self.conf, virt.Hypervisor(libvirt_fixture.URI), self.ports,
            clock=lambda: self.now)

    def add_vm_port(self, vm, name):
        self.ovsdb.add_interface('br-int', name, 'dpdkvhostuserclient',
                                 external_ids={'vm-uuid': vm})

    def write_chains(self, chains):
        with open(self.chains, 'w') as f:
            json.dump({'chains': chains}, f)
        # A new mtime even within the file system's timestamp granularity.
        st = os.stat(self.chains)
        os.utime(self.chains, ns=(st.st_atime_ns,
                                  st.st_mtime_ns + 1000000000))

    def traffic(self, seconds, **per_port):
        """Advance the clock; add ``{port: {counter: delta}}`` to stats."""
        self.now += seconds
        for name, deltas in per_port.items():
            stats = self.counters.setdefault(
                name, dict.fromkeys(COUNTERS, 0))
            for key, value in deltas.items():
                stats[key] += value
        for name in self.counters:
            self.ovsdb.api.db_set('Interface', name, (
                'statistics', self.counters[name])).execute(check_error=True)
        # The agent's IDL sees the test's writes a moment later.
        for _ in range(100):
            seen = self.ports.interfaces()
            if all(seen[n].statistics == self.counters[n]
                   for n in self.counters):
                return
            time.sleep(0.05)
        self.fail('the agent never saw the statistics written')

    def policer(self, name):
        """``(rate, burst, owner)`` as the server has it now.

        Asked with ovs-vsctl: the test's own IDL replica may not have the
        agent's last write yet.
        """
        out = subprocess.run(
            ['ovs-vsctl', '--db=' + self.ovsdb.connection, '--no-wait',
             'get', 'Interface', name, 'ingress_policing_rate',
             'ingress_policing_burst', 'external_ids'],
            check=True, capture_output=True, text=True).stdout.split('\n')
        owner = re.search(r'resq_policed="?([^",}]+)"?', out[2])
        return int(out[0]), int(out[1]), owner.group(1) if owner else None

    def shares_actions(self, summary):
        return {a['uuid']: a for a in summary['actions']
                if a['action'] == 'cpu_shares'}

    # -- CPU shares -------------------------------------------------------
    def test_rate_cost_shares_on_the_test_driver(self):
        self.traffic(0, **{'vhu-a': {}, 'vhu-b': {}, 'vhu-r': {},
                           'vhu-d': {}, 'dpdk0': {}})
        first = self.ctl.run_once()
        # No rate yet (one reading): A and B, unknown, get equal shares.
        acts = self.shares_actions(first)
        self.assertEqual({VM_A, VM_B}, set(acts))
        self.assertEqual([1024, 1024], [acts[VM_A]['shares'],
                                        acts[VM_B]['shares']])
        # A receives three times B's packets at the same cost per packet.
        self.traffic(1.0, **{'vhu-a': {'tx_packets': 30000},
                             'vhu-b': {'tx_packets': 10000},
                             'vhu-r': {'tx_packets': 90000},
                             'vhu-d': {'tx_packets': 90000}})
        summary = self.ctl.run_once()
        self.assertEqual({'arrival_pps': 30000.0, 'drop_pps': 0.0},
                         summary['rates'][VM_A])
        acts = self.shares_actions(summary)
        # The reserved R owns its core; D shares it with no one.
        self.assertEqual({VM_A, VM_B}, set(acts))
        self.assertEqual(1536, acts[VM_A]['shares'])
        self.assertEqual(512, acts[VM_B]['shares'])
        # libvirt's test driver takes the weight and keeps none (it always
        # reports 50): the agent says so rather than claiming it applied.
        hyp = virt.Hypervisor(libvirt_fixture.URI)
        _, param, value = hyp.cpu_shares(VM_A)
        self.assertEqual('weight', param)
        for act in acts.values():
            self.assertEqual('unconfirmed', act['outcome'])
            self.assertEqual(value, act['read_back'])
            self.assertEqual(1024, act['previous'])
        # Same rates, and a change within the hysteresis: no write.
        self.traffic(1.0, **{'vhu-a': {'tx_packets': 31000},
                             'vhu-b': {'tx_packets': 10000}})
        self.assertEqual({}, self.shares_actions(self.ctl.run_once()))
        # A restart resets the domain's weight: written again.
        dom = self.domains.conn.lookupByUUIDString(VM_A)
        dom.destroy()
        dom.create()
        self.traffic(1.0, **{'vhu-a': {'tx_packets': 30000},
                             'vhu-b': {'tx_packets': 10000}})
        acts = self.shares_actions(self.ctl.run_once())
        self.assertEqual([VM_A], list(acts))
        self.assertEqual(1536, acts[VM_A]['shares'])

    def test_cost_from_the_profile_or_the_chains_file(self):
        profiles = os.path.join(self.tmp, 'profiles')
        store_mod.ProfileStore(profiles).put(profile_mod.Profile.from_dict(
            test_profile.make_doc()))          # 5.5 Mpps at best
        self.flags('resq_agent', nfvnice_profile_dir=profiles,
                   nfvnice_cpu_ghz=2.2)
        ctl = controller.Controller(
            self.conf, virt.Hypervisor(libvirt_fixture.URI), self.ports,
            clock=lambda: self.now)
        # E names the profile (400 cycles a packet at 2.2 GHz); F's cost
        # is in the chains file. They share pCPU 7.
        xml = libvirt_fixture.nova_domain_xml(VM_E, [7]).replace(
            '<nova:extraSpecs>', '<nova:extraSpecs><nova:extraSpec name='
            '"resq:profile">lpm-64B-100000flows-abcdef12</nova:extraSpec>')
        self.domains.conn.defineXML(xml).create()
        self.domains.uuids.append(VM_E)
        self.domains.add(VM_F, [7])
        self.add_vm_port(VM_E, 'vhu-e')
        self.add_vm_port(VM_F, 'vhu-f')
        self.write_chains([{'name': 'c', 'entry_port': 'dpdk0',
                            'instances': [VM_E, {
                                'uuid': VM_F, 'cycles_per_packet': 1200}]}])
        self.traffic(0, **{'vhu-e': {}, 'vhu-f': {}})
        ctl.run_once()
        self.traffic(1.0, **{'vhu-e': {'tx_packets': 1000},
                             'vhu-f': {'tx_packets': 1000}})
        got = ctl.run_once()['shares']
        self.assertEqual({VM_E: 512, VM_F: 1536},
                         {u: got[u] for u in (VM_E, VM_F)})

    def test_idle_and_vanished_counters_never_give_zero(self):
        self.traffic(0, **{'vhu-a': {}, 'vhu-b': {}})
        self.ctl.run_once()
        # B receives nothing; then A's counters go backwards (OVS
        # restarted): A's rate is unknown, B's zero.
        self.traffic(1.0, **{'vhu-a': {'tx_packets': 5000}})
        self.ctl.run_once()
        self.counters['vhu-a']['tx_packets'] = 10
        summary = None
        self.traffic(1.0)
        summary = self.ctl.run_once()
        self.assertIsNone(summary['rates'][VM_A]['arrival_pps'])
        self.assertEqual(0.0, summary['rates'][VM_B]['arrival_pps'])
        for uuid in (VM_A, VM_B):
            self.assertGreaterEqual(summary['shares'][uuid],
                                    self.conf.resq_agent.cpu_shares_min)
        self.assertEqual(self.conf.resq_agent.cpu_shares_min,
                         summary['shares'][VM_B])

    # -- backpressure -----------------------------------------------------
    def test_marks_polices_and_releases_the_chain_entry(self):
        self.traffic(0, **{'vhu-a': {}, 'vhu-b': {}, 'dpdk0': {}})
        self.ctl.run_once()
        self.assertEqual((0, 0, None), self.policer('dpdk0'))
        # 10000 packets/s of 1500 bytes enter (120000 kbit/s); B, second in
        # the chain, gets A's 10000 and drops half.
        self.traffic(1.0, **{
            'dpdk0': {'rx_packets': 10000, 'rx_bytes': 15000000},
            'vhu-a': {'tx_packets': 10000},
            'vhu-b': {'tx_packets': 5000, 'tx_dropped': 5000}})
        summary = self.ctl.run_once()
        chain = summary['chains']['fw-nat']
        self.assertEqual('mark', chain['action'])
        self.assertEqual(VM_B, chain['bottleneck'])
        # What B got through, less the 5 % margin.
        self.assertEqual((57000, 5700, 'fw-nat'), self.policer('dpdk0'))
        self.assertIn({'action': 'police', 'port': 'dpdk0',
                       'chain': 'fw-nat', 'rate_kbps': 57000,
                       'burst_kb': 5700, 'outcome': 'set'},
                      summary['actions'])
        # Drops between the thresholds: the policer holds, nothing written.
        self.traffic(1.0, **{
            'dpdk0': {'rx_packets': 4750, 'rx_bytes': 7125000},
            'vhu-a': {'tx_packets': 4750},
            'vhu-b': {'tx_packets': 4730, 'tx_dropped': 20}})
        summary = self.ctl.run_once()
        self.assertEqual('hold', summary['chains']['fw-nat']['action'])
        self.assertEqual([], [a for a in summary['actions']
                              if a['action'] == 'police'])
        self.assertEqual((57000, 5700, 'fw-nat'), self.policer('dpdk0'))
        # Policed, B keeps up: the policer is raised step by step and goes
        # once it passes the chain's rate when it was marked.
        rates = []
        for _ in range(6):
            self.traffic(1.0, **{
                'dpdk0': {'rx_packets': 4750, 'rx_bytes': 7125000},
                'vhu-a': {'tx_packets': 4750},
                'vhu-b': {'tx_packets': 4750}})
            action = self.ctl.run_once()['chains']['fw-nat']['action']
            rates.append(self.policer('dpdk0')[0])
            if action == 'release':
                break
        self.assertEqual([71250, 89062, 111327, 0], rates)
        self.assertEqual((0, 0, None), self.policer('dpdk0'))

    def test_leaves_operator_policers_and_cleans_up_removed_chains(self):
        self.ovsdb.api.db_set('Interface', 'dpdk1', (
            'ingress_policing_rate', 5000)).execute(check_error=True)
        self.write_chains([
            {'name': 'c0', 'entry_port': 'dpdk0', 'instances': [VM_A]},
            {'name': 'c1', 'entry_port': 'dpdk1', 'instances': [VM_B]}])
        self.traffic(0, **{'vhu-a': {}, 'vhu-b': {}, 'dpdk0': {},
                           'dpdk1': {}})
        self.ctl.run_once()
        overload = {'rx_packets': 1000, 'rx_bytes': 8000000}
        self.traffic(1.0, dpdk0=overload, dpdk1=overload, **{
            'vhu-a': {'tx_packets': 500, 'tx_dropped': 500},
            'vhu-b': {'tx_packets': 500, 'tx_dropped': 500}})
        summary = self.ctl.run_once()
        outcomes = {a['port']: a['outcome'] for a in summary['actions']
                    if a['action'] == 'police'}
        self.assertEqual({'dpdk0': 'set', 'dpdk1': 'foreign'}, outcomes)
        self.assertEqual((30400, 3040, 'c0'), self.policer('dpdk0'))
        self.assertEqual((5000, 0, None), self.policer('dpdk1'))
        self.assertIn('an operator\'s policer is set there',
                      self.logs.output)
        # The chain leaves the file: its policer goes, the operator's stays.
        self.write_chains([
            {'name': 'c1', 'entry_port': 'dpdk1', 'instances': [VM_B]}])
        self.traffic(1.0)
        summary = self.ctl.run_once()
        self.assertIn({'action': 'police', 'port': 'dpdk0', 'chain': 'c0',
                       'rate_kbps': 0, 'burst_kb': 0,
                       'outcome': 'released'}, summary['actions'])
        self.assertEqual((0, 0, None), self.policer('dpdk0'))
        self.assertEqual((5000, 0, None), self.policer('dpdk1'))

    def test_bad_chains_file_keeps_policers_and_says_why(self):
        self.traffic(0, **{'vhu-a': {}, 'vhu-b': {}, 'dpdk0': {}})
        self.ctl.run_once()
        self.traffic(1.0, **{
            'dpdk0': {'rx_packets': 10000, 'rx_bytes': 15000000},
            'vhu-a': {'tx_packets': 10000},
            'vhu-b': {'tx_packets': 5000, 'tx_dropped': 5000}})
        self.ctl.run_once()
        self.assertEqual(57000, self.policer('dpdk0')[0])
        with open(self.chains, 'w') as f:
            f.write('{"chains": [{"name": "fw-nat"}]}')
        self.traffic(1.0)
        summary = self.ctl.run_once()
        self.assertIn('chains[0].entry_port', summary['errors'][0])
        self.assertIn('Fix the file', summary['errors'][0])
        self.assertEqual(57000, self.policer('dpdk0')[0])
        # CPU shares go on without the file's costs.
        self.assertIn(VM_A, summary['shares'])

    def test_ovsdb_down_changes_nothing_and_reports_it(self):
        self.traffic(0, **{'vhu-a': {}, 'vhu-b': {}})
        self.ctl.run_once()
        self.traffic(1.0, **{'vhu-a': {'tx_packets': 30000},
                             'vhu-b': {'tx_packets': 10000}})
        self.assertEqual(1536, self.ctl.run_once()['shares'][VM_A])
        self.ovsdb.stop()
        # The client notices the closed socket within a moment.
        for _ in range(100):
            summary = self.ctl.run_once()
            if summary['errors']:
                break
            time.sleep(0.05)
        self.assertIn('is unreachable', summary['errors'][0])
        self.assertIn('statistics would be stale', summary['errors'][0])
        # Neither policers nor shares change on what was not measured.
        self.assertEqual([], summary['actions'])
        self.assertEqual({}, summary['shares'])

    def test_cap_is_always_policed_and_backpressure_goes_below(self):
        self.write_chains([{'name': 'od', 'entry_port': 'dpdk0',
                            'instances': [VM_A], 'max_kbps': 40000}])
        self.traffic(0, **{'vhu-a': {}, 'dpdk0': {}})
        summary = self.ctl.run_once()
        self.assertEqual('none', summary['chains']['od']['action'])
        self.assertEqual((40000, 4000, 'od'), self.policer('dpdk0'))
        # A drops a quarter of 30000 kbit/s: backpressure polices lower.
        self.traffic(1.0, **{
            'dpdk0': {'rx_packets': 2500, 'rx_bytes': 3750000},
            'vhu-a': {'tx_packets': 1875, 'tx_dropped': 625}})
        summary = self.ctl.run_once()
        self.assertEqual('mark', summary['chains']['od']['action'])
        self.assertEqual((21375, 2137, 'od'), self.policer('dpdk0'))


class NfvniceCommandTest(base.TestCase):
    """``resq-agent nfvnice`` against the same real services."""

    def setUp(self):
        super().setUp()
        self.ovsdb = self.useFixture(ovsdb.OvsdbServer())
        domains = self.useFixture(libvirt_fixture.NovaDomains())
        domains.add(VM_A, [3])
        domains.add(VM_B, [3])
        self.ovsdb.add_interface('br-phy', 'dpdk0', 'dpdk')
        self.chains = self.write_json('chains.json', {'chains': [
            {'name': 'c', 'entry_port': 'dpdk0',
             'instances': [VM_A, VM_B]}]})
        self.conf_file = os.path.join(self.tmp, 'agent.conf')
        with open(self.conf_file, 'w') as f:
            f.write('[resq_agent]\nlibvirt_uri = %s\novsdb_connection = %s\n'
                    'nfvnice = true\nnfvnice_interval = 0.5\n'
                    'nfvnice_chains_file = %s\n' % (
                        libvirt_fixture.URI, self.ovsdb.connection,
                        self.chains))

    def run_main(self, *args):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = agent_cmd.main(['--config-file', self.conf_file] +
                                list(args))
        return rc, json.loads(out.getvalue()), err.getvalue()

    def test_passes_print_outcomes(self):
        rc, doc, _ = self.run_main('nfvnice', '--passes', '2')
        self.assertEqual(0, rc)
        # No statistics published: rates unknown, equal shares.
        self.assertEqual({VM_A: 1024, VM_B: 1024}, doc['shares'])
        self.assertEqual('none', doc['chains']['c']['action'])
        self.assertEqual([], doc['errors'])
        self.assertEqual({'unconfirmed'}, {a['outcome'] for a in
                                           doc['actions']})

    def test_bad_chains_file_fails_the_command(self):
        self.write_json('chains.json', {'chains': [{'name': 'c'}]})
        rc, doc, _ = self.run_main('nfvnice', '--passes', '2')
        self.assertEqual(1, rc)
        self.assertIn('chains[0].entry_port', doc['errors'][0])
