"""``openstack resq host show`` with the agent's report in resq-api.

Placement's view (the servers holding ways) from the harness's real
Placement and Nova, as in ``test_osc_plugin``; each server's LLC occupancy
and memory bandwidth from the report the agent stored in an in-process
resq-api at microversion 1.1.
"""

from unittest import mock

import microversion_parse

from resq_nova.api import microversion
from resq_nova.osc.v1 import host as host_cmd
from tests.fixtures import resq_api
from tests.functional import test_osc_plugin


class HostShowReportTest(test_osc_plugin.OSCTestBase):

    def setUp(self):
        super().setUp()
        self.start_resq_compute('host1')
        self.resqapi = self.useFixture(resq_api.ResQAPI())
        self.resq.service = self.resqapi.client('admin')
        self.server = self.boot('host1', ways=3, name='fw')

    def report(self, instances):
        self.resqapi.client('service').report_host('host1', {
            'domains': [{'id': 0, 'ways_total': 9, 'ways_used': 3}],
            'instances': instances})

    def test_servers_show_the_reported_occupancy(self):
        self.report([{'server_uuid': self.server['id'], 'domain': 0,
                      'ways': 3, 'llc_occupancy_bytes': 6 << 20,
                      'mbm_total_bytes_per_s': 2.5e9}])
        data = self.run_cmd(host_cmd.ShowHost, 'host1')
        self.assertEqual([{'server': self.server['id'], 'ways': 3,
                           'clos': 1, 'domain': 0,
                           'llc_occupancy_bytes': 6 << 20,
                           'mbm_total_bytes_per_s': 2.5e9}],
                         data['instances'])
        self.assertEqual(self.resqapi.client('admin').get_host('host1')[
            'updated_at'], data['reported_at'])

    def test_a_server_the_report_does_not_list(self):
        self.report([])
        (inst,) = self.run_cmd(host_cmd.ShowHost, 'host1')['instances']
        self.assertIsNone(inst['llc_occupancy_bytes'])

    def test_table_output_is_formatted(self):
        self.report([{'server_uuid': self.server['id'], 'domain': 0,
                      'ways': 3, 'llc_occupancy_bytes': 6 << 20}])
        app = test_osc_plugin.FakeApp(self.resq)
        cmd = host_cmd.ShowHost(app, None)
        cmd.run(cmd.get_parser('openstack resq host show').parse_args(
            ['host1']))
        self.assertIn("llc_occupancy_bytes='%d'" % (6 << 20),
                      app.stdout.getvalue())

    def test_placement_alone_without_a_report_or_an_older_resq_api(self):
        expected = [{'server': self.server['id'], 'ways': 3, 'clos': 1,
                     'domain': 0}]
        data = self.run_cmd(host_cmd.ShowHost, 'host1')
        self.assertEqual(expected, data['instances'])
        self.assertNotIn('reported_at', data)
        self.report([])
        with mock.patch.object(microversion, 'MAX_VERSION',
                               microversion_parse.Version(1, 0)):
            data = self.run_cmd(host_cmd.ShowHost, 'host1')
        self.assertEqual(expected, data['instances'])
        self.assertNotIn('reported_at', data)
        self.resq.service = None
        self.assertEqual(expected, self.run_cmd(host_cmd.ShowHost,
                                                'host1')['instances'])
