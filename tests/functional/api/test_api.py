"""resq-api end to end: real auth_token, real policy, a real database.

Driven through the project's own client and raw requests, as the
commands and the agents reach it.
"""

import concurrent.futures
import json
import uuid

import requests

from resq_common.clients import resq as resq_client
from tests import base
from tests.fixtures import resq_api
from tests.unit.resq_profiler import test_profile


def profile_doc(pid='fw-1', **changes):
    doc = test_profile.make_doc(**changes)
    doc['id'] = pid
    return doc


def plan_doc(n=2):
    return {'moves': [{'uuid': str(uuid.uuid4()), 'name': 'vm%d' % i,
                       'from_host': 'h%d' % i, 'to_host': 'h0'}
                      for i in range(1, n + 1)],
            'proposed': True, 'reason': 'frees hosts'}


class APITestBase(base.TestCase):
    backend = 'sqlite'
    max_limit = None     # [api] max_limit, when not its default

    def setUp(self):
        super().setUp()
        self.api = self.useFixture(resq_api.ResQAPI(
            self.backend, self.skipTest, max_limit=self.max_limit))
        self.admin = self.api.client('admin')
        self.member_a = self.api.client('member_a')
        self.member_b = self.api.client('member_b')
        self.reader_a = self.api.client('reader_a')
        self.service = self.api.client('service')

    def raw(self, method, path, persona='admin', body=None, data=None,
            headers=None):
        hdrs = {'X-Auth-Token': self.api.tokens[persona],
                'Content-Type': 'application/json'}
        hdrs.update(headers or {})
        if body is not None:
            data = json.dumps(body)
        return requests.request(method, self.api.endpoint + path,
                                data=data, headers=hdrs, timeout=30)

    def term(self, client, profile='fw-1', **values):
        body = dict({'name': 'fw-term', 'profile_id': profile,
                     'slo': 'reserved', 'throughput_mpps': 2.0,
                     'latency_p95_us': 80.0, 'packet_bytes': 64,
                     'flavors': ['resq-fw-1'], 'servers': []}, **values)
        return client.create_term(body)


class VersionsTest(APITestBase):

    def test_versions_document_needs_no_token(self):
        resp = requests.get(self.api.endpoint + '/', timeout=30)
        self.assertEqual(200, resp.status_code)
        version = resp.json()['versions'][0]
        self.assertEqual(('1.0', '1.2', 'CURRENT'),
                         (version['min_version'], version['max_version'],
                          version['status']))

    def test_other_paths_need_a_token(self):
        resp = requests.get(self.api.endpoint + '/profiles', timeout=30)
        self.assertEqual(401, resp.status_code)

    def test_microversions(self):
        resp = self.raw('GET', '/profiles',
                        headers={'OpenStack-API-Version': 'resq 1.0'})
        self.assertEqual('resq 1.0', resp.headers['OpenStack-API-Version'])
        self.assertIn('OpenStack-API-Version', resp.headers['Vary'])
        resp = self.raw('GET', '/profiles',
                        headers={'OpenStack-API-Version': 'resq 2.5'})
        self.assertEqual(406, resp.status_code)
        error = resp.json()['errors'][0]
        self.assertEqual('resq.microversion.unsupported', error['code'])
        self.assertIn('it serves 1.0 to 1.2', error['detail'])
        resp = self.raw('GET', '/profiles',
                        headers={'OpenStack-API-Version': 'resq one'})
        self.assertEqual(400, resp.status_code)

    def test_unknown_path_and_method(self):
        resp = self.raw('GET', '/flavors')
        self.assertEqual(404, resp.status_code)
        self.assertIn('not a resource of resq-api',
                      resp.json()['errors'][0]['detail'])
        resp = self.raw('DELETE', '/plans')
        self.assertEqual(405, resp.status_code)
        self.assertEqual('GET, POST', resp.headers['Allow'])


