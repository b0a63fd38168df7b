"""The fake kernel's MBA, SMBA, L2 CAT and CDP rules, as the kernel's.

Each rule names where it comes from: a section of the kernel's
Documentation/filesystems/resctrl.rst ("doc") or a function of x86's
resctrl (arch/x86/kernel/cpu/resctrl/ctrlmondata.c, fs/resctrl/ since
6.16; "code") where the doc says nothing.
"""

import errno
import os

from resq_fake import resctrl as fake_resctrl
from tests import base


class RdtKernelTest(base.TestCase):

    def build(self, **kw):
        self.root = os.path.join(self.tmp, 'resctrl')
        kw.setdefault('domains', (0, 1))
        kw.setdefault('foreign', ())
        fake_resctrl.build_resctrl(self.root, **kw)
        self.kernel = fake_resctrl.Kernel(self.root)
        return self.kernel

    def read(self, *parts):
        with open(os.path.join(self.root, *parts)) as f:
            return f.read()

    def status(self):
        return self.read('info', 'last_cmd_status').strip()

    def mkdir(self, name):
        fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY)
        try:
            self.kernel.mkdir(name, fd)
        finally:
            os.close(fd)

    def write(self, group, text, name='schemata'):
        fd = os.open(os.path.join(self.root, group),
                     os.O_RDONLY | os.O_DIRECTORY)
        try:
            self.kernel.write_file(fd, name, text, False, 'in test')
        finally:
            os.close(fd)

    def line(self, group, kind):
        for line in self.read(group, 'schemata').splitlines():
            if line.split(':')[0] == kind:
                return line
        return None

    def refused(self, group, text, why):
        """``text`` refused whole with ``why``; the schemata unchanged."""
        before = self.read(group, 'schemata')
        exc = self.assertRaises(OSError, self.write, group, text)
        self.assertEqual(errno.EINVAL, exc.errno, text)
        self.assertEqual(why, self.status(), text)
        self.assertEqual(before, self.read(group, 'schemata'), text)


class IntelMbaTest(RdtKernelTest):

    def setUp(self):
        super().setUp()
        self.build(resources={'MB': 8})
        self.mkdir('g')

    def test_info_and_default(self):
        # doc "Info directory": min_bandwidth, bandwidth_gran,
        # delay_linear, thread_throttle_mode (Intel); code
        # __get_mem_config_intel: max_bw 100, min_bw = bw_gran.
        for name, value in (('num_closids', '8'), ('min_bandwidth', '10'),
                            ('bandwidth_gran', '10'), ('delay_linear', '1'),
                            ('thread_throttle_mode', 'max')):
            self.assertEqual(value + '\n', self.read('info', 'MB', name))
        # doc "Memory bandwidth Allocation (default mode)": the MB
        # domains are the L3 caches.
        self.assertEqual('MB:0=100;1=100', self.line('', 'MB'))
        self.assertEqual('MB:0=100;1=100', self.line('g', 'MB'))

    def test_percentages_in_range(self):
        # doc "Memory bandwidth Allocation and monitoring": min_bw + N *
        # bw_gran, "Intermediate values are rounded to the next control
        # step"; code bw_validate: roundup(bw, bw_gran).
        self.write('g', 'MB:0=10;1=100\n')
        self.assertEqual('MB:0=10;1=100', self.line('g', 'MB'))
        self.assertEqual('ok', self.status())
        self.write('g', 'MB:0=15;1=91\n')
        self.assertEqual('MB:0=20;1=100', self.line('g', 'MB'))
        # Omitted domains and resources keep their values (doc
        # "Reading/writing the schemata file").
        self.write('g', 'MB:1=50\n')
        self.assertEqual('MB:0=20;1=50', self.line('g', 'MB'))
        self.assertEqual('L3:0=fffff;1=fffff', self.line('g', 'L3'))

    def test_refused_values(self):
        # code bw_validate: the range check and its message (which says
        # "MB" whatever the resource), kstrtou32's refusals.
        for text, why in (
                ('MB:0=9\n', 'MB value 9 out of range [10,100]'),
                ('MB:0=0\n', 'MB value 0 out of range [10,100]'),
                ('MB:0=101\n', 'MB value 101 out of range [10,100]'),
                ('MB:0=-5\n', 'Invalid MB value -5'),
                ('MB:0=5x\n', 'Invalid MB value 5x'),
                ('MB:0=0x50\n', 'Invalid MB value 0x50'),
                ('MB:0=4294967296\n', 'Invalid MB value 4294967296')):
            self.refused('g', text, why)

    def test_refused_lines_and_domains(self):
        # code parse_line, parse_bw, rdtgroup_schemata_write.
        for text, why in (
                ('MB:\n', "Missing 'MB' value"),
                ('MB:0=50;0=60\n', 'Duplicate domain 0'),
                ('MB:0=50\nMB:0=60\n', 'Duplicate domain 0'),
                ('MB:x=50\n', "Missing '=' or non-numeric domain"),
                ('MB:0\n', "Missing '=' or non-numeric domain"),
                ('MB:0=50;;1=50\n', "Missing '=' or non-numeric domain"),
                ('MB 0=50\n', "Missing ':'"),
                # rdtgroup_parse_resource: a resource the tree lacks.
                ('SMBA:0=50\n', "Unknown or unsupported resource name "
                                "'SMBA'"),
                ('L2:0=f\n', "Unknown or unsupported resource name 'L2'"),
                # parse_line returns -EINVAL for an unknown domain and
                # writes no reason: last_cmd_status reads "ok".
                ('MB:7=50\n', 'ok')):
            self.refused('g', text, why)
        # A ";" ending the line is taken (strsep's empty tail).
        self.write('g', 'MB:0=50;\n')
        self.assertEqual('MB:0=50;1=100', self.line('g', 'MB'))

    def test_one_bad_line_changes_nothing(self):
        # code rdtgroup_schemata_write: every line is parsed into staged
        # configurations before any is applied.
        self.refused('g', 'L3:0=f\nMB:0=50\nMB:1=5\n',
                     'MB value 5 out of range [10,100]')
        self.refused('g', 'MB:0=50\nL3:0=f0f\n',
                     'The mask f0f has non-consecutive 1-bits')
        self.write('g', 'L3:0=f\nMB:0=50\n')
        self.assertEqual('L3:0=f;1=fffff', self.line('g', 'L3'))
        self.assertEqual('MB:0=50;1=100', self.line('g', 'MB'))

    def test_new_group_gets_the_most_bandwidth(self):
        # code rdtgroup_init_mba: a new group starts at the default
        # control, whatever the default group has.
        self.write('', 'MB:0=30\n')
        self.mkdir('h')
        self.assertEqual('MB:0=100;1=100', self.line('h', 'MB'))

    def test_other_granularity(self):
        root = os.path.join(self.tmp, 'other')
        fake_resctrl.build_resctrl(root, resources={
            'MB': {'num_closids': 8, 'min_bandwidth': 20,
                   'bandwidth_gran': 20}})
        self.root, self.kernel = root, fake_resctrl.Kernel(root)
        self.write('', 'MB:0=21\n')
        self.assertEqual('MB:0=40', self.line('', 'MB'))
        self.refused('', 'MB:0=19\n', 'MB value 19 out of range [20,100]')


