"""The ResQ filter and weigher on Nova's own objects, without services."""

import datetime
import logging
from unittest import mock
import uuid

import fixtures

from nova import objects
from nova.pci import stats as pci_stats
from nova.scheduler import host_manager
from nova.tests.unit import fake_pci_device_pools
from oslotest import base

from resq_common import cache_domain
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


class FilterTest(base.BaseTestCase):

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
