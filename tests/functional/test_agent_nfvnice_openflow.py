"""NFVnice's fast path against a real Open vSwitch.

ovs-vswitchd runs on its dummy datapath (tests/fixtures/vswitchd.py): the
real switch, its OpenFlow tables, meters and counters, with ports that
need no kernel. Two chains enter through the same port, told apart by
their VLAN; the operator's flows send each to its NF's port. The agent
reads the counters over OpenFlow and meters each chain on its own. The
privileged functions run in the test process (their argument checks
still run). Instances are Nova-shaped domains of libvirt's test driver.
"""

import json
import os
import subprocess
import time

import fixtures

from resq_agent import cleanup
from resq_agent.nfvnice import controller
from resq_agent.nfvnice import meters as meters_mod
from resq_agent.nfvnice import openflow
from resq_agent import ovs
from resq_agent import privsep
from resq_agent.privsep import openflow as privsep_openflow
from resq_agent import virt
from tests import base
from tests.fixtures import libvirt as libvirt_fixture
from tests.fixtures import vswitchd

VM_A = '6f3c1a9e-6d0a-4c4b-9a53-0c1f7b1c0c01'
VM_B = '6f3c1a9e-6d0a-4c4b-9a53-0c1f7b1c0c02'


class DroppingNf:
    """The privileged functions, with NF A's ring overflowing.

    The dummy ports keep no ``tx_dropped``: this wrapper reports, on
    ``vhu-a``, as many drops as ``drops`` says (the one injected fault);
    every other figure is the switch's.
    """

    def __init__(self):
        self.drops = 0

    def __getattr__(self, name):
        return getattr(privsep_openflow, name)

    def port_stats(self):
        stats = privsep_openflow.port_stats()
        stats['vhu-a']['tx_dropped'] = self.drops
        for name, counters in stats.items():
            if name != 'vhu-a' and counters.get('tx_dropped') is None:
                counters['tx_dropped'] = 0
        return stats


class OpenFlowNfvniceTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.logs = self.useFixture(fixtures.FakeLogger())
        self.switch = self.useFixture(vswitchd.VSwitch())
        self.domains = self.useFixture(libvirt_fixture.NovaDomains())
        self.domains.add(VM_A, [2])
        self.domains.add(VM_B, [2])
        sw = self.switch
        sw.add_port('dpdk0', 1)
        sw.add_port('vhu-a', 2, vm=VM_A)
        sw.add_port('vhu-b', 3, vm=VM_B)
        # The operator's pipeline: each VLAN to its chain's first NF.
        sw.ofctl('add-flow', 'priority=10,in_port=dpdk0,dl_vlan=101,'
                 'actions=output:vhu-a')
        sw.ofctl('add-flow', 'priority=10,in_port=dpdk0,dl_vlan=102,'
                 'actions=output:vhu-b')
        self.chains = os.path.join(self.tmp, 'chains.json')
        self.write_chains('dl_vlan=101', 'dl_vlan=102')
        self.flags('resq_agent', libvirt_uri=libvirt_fixture.URI,
                   ovsdb_connection=sw.ovsdb.connection, ovsdb_timeout=2,
                   nfvnice=True, nfvnice_chains_file=self.chains,
                   nfvnice_bridge=sw.target, backpressure=True,
                   policing_min_kbps=100)
        previous = privsep.openflow_pctxt.use_conf(self.conf)
        self.addCleanup(privsep.openflow_pctxt.use_conf, previous)
        privsep.openflow_pctxt.set_client_mode(False)
        self.addCleanup(privsep.openflow_pctxt.set_client_mode, True)
        self.ports = ovs.OvsPorts.from_conf(self.conf)
        self.addCleanup(self.ports.close)
        self.ops = DroppingNf()
        self.ctl = controller.Controller(
            self.conf, virt.Hypervisor(libvirt_fixture.URI), self.ports,
            openflow_ops=self.ops)

    def write_chains(self, match_a, match_b, entry='dpdk0'):
        chains = [{'name': 'chain-a', 'entry_port': entry,
                   'instances': [VM_A]},
                  {'name': 'chain-b', 'entry_port': entry,
                   'instances': [VM_B]}]
        for chain, match in zip(chains, (match_a, match_b)):
            if match:
                chain['match'] = match
        with open(self.chains, 'w') as f:
            json.dump({'chains': chains}, f)
        st = os.stat(self.chains)
        os.utime(self.chains, ns=(st.st_atime_ns,
                                  st.st_mtime_ns + 1000000000))

    def tx(self, port):
        return openflow.parse_ports(
            self.switch.ofctl('dump-ports', port))[port]['tx_packets']

    def send(self, count_a, count_b):
        """Offer both chains packets; ``(A delivered, B delivered)``."""
        before = self.tx('vhu-a'), self.tx('vhu-b')
        frames = []
        for i in range(max(count_a, count_b)):
            if i < count_a:
                frames.append(vswitchd.frame(101, 1000))
            if i < count_b:
                frames.append(vswitchd.frame(102, 1000))
        self.switch.receive('dpdk0', frames)
        return (self.tx('vhu-a') - before[0], self.tx('vhu-b') - before[1])

    def test_each_chain_gets_its_own_meter_and_counters(self):
        summary = self.ctl.run_once()
        self.assertEqual([], summary['errors'])
        meters = {a['chain']: a for a in summary['actions']
                  if a['action'] == 'meter'}
        self.assertEqual({'set'}, {a['outcome'] for a in meters.values()})
        flows = self.switch.ofctl('dump-flows', 'cookie=%#x/%#x' % (
            openflow.COOKIE, openflow.COOKIE_MASK))
        self.assertEqual(2, flows.count('resubmit(,0)'))
        # Unpoliced, both chains pass whole through the agent's flows.
        self.assertEqual((40, 60), self.send(40, 60))
        summary = self.ctl.run_once()
        # The counters are the switch's own, read now: no 5 s refresh.
        self.assertGreater(summary['rates'][VM_A]['arrival_pps'], 0)
        self.assertGreater(summary['rates'][VM_B]['arrival_pps'], 0)
        self.assertGreater(summary['chains']['chain-a']['entry_kbps'], 0)
        self.assertGreater(summary['pass_ms'], 0)

    def test_backpressure_throttles_only_the_congested_chain(self):
        self.ctl.run_once()
        self.assertEqual((200, 200), self.send(200, 200))
        # A's NF drops as many packets as it got: chain A is marked.
        self.ops.drops = self.tx('vhu-a')
        summary = self.ctl.run_once()
        self.assertEqual('mark', summary['chains']['chain-a']['action'])
        self.assertEqual('none', summary['chains']['chain-b']['action'])
        meter_a = self.ctl.meters.meter_of('chain-a')
        meter_b = self.ctl.meters.meter_of('chain-b')
        config = self.switch.ofctl('dump-meters')
        rate_a = summary['chains']['chain-a']['rate_kbps']
        self.assertIn('meter=%d kbps burst stats bands=\ntype=drop rate=%d '
                      % (meter_a, rate_a), config)
        self.assertIn('meter=%d kbps burst stats bands=\ntype=drop rate=%d '
                      % (meter_b, openflow.UNLIMITED_KBPS), config)
        # The same port, both chains at once: A is held back, B untouched.
        delivered_a, delivered_b = self.send(500, 500)
        self.assertEqual(500, delivered_b)
        self.assertLess(delivered_a, 500)
        stats = openflow.parse_meters(self.switch.ofctl('meter-stats'))
        self.assertEqual(500 - delivered_a, stats[meter_a].dropped)
        self.assertEqual(0, stats[meter_b].dropped)

    def test_a_chain_without_match_polices_the_whole_port(self):
        self.write_chains('dl_vlan=101', None)
        summary = self.ctl.run_once()
        self.assertEqual(['chain-a'], [a['chain'] for a in summary['actions']
                                       if a['action'] == 'meter'])
        self.assertIsNone(self.ctl.meters.meter_of('chain-b'))

    def test_restart_clears_what_a_previous_agent_left(self):
        # A previous run of the agent left a chain that is gone now, and
        # an operator has a meter and a flow of their own.
        old = meters_mod.ChainMeters(self.ops, 0xE000, 1024)
        old.apply({'gone': ('dpdk0', 'dl_vlan=999', 5000, 500)})
        self.switch.ofctl('add-meter', 'meter=7,pktps,bands=type=drop,'
                          'rate=10')
        self.switch.ofctl('add-flow', 'priority=5,cookie=0x77,in_port=dpdk0,'
                          'actions=drop')
        self.ctl.run_once()
        flows, owned = privsep_openflow.owned()
        self.assertEqual(sorted(self.ctl.meters.meter_of(c)
                                for c in ('chain-a', 'chain-b')), owned)
        self.assertEqual(owned, flows)
        self.assertIn('meter=7 pktps', self.switch.ofctl('dump-meters'))
        self.assertIn('cookie=0x77', self.switch.ofctl('dump-flows'))
        # Chains that leave the file take their meters with them.
        with open(self.chains, 'w') as f:
            json.dump({'chains': []}, f)
        st = os.stat(self.chains)
        os.utime(self.chains, ns=(st.st_atime_ns,
                                  st.st_mtime_ns + 2000000000))
        summary = self.ctl.run_once()
        self.assertEqual({'removed'}, {a['outcome'] for a in
                                       summary['actions']
                                       if a['action'] == 'meter_remove'})
        self.assertEqual(([], []), privsep_openflow.owned())
        self.assertIn('meter=7 pktps', self.switch.ofctl('dump-meters'))

    def test_a_failed_write_is_reported_and_redone(self):
        self.ctl.run_once()
        self.send(100, 100)
        self.ops.drops = self.tx('vhu-a')
        # The switch refuses the first change of chain A's meter.
        real = privsep_openflow.set_meters
        calls = []

        def refuse_once(changes):
            calls.append(changes)
            if len(calls) == 1:
                return {changes[0][0]: 'meter-mod refused: injected'}
            return real(changes)

        self.ops.set_meters = refuse_once
        summary = self.ctl.run_once()
        failed = [a for a in summary['actions']
                  if a.get('outcome') == 'failed']
        self.assertEqual(['chain-a'], [a['chain'] for a in failed])
        self.assertIn('injected', failed[0]['error'])
        # The next pass clears the agent's own and installs both again,
        # chain A at the rate backpressure holds.
        summary = self.ctl.run_once()
        outcomes = {a['chain']: a['outcome'] for a in summary['actions']
                    if a['action'] == 'meter'}
        self.assertEqual({'chain-a': 'set', 'chain-b': 'set'}, outcomes)
        rate = self.ctl.backpressure.state('chain-a').rate_kbps
        self.assertIn('rate=%d ' % rate, self.switch.ofctl('dump-meters'))

    def test_bad_match_names_the_field(self):
        self.write_chains('dl_vlan=101,actions=drop', 'dl_vlan=102')
        summary = self.ctl.run_once()
        self.assertIn('chains[0].match', ' '.join(summary['errors']))
        self.assertIn('actions', ' '.join(summary['errors']))

    def test_cleanup_removes_only_the_agents(self):
        self.ctl.run_once()
        self.switch.ofctl('add-meter', 'meter=7,pktps,bands=type=drop,'
                          'rate=10')
        doc = cleanup.plan_openflow(self.switch.target)
        self.assertEqual(sorted(self.ctl.meters.meter_of(c)
                                for c in ('chain-a', 'chain-b')),
                         doc['meters'])
        self.assertTrue(cleanup.execute_openflow(doc))
        self.assertEqual({'removed'}, {a['outcome'] for a in doc['actions']})
        self.assertEqual(([], []), privsep_openflow.owned())
        self.assertIn('meter=7 pktps', self.switch.ofctl('dump-meters'))
        self.assertIn('priority=10', self.switch.ofctl('dump-flows'))
        # Nothing left: a second run is a no-op.
        self.assertEqual([], cleanup.plan_openflow(self.switch.target)[
            'meters'])
        self.assertIsNone(cleanup.plan_openflow(None))


