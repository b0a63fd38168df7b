"""What the CLI shows, from plain data."""

import testtools

from resq_common import cache_domain
from resq_nova.osc import cloud
from resq_nova.osc.v1 import plan as plan_cmd
from resq_nova.osc.v1 import slo as slo_cmd


class DomainViewTest(testtools.TestCase):

    def test_accounting(self):
        dom = cache_domain.CacheDomain(1, 20, io_ways=2, num_closids=16,
                                       way_size_bytes=2359296,
                                       domains_on_host=2, cores=8)
        view = cloud.domain_view(
            1, 'rp', dom.inventory(),
            {'CUSTOM_LLC_WAY': 5, 'CUSTOM_LLC_CLOS': 2}, dom.traits())
        self.assertEqual((20, 2, 5, 13), (view['ways_total'],
                                          view['ways_reserved'],
                                          view['ways_used'],
                                          view['ways_free']))
        # 15 classes shared by two domains: 7 each, plus the default's.
        self.assertEqual((8, 1, 2, 5), (view['clos_total'],
                                        view['clos_reserved'],
                                        view['clos_used'],
                                        view['clos_free']))
        self.assertEqual(8, view['cores'])
        self.assertEqual(['CUSTOM_CAT_L3', 'CUSTOM_RESQ_LLC_WAYS_20',
                          'CUSTOM_RESQ_LLC_WAY_KIB_2304'], view['traits'])

    def test_cores_for_reserved_slos_and_the_lease(self):
        dom = cache_domain.CacheDomain(
            0, 11, io_ways=2, num_closids=8, cores=6, default_group_ways=1,
            instance_ways=4, lease_ways=4, lease_classes=2, lease_cores=2)
        view = cloud.domain_view(
            0, 'rp', dom.inventory(), {'CUSTOM_RESQ_CORE': 3,
                                       'CUSTOM_RESQ_ONDEMAND_CORE': 1},
            dom.traits())
        self.assertEqual(('3/4', '1/2'), (view['resq_cores'],
                                          view['lease_cores']))
        plain = cloud.domain_view(0, 'rp', {}, {}, [])
        self.assertEqual(('-', '-'), (plain['resq_cores'],
                                      plain['lease_cores']))

    def test_without_cores_trait_or_classes(self):
        view = cloud.domain_view(0, 'rp', {'CUSTOM_LLC_WAY': {
            'total': 11, 'reserved': 2}}, {}, ['CUSTOM_RESQ_L3_0'])
        self.assertIsNone(view['cores'])
        self.assertEqual((0, 0), (view['clos_total'], view['clos_free']))
        self.assertEqual(9, view['ways_free'])
        self.assertEqual([], view['traits'])

    def test_domains_are_found_by_their_uuid(self):
        root = '5c1e5a9e-0f3b-4b5e-9d0a-3f0b2c1d4e5f'
        providers = [
            {'uuid': root, 'root_provider_uuid': root},
            {'uuid': cache_domain.provider_uuid(root, 1),
             'root_provider_uuid': root},
            # Another service's child (e.g. a Neutron bandwidth provider).
            {'uuid': '0c8b1a52-4d9e-4b8f-9a3e-2d7c6b5a4f3e',
             'root_provider_uuid': root},
        ]
        self.assertEqual(
            {root: [(1, cache_domain.provider_uuid(root, 1))]},
            cloud._domains_by_root(providers))

    def test_name_regex_escapes_specials(self):
        self.assertEqual(r'fw\.a\(1\)', cloud._regex_escape('fw.a(1)'))


class PlanViewTest(testtools.TestCase):

    def test_moves_and_actions(self):
        move = {'uuid': 'u1', 'name': 'a', 'from_host': 'h1',
                'from_domain': 0, 'to_host': 'h2', 'to_domain': 1,
                'cores': 2, 'ways': 3, 'internal': 'x'}
        names, values = plan_cmd.plan_view(
            {'id': 'plan-1', 'proposed': True, 'moves': [move],
             'actions': [dict(move, outcome='done')], 'status': 'applied',
             'result': '1 of 1 moves done'}, '/state/plans/plan-1.json')
        data = dict(zip(names, values))
        self.assertEqual(names, sorted(names))
        self.assertEqual([{k: v for k, v in move.items() if k != 'internal'}],
                         data['moves'].machine_readable())
        self.assertEqual('done',
                         data['actions'].machine_readable()[0]['outcome'])
        self.assertEqual('1 of 1 moves done', data['result'])

    def test_not_applied_has_no_actions(self):
        names, _ = plan_cmd.plan_view({'id': 'p', 'moves': []}, 'f')
        self.assertNotIn('actions', names)
        self.assertNotIn('result', names)


class AdmissionViewTest(testtools.TestCase):

    def test_booted_and_predicted(self):
        doc = {'term': 't', 'profile': 'p', 'throughput_mpps': 1.0,
               'latency_p95_us': 20.0, 'load_cap': 0.97,
               'capacity_mpps': 1.2,
               'flavors': [{'name': 'resq.t.2w', 'ways': 2, 'exists': True},
                           {'name': 'resq.t.1w', 'ways': 1,
                            'exists': False}],
               'flavors_created': ['resq.t.1w'],
               'instances': [{'name': 't-0', 'ways': 2, 'mpps': 0.6,
                              'host': 'h1'},
                             {'name': 't-1', 'ways': 1, 'mpps': 0.6,
                              'host': 'h1'}],
               'servers': [{'name': 't-0', 'id': 'id0', 'host': 'h2'}]}
        names, values = slo_cmd.admission_view(doc)
        data = dict(zip(names, values))
        self.assertEqual(['exists', 'created'],
                         [f['state'] for f in
                          data['flavors'].machine_readable()])
        inst = data['instances'].machine_readable()
        self.assertEqual(('id0', 'h2', 'h1'), (inst[0]['id'],
                                               inst[0]['host'],
                                               inst[0]['predicted_host']))
        self.assertNotIn('id', inst[1])
        self.assertNotIn('heat_template', names)

    def test_heat_template_with_its_stack_project_and_warnings(self):
        doc = {'term': 't', 'profile': 'p', 'throughput_mpps': 1.0,
               'latency_p95_us': 20.0, 'load_cap': 0.97,
               'capacity_mpps': 1.2,
               'flavors': [{'name': 'resq.t.2w', 'ways': 2, 'exists': True}],
               'instances': [{'name': 't-0', 'ways': 2, 'mpps': 1.2,
                              'host': 'h1'}],
               'heat_template': 't.yaml', 'stack_project': 'tenant-a',
               'flavors_shared': ['resq.t.2w']}
        data = dict(zip(*slo_cmd.admission_view(doc)))
        self.assertEqual(('t.yaml', 'tenant-a', 'resq.t.2w'), (
            data['heat_template'], data['stack_project'],
            data['flavors_shared']))
        self.assertNotIn('warnings', data)
        del doc['stack_project'], doc['flavors_shared']
        doc['warnings'] = ['flavor resq.t.2w exists and is private']
        data = dict(zip(*slo_cmd.admission_view(doc)))
        self.assertNotIn('stack_project', data)
        self.assertEqual(doc['warnings'],
                         data['warnings'].machine_readable())
