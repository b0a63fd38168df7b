"""Discovery, inventory and layout obey the kernel's resctrl rules.

One fake tree per platform, laid out as Documentation/arch/x86/resctrl.rst
describes it, behind :class:`resq_fake.resctrl.Kernel`, which
refuses what the kernel refuses. Each test lays out everything Placement
would be offered through the agent's real enforcer and checks the kernel
took all of it.
"""

import errno
import os
import uuid

import fixtures

from resq_agent import discovery
from resq_agent import enforcer
from resq_agent import layout
from resq_common import resctrl
from resq_fake import resctrl as fake_resctrl
from tests import base

WAY = 'CUSTOM_LLC_WAY'


class KernelRulesTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(base.PrivsepInProcess(self.conf))
        self.root = os.path.join(self.tmp, 'resctrl')
        self.sysfs = os.path.join(self.tmp, 'sys')

    def host(self, cpus_per_domain=16, domains=(0, 1), vendor='intel',
             ways=20, **kw):
        """Build both trees, the fake kernel in front; discover."""
        layout_ = {d: tuple(range(i * cpus_per_domain,
                                  (i + 1) * cpus_per_domain))
                   for i, d in enumerate(domains)}
        fake_resctrl.build_sysfs(self.sysfs, layout_, ways=ways,
                                 vendor=vendor)
        fake_resctrl.build_resctrl(self.root, ways=ways,
                                   domains=tuple(domains), **kw)
        self.kernel = fake_resctrl.Kernel(self.root)
        self.useFixture(fixtures.MonkeyPatch(
            'resq_common.resctrl_writer.SYSCALLS', self.kernel))
        self.flags('resq_agent', resctrl_root=self.root)
        return self.discover()

    def discover(self):
        return discovery.discover(self.root, self.sysfs, ddio_ways=2)

    def status(self):
        with open(os.path.join(self.root, 'info', 'last_cmd_status')) as f:
            return f.read().strip()

    def fill(self, topo):
        """Lay out and enforce all Placement offers; the kernel's answer.

        Each domain gets ``num_closids - 1`` instances (one class stays
        with the default group) sharing every way the inventory offers.
        """
        shapes = [discovery.shape_of(d, 1) for d in topo.domains if d.cat]
        requests = []
        for dom in topo.domains:
            if not dom.cat:
                continue
            inv = discovery.cache_domain_of(dom, 1).inventory()[WAY]
            offered = inv['total'] - inv['reserved']
            self.assertEqual(discovery.shape_of(dom, 1).capacity, offered)
            count = min(dom.num_closids - 1, offered)
            for i in range(count):
                ways = offered // count + (1 if i < offered % count else 0)
                requests.append(layout.Request(
                    str(uuid.uuid4()), dom.id, ways,
                    cpus=(dom.cpus[i],)))
        enf = enforcer.ResctrlEnforcer(self.root)
        num_closids = min(d.num_closids for d in topo.domains if d.cat)
        lay = layout.compute(shapes, requests, num_closids,
                             shared=enf.shares_classes)
        self.assertEqual([], lay.refused)
        result = enf.apply(lay, [d.id for d in topo.domains])
        self.assertEqual([], result.errors)
        for a in lay.assignments:
            group = enforcer.group_of(a)
            sch = resctrl.Resctrl(self.root).read_schemata(group)
            for kind in [k for k in sch if k in resctrl.L3_KINDS]:
                self.assertEqual(a.mask, sch[kind][a.domain_id])
        return lay

    def _mkdir(self, name):
        fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY)
        try:
            self.kernel.mkdir(name, fd)
        finally:
            os.close(fd)

    def write(self, group, text):
        path = os.path.join(self.root, group) if group else self.root
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            self.kernel.write_file(fd, 'schemata', text, False, 'in test')
        finally:
            os.close(fd)

    def read(self, *parts):
        with open(os.path.join(self.root, *parts)) as f:
            return f.read()

    # -- Intel, L3 and MB ------------------------------------------------
    def test_smallest_num_closids_of_all_resources_limits_groups(self):
        topo = self.host(num_closids=16, resources={'MB': 8},
                         foreign=('other-app',), groups={}, bit_usage=True)
        self.assertEqual(8, topo.closid_limit)
        for dom in topo.domains:
            # MB's 8, less other-app's.
            self.assertEqual(7, dom.num_closids)
            self.assertEqual(0xfffff, dom.cbm_mask)
            self.assertEqual(0xc0000, dom.io_mask)
            self.assertEqual('intel', dom.vendor)
            self.assertFalse(dom.sparse_masks)
            inv = discovery.cache_domain_of(dom, 1).inventory()[WAY]
            self.assertEqual((20, 3), (inv['total'], inv['reserved']))
        lay = self.fill(topo)
        # Six shared classes, one per instance in each domain.
        self.assertEqual(12, len(lay.assignments))
        self.assertEqual(6, len([g for g in os.listdir(self.root)
                                 if g.startswith('resq-cos')]))
        # The kernel has no seventh group to give: discovery was exact.
        exc = self.assertRaises(OSError, self._mkdir, 'resq-x')
        self.assertEqual(errno.ENOSPC, exc.errno)
        self.assertEqual('Out of CLOSIDs', self.status())
        # The MB line stays as it was: a write changes what it names only.
        self.assertIn('MB:0=100;1=100', self.read('schemata'))

    def test_rmids_can_be_the_tighter_limit(self):
        topo = self.host(num_closids=16, num_rmids=6, foreign=('other-app',))
        os.makedirs(os.path.join(self.root, 'other-app', 'mon_groups', 'm1'))
        topo = self.discover()
        # 6 RMIDs: other-app and its monitoring group hold 2.
        self.assertEqual(4, topo.domains[0].num_closids)
        for n in range(3):
            self._mkdir('resq-cos%d' % (n + 1))
        exc = self.assertRaises(OSError, self._mkdir, 'resq-x')
        self.assertEqual('Out of RMIDs', self.status())
        self.assertEqual(errno.ENOSPC, exc.errno)

    # -- Intel with CDP --------------------------------------------------
    def test_cdp_counts_are_already_halved(self):
        # 16 hardware classes, 8 per CDP kind; MB keeps 16.
        topo = self.host(num_closids=8, cdp=True, resources={'MB': 16},
                         foreign=(), groups={}, bit_usage=True)
        self.assertTrue(topo.cdp)
        self.assertEqual(8, topo.closid_limit)
        self.assertEqual(8, topo.domains[0].num_closids)
        self.fill(topo)
        sch = resctrl.Resctrl(self.root).read_schemata('resq-cos1')
        self.assertEqual({'L3CODE', 'L3DATA', 'MB'}, set(sch))
        self.assertRaises(OSError, self._mkdir, 'resq-x')
        # The kernel takes one kind alone; the other stays as it was.
        self.write('resq-cos1', 'L3DATA:0=3\n')
        sch = resctrl.Resctrl(self.root).read_schemata('resq-cos1')
        self.assertEqual(0x3, sch['L3DATA'][0])
        self.assertNotEqual(0x3, sch['L3CODE'][0])

    # -- Intel with others' exclusive group and pseudo-locked region -----
    def exclusive_host(self, **kw):
        return self.host(num_closids=16, foreign=('other-app',), groups={
            'rt-app': {'mode': 'exclusive', 'masks': {0: 0x3, 1: 0x3}},
            'locked': {'mode': 'pseudo-locked', 'masks': {1: 0x3c00}}},
            **kw)

    def test_exclusive_and_pseudo_locked_ways_are_never_offered(self):
        topo = self.exclusive_host(bit_usage=True)
        self.assertEqual(
            '0=SSSSSSSSSSSSSSSSSSEE;1=000000PPPPSSSSSSSSEE',
            self.read('info', 'L3', 'bit_usage').strip())
        dom0, dom1 = topo.domains
        # rt-app holds a class, the pseudo-locked region none.
        self.assertEqual(16 - 2, dom0.num_closids)
        self.assertEqual(0xffffc, dom0.cbm_mask)
        self.assertEqual(0xc0000, dom0.io_mask)
        self.assertEqual(0x3, dom0.foreign_mask)
        # Ways 2-9 are the longest run left in domain 1; DDIO's ways
        # (18-19) lie outside it.
        self.assertEqual(0x3fc, dom1.cbm_mask)
        self.assertEqual((0, 0), (dom1.io_mask, dom1.io_ways))
        self.assertEqual(0x3c03, dom1.foreign_mask)
        inv = discovery.cache_domain_of(dom1, 1).inventory()[WAY]
        self.assertEqual((20, 13), (inv['total'], inv['reserved']))
        self.fill(topo)
        # The kernel would have refused the ways Placement never saw.
        for mask, why in ((0x1, 'Overlaps with exclusive group'),
                          (0x400, 'CBM overlaps with pseudo-locked region')):
            exc = self.assertRaises(OSError, self.write, 'resq-cos1',
                                    'L3:1=%x\n' % mask)
            self.assertEqual(errno.EINVAL, exc.errno)
            self.assertEqual(why, self.status())

    def test_bit_usage_alone_is_enough(self):
        self.exclusive_host(bit_usage=True)
        # An older tool's group with no mode file: bit_usage still says.
        os.unlink(os.path.join(self.root, 'rt-app', 'mode'))
        os.unlink(os.path.join(self.root, 'locked', 'mode'))
        topo = self.discover()
        self.assertEqual(0xffffc, topo.domains[0].cbm_mask)
        self.assertEqual(0x3fc, topo.domains[1].cbm_mask)

    def test_modes_alone_are_enough(self):
        topo = self.exclusive_host(bit_usage=False)
        self.assertEqual(0xffffc, topo.domains[0].cbm_mask)
        self.assertEqual(0x3fc, topo.domains[1].cbm_mask)

    def test_new_group_gets_no_exclusive_ways(self):
        self.exclusive_host(bit_usage=True)
        self._mkdir('resq-x')
        sch = resctrl.Resctrl(self.root).read_schemata('resq-x')
        # Without sparse masks, the lowest run of the free ways.
        self.assertEqual({0: 0xffffc, 1: 0x3fc}, sch['L3'])

    def test_domain_without_room_gets_no_inventory(self):
        topo = self.host(num_closids=16, min_cbm_bits=2, groups={
            'rt-app': {'mode': 'exclusive', 'masks': {0: 0x7fffe, 1: 0x3}}})
        dom0, dom1 = topo.domains
        self.assertFalse(dom0.cat)
        self.assertEqual({}, discovery.cache_domain_of(dom0, 1).inventory())
        self.assertTrue(dom1.cat)
        self.assertEqual(0xffffc, dom1.cbm_mask)
        self.assertRaises(fake_resctrl.InvalidTree, self.host, groups={
            'half': {'mode': 'exclusive', 'masks': {0: 0x3}}})

    # -- Intel contiguity and min_cbm_bits ----------------------------------
    def test_kernel_refuses_gaps_and_short_masks(self):
        self.host(num_closids=16, min_cbm_bits=2, sparse_masks=False)
        self._mkdir('resq-x')
        for text, why in (
                ('L3:0=f0f\n', 'The mask f0f has non-consecutive 1-bits'),
                ('L3:0=4\n', 'Need at least 2 bits in the mask'),
                ('L3:0=0\n', 'Mask out of range'),
                ('L3:0=1fffff\n', 'Mask out of range'),
                ('L3:7=f\n', 'Unknown domain 7 of L3'),
                ('L2:0=f\n', "Unknown or unsupported resource name 'L2'")):
            before = self.read('resq-x', 'schemata')
            exc = self.assertRaises(OSError, self.write, 'resq-x', text)
            self.assertEqual(errno.EINVAL, exc.errno)
            self.assertEqual(why, self.status())
            self.assertEqual(before, self.read('resq-x', 'schemata'))

    # -- AMD ---------------------------------------------------------------
    def amd_host(self, vendor='amd', **kw):
        # One socket of four CCXs, each its own L3 of 16 ways.
        kw.setdefault('shareable_bits', 0)
        return self.host(cpus_per_domain=16, domains=(0, 1, 2, 3),
                         vendor=vendor, ways=16, min_cbm_bits=0,
                         num_closids=16, sparse_masks=True,
                         resources={'MB': 16}, foreign=(), groups={},
                         bit_usage=True, **kw)

    def test_amd_many_domains_no_ddio(self):
        topo = self.amd_host()
        self.assertEqual([0, 1, 2, 3], [d.id for d in topo.domains])
        self.assertEqual('amd', topo.vendor)
        self.assertTrue(topo.sparse_masks)
        for dom in topo.domains:
            self.assertEqual((0xffff, 0, 0, 0, 16), (
                dom.cbm_mask, dom.io_mask, dom.io_ways, dom.min_cbm_bits,
                dom.num_closids))
            inv = discovery.cache_domain_of(dom, 1).inventory()[WAY]
            # Only the default group's way is kept back: no I/O ways.
            self.assertEqual((16, 1), (inv['total'], inv['reserved']))
            self.assertEqual(1, inv['min_unit'])
        self.assertEqual(tuple(range(16, 32)), topo.domain(1).cpus)
        self.fill(topo)
        # AMD takes masks with gaps.
        self.write('resq-cos1', 'L3:2=f00f\n')
        self.assertEqual(0xf00f, resctrl.Resctrl(self.root).read_schemata(
            'resq-cos1')['L3'][2])

    def test_amd_recognised_without_modalias(self):
        topo = self.amd_host(vendor=None)
        self.assertEqual('amd', topo.vendor)
        self.assertEqual(0, topo.domains[0].io_ways)

    def test_amd_shareable_bits_are_io_ways(self):
        topo = self.amd_host(shareable_bits=0xc000)
        self.assertEqual(0xc000, topo.domains[0].io_mask)
        self.assertEqual(2, topo.domains[0].io_ways)
        self.fill(topo)

    def test_describe_names_the_rules(self):
        doc = discovery.describe(self.exclusive_host(bit_usage=True), 1)
        self.assertEqual(16, doc['closid_limit'])
        dom = doc['cache_domains'][1]
        self.assertEqual(('3c03', 'intel', False), (
            dom['foreign_mask'], dom['vendor'], dom['sparse_masks']))


class HelpersTest(base.TestCase):

    def test_bit_usage_parsing(self):
        usage = resctrl.parse_bit_usage('0=SSSSSSEE;1=00PPXXHH\n')
        self.assertEqual({0: 'SSSSSSEE', 1: '00PPXXHH'}, usage)
        self.assertEqual(0x3, resctrl.usage_mask(usage[0], 'EP'))
        self.assertEqual(0x30, resctrl.usage_mask(usage[1], 'EP'))
        for bad in ('0=SSQQ', 'x=SS', '0:SS', '0='):
            self.assertRaises(ValueError, resctrl.parse_bit_usage, bad)

    def test_largest_run(self):
        for mask, run in ((0xff00f, 0xff000), (0xf0f, 0xf), (0, 0),
                          (0xfffff, 0xfffff), (0x3fc03fc, 0x3fc)):
            self.assertEqual(run, discovery.largest_run(mask), hex(mask))
