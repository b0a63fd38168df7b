"""Memory bandwidth (MB lines): the privileged writer and the enforcer."""

import fixtures

from resq_agent import enforcer
from resq_agent import layout
import resq_agent.privsep.resctrl
from resq_common import exception
from resq_common import mba
from resq_common import resctrl
from resq_common import resctrl_writer
from tests import base
from tests.fixtures import resctrl as resctrl_fixture

U1 = '11111111-1111-1111-1111-111111111111'
U2 = '22222222-2222-2222-2222-222222222222'
SHAPES = [layout.DomainShape(0, 0xfffff), layout.DomainShape(1, 0xfffff)]
MBA_TREES = {
    'percent': dict(resources={'MB': {'min_bandwidth': 10,
                                      'bandwidth_gran': 10}}),
    'mbps': dict(resources={'MB': {}}, mba_mbps=True),
    'amd': dict(resources={'MB': {}}, vendor='amd'),
}


class Recorder:
    """The kernel's system calls, with each file write kept."""

    def __init__(self, syscalls):
        self.syscalls = syscalls
        self.writes = []

    def mkdir(self, name, dir_fd):
        return self.syscalls.mkdir(name, dir_fd)

    def rmdir(self, name, dir_fd):
        return self.syscalls.rmdir(name, dir_fd)

    def write_file(self, dir_fd, name, text, append, where):
        self.writes.append((name, text))
        return self.syscalls.write_file(dir_fd, name, text, append, where)