class MbaMBpsTest(RdtKernelTest):

    def setUp(self):
        super().setUp()
        self.build(resources={'MB': 8}, mba_mbps=True)
        self.mkdir('g')

    def test_layout(self):
        # doc "Memory bandwidth Allocation specified in MiBps"; code
        # set_mba_sc: every group starts at MBA_MAX_MBPS (U32_MAX).
        self.assertEqual('MB:0=4294967295;1=4294967295',
                         self.line('g', 'MB'))
        # info/MB does not change with the mount option.
        self.assertEqual('10\n', self.read('info', 'MB', 'min_bandwidth'))
        # doc "mba_MBps_event" (6.14+): in every group.
        self.assertEqual('mbm_local_bytes\n', self.read('mba_MBps_event'))
        self.assertEqual('mbm_local_bytes\n',
                         self.read('g', 'mba_MBps_event'))
        self.assertTrue(self.kernel.mba_mbps())

    def test_any_u32_taken_as_it_is(self):
        # code bw_validate: "Nothing else to do if software controller is
        # enabled" (no range, no rounding); kstrtou32 still refuses.
        self.write('g', 'MB:0=1024;1=5\n')
        self.assertEqual('MB:0=1024;1=5', self.line('g', 'MB'))
        self.write('g', 'MB:0=0;1=4294967295\n')
        self.assertEqual('MB:0=0;1=4294967295', self.line('g', 'MB'))
        self.refused('g', 'MB:0=4294967296\n', 'Invalid MB value 4294967296')
        self.refused('g', 'MB:0=1k\n', 'Invalid MB value 1k')

    def test_event_file(self):
        # code rdtgroup_mba_mbps_event_write.
        self.write('g', 'mbm_total_bytes\n', 'mba_MBps_event')
        self.assertEqual('mbm_total_bytes\n',
                         self.read('g', 'mba_MBps_event'))
        exc = self.assertRaises(OSError, self.write, 'g', 'llc_occupancy\n',
                                'mba_MBps_event')
        self.assertEqual(errno.EINVAL, exc.errno)
        self.assertEqual("Unsupported event id 'llc_occupancy'",
                         self.status())

    def test_mount_needs_intel_mba_and_mbm(self):
        # code supports_mba_mbps: MBM, MBA, linear delay (not AMD's).
        for kw in ({'resources': {}}, {'monitoring': False},
                   {'vendor': 'amd'}):
            kw.setdefault('resources', {'MB': 8})
            self.assertRaises(fake_resctrl.InvalidTree,
                              fake_resctrl.build_resctrl,
                              os.path.join(self.tmp, 'x'), mba_mbps=True,
                              **kw)


