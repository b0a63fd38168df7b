"""Host reports with the servers the agent partitions (microversion 1.1).

Through the real API and database: the round trip at 1.1, 1.0 as it was
(a body with ``instances`` refused, answers without them), the checks
that refuse servers contradicting the report, and the agent's reporter
against a resq-api that serves 1.1 and one that serves 1.0 only.
"""

import json
from unittest import mock
import uuid

import hypothesis
from hypothesis import strategies as st
import microversion_parse

from resq_agent import hostreport
from resq_agent import layout
from resq_common import cache_domain
from resq_common.clients import resq as resq_client
from resq_nova.api import microversion
from tests.functional.api import test_api
from tests.functional.api import test_fuzz

V1_0 = {'OpenStack-API-Version': 'resq 1.0'}
V1_1 = {'OpenStack-API-Version': 'resq 1.1'}


def server(domain=0, ways=2, occupancy=None, rate=None, **extra):
    return dict({'server_uuid': str(uuid.uuid4()), 'domain': domain,
                 'ways': ways, 'llc_occupancy_bytes': occupancy,
                 'mbm_total_bytes_per_s': rate}, **extra)


def report(*instances, **changes):
    body = {'domains': [{'id': 0, 'ways_total': 18, 'ways_used': 6,
                         'clos_total': 15, 'clos_used': 2},
                        {'id': 1, 'ways_total': 18, 'ways_used': 2}],
            'agent_version': '2.0'}
    if instances:
        body['instances'] = list(instances)
    body.update(changes)
    return body


