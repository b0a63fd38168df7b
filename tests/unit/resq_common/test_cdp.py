"""Code and data prioritization: the flavor key and Placement's trait."""

from resq_agent import discovery
from resq_common import cache_domain
from resq_common import extra_specs
from tests import base

RESERVED = {'resq:slo': 'reserved', 'hw:cpu_policy': 'dedicated',
            'resources_LLC:CUSTOM_LLC_WAY': '4',
            'resources_LLC:CUSTOM_LLC_CLOS': '1'}
CDP = {'trait_LLC:CUSTOM_RESQ_L3_CDP': 'required'}


class FlavorTest(base.TestCase):

    def test_code_ways_of_the_ways_on_a_cdp_domain(self):
        req = extra_specs.parse(dict(RESERVED, **CDP,
                                     **{'resq:code_ways': '1'}))
        self.assertEqual((4, 1), (req.ways, req.code_ways))
        self.assertIn(extra_specs.TRAIT_CDP, req.required_traits)
        self.assertEqual(0, extra_specs.parse(RESERVED).code_ways)

    def test_refused_with_what_would_fix_it(self):
        for extra, text in (
                ({'resq:code_ways': '1'},
                 'add "trait_LLC:CUSTOM_RESQ_L3_CDP=required"'),
                (dict(CDP, **{'resq:code_ways': '4'}),
                 'must leave ways for data'),
                (dict(CDP, **{'resq:code_ways': '0'}), 'from 1 to 1023'),
                ({'trait_X:CUSTOM_RESQ_L3_CDP': 'required',
                  'resq:code_ways': '1'}, 'trait_LLC:CUSTOM_RESQ_L3_CDP')):
            exc = self.assertRaises(extra_specs.InvalidResQSpec,
                                    extra_specs.parse,
                                    dict(RESERVED, **extra))
            self.assertIn(text, str(exc))

    def test_not_for_on_demand(self):
        specs = {'resq:slo': 'on-demand', 'hw:cpu_policy': 'dedicated',
                 'resq:latency_p95_us': '40', 'resq:code_ways': '1',
                 'resources_OD:CUSTOM_RESQ_ONDEMAND_CORE': '1'}
        exc = self.assertRaises(extra_specs.InvalidResQSpec,
                                extra_specs.parse, specs, 1)
        self.assertIn('remove resq:code_ways', str(exc))


class PlacementTest(base.TestCase):

    def test_trait_where_the_kernel_mounted_with_cdp(self):
        info = discovery.CacheDomainInfo(
            id=0, cpus=(0, 1), ways=20, way_size_bytes=1 << 20,
            cbm_mask=0xfffff, min_cbm_bits=1, num_closids=8, io_ways=2,
            shareable_bits=0x60000, cdp=True, mba=False)
        dom = discovery.cache_domain_of(info, 1)
        self.assertIn(extra_specs.TRAIT_CDP, dom.traits())
        # Classes of service: info/L3CODE's, already halved by the kernel.
        self.assertEqual(8, dom.inventory()[extra_specs.RC_LLC_CLOS]['total'])
        plain = discovery.cache_domain_of(
            info.__class__(**dict(info.__dict__, cdp=False)), 1)
        self.assertNotIn(extra_specs.TRAIT_CDP, plain.traits())
        self.assertNotIn(extra_specs.TRAIT_CDP, cache_domain.CacheDomain(
            0, 20, cdp=True, cat=False).traits())
