import os
from unittest import mock

import fixtures
import msgpack

from resq_agent import enforcer
from resq_agent import layout
import resq_agent.privsep.resctrl
from resq_common import exception
from resq_common import resctrl
from resq_common import resctrl_writer
from tests import base
from tests.fixtures import resctrl as resctrl_fixture

U1 = '11111111-1111-1111-1111-111111111111'
U2 = '22222222-2222-2222-2222-222222222222'
G1 = 'resq-' + U1
G2 = 'resq-' + U2
SHAPES = [layout.DomainShape(0, 0xfffff, 1, 0xc0000, 1, default_io=True),
          layout.DomainShape(1, 0xfffff, 1, 0xc0000, 1, default_io=True)]


def lay(*reqs, current=None):
    current = current or {}
    return layout.compute(SHAPES, [
        layout.Request(u, d, w, cpus=c,
                       current_mask=(current.get(u) or {}).get(d))
        for u, d, w, c in reqs], 16)


class EnforcerTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(base.PrivsepInProcess(self.conf))
        self.tree = self.useFixture(resctrl_fixture.ResctrlTree(
            ways=20, domains=(0, 1), foreign=('other-app', 'resq')))
        self.flags('resq_agent', resctrl_root=self.tree.root)
        self.enf = enforcer.ResctrlEnforcer(self.tree.root)
        self.rt = resctrl.Resctrl(self.tree.root)

    def test_apply_writes_groups_and_default(self):
        steps = []
        result = self.enf.apply(lay((U1, 0, 4, (1, 2)), (U2, 1, 6, (9,))),
                                [0, 1], steps)
        self.assertEqual([], result.errors)
        g1 = 'resq-' + U1
        self.assertEqual({'L3': {0: 0xf, 1: 0xfffc0}},
                         self.rt.read_schemata(g1))
        self.assertEqual('1,2', self.rt.read_cpus(g1))
        self.assertEqual({'L3': {0: 0xffff0, 1: 0xfffc0}},
                         resctrl.parse_schemata(self.tree.read('schemata')))
        # The default group shrinks before any instance gets its ways.
        self.assertEqual('shrink default', steps[0])
        # Foreign groups are untouched.
        self.assertEqual(self.tree.default_schemata,
                         self.tree.read('other-app', 'schemata'))
        self.assertEqual(self.tree.default_schemata,
                         self.tree.read('resq', 'schemata'))
        # Idempotent: a second apply writes nothing.
        steps = []
        self.enf.apply(lay((U1, 0, 4, (1, 2)), (U2, 1, 6, (9,)),
                           current=self.enf.current_masks()), [0, 1], steps)
        self.assertEqual([], steps)

    def test_gone_instances_lose_their_group_and_default_grows(self):
        self.enf.apply(lay((U1, 0, 4, (1,)), (U2, 0, 4, (2,))), [0, 1])
        steps = []
        result = self.enf.apply(lay((U2, 0, 4, (2,)),
                                    current=self.enf.current_masks()),
                                [0, 1], steps)
        self.assertEqual(['resq-' + U1], result.removed)
        self.assertEqual(sorted(['resq-' + U2, 'other-app', 'resq']),
                         self.rt.groups())
        # U2 keeps its ways (moving it would cost its warm cache): the
        # hole stays free for the next instance, the default is unchanged.
        self.assertEqual(['remove resq-' + U1], steps)
        steps = []
        self.enf.apply(lay(), [0, 1], steps)
        self.assertEqual(['remove resq-' + U2, 'grow default'], steps)
        self.assertEqual({'L3': {0: 0xfffff, 1: 0xfffff}},
                         resctrl.parse_schemata(self.tree.read('schemata')))

    def test_half_created_group_is_removed_or_repaired(self):
        os.mkdir(os.path.join(self.tree.root, 'resq-x'))
        os.mkdir(os.path.join(self.tree.root, 'resq-' + U1))
        states = self.enf.groups()
        self.assertIsNone(states['resq-x'].masks)
        result = self.enf.apply(lay((U1, 0, 3, (4,))), [0, 1])
        self.assertEqual(['resq-x'], result.removed)
        self.assertEqual({'L3': {0: 0x7, 1: 0xfffff}},
                         self.rt.read_schemata('resq-' + U1))
        self.assertNotIn('resq-x', self.rt.groups())

    def test_read_only_tree_is_a_clear_error(self):
        denied = OSError(30, 'Read-only file system')
        denied.errno = 30
        with mock.patch.object(resctrl_writer.Writer, 'create_group',
                               side_effect=denied):
            result = self.enf.apply(lay((U1, 0, 3, (4,)),
                                        (U2, 0, 3, (5,))), [0, 1])
        self.assertEqual(2, len(result.errors))
        self.assertIn('is not writable (Read-only file system); mount it '
                      'read-write', result.errors[0])

    def test_one_failure_leaves_others_enforced(self):
        real = resctrl_writer.Writer.write_l3_masks

        def flaky(writer, group, masks):
            if group.endswith(U1):
                raise OSError(5, 'Input/output error')
            return real(writer, group, masks)

        with mock.patch.object(resctrl_writer.Writer, 'write_l3_masks',
                               flaky):
            result = self.enf.apply(lay((U1, 0, 3, (4,)),
                                        (U2, 0, 3, (5,))), [0, 1])
        self.assertEqual(1, len(result.errors))
        self.assertIn('resq-' + U1, result.errors[0])
        self.assertEqual(3, bin(self.rt.read_schemata('resq-' + U2)['L3'][0])
                         .count('1'))

    def test_cdp_tree(self):
        tree = self.useFixture(resctrl_fixture.ResctrlTree(cdp=True))
        self.flags('resq_agent', resctrl_root=tree.root)
        enf = enforcer.ResctrlEnforcer(tree.root)
        enf.apply(layout.compute(SHAPES[:1], [layout.Request(
            U1, 0, 5, cpus=(3,))], 16), [0])
        sch = resctrl.Resctrl(tree.root).read_schemata('resq-' + U1)
        self.assertEqual({'L3CODE': {0: 0x1f}, 'L3DATA': {0: 0x1f}}, sch)
        self.assertEqual({0: 0x1f}, enf.current_masks()[U1])


