import os
import re

from resq_common import cache_domain
from resq_common import extra_specs
from tests import base

GOOD = {'resq:slo': 'reserved', 'hw:cpu_policy': 'dedicated',
        'resources_LLC:CUSTOM_LLC_WAY': '4',
        'resources_LLC:CUSTOM_LLC_CLOS': '1',
        'resq:throughput_mpps': '2.5', 'resq:latency_p95_us': '40',
        'resq:packet_bytes': '64', 'resq:profile': 'stats-64B',
        'resq:min_ways': '3',
        'trait_LLC:CUSTOM_RESQ_LLC_WAYS_20': 'required',
        'trait_LLC:CUSTOM_RESQ_LLC_WAY_KIB_2304': 'required'}


class ParseTest(base.TestCase):

    def test_not_a_resq_flavor(self):
        self.assertIsNone(extra_specs.parse({'hw:cpu_policy': 'dedicated'}))
        self.assertIsNone(extra_specs.parse(None))

    def test_reserved(self):
        req = extra_specs.parse(GOOD, vcpus=2)
        self.assertEqual(('reserved', 4, 1, '_LLC', 2.5, 40.0, 64, True, 2),
                         (req.slo, req.ways, req.clos, req.group_suffix,
                          req.throughput_mpps, req.latency_p95_us,
                          req.packet_bytes, req.dedicated_cpus, req.vcpus))

    def test_reserved_cores_in_the_llc_group_one_per_vcpu(self):
        req = extra_specs.parse(dict(GOOD, **{
            'resources_LLC:CUSTOM_RESQ_CORE': '2'}), vcpus=2)
        self.assertEqual(4, req.ways)
        for key, value, vcpus, text in (
                ('resources_LLC:CUSTOM_RESQ_CORE', '1', 2,
                 'has 2 vCPUs but asks for 1 CUSTOM_RESQ_CORE'),
                ('resources_X:CUSTOM_RESQ_CORE', '2', 2,
                 'in the LLC request group'),
                ('resources_LLC:CUSTOM_RESQ_CORE', 'two', 2,
                 'must be a whole number')):
            exc = self.assertRaises(extra_specs.InvalidResQSpec,
                                    extra_specs.parse,
                                    dict(GOOD, **{key: value}), vcpus)
            self.assertIn(text, str(exc))

    def test_values_name_key_and_allowed(self):
        for key, value, text in (
                ('resq:throughput_mpps', 'abc', 'a number > 0'),
                ('resq:throughput_mpps', '0', 'a number > 0'),
                ('resq:slo', 'gold', 'reserved, on-demand'),
                ('resq:packet_bytes', '63', '64 to 9216'),
                ('resq:profile', '../x', 'letters, digits'),
                ('resq:colour', 'x', 'known keys')):
            exc = self.assertRaises(extra_specs.InvalidResQSpec,
                                    extra_specs.check_value, key, value)
            self.assertIn(key, str(exc))
            self.assertIn(text, str(exc))

    def test_reserved_needs_isolation(self):
        for drop, text in (('resources_LLC:CUSTOM_LLC_WAY', 'needs LLC ways'),
                           ('hw:cpu_policy', 'needs dedicated cores'),
                           ('resq:slo', "no 'resq:slo'")):
            specs = dict(GOOD)
            del specs[drop]
            if drop == 'resources_LLC:CUSTOM_LLC_WAY':
                del specs['resources_LLC:CUSTOM_LLC_CLOS']
            exc = self.assertRaises(extra_specs.InvalidResQSpec,
                                    extra_specs.parse, specs)
            self.assertIn(text, str(exc))
        specs = dict(GOOD)
        specs['resources_OTHER:CUSTOM_LLC_CLOS'] = '1'
        del specs['resources_LLC:CUSTOM_LLC_CLOS']
        self.assertRaises(extra_specs.InvalidResQSpec, extra_specs.parse,
                          specs)
        specs = {k: v for k, v in GOOD.items() if 'resources' not in k}
        specs['resources:CUSTOM_LLC_WAY'] = '3'
        exc = self.assertRaises(extra_specs.InvalidResQSpec,
                                extra_specs.parse, specs)
        self.assertIn('named request group', str(exc))

    def test_inconsistent_flavors_are_refused_with_the_reason(self):
        def without(*keys, **changes):
            specs = {k: v for k, v in GOOD.items() if k not in keys}
            specs.update({k.replace('__', ':'): v
                          for k, v in changes.items()})
            return specs

        for specs, text in (
                # No class of service: the partition cannot be enforced.
                (without('resources_LLC:CUSTOM_LLC_CLOS'),
                 'set "resources_LLC:CUSTOM_LLC_CLOS=1" (the flavor has '
                 'none)'),
                (without(resources_LLC__CUSTOM_LLC_CLOS='2'),
                 'exactly one class of service'),
                # Fewer ways than the profile needs for the throughput.
                (without(**{'resq__min_ways': '5'}),
                 'asks for 4 LLC ways but profile stats-64B needs 5 for '
                 '2.5 Mpps'),
                (without('resq:min_ways'),
                 'needs resq:min_ways'),
                (without('trait_LLC:CUSTOM_RESQ_LLC_WAYS_20'),
                 'needs the cache shape it was measured on'),
                (without(**{'resq__min_ways': '4',
                            'resources_LLC__CUSTOM_LLC_WAY': '30',
                            'trait_LLC__CUSTOM_RESQ_LLC_WAYS_20': 'x',
                            'trait_LLC__CUSTOM_RESQ_LLC_WAYS_3': 'required'}
                         ), 'more than the 3 ways')):
            exc = self.assertRaises(extra_specs.InvalidResQSpec,
                                    extra_specs.parse, specs, 2)
            self.assertIn(text, str(exc))
        # Without a profile, ways and min_ways are still compared.
        exc = self.assertRaises(
            extra_specs.InvalidResQSpec, extra_specs.parse,
            without('resq:profile', **{'resq__min_ways': '6'}))
        self.assertIn('resq:min_ways is 6', str(exc))
        self.assertEqual(3, extra_specs.parse(GOOD).min_ways)

    def test_on_demand_needs_no_ways(self):
        req = extra_specs.parse(ON_DEMAND, vcpus=2)
        self.assertEqual((0, 0), (req.ways, req.clos))
        self.assertEqual(('_OD', 2), (req.group_suffix,
                                      req.ondemand_cores))
        self.assertEqual(50.0, req.latency_p95_us)

    def test_on_demand_flavors_are_checked(self):
        def without(key, **changes):
            specs = dict(ON_DEMAND, **changes)
            specs.pop(key, None)
            return specs

        for specs, words in (
                (without('resq:latency_p95_us'), 'resq:latency_p95_us'),
                (without('hw:cpu_policy'), 'hw:cpu_policy=dedicated'),
                (without('resources_OD:CUSTOM_RESQ_ONDEMAND_CORE'),
                 'resources_OD:CUSTOM_RESQ_ONDEMAND_CORE=2'),
                (without('x', **{'resources_LLC:CUSTOM_LLC_WAY': '2'}),
                 'remove CUSTOM_LLC_WAY'),
                (without('resources_OD:CUSTOM_RESQ_ONDEMAND_CORE', **{
                    'resources:CUSTOM_RESQ_ONDEMAND_CORE': '2'}),
                 'named request group'),
                (without('x', **{
                    'resources_OD:CUSTOM_RESQ_ONDEMAND_CORE': '1'}),
                 'one per vCPU')):
            exc = self.assertRaises(extra_specs.InvalidResQSpec,
                                    extra_specs.parse, specs, 2)
            self.assertIn(words, str(exc))


