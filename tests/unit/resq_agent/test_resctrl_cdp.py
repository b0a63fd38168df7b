"""Code and data prioritization: split masks, writer to enforcer."""

from resq_agent import layout
import resq_agent.privsep.resctrl
from tests import base
from tests.unit.resq_agent import test_resctrl_mb

U1 = '11111111-1111-1111-1111-111111111111'
U2 = '22222222-2222-2222-2222-222222222222'
SHAPES = [layout.DomainShape(0, 0xfffff, io_mask=0xc0000),
          layout.DomainShape(1, 0xfffff, io_mask=0xc0000)]


class Base(test_resctrl_mb.EnforcerTreeMixin, base.TestCase):

    def setUp(self):
        super().setUp()
        self.mod = resq_agent.privsep.resctrl


class WriterTest(Base):

    def test_code_and_data_masks_of_the_groups_ways(self):
        self.make(cdp=True)
        tree = self.tree
        self.mod.create_group('resq-g')
        out = self.mod.apply_ops([['schemata', 'resq-g', 'resq-g',
                                   {0: 0xf0, 1: 0x3}, None, {0: 0x30}]])
        self.assertEqual([None], out)
        self.assertEqual('L3CODE:0=30;1=3\nL3DATA:0=c0;1=3\n',
                         tree.read('resq-g', 'schemata'))

    def test_refused_naming_the_fix(self):
        for kw, code, text in (
                ({}, {0: 0x30}, 'need resctrl mounted with cdp'),
                ({'cdp': True}, {0: 0x300}, 'must be some of the group'),
                ({'cdp': True}, {0: 0xf0}, 'leaving ways for data'),
                ({'cdp': True}, {0: 0x50}, 'the code part'),
                ({'cdp': True}, {0: 0x60}, 'the data part'),
                ({'cdp': True}, {0: True}, 'must be integers'),
                ({'cdp': True}, {}, 'non-empty')):
            self.make(**kw)
            tree = self.tree
            self.mod.create_group('resq-g')
            before = tree.read('resq-g', 'schemata')
            [out] = self.mod.apply_ops([['schemata', 'resq-g', 'resq-g',
                                         {0: 0xf0, 1: 0x3}, None, code]])
            self.assertIn(text, out[1], (kw, code))
            self.assertEqual(before, tree.read('resq-g', 'schemata'))

    def test_wide_code_masks_cross_the_boundary(self):
        op = self.mod._wire(('schemata', 'g', 'g', {0: 1 << 70}, None,
                             {0: 1 << 69}))
        self.assertEqual({0: '0x%x' % (1 << 69)}, op[5])


def lay(*members):
    """A layout of ``(uuid, domain, ways, cpus, code ways)`` members."""
    return layout.compute(SHAPES, [
        layout.Request(u, d, w, cpus=c, code_ways=k)
        for u, d, w, c, k in members], 8, shared=True)


class LayoutTest(base.TestCase):

    def test_code_mask_is_the_lowest_of_the_ways(self):
        [a] = lay((U1, 0, 4, (1,), 1)).assignments
        self.assertEqual((0xf, 0x1), (a.mask, a.code_mask))
        [a] = lay((U1, 0, 4, (1,), 0)).assignments
        self.assertIsNone(a.code_mask)

    def test_each_part_needs_the_platform_minimum(self):
        shapes = [layout.DomainShape(0, 0xfffff, min_cbm_bits=2)]
        result = layout.compute(shapes, [layout.Request(
            U1, 0, 3, cpus=(1,), code_ways=1)], 8)
        [refusal] = result.refused
        self.assertIn('each part needs at least 2 ways', refusal.reason)


class EnforcerTest(Base):

    def test_split_written_kept_and_repaired(self):
        enf = self.make(cdp=True)
        plan = lay((U1, 0, 4, (1,), 1), (U2, 1, 3, (9,), 0))
        self.assertEqual([], enf.apply(plan, [0, 1]).errors)
        sch = self.rt.read_schemata('resq-cos1')
        self.assertEqual(({0: 0x1, 1: 0x7}, {0: 0xe, 1: 0x7}),
                         (sch['L3CODE'], sch['L3DATA']))
        steps = []
        enf.apply(plan, [0, 1], steps)
        self.assertEqual([], steps)           # nothing differs
        # Someone joins code and data again: the next pass splits them.
        self.mod.write_l3_masks('resq-cos1', {0: 0xf, 1: 0x7})
        enf.apply(plan, [0, 1], steps)
        self.assertEqual(['schemata resq-cos1'], steps)
        self.assertEqual({0: 0x1, 1: 0x7},
                         self.rt.read_schemata('resq-cos1')['L3CODE'])
        # U1 leaves: U2 alone in class 1, code and data share its ways.
        enf.apply(lay((U2, 1, 3, (9,), 0)), [0, 1])
        sch = self.rt.read_schemata('resq-cos1')
        self.assertEqual(sch['L3CODE'], sch['L3DATA'])
