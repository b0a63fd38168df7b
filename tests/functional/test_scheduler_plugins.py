"""The ResQ filter and weigher on Nova's own objects, without services."""

import datetime
import gc
import json
import logging
import threading
from unittest import mock
import uuid

import fixtures

from nova import context as nova_context
from nova import objects
from nova.pci import stats as pci_stats
from nova.scheduler.client import report
from nova.scheduler import host_manager
from nova.tests.unit import fake_pci_device_pools
from oslotest import base
import requests

from resq_common import cache_domain
from resq_nova.nova import internals
from resq_nova.nova import scheduler
from resq_nova.nova.scheduler import filters
from resq_nova.nova.scheduler import weights

objects.register_all()


def topology(pinned=((), ())):
    cells = []
    for cell, used in enumerate(pinned):
        cpus = set(range(cell * 4, cell * 4 + 4))
        cells.append(objects.NUMACell(
            id=cell, cpuset=set(), pcpuset=cpus, memory=4096,
            memory_usage=0, pinned_cpus=set(used),
            siblings=[{c} for c in cpus], mempages=[],
            network_metadata=objects.NetworkMetadata(physnets=set(),
                                                     tunneled=False),
            socket=cell))
    return objects.NUMATopology(cells=cells)


def host(name, numa):
    hs = host_manager.HostState(name, name, None)
    hs.uuid = str(uuid.uuid4())
    hs.numa_topology = numa
    hs.limits = {}
    hs.updated = datetime.datetime.now(datetime.timezone.utc)
    hs.allocation_candidates = [
        {'allocations': {}, 'mappings': {
            '': [hs.uuid], '_LLC': [cache_domain.provider_uuid(hs.uuid, d)]}}
        for d in (0, 1)]
    return hs


def spec(vcpus=2, **extra):
    specs = {'hw:cpu_policy': 'dedicated', 'resq:slo': 'reserved',
             'resources_LLC:CUSTOM_LLC_WAY': '4',
             'resources_LLC:CUSTOM_LLC_CLOS': '1'}
    specs.update(extra)
    flavor = objects.Flavor(name='nf', flavorid='nf', vcpus=vcpus,
                            memory_mb=512, root_gb=1, ephemeral_gb=0,
                            swap=0, extra_specs=specs)
    numa = objects.InstanceNUMATopology(cells=[objects.InstanceNUMACell(
        id=0, cpuset=set(), pcpuset=set(range(vcpus)), memory=512,
        cpu_policy='dedicated')])
    return objects.RequestSpec(flavor=flavor, numa_topology=numa,
                               instance_uuid=str(uuid.uuid4()),
                               scheduler_hints={})


class NUMAStateTest(base.BaseTestCase):

    def test_equal_content_shares_a_key_changed_content_does_not(self):
        a = scheduler.numa_state(topology())
        b = scheduler.numa_state(topology())
        c = scheduler.numa_state(topology(pinned=((0,), ())))
        self.assertEqual(a.key, b.key)
        self.assertNotEqual(a.key, c.key)
        self.assertEqual((0, 8), (a.pinned, a.total))
        self.assertEqual((1, 8), (c.pinned, c.total))

    def test_a_replaced_topology_is_read_again(self):
        hs = host('h', topology())
        before = scheduler.numa_state(hs.numa_topology)
        # What HostState.consume_from_request does: a new object.
        hs.numa_topology = topology(pinned=((0, 1), ()))
        after = scheduler.numa_state(hs.numa_topology)
        self.assertEqual(2, after.pinned)
        self.assertNotEqual(before.key, after.key)

    def test_the_entry_leaves_with_its_topology(self):
        numa = topology()
        key = id(numa)
        state = scheduler.numa_state(numa)
        self.assertIs(state, scheduler.numa_states()(key)[1])
        del numa
        gc.collect()
        self.assertIsNone(scheduler.numa_states()(key))

    def test_every_live_topology_stays_read(self):
        # No cap on the topologies: the map holds what the host states
        # hold (a cap emptied when full missed every host of a larger
        # fleet).
        numas = [topology() for _ in range(50)]
        states = [scheduler.numa_state(n) for n in numas]
        with mock.patch.object(scheduler, 'NUMAState',
                               side_effect=AssertionError('read again')):
            self.assertEqual(states,
                             [scheduler.numa_state(n) for n in numas])

    def test_state_ids_are_bounded_and_never_reused(self):
        self.useFixture(fixtures.MockPatchObject(scheduler,
                                                 '_STATE_IDS_MAX', 2))
        self.useFixture(fixtures.MockPatchObject(scheduler, '_STATE_IDS',
                                                 {}))
        numas = [topology(pinned=((c,), ())) for c in range(3)]
        keys = [scheduler.numa_state(n).key for n in numas]
        self.assertEqual(3, len(set(keys)))
        self.assertLessEqual(len(scheduler._STATE_IDS), 2)
        # Seen again after the ids were emptied: a new id, never an old
        # one of another state.
        again = scheduler.numa_state(topology(pinned=((0,), ()))).key
        self.assertNotIn(again, keys)


