import yaml

from resq_common import cache_domain
from resq_common import extra_specs
from resq_nova.admission import greedy
from resq_nova.admission import reserved as admission
from resq_nova.cmd import admit
from resq_nova.deploy import flavors
from resq_nova.deploy import heat
from resq_profiler import store as store_mod
from tests import base
from tests.unit.resq_nova.admission import test_greedy
from tests.unit import test_cmd

SHAPE = cache_domain.platform_traits(20, 2359296)


def domain(uuid, root, ways=18, used=0, clos=3, clos_used=0, traits=None):
    return uuid, {
        'resources': {'CUSTOM_LLC_WAY': {'capacity': ways, 'used': used},
                      'CUSTOM_LLC_CLOS': {'capacity': clos,
                                          'used': clos_used}},
        'traits': ['CUSTOM_CAT_L3'] + (SHAPE if traits is None else traits),
        'parent_provider_uuid': root, 'root_provider_uuid': root}


def node(uuid, pcpu=9, pcpu_used=0, mem=65536, disk=100):
    return uuid, {
        'resources': {'PCPU': {'capacity': pcpu, 'used': pcpu_used},
                      'MEMORY_MB': {'capacity': mem, 'used': 0},
                      'DISK_GB': {'capacity': disk, 'used': 0}},
        'traits': [], 'parent_provider_uuid': None,
        'root_provider_uuid': uuid}


def body(*providers):
    # allocation_requests are not read: provider_summaries carry the trees.
    return {'allocation_requests': [],
            'provider_summaries': dict(providers)}


