"""L2 ways as a per-core property (resq_agent.l2): pure arithmetic."""

from resq_agent import l2
from resq_common import extra_specs
from tests import base

# A 4-CPU cluster sharing an 18-way L2 (Tremont's 4.5 MiB): 4 ways per
# CPU, 2 left for the default group.
TREMONT = l2.L2Domain(0, (4, 5, 6, 7), 0x3ffff, 1)


class ShareTest(base.TestCase):

    def test_floor_of_ways_over_cpus_when_the_remainder_holds_min_bits(self):
        self.assertEqual(4, l2.share(TREMONT))
        # 16 ways, 2 CPUs: 8 each would leave the default group nothing,
        # so one way less each.
        self.assertEqual(7, l2.share(l2.L2Domain(1, (0, 1), 0xffff, 1)))
        # min_cbm_bits 2: the default group keeps two ways.
        self.assertEqual(4, l2.share(l2.L2Domain(1, (0, 1), 0x3ff, 2)))
        # A mask not starting at way 0 (others' exclusive ways below it).
        self.assertEqual(3, l2.share(l2.L2Domain(2, (0, 1), 0xff0, 1)))

    def test_a_share_below_min_cbm_bits_is_refused_saying_why(self):
        exc = self.assertRaises(l2.L2Error, l2.share,
                                l2.L2Domain(3, (0, 1, 2, 3), 0xff, 2))
        self.assertIn('L2 domain 3 cannot give each of its 4 CPUs the 2 '
                      'way(s)', str(exc))
        self.assertIn('8 usable ways, 2 of them kept for the default group',
                      str(exc))
        self.assertRaises(l2.L2Error, l2.share, l2.L2Domain(4, (), 0xff))
        self.assertRaises(l2.L2Error, l2.share, l2.L2Domain(5, (0,), 0x1))

    def test_slices_are_contiguous_at_a_fixed_place_per_cpu_index(self):
        self.assertEqual([0xf, 0xf0, 0xf00, 0xf000],
                         [l2.cpu_slice(TREMONT, c) for c in (4, 5, 6, 7)])
        dom = l2.L2Domain(2, (9, 8), 0xff0, 1)
        self.assertEqual([0x70, 0x380], [l2.cpu_slice(dom, c)
                                         for c in (8, 9)])
        self.assertRaises(KeyError, l2.cpu_slice, TREMONT, 0)


class MasksTest(base.TestCase):

    OTHER = l2.L2Domain(1, (8, 9, 10, 11), 0x3ffff, 1)

    def test_guest_gets_its_cpus_slices_in_each_domain_it_is_in(self):
        masks = l2.guest_masks([TREMONT, self.OTHER], (5, 6, 8))
        self.assertEqual({0: 0xff0, 1: 0xf}, masks)
        self.assertEqual({}, l2.shortfall([TREMONT, self.OTHER], (5, 6, 8),
                                          masks))
        self.assertEqual({}, l2.guest_masks([TREMONT], (0, 1)))

    def test_cpus_apart_get_the_union_or_its_longest_run(self):
        doms = [TREMONT]
        self.assertEqual({0: 0xf00f}, l2.guest_masks(doms, (4, 7),
                                                     sparse=True))
        masks = l2.guest_masks(doms, (4, 7))
        self.assertEqual({0: 0xf}, masks)
        self.assertEqual({0: 4}, l2.shortfall(doms, (4, 7), masks))

    def test_default_group_keeps_all_but_the_held_slices(self):
        doms = [TREMONT, self.OTHER]
        self.assertEqual({0: 0x3ffff, 1: 0x3ffff},
                         l2.default_masks(doms, ()))
        # Contiguous: the run from the top way down to the held slice.
        self.assertEqual({0: 0x3ff00, 1: 0x3ffff},
                         l2.default_masks(doms, (5,)))
        self.assertEqual({0: 0x3ff0f, 1: 0x3ffff},
                         l2.default_masks(doms, (5,), sparse=True))
        # Every CPU held: the ways above the last slice remain.
        self.assertEqual({0: 0x30000, 1: 0x3ffff},
                         l2.default_masks(doms, (4, 5, 6, 7)))

    def test_guests_and_default_group_never_overlap(self):
        doms = [TREMONT, self.OTHER,
                l2.L2Domain(2, (12, 13), 0xffff, 1)]
        guests = [(4,), (6, 7), (9, 10, 11), (13,)]
        held = [c for g in guests for c in g]
        for sparse in (False, True):
            seen = {}
            for cpus in guests:
                for dom, mask in l2.guest_masks(doms, cpus, sparse).items():
                    self.assertFalse(seen.get(dom, 0) & mask)
                    seen[dom] = seen.get(dom, 0) | mask
            for dom, mask in l2.default_masks(doms, held, sparse).items():
                self.assertTrue(mask)
                self.assertFalse(seen.get(dom, 0) & mask)


class HostTest(base.TestCase):

    def test_host_share_is_the_smallest_of_the_pinnable_domains(self):
        small = l2.L2Domain(1, (0, 1, 2, 3), 0xff, 1)
        self.assertEqual(1, l2.host_share([TREMONT, small]))
        # Nova pins only to the dedicated set: CPUs 0-3 are not in it.
        self.assertEqual(4, l2.host_share([TREMONT, small], range(4, 8)))
        self.assertEqual(0, l2.host_share([TREMONT], range(4)))
        self.assertEqual(0, l2.host_share([]))
        # A domain sysfs does not describe (no CPUs) cannot be pinned.
        self.assertEqual(4, l2.host_share([TREMONT, l2.L2Domain(9, (),
                                                                0xff)]))
        self.assertRaises(l2.L2Error, l2.host_share,
                          [TREMONT, l2.L2Domain(1, (0, 1, 2), 0x3, 1)])

    def test_traits_are_a_ladder_capped_at_32(self):
        self.assertEqual([], l2.traits(0))
        self.assertEqual(['CUSTOM_RESQ_L2_CAT',
                          'CUSTOM_RESQ_L2_WAYS_PER_CORE_1',
                          'CUSTOM_RESQ_L2_WAYS_PER_CORE_2'], l2.traits(2))
        ladder = l2.traits(40)
        self.assertEqual(33, len(ladder))
        self.assertEqual(extra_specs.l2_trait(32), ladder[-1])
        for trait in ladder:
            self.assertTrue(l2.owns_trait(trait))
        for trait in ('COMPUTE_NODE', 'CUSTOM_RESQ_L3_CDP',
                      'HW_CPU_X86_AVX2', 'CUSTOM_RESQ_L2'):
            self.assertFalse(l2.owns_trait(trait))
