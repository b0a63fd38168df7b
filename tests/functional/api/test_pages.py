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
"""More than one page of every list, from resq-api to its callers.

resq-api runs with ``[api] max_limit = 5`` and every list holds 12 items
(two full pages and a part): the raw API's ``next`` links and markers, the
client's lists, the ``openstack resq`` commands, ``resq-admit``'s profile
lookup and the optimizer's reads must each see all 12.
"""

import io
import json
import os
import subprocess
from unittest import mock
from urllib import parse
import uuid

import fixtures
from osc_lib import exceptions
from oslo_config import cfg

from resq_common.clients import compute as compute_mod
from resq_common.clients import placement as placement_client
from resq_common.clients import resq as resq_client
from resq_nova.cmd import admit
from resq_nova.optimizer import apistore
from resq_nova.optimizer import coordination
from resq_nova.optimizer import repair
from resq_nova.osc import client as osc_client
from resq_nova.osc.v1 import plan as plan_cmd
from resq_nova.osc.v1 import profile as profile_cmd
from resq_nova.osc.v1 import slo as slo_cmd
from tests.functional.api import test_api

PAGE = 5
COUNT = 12          # pages of 5, 5 and 2


def newest_first(records, key, key_descending=False):
    """``records`` as the API orders them: created_at down, then ``key``."""
    by_key = sorted(records, key=lambda r: r[key], reverse=key_descending)
    return sorted(by_key, key=lambda r: r['created_at'], reverse=True)


class PagesTestBase(test_api.APITestBase):
    max_limit = PAGE

    def walk(self, path, persona='admin'):
        """Every page of ``path``, following each ``next`` href."""
        pages, href = [], path
        while href is not None:
            resp = self.raw('GET', href, persona)
            self.assertEqual(200, resp.status_code, resp.text)
            pages.append(resp.json())
            href = _next(pages[-1])
        return pages

    def profiles(self, n=COUNT):
        # member_a's own, and one of member_b's that member_a never sees.
        self.member_b.put_profile(test_api.profile_doc('b-only'))
        return [self.member_a.put_profile(
            test_api.profile_doc('p-%02d' % i))['id'] for i in range(n)]

    def terms(self, n=COUNT):
        self.member_a.put_profile(test_api.profile_doc('own-a'))
        return newest_first([self.term(self.member_a, 'own-a',
                                       name='t-%02d' % i)
                             for i in range(n)], 'uuid', True)

    def isolation(self, n=COUNT, host='h1'):
        uuids = sorted(str(uuid.uuid4()) for _ in range(n))
        for server in uuids:
            self.service.set_isolation(server, 'misplaced', host,
                                       'cache domain 1 of %s' % host)
        return uuids

    def plans(self, n=COUNT):
        self.service.create_snapshot('snap-of-plans', {'hosts': []})
        return newest_first([self.service.create_plan(
            'plan-%02d' % i, 'snap-of-plans', test_api.plan_doc(1))
            for i in range(n)], 'id')

    def snapshots(self, n=COUNT):
        return newest_first([self.service.create_snapshot(
            'snap-%02d' % i, {'hosts': []}) for i in range(n)], 'id')

    def hosts(self, n=COUNT, first=0):
        return [self.service.report_host('cmp-%02d' % i, {'domains': []})[
            'hostname'] for i in range(first, first + n)]


def _next(body):
    hrefs = [link['href'] for link in body['links'] if link['rel'] == 'next']
    return hrefs[0] if hrefs else None


def _query(href):
    return parse.parse_qs(parse.urlsplit(href).query)


