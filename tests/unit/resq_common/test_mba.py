"""Memory bandwidth: the flavor key, Placement's view, the kernel's values."""

import os

import fixtures

from resq_agent import discovery
from resq_common import cache_domain
from resq_common import extra_specs
from resq_common import mba
from resq_fake import resctrl as fake_resctrl
from tests import base

RESERVED = {'resq:slo': 'reserved', 'hw:cpu_policy': 'dedicated',
            'resources_LLC:CUSTOM_LLC_WAY': '3',
            'resources_LLC:CUSTOM_LLC_CLOS': '1'}
PERCENT = mba.MbaInfo(mba.MODE_PERCENT, min_bandwidth=10,
                      bandwidth_gran=10)
MBPS = mba.MbaInfo(mba.MODE_MBPS)
AMD = mba.MbaInfo(mba.MODE_AMD, min_bandwidth=0, bandwidth_gran=1,
                  delay_linear=False)


class FlavorTest(base.TestCase):

    def test_asked_in_the_llc_group(self):
        req = extra_specs.parse(dict(RESERVED, **{
            'resq:mem_bw_mibps': '2000',
            'resources_LLC:CUSTOM_MEM_BW_MIBPS': '2000'}))
        self.assertEqual(2000, req.mem_bw_mibps)
        self.assertEqual(0, extra_specs.parse(RESERVED).mem_bw_mibps)
        # The resource alone is a request too (hand-made flavors).
        self.assertEqual(500, extra_specs.parse(dict(RESERVED, **{
            'resources_LLC:CUSTOM_MEM_BW_MIBPS': '500'})).mem_bw_mibps)

    def test_refused_with_what_would_fix_it(self):
        for extra, text in (
                ({'resq:mem_bw_mibps': '2000'},
                 'add "resources_LLC:CUSTOM_MEM_BW_MIBPS=2000"'),
                ({'resq:mem_bw_mibps': '1000',
                  'resources_LLC:CUSTOM_MEM_BW_MIBPS': '2000'},
                 'make them equal'),
                ({'resources_X:CUSTOM_MEM_BW_MIBPS': '2000'},
                 'in the LLC request group'),
                ({'resources_LLC:CUSTOM_MEM_BW_MIBPS': '0'},
                 'at least 1 MiB/s'),
                ({'resq:mem_bw_mibps': '0'}, 'from 1 to 100000000'),
                ({'resq:mem_bw_mibps': '2.5'}, 'from 1 to 100000000')):
            exc = self.assertRaises(extra_specs.InvalidResQSpec,
                                    extra_specs.parse,
                                    dict(RESERVED, **extra))
            self.assertIn(text, str(exc))

    def test_not_for_on_demand(self):
        specs = {'resq:slo': 'on-demand', 'hw:cpu_policy': 'dedicated',
                 'resq:latency_p95_us': '40',
                 'resources_OD:CUSTOM_RESQ_ONDEMAND_CORE': '1',
                 'resources_OD:CUSTOM_MEM_BW_MIBPS': '100'}
        exc = self.assertRaises(extra_specs.InvalidResQSpec,
                                extra_specs.parse, specs, 1)
        self.assertIn('cannot ask for memory bandwidth', str(exc))


class PlacementTest(base.TestCase):

    def domain(self, **kw):
        return cache_domain.CacheDomain(domain_id=0, ways=20, **kw)

    def test_inventory_where_the_kernel_has_mba(self):
        inv = self.domain(mem_bw_mibps=20000, mem_bw_reserved_mibps=4000,
                          mba_mode=mba.MODE_MBPS).inventory()
        self.assertEqual({'total': 20000, 'reserved': 4000, 'min_unit': 1,
                          'max_unit': 16000, 'step_size': 1,
                          'allocation_ratio': 1.0},
                         inv[extra_specs.RC_MEM_BW])
        self.assertIn('CUSTOM_RESQ_MBA_MBPS', self.domain(
            mba_mode=mba.MODE_MBPS).traits())

    def test_none_without_mba_or_without_a_figure(self):
        for kw in ({'mem_bw_mibps': 20000},
                   {'mba_mode': mba.MODE_PERCENT},
                   {'mem_bw_mibps': 1000, 'mem_bw_reserved_mibps': 1000,
                    'mba_mode': mba.MODE_PERCENT}):
            self.assertNotIn(extra_specs.RC_MEM_BW,
                             self.domain(**kw).inventory(), kw)
        self.assertFalse([t for t in self.domain().traits()
                          if 'MBA' in t])

    def test_agent_offers_it_from_its_options(self):
        info = discovery.CacheDomainInfo(
            id=0, cpus=(0, 1), ways=20, way_size_bytes=1 << 20,
            cbm_mask=0xfffff, min_cbm_bits=1, num_closids=16, io_ways=2,
            shareable_bits=0x60000, cdp=False, mba=True, mba_info=PERCENT)
        dom = discovery.cache_domain_of(info, 1, mem_bw_mibps=20000,
                                        default_mem_bw_mibps=2000)
        self.assertEqual((20000, 2000, 'percent'),
                         (dom.mem_bw_mibps, dom.mem_bw_reserved_mibps,
                          dom.mba_mode))
        plain = discovery.cache_domain_of(
            info.__class__(**dict(info.__dict__, mba=False, mba_info=None)),
            1, mem_bw_mibps=20000)
        self.assertEqual(0, plain.mem_bw_mibps)