class BatchTest(base.TestCase):
    """A pass's writes cross the privileged boundary as one batch."""

    def setUp(self):
        super().setUp()
        self.useFixture(base.PrivsepInProcess(self.conf))
        self.tree = self.useFixture(resctrl_fixture.ResctrlTree(
            ways=20, domains=(0, 1)))
        self.flags('resq_agent', resctrl_root=self.tree.root)
        self.enf = enforcer.ResctrlEnforcer(self.tree.root)
        self.rt = resctrl.Resctrl(self.tree.root)
        self.calls = []
        real = resq_agent.privsep.resctrl.apply_ops

        def counted(ops):
            self.calls.append(list(ops))
            return real(ops)
        self.useFixture(fixtures.MockPatchObject(
            resq_agent.privsep.resctrl, 'apply_ops', counted))

    def test_one_privileged_call_per_pass(self):
        reqs = [('%08d-1111-1111-1111-111111111111' % i, i % 2, 1,
                 (i + 2,)) for i in range(12)]
        steps = []
        result = self.enf.apply(lay(*reqs), [0, 1], steps)
        self.assertEqual([], result.errors)
        self.assertEqual(1, len(self.calls))
        self.assertEqual(len(steps), len(self.calls[0]))
        self.assertEqual(12, len(result.written))
        self.assertGreater(len(steps), 12)

    def test_failed_create_skips_its_group_and_only_it(self):
        real = resctrl_writer.Writer.create_group

        def create(writer, group):
            if group == G1:
                raise exception.ResctrlError(reason='no closid left')
            return real(writer, group)

        with mock.patch.object(resctrl_writer.Writer, 'create_group',
                               create):
            steps = []
            result = self.enf.apply(lay((U1, 0, 3, (4,)), (U2, 0, 3, (5,))),
                                    [0, 1], steps)
        self.assertEqual(['create %s: no closid left' % G1], result.errors)
        self.assertNotIn(G1, self.rt.groups())
        self.assertFalse([s for s in steps if G1 in s])
        # The other class is written whole.
        self.assertIn('schemata %s' % G2, steps)
        self.assertIn('cpus %s' % G2, steps)

    def test_refused_batch_writes_nothing(self):
        for ops in ([['chmod', None, '/etc/shadow']],
                    [['create', None]],
                    [['create', 7, 'resq-x']],
                    'create',
                    [['remove', None, 'x']] * (
                        resq_agent.privsep.resctrl.MAX_OPS + 1)):
            self.assertRaises(exception.ResctrlError,
                              resq_agent.privsep.resctrl.apply_ops, ops)
        # A bad operation after good ones: none of them runs.
        self.assertRaises(exception.ResctrlError,
                          resq_agent.privsep.resctrl.apply_ops,
                          [['create', 'resq-a', 'resq-a'],
                           ['mkfs', None]])
        self.assertNotIn('resq-a', self.rt.groups())

    def test_large_pass_is_split_under_the_message_limit(self):
        self.useFixture(fixtures.MockPatchObject(
            resq_agent.privsep.resctrl, 'BATCH_BYTES', 300))
        reqs = [('%08d-1111-1111-1111-111111111111' % i, i % 2, 1,
                 (i + 2,)) for i in range(8)]
        result = self.enf.apply(lay(*reqs), [0, 1])
        self.assertEqual([], result.errors)
        self.assertGreater(len(self.calls), 2)
        for call in self.calls:
            self.assertLessEqual(sum(len(msgpack.packb(op)) for op in call),
                                 300 + 200)
        self.assertEqual(8, len(result.written))

    def test_chain_failed_in_one_batch_skips_it_in_the_next(self):
        ops = [['create', 'resq-b', 'bad/name'],
               ['create', 'resq-c', 'resq-c'],
               ['schemata', 'resq-b', 'resq-b', {0: 1}],
               ['cpus', 'resq-b', 'resq-b', [1]]]
        self.useFixture(fixtures.MockPatchObject(
            resq_agent.privsep.resctrl, 'BATCH_BYTES', 1))
        out = resq_agent.privsep.resctrl.run_ops(ops)
        self.assertIsInstance(out[0], exception.ResctrlError)
        self.assertEqual([None, 'skipped', 'skipped'], out[1:])
        # The skipped ones were never sent.
        self.assertEqual(2, len(self.calls))

    def test_daemon_failure_fails_each_write_of_the_pass(self):
        def dead(ops):
            raise ConnectionResetError('daemon went away')
        self.useFixture(fixtures.MockPatchObject(
            resq_agent.privsep.resctrl, 'apply_ops', dead))
        result = self.enf.apply(lay((U1, 0, 3, (4,)), (U2, 0, 3, (5,))),
                                [0, 1])
        # Each class's first write fails and its chain stops there; the
        # default group's writes fail on their own.
        self.assertTrue(result.errors)
        self.assertTrue(all('daemon went away' in e for e in result.errors))
        self.assertEqual([], result.written)

    def test_wide_masks_cross_as_hex(self):
        wide = (1 << 100) | 1
        sent = resq_agent.privsep.resctrl._wire(
            ('schemata', 'g', 'g', {0: wide}))
        self.assertEqual({0: '0x%x' % wide}, sent[-1])
        self.assertEqual({0: wide},
                         resq_agent.privsep.resctrl._decode(sent[-1]))
