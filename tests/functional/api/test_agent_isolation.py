"""The agent reports servers without isolation to resq-api, for real."""

import uuid

from resq_agent import isolation
from resq_common.clients import resq as resq_client
from tests import base
from tests.fixtures import resq_api

WHY = 'its cores are pinned in cache domain 1 but its 3 ways are in domain 0'


class AgentIsolationTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.api = self.useFixture(resq_api.ResQAPI())
        self.admin = self.api.client('admin')
        self.server = str(uuid.uuid4())

    def publisher(self, host, client=None):
        marks = isolation.IsolationPublisher(None, host=host)
        marks._metadata = isolation.ServiceIsolation(
            client or self.api.client('service'), host)
        return marks

    def status(self):
        rec = self.admin.get_isolation(self.server)
        return rec and (rec['status'], rec['host'])

    def test_marked_then_cleared(self):
        marks = self.publisher('host1')
        marks({self.server: WHY}, set())
        self.assertEqual(('misplaced', 'host1'), self.status())
        self.assertEqual('misplaced on host1: ' + WHY,
                         self.admin.get_isolation(self.server)['detail'])
        marks({}, {self.server})
        self.assertEqual(('ok', 'host1'), self.status())

    def test_an_agent_clears_only_its_own_report(self):
        old, new = self.publisher('host1'), self.publisher('host2')
        old({self.server: WHY}, set())
        new({self.server: WHY}, set())
        # host1's late "ok" would erase host2's report: not written.
        old({}, {self.server})
        self.assertEqual(('misplaced', 'host2'), self.status())
        self.assertEqual({}, old._pending)
        new({}, {self.server})
        self.assertEqual(('ok', 'host2'), self.status())

    def test_reports_that_cannot_land_are_retried(self):
        down = resq_client.ResQClient.for_endpoint('http://127.0.0.1:1',
                                                   timeout=2)
        marks = self.publisher('host1', down)
        marks({self.server: WHY}, set())
        self.assertIsNone(self.status())
        self.assertEqual(1, len(marks._pending))
        marks._metadata = isolation.ServiceIsolation(
            self.api.client('service'), 'host1')     # resq-api is back
        marks.after_apply(None, [])
        self.assertEqual(('misplaced', 'host1'), self.status())

    def test_a_tenant_cannot_report(self):
        marks = self.publisher('host1', self.api.client('member_a'))
        marks({self.server: WHY}, set())
        self.assertIsNone(self.status())


class HostReportTest(base.TestCase):
    """The agent's report of its cache domains, through the real API."""

    def test_report_changes_and_heartbeat(self):
        from resq_agent import hostreport
        from resq_common import cache_domain

        api = self.useFixture(resq_api.ResQAPI())
        now = [0.0]
        reporter = hostreport.HostReporter(
            api.client('service'), 'cmp-1',
            lambda topology: [cache_domain.CacheDomain(0, 20,
                                                       num_closids=16)],
            interval=60, clock=lambda: now[0], version='test')
        self.assertTrue(reporter.after_apply(None, []))
        rec = api.client('admin').get_host('cmp-1')
        (dom,) = rec['domains']
        self.assertEqual((0, 18, 0, 'test'), (dom['id'], dom['ways_total'],
                                              dom['ways_used'],
                                              rec['agent_version']))
        # Unchanged and not due: nothing sent; due: the heartbeat.
        self.assertFalse(reporter.after_apply(None, []))
        now[0] = 61.0
        self.assertTrue(reporter.heartbeat())
        # A tenant sees no host reports.
        self.assertRaises(resq_client.Forbidden,
                          api.client('member_a').list_hosts)
