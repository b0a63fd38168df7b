import os

import fixtures

from resq_agent import discovery
from resq_common import exception
from tests import base
from tests.fixtures import resctrl as resctrl_fixture
from tests.fixtures import sysfs as sysfs_fixture

DUAL = {0: tuple(range(0, 8)), 1: tuple(range(8, 16))}


def caps(banks):
    items = ''.join(
        "<bank id='%d' level='3' type='both' size='%s' unit='%s' "
        "cpus='%s'/>" % b for b in banks)
    return ('<capabilities><host><cpu/><cache>%s</cache></host>'
            '</capabilities>' % items)


class DiscoveryTest(base.TestCase):

    def discover(self, ddio_ways=2, **kw):
        sysfs = self.useFixture(sysfs_fixture.SysfsTree(
            domains=kw.pop('domains', DUAL), size=kw.pop('size', '30720K'),
            ways=kw.get('ways', 20), numa=kw.pop('numa', None),
            memory=kw.pop('memory', None)))
        tree = self.useFixture(resctrl_fixture.ResctrlTree(
            domains=tuple(sysfs.domains), **kw))
        return discovery.discover(tree.root, sysfs.root, ddio_ways), tree

    def test_dual_socket_20_ways(self):
        topo, _ = self.discover(ways=20, min_cbm_bits=1, num_closids=16)
        self.assertTrue(topo.resctrl_available)
        self.assertEqual([0, 1], [d.id for d in topo.domains])
        dom = topo.domain(1)
        self.assertEqual(tuple(range(8, 16)), dom.cpus)
        self.assertEqual(20, dom.ways)
        self.assertEqual(30720 * 1024 // 20, dom.way_size_bytes)
        # shareable_bits is 0: the configured DDIO ways at the top.
        self.assertEqual(2, dom.io_ways)
        self.assertEqual(0xc0000, dom.io_mask)
        self.assertFalse(dom.cdp)
        self.assertFalse(dom.mba)

    def test_numa_cells_come_from_sysfs_not_from_cache_ids(self):
        # Cache ids that are not the cells' ids: L3 0 holds cell 1's CPUs.
        topo, _ = self.discover(domains={0: tuple(range(8, 16)),
                                         1: tuple(range(0, 8))},
                                numa=DUAL, ways=20)
        self.assertEqual((1,), topo.domain(0).numa_cells)
        self.assertEqual((0,), topo.domain(1).numa_cells)
        traits = discovery.cache_domain_of(topo.domain(0), 1, 2).traits()
        self.assertIn('CUSTOM_RESQ_NUMA_1', traits)
        self.assertNotIn('CUSTOM_RESQ_NUMA_0', traits)

    def test_numa_memory_and_huge_pages_reach_the_traits(self):
        # Cell 0: 64 GiB with 16 GiB of 2 MiB pages and 2 of 1 GiB pages;
        # cell 1: 64 GiB, no huge pages.
        topo, _ = self.discover(
            numa=DUAL, ways=20, memory={
                0: (64 * 1024 * 1024, {2048: 8192, 1048576: 2}),
                1: (64 * 1024 * 1024, {})})
        self.assertEqual((46 * 1024, 18 * 1024),
                         (topo.domain(0).memory_mb,
                          topo.domain(0).hugepages_mb))
        self.assertEqual((64 * 1024, 0), (topo.domain(1).memory_mb,
                                          topo.domain(1).hugepages_mb))
        traits = discovery.cache_domain_of(topo.domain(0), 1, 2).traits()
        self.assertIn('CUSTOM_RESQ_MEMORY_MB_47104', traits)
        self.assertIn('CUSTOM_RESQ_HUGEPAGES_MB_18432', traits)

    def test_unreadable_node_memory_is_not_reported(self):
        logs = self.useFixture(fixtures.FakeLogger())
        sysfs = self.useFixture(sysfs_fixture.SysfsTree(
            domains=DUAL, numa=DUAL, memory={0: (1024 * 1024, {2048: 1}),
                                             1: (1024 * 1024, {})}))
        with open(os.path.join(sysfs.root, 'devices/system/node/node0/'
                               'hugepages/hugepages-2048kB/nr_hugepages'),
                  'w') as f:
            f.write('\u0661\n')        # an Arabic-Indic one: not ASCII
        memory = discovery.read_sysfs_numa_memory(sysfs.root)
        self.assertEqual({1: (1024, 0)}, memory)
        self.assertIn('Ignoring the memory of NUMA node 0', logs.output)
        # A domain with a cell of unknown memory reports none.
        tree = self.useFixture(resctrl_fixture.ResctrlTree(
            domains=tuple(sysfs.domains)))
        topo = discovery.discover(tree.root, sysfs.root)
        self.assertIsNone(topo.domain(0).hugepages_mb)
        self.assertEqual(1024, topo.domain(1).memory_mb)
        self.assertNotIn('CUSTOM_RESQ_HUGEPAGES_MB_',
                         ' '.join(discovery.cache_domain_of(
                             topo.domain(0), 1, 2).traits()))

    def test_sub_numa_clustering_two_cells_share_one_cache(self):
        topo, _ = self.discover(domains={0: tuple(range(8))},
                                numa={0: (0, 1, 2, 3), 1: (4, 5, 6, 7),
                                      2: ()}, ways=20)
        # Node 2 has memory only: no cores to pin, no cell of a cache.
        self.assertEqual((0, 1), topo.domains[0].numa_cells)

    def test_a_cell_split_over_caches_belongs_to_none(self):
        logs = self.useFixture(fixtures.FakeLogger())
        topo, _ = self.discover(domains={0: (0, 1, 2, 3), 1: (4, 5, 6, 7)},
                                numa={0: tuple(range(8))}, ways=20)
        self.assertEqual([(), ()], [d.numa_cells for d in topo.domains])
        self.assertIn('NUMA cell 0 share no single L3 cache', logs.output)
        # No NUMA nodes in sysfs at all: no cell traits, the filter falls
        # back to cell N = cache N.
        topo, _ = self.discover(ways=20)
        self.assertEqual([(), ()], [d.numa_cells for d in topo.domains])
        self.assertFalse([t for t in discovery.cache_domain_of(
            topo.domains[0], 1, 2).traits() if 'NUMA' in t])

    def test_domain_cores_are_its_cpus_in_novas_dedicated_set(self):
        topo, _ = self.discover(ways=20, min_cbm_bits=1, num_closids=16)
        dom = topo.domain(1)
        self.assertEqual(8, discovery.cache_domain_of(dom, 1, 2).cores)
        placement = discovery.cache_domain_of(
            dom, 1, 2, discovery.parse_cpu_list('2-5,8-10'))
        self.assertEqual(3, placement.cores)
        self.assertIn('CUSTOM_RESQ_CORES_3', placement.traits())

    def test_single_socket_11_ways_shareable_bits(self):
        topo, _ = self.discover(domains={0: (0, 1, 2, 3)}, size='16896K',
                                ways=11, min_cbm_bits=2,
                                shareable_bits=0x600, num_closids=8)
        dom = topo.domains[0]
        self.assertEqual((0, 1, 2, 3), dom.cpus)
        self.assertEqual(11, dom.ways)
        self.assertEqual(16896 * 1024 // 11, dom.way_size_bytes)
        self.assertEqual(2, dom.io_ways)
        self.assertEqual(0x600, dom.io_mask)
        self.assertEqual(2, dom.min_cbm_bits)
        # The tree's foreign group holds one of the 8 classes of service.
        self.assertEqual(7, dom.num_closids)

    def test_cdp_and_mba(self):
        sysfs = self.useFixture(sysfs_fixture.SysfsTree())
        tree = self.useFixture(resctrl_fixture.ResctrlTree(cdp=True))
        os.makedirs(os.path.join(tree.root, 'info', 'MB'))
        topo = discovery.discover(tree.root, sysfs.root)
        self.assertTrue(topo.cdp)
        self.assertTrue(topo.domains[0].cdp)
        self.assertTrue(topo.domains[0].mba)

    def test_no_resctrl_is_not_a_failure(self):
        logs = self.useFixture(fixtures.FakeLogger())
        sysfs = self.useFixture(sysfs_fixture.SysfsTree(domains=DUAL))
        topo = discovery.discover(os.path.join(self.tmp, 'absent'),
                                  sysfs.root)
        self.assertFalse(topo.resctrl_available)
        self.assertIn('does not exist', topo.reason)
        self.assertEqual([0, 1], [d.id for d in topo.domains])
        self.assertFalse(topo.domains[0].cat)
        doc = discovery.describe(topo, 1)
        self.assertEqual({}, doc['cache_domains'][0]['inventory'])
        self.assertIn('No L3 cache allocation on this host', logs.output)

    def test_describe_inventory(self):
        topo, _ = self.discover(ways=11, min_cbm_bits=2, num_closids=16,
                                domains={0: (0, 1)}, size='16896K')
        doc = discovery.describe(topo, 1)
        dom = doc['cache_domains'][0]
        for key in ('id', 'cpus', 'ways', 'way_size_bytes', 'min_cbm_bits',
                    'num_closids', 'io_ways', 'cdp', 'inventory'):
            self.assertIn(key, dom)
        inv = dom['inventory']['CUSTOM_LLC_WAY']
        self.assertEqual(11, inv['total'])
        # 2 I/O ways, and the default group (out of the I/O ways) keeps
        # min_cbm_bits = 2.
        self.assertEqual(2 + 2, inv['reserved'])
        self.assertEqual(2, inv['min_unit'])
        # 16 classes of service, one held by the tree's foreign group.
        self.assertEqual(15, dom['num_closids'])
        self.assertEqual(15, dom['inventory']['CUSTOM_LLC_CLOS']['total'])
        # Sharing the I/O ways, the default group needs one more way only.
        shared = discovery.describe(topo, 1, default_io=True)
        self.assertEqual(2 + 1, shared['cache_domains'][0]['inventory'][
            'CUSTOM_LLC_WAY']['reserved'])
        self.assertIn('CUSTOM_RESQ_LLC_WAYS_11', dom['traits'])
        self.assertIn('CUSTOM_RESQ_LLC_WAY_KIB_1536', dom['traits'])

    def test_placement_is_offered_what_the_layout_hands_out(self):
        # Shareable bits in the middle (ways 8-9) and split (0x3, 0x300).
        for shareable, usable in ((0x300, 9), (0x303, 9)):
            topo, _ = self.discover(ways=20, shareable_bits=shareable,
                                    domains={0: (0, 1)})
            dom = topo.domains[0]
            inv = discovery.cache_domain_of(dom, 1).inventory()[
                'CUSTOM_LLC_WAY']
            self.assertEqual(usable, inv['total'] - inv['reserved'])
            self.assertEqual(usable, inv['max_unit'])
            self.assertEqual(usable, discovery.shape_of(dom, 1).capacity)

    def test_foreign_groups_hold_classes_of_service(self):
        topo, _ = self.discover(ways=20, num_closids=8, domains={0: (0, 1)},
                                foreign=('other-app', 'qemu-1-vm-vcpus_0',
                                         'resq-mine', 'resq-profiler'))
        # resq- groups are the agent's; the profiler's and the two others
        # each hold a CLOS.
        self.assertEqual(5, topo.domains[0].num_closids)
        clos = discovery.cache_domain_of(topo.domains[0], 1).inventory()[
            'CUSTOM_LLC_CLOS']
        self.assertEqual(5, clos['total'])

    def test_default_group_keeps_min_cbm_bits(self):
        topo, _ = self.discover(ways=20, min_cbm_bits=4, ddio_ways=0)
        dom = topo.domains[0]
        self.assertEqual(0, dom.io_ways)
        self.assertEqual(4, discovery.default_group_ways(dom, 1))
        self.assertEqual(4, discovery.default_group_ways(dom, 1, True))
        self.assertEqual(4, discovery.describe(topo, 1)['cache_domains'][0][
            'inventory']['CUSTOM_LLC_WAY']['reserved'])

    def test_parse_helpers(self):
        self.assertEqual((0, 1, 2, 3, 8), discovery.parse_cpu_list(
            '0-3,8\n'))
        # One parser for sysfs, resctrl and libvirt; its error is both a
        # ResctrlError and the ValueError the sysfs readers catch.
        for bad in ('3-1', 'x', '-2', '1-y'):
            exc = self.assertRaises(ValueError, discovery.parse_cpu_list,
                                    bad)
            self.assertIsInstance(exc, exception.ResctrlError)
            self.assertIn('is not a CPU list such as 0-3,8', str(exc))
        self.assertEqual('0-3,8,10-11', discovery.format_cpus(
            (0, 1, 2, 3, 8, 10, 11)))
        self.assertEqual(30720 * 1024, discovery.parse_size('30720K'))
        self.assertEqual(15 * 1024 ** 2, discovery.parse_size('15', 'MiB'))

    def test_cross_check(self):
        topo, _ = self.discover(ways=20)
        same = caps([(0, '30', 'MiB', '0-7'), (1, '30', 'MiB', '8-15')])
        self.assertEqual([], discovery.cross_check(topo, same))
        other = caps([(0, '25', 'MiB', '0-7'), (2, '30', 'MiB', '8-15')])
        problems = discovery.cross_check(topo, other)
        self.assertEqual(3, len(problems), problems)
        self.assertIn('L3 cache 0: sysfs says 31457280 bytes, libvirt '
                      '26214400', problems[0])
        self.assertIn('L3 cache 1 is not in libvirt', problems[1])
        self.assertIn('libvirt reports L3 cache 2', problems[2])
        cpus = caps([(0, '30', 'MiB', '0-3'), (1, '30', 'MiB', '8-15')])
        self.assertIn('CPUs 0-7, libvirt 0-3',
                      discovery.cross_check(topo, cpus)[0])
        # No banks (libvirt's test driver): nothing to compare.
        self.assertEqual([], discovery.cross_check(
            topo, '<capabilities><host/></capabilities>'))

    def test_l1_l2_are_ignored(self):
        sysfs = self.useFixture(sysfs_fixture.SysfsTree(domains={3: (0, 1)}))
        self.assertEqual([3], list(discovery.read_sysfs_l3(sysfs.root)))