ON_DEMAND = {'resq:slo': 'on-demand', 'resq:latency_p95_us': '50',
             'hw:cpu_policy': 'dedicated',
             'resources_OD:CUSTOM_RESQ_ONDEMAND_CORE': '2'}


class PlacementNamesTest(base.TestCase):

    def test_traits_and_classes_of_every_group(self):
        traits, classes = extra_specs.placement_names({
            'trait:CUSTOM_CAT_L3': 'required',
            'trait_LLC:CUSTOM_CAT_L3': 'required',
            'trait1:CUSTOM_RESQ_L3_0': 'forbidden',
            'resources:VCPU': '2',
            'resources_LLC:CUSTOM_LLC_WAY': '4',
            'resources1:CUSTOM_LLC_WAY': '2',
            'resq:slo': 'reserved', 'hw:cpu_policy': 'dedicated',
            'group_policy': 'isolate', 'traitx': 'required'})
        self.assertEqual({
            'CUSTOM_CAT_L3': ['trait:CUSTOM_CAT_L3',
                              'trait_LLC:CUSTOM_CAT_L3'],
            'CUSTOM_RESQ_L3_0': ['trait1:CUSTOM_RESQ_L3_0']}, traits)
        self.assertEqual({
            'VCPU': ['resources:VCPU'],
            'CUSTOM_LLC_WAY': ['resources1:CUSTOM_LLC_WAY',
                               'resources_LLC:CUSTOM_LLC_WAY']}, classes)
        self.assertEqual(({}, {}), extra_specs.placement_names(None))


