"""resq-api's edges, from an attacker's seat and an operator's.

* a project cannot squat the id of a profile the operator publishes: the
  admin's upload is a 409 naming the owner, never a 200 that left the
  profile the project's;
* text is stored as sent on MariaDB whatever ``charset`` the URL names
  (devstack writes ``charset=utf8``): an emoji in a name;
* where an integer is required, ``0.0`` and ``1e0`` are a 400 naming the
  field;
* every request has one INFO line: method, path, status, time, request id.
"""

import json

import fixtures
import requests
import webob

from resq_nova.api.db import api as db_api
from resq_nova.api.db import migration
from resq_nova.api import wsgi
from tests.fixtures import database
from tests.functional.api import test_api


class SquattingTest(test_api.APITestBase):

    def test_the_operators_example_id_stays_the_operators(self):
        # Project B takes devstack's example id first.
        squat = self.member_b.put_profile(test_api.profile_doc(
            'lpm-example'))
        self.assertEqual(('p-b', 'private'), (squat['project_id'],
                                              squat['visibility']))
        resp = self.raw('PUT', '/profiles/lpm-example', body={
            'profile': test_api.profile_doc('lpm-example'),
            'visibility': 'public'})
        self.assertEqual(409, resp.status_code, resp.text)
        self.assertIn('belongs to project p-b', resp.json()['errors'][0][
            'detail'])
        # What the 409 says to do: delete it, upload again.
        self.admin.delete_profile('lpm-example')
        rec = self.admin.put_profile(test_api.profile_doc('lpm-example'),
                                     visibility='public')
        self.assertEqual((None, 'public'), (rec['project_id'],
                                            rec['visibility']))
        # Project B can neither rewrite nor unpublish it now.
        for visibility in ('public', 'private'):
            resp = self.raw('PUT', '/profiles/lpm-example', 'member_b', body={
                'profile': test_api.profile_doc('lpm-example'),
                'visibility': visibility, 'generation': 0})
            self.assertIn(resp.status_code, (403, 409), resp.text)
        self.assertEqual((None, 'public', 0), tuple(
            self.member_b.get_profile_record('lpm-example')[k]
            for k in ('project_id', 'visibility', 'generation')))


class StrictIntegerTest(test_api.APITestBase):

    def test_host_report_refuses_floats_where_integers_are_required(self):
        for text in ('0.0', '1e0', '4.0'):
            data = ('{"domains": [{"id": %s, "ways_total": 20, '
                    '"ways_used": 2}]}' % text)
            resp = self.raw('PUT', '/hosts/h1', 'service', data=data)
            self.assertEqual(400, resp.status_code, resp.text)
            detail = resp.json()['errors'][0]['detail']
            self.assertIn('body field domains.0.id:', detail)
            self.assertIn("is not of type 'integer'", detail)
        data = ('{"domains": [{"id": 0, "ways_total": 2e1, '
                '"ways_used": 2}]}')
        resp = self.raw('PUT', '/hosts/h1', 'service', data=data)
        self.assertEqual(400, resp.status_code, resp.text)
        self.assertIn('domains.0.ways_total', resp.text)
        # Integers are still integers.
        resp = self.raw('PUT', '/hosts/h1', 'service', body={
            'domains': [{'id': 0, 'ways_total': 20, 'ways_used': 2}]})
        self.assertIn(resp.status_code, (200, 201), resp.text)