class ProfileTest(APITestBase):

    def test_upload_list_show_etag_delete(self):
        rec = self.member_a.put_profile(profile_doc())
        self.assertEqual((0, 'private', 'p-a'), (
            rec['generation'], rec['visibility'], rec['project_id']))
        # The same document again changes nothing.
        self.assertEqual(0, self.member_a.put_profile(profile_doc())[
            'generation'])
        # Private: project B does not see it.
        self.assertEqual(['fw-1'], [p['id'] for p in
                                    self.member_a.list_profiles()])
        self.assertEqual([], self.member_b.list_profiles())
        self.assertRaises(resq_client.NotFound,
                          self.member_b.get_profile_record, 'fw-1')
        resp = self.raw('GET', '/profiles/fw-1', 'member_a')
        tag = resp.headers['ETag']
        resp = self.raw('GET', '/profiles/fw-1', 'member_a',
                        headers={'If-None-Match': tag})
        self.assertEqual(304, resp.status_code)
        self.member_a.delete_profile('fw-1')
        self.assertEqual([], self.admin.list_profiles())

    def test_cached_documents_follow_changes(self):
        client = self.api.client('member_a', cache_seconds=0)
        self.admin.put_profile(profile_doc('pub-1'), visibility='public')
        self.assertEqual(['pub-1'], sorted(client.profile_documents()))
        # Unchanged: revalidated with a 304, same documents.
        self.assertEqual(['pub-1'], sorted(client.profile_documents()))
        self.member_a.put_profile(profile_doc('own-1'))
        self.assertEqual(['own-1', 'pub-1'],
                         sorted(client.profile_documents()))

    def test_replace_needs_the_current_generation(self):
        self.member_a.put_profile(profile_doc())
        changed = profile_doc()
        changed['measurement']['note'] = 'another run'
        exc = self.assertRaises(resq_client.Conflict,
                                self.member_a.put_profile, changed)
        self.assertIn('send its generation to replace it', str(exc))
        rec = self.member_a.put_profile(profile_doc(), generation=0)
        self.assertEqual(0, rec['generation'])
        doc = profile_doc()
        doc['measurement']['note'] = 'remeasured'
        self.assertEqual(1, self.member_a.put_profile(
            doc, generation=0)['generation'])
        exc = self.assertRaises(resq_client.Conflict,
                                self.member_a.put_profile, doc,
                                generation=0)
        self.assertIn('changed since you read it', str(exc))

    def test_only_admin_publishes(self):
        exc = self.assertRaises(resq_client.Forbidden,
                                self.member_a.put_profile, profile_doc(),
                                visibility='public')
        self.assertIn('resq:profiles:create_public', str(exc))
        self.assertRaises(resq_client.Forbidden, self.reader_a.put_profile,
                          profile_doc())
        self.assertEqual([], self.admin.list_profiles())

    def test_bad_documents_change_nothing(self):
        text = json.dumps({'profile': profile_doc()}).replace(
            '"llc_ways": 20', '"llc_ways": NaN')
        self.assertIn('NaN', text)
        resp = self.raw('PUT', '/profiles/fw-1', 'member_a', data=text)
        self.assertEqual(400, resp.status_code)
        self.assertIn('not a finite number',
                      resp.json()['errors'][0]['detail'])
        resp = self.raw('PUT', '/profiles/fw-1', 'member_a', data=text.replace(
            'NaN', 'Infinity'))
        self.assertEqual(400, resp.status_code)
        resp = self.raw('PUT', '/profiles/fw-1', 'member_a',
                        body={'profile': profile_doc(), 'colour': 'red'})
        self.assertEqual(400, resp.status_code)
        self.assertIn("'colour' was unexpected",
                      resp.json()['errors'][0]['detail'])
        bad = profile_doc()
        del bad['latency']
        resp = self.raw('PUT', '/profiles/fw-1', 'member_a',
                        body={'profile': bad})
        self.assertEqual(400, resp.status_code)
        self.assertIn('latency', resp.json()['errors'][0]['detail'])
        resp = self.raw('PUT', '/profiles/other', 'member_a',
                        body={'profile': profile_doc()})
        self.assertEqual(400, resp.status_code)
        self.assertIn('PUT it to /profiles/fw-1',
                      resp.json()['errors'][0]['detail'])
        self.assertEqual([], self.admin.list_profiles())

    def test_body_over_the_cap_is_413(self):
        doc = profile_doc()
        doc['measurement']['padding'] = 'x' * (2 * 1024 * 1024)
        resp = self.raw('PUT', '/profiles/fw-1', 'member_a',
                        body={'profile': doc})
        self.assertEqual(413, resp.status_code)
        self.assertIn('max_request_body_size',
                      resp.json()['errors'][0]['detail'])
        self.assertEqual([], self.admin.list_profiles())

    def test_profile_in_use_is_not_deleted(self):
        self.member_a.put_profile(profile_doc())
        term = self.term(self.member_a)
        exc = self.assertRaises(resq_client.Conflict,
                                self.member_a.delete_profile, 'fw-1')
        self.assertIn(term['uuid'], str(exc))
        self.assertIn('release them', str(exc))
        self.member_a.update_term(term['uuid'], term['generation'],
                                  status='released')
        self.member_a.delete_profile('fw-1')