class HostInstancesTest(test_api.APITestBase):

    def put(self, body, headers=V1_1, host='cmp-1', persona='service'):
        return self.raw('PUT', '/hosts/%s' % host, persona, body=body,
                        headers=headers)

    def get(self, path='/hosts/cmp-1', headers=V1_1):
        resp = self.raw('GET', path, headers=headers)
        self.assertEqual(200, resp.status_code, resp.text)
        return resp.json()

    def error(self, resp, status=400):
        self.assertEqual(status, resp.status_code, resp.text)
        (error,) = resp.json()['errors']
        return error

    def test_round_trip_at_1_1(self):
        a = server(0, 4, occupancy=3 << 20, rate=1.25e9)
        b = server(1, 2)
        resp = self.put(report(a, b))
        self.assertEqual(201, resp.status_code, resp.text)
        self.assertEqual('resq 1.1', resp.headers['OpenStack-API-Version'])
        self.assertEqual([a, b], resp.json()['instances'])
        shown = self.get()
        self.assertEqual([a, b], shown['instances'])
        self.assertEqual(6, shown['domains'][0]['ways_used'])
        self.assertEqual(('cmp-1', '2.0'), (shown['hostname'],
                                            shown['agent_version']))
        (listed,) = self.get('/hosts')['hosts']
        self.assertEqual([a, b], listed['instances'])
        # The project's own client asks 1.1 for a report with servers.
        a['llc_occupancy_bytes'] = 5 << 20
        self.service.report_host('cmp-1', report(a))
        self.assertEqual([a], self.admin.get_host(
            'cmp-1', microversion='1.1')['instances'])

    def test_1_0_unchanged(self):
        # Asked for 1.0 (and without a version): no servers, refused
        # as any unknown field.
        for headers in (V1_0, {}):
            error = self.error(self.put(report(server()), headers))
            self.assertEqual('resq.body.invalid', error['code'])
            self.assertIn("'instances' was unexpected", error['detail'])
        self.assertEqual(201, self.put(report(server()), V1_1).status_code)
        for headers in (V1_0, {}):
            self.assertNotIn('instances', self.get(headers=headers))
            self.assertNotIn('instances', self.get('/hosts', headers)[
                'hosts'][0])
            resp = self.put(report(), headers)
            self.assertEqual(200, resp.status_code, resp.text)
            self.assertNotIn('instances', resp.json())
        # The default client (1.0) reads the report as before.
        self.assertNotIn('instances', self.admin.get_host('cmp-1'))

    def test_a_report_without_servers_clears_them(self):
        self.assertEqual(201, self.put(report(server())).status_code)
        self.assertEqual(1, len(self.get()['instances']))
        self.assertEqual(200, self.put(report(), V1_0).status_code)
        self.assertIsNone(self.get()['instances'])
        self.assertEqual(200, self.put(report(instances=[])).status_code)
        self.assertEqual([], self.get()['instances'])
        self.assertEqual(200, self.put(report()).status_code)
        self.assertIsNone(self.get()['instances'])

    def test_a_host_reported_at_1_0_lists_no_servers_at_1_1(self):
        self.assertEqual(201, self.put(report(), V1_0).status_code)
        self.assertIsNone(self.get()['instances'])

    def test_server_in_a_domain_not_reported(self):
        error = self.error(self.put(report(server(0), server(7))))
        self.assertEqual('resq.host.instance_domain', error['code'])
        self.assertIn('instances[1]', error['detail'])
        self.assertIn('cache domain 7 is not in the report\'s domains '
                      '(0, 1)', error['detail'])

    def test_server_twice(self):
        a = server(0)
        twice = dict(a, domain=1, server_uuid=a['server_uuid'].upper())
        error = self.error(self.put(report(a, twice)))
        self.assertEqual('resq.host.server_uuid', error['code'])
        self.assertIn('instances[1]: server %s is reported twice (also '
                      'instances[0])' % twice['server_uuid'],
                      error['detail'])

    def test_servers_holding_more_ways_than_used(self):
        error = self.error(self.put(report(server(0, 4), server(0, 3))))
        self.assertEqual('resq.host.instance_ways', error['code'])
        self.assertIn('cache domain 0 hold 7 ways, more than its ways_used '
                      '6', error['detail'])

    def test_bad_fields(self):
        cases = [
            (server(occupancy=-1), 'llc_occupancy_bytes'),
            (server(occupancy=1.5), 'llc_occupancy_bytes'),
            (server(rate=-0.5), 'mbm_total_bytes_per_s'),
            (server(rate='fast'), 'mbm_total_bytes_per_s'),
            (server(ways=-1), 'ways'),
            (server(domain='0'), 'domain'),
            (server(server_uuid='not-a-uuid'), 'server_uuid'),
            (server(cpus=[1]), "'cpus' was unexpected"),
        ]
        for inst, field in cases:
            error = self.error(self.put(report(inst)))
            self.assertEqual('resq.body.invalid', error['code'])
            self.assertIn(field, error['detail'])
        missing = server()
        del missing['ways']
        self.assertIn("'ways' is a required property",
                      self.error(self.put(report(missing)))['detail'])
        too_many = report(instances=[server(ways=0)] * 4097)
        self.assertIn('body field instances: ', self.error(
            self.put(too_many))['detail'])

    def test_readings_may_be_left_out(self):
        inst = {'server_uuid': str(uuid.uuid4()), 'domain': 0, 'ways': 2}
        self.assertEqual(201, self.put(report(inst)).status_code)
        self.assertEqual([inst], self.get()['instances'])

    def test_versions_document_and_unserved_versions(self):
        resp = self.raw('GET', '/', headers=V1_1)
        version = resp.json()['versions'][0]
        self.assertEqual(('v1.0', '1.0', '1.2'), (
            version['id'], version['min_version'], version['max_version']))
        error = self.error(self.put(report(), {
            'OpenStack-API-Version': 'resq 1.3'}), 406)
        self.assertIn('it serves 1.0 to 1.2', error['detail'])


# The servers' column (MEDIUMTEXT on MariaDB) on the other backends.
class MariaDBHostInstancesTest(HostInstancesTest):
    backend = 'mysql'


class PostgreSQLHostInstancesTest(HostInstancesTest):
    backend = 'postgresql'