class AmdBandwidthTest(RdtKernelTest):

    def setUp(self):
        super().setUp()
        self.build(vendor='amd', ways=16, domains=(0, 1, 2, 3),
                   sparse_masks=True, min_cbm_bits=0,
                   resources={'MB': 16, 'SMBA': 16})
        self.mkdir('g')

    def test_info_and_default(self):
        # code __rdt_get_mem_config_amd: min_bw 0, bw_gran 1, not
        # linear, no thread_throttle_mode; doc "Reading/writing the
        # schemata file (on AMD systems)": 2048 eighths of GB/s.
        for kind in ('MB', 'SMBA'):
            for name, value in (('min_bandwidth', '0'),
                                ('bandwidth_gran', '1'),
                                ('delay_linear', '0')):
                self.assertEqual(value + '\n', self.read('info', kind, name))
            self.assertFalse(os.path.exists(os.path.join(
                self.root, 'info', kind, 'thread_throttle_mode')))
            # doc "Slow Memory Bandwidth Allocation (SMBA)": its domain
            # is the L3 cache, as MB's.
            self.assertEqual('%s:0=2048;1=2048;2=2048;3=2048' % kind,
                             self.line('g', kind))

    def test_absolute_units(self):
        # doc's examples: "MB:1=16" (2 GB/s), "SMBA:1=64" (8 GB/s).
        self.write('g', 'MB:1=16\nSMBA:1=64\n')
        self.assertEqual('MB:0=2048;1=16;2=2048;3=2048', self.line('g', 'MB'))
        self.assertEqual('SMBA:0=2048;1=64;2=2048;3=2048',
                         self.line('g', 'SMBA'))
        # Granularity 1: nothing is rounded; 0 is a value.
        self.write('g', 'MB:0=0;2=2047\n')
        self.assertEqual('MB:0=0;1=16;2=2047;3=2048', self.line('g', 'MB'))

    def test_refused(self):
        for text, why in (
                ('MB:0=2049\n', 'MB value 2049 out of range [0,2048]'),
                ('SMBA:0=4096\n', 'MB value 4096 out of range [0,2048]'),
                ('SMBA:4=8\n', 'ok'),
                ('MB:0=8\nSMBA:0=x\n', 'Invalid MB value x')):
            self.refused('g', text, why)

    def test_smba_is_amd_only(self):
        self.assertRaises(fake_resctrl.InvalidTree,
                          fake_resctrl.build_resctrl,
                          os.path.join(self.tmp, 'x'),
                          resources={'SMBA': 16})