class SloTermTest(APITestBase):

    def setUp(self):
        super().setUp()
        self.admin.put_profile(profile_doc('pub'), visibility='public')
        self.member_a.put_profile(profile_doc('own-a'))

    def test_projects_see_their_own_terms(self):
        a = self.term(self.member_a, 'pub')
        b = self.term(self.member_b, 'pub', name='b-term')
        self.assertEqual('p-a', a['project_id'])
        self.assertEqual([a['uuid']], [t['uuid'] for t in
                                       self.member_a.list_terms()])
        self.assertEqual([b['uuid']], [t['uuid'] for t in
                                       self.member_b.list_terms()])
        # Another project's term does not exist for B.
        self.assertRaises(resq_client.NotFound, self.member_b.get_term,
                          a['uuid'])
        self.assertRaises(resq_client.NotFound, self.member_b.delete_term,
                          a['uuid'])
        self.assertRaises(resq_client.Forbidden, self.member_b.list_terms,
                          all_projects='true')
        self.assertEqual({a['uuid'], b['uuid']}, {
            t['uuid'] for t in self.admin.list_terms(all_projects='true')})
        # A reader of A reads but does not create.
        self.assertEqual(a['uuid'], self.reader_a.get_term(a['uuid'])['uuid'])
        self.assertRaises(resq_client.Forbidden, self.term, self.reader_a,
                          'pub')

    def test_term_naming_another_projects_profile(self):
        exc = self.assertRaises(resq_client.ResQAPIError, self.term,
                                self.member_b, 'own-a')
        self.assertEqual(400, exc.status)
        self.assertIn('profile own-a is neither public nor of project p-b',
                      str(exc))
        self.assertEqual([], self.admin.list_terms(all_projects='true'))

    def test_stale_generation_and_pages(self):
        term = self.term(self.member_a, 'own-a')
        self.service.update_term(term['uuid'], 0, status='admitted')
        exc = self.assertRaises(resq_client.Conflict,
                                self.member_a.update_term, term['uuid'], 0,
                                status='released')
        self.assertIn('changed since you read it', str(exc))
        self.assertEqual('admitted',
                         self.member_a.get_term(term['uuid'])['status'])
        for n in range(4):
            self.term(self.member_a, 'own-a', name='t%d' % n)
        # Five terms in pages of two, newest first, each exactly once.
        seen = self.member_a.list_terms(limit=2)
        self.assertEqual(5, len(seen))
        self.assertEqual(5, len({t['uuid'] for t in seen}))


