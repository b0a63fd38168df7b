import os
from unittest import mock

from resq_agent import enforcer
from resq_agent import layout
import resq_agent.privsep.resctrl
from resq_common import resctrl
from tests import base
from tests.fixtures import resctrl as resctrl_fixture

U1 = '11111111-1111-1111-1111-111111111111'
U2 = '22222222-2222-2222-2222-222222222222'
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
        with mock.patch.object(resq_agent.privsep.resctrl, 'create_group',
                               side_effect=denied):
            result = self.enf.apply(lay((U1, 0, 3, (4,)),
                                        (U2, 0, 3, (5,))), [0, 1])
        self.assertEqual(2, len(result.errors))
        self.assertIn('is not writable (Read-only file system); mount it '
                      'read-write', result.errors[0])

    def test_one_failure_leaves_others_enforced(self):
        real = resq_agent.privsep.resctrl.write_l3_masks

        def flaky(group, masks):
            if group.endswith(U1):
                raise OSError(5, 'Input/output error')
            return real(group, masks)

        with mock.patch.object(resq_agent.privsep.resctrl, 'write_l3_masks',
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