class CacheDomainTest(base.TestCase):

    def test_on_demand_lease_is_reserved_and_offered_as_cores(self):
        dom = cache_domain.CacheDomain(
            domain_id=0, ways=20, io_ways=2, default_group_ways=1,
            instance_ways=9, num_closids=16, cores=8, lease_ways=8,
            lease_classes=4)
        inv = dom.inventory()
        self.assertEqual(11, inv['CUSTOM_LLC_WAY']['reserved'])
        # 15 classes for instances minus the lease's 4.
        self.assertEqual(12, inv['CUSTOM_LLC_CLOS']['total'])
        self.assertEqual(8, inv['CUSTOM_RESQ_ONDEMAND_CORE']['total'])
        self.assertIn('CUSTOM_RESQ_ONDEMAND_WAYS_8', dom.traits())
        plain = cache_domain.CacheDomain(domain_id=0, ways=20, io_ways=2,
                                         default_group_ways=1)
        self.assertNotIn('CUSTOM_RESQ_ONDEMAND_CORE', plain.inventory())
        self.assertFalse([t for t in plain.traits() if 'ONDEMAND' in t])

    def test_reserved_cores_leave_the_lease_its_cores(self):
        leased = cache_domain.CacheDomain(
            domain_id=0, ways=20, io_ways=2, default_group_ways=1,
            instance_ways=9, num_closids=16, cores=8, lease_ways=8,
            lease_classes=4, lease_cores=3)
        inv = leased.inventory()
        self.assertEqual(5, inv['CUSTOM_RESQ_CORE']['total'])
        self.assertEqual(3, inv['CUSTOM_RESQ_ONDEMAND_CORE']['total'])
        # Without a lease (or without its own cores) reserved SLOs may
        # have every core; unknown cores: no such inventory.
        for dom, want in (
                (cache_domain.CacheDomain(0, 20, io_ways=2, cores=8), 8),
                (cache_domain.CacheDomain(0, 20, io_ways=2, cores=8,
                                          lease_ways=8, lease_classes=4), 8)):
            self.assertEqual(want, dom.inventory()['CUSTOM_RESQ_CORE'][
                'total'])
        self.assertNotIn('CUSTOM_RESQ_CORE', cache_domain.CacheDomain(
            0, 20, io_ways=2).inventory())

    def test_deterministic_identity(self):
        root = '3c0d6b8e-8d6e-4a43-9b8c-2f0f3b2f2a11'
        uuid1 = cache_domain.provider_uuid(root, 1)
        self.assertEqual(uuid1, cache_domain.provider_uuid(root, 1))
        self.assertNotEqual(uuid1, cache_domain.provider_uuid(root, 0))
        self.assertEqual(1, cache_domain.domain_of(root, uuid1))
        self.assertIsNone(cache_domain.domain_of(root, root))
        self.assertEqual('cn1_llc_1', cache_domain.provider_name('cn1', 1))

    def test_inventory(self):
        dom = cache_domain.CacheDomain(0, ways=20, min_cbm_bits=2,
                                       num_closids=16, io_ways=2,
                                       default_group_ways=1)
        inv = dom.inventory()
        self.assertEqual({'total': 20, 'reserved': 3, 'min_unit': 2,
                          'max_unit': 17, 'step_size': 1,
                          'allocation_ratio': 1.0}, inv['CUSTOM_LLC_WAY'])
        self.assertEqual(16, inv['CUSTOM_LLC_CLOS']['total'])
        self.assertEqual(1, inv['CUSTOM_LLC_CLOS']['reserved'])
        self.assertEqual(['CUSTOM_CAT_L3', 'CUSTOM_RESQ_L3_0'], dom.traits())
        self.assertEqual({}, cache_domain.CacheDomain(0, 2).inventory())
        self.assertEqual({}, cache_domain.CacheDomain(0, 11,
                                                      cat=False).inventory())

    def test_cores_trait(self):
        dom = cache_domain.CacheDomain(1, ways=11, cores=6)
        self.assertIn('CUSTOM_RESQ_CORES_6', dom.traits())
        self.assertFalse([t for t in cache_domain.CacheDomain(1, 11).traits()
                          if t.startswith(cache_domain.TRAIT_CORES_PREFIX)])

    def test_platform_traits_name_the_cache_shape(self):
        # ResQ's Xeon E5-2695 v4: 20 ways of 2.25 MiB.
        self.assertEqual(['CUSTOM_RESQ_LLC_WAYS_20',
                          'CUSTOM_RESQ_LLC_WAY_KIB_2304'],
                         cache_domain.platform_traits(20, 2359296))
        dom = cache_domain.CacheDomain(1, ways=11, way_size_bytes=1441792)
        self.assertEqual(['CUSTOM_CAT_L3', 'CUSTOM_RESQ_L3_1',
                          'CUSTOM_RESQ_LLC_WAYS_11',
                          'CUSTOM_RESQ_LLC_WAY_KIB_1408'], dom.traits())
        self.assertRaises(ValueError, cache_domain.platform_traits, 0, 1024)

    def test_required_traits_of_the_llc_group_only(self):
        req = extra_specs.parse({
            'resq:slo': 'reserved', 'hw:cpu_policy': 'dedicated',
            'resources_LLC:CUSTOM_LLC_WAY': '3',
            'resources_LLC:CUSTOM_LLC_CLOS': '1',
            'trait_LLC:CUSTOM_RESQ_LLC_WAYS_20': 'required',
            'trait_LLC:CUSTOM_AVOID': 'forbidden',
            'trait:HW_CPU_X86_AVX2': 'required'})
        self.assertEqual(frozenset({'CUSTOM_RESQ_LLC_WAYS_20'}),
                         req.required_traits)

    def test_classes_of_service_are_shared_by_the_host_domains(self):
        # 16 CLOS ids, one for the default group: 15 partitions per host.
        one = cache_domain.CacheDomain(0, 20, num_closids=16).inventory()
        two = cache_domain.CacheDomain(0, 20, num_closids=16,
                                       domains_on_host=2).inventory()
        self.assertEqual((16, 1), (one['CUSTOM_LLC_CLOS']['total'],
                                   one['CUSTOM_LLC_CLOS']['reserved']))
        self.assertEqual((8, 1), (two['CUSTOM_LLC_CLOS']['total'],
                                  two['CUSTOM_LLC_CLOS']['reserved']))
        # Fewer ids than domains: no partition can be offered at all.
        self.assertEqual({}, cache_domain.CacheDomain(
            0, 20, num_closids=2, domains_on_host=2).inventory())