class ValuesTest(base.TestCase):

    def test_mbps_is_the_request(self):
        self.assertEqual(1500, mba.schemata_value(1500, MBPS))

    def test_percent_rounded_up_to_a_step_never_below_the_minimum(self):
        self.assertEqual(30, mba.schemata_value(5000, PERCENT, 20000))
        self.assertEqual(30, mba.schemata_value(4001, PERCENT, 20000))
        self.assertEqual(10, mba.schemata_value(1, PERCENT, 20000))
        self.assertEqual(100, mba.schemata_value(30000, PERCENT, 20000))
        exc = self.assertRaises(mba.InvalidBandwidth, mba.schemata_value,
                                5000, PERCENT, 0)
        self.assertIn('memory_bandwidth_mibps', str(exc))

    def test_amd_whole_eighths_of_a_gigabyte(self):
        # 1/8 GB/s is 119.2 MiB/s: 1000 MiB/s need 9 units (1073 MiB/s).
        self.assertEqual(9, mba.schemata_value(1000, AMD))
        self.assertGreaterEqual(mba.granted_mibps(9, AMD), 1000)
        self.assertEqual(2048, mba.schemata_value(10 ** 7, AMD))

    def test_never_less_than_asked(self):
        for mibps in (1, 7, 119, 120, 999, 4321, 19999):
            for info in (MBPS, AMD):
                self.assertGreaterEqual(mba.granted_mibps(
                    mba.schemata_value(mibps, info), info), mibps)
            self.assertGreaterEqual(mba.granted_mibps(
                mba.schemata_value(mibps, PERCENT, 20000), PERCENT, 20000),
                mibps)

    def test_bad_requests(self):
        for bad in (0, -1, 1.5, True, '10'):
            self.assertRaises(mba.InvalidBandwidth, mba.schemata_value,
                              bad, MBPS)


class ReadInfoTest(base.TestCase):

    def tree(self, **kw):
        root = os.path.join(self.useFixture(fixtures.TempDir()).path, 'rc')
        fake_resctrl.build_resctrl(root, **kw)
        return root

    def test_modes(self):
        none = self.tree()
        self.assertIsNone(mba.read_info(none, mountinfo='/nonexistent'))
        pct = self.tree(resources={'MB': {}})
        self.assertEqual(mba.MbaInfo(mba.MODE_PERCENT, 10, 10, True, 16),
                         mba.read_info(pct, mountinfo='/nonexistent'))
        mbps = self.tree(resources={'MB': {}}, mba_mbps=True)
        self.assertEqual(mba.MODE_MBPS,
                         mba.read_info(mbps, mountinfo='/nonexistent').mode)
        amd = self.tree(resources={'MB': {}}, vendor='amd')
        self.assertEqual(mba.MODE_AMD,
                         mba.read_info(amd, mountinfo='/nonexistent').mode)

    def test_mount_option(self):
        root = self.tree(resources={'MB': {}})
        path = os.path.join(root, 'mountinfo')
        with open(path, 'w') as f:
            f.write('36 25 0:31 / %s rw,relatime shared:16 - resctrl '
                    'resctrl rw,mba_MBps\n' % os.path.realpath(root))
        self.assertEqual(mba.MODE_MBPS,
                         mba.read_info(root, mountinfo=path).mode)