class WriterTest(base.TestCase):

    def tree(self, mode='percent', **kw):
        kw = dict(MBA_TREES.get(mode, {}), **kw)
        tree = self.useFixture(resctrl_fixture.ResctrlTree(
            ways=20, domains=(0, 1), kernel=True, **kw))
        self.flags('resq_agent', resctrl_root=tree.root)
        self.rec = Recorder(resctrl_writer.SYSCALLS)
        self.useFixture(fixtures.MonkeyPatch(
            'resq_common.resctrl_writer.SYSCALLS', self.rec))
        self.mod.create_group('resq-g')
        return tree

    def setUp(self):
        super().setUp()
        self.useFixture(base.PrivsepInProcess(self.conf))
        self.mod = resq_agent.privsep.resctrl

    def schemata_writes(self):
        return [text for name, text in self.rec.writes if name == 'schemata']

    def test_l3_and_mb_in_one_write(self):
        tree = self.tree()
        self.mod.write_l3_masks('resq-g', {0: 0xf0, 1: 0x3},
                                mb={0: 50, 1: 100})
        self.assertEqual(['L3:0=f0;1=3\nMB:0=50;1=100\n'],
                         self.schemata_writes())
        self.assertEqual('L3:0=f0;1=3\nMB:0=50;1=100\n',
                         tree.read('resq-g', 'schemata'))
        self.mod.write_default_l3_masks({0: 0xfff00, 1: 0xffffc},
                                        mb={0: 30, 1: 30})
        self.assertEqual('L3:0=fff00;1=ffffc\nMB:0=30;1=30\n',
                         self.schemata_writes()[-1])

    def test_cdp_code_data_and_mb_in_one_write(self):
        self.tree(cdp=True)
        self.mod.write_l3_masks('resq-g', {0: 0xf0, 1: 0x3},
                                mb={0: 20, 1: 100})
        self.assertEqual(['L3CODE:0=f0;1=3\nL3DATA:0=f0;1=3\n'
                          'MB:0=20;1=100\n'], self.schemata_writes())

    def test_without_mb_the_write_is_as_before(self):
        for mode in ('percent', 'none'):
            tree = self.tree(mode)
            self.mod.write_l3_masks('resq-g', {0: 0xf0, 1: 0x3})
            self.assertEqual(['L3:0=f0;1=3\n'], self.schemata_writes())
            # The kernel keeps the lines a write does not name.
            self.assertEqual('L3:0=f0;1=3\n' + (
                'MB:0=100;1=100\n' if mode == 'percent' else ''),
                tree.read('resq-g', 'schemata'))

    def test_each_mode_range(self):
        for mode, good, bad in (
                ('percent', (10, 60, 100), (0, 5, 110, 2048)),
                ('mbps', (1, 100, 2000, mba.MBPS_MAX), (0,)),
                ('amd', (1, 16, 2048), (0, 2049, 4096))):
            tree = self.tree(mode)
            for value in good:
                self.mod.write_l3_masks('resq-g', {0: 0x3, 1: 0x3},
                                        mb={0: value, 1: value})
                self.assertEqual({0: str(value), 1: str(value)},
                                 resctrl.parse_schemata(tree.read(
                                     'resq-g', 'schemata'))['MB'])
            before = tree.read('resq-g', 'schemata')
            for value in bad:
                exc = self.assertRaises(
                    exception.ResctrlError, self.mod.write_l3_masks,
                    'resq-g', {0: 0xf, 1: 0xf}, mb={0: value})
                self.assertIn('MB value %d of domain 0 is outside' % value,
                              exc.message)
                self.assertIn('%s MBA' % mode, exc.message)
                self.assertIn('write %d for no limit' % mba.MbaInfo(
                    mode).max_value, exc.message)
            self.assertEqual(before, tree.read('resq-g', 'schemata'))

    def test_refusals_name_the_fault_and_write_nothing(self):
        tree = self.tree()
        before = tree.read('resq-g', 'schemata')
        writes = len(self.rec.writes)
        for mb, text in (
                ({0: 55}, 'not a multiple of info/MB/bandwidth_gran (10): '
                 'the kernel would make it 60; write that'),
                ({2: 50}, 'memory bandwidth domain 2 does not exist under '),
                ({0: '50'}, 'MB values must be integers, got \'50\''),
                ({0: True}, 'MB values must be integers, got True'),
                ({0: 50.0}, 'MB values must be integers, got 50.0'),
                ({'0': 50}, 'memory bandwidth domain ids must be integers'),
                ({0: 2 ** 40}, 'MB values must be between 0 and 4294967295'),
                ({}, 'MB values must be a non-empty {domain id: value} '
                 'map'),
                ([50, 50], 'MB values must be a non-empty')):
            exc = self.assertRaises(exception.ResctrlError,
                                    self.mod.write_l3_masks, 'resq-g',
                                    {0: 0xf, 1: 0xf}, mb=mb)
            self.assertIn(text, exc.message)
        # A bad mask is refused before the MB values are looked at.
        exc = self.assertRaises(exception.ResctrlError,
                                self.mod.write_l3_masks, 'resq-g',
                                {0: 0x5}, mb={0: 50})
        self.assertIn('cache domain 0', exc.message)
        self.assertEqual(writes, len(self.rec.writes))
        self.assertEqual(before, tree.read('resq-g', 'schemata'))

    def test_no_mba_refuses_mb_values(self):
        tree = self.tree('none')
        exc = self.assertRaises(exception.ResctrlError,
                                self.mod.write_l3_masks, 'resq-g',
                                {0: 0xf}, mb={0: 100})
        self.assertIn('has no info/MB: the kernel offers no memory '
                      'bandwidth allocation here; write the L3 masks alone',
                      exc.message)
        self.assertEqual([], self.schemata_writes())
        self.assertNotIn('MB', tree.read('resq-g', 'schemata'))

    def test_batch_operations(self):
        tree = self.tree()
        out = self.mod.apply_ops([
            ['schemata', 'resq-g', 'resq-g', {0: 0x3, 1: 0x3},
             {0: 40, 1: 100}],
            ['default', None, {0: 0xffffc, 1: 0xffffc}, {0: 20, 1: 20}],
            ['schemata', 'resq-g', 'resq-g', {0: 0xf, 1: 0xf}],
            ['schemata', None, 'resq-g', {0: 0x3}, {0: 45}]])
        self.assertEqual([None, None, None], out[:3])
        self.assertEqual('ResctrlError', out[3][0])
        self.assertIn('the kernel would make it 50', out[3][1])
        self.assertEqual('L3:0=f;1=f\nMB:0=40;1=100\n',
                         tree.read('resq-g', 'schemata'))
        self.assertIn('MB:0=20;1=20', tree.read('schemata'))
        # An arity no kind has: the whole batch is refused.
        exc = self.assertRaises(
            exception.ResctrlError, self.mod.apply_ops,
            [['schemata', 'resq-g', 'resq-g', {0: 0x3}, {0: 40}, None,
              'x']])
        self.assertIn('refused resctrl batch operation', exc.message)
        self.assertIn('MB:0=40;1=100', tree.read('resq-g', 'schemata'))

    def test_run_ops_keeps_mb_and_encodes_wide_masks(self):
        op = resq_agent.privsep.resctrl._wire(
            ('schemata', 'g', 'g', {0: 1 << 70}, {0: 100}))
        self.assertEqual(['schemata', 'g', 'g', {0: '0x%x' % (1 << 70)},
                          {0: 100}], op)
        op = resq_agent.privsep.resctrl._wire(
            ('default', None, {0: 1 << 70}, {0: 100}))
        self.assertEqual(['default', None, {0: '0x%x' % (1 << 70)},
                          {0: 100}], op)


