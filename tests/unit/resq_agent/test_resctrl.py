import os

import resq_agent.privsep.resctrl
from resq_agent import resctrl
from resq_profiler import exception
from tests import base
from tests.fixtures import resctrl as resctrl_fixture


class ResctrlReadTest(base.TestCase):

    def test_info_and_domains(self):
        tree = self.useFixture(resctrl_fixture.ResctrlTree(
            ways=11, domains=(0, 1), min_cbm_bits=2, num_closids=16,
            shareable_bits=0x600))
        info = resctrl.Resctrl(tree.root).info()
        self.assertEqual({'cbm_mask': 0x7ff, 'min_cbm_bits': 2,
                          'num_closids': 16, 'shareable_bits': 0x600,
                          'cdp': False}, info)
        self.assertEqual([0, 1], resctrl.Resctrl(tree.root).domains())

    def test_cdp_layout(self):
        tree = self.useFixture(resctrl_fixture.ResctrlTree(cdp=True))
        tr = resctrl.Resctrl(tree.root)
        self.assertTrue(tr.info()['cdp'])
        self.assertEqual([0], tr.domains())

    def test_missing_root(self):
        exc = self.assertRaises(exception.ResctrlError, resctrl.Resctrl(
            os.path.join(self.tmp, 'nope')).check)
        self.assertIn('does not exist', str(exc))
        self.assertIn('mount -t resctrl', str(exc))

    def test_not_laid_out_like_resctrl(self):
        os.makedirs(os.path.join(self.tmp, 'info', 'L3'))
        exc = self.assertRaises(exception.ResctrlError,
                                resctrl.Resctrl(self.tmp).check)
        self.assertIn('missing info/L3/cbm_mask', str(exc))

    def test_group_names(self):
        self.assertEqual('resq-abc', resctrl.check_group_name('resq-abc'))
        for bad in ('other', 'resq-', 'resq-../x', '../resq-a', 'resq-A',
                    None, 'resq-a/b'):
            self.assertRaises(exception.ResctrlError,
                              resctrl.check_group_name, bad)

    def test_schemata_round_trip(self):
        text = 'L3:0=fffff;1=3\nMB:0=100;1=50\n'
        parsed = resctrl.parse_schemata(text)
        self.assertEqual({0: 0xfffff, 1: 0x3}, parsed['L3'])
        self.assertEqual(text, resctrl.format_schemata(parsed))


class ResctrlWriteTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(base.PrivsepInProcess())
        self.tree = self.useFixture(resctrl_fixture.ResctrlTree(
            ways=20, domains=(0, 1), foreign=('other-app', 'resq')))
        self.root = self.tree.root

    def test_group_lifecycle_leaves_foreign_groups_alone(self):
        mod = resq_agent.privsep.resctrl
        mod.create_group(self.root, 'resq-vm1')
        mod.create_group(self.root, 'resq-vm1')  # idempotent
        mod.write_l3_masks(self.root, 'resq-vm1', {0: 0xf0, 1: 0x3})
        mod.assign_cpus(self.root, 'resq-vm1', [3, 2, 3])
        mod.assign_task(self.root, 'resq-vm1', 1234)
        tr = resctrl.Resctrl(self.root)
        self.assertEqual({'L3': {0: 0xf0, 1: 0x3}},
                         tr.read_schemata('resq-vm1'))
        self.assertEqual('2,3', tr.read_cpus('resq-vm1'))
        self.assertEqual([1234], tr.read_tasks('resq-vm1'))
        self.assertEqual(['resq-vm1'], tr.owned_groups())
        self.assertTrue(mod.remove_group(self.root, 'resq-vm1'))
        self.assertFalse(mod.remove_group(self.root, 'resq-vm1'))
        self.assertEqual(['other-app', 'resq'], tr.groups())
        self.assertEqual(self.tree.default_schemata,
                         self.tree.read('other-app', 'schemata'))
        self.assertEqual(self.tree.default_schemata,
                         self.tree.read('schemata'))

    def test_refuses_foreign_groups_and_bad_masks(self):
        mod = resq_agent.privsep.resctrl
        self.assertRaises(exception.ResctrlError, mod.write_l3_masks,
                          self.root, 'other-app', {0: 0xf})
        self.assertRaises(exception.ResctrlError, mod.remove_group,
                          self.root, 'resq')
        mod.create_group(self.root, 'resq-vm2')
        exc = self.assertRaises(exception.ResctrlError, mod.write_l3_masks,
                                self.root, 'resq-vm2', {0: 0b1011})
        self.assertIn('not contiguous', str(exc))
        exc = self.assertRaises(exception.ResctrlError, mod.write_l3_masks,
                                self.root, 'resq-vm2', {7: 0x1})
        self.assertIn('cache domain 7 does not exist', str(exc))
        self.assertRaises(exception.ResctrlError, mod.assign_task,
                          self.root, 'resq-vm2', 0)
        self.assertRaises(exception.ResctrlError, mod.assign_cpus,
                          self.root, 'resq-vm2', [-1])
        self.assertEqual(self.tree.default_schemata,
                         self.tree.read('other-app', 'schemata'))

    def test_refuses_a_root_that_is_not_resctrl(self):
        mod = resq_agent.privsep.resctrl
        self.assertRaises(exception.ResctrlError, mod.create_group,
                          self.tmp, 'resq-x')
        self.assertFalse(os.path.exists(os.path.join(self.tmp, 'resq-x')))

    def test_cdp_writes_code_and_data(self):
        tree = self.useFixture(resctrl_fixture.ResctrlTree(cdp=True))
        mod = resq_agent.privsep.resctrl
        mod.create_group(tree.root, 'resq-cdp')
        mod.write_l3_masks(tree.root, 'resq-cdp', {0: 0x3c})
        sch = resctrl.Resctrl(tree.root).read_schemata('resq-cdp')
        self.assertEqual({'L3CODE': {0: 0x3c}, 'L3DATA': {0: 0x3c}}, sch)