class WireTest(base.TestCase):
    """The OpenFlow client against the real switch."""

    def test_counters_batches_and_refusals(self):
        from resq_agent.nfvnice import ofwire

        switch = self.useFixture(vswitchd.VSwitch())
        switch.add_port('p1', 1)
        client = ofwire.Client(switch.target)
        self.addCleanup(client.close)
        self.assertEqual(0, client.port_stats()['p1']['rx_packets'])
        switch.receive('p1', [vswitchd.frame(5, 100)] * 7)
        # ovs-vswitchd counts what it was handed on its own time: on a
        # busy machine the last frame was not counted yet at once.
        deadline = time.monotonic() + 10
        while (client.port_stats()['p1']['rx_packets'] < 7
               and time.monotonic() < deadline):
            time.sleep(0.1)
        self.assertEqual(7, client.port_stats()['p1']['rx_packets'])
        # One batch: an add, a change of a meter that does not exist
        # (refused, and said so), a change of the one just added.
        refused = client.meter_mods([
            (ofwire.METER_ADD, 100, 5000, 500),
            (ofwire.METER_MODIFY, 101, 5000, 500),
            (ofwire.METER_MODIFY, 100, 7000, 700)])
        self.assertEqual([101], list(refused))
        self.assertIn('unknown meter', refused[101])
        self.assertIn('type=drop rate=7000 burst_size=700',
                      switch.ofctl('dump-meters'))
        self.assertEqual({100: (0, 0, 0)}, client.meter_stats())
        # The switch goes away: a clear error, not a hang.
        subprocess.run(['ovs-appctl', '--target=' + switch.ctl, 'exit'],
                       check=True, capture_output=True)
        self.assertRaises(ofwire.WireError, client.meter_stats)