class RequestParsingTest(base.BaseTestCase):

    def test_equal_flavors_are_parsed_once(self):
        scheduler.resq_request(spec())
        before = scheduler._parse.cache_info()
        request, error = scheduler.resq_request(spec())
        after = scheduler._parse.cache_info()
        self.assertIsNone(error)
        self.assertEqual(4, request.ways)
        self.assertEqual(before.hits + 1, after.hits)
        self.assertEqual(before.misses, after.misses)

    def test_a_changed_flavor_is_parsed_again(self):
        request = spec()
        self.assertEqual(4, scheduler.resq_request(request)[0].ways)
        request.flavor.extra_specs = dict(
            request.flavor.extra_specs,
            **{'resources_LLC:CUSTOM_LLC_WAY': '6'})
        self.assertEqual(6, scheduler.resq_request(request)[0].ways)
        request.flavor.vcpus = 4
        self.assertEqual(4, scheduler.resq_request(request)[0].vcpus)
        request.flavor.extra_specs = {}
        self.assertEqual((None, None), scheduler.resq_request(request))


class FilterTest(base.BaseTestCase):

    def test_one_numa_fit_per_state_and_request(self):
        hosts = [host('h%d' % i, topology()) for i in range(3)]
        fit = mock.Mock(wraps=filters._pinned_cell)
        with mock.patch.object(filters, '_pinned_cell', fit):
            self.assertEqual(hosts,
                             filters.ResQFilter().filter_all(hosts, spec()))
            self.assertEqual(1, fit.call_count)
            # A claim replaces a host's topology: its new state gets a
            # fit of its own, in the same request and in the next.
            hosts[1].numa_topology = topology(pinned=((0, 1, 2), ()))
            for hs in hosts:
                hs.allocation_candidates = [
                    {'allocations': {}, 'mappings': {
                        '': [hs.uuid],
                        '_LLC': [cache_domain.provider_uuid(hs.uuid, d)]}}
                    for d in (0, 1)]
            self.assertEqual(hosts,
                             filters.ResQFilter().filter_all(hosts, spec()))
            self.assertEqual(3, fit.call_count)
        self.assertEqual([[cache_domain.provider_uuid(hosts[1].uuid, 1)]],
                         [c['mappings']['_LLC']
                          for c in hosts[1].allocation_candidates])

    def test_non_resq_request_gets_the_same_list_back(self):
        hosts = [host('h%d' % i, topology()) for i in range(3)]
        request = spec()
        request.flavor.extra_specs = {}
        self.assertIs(hosts, filters.ResQFilter().filter_all(hosts, request))
        self.assertEqual(2, len(hosts[0].allocation_candidates))

    def test_prunes_candidates_to_the_pinned_cell_domain(self):
        # Cell 0 has one free core: a 2-core instance goes to cell 1.
        hs = host('h', topology(pinned=((0, 1, 2), ())))
        passed = filters.ResQFilter().filter_all([hs], spec())
        self.assertEqual([hs], passed)
        self.assertEqual(
            [[cache_domain.provider_uuid(hs.uuid, 1)]],
            [c['mappings']['_LLC'] for c in hs.allocation_candidates])

    def test_host_without_room_in_one_cell_fails(self):
        hs = host('h', topology(pinned=((0, 1, 2), (4, 5, 6))))
        self.assertEqual([], filters.ResQFilter().filter_all([hs], spec()))

    def _pci_host(self, node):
        hs = host('pci', topology())
        pool = dict(fake_pci_device_pools.fake_pool_dict, numa_node=node)
        hs.pci_stats = pci_stats.PciDeviceStats(
            objects.NUMATopology(), [objects.PciDevicePool.from_dict(pool)])
        return hs

    def test_pci_devices_decide_the_cell_as_in_novas_fit(self):
        # A device in cell 0: Nova keeps an instance without PCI requests
        # off that cell, so its cores (and ways) go to cell 1.
        hs = self._pci_host(0)
        self.assertEqual([hs], filters.ResQFilter().filter_all([hs], spec()))
        self.assertEqual([[cache_domain.provider_uuid(hs.uuid, 1)]],
                         [c['mappings']['_LLC']
                          for c in hs.allocation_candidates])
        # An SR-IOV-style request for that device pins next to it: cell 0.
        hs = self._pci_host(0)
        request = spec()
        request.pci_requests = objects.InstancePCIRequests(requests=[
            objects.InstancePCIRequest(
                count=1, spec=[{'vendor_id': 'fake-vendor',
                                'product_id': 'fake-product'}],
                request_id=str(uuid.uuid4()))])
        self.assertEqual([hs], filters.ResQFilter().filter_all([hs],
                                                               request))
        self.assertEqual([[cache_domain.provider_uuid(hs.uuid, 0)]],
                         [c['mappings']['_LLC']
                          for c in hs.allocation_candidates])

    def test_per_host_refusals_log_at_debug(self):
        hosts = [host('full', topology(pinned=((0, 1, 2), (4, 5, 6))))]
        info = self.useFixture(fixtures.FakeLogger(level=logging.INFO))
        self.assertEqual([], filters.ResQFilter().filter_all(hosts, spec()))
        self.assertNotIn('full', info.output)
        debug = self.useFixture(fixtures.FakeLogger(level=logging.DEBUG))
        filters.ResQFilter().filter_all(hosts, spec())
        self.assertIn('cannot pin 2 dedicated cores in one NUMA cell',
                      debug.output)
        self.assertIn('ResQFilter: (full, full)', debug.output)

    def test_invalid_resq_flavor_fails_every_host(self):
        hosts = [host('h', topology())]
        request = spec(**{'hw:cpu_policy': 'shared'})
        self.assertEqual([], filters.ResQFilter().filter_all(hosts, request))


