"""resq-nova's Placement client against a real Placement (in-process).

Placement's own fixture runs the Placement WSGI application on an in-memory
database behind wsgi-intercept; the client talks HTTP to it through
keystoneauth like it would to a deployed service.
"""

from unittest import mock
import uuid

from placement.tests.functional.fixtures import placement as placement_fixture
import testtools

from resq_agent import reporter
from resq_common import cache_domain
from resq_common.clients import placement as placement_client


class PlacementClientTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        fixture = self.useFixture(placement_fixture.PlacementFixture())
        self.client = placement_client.PlacementClient.for_endpoint(
            fixture.endpoint)
        self.root = str(uuid.uuid4())
        self.client.ensure_provider(self.root, 'cn1')

    def test_report_is_idempotent(self):
        doms = [cache_domain.CacheDomain(0, 20, num_closids=16),
                cache_domain.CacheDomain(1, 20, num_closids=16)]
        first = reporter.report(self.client, 'cn1', doms)
        generation = self.client.get_provider(first[0])['generation']
        second = reporter.report(self.client, 'cn1', doms)
        self.assertEqual(first, second)
        # Nothing was rewritten the second time.
        self.assertEqual(generation,
                         self.client.get_provider(first[0])['generation'])
        rp = self.client.get_provider(first[1])
        self.assertEqual('cn1_llc_1', rp['name'])
        self.assertEqual(self.root, rp['parent_provider_uuid'])
        inv = self.client.get_inventories(first[1])
        self.assertEqual(20, inv['CUSTOM_LLC_WAY']['total'])
        self.assertEqual(2, inv['CUSTOM_LLC_WAY']['reserved'])
        self.assertEqual(16, inv['CUSTOM_LLC_CLOS']['total'])
        self.assertEqual(['CUSTOM_CAT_L3', 'CUSTOM_RESQ_L3_1'],
                         self.client.get_traits(first[1]))

    def test_vanished_domain_loses_its_inventory(self):
        doms = [cache_domain.CacheDomain(0, 11), cache_domain.CacheDomain(1,
                                                                          11)]
        rps = reporter.report(self.client, 'cn1', doms)
        reporter.report(self.client, 'cn1', doms[:1])
        self.assertEqual({}, self.client.get_inventories(rps[1]))
        self.assertEqual(11, self.client.get_inventories(rps[0])
                         ['CUSTOM_LLC_WAY']['total'])

    def test_generation_conflicts_are_retried(self):
        dom = cache_domain.CacheDomain(0, 20)
        rps = reporter.report(self.client, 'cn1', [dom])
        real = self.client.get_provider
        calls = []

        def stale(uuid):
            provider = real(uuid)
            calls.append(uuid)
            if len(calls) == 1:
                # Another writer got in first: our generation is stale.
                provider = dict(provider, generation=provider['generation']
                                - 1)
            return provider

        with mock.patch.object(self.client, 'get_provider', stale):
            self.client.set_traits(rps[0], ['CUSTOM_CAT_L3', 'CUSTOM_X'])
        self.assertEqual(['CUSTOM_CAT_L3', 'CUSTOM_X'],
                         self.client.get_traits(rps[0]))
        self.assertEqual(2, len(calls))

    def test_errors_are_project_exceptions(self):
        self.assertRaises(placement_client.ProviderNotFound,
                          self.client.find_provider, 'nowhere')
        self.assertRaises(placement_client.ProviderNotFound,
                          self.client.set_inventories, str(uuid.uuid4()),
                          {'CUSTOM_LLC_WAY': {'total': 1}})
        exc = self.assertRaises(placement_client.PlacementError,
                                self.client.ensure_provider, self.root,
                                'other-name')
        self.assertIn('expected', str(exc))
        down = placement_client.PlacementClient.for_endpoint(
            'http://127.0.0.1:9/placement')
        exc = self.assertRaises(placement_client.PlacementUnavailable,
                                down.get_provider, self.root)
        self.assertIn('[placement]', str(exc))

    def test_a_class_nobody_reported_has_no_candidates(self):
        # Found on the real cloud: before any agent has reported, Placement
        # does not know CUSTOM_LLC_WAY and answers 400; admission must see
        # no room (and wait for the agents), not a failed request.
        body = self.client.allocation_candidates({
            '': {'resources': {'VCPU': 1}},
            '_LLC': {'resources': {'CUSTOM_NEVER_REPORTED': 1},
                     'required': ['CUSTOM_CAT_L3']}}, group_policy='none')
        self.assertEqual({'allocation_requests': [],
                          'provider_summaries': {}}, body)

    def test_other_bad_candidate_requests_still_fail(self):
        self.assertRaises(
            placement_client.PlacementError,
            self.client.allocation_candidates,
            {'': {'resources': {'VCPU': 1}, 'required': ['not a trait']}})