class RequestLogTest(test_api.APITestBase):

    def test_one_info_line_per_request(self):
        logs = self.useFixture(fixtures.FakeLogger(
            name='resq_nova.api.requestlog', level='INFO',
            format='%(levelname)s %(message)s'))
        resp = self.raw('GET', '/profiles?limit=5')
        self.assertEqual(200, resp.status_code)
        unauth = requests.get(self.api.endpoint + '/profiles', timeout=30)
        self.assertEqual(401, unauth.status_code)
        lines = logs.output.splitlines()
        self.assertEqual(2, len(lines), logs.output)
        self.assertRegex(
            lines[0], r'^INFO .* "GET /profiles\?limit=5" status: 200 len: '
            r'\d+ microversion: 1\.0 time: \d+\.\d{3} request_id: %s$'
            % resp.headers['X-OpenStack-Request-Id'])
        # The 401 of authentication has its line and id too.
        self.assertIn('"GET /profiles" status: 401', lines[1])
        self.assertIn(unauth.headers['X-OpenStack-Request-Id'], lines[1])

    def test_control_characters_of_a_path_forge_no_line(self):
        logs = self.useFixture(fixtures.FakeLogger(
            name='resq_nova.api.requestlog', level='INFO'))
        resp = self.raw('GET', '/profiles/a%0Ainjected')
        self.assertEqual(400, resp.status_code)
        self.assertEqual(1, len(logs.output.splitlines()), logs.output)
        self.assertIn('/profiles/a%0Ainjected', logs.output)

    def test_quotes_and_spaces_of_a_path_forge_no_field(self):
        logs = self.useFixture(fixtures.FakeLogger(
            name='resq_nova.api.requestlog', level='INFO'))
        # An attacker's path that reads as a finished request line.
        forged = ('/profiles/gold%22%20status:%20204%20len:%200%20'
                  'request_id:%20req-forged')
        resp = requests.delete(self.api.endpoint + forged, timeout=30)
        self.assertEqual(401, resp.status_code)
        [line] = logs.output.splitlines()
        self.assertEqual(1, line.count('status: '), line)
        self.assertIn('"DELETE /profiles/gold%22%20status:%20204', line)
        self.assertNotIn('request_id: req-forged', line)


class MySQLCharsetTest(test_api.APITestBase):
    """devstack's ``?charset=utf8``: an emoji is stored as sent."""

    def setUp(self):
        super(test_api.APITestBase, self).setUp()
        db = self.useFixture(database.Database('mysql', self.skipTest))
        url = db.url.replace('charset=utf8mb4', 'charset=utf8')
        self.assertTrue(url.endswith('?charset=utf8'))
        conf = wsgi.make_conf(config_files=[])
        conf.set_override('connection', url, 'database')
        conf.set_override('auth_strategy', 'noauth2', 'api')
        self.app = wsgi.init_application(conf)
        self.addCleanup(db_api.reset)
        migration.upgrade()

    def call(self, method, path, body=None):
        req = webob.Request.blank(path, method=method,
                                  headers={'X-Auth-Token': 'admin'})
        if body is not None:
            req.content_type = 'application/json'
            req.body = json.dumps(body).encode()
        return req.get_response(self.app)

    def test_emoji_in_a_name_round_trips(self):
        resp = self.call('PUT', '/profiles/fw-1', {
            'profile': test_api.profile_doc(), 'visibility': 'public'})
        self.assertEqual(201, resp.status_int, resp.text)
        name = 'fw \U0001F525 term \u00e9'
        resp = self.call('POST', '/slo_terms', {
            'name': name, 'profile_id': 'fw-1', 'slo': 'reserved',
            'throughput_mpps': 2.0, 'latency_p95_us': 80.0,
            'packet_bytes': 64, 'flavors': ['resq-fw-1'], 'servers': []})
        self.assertEqual(201, resp.status_int, resp.text)
        uuid = resp.json['uuid']
        resp = self.call('GET', '/slo_terms/%s' % uuid)
        self.assertEqual(200, resp.status_int, resp.text)
        self.assertEqual(name, resp.json['name'])

    def test_documents_keep_their_text_as_sent(self):
        # A flavor name in a term's JSON list: stored as its UTF-8 bytes
        # (4 for the emoji), not as \ud83d\udd25 escapes (12).
        resp = self.call('PUT', '/profiles/fw-1', {
            'profile': test_api.profile_doc(), 'visibility': 'public'})
        self.assertEqual(201, resp.status_int, resp.text)
        flavor = 'resq.fw-\U0001F525-\u00e9'
        resp = self.call('POST', '/slo_terms', {
            'name': 't', 'profile_id': 'fw-1', 'slo': 'reserved',
            'throughput_mpps': 2.0, 'flavors': [flavor], 'servers': []})
        self.assertEqual(201, resp.status_int, resp.text)
        uuid = resp.json['uuid']
        with db_api.get_engine().connect() as conn:
            stored = conn.exec_driver_sql(
                'SELECT flavors FROM slo_terms WHERE uuid = %s',
                (uuid,)).scalar()
        self.assertEqual('["%s"]' % flavor, stored)
        resp = self.call('GET', '/slo_terms/%s' % uuid)
        self.assertEqual([flavor], resp.json['flavors'])
        # The answer carries the text as sent too (UTF-8, not escapes).
        self.assertIn(('"%s"' % flavor).encode('utf-8'), resp.body)

    def test_a_term_of_as_many_servers_as_allowed_is_kept_whole(self):
        # Over 64 KiB of JSON each: MariaDB's TEXT refused it (a 500).
        import uuid as uuid_mod
        resp = self.call('PUT', '/profiles/fw-1', {
            'profile': test_api.profile_doc(), 'visibility': 'public'})
        self.assertEqual(201, resp.status_int, resp.text)
        servers = [str(uuid_mod.uuid4()) for _ in range(3000)]
        flavors = ['resq.' + 'x' * 240 + '%03d' % i for i in range(300)]
        resp = self.call('POST', '/slo_terms', {
            'name': 'big', 'profile_id': 'fw-1', 'slo': 'reserved',
            'throughput_mpps': 2.0, 'flavors': flavors,
            'servers': servers})
        self.assertEqual(201, resp.status_int, resp.text)
        resp = self.call('GET', '/slo_terms/%s' % resp.json['uuid'])
        self.assertEqual(200, resp.status_int, resp.text)
        self.assertEqual((servers, flavors),
                         (resp.json['servers'], resp.json['flavors']))
        resp = self.call('GET', '/slo_terms')
        self.assertEqual(200, resp.status_int, resp.text)


