"""The host heartbeat (microversion 1.2) and the cheap full report.

Through the real API (keystonemiddleware) and database, on SQLite,
MariaDB and PostgreSQL: ``PUT /hosts/{hostname}/heartbeat`` sets only
``updated_at``; an unknown host is 404 ``resq.host.not_found``; before
1.2 the path is not served; the project's client and the agent's
reporter use it, and fall back to full reports on a resq-api older
than 1.2.
"""

import datetime
from unittest import mock

import microversion_parse
import sqlalchemy as sa

from resq_agent import hostreport
from resq_agent import layout
from resq_common import cache_domain
from resq_common.clients import resq as resq_client
from resq_nova.api.db import api as db_api
from resq_nova.api.db import models
from resq_nova.api import microversion
from tests.functional.api import test_api
from tests.functional.api import test_host_instances

V1_1 = {'OpenStack-API-Version': 'resq 1.1'}
V1_2 = {'OpenStack-API-Version': 'resq 1.2'}
LONG_AGO = datetime.datetime(2020, 1, 1)


class HeartbeatTest(test_api.APITestBase):

    def put(self, host='cmp-1', body=None, headers=V1_1):
        body = body or test_host_instances.report(
            test_host_instances.server(occupancy=5))
        return self.raw('PUT', '/hosts/%s' % host, 'service', body=body,
                        headers=headers)

    def beat(self, host='cmp-1', headers=V1_2, persona='service'):
        return self.raw('PUT', '/hosts/%s/heartbeat' % host, persona,
                        headers=headers)

    def row(self, host='cmp-1'):
        with db_api.get_engine().connect() as conn:
            return conn.execute(sa.select(models.Host).where(
                models.Host.hostname == host)).one()

    def age(self, host='cmp-1'):
        with db_api.get_engine().begin() as conn:
            conn.execute(sa.update(models.Host).where(
                models.Host.hostname == host).values(updated_at=LONG_AGO))

    def error(self, resp, status):
        self.assertEqual(status, resp.status_code, resp.text)
        (error,) = resp.json()['errors']
        return error

    def test_sets_updated_at_and_nothing_else(self):
        self.assertEqual(201, self.put().status_code)
        self.age()
        before = self.row()
        resp = self.beat()
        self.assertEqual(204, resp.status_code, resp.text)
        self.assertEqual(b'', resp.content)
        self.assertEqual('resq 1.2', resp.headers['OpenStack-API-Version'])
        after = self.row()
        self.assertEqual((before.report, before.instances),
                         (after.report, after.instances))
        self.assertGreater(after.updated_at, LONG_AGO)
        shown = self.admin.get_host('cmp-1', microversion='1.1')
        self.assertEqual(5, shown['instances'][0]['llc_occupancy_bytes'])
        self.assertFalse(shown['updated_at'].startswith('2020'))

    def test_an_unknown_host_is_404_host_not_found(self):
        error = self.error(self.beat('cmp-never'), 404)
        self.assertEqual('resq.host.not_found', error['code'])
        self.assertIn('send the full report (PUT /hosts/cmp-never)',
                      error['detail'])
        # No row was made.
        self.assertEqual([], self.admin.list_hosts())

    def test_not_served_before_1_2(self):
        self.assertEqual(201, self.put().status_code)
        for headers in (V1_1, {}):
            error = self.error(self.beat(headers=headers), 404)
            self.assertEqual('resq.no_route', error['code'])
            self.assertIn('microversion 1.2', error['detail'])
        # Only PUT.
        resp = self.raw('GET', '/hosts/cmp-1/heartbeat', headers=V1_2)
        self.assertEqual(405, resp.status_code, resp.text)

    def test_only_whom_reports_hosts(self):
        self.assertEqual(201, self.put().status_code)
        error = self.error(self.beat(persona='member_a'), 403)
        self.assertIn('resq:hosts:report', error['detail'])
        self.assertEqual(204, self.beat(persona='admin').status_code)

    def test_a_bad_hostname_is_400(self):
        error = self.error(self.beat('bad host'), 400)
        self.assertEqual('resq.path.invalid', error['code'])

    def test_full_report_created_then_replaced_same_or_not(self):
        body = test_host_instances.report()
        self.assertEqual(201, self.put(body=body).status_code)
        # The same document again within the same second: the UPDATE
        # changes nothing, and is still a replacement (200).
        resp = self.put(body=body)
        self.assertEqual(200, resp.status_code, resp.text)
        self.assertEqual(body['domains'], resp.json()['domains'])
        body['agent_version'] = '3.0'
        resp = self.put(body=body)
        self.assertEqual(200, resp.status_code, resp.text)
        shown = self.admin.get_host('cmp-1', microversion='1.1')
        self.assertEqual('3.0', shown['agent_version'])
        self.assertIsNone(shown['instances'])
        self.assertEqual(resp.json()['updated_at'], shown['updated_at'])

    def test_the_client(self):
        client = self.api.client('service')
        self.assertRaises(resq_client.HostNotReported,
                          client.heartbeat_host, 'cmp-1')
        client.report_host('cmp-1', test_host_instances.report())
        self.age()
        self.assertIsNone(client.heartbeat_host('cmp-1'))
        self.assertGreater(self.row().updated_at, LONG_AGO)

    def test_the_client_facing_a_resq_api_older_than_1_2(self):
        client = self.api.client('service')
        client.report_host('cmp-1', test_host_instances.report())
        old = microversion_parse.Version(1, 1)
        with mock.patch.object(microversion, 'MAX_VERSION', old), \
                mock.patch.object(microversion, 'VERSIONS', ('1.0', '1.1')):
            exc = self.assertRaises(resq_client.ResQAPIError,
                                    client.heartbeat_host, 'cmp-1')
        self.assertEqual(406, exc.status)
        self.assertNotIsInstance(exc, resq_client.HostNotReported)