class RawPagesTest(PagesTestBase):
    """The API: pages of at most max_limit, next links, markers."""

    def check(self, path, key, field, expected, persona='admin'):
        """Pages of 5, 5 and 2; next links to the end; a bad marker 400."""
        pages = self.walk(path, persona)
        self.assertEqual([PAGE, PAGE, COUNT - 2 * PAGE],
                         [len(p[key]) for p in pages])
        self.assertEqual(expected, [i[field] for p in pages for i in p[key]])
        for page in pages[:-1]:
            query = _query(_next(page))
            self.assertEqual([page[key][-1][field]], query['marker'])
            self.assertEqual([str(PAGE)], query['limit'])
        self.assertEqual(['self'], [link['rel']
                                    for link in pages[-1]['links']])
        sep = '&' if '?' in path else '?'
        resp = self.raw('GET', path + sep + 'marker=' + self.missing(field),
                        persona)
        self.assertEqual(400, resp.status_code, resp.text)
        error = resp.json()['errors'][0]
        self.assertEqual('resq.query.marker', error['code'])
        self.assertIn('marker %s is not a' % self.missing(field),
                      error['detail'])
        return pages

    def missing(self, field):
        if field in ('uuid', 'server_uuid'):
            return '00000000-0000-4000-8000-000000000000'
        return 'no-such-item'

    def test_profiles(self):
        ids = self.profiles()
        pages = self.check('/profiles', 'profiles', 'id', ids, 'member_a')
        self.assertNotIn('profile', pages[0]['profiles'][0])
        # detail stays on every page; another project's id is no marker.
        pages = self.check('/profiles?detail=true', 'profiles', 'id', ids,
                           'member_a')
        self.assertEqual(['true'], _query(_next(pages[1]))['detail'])
        self.assertIn('profile', pages[2]['profiles'][-1])
        resp = self.raw('GET', '/profiles?marker=b-only', 'member_a')
        self.assertEqual(400, resp.status_code)

    def test_slo_terms(self):
        expected = [t['uuid'] for t in self.terms()]
        self.check('/slo_terms', 'slo_terms', 'uuid', expected, 'member_a')
        self.check('/slo_terms?all_projects=true', 'slo_terms', 'uuid',
                   expected, 'admin')
        # Another project's term is no marker for member_b (not a 404).
        resp = self.raw('GET', '/slo_terms?marker=%s' % expected[0],
                        'member_b')
        self.assertEqual(400, resp.status_code)

    def test_plans(self):
        expected = [p['id'] for p in self.plans()]
        self.check('/plans', 'plans', 'id', expected)

    def test_snapshots(self):
        expected = [s['id'] for s in self.snapshots()]
        self.check('/snapshots', 'snapshots', 'id', expected)

    def test_isolation_keeps_its_filters(self):
        expected = self.isolation()
        self.isolation(3, host='h2')
        pages = self.check('/isolation?host=h1', 'isolation', 'server_uuid',
                           expected)
        self.assertEqual(['h1'], _query(_next(pages[0]))['host'])

    def test_hosts_and_a_last_page_that_is_full(self):
        names = self.hosts(2 * PAGE)
        pages = self.walk('/hosts')
        # Exactly two pages: the second, full, has no next link.
        self.assertEqual([PAGE, PAGE], [len(p['hosts']) for p in pages])
        self.assertIsNone(_next(pages[1]))
        names += self.hosts(2, first=2 * PAGE)
        self.check('/hosts', 'hosts', 'hostname', names)

    def test_limit_sets_the_page_up_to_max_limit(self):
        expected = [p['id'] for p in self.plans()]
        pages = self.walk('/plans?limit=3')
        self.assertEqual([3, 3, 3, 3], [len(p['plans']) for p in pages])
        self.assertEqual(expected, [i['id'] for p in pages
                                    for i in p['plans']])
        pages = self.walk('/plans?limit=500')
        self.assertEqual([5, 5, 2], [len(p['plans']) for p in pages])
        resp = self.raw('GET', '/plans?limit=0')
        self.assertEqual(400, resp.status_code)