class SecondRoundTest(test_api.APITestBase):
    """The attacker's second round on resq-api (issue 43)."""

    def add_token(self, name, project, roles=('member', 'reader')):
        self.api.tokens[name] = 'tok-%s' % name
        self.api.auth.add_token_data(
            token_id=self.api.tokens[name], user_id='u-%s' % name,
            project_id=project, role_list=list(roles))

    def test_a_project_called_none_owns_no_public_profile(self):
        self.admin.put_profile(test_api.profile_doc('gold'),
                               visibility='public')
        self.add_token('nobody', 'None')
        resp = self.raw('DELETE', '/profiles/gold', 'nobody')
        self.assertEqual(403, resp.status_code, resp.text)
        self.assertEqual('resq.policy', resp.json()['errors'][0]['code'])
        self.assertEqual('public', self.admin.get_profile_record('gold')[
            'visibility'])

    def test_a_token_without_a_project_is_refused_by_name(self):
        self.add_token('unscoped', None, roles=('member', 'admin'))
        for method, path in (('GET', '/profiles'), ('GET', '/slo_terms'),
                             ('DELETE', '/profiles/gold')):
            resp = self.raw(method, path, 'unscoped')
            self.assertEqual(403, resp.status_code, resp.text)
            error = resp.json()['errors'][0]
            self.assertEqual('resq.policy.scope', error['code'])
            self.assertIn('scoped to a project', error['detail'])

    def test_an_admitted_terms_servers_and_flavors_are_the_admissions(self):
        self.admin.put_profile(test_api.profile_doc('fw-1'),
                               visibility='public')
        term = self.term(self.member_a, servers=[
            '11111111-1111-4111-8111-111111111111'])
        uuid = term['uuid']
        # Still requested: the project may correct its own request.
        resp = self.raw('PATCH', '/slo_terms/%s' % uuid, 'member_a', body={
            'generation': term['generation'], 'flavors': ['resq-fw-2']})
        self.assertEqual(200, resp.status_code, resp.text)
        generation = resp.json()['generation']
        resp = self.raw('PATCH', '/slo_terms/%s' % uuid, 'service', body={
            'generation': generation, 'status': 'admitted'})
        self.assertEqual(200, resp.status_code, resp.text)
        generation = resp.json()['generation']
        other = '22222222-2222-4222-8222-222222222222'
        for change in ({'servers': [other]}, {'flavors': ['resq-big']},
                       {'servers': [other], 'status': 'released'}):
            resp = self.raw('PATCH', '/slo_terms/%s' % uuid, 'member_a',
                            body=dict(change, generation=generation))
            self.assertEqual(403, resp.status_code, resp.text)
            error = resp.json()['errors'][0]
            self.assertEqual('resq.slo_term.admit', error['code'])
            self.assertIn('that is admitted', error['detail'])
        rec = self.member_a.get_term(uuid)
        self.assertEqual((['11111111-1111-4111-8111-111111111111'],
                          ['resq-fw-2'], 'admitted', generation),
                         (rec['servers'], rec['flavors'], rec['status'],
                          rec['generation']))
        # The same lists again are no change; releasing stays the
        # project's.
        resp = self.raw('PATCH', '/slo_terms/%s' % uuid, 'member_a', body={
            'generation': generation, 'status': 'released',
            'servers': rec['servers']})
        self.assertEqual(200, resp.status_code, resp.text)
        self.assertEqual('released', resp.json()['status'])

    def test_a_page_of_large_terms_is_bounded_in_bytes(self):
        self.admin.put_profile(test_api.profile_doc('fw-1'),
                               visibility='public')
        budget = 65536
        self.api.conf.set_override('max_page_bytes', budget, 'api')
        made = []
        for n in range(7):
            # About 27 KB of JSON each: two fit a page, three do not.
            servers = ['%08d-0000-4000-8000-%012d' % (n, i)
                       for i in range(700)]
            made.append(self.term(self.member_a, name='t%d' % n,
                                  servers=servers)['uuid'])
        seen, pages, path = [], 0, '/slo_terms?limit=1000'
        while path:
            resp = self.raw('GET', path, 'member_a')
            self.assertEqual(200, resp.status_code, resp.text)
            body = resp.json()
            items = body['slo_terms']
            self.assertTrue(items)
            self.assertLessEqual(sum(len(json.dumps(i)) + 1 for i in items),
                                 budget)
            seen.extend(i['uuid'] for i in items)
            pages += 1
            nxt = [link['href'] for link in body['links']
                   if link['rel'] == 'next']
            path = nxt[0].split('resq-api.test', 1)[-1] if nxt else None
        # Every term once (terms made within one second list in uuid
        # order).
        self.assertEqual(sorted(made), sorted(seen))
        self.assertEqual(4, pages)

    def test_a_single_item_larger_than_the_budget_still_lists(self):
        self.admin.put_profile(test_api.profile_doc('fw-1'),
                               visibility='public')
        self.api.conf.set_override('max_page_bytes', 65536, 'api')
        servers = ['00000000-0000-4000-8000-%012d' % i for i in range(2000)]
        uuid = self.term(self.member_a, servers=servers)['uuid']
        resp = self.raw('GET', '/slo_terms', 'member_a')
        self.assertEqual(200, resp.status_code, resp.text)
        self.assertEqual([uuid], [t['uuid'] for t in
                                  resp.json()['slo_terms']])
        self.assertEqual([], [link for link in resp.json()['links']
                              if link['rel'] == 'next'])

    def test_the_auth_middlewares_errors_are_error_documents(self):
        cases = ((None, 401), ('tok-forged', 401))
        for token, status in cases:
            headers = {} if token is None else {'X-Auth-Token': token}
            resp = requests.get(self.api.endpoint + '/profiles',
                                headers=headers, timeout=30)
            self.assertEqual(status, resp.status_code, resp.text)
            self.assertEqual('application/json',
                             resp.headers['Content-Type'].split(';')[0])
            [error] = resp.json()['errors']
            self.assertEqual((401, 'resq.unauthenticated'),
                             (error['status'], error['code']))
            self.assertIn('X-Auth-Token', error['detail'])
            self.assertTrue(error['request_id'].startswith('req-'))
            self.assertIn('keystone.test', resp.headers['WWW-Authenticate'])


