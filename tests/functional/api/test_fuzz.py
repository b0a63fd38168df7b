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
"""Property-based tests: no input makes resq-api answer 500.

Every route of ``resq_nova.api.handler.ROUTE_DECLARATIONS`` gets
generated path ids (any text, NUL, very long, bytes that are not UTF-8),
valid bodies with one field replaced (huge and negative integers, odd
types), arbitrary and deeply nested JSON, query strings and headers. The
answer is never 5xx, and every error is the OpenStack error document.
Derandomized, so a run is the same on every machine; fewer examples on
MariaDB and PostgreSQL.
"""

import json
import re
from urllib import parse
import uuid

import hypothesis
from hypothesis import strategies as st
import requests

from resq_nova.api import handler
from tests.functional.api import test_api

ROUTES = sorted((path, method)
                for path, methods in handler.ROUTE_DECLARATIONS.items()
                for method in methods)
VARIABLE = re.compile(r'\{(\w+)\}')
HUGE = [2 ** 31 - 1, 2 ** 31, 2 ** 40, 2 ** 63, -2 ** 63 - 1, 10 ** 30, -1,
        0, 10 ** 400]
ASCII = st.characters(min_codepoint=0x20, max_codepoint=0x7e)

segments = st.one_of(
    st.text(max_size=40),
    st.text(alphabet=ASCII, min_size=100, max_size=400),
    st.text(max_size=8).map(lambda t: t + '\x00'),
    st.binary(max_size=40),
)
scalars = st.one_of(st.none(), st.booleans(), st.integers(),
                    st.sampled_from(HUGE),
                    st.floats(allow_nan=False, allow_infinity=False),
                    st.text(max_size=300))
json_values = st.recursive(
    scalars, lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.text(max_size=10), inner, max_size=4)),
    max_leaves=20)
raw_bodies = st.one_of(
    st.integers(33, 3000).map(lambda n: '[' * n + ']' * n),
    st.integers(33, 3000).map(lambda n: '{"a":' * n + '1' + '}' * n),
    st.binary(max_size=60),
    st.sampled_from(['', 'null', '{', '{"a": NaN}', '1e999', '"\\ud800"',
                     '{"a": "\\u0000"}', '9' * 5000]),
)
# requests refuses header values with leading or trailing whitespace.
header_text = st.text(alphabet=ASCII, max_size=60).map(str.strip)


def quote(segment):
    return parse.quote(segment, safe='')


def leaves(value, prefix=()):
    """Every path to a scalar (or empty container) in ``value``."""
    if isinstance(value, dict) and value:
        return [p for k, v in value.items()
                for p in leaves(v, prefix + (k,))] + [prefix]
    if isinstance(value, list) and value:
        return [p for i, v in enumerate(value)
                for p in leaves(v, prefix + (i,))] + [prefix]
    return [prefix]


def _get(value, path):
    for key in path:
        value = value[key]
    return value


def replaced(value, path, new):
    if not path:
        return new
    copy = json.loads(json.dumps(value))
    target = copy
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = new
    return copy


