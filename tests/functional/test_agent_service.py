"""The whole agent: a Nova notification over RabbitMQ reaches the real
AgentManager, which partitions the cache on a resctrl tree, and the DMA
sizer sizes Open vSwitch's rings on a real ovsdb-server; RPC reports it.

libvirt's test driver holds the instance; libvirt events are off so only
the Nova notification can trigger the work.
"""

import time

from resq_agent import dma
from resq_agent import ovs
from resq_agent import service
from tests.fixtures import ovsdb
from tests.functional import test_agent_messaging as messaging
from tests.unit.resq_agent import test_manager

A = test_manager.A


class AgentServiceTest(test_manager.ManagerTestBase,
                       messaging.MessagingTestCase):

    def setUp(self):
        super().setUp()
        self.ovsdb = self.useFixture(ovsdb.OvsdbServer())
        self.ovsdb.add_interface('br-phy', 'dpdk0', 'dpdk',
                                 status={'numa_id': '0'})
        self.ovsdb.add_interface('br-int', 'vhu-a', 'dpdkvhostuserclient',
                                 external_ids={'vm-uuid': A,
                                               'iface-id': 'port-a'})
        self.flags('resq_agent', publish_guest_budget=False,
                   ovsdb_connection=self.ovsdb.connection)

    def wait_for(self, predicate, what):
        for _ in range(messaging.WAIT * 5):
            if predicate():
                return
            time.sleep(0.2)
        self.fail('%s never happened: %s' % (what, self.logs.output))

    def test_notification_to_partition_rings_and_status(self):
        sizer = dma.DmaSizer(self.conf, ports=ovs.OvsPorts.from_conf(
            self.conf))
        mgr = self.make(post_apply_hooks=[sizer])
        mgr.start(watch_libvirt=False)
        self.addCleanup(mgr.stop)
        svc = service.AgentService(self.conf, mgr)
        svc.start()
        self.addCleanup(svc.stop)
        self.assertTrue(svc.connected.wait(messaging.WAIT))

        self.doms.add(A, (1, 2), ways=4, packet_bytes=64)
        self.assertNotIn(A, self.masks())
        self.nova_notifier().info({}, 'instance.create.end',
                                  self.instance_payload(A, self.host))
        self.wait_for(lambda: A in self.masks(), 'partition of A')
        self.assertEqual(4, bin(self.masks()[A][0]).count('1'))

        self.wait_for(lambda: 'resq_mbuf_budget' in self.ovsdb.interface(
            'vhu-a')['external_ids'], 'budget on vhu-a')
        budget = sizer.budgets[0]
        self.assertEqual(str(budget.descriptors), self.ovsdb.interface(
            'dpdk0')['options']['n_rxq_desc'])
        self.assertEqual(
            str(budget.guests[0].mbufs),
            self.ovsdb.interface('vhu-a')['external_ids'][
                'resq_mbuf_budget'])
        self.assertEqual(64, budget.guests[0].packet_bytes)

        status = self.agent_api().status({}, self.host,
                                         timeout=messaging.WAIT)
        self.assertEqual([A], [i['uuid'] for i in status['instances']])
