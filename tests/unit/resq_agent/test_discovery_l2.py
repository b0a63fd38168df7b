"""Discovery of L2 cache allocation (info/L2 and sysfs index2 entries)."""

import os

from resq_agent import discovery
from resq_agent import inventory
from resq_fake import resctrl as fake_resctrl
from tests import base

L3 = {0: tuple(range(8))}
CLUSTERS = {0: (0, 1, 2, 3), 1: (4, 5, 6, 7)}


class L2DiscoveryTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.root = os.path.join(self.tmp, 'resctrl')
        self.sysfs = os.path.join(self.tmp, 'sys')

    def host(self, l2=None, sysfs_l2=None, cdpl2=False, l2_ways=18,
             **l2_spec):
        fake_resctrl.build_sysfs(
            self.sysfs, L3, vendor='intel', l2_ways=l2_ways,
            l2_domains=CLUSTERS if sysfs_l2 is None else sysfs_l2)
        resources = None
        if l2 is not False:
            resources = {'L2': dict(dict(ways=l2_ways), **l2_spec)}
        fake_resctrl.build_resctrl(
            self.root, ways=20, domains=(0,), cpus=tuple(range(8)),
            resources=resources, cdpl2=cdpl2,
            l2_domains=(l2 or CLUSTERS) if l2 is not False else None)
        return discovery.discover(self.root, self.sysfs, quiet=True)

    def test_clusters_their_ways_and_each_cpus_share(self):
        topo = self.host(min_cbm_bits=1)
        self.assertEqual(2, len(topo.l2_domains))
        dom = topo.l2_domains[1]
        self.assertEqual((1, (4, 5, 6, 7), 18, 0x3ffff, 1, 0, 16, 18,
                          0x3ffff, False),
                         (dom.id, dom.cpus, dom.ways, dom.cbm_mask,
                          dom.min_cbm_bits, dom.shareable_bits,
                          dom.num_closids, dom.associativity,
                          dom.usable_mask, dom.cdp))
        self.assertEqual(18 * 256 * 1024, dom.size_bytes)
        self.assertEqual(256 * 1024, dom.way_size_bytes)
        self.assertEqual(4, topo.l2_share())
        self.assertFalse(topo.cdpl2)
        doc = discovery.describe(topo, 1)
        self.assertEqual([4, 4], [d['ways_per_cpu']
                                  for d in doc['l2_domains']])
        # The L3 domains are as without L2.
        self.assertEqual([(0, tuple(range(8)), 0xfffff)],
                         [(d.id, d.cpus, d.cbm_mask) for d in topo.domains])

    def test_no_info_l2_changes_nothing(self):
        topo = self.host(l2=False)
        self.assertEqual(((), False), (topo.l2_domains, topo.cdpl2))
        self.assertEqual(0, topo.l2_share())
        self.assertNotIn('l2_domains', discovery.describe(topo, 1))
        self.assertEqual([], inventory.Inventory(None, 'cn1', 1).l2_traits(
            topo))

    def test_cdpl2_reads_l2code(self):
        topo = self.host(cdpl2=True)
        self.assertTrue(topo.cdpl2)
        self.assertTrue(all(d.cdp for d in topo.l2_domains))
        self.assertEqual(4, topo.l2_share())
        self.assertTrue(os.path.isdir(os.path.join(self.root, 'info',
                                                   'L2DATA')))

    def test_shareable_and_foreign_exclusive_ways_are_not_divided(self):
        topo = self.host(shareable_bits=0x30000)
        self.assertEqual(0xffff, topo.l2_domains[0].usable_mask)
        # 16 ways, 4 CPUs: 3 each, the default group keeps the top one.
        self.assertEqual(3, topo.l2_share())
        group = os.path.join(self.root, 'other')
        os.mkdir(group)
        with open(os.path.join(group, 'mode'), 'w') as f:
            f.write('exclusive\n')
        with open(os.path.join(group, 'schemata'), 'w') as f:
            f.write('L3:0=fffff\nL2:0=f;1=ffff\n')
        topo = discovery.discover(self.root, self.sysfs, quiet=True)
        self.assertEqual([0xfff0, 0], [d.usable_mask
                                       for d in topo.l2_domains])

    def test_a_domain_sysfs_does_not_describe_has_no_cpus(self):
        topo = self.host(sysfs_l2={0: (0, 1, 2, 3)})
        self.assertEqual([(0, 1, 2, 3), ()],
                         [d.cpus for d in topo.l2_domains])
        self.assertEqual(4, topo.l2_share())

    def test_a_domain_too_small_for_its_cpus_publishes_no_ladder(self):
        topo = self.host(l2_ways=4, min_cbm_bits=1)
        self.assertEqual(
            [], inventory.Inventory(None, 'cn1', 1).l2_traits(topo))
        doc = discovery.describe(topo, 1)
        self.assertEqual(0, doc['l2_domains'][0]['ways_per_cpu'])
        self.assertIn('cannot give each of its 4 CPUs',
                      doc['l2_domains'][0]['reason'])
        # Only the dedicated CPUs count: cluster 0 alone (no CPU of
        # cluster 1 is pinned) is still too small.
        self.assertEqual([], inventory.Inventory(
            None, 'cn1', 1, dedicated_cpus=(0, 1)).l2_traits(topo))

    def test_traits_for_the_dedicated_cpus_smallest_share(self):
        topo = self.host(l2={0: (0, 1), 1: (2, 3, 4, 5, 6, 7)},
                         sysfs_l2={0: (0, 1), 1: (2, 3, 4, 5, 6, 7)})
        self.assertEqual([8, 2], [discovery.l2.share(d.l2_domain())
                                  for d in topo.l2_domains])
        inv = inventory.Inventory(None, 'cn1', 1)
        self.assertEqual(3, len(inv.l2_traits(topo)))
        inv = inventory.Inventory(None, 'cn1', 1, dedicated_cpus=(0, 1))
        self.assertEqual(
            ['CUSTOM_RESQ_L2_CAT'] + ['CUSTOM_RESQ_L2_WAYS_PER_CORE_%d' % n
                                      for n in range(1, 9)],
            inv.l2_traits(topo))
