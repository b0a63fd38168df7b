#    Licensed under the Apache License, Version 2.0 (the "License"); you may
#    not use this file except in compliance with the License. You may obtain
#    a copy of the License at
#
#         http://www.apache.org/licenses/LICENSE-2.0
#
#    Unless required by applicable law or agreed to in writing, software
#    distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
#    WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
#    License for the specific language governing permissions and limitations
#    under the License.
"""Bad input answers 4xx, never 500 (issue 30, item 4).

Each case of the review once answered 500: a deeply nested body, a path
id of 300 characters, ``generation`` 2**40 on PostgreSQL, NUL in a path.
Placement's conventions besides: 406 for an ``Accept`` that excludes
JSON, 415 for a body that is not JSON, ``Location`` on 201.
"""

import uuid

from tests.functional.api import test_api


class BadInputTest(test_api.APITestBase):

    def assertError(self, status, resp, code=None):
        self.assertEqual(status, resp.status_code, resp.text)
        self.assertEqual('application/json',
                         resp.headers['Content-Type'].split(';')[0])
        error = resp.json()['errors'][0]
        self.assertEqual(status, error['status'])
        if code is not None:
            self.assertEqual(code, error['code'])
        return error

    def _term(self):
        self.admin.put_profile(test_api.profile_doc('pub'),
                               visibility='public')
        return self.term(self.member_a, 'pub')

    def test_deeply_nested_body(self):
        data = '{"profile": %s1%s}' % ('[' * 100000, ']' * 100000)
        error = self.assertError(400, self.raw('PUT', '/profiles/fw-1',
                                               data=data),
                                 'resq.body.invalid_json')
        self.assertIn('nested', error['detail'])

    def test_long_path_ids(self):
        long_id = 'a' * 300
        for path in ('/profiles/%s', '/snapshots/%s', '/plans/%s',
                     '/plans/%s/result', '/hosts/%s', '/slo_terms/%s',
                     '/servers/%s/isolation'):
            error = self.assertError(400, self.raw('GET', path % long_id)
                                     if not path.endswith('result') else
                                     self.raw('PUT', path % long_id,
                                              body={'state': 'applied'}),
                                     'resq.path.invalid')
            self.assertIn('characters', error['detail'])

    def test_uuid_path_ids(self):
        error = self.assertError(400, self.raw('GET', '/slo_terms/not-one'),
                                 'resq.path.invalid')
        self.assertIn('is not a UUID', error['detail'])
        self.assertError(404, self.raw('GET', '/slo_terms/%s' % uuid.uuid4()))

    def test_nul_and_control_characters_in_paths(self):
        for path in ('/profiles/fw%00-1', '/hosts/cmp%0A1', '/plans/%00',
                     '/no%00where', '/slo_terms/%7F'):
            error = self.assertError(400, self.raw('GET', path),
                                     'resq.path.invalid')
            self.assertIn('control character', error['detail'])

    def test_path_that_is_not_utf8(self):
        self.assertError(400, self.raw('GET', '/profiles/%FF%FE'),
                         'resq.path.invalid')

    def test_huge_generation(self):
        term = self._term()
        for generation in (2 ** 40, 2 ** 31, -1, 10 ** 30):
            self.assertError(400, self.raw(
                'PATCH', '/slo_terms/%s' % term['uuid'], 'member_a',
                body={'generation': generation, 'status': 'degraded'}),
                'resq.body.invalid')
        body = {'profile': test_api.profile_doc('pub'),
                'visibility': 'public', 'generation': 2 ** 40}
        self.assertError(400, self.raw('PUT', '/profiles/pub', body=body))

    def test_strings_the_database_cannot_hold(self):
        doc = test_api.profile_doc('fw-2')
        doc['nf']['name'] = 'n' * 300
        self.assertError(400, self.raw('PUT', '/profiles/fw-2',
                                       body={'profile': doc}))
        plan = test_api.plan_doc(1)
        plan['moves'][0]['name'] = 'v' * 256
        self.assertError(400, self.raw('POST', '/plans', 'service', body={
            'id': 'plan-1', 'plan': plan}), 'resq.body.invalid')
        server = str(uuid.uuid4())
        for data in ('{"status": "ok", "host": "h\\u0000"}',
                     '{"status": "ok", "host": "h\\ud800"}'):
            self.assertError(400, self.raw(
                'PUT', '/servers/%s/isolation' % server, data=data))
        self.assertError(400, self.raw('GET', '/isolation?host=h%00'),
                         'resq.query.invalid')
        self.assertError(400, self.raw('GET', '/isolation?host=%FF'),
                         'resq.query.invalid')

    def test_body_that_is_not_json_is_415(self):
        error = self.assertError(415, self.raw(
            'PUT', '/hosts/cmp-1', 'service', data='domains=1',
            headers={'Content-Type': 'application/x-www-form-urlencoded'}),
            'resq.content_type')
        self.assertIn('application/json', error['detail'])
        self.assertError(415, self.raw(
            'POST', '/snapshots', 'service', data='{}',
            headers={'Content-Type': 'text/plain'}))
        # A POST without a body needs no content type.
        self.assertError(404, self.raw(
            'POST', '/plans/no-plan/cancel', headers={'Content-Type': ''}))

    def test_accept_without_json_is_406(self):
        error = self.assertError(406, self.raw(
            'GET', '/profiles', headers={'Accept': 'text/html'}),
            'resq.not_acceptable')
        self.assertIn('application/json', error['detail'])
        for accept in ('*/*', 'application/*', 'application/json',
                       'text/html, application/json;q=0.1'):
            resp = self.raw('GET', '/profiles', headers={'Accept': accept})
            self.assertEqual(200, resp.status_code)

    def test_location_on_201(self):
        resp = self.raw('PUT', '/profiles/fw-1', 'member_a',
                        body={'profile': test_api.profile_doc()})
        self.assertEqual(201, resp.status_code)
        self.assertEqual(self.api.endpoint + '/profiles/fw-1',
                         resp.headers['Location'])
        resp = self.raw('POST', '/snapshots', 'service',
                        body={'id': 'snap-1', 'snapshot': {'hosts': []}})
        self.assertEqual(self.api.endpoint + '/snapshots/snap-1',
                         resp.headers['Location'])
        term = self.raw('POST', '/slo_terms', 'member_a', body={
            'name': 't', 'profile_id': 'fw-1', 'slo': 'reserved',
            'throughput_mpps': 1.0})
        self.assertEqual(201, term.status_code)
        self.assertEqual(self.api.endpoint + '/slo_terms/%s'
                         % term.json()['uuid'], term.headers['Location'])


class MariaDBBadInputTest(BadInputTest):
    backend = 'mysql'


class PostgreSQLBadInputTest(BadInputTest):
    backend = 'postgresql'