class PlanTest(APITestBase):

    def test_lifecycle_and_one_applier(self):
        self.service.create_snapshot('snap-1', {'hosts': []})
        old = self.service.create_plan('plan-1', 'snap-1', plan_doc())
        new = self.service.create_plan('plan-2', 'snap-1', plan_doc(3))
        self.assertEqual('superseded', self.admin.get_plan(
            old['id'])['state'])
        self.assertEqual(['pending'] * 3,
                         [a['state'] for a in new['actions']])
        # Applying is admin only: not the service user, not a member.
        self.assertRaises(resq_client.Forbidden, self.service.apply_plan,
                          'plan-2', 'svc')
        self.assertRaises(resq_client.Forbidden, self.member_a.get_plan,
                          'plan-2')
        # Two racing applies: one 202, one 409.
        appliers = [self.api.client('admin') for _ in range(2)]
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            outcomes = list(pool.map(
                lambda c: _try(c.apply_plan, 'plan-2', 'h:%d' % id(c)),
                appliers))
        self.assertEqual(['Conflict', 'ok'], sorted(outcomes))
        exc = self.assertRaises(resq_client.Conflict, self.admin.apply_plan,
                                'plan-2', 'late')
        self.assertIn('is applying by', str(exc))
        self.admin.set_action_state('plan-2', 0, 'ongoing')
        self.admin.set_action_state('plan-2', 0, 'succeeded', 'on h0')
        exc = self.assertRaises(resq_client.Conflict,
                                self.admin.set_action_state, 'plan-2', 0,
                                'failed')
        self.assertIn('none, it is finished', str(exc))
        self.admin.cancel_plan('plan-2')
        rec = self.admin.get_plan('plan-2')
        self.assertEqual('cancelled', rec['state'])
        self.assertEqual(['succeeded', 'cancelled', 'cancelled'],
                         [a['state'] for a in rec['actions']])
        self.assertRaises(resq_client.Conflict, self.admin.apply_plan,
                          'plan-2', 'again')

    def test_missing_plan(self):
        exc = self.assertRaises(resq_client.NotFound, self.admin.apply_plan,
                                'no-such-plan', 'x')
        self.assertIn('no plan no-such-plan', str(exc))


class IsolationAndHostTest(APITestBase):

    def test_only_admin_and_service_write_isolation(self):
        server = str(uuid.uuid4())
        self.assertRaises(resq_client.Forbidden, self.member_a.set_isolation,
                          server, 'misplaced', 'h1', 'tenant says so')
        self.service.set_isolation(server, 'misplaced', 'h1',
                                   'ways in domain 1, cores in 0')
        self.assertEqual([server], [i['server_uuid'] for i in
                                    self.service.list_isolation(
                                        status='misplaced')])
        self.assertRaises(resq_client.Forbidden, self.member_a.list_isolation)
        self.service.set_isolation(server, 'ok', 'h1')
        self.assertEqual([], self.service.list_isolation(status='misplaced'))

    def test_host_reports(self):
        report = {'domains': [{'id': 0, 'ways_total': 20, 'ways_used': 6,
                               'clos_total': 16, 'clos_used': 3}],
                  'agent_version': '1.0'}
        self.service.report_host('cmp-1', report)
        self.assertEqual(20, self.admin.get_host('cmp-1')['domains'][0][
            'ways_total'])
        resp = self.raw('PUT', '/hosts/cmp-2', 'service',
                        body={'domains': [{'id': 0, 'ways_total': -1,
                                           'ways_used': 0}]})
        self.assertEqual(400, resp.status_code)
        self.assertEqual(['cmp-1'], [h['hostname'] for h in
                                     self.admin.list_hosts()])


def _try(func, *args):
    try:
        func(*args)
        return 'ok'
    except resq_client.ResQAPIError as exc:
        return type(exc).__name__


# The parts that depend on the database's behaviour (generations, the
# one-winner claim, pages, JSON documents) again on MariaDB and PostgreSQL.
class MariaDBProfileTest(ProfileTest):
    backend = 'mysql'


class MariaDBSloTermTest(SloTermTest):
    backend = 'mysql'


class MariaDBPlanTest(PlanTest):
    backend = 'mysql'


class PostgreSQLProfileTest(ProfileTest):
    backend = 'postgresql'


class PostgreSQLSloTermTest(SloTermTest):
    backend = 'postgresql'


class PostgreSQLPlanTest(PlanTest):
    backend = 'postgresql'
