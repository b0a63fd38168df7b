import os
from unittest import mock

import fixtures

import resq_agent.privsep.resctrl
from resq_common import exception
from resq_common import resctrl
from resq_common import resctrl_writer
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
        self.useFixture(base.PrivsepInProcess(self.conf))
        self.tree = self.useFixture(resctrl_fixture.ResctrlTree(
            ways=20, domains=(0, 1), foreign=('other-app', 'resq')))
        self.root = self.tree.root
        self.flags('resq_agent', resctrl_root=self.root)
        self.mod = resq_agent.privsep.resctrl

    def test_group_lifecycle_leaves_foreign_groups_alone(self):
        mod = self.mod
        mod.create_group('resq-vm1')
        mod.create_group('resq-vm1')  # idempotent
        mod.write_l3_masks('resq-vm1', {0: 0xf0, 1: 0x3})
        mod.assign_cpus('resq-vm1', [3, 2, 3])
        # The agent assigns CPUs, never processes: no such call.
        self.assertFalse(hasattr(mod, 'assign_task'))
        tr = resctrl.Resctrl(self.root)
        self.assertEqual({'L3': {0: 0xf0, 1: 0x3}},
                         tr.read_schemata('resq-vm1'))
        self.assertEqual('2,3', tr.read_cpus('resq-vm1'))
        self.assertEqual(['resq-vm1'], tr.owned_groups())
        self.assertTrue(mod.remove_group('resq-vm1'))
        self.assertFalse(mod.remove_group('resq-vm1'))
        self.assertEqual(['other-app', 'resq'], tr.groups())
        self.assertEqual(self.tree.default_schemata,
                         self.tree.read('other-app', 'schemata'))
        self.assertEqual(self.tree.default_schemata,
                         self.tree.read('schemata'))

    def test_no_more_groups_than_classes_of_service(self):
        """A plain tree (the fake kernel) is held to its num_closids."""
        mod = self.mod
        # 16 classes: the default group, other-app and resq hold 3.
        for i in range(13):
            mod.create_group('resq-g%d' % i)
        mod.create_group('resq-g0')       # an existing one: idempotent
        exc = self.assertRaises(exception.ResctrlError, mod.create_group,
                                'resq-g13')
        self.assertIn('no class of service left', exc.message)
        self.assertIn('all 16', exc.message)
        self.assertFalse(os.path.exists(os.path.join(self.root,
                                                     'resq-g13')))
        # As a batch too: each create past the limit is refused, the
        # rest of the batch runs.
        mod.remove_group('resq-g12')
        out = mod.run_ops([['create', None, 'resq-h%d' % i]
                           for i in range(3)])
        self.assertIsNone(out[0])
        self.assertIsInstance(out[1], exception.ResctrlError)
        self.assertIsInstance(out[2], exception.ResctrlError)

    def test_refuses_foreign_groups_and_bad_values(self):
        mod = self.mod
        self.assertRaises(exception.ResctrlError, mod.write_l3_masks,
                          'other-app', {0: 0xf})
        self.assertRaises(exception.ResctrlError, mod.remove_group, 'resq')
        mod.create_group('resq-vm2')
        exc = self.assertRaises(exception.ResctrlError, mod.write_l3_masks,
                                'resq-vm2', {0: 0b1011})
        self.assertIn('not contiguous', str(exc))
        exc = self.assertRaises(exception.ResctrlError, mod.write_l3_masks,
                                'resq-vm2', {7: 0x1})
        self.assertIn('cache domain 7 does not exist', str(exc))
        for bad in ({}, {0: '3'}, {'0': 3}, {0: True}, [(0, 3)]):
            self.assertRaises(exception.ResctrlError, mod.write_l3_masks,
                              'resq-vm2', bad)
        for cpus in ([-1], ['1'], '1,2', [1.5], [100000]):
            self.assertRaises(exception.ResctrlError, mod.assign_cpus,
                              'resq-vm2', cpus)
        self.assertEqual(self.tree.default_schemata,
                         self.tree.read('other-app', 'schemata'))

    def test_callers_cannot_choose_the_root(self):
        # The privileged side takes no root argument: an unprivileged
        # caller cannot point it at another directory.
        elsewhere = self.useFixture(resctrl_fixture.ResctrlTree())
        self.assertRaises(TypeError, self.mod.create_group, elsewhere.root,
                          'resq-x')
        self.assertRaises(TypeError, self.mod.write_l3_masks,
                          elsewhere.root, 'resq-x', {0: 0x3})
        self.assertEqual(self.root, self.mod.resctrl_root())
        self.mod.create_group('resq-x')
        self.assertTrue(os.path.isdir(os.path.join(self.root, 'resq-x')))
        self.assertFalse(os.path.exists(os.path.join(elsewhere.root,
                                                     'resq-x')))

    def test_the_profilers_groups_are_not_the_agents(self):
        # A profiling run on the same host: resq-nova's group, not the
        # agent's to create, write, assign or remove.
        os.mkdir(os.path.join(self.root, 'resq-profiler-run'))
        for fn, args in ((self.mod.create_group, ('resq-profiler',)),
                         (self.mod.write_l3_masks, ('resq-profiler-run',
                                                    {0: 0x3})),
                         (self.mod.assign_cpus, ('resq-profiler-run', [1])),
                         (self.mod.remove_group, ('resq-profiler-run',)),
                         (self.mod.create_mon_group, ('resq-profiler-run',
                                                      'resq-m', [1])),
                         (self.mod.remove_mon_group, ('resq-profiler-run',
                                                      'resq-m'))):
            exc = self.assertRaises(exception.ResctrlError, fn, *args)
            self.assertIn("is not resq-agent's", str(exc))
        self.assertFalse(os.path.exists(os.path.join(self.root,
                                                     'resq-profiler')))
        self.assertTrue(os.path.isdir(os.path.join(self.root,
                                                   'resq-profiler-run')))

    def test_names_are_matched_whole(self):
        for name in ('resq-vm1\n', 'resq-vm1\nother', 'resq-VM', 'resq-'):
            exc = self.assertRaises(exception.ResctrlError,
                                    self.mod.create_group, name)
            self.assertIn('not one of ours', str(exc))

    def test_hard_linked_file_is_refused(self):
        victim = self._victim()
        self.mod.create_group('resq-h')
        path = os.path.join(self.root, 'resq-h', 'schemata')
        if os.path.exists(path):
            os.unlink(path)
        os.link(os.path.join(victim, 'schemata'), path)
        exc = self.assertRaises(exception.ResctrlError,
                                self.mod.write_l3_masks, 'resq-h', {0: 0x3})
        self.assertIn('2 links; refusing to write through a hard link',
                      str(exc))
        self._assert_untouched(victim)

    def _victim(self):
        """A directory outside the tree that looks like a group."""
        victim = os.path.join(self.tmp, 'victim')
        os.mkdir(victim)
        for name, text in (('tasks', '77\n'), ('schemata', 'precious\n'),
                           ('cpus_list', '0\n')):
            with open(os.path.join(victim, name), 'w') as f:
                f.write(text)
        return victim

    def _assert_untouched(self, victim):
        for name, text in (('tasks', '77\n'), ('schemata', 'precious\n'),
                           ('cpus_list', '0\n')):
            with open(os.path.join(victim, name)) as f:
                self.assertEqual(text, f.read())

    def test_symlinked_group_is_refused(self):
        victim = self._victim()
        os.symlink(victim, os.path.join(self.root, 'resq-x'))
        calls = ((self.mod.write_l3_masks, ('resq-x', {0: 0x3})),
                 (self.mod.assign_cpus, ('resq-x', [1])),
                 (self.mod.create_group, ('resq-x',)),
                 (self.mod.remove_group, ('resq-x',)))
        for fn, args in calls:
            exc = self.assertRaises(exception.ResctrlError, fn, *args)
            self.assertIn('symbolic link', str(exc))
        self._assert_untouched(victim)
        self.assertTrue(os.path.islink(os.path.join(self.root, 'resq-x')))

    def test_symlinked_files_in_a_group_are_refused(self):
        victim = self._victim()
        self.mod.create_group('resq-y')
        for name in ('tasks', 'schemata', 'cpus_list'):
            path = os.path.join(self.root, 'resq-y', name)
            if os.path.exists(path):
                os.unlink(path)
            os.symlink(os.path.join(victim, name), path)
        for fn, args in ((self.mod.write_l3_masks, ('resq-y', {0: 0x3})),
                         (self.mod.assign_cpus, ('resq-y', [1]))):
            exc = self.assertRaises(exception.ResctrlError, fn, *args)
            self.assertIn('symbolic link', str(exc))
        self._assert_untouched(victim)

    def test_symlinked_root_is_refused(self):
        link = os.path.join(self.tmp, 'resctrl-link')
        os.symlink(self.root, link)
        self.flags('resq_agent', resctrl_root=link)
        exc = self.assertRaises(exception.ResctrlError,
                                self.mod.create_group, 'resq-z')
        self.assertIn('is a symbolic link', str(exc))
        self.assertFalse(os.path.exists(os.path.join(self.root, 'resq-z')))

    def test_foreign_root_is_refused_outside_tests(self):
        # The statfs check the test fixture turns off: a tree laid out like
        # resctrl's on another file system is not resctrl.
        self.useFixture(fixtures.MonkeyPatch(
            'resq_common.resctrl_writer.CHECK_FS_MAGIC', True))
        exc = self.assertRaises(exception.ResctrlError,
                                self.mod.create_group, 'resq-x')
        self.assertIn('%s is not a resctrl file system (statfs type'
                      % self.root, str(exc))
        self.assertFalse(os.path.exists(os.path.join(self.root, 'resq-x')))
        # ... and a resctrl mount passes it.
        with mock.patch.object(resctrl_writer, '_fs_magic',
                               return_value=resctrl_writer.
                               RDTGROUP_SUPER_MAGIC):
            self.mod.create_group('resq-x')
        self.assertTrue(os.path.isdir(os.path.join(self.root, 'resq-x')))

    def fake_conf(self, mode=0o644, dir_mode=0o755, config_dir=None):
        """A configuration of the privileged side, from a file."""
        from oslo_config import cfg

        from resq_agent.conf import agent as agent_conf

        confdir = os.path.join(self.tmp, 'privsep-%o-%o' % (mode, dir_mode))
        os.mkdir(confdir)
        path = os.path.join(confdir, 'resq-agent-privsep.conf')
        with open(path, 'w') as f:
            f.write('[resq_agent]\nresctrl_root = %s\nresctrl_fake = true\n'
                    % self.root)
        os.chmod(path, mode)
        os.chmod(confdir, dir_mode)
        conf = cfg.ConfigOpts()
        conf.register_opt(agent_conf.RESCTRL_ROOT_OPT, group='resq_agent')
        args = ['--config-file', path]
        if config_dir:
            args += ['--config-dir', config_dir]
        conf(args, project='resq', default_config_files=[])
        ctx = resq_agent.privsep.resctrl_pctxt
        self.addCleanup(ctx.use_conf, ctx.use_conf(conf))
        return path

    def test_fake_tree_when_roots_configuration_says_so(self):
        # devstack on a host without RDT: [resq_agent] resctrl_fake in
        # root's own file lets the privileged side write the fake tree.
        self.useFixture(fixtures.MonkeyPatch(
            'resq_common.resctrl_writer.CHECK_FS_MAGIC', True))
        self.fake_conf()
        self.mod.create_group('resq-y')
        self.assertTrue(os.path.isdir(os.path.join(self.root, 'resq-y')))

    def test_fake_tree_from_a_file_others_can_write_is_refused(self):
        if os.geteuid() != 0:
            self.skipTest('the ownership rule applies to root only')
        self.useFixture(fixtures.MonkeyPatch(
            'resq_common.resctrl_writer.CHECK_FS_MAGIC', True))
        for mode, dir_mode in ((0o666, 0o755), (0o644, 0o777)):
            self.fake_conf(mode, dir_mode)
            exc = self.assertRaises(exception.ResctrlError,
                                    self.mod.create_group, 'resq-z')
            self.assertIn('resctrl_fake is honoured only from root\'s '
                          'configuration', str(exc))
        self.assertFalse(os.path.exists(os.path.join(self.root, 'resq-z')))

    def test_fake_tree_with_a_config_dir_is_refused(self):
        # root's file says "fake", a directory of the caller's moves the
        # root: --config-dir files are refused, whoever owns them.
        if os.geteuid() != 0:
            self.skipTest('the ownership rule applies to root only')
        self.useFixture(fixtures.MonkeyPatch(
            'resq_common.resctrl_writer.CHECK_FS_MAGIC', True))
        extra = os.path.join(self.tmp, 'conf.d')
        os.mkdir(extra)
        self.fake_conf(config_dir=extra)
        exc = self.assertRaises(exception.ResctrlError,
                                self.mod.create_group, 'resq-w')
        self.assertIn('also read --config-dir %s' % extra, str(exc))
        self.assertFalse(os.path.exists(os.path.join(self.root, 'resq-w')))

    def test_fake_tree_without_a_file_is_refused(self):
        if os.geteuid() != 0:
            self.skipTest('the ownership rule applies to root only')
        self.useFixture(fixtures.MonkeyPatch(
            'resq_common.resctrl_writer.CHECK_FS_MAGIC', True))
        self.flags('resq_agent', resctrl_fake=True)
        exc = self.assertRaises(exception.ResctrlError,
                                self.mod.create_group, 'resq-y')
        self.assertIn('not from a configuration file', str(exc))

    def test_root_that_is_not_resctrl(self):
        self.flags('resq_agent', resctrl_root=self.tmp)
        self.assertRaises(exception.ResctrlError, self.mod.create_group,
                          'resq-x')
        self.assertFalse(os.path.exists(os.path.join(self.tmp, 'resq-x')))

    def test_wide_caches(self):
        # A 128-way tree (the agent benchmark's): masks above 64 bits.
        tree = self.useFixture(resctrl_fixture.ResctrlTree(ways=128))
        self.flags('resq_agent', resctrl_root=tree.root)
        self.mod.create_group('resq-wide')
        self.mod.write_l3_masks('resq-wide', {0: 1 << 127})
        self.assertEqual({0: 1 << 127}, resctrl.Resctrl(tree.root)
                         .read_schemata('resq-wide')['L3'])
        self.assertRaises(exception.ResctrlError, self.mod.write_l3_masks,
                          'resq-wide', {0: 1 << 128})

    def test_cdp_writes_code_and_data(self):
        tree = self.useFixture(resctrl_fixture.ResctrlTree(cdp=True))
        self.flags('resq_agent', resctrl_root=tree.root)
        self.mod.create_group('resq-cdp')
        self.mod.write_l3_masks('resq-cdp', {0: 0x3c})
        sch = resctrl.Resctrl(tree.root).read_schemata('resq-cdp')
        self.assertEqual({'L3CODE': {0: 0x3c}, 'L3DATA': {0: 0x3c}}, sch)