class StrictIntegerTest(base.TestCase):
    """Counts and integer keys: ASCII digits, bounded, or a clear error."""

    def test_counts_are_parsed_strictly(self):
        base_specs = {'hw:cpu_policy': 'dedicated', 'resq:slo': 'reserved',
                      'resources_LLC:CUSTOM_LLC_CLOS': '1'}
        for bad in ('\u0661\u0662', '1_0', '1' * 20, ' 1 2', '0x3', '-2'):
            specs = dict(base_specs,
                         **{'resources_LLC:CUSTOM_LLC_WAY': bad})
            exc = self.assertRaises(extra_specs.InvalidResQSpec,
                                    extra_specs.parse, specs)
            self.assertIn('must be a whole number of at most 9 ASCII '
                          'digits', str(exc))
        specs = dict(base_specs, **{'resources_LLC:CUSTOM_LLC_WAY': ' 4 '})
        self.assertEqual(4, extra_specs.parse(specs).ways)

    def test_thousands_of_digits_are_a_clear_error(self):
        exc = self.assertRaises(extra_specs.InvalidResQSpec,
                                extra_specs.check_value, 'resq:packet_bytes',
                                '9' * 5000)
        self.assertIn("extra spec 'resq:packet_bytes' has invalid value",
                      str(exc))
        self.assertLess(len(str(exc)), 300)
        self.assertRaises(extra_specs.InvalidResQSpec,
                          extra_specs.check_value, 'resq:throughput_mpps',
                          '9' * 400)