class ClientPagesTest(PagesTestBase):
    """resq_common.clients.resq: every list method returns every item."""

    def test_every_list_method(self):
        profiles = self.profiles()
        terms = [t['uuid'] for t in self.terms()]
        plans = [p['id'] for p in self.plans()]
        snapshots = [s['id'] for s in self.snapshots()]
        isolation = self.isolation()
        hosts = self.hosts()
        self.assertEqual(sorted(profiles + ['own-a']), [
            p['id'] for p in self.member_a.list_profiles()])
        self.assertEqual(terms, [t['uuid']
                                 for t in self.member_a.list_terms()])
        self.assertEqual(terms, [t['uuid'] for t in self.admin.list_terms(
            all_projects='true', limit=2)])
        self.assertEqual(plans, [p['id'] for p in self.admin.list_plans()])
        self.assertEqual(plans, [p['id'] for p in self.admin.list_plans(
            state=None, limit=4)])
        # The plans' snapshot is the oldest.
        self.assertEqual(snapshots + ['snap-of-plans'], [
            s['id'] for s in self.service.list_snapshots()])
        self.assertEqual(isolation, [
            i['server_uuid'] for i in self.service.list_isolation(
                status='misplaced', host='h1')])
        self.assertEqual(hosts, [h['hostname']
                                 for h in self.service.list_hosts()])

    def test_profile_documents_and_their_etag(self):
        ids = self.profiles()
        client = self.api.client('member_a', cache_seconds=0)
        docs = client.profile_documents()
        self.assertEqual(ids, sorted(docs))
        self.assertEqual('p-11', docs['p-11']['id'])
        # Unchanged: one request, answered 304, the same documents.
        with mock.patch.object(client, '_call',
                               wraps=client._call) as call:
            self.assertEqual(ids, sorted(client.profile_documents()))
        self.assertEqual(1, call.call_count)
        self.member_a.put_profile(test_api.profile_doc('p-99'))
        self.assertEqual(ids + ['p-99'], sorted(client.profile_documents()))

    def test_profile_source_reads_one_profile(self):
        ids = self.profiles()
        source = resq_client.ProfileSource(self.member_a)
        with mock.patch.object(self.member_a, '_call',
                               wraps=self.member_a._call) as call:
            self.assertEqual('p-11', source.get('p-11').profile_id)
            self.assertTrue(source.exists('p-11'))
            self.assertFalse(source.exists('b-only'))
        self.assertEqual(['/profiles/p-11', '/profiles/b-only'],
                         [c.args[1] for c in call.call_args_list])
        self.assertEqual(ids, source.ids())
        self.assertEqual(ids, [p.profile_id for p in source.list()])

    def test_a_next_link_that_loops_is_an_error(self):
        self.hosts()
        looping = {'hosts': [{'hostname': 'cmp-00'}], 'links': [
            {'rel': 'next', 'href': '/hosts?marker=cmp-00&limit=1'}]}
        with mock.patch.object(self.service, '_json',
                               return_value=looping):
            exc = self.assertRaises(resq_client.ResQAPIError,
                                    self.service.list_hosts)
        self.assertIn('the next link repeats the page', str(exc))


class FakeApp:
    """What a command uses of OpenStackClient's application."""

    def __init__(self, resq):
        self.client_manager = mock.Mock(resq=resq)
        self.stdout = io.StringIO()
        self.stderr = io.StringIO()


class Unreachable:
    """Nova or Placement that an admission reaches only after the profile."""

    def __init__(self, exc_class):
        self.exc_class = exc_class

    def __getattr__(self, name):
        def call(*args, **kwargs):
            raise self.exc_class(reason='the test stops at %s' % name)
        return call


class CommandPagesTest(PagesTestBase):
    """``openstack resq`` commands list every item, show any item."""

    def setUp(self):
        super().setUp()
        self.as_persona('member_a')

    def as_persona(self, persona):
        self.resq = osc_client.ResQClient(
            Unreachable(placement_client.PlacementUnavailable),
            Unreachable(compute_mod.ComputeUnavailable),
            self.api.client(persona))

    def run_cmd(self, cls, *argv):
        app = FakeApp(self.resq)
        cmd = cls(app, None)
        parsed = cmd.get_parser('openstack resq').parse_args(
            list(argv) + ['-f', 'json'])
        self.assertEqual(0, cmd.run(parsed))
        return json.loads(app.stdout.getvalue())

    def test_profile_list_and_show(self):
        ids = self.profiles()
        self.assertEqual(ids, [r['ID'] for r in self.run_cmd(
            profile_cmd.ListProfile)])
        shown = self.run_cmd(profile_cmd.ShowProfile, 'p-11')
        self.assertEqual('p-11', shown['id'])

    def test_slo_admit_finds_a_profile_past_the_first_page(self):
        self.profiles()
        argv = ['--term', 'fw-a', '--throughput-mpps', '1',
                '--latency-p95-us', '25', '--dry-run', '-f', 'json']
        app = FakeApp(self.resq)
        cmd = slo_cmd.AdmitSLO(app, None)
        parser = cmd.get_parser('openstack resq')
        # Found: the admission goes on to Nova (here unreachable).
        exc = self.assertRaises(exceptions.CommandError, cmd.run,
                                parser.parse_args(argv + ['--profile',
                                                          'p-11']))
        self.assertIn('cannot reach Nova', str(exc))
        exc = self.assertRaises(exceptions.CommandError, cmd.run,
                                parser.parse_args(argv + ['--profile',
                                                          'b-only']))
        self.assertIn("no profile 'b-only' in resq-api", str(exc))

    def test_slo_list(self):
        terms = [t['uuid'] for t in self.terms()]
        self.assertEqual(terms, [r['UUID'] for r in self.run_cmd(
            slo_cmd.ListSLO)])
        self.as_persona('admin')
        self.assertEqual(terms, [r['UUID'] for r in self.run_cmd(
            slo_cmd.ListSLO, '--all-projects')])

    def test_plan_list(self):
        plans = [p['id'] for p in self.plans()]
        self.as_persona('admin')
        self.assertEqual(plans, [r['ID'] for r in self.run_cmd(
            plan_cmd.ListPlan)])
        # Every plan but the newest was superseded by a newer one.
        superseded = [p for p in plans if p != 'plan-%02d' % (COUNT - 1)]
        self.assertEqual(superseded, [r['ID'] for r in self.run_cmd(
            plan_cmd.ListPlan, '--state', 'superseded')])


