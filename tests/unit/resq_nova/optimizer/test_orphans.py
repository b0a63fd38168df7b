"""The migration audit's judgement, on made-up Placement and Nova answers.

What Nova itself does is in tests/functional/test_optimizer_audit.py;
here, what the audit must refuse to act on.
"""

from resq_common import cache_domain
from resq_common.clients import compute as compute_mod
from resq_nova.optimizer import orphans
from tests import base

ROOT = '11111111-1111-4111-8111-111111111111'
LLC = cache_domain.provider_uuid(ROOT, 0)
C1 = 'cccccccc-0000-4000-8000-000000000001'
C2 = 'cccccccc-0000-4000-8000-000000000002'
# A server Nova's list leaves out but GET /servers/{id} shows.
HIDDEN = 'cccccccc-0000-4000-8000-00000000000f'


class Placement:

    def __init__(self, consumers):
        self.consumers = consumers      # {uuid: generation}
        self.deleted = []

    def list_providers(self):
        return [{'uuid': ROOT, 'root_provider_uuid': ROOT},
                {'uuid': LLC, 'root_provider_uuid': ROOT}]

    def get_provider_allocations(self, uuid):
        return {c: {'CUSTOM_LLC_WAY': 2} for c in self.consumers}

    def get_consumer(self, uuid):
        return {'allocations': {LLC: {'CUSTOM_LLC_WAY': 2}},
                'consumer_generation': self.consumers[uuid]}

    def delete_allocations(self, uuid, generation):
        self.deleted.append((uuid, generation))
        del self.consumers[uuid]


class Compute:

    def __init__(self, servers=(), migrations=(), down=(), admin=True):
        self.servers, self.migrations = set(servers), list(migrations)
        self.down, self.admin = list(down), admin

    def list_migrations(self, max_items=None):
        return self.migrations

    def list_all_servers(self):
        return [{'id': u} for u in sorted(self.servers) if u != HIDDEN]

    def find_server(self, uuid):
        return {'id': uuid} if uuid in self.servers else None

    def down_cell_services(self):
        return self.down

    def is_admin(self):
        return self.admin


class AuditTest(base.TestCase):

    def audit(self, placement, compute, **kw):
        return orphans.Auditor(placement, compute, **kw).run()

    def test_released_when_nova_names_it_nowhere(self):
        p = Placement({C1: 4, C2: 1})
        results = self.audit(p, Compute(servers=[C2]))
        self.assertEqual([(C1, orphans.RELEASED)],
                         [(r['consumer'], r['outcome']) for r in results])
        self.assertEqual([(C1, 4)], p.deleted)

    def test_a_server_only_get_shows_is_kept(self):
        p = Placement({HIDDEN: 1})
        self.assertEqual([], self.audit(p, Compute(servers=[HIDDEN])))
        self.assertEqual([], p.deleted)

    def test_a_down_cell_releases_nothing(self):
        p = Placement({C1: 4})
        (r,) = self.audit(p, Compute(down=[{'binary': 'nova-compute',
                                            'host': 'h9',
                                            'status': 'UNKNOWN'}]))
        self.assertEqual(orphans.KEPT, r['outcome'])
        self.assertIn('nova-compute@h9', r['detail'])
        self.assertEqual([], p.deleted)

    def test_credentials_without_admin_release_nothing(self):
        p = Placement({C1: 4})
        (r,) = self.audit(p, Compute(admin=False))
        self.assertEqual(orphans.KEPT, r['outcome'])
        self.assertIn('lack the admin role', r['detail'])
        self.assertEqual([], p.deleted)
        # Unknown (no Keystone: the in-process harness) does not block.
        self.assertEqual(orphans.RELEASED, self.audit(
            p, Compute(admin=None))[0]['outcome'])

    def test_a_listed_migration_is_kept_whatever_its_status(self):
        p = Placement({C1: 4})
        (r,) = self.audit(p, Compute(migrations=[
            {'uuid': C1, 'status': 'error', 'instance_uuid': C2}]))
        self.assertEqual(orphans.KEPT, r['outcome'])
        self.assertEqual([], p.deleted)

    def test_two_sightings_with_the_same_generation(self):
        now = [100.0]
        seen = {}
        p = Placement({C1: 4})
        kw = dict(seen=seen, min_age=10, clock=lambda: now[0])
        self.assertEqual(orphans.KEPT,
                         self.audit(p, Compute(), **kw)[0]['outcome'])
        now[0] += 5
        self.assertEqual(orphans.KEPT,
                         self.audit(p, Compute(), **kw)[0]['outcome'])
        # Changed meanwhile: the wait starts again.
        p.consumers[C1] = 5
        now[0] += 6
        self.assertEqual(orphans.KEPT,
                         self.audit(p, Compute(), **kw)[0]['outcome'])
        now[0] += 10
        self.assertEqual(orphans.RELEASED,
                         self.audit(p, Compute(), **kw)[0]['outcome'])
        self.assertEqual([(C1, 5)], p.deleted)
        self.assertEqual({}, seen)

    def test_one_named_again_is_forgotten(self):
        seen = {}
        p = Placement({C1: 4})
        orphans.Auditor(p, Compute(), seen=seen, min_age=10).run()
        self.assertIn(C1, seen)
        orphans.Auditor(p, Compute(servers=[C1]), seen=seen,
                        min_age=10).run()
        self.assertEqual({}, seen)

    def test_stopping_ends_the_pass(self):
        p = Placement({C1: 4, C2: 1})
        self.assertEqual([], self.audit(p, Compute(),
                                        stopping=lambda: True))
        self.assertEqual([], p.deleted)


class MigrationListTest(base.TestCase):
    """Nova's migration list is read to an empty page, or not at all."""

    def client(self, pages):
        client = compute_mod.ComputeClient(adapter=None)
        calls = []

        def call(method, url, body=None, ok=(200,), microversion=None):
            calls.append(url)
            return {'migrations': pages[len(calls) - 1]}
        client._call = call
        return client, calls

    @staticmethod
    def page(*uuids):
        return [{'uuid': u} for u in uuids]

    def test_a_short_page_is_not_the_last(self):
        client, calls = self.client([self.page('a', 'b'), self.page('c'),
                                     self.page('d'), []])
        self.assertEqual(['a', 'b', 'c', 'd'],
                         [m['uuid'] for m in client.list_migrations()])
        self.assertEqual(4, len(calls))

    def test_a_repeated_page_is_an_error(self):
        client, _ = self.client([self.page('a'), self.page('a')])
        self.assertRaises(compute_mod.ComputeError, client.list_migrations)

    def test_too_many_is_an_error(self):
        client, _ = self.client([self.page('a', 'b'), self.page('c', 'd'),
                                 []])
        self.assertRaises(compute_mod.ComputeError, client.list_migrations,
                          max_items=3)