class ReporterAgainstTheAPITest(test_api.APITestBase):
    """The agent's reporter, through the project's client, for real."""

    def setUp(self):
        super().setUp()
        self.now = 0.0
        self.usage = {}
        self.reporter = hostreport.HostReporter(
            self.api.client('service'), 'cmp-1',
            lambda topology: [cache_domain.CacheDomain(0, 20, cores=8)],
            interval=60, clock=lambda: self.now, version='test',
            usage=lambda: self.usage)
        self.server = str(uuid.uuid4())
        self.assignments = [layout.Assignment(self.server, 0, 3, 0, (2,))]

    def shown(self):
        return self.admin.get_host('cmp-1', microversion='1.1')

    def test_occupancy_reaches_the_report(self):
        self.assertTrue(self.reporter.after_apply(None, self.assignments))
        self.assertEqual([(self.server, 0, 3, None)], [
            (i['server_uuid'], i['domain'], i['ways'],
             i['llc_occupancy_bytes']) for i in self.shown()['instances']])
        self.usage = {self.server: {'llc_occupancy_bytes': 9 << 20,
                                    'mbm_total_bytes_per_s': 2e9}}
        # Readings alone go out with the periodic full report.
        self.now = 60.0 * hostreport.FULL_EVERY
        self.assertTrue(self.reporter.heartbeat())
        (inst,) = self.shown()['instances']
        self.assertEqual((9 << 20, 2e9), (inst['llc_occupancy_bytes'],
                                          inst['mbm_total_bytes_per_s']))

    def test_a_resq_api_serving_1_0_only_gets_the_domains(self):
        old = microversion_parse.Version(1, 0)
        with mock.patch.object(microversion, 'MAX_VERSION', old), \
                mock.patch.object(microversion, 'VERSIONS', ('1.0',)):
            self.assertRaises(resq_client.ResQAPIError,
                              self.shown)
            with self.assertLogs('resq_agent.hostreport', 'WARNING') as log:
                self.assertTrue(self.reporter.after_apply(
                    None, self.assignments))
            self.assertIn('406', log.output[0])
            rec = self.admin.get_host('cmp-1')
            self.assertEqual(3, rec['domains'][0]['ways_used'])
        # Upgraded: the heartbeat sends the servers.
        self.assertIsNone(self.shown()['instances'])
        self.now = 60.0
        self.assertTrue(self.reporter.heartbeat())
        self.assertEqual([self.server], [i['server_uuid'] for i in
                                         self.shown()['instances']])


class HostInstancesFuzzTest(test_api.APITestBase):
    """No 1.1 host report makes resq-api answer 500 (as test_fuzz)."""

    examples = 100

    def send(self, body):
        resp = self.raw('PUT', '/hosts/cmp-1', 'service',
                        data=json.dumps(body), headers=V1_1)
        self.assertLess(resp.status_code, 500, resp.text[:300])
        if resp.status_code >= 400:
            (error,) = resp.json()['errors']
            self.assertTrue(error['code'] and error['detail'])

    def valid(self):
        return report(server(0, 2, occupancy=1 << 20, rate=1.5),
                      server(1, 1, occupancy=0, rate=0))

    def test_every_integer_field(self):
        body = self.valid()
        for path in test_fuzz.leaves(body):
            value = test_fuzz._get(body, path)
            if not path or not isinstance(value, (int, float)) or \
                    isinstance(value, bool):
                continue
            for huge in test_fuzz.HUGE:
                self.send(test_fuzz.replaced(body, path, huge))

    def test_a_field_replaced(self):
        body = self.valid()

        @hypothesis.settings(max_examples=self.examples, deadline=None,
                             derandomize=True, database=None,
                             print_blob=False,
                             suppress_health_check=list(
                                 hypothesis.HealthCheck))
        @hypothesis.given(st.sampled_from(test_fuzz.leaves(body)),
                          test_fuzz.json_values)
        def check(path, value):
            self.send(test_fuzz.replaced(body, path, value))
        check()