class MariaDBIdsTest(test_api.APITestBase):
    """Profile ids compare byte for byte on MariaDB, as elsewhere."""

    backend = 'mysql'

    def test_another_case_is_another_profile(self):
        self.member_a.put_profile(test_api.profile_doc('fw-x'))
        # No oracle: project B's own FW-X is a profile of its own.
        resp = self.raw('PUT', '/profiles/FW-X', 'member_b', body={
            'profile': test_api.profile_doc('FW-X')})
        self.assertEqual(201, resp.status_code, resp.text)
        resp = self.raw('GET', '/profiles/FW-x', 'member_a')
        self.assertEqual(404, resp.status_code, resp.text)
        self.assertEqual(['fw-x'], [p['id'] for p in
                                    self.member_a.list_profiles()])
        # A term names its profile exactly.
        resp = self.raw('POST', '/slo_terms', 'member_a', body={
            'name': 't', 'profile_id': 'FW-x', 'slo': 'reserved',
            'throughput_mpps': 1.0})
        self.assertEqual(400, resp.status_code, resp.text)
        self.assertEqual('resq.slo_term.profile',
                         resp.json()['errors'][0]['code'])


class ThirdRoundTest(test_api.APITestBase):
    """The attacker's findings on the second round's fixes (issue 43)."""

    def _admitted_term(self):
        self.admin.put_profile(test_api.profile_doc('fw-1'),
                               visibility='public')
        term = self.term(self.member_a, servers=[
            '11111111-1111-4111-8111-111111111111'])
        return self.service.update_term(term['uuid'], term['generation'],
                                        status='admitted')

    def test_the_writer_refuses_an_admitted_terms_lists_to_a_project(self):
        from resq_nova.api import context as ctx_mod
        from resq_nova.api.objects import exception as obj_exc
        from resq_nova.api.objects import slo_term as term_obj

        rec = self._admitted_term()
        ctx = ctx_mod.RequestContext(project_id='p-a', user_id='u-a',
                                     roles=['member'])
        # Whatever a handler read before, the row written decides.
        exc = self.assertRaises(
            obj_exc.AdmissionOnly, term_obj.update, ctx, rec['uuid'],
            rec['generation'], {'flavors': ['attacker-flavor']},
            admission=False)
        self.assertEqual(403, exc.status)
        self.assertIn('flavors of a term that is admitted', str(exc))
        # The admission service may, and the same lists are no change.
        same = term_obj.update(ctx, rec['uuid'], rec['generation'],
                               {'servers': rec['servers']}, admission=False)
        self.assertEqual(rec['servers'], same['servers'])
        moved = term_obj.update(ctx, rec['uuid'], same['generation'],
                                {'flavors': ['resq-fw-9']}, admission=True)
        self.assertEqual(['resq-fw-9'], moved['flavors'])

    def test_a_listing_reads_no_term_beyond_its_bytes(self):
        from resq_nova.api import context as ctx_mod
        from resq_nova.api.objects import slo_term as term_obj

        self.admin.put_profile(test_api.profile_doc('fw-1'),
                               visibility='public')
        for n in range(7):
            self.term(self.member_a, name='t%d' % n, servers=[
                '%08d-0000-4000-8000-%012d' % (n, i) for i in range(700)])
        ctx = ctx_mod.RequestContext(project_id='p-a')
        self.assertEqual(2, len(term_obj.get_list(
            ctx, 'p-a', limit=100, max_bytes=60000)))
        self.assertEqual(1, len(term_obj.get_list(
            ctx, 'p-a', limit=100, max_bytes=10)))
        self.assertEqual(7, len(term_obj.get_list(ctx, 'p-a', limit=100)))

    def test_no_log_line_carries_the_previous_callers_identity(self):
        from oslo_context import context as oslo_ctx

        self.assertEqual(200, self.raw('GET', '/profiles',
                                       'member_a').status_code)
        self.assertEqual('u-member_a', oslo_ctx.get_current().user_id)
        resp = requests.get(self.api.endpoint + '/slo_terms', timeout=30)
        self.assertEqual(401, resp.status_code)
        current = oslo_ctx.get_current()
        self.assertIsNone(current.user_id)
        self.assertIsNone(current.project_id)
        self.assertEqual(resp.headers['X-OpenStack-Request-Id'],
                         current.request_id)

    def test_a_body_shorter_than_its_length_is_a_400(self):
        import io

        req = webob.Request.blank('/slo_terms', method='POST', headers={
            'X-Auth-Token': self.api.tokens['member_a'],
            'Content-Type': 'application/json'})
        req.body_file = io.BytesIO(b'{"a":')
        req.content_length = 1000
        resp = req.get_response(self.api.app)
        self.assertEqual(400, resp.status_int, resp.text)
        self.assertEqual('resq.body.incomplete',
                         resp.json['errors'][0]['code'])

    def test_who_may_upload_no_profile_is_refused_before_its_body(self):
        resp = self.raw('PUT', '/profiles/pt-w', 'reader_a',
                        data='{"profile": [[[not json')
        self.assertEqual(403, resp.status_code, resp.text)
        self.assertEqual('resq.policy', resp.json()['errors'][0]['code'])

    def test_a_curve_of_too_many_points_is_refused_by_count(self):
        doc = test_api.profile_doc('long')
        doc['throughput']['points'] = [[1 + i / 1000.0, 1.0 + i]
                                       for i in range(5000)]
        resp = self.raw('PUT', '/profiles/long', 'member_a',
                        body={'profile': doc})
        self.assertEqual(400, resp.status_code, resp.text)
        self.assertIn('more than 1024', resp.json()['errors'][0]['detail'])


