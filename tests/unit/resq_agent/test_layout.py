from resq_agent import layout
from resq_common import cbm
from tests import base

# 20 ways, DDIO in the top two (ways 18-19), default group keeps one more
# and shares the I/O ways ([resq_agent] default_group_io_ways = True).
S20 = layout.DomainShape(0, 0xfffff, 1, 0xc0000, 1, default_io=True)
# 11 ways, shareable_bits 0x600, min_cbm_bits 2.
S11 = layout.DomainShape(0, 0x7ff, 2, 0x600, 1, default_io=True)


def req(uuid, ways, domain=0, mask=None):
    return layout.Request(uuid, domain, ways, cpus=(1,), current_mask=mask)


class LayoutTest(base.TestCase):

    def check_invariants(self, shapes, result):
        by_dom = {}
        for a in result.assignments:
            shape = [s for s in shapes if s.id == a.domain_id][0]
            cbm.validate(a.mask, shape.cbm_mask, shape.min_cbm_bits)
            self.assertEqual(a.ways, cbm.bits(a.mask))
            self.assertEqual(0, a.mask & shape.io_mask, 'uses I/O ways')
            for other in by_dom.get(a.domain_id, []):
                self.assertEqual(0, a.mask & other, 'overlap')
            by_dom.setdefault(a.domain_id, []).append(a.mask)
        for shape in shapes:
            default = result.default_masks[shape.id]
            cbm.validate(default, shape.cbm_mask, shape.min_cbm_bits)
            for mask in by_dom.get(shape.id, []):
                self.assertEqual(0, default & mask)
            if shape.default_io:
                # All the I/O ways, or none when they would make the
                # default mask non-contiguous.
                self.assertIn(default & shape.io_mask, (shape.io_mask, 0))
            else:
                self.assertEqual(0, default & shape.io_mask,
                                 'default group allocates into I/O ways')

    def test_pack_from_way_zero_default_gets_the_rest(self):
        result = layout.compute([S20], [req('a', 4), req('b', 6)], 16)
        self.check_invariants([S20], result)
        # Largest first from way 0.
        self.assertEqual(0x3f, result.assignment('b').mask)
        self.assertEqual(0x3c0, result.assignment('a').mask)
        self.assertEqual(0xffc00, result.default_masks[0])
        self.assertEqual([], result.refused)

    def test_empty_domain_default_owns_all(self):
        result = layout.compute([S20], [], 16)
        self.assertEqual(0xfffff, result.default_masks[0])

    def test_running_masks_are_kept(self):
        first = layout.compute([S11], [req('a', 3)], 8)
        mask_a = first.assignment('a').mask
        second = layout.compute([S11], [req('a', 3, mask=mask_a),
                                        req('b', 5)], 8)
        self.check_invariants([S11], second)
        self.assertEqual(mask_a, second.assignment('a').mask)
        self.assertFalse(second.assignment('a').moved)
        self.assertEqual(0xf8, second.assignment('b').mask)

    def test_capacity_is_ways_minus_io_and_default(self):
        # 11 - 2 I/O - 1 default = 8 instance ways.
        self.assertEqual(8, S11.capacity)
        result = layout.compute([S11], [req('a', 8)], 8)
        self.check_invariants([S11], result)
        self.assertEqual(0xff, result.assignment('a').mask)
        self.assertEqual(0x700, result.default_masks[0])

    def test_over_commit_is_refused_not_enforced(self):
        running = layout.compute([S20], [req('a', 10)], 16).assignment('a')
        result = layout.compute([S20], [req('a', 10, mask=running.mask),
                                        req('big', 9), req('small', 5)], 16)
        self.check_invariants([S20], result)
        self.assertEqual(running.mask, result.assignment('a').mask)
        self.assertIsNone(result.assignment('big'))
        self.assertEqual(['big'], [r.instance_uuid for r in result.refused])
        self.assertIn('needs 9 ways but only 7 of the 17', result.refused[0]
                      .reason)
        self.assertIn('over-commit', result.refused[0].reason)
        self.assertEqual(5, cbm.bits(result.assignment('small').mask))

    def test_running_instances_win_over_new_ones(self):
        # 'old' is listed last but already has a group.
        result = layout.compute([S20], [req('new', 17),
                                        req('old', 10, mask=0x3ff)], 16)
        self.assertEqual(0x3ff, result.assignment('old').mask)
        self.assertEqual(['new'], [r.instance_uuid for r in result.refused])

    def test_class_of_service_limit_is_host_wide(self):
        shapes = [S20, layout.DomainShape(1, 0xfffff, 1, 0xc0000, 1,
                                          default_io=True)]
        reqs = [req('a', 1, 0), req('b', 1, 1), req('c', 1, 0),
                req('d', 1, 1)]
        result = layout.compute(shapes, reqs, 4)
        self.check_invariants(shapes, result)
        self.assertEqual(['a', 'b', 'c'],
                         sorted(a.instance_uuid
                                for a in result.assignments))
        self.assertEqual('d', result.refused[0].instance_uuid)
        self.assertIn('no class of service left: all 4 are in use, one '
                      'kept for the default group', result.refused[0].reason)

    def test_shared_classes_serve_one_instance_per_domain(self):
        # 2 domains, 16 classes: 15 partitions in each, not 7.
        shapes = [layout.DomainShape(d, 0xfffff, 1, 0, 1) for d in (0, 1)]
        reqs = [req('%d-%02d' % (d, n), 1, d)
                for d in (0, 1) for n in range(16)]
        result = layout.compute(shapes, reqs, 16, shared=True)
        self.check_invariants(shapes, result)
        for d in (0, 1):
            mine = [a for a in result.assignments if a.domain_id == d]
            self.assertEqual(15, len(mine))
            # Each class once per domain, classes 1..15.
            self.assertEqual(list(range(1, 16)),
                             sorted(a.clos for a in mine))
        self.assertEqual(['0-15', '1-15'],
                         sorted(r.instance_uuid for r in result.refused))
        self.assertIn('no class of service left in cache domain 0: its '
                      'instances hold all 15', result.refused[0].reason)
        # Without sharing (libpqos): 15 in all.
        alone = layout.compute(shapes, reqs, 16)
        self.assertEqual(15, len(alone.assignments))
        self.assertEqual({None}, {a.clos for a in alone.assignments})

    def test_a_running_instance_keeps_its_class(self):
        shapes = [layout.DomainShape(d, 0xfffff, 1, 0, 1) for d in (0, 1)]
        first = layout.compute(shapes, [req('b', 2, 0), req('c', 2, 0)],
                               16, shared=True)
        clos = {a.instance_uuid: a.clos for a in first.assignments}
        self.assertEqual({'b': 1, 'c': 2}, clos)
        # 'a' arrives (sorts first) and 'b' leaves: 'c' keeps class 2,
        # 'a' takes the class 'b' freed.
        again = layout.compute(shapes, [
            layout.Request('c', 0, 2, (1,), current_mask=first.assignment(
                'c').mask, current_clos=2),
            req('a', 2, 0)], 16, shared=True)
        self.assertEqual({'a': 1, 'c': 2}, {a.instance_uuid: a.clos
                                            for a in again.assignments})
        self.assertEqual(first.assignment('c').mask,
                         again.assignment('c').mask)
        # A class beyond the platform's (the platform shrank) is not kept.
        fewer = layout.compute(shapes, [
            layout.Request('c', 0, 2, (1,), current_clos=9)], 4,
            shared=True)
        self.assertEqual(1, fewer.assignment('c').clos)

    def test_below_min_cbm_bits_and_unknown_domain(self):
        result = layout.compute([S11], [req('a', 1), req('b', 2, 3)], 8)
        reasons = {r.instance_uuid: r.reason for r in result.refused}
        self.assertIn('below the platform minimum of 2', reasons['a'])
        self.assertIn('cache domain 3 does not exist on this host',
                      reasons['b'])
        self.assertEqual(0x7ff, result.default_masks[0])

    def test_gaps_are_reused_first_fit(self):
        # a [0,4) b [4,8) c [8,12): b leaves, d (4 ways) takes its gap.
        result = layout.compute([S20], [req('a', 4, mask=0xf),
                                        req('c', 4, mask=0xf00),
                                        req('d', 3)], 16)
        self.check_invariants([S20], result)
        self.assertEqual(0x70, result.assignment('d').mask)
        self.assertEqual([], [a for a in result.assignments if a.moved])

    def test_fragmentation_is_compacted_when_needed(self):
        # Free ways: [4,8) and [12,17): 9 free, but no gap of 6.
        result = layout.compute([S20], [req('a', 4, mask=0xf),
                                        req('c', 4, mask=0xf00),
                                        req('d', 6)], 16)
        self.check_invariants([S20], result)
        self.assertEqual(0xf, result.assignment('a').mask)
        self.assertFalse(result.assignment('a').moved)
        self.assertEqual(0xf0, result.assignment('c').mask)
        self.assertTrue(result.assignment('c').moved)
        self.assertEqual(0x3f00, result.assignment('d').mask)
        self.assertEqual(0xfc000, result.default_masks[0])

    def test_non_contiguous_or_bad_current_masks_are_relaid(self):
        result = layout.compute([S20], [req('a', 4, mask=0x33),
                                        req('b', 2, mask=0xc0000),
                                        req('c', 3, mask=0x7)], 16)
        self.check_invariants([S20], result)
        self.assertEqual(0x7, result.assignment('c').mask)
        self.assertTrue(result.assignment('a').moved)
        self.assertTrue(result.assignment('b').moved)
        # Overlapping current masks: the second one moves.
        result = layout.compute([S20], [req('a', 4, mask=0xf),
                                        req('b', 4, mask=0x3c)], 16)
        self.check_invariants([S20], result)
        self.assertFalse(result.assignment('a').moved)
        self.assertTrue(result.assignment('b').moved)

    def test_resize_changes_the_mask(self):
        result = layout.compute([S20], [req('a', 6, mask=0xf)], 16)
        self.assertEqual(0x3f, result.assignment('a').mask)
        self.assertTrue(result.assignment('a').moved)

    def test_io_ways_at_the_bottom(self):
        shape = layout.DomainShape(0, 0x7ff, 1, 0x3, 1)
        result = layout.compute([shape], [req('a', 3), req('b', 2)], 16)
        self.check_invariants([shape], result)
        self.assertEqual(0x700, result.assignment('a').mask)
        self.assertEqual(0xc0, result.assignment('b').mask)
        # No core allocates into the I/O ways (ResQ), by default.
        self.assertEqual(0x3c, result.default_masks[0])

    def _fill(self, shape):
        """Exactly ``capacity`` ways are handed out, never one more."""
        reqs = [req('i%d' % i, 1) for i in range(shape.capacity)]
        full = layout.compute([shape], reqs, 64)
        self.check_invariants([shape], full)
        self.assertEqual([], full.refused)
        over = layout.compute([shape], reqs + [req('x', 1)], 64)
        self.assertEqual(['x'], [r.instance_uuid for r in over.refused])
        return full

    def test_io_ways_in_the_middle(self):
        # 20 ways, the kernel's shareable bits are ways 8-9.
        shape = layout.DomainShape(0, 0xfffff, 1, 0x300, 1)
        # The larger side (ways 10-19) minus one default way.
        self.assertEqual(9, shape.capacity)
        full = self._fill(shape)
        for a in full.assignments:
            self.assertEqual(0, a.mask & ~0xffc00)
        self.assertEqual(0x400, full.default_masks[0])

    def test_split_shareable_bits(self):
        # Shareable bits 0x3 and 0x300: ways 0-9 count as I/O; the default
        # group never gets a non-contiguous mask, even when it may share.
        for default_io in (False, True):
            shape = layout.DomainShape(0, 0xfffff, 1, 0x303, 2,
                                       default_io=default_io)
            self.assertEqual(8, shape.capacity)
            full = self._fill(shape)
            self.assertTrue(cbm.is_contiguous(full.default_masks[0]))
            self.assertEqual(0xc00, full.default_masks[0])

    def test_default_group_may_share_io_ways_when_configured(self):
        shared = layout.DomainShape(0, 0x7ff, 1, 0x3, 1, default_io=True)
        result = layout.compute([shared], [req('a', 3)], 16)
        self.check_invariants([shared], result)
        self.assertEqual(0xff, result.default_masks[0])

    def test_no_io_ways_default_keeps_min_bits(self):
        shape = layout.DomainShape(0, 0xfffff, 3, 0, 3)
        result = layout.compute([shape], [req('a', 17)], 16)
        self.check_invariants([shape], result)
        self.assertEqual(0xe0000, result.default_masks[0])
        result = layout.compute([shape], [req('a', 18)], 16)
        self.assertEqual(1, len(result.refused))

    def test_duplicate_allocation_refused(self):
        result = layout.compute([S20], [req('a', 2), req('a', 3)], 16)
        self.assertEqual(1, len(result.assignments))
        self.assertIn('more than one', result.refused[0].reason)

    def test_many_instances_exactly_fill(self):
        reqs = [req('i%02d' % i, 1) for i in range(17)]
        result = layout.compute([S20], reqs, 32)
        self.check_invariants([S20], result)
        self.assertEqual(17, len(result.assignments))
        self.assertEqual(0xe0000, result.default_masks[0])
        result = layout.compute([S20], reqs + [req('x', 1)], 32)
        self.assertEqual(['x'], [r.instance_uuid for r in result.refused])