class MariaDBHeartbeatTest(HeartbeatTest):
    backend = 'mysql'


class PostgreSQLHeartbeatTest(HeartbeatTest):
    backend = 'postgresql'


class ReporterHeartbeatTest(test_api.APITestBase):
    """The agent's reporter sends heartbeats to the real API."""

    def setUp(self):
        super().setUp()
        self.now = 0.0
        self.reporter = hostreport.HostReporter(
            self.api.client('service'), 'cmp-1',
            lambda topology: [cache_domain.CacheDomain(0, 20, cores=8)],
            interval=60, clock=lambda: self.now, version='test')
        self.assignments = [layout.Assignment(
            '0a0a0a0a-0000-4000-8000-00000000000a', 0, 3, 0, (2,))]

    def updated(self):
        with db_api.get_engine().connect() as conn:
            return conn.execute(sa.select(models.Host.updated_at)).scalar()

    def test_heartbeats_then_a_full_report_when_the_row_is_gone(self):
        self.assertTrue(self.reporter.after_apply(None, self.assignments))
        with db_api.get_engine().begin() as conn:
            conn.execute(sa.update(models.Host).values(updated_at=LONG_AGO))
        self.now = 60.0
        self.assertTrue(self.reporter.heartbeat())
        self.assertGreater(self.updated(), LONG_AGO)
        # resq-api's database lost the host: the next one is the report.
        with db_api.get_engine().begin() as conn:
            conn.execute(sa.delete(models.Host))
        self.now = 120.0
        self.assertTrue(self.reporter.heartbeat())
        shown = self.admin.get_host('cmp-1', microversion='1.1')
        self.assertEqual(3, shown['instances'][0]['ways'])

    def test_an_older_resq_api_gets_full_reports(self):
        self.assertTrue(self.reporter.after_apply(None, self.assignments))
        old = microversion_parse.Version(1, 1)
        with mock.patch.object(microversion, 'MAX_VERSION', old), \
                mock.patch.object(microversion, 'VERSIONS', ('1.0', '1.1')):
            with db_api.get_engine().begin() as conn:
                conn.execute(sa.update(models.Host).values(
                    updated_at=LONG_AGO))
            self.now = 60.0
            with self.assertLogs('resq_agent.hostreport', 'INFO') as logs:
                self.assertTrue(self.reporter.heartbeat())
            self.assertIn('older than microversion 1.2', logs.output[0])
            self.assertGreater(self.updated(), LONG_AGO)


class MariaDBReporterHeartbeatTest(ReporterHeartbeatTest):
    backend = 'mysql'
