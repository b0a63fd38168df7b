"""The database keeps the rules: 100 clients at once, on each backend.

The API is served on a real socket with a thread per connection
(:class:`tests.fixtures.burst.ThreadedServer`), so a hundred requests
reach the database together, as they do under uwsgi's workers. Each
burst must end with no 5xx and with the rule kept: one plan proposed
(the newest), one applier per plan, one creation per new record with the
others told 409 (or 200 where a PUT replaces), and numbers stored as
sent.
"""

import uuid

import sqlalchemy as sa

from resq_nova.api.db import api as db_api
from resq_nova.api.db import models
from tests import base
from tests.fixtures import burst
from tests.fixtures import resq_api
from tests.functional.api import test_api

CLIENTS = 100


class DatabaseRulesTest(base.TestCase):
    backend = 'sqlite'

    def setUp(self):
        super().setUp()
        self.api = self.useFixture(resq_api.ResQAPI(self.backend,
                                                    self.skipTest))
        self.server = self.useFixture(burst.ThreadedServer(self.api.app))
        # The snapshot the plans name.
        self.api.client('service').create_snapshot('snap-1', {'hosts': []})

    def burst(self, requests_, persona='admin'):
        outcomes = burst.burst(self.server.endpoint,
                               self.api.tokens[persona], requests_)
        errors = [o for o in outcomes if o.status >= 500]
        self.assertEqual([], errors)
        return outcomes

    def plan_states(self):
        with db_api.get_engine().connect() as conn:
            return dict(conn.execute(
                sa.select(models.Plan.id, models.Plan.state)).all())

    def test_plans_newest_wins_and_one_applier(self):
        ids = ['plan-%03d' % n for n in range(CLIENTS)]
        outcomes = self.burst([('POST', '/plans', {
            'id': pid, 'snapshot_id': 'snap-1', 'plan': test_api.plan_doc(1)})
            for pid in ids], persona='service')
        self.assertEqual({201: CLIENTS}, burst.statuses(outcomes))
        states = self.plan_states()
        proposed = [p for p, s in states.items() if s == 'proposed']
        self.assertEqual(1, len(proposed), states)
        self.assertEqual({'superseded': CLIENTS - 1, 'proposed': 1},
                         burst.statuses_of(states.values()))
        # Every client claims a plan of the burst: only the proposed one
        # can be claimed, once.
        outcomes = self.burst([('POST', '/plans/%s/apply' % pid,
                                {'applier': 'a%d' % n})
                               for n, pid in enumerate(ids)])
        won = [ids[n] for n, o in enumerate(outcomes) if o.status == 202]
        self.assertEqual(proposed, won)
        self.assertEqual({202: 1, 409: CLIENTS - 1},
                         burst.statuses(outcomes))

    def test_one_plan_created_once_and_claimed_once(self):
        outcomes = self.burst([('POST', '/plans', {
            'id': 'solo', 'snapshot_id': 'snap-1',
            'plan': test_api.plan_doc(1)})] * CLIENTS, persona='service')
        self.assertEqual({201: 1, 409: CLIENTS - 1},
                         burst.statuses(outcomes))
        self.assertIn('plan solo already exists', [
            o.body['errors'][0]['detail'] for o in outcomes
            if o.status == 409][0])
        self.assertEqual({'solo': 'proposed'}, self.plan_states())
        outcomes = self.burst([('POST', '/plans/solo/apply',
                                {'applier': 'a%d' % n})
                               for n in range(CLIENTS)])
        self.assertEqual({202: 1, 409: CLIENTS - 1},
                         burst.statuses(outcomes))
        winner = [o.body['applier'] for o in outcomes if o.status == 202]
        self.assertEqual(winner, [self.api.client('admin').get_plan(
            'solo')['applier']])

    def test_profile_created_once(self):
        doc = test_api.profile_doc('fw-race')
        other = test_api.profile_doc('fw-race', **{'traffic.flows': 5000})
        # Half send the same document (200: uploading twice is harmless),
        # half another one (409: it exists).
        outcomes = self.burst([('PUT', '/profiles/fw-race',
                                {'profile': doc if n % 2 else other,
                                 'visibility': 'private'})
                               for n in range(CLIENTS)], persona='member_a')
        counts = burst.statuses(outcomes)
        self.assertEqual(1, counts.pop(201), counts)
        self.assertLessEqual(set(counts), {200, 409})
        for out in outcomes:
            if out.status == 409:
                self.assertIn('already exists',
                              out.body['errors'][0]['detail'])

    def test_host_and_isolation_created_once(self):
        report = {'domains': [], 'agent_version': '1'}
        outcomes = self.burst([('PUT', '/hosts/cn-race', report)] * CLIENTS,
                              persona='service')
        self.assertEqual({201: 1, 200: CLIENTS - 1},
                         burst.statuses(outcomes))
        server = str(uuid.uuid4())
        outcomes = self.burst([(
            'PUT', '/servers/%s/isolation' % server,
            {'status': 'ok', 'host': 'cn%d' % n})
            for n in range(CLIENTS)], persona='service')
        self.assertEqual({201: 1, 200: CLIENTS - 1},
                         burst.statuses(outcomes))

    def test_numbers_come_back_as_sent(self):
        client = self.api.client('member_a')
        client.put_profile(test_api.profile_doc('fw-1'))
        term = client.create_term({
            'name': 't', 'profile_id': 'fw-1', 'slo': 'reserved',
            'throughput_mpps': 12.3456789, 'latency_p95_us': 80.123456789,
            'packet_bytes': 64, 'flavors': [], 'servers': []})
        again = client.get_term(term['uuid'])
        self.assertEqual((12.3456789, 80.123456789),
                         (again['throughput_mpps'], again['latency_p95_us']))


class MariaDBDatabaseRulesTest(DatabaseRulesTest):
    backend = 'mysql'


class PostgreSQLDatabaseRulesTest(DatabaseRulesTest):
    backend = 'postgresql'