class ProfileETagTest(test_api.APITestBase):
    """A profile deleted and made again never matches a cached ETag."""

    def test_a_remade_profile_and_the_list_change_their_etags(self):
        self.admin.put_profile(test_api.profile_doc('etag-x1'),
                               visibility='public')
        one = self.raw('GET', '/profiles/etag-x1', 'member_a')
        listed = self.raw('GET', '/profiles', 'member_a')
        self.admin.delete_profile('etag-x1')
        doc = test_api.profile_doc('etag-x1')
        doc['measurement']['note'] = 'measured again'
        rec = self.admin.put_profile(doc, visibility='public')
        self.assertEqual(0, rec['generation'])
        for path, old in (('/profiles/etag-x1', one), ('/profiles', listed)):
            resp = self.raw('GET', path, 'member_a', headers={
                'If-None-Match': old.headers['ETag']})
            self.assertEqual(200, resp.status_code, path)
            self.assertNotEqual(old.headers['ETag'], resp.headers['ETag'])
        # Unchanged, the tags hold.
        for path in ('/profiles/etag-x1', '/profiles'):
            tag = self.raw('GET', path, 'member_a').headers['ETag']
            self.assertEqual(304, self.raw('GET', path, 'member_a', headers={
                'If-None-Match': tag}).status_code, path)

    def test_the_list_tag_gives_away_no_other_projects_writes(self):
        # Project b's view holds nothing; project a writes. Unkeyed, the
        # tag of b's empty list was sha256("writes:N;"): b read N.
        import hashlib

        for i in range(3):
            self.member_a.put_profile(test_api.profile_doc('a-%d' % i))
        tag = self.raw('GET', '/profiles', 'member_b').headers['ETag']
        guesses = {'"%s"' % hashlib.sha256(
            ('writes:%s;' % n).encode()).hexdigest()[:32]
            for n in list(range(1000)) + [None]}
        self.assertNotIn(tag, guesses)