class PlanTest(base.TestCase):
    """The test profile: 3, 4, 4.5, 5 ... 5.5 Mpps at 1, 2, 3, 4 ... 20."""

    def setUp(self):
        super().setUp()
        self.prof = test_greedy.make_profile()
        self.options = flavors.FlavorOptions()

    def term(self, mpps=10.0, latency=25.0, **kw):
        return greedy.SLOTerm('fw-a', self.prof, mpps, latency, **kw)

    def test_plan_names_flavors_and_servers_largest_first(self):
        plan = admission.make_plan(self.term(), body(
            node('h1'), domain('d1', 'h1')), self.options)
        # Same sizing as the greedy on an 18-way, 9-core server.
        self.assertEqual((2, 2, 1), plan.sizing.ways)
        self.assertEqual(['resq.fw-a.2w', 'resq.fw-a.1w'],
                         [f.name for f in plan.flavors])
        self.assertEqual(['fw-a-0', 'fw-a-1', 'fw-a-2'],
                         [i.name for i in plan.instances])
        self.assertEqual(['resq.fw-a.2w', 'resq.fw-a.2w', 'resq.fw-a.1w'],
                         [i.flavor for i in plan.instances])
        self.assertEqual({('h1', 'd1')},
                         {(i.host, i.domain) for i in plan.instances})
        # Per-instance shares add up to the target, in capacity ratio.
        self.assertAlmostEqual(10.0, sum(i.mpps for i in plan.instances))
        self.assertAlmostEqual(4.0 / 3.0,
                               plan.instances[0].mpps / plan.instances[2].mpps)

    def test_flavor_specs(self):
        plan = admission.make_plan(self.term(packet_bytes=64), body(
            node('h1'), domain('d1', 'h1')), self.options)
        specs = plan.flavors[0].extra_specs
        self.assertEqual({
            'resources_LLC:CUSTOM_LLC_WAY': '2',
            'resources_LLC:CUSTOM_LLC_CLOS': '1',
            'resources_LLC:CUSTOM_RESQ_CORE': '1',
            'trait_LLC:CUSTOM_CAT_L3': 'required',
            'trait_LLC:CUSTOM_RESQ_LLC_WAYS_20': 'required',
            'trait_LLC:CUSTOM_RESQ_LLC_WAY_KIB_2304': 'required',
            'group_policy': 'none',
            'hw:cpu_policy': 'dedicated',
            'hw:mem_page_size': 'large',
            'resq:slo': 'reserved',
            'resq:profile': 'lpm-64B-100000flows-abcdef12',
            'resq:throughput_mpps': '3.6364',
            'resq:latency_p95_us': '25',
            'resq:packet_bytes': '64',
            'resq:term': 'fw-a',
            'resq:min_ways': '2'}, specs)
        request = extra_specs.parse(specs, 1)
        self.assertEqual(2, request.ways)
        self.assertEqual('_LLC', request.group_suffix)
        self.assertEqual(1, plan.flavors[0].vcpus)

    def test_bad_term_name_fails_before_anything(self):
        term = greedy.SLOTerm('fw a', self.prof, 10.0, 25.0)
        self.assertRaises(extra_specs.InvalidResQSpec, admission.make_plan,
                          term, body(node('h1'), domain('d1', 'h1')),
                          self.options)

    def test_packs_fullest_host_first_and_spills(self):
        plan = admission.make_plan(self.term(), body(
            node('h1', pcpu_used=7), domain('d1', 'h1'),
            node('h2'), domain('d2', 'h2')), self.options)
        # h1 has two free cores: the two largest go there, the last to h2.
        self.assertEqual(['h1', 'h1', 'h2'],
                         [i.host for i in plan.instances])

    def test_ways_and_classes_are_per_domain(self):
        plan = admission.make_plan(self.term(), body(
            node('h1', pcpu=18), domain('d1', 'h1', used=15),
            domain('d2', 'h1', clos_used=3), domain('d3', 'h1')),
            self.options)
        # d1 has 3 ways free, d2 no class of service: all go to d1, then d3.
        self.assertEqual(['d1', 'd3', 'd1'],
                         [i.domain for i in plan.instances])

    def test_cores_are_per_domain_too(self):
        # A two-socket host: d1's cell has 1 dedicated core (and 1 ResQ
        # instance there already), d2's cell 4; every domain has the ways.
        cores = cache_domain.TRAIT_CORES_PREFIX
        plan = admission.make_plan(self.term(), body(
            node('h1', pcpu=18),
            domain('d1', 'h1', clos_used=1, traits=SHAPE + [cores + '2']),
            domain('d2', 'h1', traits=SHAPE + [cores + '4'])),
            self.options)
        # d1 has one core left: one instance there, the others in d2.
        self.assertEqual(1, [i.domain for i in plan.instances].count('d1'))
        self.assertEqual(2, [i.domain for i in plan.instances].count('d2'))
        exc = self.assertRaises(greedy.AdmissionRefused, admission.make_plan,
                                self.term(), body(
                                    node('h1', pcpu=9),
                                    domain('d1', 'h1', clos_used=2,
                                           traits=SHAPE + [cores + '3']),
                                    domain('d2', 'h1', clos_used=1,
                                           traits=SHAPE + [cores + '2'])),
                                self.options)
        self.assertEqual(greedy.NO_ROOM, exc.constraint)
        self.assertIn('dedicated cores in one cache domain (its socket)',
                      str(exc))

    def test_cluster_capacity_refusal(self):
        exc = self.assertRaises(
            greedy.AdmissionRefused, admission.make_plan, self.term(),
            body(node('h1', pcpu_used=7), domain('d1', 'h1')), self.options)
        self.assertEqual(greedy.CLUSTER_CAPACITY, exc.constraint)
        self.assertIn('room for 2 instances', exc.reason)

    def test_no_server_with_room_refusal(self):
        # 5 ways free in total for 2+2+1, but no domain has 2 for the
        # second instance.
        exc = self.assertRaises(
            greedy.AdmissionRefused, admission.make_plan, self.term(),
            body(node('h1'), domain('d1', 'h1', used=17),
                 node('h2'), domain('d2', 'h2', used=17),
                 node('h3'), domain('d3', 'h3', used=17),
                 node('h4'), domain('d4', 'h4', used=16)), self.options)
        self.assertEqual(greedy.NO_ROOM, exc.constraint)
        self.assertIn('instance 1 needs 2 ways', exc.reason)
        self.assertIn('the most ways any domain with free cores has free '
                      'is 1', exc.reason)

    def test_platform_refusal_names_shapes(self):
        exc = self.assertRaises(
            greedy.AdmissionRefused, admission.make_plan, self.term(),
            body(node('h1'), domain('d1', 'h1', traits=[
                'CUSTOM_RESQ_LLC_WAYS_11', 'CUSTOM_RESQ_LLC_WAY_KIB_2560'])),
            self.options)
        self.assertEqual(admission.PLATFORM, exc.constraint)
        self.assertIn('CUSTOM_RESQ_LLC_WAYS_11', exc.reason)
        self.assertIn('CUSTOM_RESQ_LLC_WAYS_20', exc.reason)

    def test_empty_cluster_refusal(self):
        exc = self.assertRaises(greedy.AdmissionRefused, admission.make_plan,
                                self.term(), body(), self.options)
        self.assertEqual(greedy.CLUSTER_CAPACITY, exc.constraint)

    def test_latency_refusal_comes_from_the_greedy(self):
        exc = self.assertRaises(
            greedy.AdmissionRefused, admission.make_plan,
            self.term(latency=5.0), body(node('h1'), domain('d1', 'h1')),
            self.options)
        self.assertEqual(greedy.LATENCY, exc.constraint)

    def test_request_groups(self):
        groups = admission.request_groups(self.prof, self.options)
        self.assertEqual({'': {'resources': {'PCPU': 1, 'MEMORY_MB': 1024,
                                             'DISK_GB': 1}},
                          '_LLC': {'resources': {'CUSTOM_LLC_WAY': 1,
                                                 'CUSTOM_LLC_CLOS': 1},
                                   'required': ['CUSTOM_CAT_L3']}}, groups)

    def test_differences(self):
        plan = admission.make_plan(self.term(), body(
            node('h1'), domain('d1', 'h1')), self.options)
        wanted = plan.flavors[0]
        same = {'vcpus': 1, 'ram': 1024, 'disk': 1,
                'extra_specs': dict(wanted.extra_specs)}
        self.assertEqual([], flavors.differences(same, wanted))
        other = dict(same, ram=2048, extra_specs=dict(
            wanted.extra_specs, **{'resq:latency_p95_us': '30',
                                   'hw:cpu_thread_policy': 'isolate'}))
        del other['extra_specs']['group_policy']
        self.assertEqual([
            'ram is 2048, wanted 1024',
            "group_policy is unset, wanted 'none'",
            "hw:cpu_thread_policy is 'isolate', wanted unset",
            "resq:latency_p95_us is '30', wanted '25'"],
            flavors.differences(other, wanted))


