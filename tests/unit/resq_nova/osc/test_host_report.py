"""``openstack resq host show``: the agent's readings next to Placement's."""

import testtools

from resq_common.clients import resq as resq_client
from resq_nova.osc.v1 import host as host_cmd

A = 'aaaaaaaa-0000-4000-8000-00000000000a'
B = 'bbbbbbbb-0000-4000-8000-00000000000b'


class FakeService:

    def __init__(self, answer=None, error=None):
        self.answer = answer
        self.error = error
        self.asked = []

    def get_host(self, host, microversion=None):
        self.asked.append((host, microversion))
        if self.error is not None:
            raise self.error
        return self.answer


def api_error(cls, status):
    return cls(method='GET', url='/hosts/h1', reason='%d x' % status,
               status=status)


class WithMeasurementsTest(testtools.TestCase):

    def test_each_server_gets_its_readings(self):
        placement = [{'server': A, 'ways': 3, 'clos': 1, 'domain': 0},
                     {'server': B, 'ways': 2, 'clos': 1, 'domain': 1}]
        report = {'instances': [
            {'server_uuid': A.upper(), 'domain': 0, 'ways': 3,
             'llc_occupancy_bytes': 5 << 20,
             'mbm_total_bytes_per_s': 1e9}]}
        self.assertEqual([
            dict(placement[0], llc_occupancy_bytes=5 << 20,
                 mbm_total_bytes_per_s=1e9),
            dict(placement[1], llc_occupancy_bytes=None,
                 mbm_total_bytes_per_s=None)],
            host_cmd.with_measurements(placement, report))
        self.assertEqual([], host_cmd.with_measurements([], None))


class HostReportTest(testtools.TestCase):

    def test_asks_microversion_1_1(self):
        service = FakeService({'hostname': 'h1', 'instances': []})
        self.assertEqual({'hostname': 'h1', 'instances': []},
                         host_cmd.host_report(service, 'h1'))
        self.assertEqual([('h1', '1.1')], service.asked)

    def test_none_without_resq_api_report_or_version(self):
        self.assertIsNone(host_cmd.host_report(None, 'h1'))
        for error in (api_error(resq_client.NotFound, 404),
                      api_error(resq_client.ResQAPIError, 406),
                      api_error(resq_client.ResQAPIError, 400)):
            self.assertIsNone(host_cmd.host_report(
                FakeService(error=error), 'h1'))

    def test_other_failures_are_logged(self):
        down = resq_client.ResQAPIUnavailable(method='GET', url='/hosts/h1',
                                              reason='refused')
        with self.assertLogs(host_cmd.LOG, 'WARNING') as logs:
            self.assertIsNone(host_cmd.host_report(
                FakeService(error=down), 'h1'))
        self.assertIn('Cannot read the report of h1', logs.output[0])