class LimitsTest(test_api.APITestBase):
    """A project cannot make resq-api store without bound."""

    def setUp(self):
        super().setUp()
        self.admin.put_profile(test_api.profile_doc('pub'),
                               visibility='public')

    def test_terms_per_project(self):
        self.api.conf.set_override('max_terms_per_project', 2, 'api')
        for i in range(2):
            self.term(self.member_a, 'pub', name='t%d' % i)
        resp = self.raw('POST', '/slo_terms', 'member_a', body={
            'name': 't2', 'profile_id': 'pub', 'slo': 'reserved',
            'throughput_mpps': 2.0, 'flavors': ['resq-fw-1'],
            'servers': []})
        self.assertEqual(403, resp.status_code, resp.text)
        error = resp.json()['errors'][0]
        self.assertEqual('resq.over_limit', error['code'])
        self.assertIn('p-a', error['detail'])
        self.assertIn('max_terms_per_project = 2', error['detail'])
        # Another project has its own count; a delete frees a place.
        self.term(self.member_b, 'pub', name='b0')
        uuid = self.member_a.list_terms()[0]['uuid']
        self.member_a.delete_term(uuid)
        self.term(self.member_a, 'pub', name='t3')
        # -1: no limit.
        self.api.conf.set_override('max_terms_per_project', -1, 'api')
        self.term(self.member_a, 'pub', name='t4')
        self.assertEqual(3, len(self.member_a.list_terms()))

    def test_private_profiles_per_project(self):
        self.api.conf.set_override('max_profiles_per_project', 1, 'api')
        self.member_a.put_profile(test_api.profile_doc('a-1'))
        resp = self.raw('PUT', '/profiles/a-2', 'member_a', body={
            'profile': test_api.profile_doc('a-2')})
        self.assertEqual(403, resp.status_code, resp.text)
        self.assertEqual('resq.over_limit',
                         resp.json()['errors'][0]['code'])
        # Replacing the one it has is no new profile; public ones count
        # against nobody.
        got = self.member_a.get_profile_record('a-1')
        self.member_a.put_profile(test_api.profile_doc('a-1'),
                                  generation=got['generation'])
        self.admin.put_profile(test_api.profile_doc('pub-2'),
                               visibility='public')