class WeigherTest(base.BaseTestCase):

    def test_fuller_host_weighs_more_and_others_weigh_zero(self):
        class W:
            def __init__(self, obj):
                self.obj = obj

        empty = host('empty', topology())
        busy = host('busy', topology(pinned=((0, 1), (4,))))
        weigher = weights.ResQWeigher()
        got = weigher.weigh_objects([W(empty), W(busy)], spec())
        self.assertEqual([2 / 8, 5 / 8], got)
        request = spec()
        request.flavor.extra_specs = {}
        self.assertEqual([0.0, 0.0],
                         weigher.weigh_objects([W(empty), W(busy)], request))

    def test_ways_and_classes_of_service_count(self):
        class W:
            def __init__(self, obj):
                self.obj = obj

        # Same cores pinned; a's candidate domain is fuller in ways and
        # classes of service.
        a = host('a', topology(pinned=((0,), ())))
        b = host('b', topology(pinned=((0,), ())))
        rp_a = a.allocation_candidates[0]['mappings']['_LLC'][0]
        rp_b = b.allocation_candidates[0]['mappings']['_LLC'][0]
        weigher = weights.ResQWeigher()
        usage = {rp_a: (12, 16, 3, 7), rp_b: (0, 16, 0, 7)}
        with mock.patch.object(weigher, '_llc_usage', return_value=usage):
            wa, wb = weigher.weigh_objects([W(a), W(b)], spec())
        self.assertAlmostEqual((3 / 8 + 16 / 16 + 4 / 7) / 3, wa)
        self.assertAlmostEqual((3 / 8 + 4 / 16 + 1 / 7) / 3, wb)

    def test_placement_down_weighs_by_cores_only(self):
        class W:
            def __init__(self, obj):
                self.obj = obj

        weigher = weights.ResQWeigher()
        broken = mock.Mock()
        broken.get.side_effect = RuntimeError('no placement here')
        weigher._placement = broken
        logs = self.useFixture(fixtures.FakeLogger())
        got = weigher.weigh_objects([W(host('a', topology()))], spec())
        self.assertEqual([2 / 8], got)
        self.assertIn('weighing by cores only', logs.output)
        # Not asked again for a while: one failure per minute, not per
        # request.
        weigher.weigh_objects([W(host('a', topology()))], spec())
        self.assertEqual(1, broken.get.call_count)

    def test_aggregate_multiplier_overrides_the_option(self):
        weigher = weights.ResQWeigher()
        plain = host('plain', topology())
        tuned = host('tuned', topology())
        tuned.aggregates = [objects.Aggregate(
            id=1, name='spread', hosts=['tuned'],
            metadata={'resq_weigher_multiplier': '-2.5'})]
        self.assertEqual(10.0, weigher.weight_multiplier(plain))
        self.assertEqual(-2.5, weigher.weight_multiplier(tuned))

    def test_multiplier_asks_nova_only_for_hosts_in_aggregates(self):
        weigher = weights.ResQWeigher()
        plain = host('plain', topology())
        tuned = host('tuned', topology())
        tuned.aggregates = [objects.Aggregate(
            id=1, name='packed', hosts=['tuned'], metadata={})]
        helper = self.useFixture(fixtures.MockPatchObject(
            weights.internals, 'weight_multiplier', return_value=3.0)).mock
        self.assertEqual(10.0, weigher.weight_multiplier(plain))
        helper.assert_not_called()
        self.assertEqual(3.0, weigher.weight_multiplier(tuned))
        helper.assert_called_once_with(tuned, weights.AGGREGATE_KEY, 10.0)