class AdmitPagesTest(PagesTestBase):
    """``resq-admit`` reads a profile past the first page of the list."""

    def run_admit(self, profile):
        config = os.path.join(self.useFixture(fixtures.TempDir()).path,
                              'resq.conf')
        with open(config, 'w') as f:
            f.write('[resq_api]\nauth_type = admin_token\nendpoint = %s\n'
                    'token = %s\n' % (self.api.endpoint,
                                      self.api.tokens['member_a']))
        conf = cfg.ConfigOpts()
        admit.register_opts(conf)
        conf.register_cli_opts(admit.cli_opts)
        conf(['--config-file', config, '--term', 'fw-a', '--profile',
              profile, '--throughput-mpps', '1', '--latency-p95-us', '25',
              '--dry-run', '--format', 'json'],
             project='resq', default_config_files=[])
        out, err = io.StringIO(), io.StringIO()
        rc = admit.run(conf, Unreachable(
            placement_client.PlacementUnavailable), Unreachable(
            compute_mod.ComputeUnavailable), out=out, err=err)
        return rc, err.getvalue()

    def test_profile_past_the_first_page(self):
        self.profiles()
        rc, err = self.run_admit('p-11')
        # Found: the admission goes on to Nova (here unreachable).
        self.assertEqual(1, rc)
        self.assertIn('Nova is unreachable (the test stops at', err)
        rc, err = self.run_admit('b-only')
        self.assertEqual(1, rc)
        self.assertIn("REFUSED (profile): SLO term fw-a: no profile "
                      "'b-only' in resq-api", err)


class OptimizerPagesTest(PagesTestBase):
    """The optimizer's store and repairer read every page."""

    def test_plans_of_the_store(self):
        plans = [p['id'] for p in self.plans()]
        store = apistore.ServiceStore(self.service, None, applier='opt:1')
        self.assertEqual(plans, store.list_plans())

    def test_orphans_on_every_page(self):
        # Plans left applying by an optimizer that died (no lease: taken
        # over and returned).
        dead = subprocess.Popen(['true'])
        dead.wait()
        applier = '%s:%d' % (coordination.member_id().rpartition(':')[0],
                             dead.pid)
        self.service.create_snapshot('snap-of-plans', {'hosts': []})
        for i in range(COUNT):
            self.service.create_plan('plan-%02d' % i, 'snap-of-plans',
                                     test_api.plan_doc(1))
            self.admin.apply_plan('plan-%02d' % i, applier)
        store = apistore.ServiceStore(self.admin, None)
        self.assertEqual(['plan-%02d' % i for i in range(COUNT)],
                         sorted(p['id'] for p in store.orphaned()))

    def test_repair_reads_every_misplaced_server(self):
        uuids = self.isolation()
        compute = mock.Mock()
        # Each server has left the host it was reported on: not moved.
        compute.get_server.side_effect = lambda u: {
            'id': u, 'OS-EXT-SRV-ATTR:host': 'elsewhere'}
        self.assertEqual([], repair.Repairer(compute, self.service).run())
        self.assertEqual(uuids, [c.args[0] for c in
                                 compute.get_server.call_args_list])


# The keyset queries (ties on created_at, markers) on the other databases.
class MariaDBRawPagesTest(RawPagesTest):
    backend = 'mysql'


class PostgreSQLRawPagesTest(RawPagesTest):
    backend = 'postgresql'