class L2CatTest(RdtKernelTest):

    def setUp(self):
        super().setUp()
        # Two L3s of two L2s each; L2 ids are not contiguous (doc "Cache
        # IDs": "it isn't guaranteed to be a contiguous sequence").
        self.build(resources={'L2': {'num_closids': 8, 'ways': 12,
                                     'min_cbm_bits': 2,
                                     'shareable_bits': 0xc00}},
                   l2_domains={0: (0, 1), 2: (2, 3), 8: (4, 5),
                               10: (6, 7)})
        self.mkdir('g')

    def test_info_and_domains(self):
        # doc "Info directory", cache resource (L3/L2) files.
        for name, value in (('num_closids', '8'), ('cbm_mask', 'fff'),
                            ('min_cbm_bits', '2'),
                            ('shareable_bits', 'c00')):
            self.assertEqual(value + '\n', self.read('info', 'L2', name))
        # doc "L2 schemata file details": L2:<cache_id0>=<cbm>;...
        self.assertEqual('L2:0=fff;2=fff;8=fff;10=fff', self.line('g', 'L2'))
        self.assertEqual('L3:0=fffff;1=fffff', self.line('g', 'L3'))

    def test_masks(self):
        self.write('g', 'L2:2=3c;10=0x0c0\n')
        self.assertEqual('L2:0=fff;2=3c;8=fff;10=c0', self.line('g', 'L2'))
        # doc "Cache Bit Masks (CBM)"; code cbm_validate.
        for text, why in (
                ('L2:0=f0f\n', 'The mask f0f has non-consecutive 1-bits'),
                ('L2:0=4\n', 'Need at least 2 bits in the mask'),
                ('L2:0=0\n', 'Mask out of range'),
                ('L2:0=1fff\n', 'Mask out of range'),
                ('L2:0=fg\n', 'Non-hex character in the mask fg'),
                # An L3 id is not an L2 id.
                ('L2:1=f\n', 'ok'),
                ('L2:0=f;0=f\n', 'Duplicate domain 0'),
                ('L3:0=f\nL2:0=5\n',
                 'The mask 5 has non-consecutive 1-bits')):
            self.refused('g', text, why)

    def test_sparse_masks(self):
        root = os.path.join(self.tmp, 'sparse')
        fake_resctrl.build_resctrl(root, resources={
            'L2': {'num_closids': 8, 'sparse_masks': True}})
        self.root, self.kernel = root, fake_resctrl.Kernel(root)
        self.assertEqual('1\n', self.read('info', 'L2', 'sparse_masks'))
        self.write('', 'L2:0=81\n')
        self.assertEqual('L2:0=81', self.line('', 'L2'))

    def test_default_domains_are_l3s(self):
        # Without l2_domains, one L2 per L3, numbered as they are.
        root = os.path.join(self.tmp, 'plain')
        fake_resctrl.build_resctrl(root, domains=(0, 1),
                                   resources={'L2': 8})
        with open(os.path.join(root, 'schemata')) as f:
            self.assertIn('L2:0=ff;1=ff\n', f.read())

    def test_new_group_gets_every_way(self):
        # code rdtgroup_init_cat: the ways no exclusive group holds.
        self.write('', 'L2:0=3\n')
        self.mkdir('h')
        self.assertEqual('L2:0=fff;2=fff;8=fff;10=fff', self.line('h', 'L2'))

    def test_bad_trees(self):
        for kw in ({'l2_domains': {0: (0,)}},
                   {'cdpl2': True},
                   {'resources': {'L2': 8},
                    'l2_domains': {0: (0, 1), 1: (1, 2)}},
                   {'resources': {'L2': {'ways': 40}}}):
            self.assertRaises(fake_resctrl.InvalidTree,
                              fake_resctrl.build_resctrl,
                              os.path.join(self.tmp, 'x'), **kw)


class CdpL2Test(RdtKernelTest):

    def setUp(self):
        super().setUp()
        # The counts are already halved, as info/L2CODE shows them.
        self.build(cdp=True, num_closids=8, cdpl2=True,
                   resources={'L2': 4, 'MB': 8},
                   l2_domains={0: (0, 1), 1: (2, 3)})

    def test_layout(self):
        # doc: mount option "cdpl2"; "L2 schemata file details".
        self.assertFalse(os.path.exists(os.path.join(self.root, 'info',
                                                     'L2')))
        self.assertEqual(
            ['L3CODE', 'L3DATA', 'L2CODE', 'L2DATA', 'MB'],
            [line.split(':')[0] for line in
             self.read('schemata').splitlines()])
        for kind in ('L2CODE', 'L2DATA'):
            self.assertEqual('4\n', self.read('info', kind, 'num_closids'))

    def test_kinds_apart(self):
        self.mkdir('g')
        # doc "Reading/writing the schemata file": one kind alone.
        self.write('g', 'L2DATA:1=f\n')
        self.assertEqual('L2DATA:0=ff;1=f', self.line('g', 'L2DATA'))
        self.assertEqual('L2CODE:0=ff;1=ff', self.line('g', 'L2CODE'))
        self.refused('g', 'L2CODE:0=3\nL2:0=3\n',
                     "Unknown or unsupported resource name 'L2'")
        self.refused('g', 'L2CODE:0=3\nL2DATA:0=101\n',
                     'Mask out of range')

    def test_smallest_num_closids(self):
        # doc "Info directory", num_closids: "The kernel uses the smallest
        # number of CLOSIDs of all enabled resources as limit": L2CODE's
        # 4, the default group holding one.
        self.assertEqual(4, self.kernel.closid_limit())
        for n in range(3):
            self.mkdir('g%d' % n)
        exc = self.assertRaises(OSError, self.mkdir, 'g3')
        self.assertEqual(errno.ENOSPC, exc.errno)
        self.assertEqual('Out of CLOSIDs', self.status())


class ClosidMinimumTest(RdtKernelTest):

    def test_mb_or_smba_can_be_the_limit(self):
        self.build(vendor='amd', ways=16, min_cbm_bits=0, sparse_masks=True,
                   resources={'MB': 16, 'SMBA': 3})
        self.assertEqual(3, self.kernel.closid_limit())
        self.mkdir('a')
        self.mkdir('b')
        exc = self.assertRaises(OSError, self.mkdir, 'c')
        self.assertEqual(errno.ENOSPC, exc.errno)
        self.assertEqual('Out of CLOSIDs', self.status())
        # rmdir gives the class back.
        fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY)
        try:
            self.kernel.rmdir('b', fd)
        finally:
            os.close(fd)
        self.mkdir('c')