def answer(hosts, usage, summaries_last=True):
    """Placement's allocation candidates answer (1.33) for the hosts.

    A candidate per cache domain; the summaries of the compute nodes and
    of the domains, with ``usage[rp] = (ways used, ways capacity, classes
    used, classes capacity)`` (default: empty domains).
    """
    requests, summaries = [], {}
    for hs in hosts:
        summaries[hs.uuid] = {
            'resources': {'PCPU': {'capacity': 8, 'used': 0}},
            'traits': ['COMPUTE_NODE', 'HW_CPU_X86_AVX2'],
            'parent_provider_uuid': None, 'root_provider_uuid': hs.uuid}
        for d in (0, 1):
            rp = cache_domain.provider_uuid(hs.uuid, d)
            requests.append({
                'allocations': {rp: {'resources': {'CUSTOM_LLC_WAY': 4,
                                                   'CUSTOM_LLC_CLOS': 1}}},
                'mappings': {'_LLC': [rp]}})
            ways_used, ways_cap, clos_used, clos_cap = usage.get(
                rp, (0, 16, 0, 7))
            summaries[rp] = {
                'resources': {
                    'CUSTOM_LLC_WAY': {'capacity': ways_cap,
                                       'used': ways_used},
                    'CUSTOM_LLC_CLOS': {'capacity': clos_cap,
                                        'used': clos_used}},
                'traits': ['CUSTOM_RESQ_L3_%d' % d,
                           'CUSTOM_RESQ_NUMA_%d' % d],
                'parent_provider_uuid': hs.uuid,
                'root_provider_uuid': hs.uuid}
    if summaries_last:
        return {'allocation_requests': requests,
                'provider_summaries': summaries}
    return {'provider_summaries': summaries,
            'allocation_requests': requests}


def response(body, encoding='utf-8'):
    """A requests response, as keystoneauth gives the plugins."""
    resp = requests.Response()
    resp.status_code = 200
    resp.headers['Content-Type'] = 'application/json'
    resp._content = json.dumps(body).encode('utf-8')
    resp.encoding = encoding
    return resp