class DocumentedKeysTest(base.TestCase):
    """The admin guide's table of ``resq:`` keys lists every key."""

    def test_every_key_is_in_the_table(self):
        path = os.path.join(os.path.dirname(__file__), '..', '..', '..',
                            'doc', 'source', 'admin', 'nova.rst')
        with open(path) as f:
            text = f.read()
        start = text.index('The ``resq:`` keys')
        table = text[start:text.index('What the filter guarantees', start)]
        listed = set(re.findall(r'^   \* - ``(resq:[a-z_0-9]+)``', table,
                                re.M))
        self.assertEqual(set(extra_specs.SPECS), listed)


class L2WaysPerCoreTest(base.TestCase):
    """``resq:l2_ways_per_core`` needs the compute node's trait."""

    def test_needs_the_trait_in_the_unnamed_group(self):
        spec = dict(GOOD, **{'resq:l2_ways_per_core': '2'})
        exc = self.assertRaises(extra_specs.InvalidResQSpec,
                                extra_specs.parse, spec)
        self.assertIn('add "trait:CUSTOM_RESQ_L2_WAYS_PER_CORE_2=required"',
                      str(exc))
        self.assertIn('the unnamed request group', str(exc))
        # In the LLC group (a cache domain's provider) it is not enough.
        exc = self.assertRaises(
            extra_specs.InvalidResQSpec, extra_specs.parse, dict(spec, **{
                'trait_LLC:CUSTOM_RESQ_L2_WAYS_PER_CORE_2': 'required'}))
        self.assertIn('trait:CUSTOM_RESQ_L2_WAYS_PER_CORE_2', str(exc))
        # Another rung of the ladder is not the one asked.
        self.assertRaises(
            extra_specs.InvalidResQSpec, extra_specs.parse, dict(spec, **{
                'trait:CUSTOM_RESQ_L2_WAYS_PER_CORE_1': 'required'}))
        req = extra_specs.parse(dict(spec, **{
            'trait:CUSTOM_RESQ_L2_WAYS_PER_CORE_2': 'required'}))
        self.assertEqual(2, req.l2_ways_per_core)
        self.assertEqual(0, extra_specs.parse(GOOD).l2_ways_per_core)

    def test_values_and_slo(self):
        for bad in ('0', '33', 'two', '-1', '2.0'):
            self.assertRaises(extra_specs.InvalidResQSpec,
                              extra_specs.check_value,
                              'resq:l2_ways_per_core', bad)
        self.assertEqual(32, extra_specs.check_value(
            'resq:l2_ways_per_core', '32'))
        exc = self.assertRaises(extra_specs.InvalidResQSpec,
                                extra_specs.parse, {
                                    'resq:slo': 'on-demand',
                                    'hw:cpu_policy': 'dedicated',
                                    'resq:latency_p95_us': '40',
                                    'resources_OD:CUSTOM_RESQ_ONDEMAND_CORE':
                                        '1',
                                    'resq:l2_ways_per_core': '1',
                                    'trait:CUSTOM_RESQ_L2_WAYS_PER_CORE_1':
                                        'required'}, vcpus=1)
        self.assertIn('remove resq:l2_ways_per_core', str(exc))
        # Reserved SLOs need dedicated cores anyway.
        self.assertRaises(extra_specs.InvalidResQSpec, extra_specs.parse,
                          dict(GOOD, **{
                              'hw:cpu_policy': 'shared',
                              'resq:l2_ways_per_core': '1',
                              'trait:CUSTOM_RESQ_L2_WAYS_PER_CORE_1':
                                  'required'}))
