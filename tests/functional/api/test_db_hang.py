"""resq-api in front of a database that hangs: 503 within its read timeout.

A real ``resq-api`` process on a real MariaDB and PostgreSQL database of
its own, reached through :class:`tests.fixtures.db_proxy.Relay`. It serves
a first request, then the relay hangs (connections held, new ones
accepted, nothing answered): each request is answered 503 with
``Retry-After`` within about ``[api] database_read_timeout``, counted over
the request's waits together -- the checkout ping of the pooled
connection times out, and the new connection ``pool_pre_ping`` makes in
the same request does not wait a second full timeout -- on PostgreSQL
too, where libpq has no read timeout of its own (resq-api's psycopg2
wait callback bounds it). Once the relay forwards again, requests are
served again.

A process of its own: this test process runs on eventlet, whose psycopg2
wait callback it would share.
"""

import os
import sys
import time

import requests

from tests import base
from tests.fixtures import database
from tests.fixtures import db_proxy
from tests.fixtures import http_process

BIN = os.path.dirname(sys.executable)
PORTS = {'mysql': 3306, 'postgresql': 5432}
# [api] database_read_timeout of the tests: small, so they are quick.
READ_S = 2
# A host's report, resq-agent's write (noauth2: a "service" caller).
REPORT = {'domains': [{'id': 0, 'ways_total': 20, 'ways_used': 6,
                       'clos_total': 16, 'clos_used': 3}],
          'agent_version': '1.0'}
SERVICE = 'agent:p-service:service'
# A generous bound (a loaded machine, CI beside): the 503 comes after
# about READ_S.
BOUND_S = 3 * READ_S


class DatabaseHangTest(base.TestCase):

    def serve(self, backend, read_s=READ_S):
        db = self.useFixture(database.Migrated(backend, self.skipTest))
        self.relay = db_proxy.Relay(PORTS[backend])
        self.addCleanup(self.relay.close)
        url = db.url.replace(':%d/' % PORTS[backend],
                             ':%d/' % self.relay.port)
        path = os.path.join(self.tmp, 'resq-api.conf')
        with open(path, 'w') as f:
            f.write('[api]\nauth_strategy = noauth2\n'
                    'database_read_timeout = %d\n'
                    'database_connect_timeout = %d\n'
                    '[database]\nconnection = %s\n' % (read_s, read_s, url))
        port = http_process.free_port()
        self.url = http_process.serve(
            self, [os.path.join(BIN, 'resq-api'), '--config-file', path,
                   '--port', str(port)], 'http://127.0.0.1:%d' % port,
            os.path.join(self.tmp, 'resq-api-%s.log' % backend),
            'resq-api-log-%s' % backend,
            'resq-api did not answer within 120 s')
        # Served before the database hangs: a pooled connection.
        self.assertEqual(200, self.get().status_code)

    def get(self, method='GET', path='/profiles', body=None,
            token='admin'):
        return requests.request(
            method, self.url + path, json=body, timeout=120,
            headers={'X-Auth-Token': token})

    def report(self):
        return self.get('PUT', '/hosts/cmp-1', REPORT, SERVICE)

    def assert_503_within(self, bound, method='GET', path='/profiles',
                          body=None, token='admin'):
        started = time.monotonic()
        resp = self.get(method, path, body, token)
        took = time.monotonic() - started
        self.assertEqual(503, resp.status_code, resp.text)
        self.assertEqual('10', resp.headers['Retry-After'])
        self.assertEqual('resq.database_unavailable',
                         resp.json()['errors'][0]['code'])
        self.assertLess(took, bound)
        return took

    def hang_then_forward(self, backend):
        self.serve(backend)
        self.relay.hang()
        # The pooled connection's ping, then a new connection's handshake
        # (the next request's): each request within the bound.
        self.assert_503_within(BOUND_S)
        self.assert_503_within(BOUND_S)
        self.assert_503_within(BOUND_S, 'PUT', '/hosts/cmp-1', REPORT,
                               SERVICE)
        self.relay.forward()
        resp = self.get()
        self.assertEqual(200, resp.status_code, resp.text)
        resp = self.report()
        self.assertLess(resp.status_code, 300, resp.text)
        self.assertEqual(20, self.get('GET', '/hosts/cmp-1').json()[
            'domains'][0]['ways_total'])
        # A stopped database, then back: the same.
        self.relay.refuse()
        self.assert_503_within(BOUND_S)
        self.relay.forward()
        self.assertEqual(200, self.get().status_code)

    def test_mariadb_hang_is_a_503_within_the_read_timeout(self):
        self.hang_then_forward('mysql')

    def test_postgresql_hang_is_a_503_within_the_read_timeout(self):
        self.hang_then_forward('postgresql')

    def test_a_reconnection_shares_the_requests_timeout(self):
        # MariaDB's pooled connection times out on its checkout ping and
        # SQLAlchemy connects again in the same request: that handshake
        # waits only what the request has left, not another full
        # timeout (it waited 2 x 4 s).
        for backend in ('mysql', 'postgresql'):
            self.serve(backend, read_s=4)
            self.relay.hang()
            self.assert_503_within(7)