class HeatTemplateTest(base.TestCase):

    def setUp(self):
        super().setUp()
        term = greedy.SLOTerm('fw-a', test_greedy.make_profile(), 10.0, 25.0)
        self.plan = admission.make_plan(term, body(
            node('h1'), domain('d1', 'h1')), flavors.FlavorOptions())

    def parse(self, **kw):
        return yaml.safe_load(heat.dump(heat.template(self.plan, **kw)))

    def test_structure_and_order(self):
        tmpl = self.parse(image='cirros')
        self.assertEqual(
            {'heat_template_version', 'description', 'parameters',
             'conditions', 'resources', 'outputs'}, set(tmpl))
        self.assertEqual('2021-04-16', str(tmpl['heat_template_version']))
        self.assertEqual('cirros', tmpl['parameters']['image']['default'])
        res = tmpl['resources']
        flavors = {k: v for k, v in res.items()
                   if v['type'] == 'OS::Nova::Flavor'}
        servers = {k: v for k, v in res.items()
                   if v['type'] == 'OS::Nova::Server'}
        self.assertEqual(2, len(flavors))
        self.assertEqual(3, len(servers))
        for flavor in self.plan.flavors:
            props = [v['properties'] for v in flavors.values()
                     if v['properties']['name'] == flavor.name][0]
            self.assertEqual(flavor.extra_specs, props['extra_specs'])
            self.assertEqual(1, props['vcpus'])
            # Private to the project the stack is created in.
            self.assertIs(False, props['is_public'])
            self.assertEqual([{'get_param': 'OS::project_id'}],
                             props['tenants'])
        # Follow depends_on back from the server nothing depends on: the
        # creation order Heat must use is largest first.
        after = {v.get('depends_on'): k for k, v in servers.items()}
        order, current = [], after[None]
        while current:
            order.append(current)
            current = after.get(current)
        names = [servers[k]['properties']['name'] for k in order]
        self.assertEqual(['fw-a-0', 'fw-a-1', 'fw-a-2'], names)
        ways = []
        for k in order:
            ref = servers[k]['properties']['flavor']['get_resource']
            ways.append(int(res[ref]['properties']['extra_specs']
                            ['resources_LLC:CUSTOM_LLC_WAY']))
        self.assertEqual([2, 2, 1], ways)
        for server in servers.values():
            self.assertLessEqual(set(server), {'type', 'properties',
                                               'depends_on'})

    def test_existing_flavors_are_referenced_not_created(self):
        tmpl = self.parse(existing={'resq.fw-a.2w'}, network='net1')
        types = [v['type'] for v in tmpl['resources'].values()]
        self.assertEqual(1, types.count('OS::Nova::Flavor'))
        self.assertEqual('resq.fw-a.2w', tmpl['resources']['server_0']
                         ['properties']['flavor'])
        self.assertEqual({'get_resource': 'flavor_resq_fw-a_1w'},
                         tmpl['resources']['server_2']['properties']
                         ['flavor'])
        self.assertEqual('net1', tmpl['parameters']['network']['default'])


class AdmitCommandTest(test_cmd.CommandTestCase):
    """main() up to the point where it needs Nova and Placement."""

    def test_missing_options_are_named(self):
        rc, out, err = self.run_main(admit.main, '--term', 'fw-a')
        self.assertEqual(1, rc)
        self.assertIn('needs --profile, --throughput-mpps, --latency-p95-us, '
                      '--image, --network', err)

    def test_unknown_profile_is_refused(self):
        rc, out, err = self.run_main(
            admit.main, '--term', 'fw-a', '--profile', 'no-such',
            '--throughput-mpps', '1', '--latency-p95-us', '30', '--dry-run')
        self.assertEqual(1, rc)
        self.assertIn("REFUSED (profile): SLO term fw-a: No profile "
                      "'no-such'", err)

    def test_without_credentials_says_which_options(self):
        store_mod.ProfileStore(self.store_dir).put(
            test_greedy.make_profile())
        rc, out, err = self.run_main(
            admit.main, '--term', 'fw-a', '--profile',
            'lpm-64B-100000flows-abcdef12', '--throughput-mpps', '1',
            '--latency-p95-us', '30', '--dry-run')
        self.assertEqual(1, rc)
        self.assertIn('set the keystoneauth options of [nova] and '
                      '[placement]', err)