def lay(mb_max=None, default_mb=None, *members):
    """A layout of ``(uuid, domain, ways, cpus, mb)`` members."""
    result = layout.compute(SHAPES, [
        layout.Request(u, d, w, cpus=c, mem_bw_mibps=100 if m else 0, mb=m)
        for u, d, w, c, m in members], 16, shared=True)
    result.mb_max = mb_max
    result.default_mb = default_mb
    return result


class EnforcerTreeMixin:
    """An enforcer on a two-domain fake kernel tree (:meth:`make`)."""

    def setUp(self):
        super().setUp()
        self.useFixture(base.PrivsepInProcess(self.conf))

    def make(self, **kw):
        self.tree = self.useFixture(resctrl_fixture.ResctrlTree(
            ways=20, domains=(0, 1), kernel=True, **kw))
        self.flags('resq_agent', resctrl_root=self.tree.root)
        self.rt = resctrl.Resctrl(self.tree.root)
        return enforcer.ResctrlEnforcer(self.tree.root)


class EnforcerTest(EnforcerTreeMixin, base.TestCase):

    def mb(self, group=None):
        sch = (self.rt.read_schemata(group) if group else
               resctrl.parse_schemata(self.tree.read('schemata')))
        return {d: int(v) for d, v in sch['MB'].items()}

    def test_members_default_and_repair(self):
        enf = self.make(**MBA_TREES['percent'])
        plan = lay(100, {0: 30, 1: 30}, (U1, 0, 3, (4,), 40),
                   (U2, 1, 3, (9,), None))
        result = enf.apply(plan, [0, 1])
        self.assertEqual([], result.errors)
        # U1 and U2 share class 1: U1's value in domain 0, none in 1.
        self.assertEqual({0: 40, 1: 100}, self.mb('resq-cos1'))
        self.assertEqual({0: 30, 1: 30}, self.mb())
        steps = []
        enf.apply(plan, [0, 1], steps)
        self.assertEqual([], steps)           # nothing differs
        # Someone changes the MB lines: the next pass puts them back.
        resq_agent.privsep.resctrl.write_l3_masks(
            'resq-cos1', self.rt.read_schemata('resq-cos1')['L3'],
            mb={0: 100, 1: 10})
        resq_agent.privsep.resctrl.write_default_l3_masks(
            resctrl.parse_schemata(self.tree.read('schemata'))['L3'],
            mb={0: 100, 1: 100})
        enf.apply(plan, [0, 1], steps)
        self.assertEqual(['bandwidth of default', 'schemata resq-cos1'],
                         steps)
        self.assertEqual({0: 40, 1: 100}, self.mb('resq-cos1'))
        self.assertEqual({0: 30, 1: 30}, self.mb())
        # U1 leaves; U2 takes class 1 alone: no limit is left behind.
        enf.apply(lay(100, {0: 30, 1: 30}, (U2, 1, 3, (9,), None)), [0, 1])
        self.assertEqual({0: 100, 1: 100}, self.mb('resq-cos1'))

    def test_without_mba_no_op_carries_mb(self):
        enf = self.make()
        ops = []
        real = resq_agent.privsep.resctrl.run_ops

        def spy(batch):
            ops.extend(batch)
            return real(batch)

        self.useFixture(fixtures.MonkeyPatch(
            'resq_agent.privsep.resctrl.run_ops', spy))
        enf.apply(lay(None, None, (U1, 0, 3, (4,), None)), [0, 1])
        schemata = [op for op in ops if op[0] in ('schemata', 'default')]
        self.assertEqual([3, 4], sorted(len(op) for op in schemata))
        self.assertEqual('L3:0=7;1=fffff\n',
                         self.rt._read('resq-cos1', 'schemata') + '\n')