class FourthRoundTest(test_api.APITestBase):
    """The attacker's fourth round (issue 43)."""

    TERM = '0b4c5d7e-8a1f-4e2b-9c3d-5f6a7b8c9d0e'

    def test_unsortable_server_lists_cost_one_pass(self):
        # Mixed types made jsonschema compare every pair (and quote the
        # whole list): 20,000 items held a worker for minutes.
        import time

        body = {'generation': 0, 'servers': ['x'] + list(range(20000))}
        started = time.monotonic()
        resp = self.raw('PATCH', '/slo_terms/%s' % self.TERM, 'member_a',
                        body=body)
        took = time.monotonic() - started
        self.assertEqual(400, resp.status_code, resp.text)
        # Generous: the quadratic check took minutes here.
        self.assertLess(took, 20, took)
        self.assertLess(len(resp.content), 4096)

    def test_a_repeated_server_is_named_by_position(self):
        self.admin.put_profile(test_api.profile_doc('pub'),
                               visibility='public')
        server = '6f1c1b52-1f3e-4f0c-9a57-3c1b7a0f2d11'
        resp = self.raw('POST', '/slo_terms', 'member_a', body={
            'name': 't', 'profile_id': 'pub', 'slo': 'reserved',
            'throughput_mpps': 2.0, 'flavors': ['resq-fw-1'],
            'servers': [server, server]})
        self.assertEqual(400, resp.status_code, resp.text)
        detail = resp.json()['errors'][0]['detail']
        self.assertIn('servers', detail)
        self.assertIn('item 1 repeats an earlier item', detail)

    def test_a_padded_document_is_refused_by_its_count_of_values(self):
        # Extra fields of a profile carried 340,000 empty arrays in 1 MiB:
        # each listing decoded and encoded them all again.
        doc = test_api.profile_doc('padded')
        doc['nf']['junk'] = [[] for _ in range(200000)]
        resp = self.raw('PUT', '/profiles/padded', 'member_a',
                        body={'profile': doc})
        self.assertEqual(400, resp.status_code, resp.text)
        self.assertEqual('resq.body.too_many_values',
                         resp.json()['errors'][0]['code'])
        # The same size of plain text is no padding.
        doc['nf']['junk'] = 'x' * 600000
        resp = self.raw('PUT', '/profiles/padded', 'member_a',
                        body={'profile': doc})
        self.assertEqual(201, resp.status_code, resp.text)

    def test_a_negative_content_length_is_a_400(self):
        import io

        req = webob.Request.blank('/profiles/zz', method='PUT', headers={
            'X-Auth-Token': self.api.tokens['member_a'],
            'Content-Type': 'application/json'})
        req.body_file = io.BytesIO(b'{}')
        req.environ['CONTENT_LENGTH'] = '-5'
        resp = req.get_response(self.api.app)
        self.assertEqual(400, resp.status_int, resp.text)
        self.assertIn('Content-Length is -5',
                      resp.json['errors'][0]['detail'])

    def test_a_method_of_no_token_characters_forges_no_field(self):
        logs = self.useFixture(fixtures.FakeLogger(
            name='resq_nova.api.requestlog', level='INFO'))
        req = webob.Request.blank('/', method='DELETE\t/profiles/p"\t'
                                  'status:\t204\x1b[2J')
        req.get_response(self.api.app)
        [line] = logs.output.splitlines()
        self.assertIn('"DELETE\\x09\\x2fprofiles\\x2fp\\x22\\x09status'
                      '\\x3a\\x09204\\x1b\\x5b2J /"', line)
        self.assertNotIn('\t', line)
        self.assertNotIn('\x1b', line)