class PlacementAnswerTest(base.BaseTestCase):
    """The weigher's reading of Placement's allocation candidates."""

    # The weigher's own wrapper of a host state, as Nova's handler gives.
    W = weights._Weighed

    def test_weights_from_the_answer_as_from_the_usage(self):
        # test_ways_and_classes_of_service_count, through the GET.
        a = host('a', topology(pinned=((0,), ())))
        b = host('b', topology(pinned=((0,), ())))
        rp_a = a.allocation_candidates[0]['mappings']['_LLC'][0]
        weigher = weights.ResQWeigher()
        client = mock.Mock()
        client.get.return_value = response(
            answer([a, b], {rp_a: (12, 16, 3, 7)}))
        weigher._placement = client
        wa, wb = weigher.weigh_objects([self.W(a), self.W(b)], spec())
        self.assertAlmostEqual((3 / 8 + 16 / 16 + 4 / 7) / 3, wa)
        self.assertAlmostEqual((3 / 8 + 4 / 16 + 1 / 7) / 3, wb)
        client.get.assert_called_once()

    def test_only_the_summaries_are_decoded(self):
        hosts = [host('h%d' % i, topology()) for i in range(3)]
        body = answer(hosts, {})
        resp = response(body)
        with mock.patch.object(resp, 'json',
                               side_effect=AssertionError('whole body')):
            self.assertEqual(body['provider_summaries'],
                             weights.provider_summaries(resp))

    def test_the_whole_body_when_the_summaries_are_not_last(self):
        hosts = [host('h%d' % i, topology()) for i in range(3)]
        body = answer(hosts, {}, summaries_last=False)
        resp = response(body)
        self.assertEqual(body['provider_summaries'],
                         weights.provider_summaries(resp))

    def test_the_whole_body_without_a_charset(self):
        # requests would guess one from the whole body for .text.
        body = answer([host('h', topology())], {})
        resp = response(body, encoding=None)
        self.assertEqual(body['provider_summaries'],
                         weights.provider_summaries(resp))

    def test_the_key_inside_a_summary_is_not_taken_for_the_answers(self):
        hs = host('h', topology())
        body = answer([hs], {})
        # Not in a real answer; if it were, it would not be decoded as
        # the answer's summaries.
        body['provider_summaries'][hs.uuid]['provider_summaries'] = {}
        resp = response(body)
        self.assertEqual(body['provider_summaries'],
                         weights.provider_summaries(resp))

    def test_an_answer_without_summaries_weighs_by_cores(self):
        client = mock.Mock()
        client.get.return_value = response({'allocation_requests': []})
        weigher = weights.ResQWeigher()
        weigher._placement = client
        logs = self.useFixture(fixtures.FakeLogger())
        got = weigher.weigh_objects([self.W(host('a', topology()))], spec())
        self.assertEqual([2 / 8], got)
        self.assertIn('weighing by cores only', logs.output)

    def test_usage_is_the_llc_providers_of_the_summaries(self):
        hosts = [host('h%d' % i, topology()) for i in range(2)]
        rp = cache_domain.provider_uuid(hosts[0].uuid, 1)
        summaries = answer(hosts, {rp: (5, 9, 2, 15)})['provider_summaries']
        usage = weights._Usage(summaries)
        eager = {}
        for uuid_, summary in summaries.items():
            res = summary['resources']
            if 'CUSTOM_LLC_WAY' in res:
                eager[uuid_] = (res['CUSTOM_LLC_WAY']['used'],
                                res['CUSTOM_LLC_WAY']['capacity'],
                                res['CUSTOM_LLC_CLOS']['used'],
                                res['CUSTOM_LLC_CLOS']['capacity'])
        self.assertEqual(eager, dict(usage))
        self.assertEqual((5, 9, 2, 15), usage.get(rp))
        self.assertIsNone(usage.get(hosts[0].uuid))    # a compute node
        self.assertIsNone(usage.get('no-such-provider'))
        self.assertEqual(4, len(usage))
        self.assertTrue(usage)
        compute_nodes = {h.uuid: summaries[h.uuid] for h in hosts}
        self.assertFalse(weights._Usage(compute_nodes))
        self.assertFalse(weights._Usage({}))


