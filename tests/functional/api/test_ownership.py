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
"""Ownership holds: owners, visibility, term states and references.

Issue 30, item 5: an edit keeps the owner, another project's private
resources answer 404 whatever the method, a term is admitted only by the
admission service, references are checked and host reports consistent.
"""

import sqlalchemy as sa

from resq_common.clients import resq as resq_client
from resq_nova.api.db import api as db_api
from resq_nova.api.db import models
from tests.functional.api import test_api


def detail(resp):
    return resp.json()['errors'][0]['detail']


class ProfileOwnershipTest(test_api.APITestBase):

    def setUp(self):
        super().setUp()
        self.member_a.put_profile(test_api.profile_doc('fw-a'))

    def test_admin_edit_keeps_the_owner(self):
        doc = test_api.profile_doc('fw-a')
        doc['measurement']['note'] = 'fixed by the operator'
        rec = self.admin.put_profile(doc, generation=0)
        self.assertEqual(('p-a', 'private', 1), (
            rec['project_id'], rec['visibility'], rec['generation']))
        # Project A still has it, and may replace it again.
        shown = self.member_a.get_profile_record('fw-a')
        self.assertEqual('fixed by the operator',
                         shown['profile']['measurement']['note'])
        doc['measurement']['note'] = 'remeasured'
        self.assertEqual('p-a', self.member_a.put_profile(
            doc, generation=1)['project_id'])

    def test_a_projects_profile_is_not_published_in_its_name(self):
        """An admin's public upload never leaves the profile a project's.

        It once answered 200 "public" while project A still owned the
        profile, could rewrite it and make it private again.
        """
        for generation in (None, 0):
            resp = self.raw('PUT', '/profiles/fw-a', body={
                'profile': test_api.profile_doc('fw-a'),
                'visibility': 'public', 'generation': generation})
            self.assertEqual(409, resp.status_code, resp.text)
            error = resp.json()['errors'][0]
            self.assertEqual('resq.profile.owned', error['code'])
            self.assertIn('profile fw-a belongs to project p-a (a private '
                          'profile, generation 0)', error['detail'])
            self.assertIn('nothing was changed', error['detail'])
        rec = self.member_a.get_profile_record('fw-a')
        self.assertEqual(('p-a', 'private', 0), (
            rec['project_id'], rec['visibility'], rec['generation']))
        self.assertEqual([], self.member_b.list_profiles())

    def test_private_profile_of_another_project_is_404_for_every_method(self):
        missing = {m: self.raw(m, '/profiles/nope', 'member_b',
                               body=body)
                   for m, body in self.requests('nope')}
        held = {m: self.raw(m, '/profiles/fw-a', 'member_b', body=body)
                for m, body in self.requests('fw-a')}
        for method, resp in held.items():
            self.assertEqual(404, resp.status_code, method)
            self.assertEqual('resq.not_found',
                             resp.json()['errors'][0]['code'])
            self.assertEqual(detail(missing[method]).replace('nope', 'fw-a'),
                             detail(resp), method)
            self.assertNotIn('generation', detail(resp))
        # Nothing changed for A.
        rec = self.member_a.get_profile_record('fw-a')
        self.assertEqual(('p-a', 0), (rec['project_id'], rec['generation']))

    def requests(self, pid):
        doc = {'profile': test_api.profile_doc(pid)}
        return [('GET', None), ('DELETE', None),
                ('PUT', dict(doc, generation=0))]

    def test_put_create_of_a_held_id_reveals_nothing(self):
        resp = self.raw('PUT', '/profiles/fw-a', 'member_b',
                        body={'profile': test_api.profile_doc('fw-a')})
        self.assertEqual(404, resp.status_code)
        self.assertNotIn('generation', detail(resp))
        self.assertNotIn('p-a', detail(resp))
        self.assertIn('choose another id', detail(resp))
        self.assertEqual('p-a', self.admin.get_profile_record('fw-a')[
            'project_id'])


