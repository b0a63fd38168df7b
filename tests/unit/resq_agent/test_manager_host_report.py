"""The host report takes the occupancy the agent's status measured.

AgentManager on a resctrl tree with a HostReporter as the agent wires it:
the report's servers carry the readings of the last ``status()`` (a
``/metrics`` scrape, a monitoring notification, or the reading a due
heartbeat takes), and a pass reads no resctrl file for the report.
"""

import os
from unittest import mock

from resq_agent import hostreport
from resq_agent import monitor
from resq_common import cache_domain
from tests.unit import fake_resq
from tests.unit.resq_agent import test_manager

A = test_manager.A


class HostReportUsageTest(test_manager.ManagerTestBase):

    def setUp(self):
        super().setUp()
        self.api = fake_resq.FakeResQ()
        self.now = 100.0
        self.reporter = hostreport.HostReporter(
            self.api, 'host1', self.cache_domains, interval=60,
            clock=lambda: self.now, version='x')
        self.doms.add(A, (1,), ways=2)
        self.mgr = self.make(post_apply_hooks=[self.reporter.after_apply],
                             host_report=self.reporter)

    @staticmethod
    def cache_domains(topology):
        return [cache_domain.CacheDomain(d.id, d.ways, num_closids=16)
                for d in topology.domains]

    def put_occupancy(self, value):
        group = self.mgr.status()['instances'][0]
        # Its own counters: its monitoring group in its class's group.
        base_dir = os.path.join(self.tree.root, 'resq-cos%d' % group['clos'],
                                'mon_groups', 'resq-' + A, 'mon_data',
                                'mon_L3_00')
        os.makedirs(base_dir, exist_ok=True)
        with open(os.path.join(base_dir, 'llc_occupancy'), 'w') as f:
            f.write('%d\n' % value)

    def reported(self):
        return {i['server_uuid']: i['llc_occupancy_bytes']
                for i in self.api.hosts['host1']['instances']}

    def test_the_report_takes_the_last_status_readings(self):
        self.assertIs(self.reporter.usage.__self__, self.mgr)
        self.mgr.reconcile()
        # Nothing measured yet: the server is reported without a reading.
        self.assertEqual({A: None}, self.reported())
        self.put_occupancy(3 << 20)
        self.assertEqual(3 << 20, self.mgr.status()['instances'][0][
            'llc_occupancy_bytes'])
        self.assertEqual(3 << 20, self.mgr.usage()[A]['llc_occupancy_bytes'])
        # A pass reads no resctrl file for the report.
        with mock.patch.object(monitor.Monitor, 'read',
                               side_effect=AssertionError('read')):
            self.mgr.reconcile()
            # An occupancy change alone waits for the heartbeat.
            self.assertEqual({A: None}, self.reported())
            # A heartbeat that is not due measures nothing.
            self.assertFalse(self.reporter.heartbeat())
        # Readings alone go out with the periodic full report.
        self.now += 60 * hostreport.FULL_EVERY
        self.assertTrue(self.reporter.heartbeat())
        self.assertEqual({A: 3 << 20}, self.reported())

    def test_a_due_heartbeat_measures_without_any_scrape(self):
        self.assertEqual(self.mgr.measure, self.reporter.measure)
        self.mgr.reconcile()
        self.assertEqual({A: None}, self.reported())
        # Nothing scrapes /metrics or sends notifications: the heartbeat
        # takes the reading itself.
        self.put_occupancy(5 << 20)
        # Readings alone go out with the periodic full report.
        self.now += 60 * hostreport.FULL_EVERY
        self.assertTrue(self.reporter.heartbeat())
        self.assertEqual({A: 5 << 20}, self.reported())

    def test_a_failed_measurement_reports_the_last_readings(self):
        self.mgr.reconcile()
        self.put_occupancy(3 << 20)
        self.mgr.status()
        # Readings alone go out with the periodic full report.
        self.now += 60 * hostreport.FULL_EVERY
        with mock.patch.object(self.mgr, 'status',
                               side_effect=OSError('EIO')):
            self.assertTrue(self.reporter.heartbeat())
        self.assertEqual({A: 3 << 20}, self.reported())

    def test_a_reporter_with_readings_of_its_own_keeps_them(self):
        reporter = hostreport.HostReporter(self.api, 'host1',
                                           self.cache_domains,
                                           usage=lambda: {})
        own = reporter.usage
        self.make(host_report=reporter)
        self.assertIs(own, reporter.usage)