class FuzzTest(test_api.APITestBase):
    examples = 100

    def setUp(self):
        super().setUp()
        self.admin.put_profile(test_api.profile_doc('fw-1'),
                               visibility='public')
        term = self.term(self.admin, 'fw-1')
        self.service.create_snapshot('snap-1', {'hosts': []})
        self.service.create_plan('plan-1', 'snap-1', test_api.plan_doc())
        server = str(uuid.uuid4())
        self.service.set_isolation(server, 'ok', 'cmp-1')
        self.known = {'profile_id': 'fw-1', 'uuid': term['uuid'],
                      'id': 'snap-1', 'plan_id': 'plan-1', 'index': '0',
                      'server_uuid': server, 'hostname': 'cmp-1'}
        self.bodies = self._valid_bodies()

    def _valid_bodies(self):
        return {
            ('/profiles/{profile_id}', 'PUT'): {
                'profile': test_api.profile_doc('fw-1'),
                'visibility': 'public', 'generation': 0},
            ('/slo_terms', 'POST'): {
                'name': 't', 'profile_id': 'fw-1', 'slo': 'reserved',
                'throughput_mpps': 1.0, 'latency_p95_us': 80.0,
                'packet_bytes': 64, 'flavors': ['f'], 'servers': []},
            ('/slo_terms/{uuid}', 'PATCH'): {'generation': 0,
                                             'status': 'degraded'},
            ('/snapshots', 'POST'): {'id': 'snap-2',
                                     'snapshot': {'hosts': []}},
            ('/plans', 'POST'): {'id': 'plan-2', 'snapshot_id': 'snap-1',
                                 'plan': test_api.plan_doc(1)},
            ('/plans/{plan_id}/apply', 'POST'): {'applier': 'a'},
            ('/plans/{plan_id}/cancel', 'POST'): {},
            ('/plans/{plan_id}/actions/{index}', 'PUT'): {
                'state': 'ongoing', 'detail': 'd'},
            ('/plans/{plan_id}/result', 'PUT'): {'state': 'applied',
                                                 'result': 'r'},
            ('/servers/{server_uuid}/isolation', 'PUT'): {
                'status': 'ok', 'host': 'cmp-1', 'detail': ''},
            ('/hosts/{hostname}', 'PUT'): {
                'domains': [{'id': 0, 'ways_total': 20, 'ways_used': 1}],
                'agent_version': '1.0'},
        }

    def settings(self):
        return hypothesis.settings(
            max_examples=self.examples, deadline=None, derandomize=True,
            database=None, print_blob=False,
            suppress_health_check=list(hypothesis.HealthCheck))

    def url(self, template, values=None):
        values = dict(self.known, **(values or {}))
        return self.api.endpoint + VARIABLE.sub(
            lambda m: values[m.group(1)], template)

    def send(self, method, url, data=None, headers=None):
        hdrs = {'X-Auth-Token': self.api.tokens['admin'],
                'Content-Type': 'application/json'}
        hdrs.update(headers or {})
        resp = requests.request(method, url, data=data, headers=hdrs,
                                timeout=30)
        self.assertServed(resp, '%s %s' % (method, url[:200]))
        return resp

    def assertServed(self, resp, what):
        """Not a 5xx; an error is the OpenStack error document."""
        status = resp.status_code
        self.assertLess(status, 500, '%s: %s' % (what, resp.text[:300]))
        if status < 400:
            if resp.content:
                resp.json()
            return
        self.assertEqual('application/json',
                         resp.headers.get('Content-Type', '').split(';')[0],
                         what)
        errors = resp.json()['errors']
        self.assertEqual(1, len(errors), what)
        self.assertEqual(status, errors[0]['status'], what)
        self.assertTrue(errors[0]['code'] and errors[0]['detail'], what)

    def test_path_ids(self):
        @self.settings()
        @hypothesis.given(st.sampled_from(ROUTES), st.data())
        def check(route, data):
            template, method = route
            values = {}
            for name in VARIABLE.findall(template):
                if data.draw(st.booleans()):
                    values[name] = quote(data.draw(segments))
            body = self.bodies.get(route, {})
            self.send(method, self.url(template, values), json.dumps(body))
        check()

    def test_bodies_with_a_field_replaced(self):
        routes = sorted(self.bodies)

        @self.settings()
        @hypothesis.given(st.sampled_from(routes), st.data())
        def check(route, data):
            template, method = route
            body = self.bodies[route]
            path = data.draw(st.sampled_from(leaves(body)))
            body = replaced(body, path, data.draw(json_values))
            self.send(method, self.url(template), json.dumps(body))
        check()

    def test_every_integer_field(self):
        """Every integer of every valid body, as each of ``HUGE``.

        Enumerated rather than sampled: the bounds of each column are
        what this proves, on every backend.
        """
        for route, body in sorted(self.bodies.items()):
            template, method = route
            numbers = [p for p in leaves(body) if p and isinstance(
                _get(body, p), int) and not isinstance(_get(body, p), bool)]
            for path in numbers:
                for value in HUGE:
                    self.send(method, self.url(template),
                              json.dumps(replaced(body, path, value)))

    def test_odd_bodies(self):
        @self.settings()
        @hypothesis.given(st.sampled_from(ROUTES),
                          st.one_of(raw_bodies,
                                    json_values.map(json.dumps)))
        def check(route, data):
            template, method = route
            if isinstance(data, str):
                data = data.encode('utf-8', 'surrogatepass')
            self.send(method, self.url(template), data)
        check()

    def test_query_strings(self):
        lists = [r for r in ROUTES if r[1] == 'GET']
        keys = st.one_of(st.sampled_from(
            ['limit', 'marker', 'status', 'host', 'detail', 'state',
             'all_projects', 'project_id']), st.text(max_size=10))
        values = st.one_of(st.text(max_size=300),
                           st.sampled_from(HUGE).map(str),
                           st.binary(max_size=20))

        @self.settings()
        @hypothesis.given(st.sampled_from(lists),
                          st.lists(st.tuples(keys, values), max_size=4))
        def check(route, pairs):
            query = '&'.join('%s=%s' % (quote(k), quote(v))
                             for k, v in pairs)
            self.send('GET', '%s?%s' % (self.url(route[0]), query))
        check()

    def test_headers(self):
        accepts = st.one_of(header_text, st.sampled_from(
            ['text/html', '*/*', 'application/json;q=0', 'application/*',
             'text/plain, application/json;q=0.5', ';;;', 'a/b/c']))
        types = st.one_of(header_text, st.sampled_from(
            ['text/plain', 'application/json; charset=latin-1',
             'application/x-www-form-urlencoded', 'multipart/form-data']))
        versions = st.one_of(header_text, st.sampled_from(
            ['resq 1.0', 'resq latest', 'resq 99.99', 'resq 1.0000000001',
             'resq 99999999999999999999.0', 'placement 1.0']))

        @self.settings()
        @hypothesis.given(st.sampled_from(ROUTES), accepts, types, versions)
        def check(route, accept, content_type, version):
            template, method = route
            self.send(method, self.url(template),
                      json.dumps(self.bodies.get(route, {})),
                      headers={'Accept': accept,
                               'Content-Type': content_type,
                               'OpenStack-API-Version': version})
        check()


class MariaDBFuzzTest(FuzzTest):
    backend = 'mysql'
    examples = 40


class PostgreSQLFuzzTest(FuzzTest):
    backend = 'postgresql'
    examples = 40