class TermStateTest(test_api.APITestBase):

    def setUp(self):
        super().setUp()
        self.admin.put_profile(test_api.profile_doc('pub'),
                               visibility='public')
        self.member_a.put_profile(test_api.profile_doc('own-a'))

    def test_a_tenant_records_a_request_not_an_admission(self):
        rec = self.term(self.member_a, 'own-a')
        self.assertEqual('requested', rec['status'])
        resp = self.raw('POST', '/slo_terms', 'member_a', body={
            'name': 'x', 'profile_id': 'own-a', 'slo': 'reserved',
            'throughput_mpps': 1000.0, 'status': 'admitted'})
        self.assertEqual(403, resp.status_code)
        self.assertIn('only the admission service', detail(resp))
        self.assertIn('resq:slo_terms:admit', detail(resp))
        exc = self.assertRaises(resq_client.Forbidden,
                                self.member_a.update_term, rec['uuid'], 0,
                                status='admitted')
        self.assertIn('only the admission service', str(exc))
        self.assertEqual('requested',
                         self.member_a.get_term(rec['uuid'])['status'])

    def test_the_service_admits_for_a_project(self):
        rec = self.term(self.service, 'own-a', project_id='p-a')
        self.assertEqual(('admitted', 'p-a'), (rec['status'],
                                               rec['project_id']))
        self.assertEqual([rec['uuid']], [t['uuid'] for t in
                                         self.member_a.list_terms()])
        asked = self.term(self.member_a, 'own-a')
        done = self.service.update_term(asked['uuid'], 0, status='admitted')
        self.assertEqual('admitted', done['status'])
        # A profile the project cannot see is no reference for its term.
        resp = self.raw('POST', '/slo_terms', 'service', body={
            'name': 'x', 'profile_id': 'own-a', 'slo': 'reserved',
            'throughput_mpps': 1.0, 'project_id': 'p-b'})
        self.assertEqual(400, resp.status_code)
        # A tenant names no other project.
        resp = self.raw('POST', '/slo_terms', 'member_a', body={
            'name': 'x', 'profile_id': 'pub', 'slo': 'reserved',
            'throughput_mpps': 1.0, 'project_id': 'p-b'})
        self.assertEqual(403, resp.status_code)

    def test_released_is_final(self):
        rec = self.term(self.service, 'own-a', project_id='p-a')
        rel = self.member_a.update_term(rec['uuid'], 0, status='released')
        self.assertEqual('released', rel['status'])
        for persona in ('member_a', 'service', 'admin'):
            resp = self.raw('PATCH', '/slo_terms/%s' % rec['uuid'], persona,
                            body={'generation': 1, 'status': 'admitted'})
            self.assertIn(resp.status_code, (403, 409), persona)
        resp = self.raw('PATCH', '/slo_terms/%s' % rec['uuid'], 'service',
                        body={'generation': 1, 'status': 'admitted'})
        self.assertEqual(409, resp.status_code)
        self.assertIn('released is final', detail(resp))
        self.assertEqual('released',
                         self.member_a.get_term(rec['uuid'])['status'])

    def test_a_used_public_profile_stays_public(self):
        asked = self.term(self.member_a, 'pub')
        resp = self.raw('PUT', '/profiles/pub', 'admin', body={
            'profile': test_api.profile_doc('pub'), 'visibility': 'private',
            'generation': 0})
        self.assertEqual(409, resp.status_code)
        self.assertIn(asked['uuid'], detail(resp))
        self.assertEqual('public', self.admin.get_profile_record('pub')[
            'visibility'])

    def test_readmitting_without_the_profile_is_refused(self):
        # The API keeps a term's profile (in use: not deleted, not made
        # private); a row removed behind its back is refused all the same.
        asked = self.term(self.member_a, 'pub')
        with db_api.get_engine().begin() as conn:
            conn.execute(sa.delete(models.Profile).where(
                models.Profile.id == 'pub'))
        resp = self.raw('PATCH', '/slo_terms/%s' % asked['uuid'], 'service',
                        body={'generation': 0, 'status': 'admitted'})
        self.assertEqual(409, resp.status_code)
        self.assertIn('profile pub is gone', detail(resp))
        self.assertEqual('requested',
                         self.member_a.get_term(asked['uuid'])['status'])

    def test_another_projects_term_is_404_for_every_method(self):
        rec = self.term(self.member_a, 'own-a')
        path = '/slo_terms/%s' % rec['uuid']
        for method, body in (('GET', None), ('DELETE', None),
                             ('PATCH', {'generation': 0,
                                        'status': 'released'})):
            resp = self.raw(method, path, 'member_b', body=body)
            self.assertEqual(404, resp.status_code, method)
        self.assertEqual(0, self.member_a.get_term(rec['uuid'])['generation'])