class PublicIdTakenTest(test_api.APITestBase):

    def test_a_member_uploading_a_public_id_is_told_to_choose_another(self):
        self.admin.put_profile(test_api.profile_doc('pub'),
                               visibility='public')
        resp = self.raw('PUT', '/profiles/pub', 'member_a',
                        body={'profile': test_api.profile_doc('pub')})
        self.assertEqual(409, resp.status_code, resp.text)
        detail = resp.json()['errors'][0]['detail']
        self.assertEqual('profile pub already exists (generation 0); it is '
                         'public, and only an admin replaces it: upload '
                         'yours under another id', detail)


class ProfileOwnerInWriterTest(test_api.APITestBase):

    def test_the_writer_refuses_a_public_profile_to_a_project(self):
        from resq_nova.api import context as ctx_mod
        from resq_nova.api.objects import exception as obj_exc
        from resq_nova.api.objects import profile as profile_obj

        pub = self.admin.put_profile(test_api.profile_doc('pub'),
                                     visibility='public')
        ctx = ctx_mod.RequestContext(project_id='p-a', user_id='u-a',
                                     roles=['member'])
        doc = test_api.profile_doc('pub')
        doc['nf']['note'] = 'changed'
        # Whatever a handler checked before, the row written decides.
        exc = self.assertRaises(
            obj_exc.NotOwner, profile_obj.create_or_replace, ctx, 'pub',
            doc, 'public', None, pub['generation'], scope='p-a')
        self.assertEqual(403, exc.status)
        self.assertEqual(pub['generation'],
                         self.admin.get_profile_record('pub')['generation'])
        # Its owner (an admin: no scope) still replaces it.
        rec, _ = profile_obj.create_or_replace(
            ctx, 'pub', doc, 'public', None, pub['generation'], scope=None)
        self.assertEqual(pub['generation'] + 1, rec['generation'])
