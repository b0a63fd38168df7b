"""DMA sizing against a real ovsdb-server with the Open vSwitch schema.

The test starts its own ovsdb-server in a temporary directory, creates
bridges, DPDK and vhost-user interfaces the way os-vif does (through
ovsdbapp), runs the agent's DMA sizer and reads the database back.
"""

import os
import time

import fixtures

from resq_agent import dma
from resq_agent import ovs
from tests import base
from tests.fixtures import ovsdb
# The plain-data doubles of the agent's topology and assignments, and
# ResQ's way size, shared with the sizer's unit tests.
from tests.unit.resq_agent.test_dma import Assignment
from tests.unit.resq_agent.test_dma import Domain
from tests.unit.resq_agent.test_dma import Topology
from tests.unit.resq_agent.test_dma import WAY

VM_A = '6f3c1a9e-6d0a-4c4b-9a53-0c1f7b1c0a01'
VM_B = '6f3c1a9e-6d0a-4c4b-9a53-0c1f7b1c0a02'


class AgentOvsTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.logs = self.useFixture(fixtures.FakeLogger())
        self.ovsdb = self.useFixture(ovsdb.OvsdbServer())
        # Generous: a loaded machine's first read (connect, schema, the
        # whole database) took over 2 s; the outage test sets its own.
        self.flags('resq_agent', ovsdb_connection=self.ovsdb.connection,
                   ovsdb_timeout=15, publish_guest_budget=False)
        add = self.ovsdb.add_interface
        add('br-phy', 'dpdk0', 'dpdk', status={'numa_id': '0'},
            options={'dpdk-devargs': '0000:01:00.0', 'n_rxq': '2'})
        add('br-phy', 'dpdk1', 'dpdk', status={'numa_id': '1'},
            options={'dpdk-devargs': '0000:81:00.0'})
        add('br-int', 'vhu-a', 'dpdkvhostuserclient',
            options={'vhost-server-path': '/run/vhu-a'},
            external_ids={'vm-uuid': VM_A, 'iface-id': 'port-a',
                          'attached-mac': 'fa:16:3e:00:00:01'})
        add('br-int', 'vhu-b', 'dpdkvhostuser',
            external_ids={'vm-uuid': VM_B, 'iface-id': 'port-b'})
        add('br-int', 'tap0', '', options={'foo': 'bar'})
        self.topology = Topology([Domain(0, 2, WAY), Domain(1, 2, WAY)])
        self.assignments = [Assignment(VM_A, 0, 64),
                            Assignment(VM_B, 1, None)]
        self.ports = ovs.OvsPorts.from_conf(self.conf)

    def sizer(self):
        return dma.DmaSizer(self.conf, ports=self.ports)

    def test_reads_ports_as_os_vif_creates_them(self):
        self.assertEqual([ovs.NicPort('dpdk0', 0, 2),
                          ovs.NicPort('dpdk1', 1, 1)],
                         self.ports.nic_ports())
        self.assertEqual({VM_A: ['vhu-a'], VM_B: ['vhu-b']},
                         self.ports.instance_ports())

    def test_sizes_rings_and_touches_only_its_keys(self):
        budgets = self.sizer()(self.topology, self.assignments)
        by_id = {b.domain_id: b for b in budgets}
        d0 = self.ovsdb.interface('dpdk0')['options']
        d1 = self.ovsdb.interface('dpdk1')['options']
        # dpdk0 has two RX queues, dpdk1 one: its rings are twice as big.
        self.assertEqual(str(by_id[0].descriptors), d0['n_rxq_desc'])
        self.assertEqual(d0['n_rxq_desc'], d0['n_txq_desc'])
        self.assertEqual(str(by_id[1].descriptors), d1['n_rxq_desc'])
        self.assertEqual(2 * int(d0['n_rxq_desc']), int(d1['n_rxq_desc']))
        for opts in (d0, d1):
            n = int(opts['n_rxq_desc'])
            self.assertEqual(0, n & (n - 1))
            self.assertLessEqual(n, 4096)
        self.assertEqual('0000:01:00.0', d0['dpdk-devargs'])
        self.assertEqual('2', d0['n_rxq'])
        # vhost-user rings belong to the guest: no ring options there, the
        # budget the guest was given is recorded next to os-vif's keys.
        a = self.ovsdb.interface('vhu-a')
        self.assertEqual({'vhost-server-path': '/run/vhu-a'}, a['options'])
        self.assertEqual('port-a', a['external_ids']['iface-id'])
        guest = {g.instance_uuid: g for b in budgets for g in b.guests}
        self.assertEqual(str(guest[VM_A].mbufs),
                         a['external_ids']['resq_mbuf_budget'])
        self.assertEqual(str(guest[VM_B].mbufs), self.ovsdb.interface(
            'vhu-b')['external_ids']['resq_mbuf_budget'])
        self.assertEqual({'foo': 'bar'},
                         self.ovsdb.interface('tap0')['options'])

    def test_idempotent_and_follows_instances(self):
        self.sizer()(self.topology, self.assignments)
        rings = {n: r for n, r in self.ports.rings().items()}
        self.assertEqual([], self.ports.set_rings(
            {n: r[0] for n, r in rings.items()}))
        budgets = {VM_A: 1000, VM_B: 2000}
        self.assertEqual(['vhu-a', 'vhu-b'],
                         self.ports.set_instance_budgets(budgets))
        self.assertEqual([], self.ports.set_instance_budgets(budgets))
        # Instance B is gone from the plan: its recorded budget goes too.
        self.sizer()(self.topology, self.assignments[:1])
        self.assertNotIn('resq_mbuf_budget',
                         self.ovsdb.interface('vhu-b')['external_ids'])
        self.assertEqual('port-b', self.ovsdb.interface(
            'vhu-b')['external_ids']['iface-id'])
        self.assertEqual(rings, self.ports.rings())

    def test_ovsdb_down_then_back(self):
        # Each call while OVSDB is down waits out the timeout: a short one.
        self.flags('resq_agent', ovsdb_timeout=2)
        self.ports = ovs.OvsPorts.from_conf(self.conf)
        sizer = self.sizer()
        sizer(self.topology, self.assignments)
        before = self.ovsdb.interface('dpdk0')['options']['n_rxq_desc']
        self.ovsdb.stop()
        # The operator halves DDIO's share for OVS while OVSDB is down.
        self.flags('resq_agent', dma_ovs_share=0.25)
        sizer(self.topology, self.assignments)
        self.assertIn(self.ovsdb.connection + ' is unreachable',
                      self.logs.output)
        self.assertIn('retries at the next reconcile', self.logs.output)
        self.ovsdb.start()
        # Interface.status is ephemeral: ovs-vswitchd fills it in again
        # after a restart, and here the test plays vswitchd.
        for name, numa in (('dpdk0', '0'), ('dpdk1', '1')):
            self.ovsdb.api.db_set('Interface', name, ('status', {
                'numa_id': numa})).execute(check_error=True)
        want = str(int(before) // 2)
        after = None
        for _ in range(50):
            # The IDL reconnects and resynchronises in the background;
            # each reconcile retries until it sees the status again.
            sizer(self.topology, self.assignments)
            after = self.ovsdb.interface('dpdk0')['options']['n_rxq_desc']
            if after == want:
                break
            time.sleep(0.2)
        self.assertEqual(want, after)

    def test_never_reachable_is_a_clear_error(self):
        missing = ovs.OvsPorts('unix:' + os.path.join(self.tmp, 'no.sock'),
                               timeout=1)
        exc = self.assertRaises(ovs.OvsUnavailable, missing.nic_ports)
        self.assertIn('no.sock is unreachable', str(exc))
        self.assertIn('ovsdb_connection', str(exc))
        # Refused before python-ovs is asked (it logs an ERROR per try).
        self.assertIn('no socket at %s' % os.path.join(self.tmp, 'no.sock'),
                      str(exc))
        self.assertNotIn('Unable to open stream', self.logs.output)

    def test_no_connection_configured_means_no_ovs(self):
        self.flags('resq_agent', ovsdb_connection='')
        self.assertIsNone(ovs.OvsPorts.from_conf(self.conf))