class ReferenceTest(test_api.APITestBase):

    def test_a_plan_names_an_existing_snapshot(self):
        for snapshot in (None, 'no-such-snapshot'):
            resp = self.raw('POST', '/plans', 'service', body={
                'id': 'plan-1', 'snapshot_id': snapshot,
                'plan': test_api.plan_doc()})
            self.assertEqual(400, resp.status_code, snapshot)
            self.assertIn('snapshot', detail(resp))
        self.assertEqual([], self.admin.list_plans())

    def test_a_snapshot_in_use_is_not_deleted(self):
        self.service.create_snapshot('snap-1', {'hosts': []})
        self.service.create_plan('plan-1', 'snap-1', test_api.plan_doc())
        resp = self.raw('DELETE', '/snapshots/snap-1', 'service')
        self.assertEqual(409, resp.status_code)
        self.assertIn('plan-1', detail(resp))
        self.assertEqual('snap-1',
                         self.admin.get_plan('plan-1')['snapshot_id'])
        self.service.create_snapshot('snap-2', {'hosts': []})
        resp = self.raw('DELETE', '/snapshots/snap-2', 'service')
        self.assertEqual(204, resp.status_code)


class HostReportTest(test_api.APITestBase):

    def put(self, **domain):
        body = {'domains': [dict({'id': 0, 'ways_total': 20,
                                  'ways_used': 6}, **domain)]}
        return self.raw('PUT', '/hosts/cmp-1', 'service', body=body)

    def test_counts_are_consistent(self):
        for field, domain in (
                ('ways_used', {'ways_used': 21}),
                ('ways_leased', {'ways_leased': 21}),
                ('clos_used', {'clos_total': 16, 'clos_used': 17}),
                ('cores_used', {'cores_total': 8, 'cores_used': 9}),
                ('cores_leased', {'cores_total': 8, 'cores_leased': 9})):
            resp = self.put(**domain)
            self.assertEqual(400, resp.status_code, field)
            self.assertIn(field, detail(resp))
        resp = self.raw('PUT', '/hosts/cmp-1', 'service', body={
            'domains': [{'id': 0, 'ways_total': 20, 'ways_used': 1},
                        {'id': 0, 'ways_total': 20, 'ways_used': 2}]})
        self.assertEqual(400, resp.status_code)
        self.assertIn('id 0', detail(resp))
        self.assertEqual([], self.admin.list_hosts())
        self.assertEqual(201, self.put(ways_used=20).status_code)


class MariaDBProfileOwnershipTest(ProfileOwnershipTest):
    backend = 'mysql'


class MariaDBTermStateTest(TermStateTest):
    backend = 'mysql'


class MariaDBReferenceTest(ReferenceTest):
    backend = 'mysql'


class PostgreSQLProfileOwnershipTest(ProfileOwnershipTest):
    backend = 'postgresql'


class PostgreSQLTermStateTest(TermStateTest):
    backend = 'postgresql'


class PostgreSQLReferenceTest(ReferenceTest):
    backend = 'postgresql'