class _ReportClient:
    """Nova's report client as the hook sees it: the method, its answer."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.calls = 0

    def get_allocation_candidates(self, context, resources):
        self.calls += 1
        return self.answers.pop(0)


def context():
    """A request's context, as nova-scheduler's RPC server builds one."""
    return nova_context.RequestContext('user', 'project', is_admin=False)


def request_in(ctx, **extra):
    """spec() as select_destinations gets it, with the request's context."""
    spec_obj = spec(**extra)
    spec_obj._context = ctx
    return spec_obj


class NovaAnswerTest(base.BaseTestCase):
    """The weigher reads Nova's own allocation candidates (issue 44)."""

    # The weigher's own wrapper of a host state, as Nova's handler gives.
    W = weights._Weighed

    def setUp(self):
        super().setUp()
        # A fresh report client class per test, hooked as Nova's is.
        self.cls = type('ReportClient', (_ReportClient,), {})
        self.assertTrue(internals._install(self.cls))
        vars(internals._ANSWERS).clear()
        self.addCleanup(vars(internals._ANSWERS).clear)
        self.ctx = context()

    def answer(self, hosts, usage=None):
        body = answer(hosts, usage or {})
        return body['allocation_requests'], body['provider_summaries'], '1.x'

    def test_the_installed_novas_method_is_hooked_once(self):
        # What the weigher installs in nova-scheduler, on this Nova.
        weights.ResQWeigher()
        self.assertTrue(weights.ResQWeigher()._nova_answers)
        method = report.SchedulerReportClient.get_allocation_candidates
        self.assertTrue(getattr(method, internals._HOOK_MARK))
        self.assertFalse(getattr(method.__wrapped__, internals._HOOK_MARK,
                                 False))
        self.assertTrue(internals.keep_allocation_candidates())
        self.assertIs(method,
                      report.SchedulerReportClient.get_allocation_candidates)

    def test_the_answer_goes_to_its_request_once(self):
        hosts = [host('a', topology())]
        result = self.answer(hosts)
        client = self.cls(result)
        self.assertIs(result,
                      client.get_allocation_candidates(self.ctx, None))
        self.assertIs(result[1],
                      internals.nova_provider_summaries(
                          request_in(self.ctx)))
        # Forgotten once read: a multi-create's next instance is weighed
        # after Nova's claim of the first.
        self.assertIsNone(internals.nova_provider_summaries(
            request_in(self.ctx)))

    def test_another_requests_answer_is_not_read(self):
        client = self.cls(self.answer([host('a', topology())]))
        client.get_allocation_candidates(self.ctx, None)
        # A rebuild asks Placement nothing; a spec built without a
        # context (no RPC) has None.
        other = context()
        self.assertIsNone(internals.nova_provider_summaries(
            request_in(other)))
        # ... and the unread answer is gone, not left for later.
        self.assertIsNone(internals.nova_provider_summaries(
            request_in(self.ctx)))
        client = self.cls(self.answer([host('a', topology())]))
        client.get_allocation_candidates(self.ctx, None)
        self.assertIsNone(internals.nova_provider_summaries(spec()))

    def test_a_new_request_replaces_an_unread_answer(self):
        first, second = (self.answer([host('a', topology())]),
                         self.answer([host('b', topology())]))
        client = self.cls(first, second)
        client.get_allocation_candidates(self.ctx, None)
        other = context()
        client.get_allocation_candidates(other, None)
        self.assertIs(second[1], internals.nova_provider_summaries(
            request_in(other)))

    def test_a_failed_query_leaves_no_answer(self):
        client = self.cls(self.answer([host('a', topology())]), None,
                          (None, None, None))
        client.get_allocation_candidates(self.ctx, None)
        for ctx in (context(), context()):
            # None: safe_connect's when Placement cannot be reached.
            client.get_allocation_candidates(ctx, None)
            self.assertIsNone(internals.nova_provider_summaries(
                request_in(ctx)))

    def test_the_same_requests_second_query_is_merged(self):
        # select_destinations asks again with VCPU for PCPU and merges the
        # summaries, the second answer's over the first's.
        a, b = host('a', topology()), host('b', topology())
        first, second = self.answer([a]), self.answer([b])
        rp = cache_domain.provider_uuid(a.uuid, 0)
        second[1][rp] = {'resources': {}}
        client = self.cls(first, second)
        client.get_allocation_candidates(self.ctx, None)
        client.get_allocation_candidates(self.ctx, None)
        merged = dict(first[1])
        merged.update(second[1])
        self.assertEqual(merged, internals.nova_provider_summaries(
            request_in(self.ctx)))

    def test_each_thread_reads_its_own_answer(self):
        hosts = [host('a', topology())]
        mine = self.answer(hosts)
        self.cls(mine).get_allocation_candidates(self.ctx, None)
        got = {}

        def other_thread():
            ctx = context()
            got['before'] = internals.nova_provider_summaries(
                request_in(self.ctx))
            theirs = self.answer(hosts)
            self.cls(theirs).get_allocation_candidates(ctx, None)
            got['theirs'] = theirs[1]
            got['read'] = internals.nova_provider_summaries(request_in(ctx))

        thread = threading.Thread(target=other_thread)
        thread.start()
        thread.join()
        self.assertIsNone(got['before'])
        self.assertIs(got['theirs'], got['read'])
        self.assertIs(mine[1], internals.nova_provider_summaries(
            request_in(self.ctx)))

    def test_an_unknown_method_is_left_alone_with_one_warning(self):
        self.useFixture(fixtures.MockPatchObject(internals, '_HOOK_WARNED',
                                                 []))
        logs = self.useFixture(fixtures.FakeLogger())

        class Future:
            def get_allocation_candidates(self, context, resources, limit):
                pass

        class Gone:
            pass

        original = Future.get_allocation_candidates
        self.assertFalse(internals._install(Future))
        self.assertFalse(internals._install(Gone))
        self.assertIs(original, Future.get_allocation_candidates)
        self.assertEqual(1, logs.output.count('cannot read Nova'))
        self.assertIn('(self, context, resources, limit)', logs.output)

    def test_weighs_from_novas_answer_without_a_get(self):
        # PlacementAnswerTest.test_weights_from_the_answer_as_from_the_usage
        # with Nova's answer: the same weights, nothing asked.
        a = host('a', topology(pinned=((0,), ())))
        b = host('b', topology(pinned=((0,), ())))
        rp_a = a.allocation_candidates[0]['mappings']['_LLC'][0]
        weigher = weights.ResQWeigher()
        client = mock.Mock()
        client.get.return_value = response(
            answer([a, b], {rp_a: (12, 16, 3, 7)}))
        weigher._placement = client
        self.cls(self.answer([a, b], {rp_a: (12, 16, 3, 7)})) \
            .get_allocation_candidates(self.ctx, None)
        request = request_in(self.ctx)
        wa, wb = weigher.weigh_objects([self.W(a), self.W(b)], request)
        self.assertAlmostEqual((3 / 8 + 16 / 16 + 4 / 7) / 3, wa)
        self.assertAlmostEqual((3 / 8 + 4 / 16 + 1 / 7) / 3, wb)
        client.get.assert_not_called()
        # The next instance of a multi-create: Placement, as before.
        self.assertEqual([wa, wb], weigher.weigh_objects(
            [self.W(a), self.W(b)], request))
        client.get.assert_called_once()

    def test_non_resq_requests_drop_the_answer(self):
        weigher = weights.ResQWeigher()
        self.cls(self.answer([host('a', topology())])) \
            .get_allocation_candidates(self.ctx, None)
        request = request_in(self.ctx)
        request.flavor.extra_specs = {}
        self.assertEqual([0.0], weigher.weigh_objects(
            [self.W(host('a', topology()))], request))
        self.assertIsNone(getattr(internals._ANSWERS, 'answer', None))

    def test_without_the_hook_the_weigher_asks_placement(self):
        self.useFixture(fixtures.MockPatchObject(
            internals, 'keep_allocation_candidates', return_value=False))
        a = host('a', topology())
        weigher = weights.ResQWeigher()
        client = mock.Mock()
        client.get.return_value = response(answer([a], {}))
        weigher._placement = client
        self.cls(self.answer([a])).get_allocation_candidates(self.ctx, None)
        weigher.weigh_objects([self.W(a)], request_in(self.ctx))
        client.get.assert_called_once()
