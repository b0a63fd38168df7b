"""Memory bandwidth as admission's second dimension (issue 46 item 4).

A term whose instances hold memory bandwidth (``mem_bw_mibps``) is admitted
only where the ways, the cores and the bandwidth are all free: one that
fits the ways but not the bandwidth is refused as ``memory_bandwidth``.
Where nothing limits the bandwidth, admission is as before.
"""

from resq_common import extra_specs
from resq_nova.admission.batch import planner
from resq_nova.admission.batch import slo_file
from resq_nova.admission import greedy
from resq_nova.admission import milp
from resq_nova.admission import reserved as admission
from resq_nova.cmd import admit
from resq_nova.deploy import flavors
from resq_nova.deploy import heat
from resq_nova.osc.v1 import slo as slo_cmd
from tests import base
from tests.unit.resq_nova.admission.batch import test_planner
from tests.unit.resq_nova.admission import test_greedy
from tests.unit.resq_nova.admission import test_reserved as ta

BW = extra_specs.RC_MEM_BW


def bw_domain(uuid, root, capacity, used=0, **kw):
    uuid, summary = ta.domain(uuid, root, **kw)
    summary['resources'][BW] = {'capacity': capacity, 'used': used}
    return uuid, summary


class GreedyTest(base.TestCase):
    """The test profile: 10 Mpps at p95 25 us is 3 instances, 2, 2, 1 ways."""

    def setUp(self):
        super().setUp()
        self.prof = test_greedy.make_profile()

    def term(self, mem_bw=1000, name='t'):
        return greedy.SLOTerm(name, self.prof, 10.0, 25.0,
                              mem_bw_mibps=mem_bw)

    def test_fits_the_ways_but_not_the_bandwidth_is_refused(self):
        for admit_one in (greedy.admit, greedy.admit_first_fit):
            # One server has the cores and ways for all three, the
            # bandwidth for one (every sizing needs two or more); the
            # other has no core free.
            servers = greedy.make_cluster(2)
            servers[0].mem_bw = 1500
            servers[1].mem_bw, servers[1].used_cores = 5000, 9
            exc = self.assertRaises(greedy.AdmissionRefused, admit_one,
                                    self.term(), servers)
            self.assertEqual(greedy.BANDWIDTH, exc.constraint)
            self.assertIn('1000 MiB/s of memory bandwidth', exc.reason)
            self.assertIn('the most memory bandwidth any of them has free '
                          'is 500 MiB/s', exc.reason)
            # All or nothing: the servers are as they were.
            self.assertEqual([(0, 0, 0), (9, 0, 0)],
                             [(s.used_cores, s.used_ways, s.used_mem_bw)
                              for s in servers])

    def test_too_little_bandwidth_in_all_is_refused_at_once(self):
        servers = greedy.make_cluster(2)
        for s in servers:
            s.mem_bw = 1000
        exc = self.assertRaises(greedy.AdmissionRefused,
                                greedy.admit_first_fit, self.term(),
                                servers)
        self.assertEqual(greedy.BANDWIDTH, exc.constraint)
        self.assertIn('fits the cores and ways, but needs 3000 MiB/s of '
                      'memory bandwidth (3 instances of 1000 MiB/s); the '
                      'cluster has 2000 MiB/s free', exc.reason)

    def test_instances_go_where_the_bandwidth_is(self):
        for admit_one in (greedy.admit, greedy.admit_first_fit):
            servers = greedy.make_cluster(3)
            servers[0].mem_bw, servers[1].mem_bw = 1500, 2000
            servers[2].mem_bw = 0
            sizing, placements = admit_one(self.term(), servers)
            self.assertEqual(3, len(placements))
            self.assertEqual([1000, 2000, 0],
                             [s.used_mem_bw for s in servers])
            for s in servers:
                self.assertLessEqual(s.used_mem_bw, s.mem_bw)

    def test_without_a_limit_or_a_demand_nothing_changes(self):
        unlimited = greedy.make_cluster(1)
        _, placements = greedy.admit(self.term(mem_bw=10 ** 6), unlimited)
        self.assertEqual({'server-000'}, {p.server for p in placements})
        self.assertEqual(3 * 10 ** 6, unlimited[0].used_mem_bw)
        # No demand: a server without bandwidth takes it.
        none = greedy.make_cluster(1)
        none[0].mem_bw = 0
        _, placements = greedy.admit(self.term(mem_bw=None), none)
        self.assertEqual(3, len(placements))

    def test_a_batch_keeps_each_servers_bandwidth(self):
        # By ways and cores the two terms fit one server; by bandwidth
        # (1,000 an instance, 2,500 a server) no more than 2 instances do.
        servers = greedy.make_cluster(3)
        for s in servers:
            s.mem_bw = 2500
        terms = [self.term(name='a'), self.term(name='b')]
        admitted, how = greedy.admit_batch(terms, servers, time_limit=20)
        self.assertIn(how, ('milp', 'greedy'))
        instances = sum(len(p) for _, p in admitted.values())
        self.assertEqual(1000 * instances,
                         sum(s.used_mem_bw for s in servers))
        for s in servers:
            self.assertLessEqual(s.used_mem_bw, 2500, s.name)
            self.assertEqual(s.used_mem_bw, 1000 * s.used_cores, s.name)
        # (Two instances of 9 ways a term: the sizing that fits.)
        self.assertEqual(2, sum(1 for s in servers if s.used_cores))

    def test_a_batch_without_the_bandwidth_is_refused_whole(self):
        servers = greedy.make_cluster(2)
        for s in servers:
            s.mem_bw = 1500
        terms = [self.term(name='a'), self.term(name='b')]
        exc = self.assertRaises(greedy.BatchRefused, greedy.admit_batch,
                                terms, servers, time_limit=10)
        self.assertIn('(memory_bandwidth)', str(exc))
        self.assertEqual([0, 0], [s.used_mem_bw for s in servers])

    def test_the_milp_has_the_bandwidth_row(self):
        # Two terms of 3 instances, 1,000 MiB/s each: the ways alone take
        # one server, the bandwidth (3,500 a server) two.
        cap = {w: self.prof.throughput_at(w) * 0.97 for w in range(1, 19)}
        groups = milp.groups_from_terms(
            [('a', 10.0, 'k'), ('b', 10.0, 'k')], lambda key: cap)
        plain = milp.solve(groups, 9, 18, time_limit=20)
        self.assertEqual(1, plain.servers)
        got = milp.solve(groups, 9, 18, time_limit=20,
                         mem_bw={'a': 1000, 'b': 1000}, server_mem_bw=3500)
        # (One row for all the servers: admit_batch checks each server.)
        self.assertEqual(2, got.servers)

    def test_bandwidth_over_names_the_servers(self):
        assignment = [('a', 2, 0), ('a', 2, 0), ('b', 1, 1), ('c', 4, 1)]
        self.assertEqual({0: (2000, 1500)}, milp.bandwidth_over(
            assignment, {'a': 1000, 'b': 500}, [1500, None]))
        self.assertEqual({}, milp.bandwidth_over(
            assignment, {'a': 1000, 'b': 500}, [2000, 500]))


class ReservedTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.prof = test_greedy.make_profile()
        self.options = flavors.FlavorOptions()

    def term(self, mem_bw=1000):
        return greedy.SLOTerm('fw-a', self.prof, 10.0, 25.0,
                              mem_bw_mibps=mem_bw)

    def test_fits_the_ways_but_not_the_bandwidth_is_refused(self):
        # d1 has the ways, classes and cores for the three instances and
        # 2,500 MiB/s free: two of them.
        exc = self.assertRaises(
            greedy.AdmissionRefused, admission.make_plan, self.term(),
            ta.body(ta.node('h1'), bw_domain('d1', 'h1', 4000, used=1500)),
            self.options)
        self.assertEqual(greedy.BANDWIDTH, exc.constraint)
        self.assertIn('needs 3000 MiB/s of memory bandwidth', exc.reason)
        self.assertIn('2500 MiB/s free together', exc.reason)
        # With a second host that has 1,000 more, but no classes for two:
        # instance 2 finds no domain with the bandwidth.
        exc = self.assertRaises(
            greedy.AdmissionRefused, admission.make_plan, self.term(),
            ta.body(ta.node('h1'), bw_domain('d1', 'h1', 4000, used=2500),
                    ta.node('h2'), bw_domain('d2', 'h2', 1500, clos=1)),
            self.options)
        self.assertEqual(greedy.BANDWIDTH, exc.constraint)
        self.assertIn('instance 2 needs 1 ways, 1 dedicated cores and 1000 '
                      'MiB/s of memory bandwidth in one cache domain',
                      exc.reason)

    def test_no_domain_offers_bandwidth(self):
        exc = self.assertRaises(
            greedy.AdmissionRefused, admission.make_plan, self.term(),
            ta.body(ta.node('h1'), ta.domain('d1', 'h1')), self.options)
        self.assertEqual(greedy.BANDWIDTH, exc.constraint)
        self.assertIn('no cache domain with room offers any (%s)' % BW,
                      exc.reason)
        # Without a demand the same cluster admits it.
        plan = admission.make_plan(
            self.term(mem_bw=None),
            ta.body(ta.node('h1'), ta.domain('d1', 'h1')), self.options)
        self.assertNotIn('resq:mem_bw_mibps', plan.flavors[0].extra_specs)
        self.assertNotIn('mem_bw_mibps', plan.to_dict())

    def test_flavors_ask_placement_for_the_bandwidth(self):
        plan = admission.make_plan(
            self.term(),
            ta.body(ta.node('h1'), bw_domain('d1', 'h1', 2000),
                    ta.node('h2'), bw_domain('d2', 'h2', 2000)),
            self.options)
        per_domain = {}
        for inst in plan.instances:
            per_domain[inst.domain] = per_domain.get(inst.domain, 0) + 1000
        self.assertLessEqual(max(per_domain.values()), 2000)
        for flavor in plan.flavors:
            specs = flavor.extra_specs
            self.assertEqual('1000', specs['resq:mem_bw_mibps'])
            self.assertEqual('1000', specs['resources_LLC:%s' % BW])
            self.assertEqual(1000, extra_specs.parse(specs, 1).mem_bw_mibps)
        self.assertEqual(1000, plan.to_dict()['mem_bw_mibps'])
        tmpl = heat.template(plan, image='img', network='none')
        self.assertIn('1000 MiB/s of memory bandwidth each',
                      tmpl['description'])
        servers = [r for r in tmpl['resources'].values()
                   if r['type'] == 'OS::Nova::Server']
        self.assertEqual({'1000'}, {s['properties']['metadata'][
            'resq_mem_bw_mibps'] for s in servers})
        created = [r for r in tmpl['resources'].values()
                   if r['type'] == 'OS::Nova::Flavor']
        self.assertEqual({'1000'}, {f['properties']['extra_specs'][
            'resources_LLC:%s' % BW] for f in created})

    def test_a_batch_keeps_each_domains_bandwidth(self):
        cluster = test_planner.Cluster(
            ta.node('h1'), bw_domain('d1', 'h1', 2000),
            ta.node('h2'), bw_domain('d2', 'h2', 2500),
            ta.node('h3'), bw_domain('d3', 'h3', 2500))
        terms = [greedy.SLOTerm(n, self.prof, 10.0, 25.0, mem_bw_mibps=1000)
                 for n in ('fw', 'nat')]
        batch = planner.plan(cluster, terms, self.options)
        held = {}
        for the_plan in batch.plans:
            self.assertEqual(1000, the_plan.to_dict()['mem_bw_mibps'])
            for inst in the_plan.instances:
                held[inst.domain] = held.get(inst.domain, 0) + 1000
        self.assertEqual(1000 * sum(len(p.instances) for p in batch.plans),
                         sum(held.values()))
        self.assertLessEqual(held.get('d1', 0), 2000)
        self.assertLessEqual(held.get('d2', 0), 2500)
        self.assertLessEqual(held.get('d3', 0), 2500)


class TermSourceTest(base.TestCase):

    GOOD = ('- name: fw\n  profile: p1\n  throughput_mpps: 10\n'
            '  latency_p95_us: 25\n')

    def test_the_slo_file_field(self):
        terms = slo_file.parse(self.GOOD + '  mem_bw_mibps: 2000\n', 'f.yaml')
        self.assertEqual(2000, terms[0].mem_bw_mibps)
        self.assertIsNone(slo_file.parse(self.GOOD, 'f.yaml')[0]
                          .mem_bw_mibps)
        for value in ('0', '1.5', 'true', '100000001', '"2000"'):
            exc = self.assertRaises(
                slo_file.InvalidSLOFile, slo_file.parse,
                self.GOOD + '  mem_bw_mibps: %s\n' % value, 'f.yaml')
            self.assertIn('term 1 (fw): field mem_bw_mibps is', str(exc))
            self.assertIn('give a whole number of MiB/s from 1 to '
                          '100000000', str(exc))

    def test_on_demand_terms_hold_no_bandwidth(self):
        args = type('Args', (), {'mem_bw_mibps': 100,
                                 'slo': extra_specs.ON_DEMAND})
        self.assertIn('--mem-bw-mibps is for reserved terms',
                      admit.bandwidth_error(args))
        args.slo = extra_specs.RESERVED
        self.assertIsNone(admit.bandwidth_error(args))


class ShownTest(base.TestCase):

    def test_the_cli_views_show_the_bandwidth(self):
        prof = test_greedy.make_profile()
        term = greedy.SLOTerm('fw-a', prof, 10.0, 25.0, mem_bw_mibps=700)
        plan = admission.make_plan(
            term, ta.body(ta.node('h1'), bw_domain('d1', 'h1', 5000)),
            flavors.FlavorOptions())
        doc = plan.to_dict()
        for flavor in doc['flavors']:
            flavor['exists'] = False
        data = dict(zip(*slo_cmd.admission_view(doc)))
        self.assertEqual(700, data['mem_bw_mibps'])
        plain = dict(doc)
        del plain['mem_bw_mibps']
        self.assertNotIn('mem_bw_mibps',
                         dict(zip(*slo_cmd.admission_view(plain))))
        out = []
        conf = type('Conf', (), {'format': 'text'})
        admit._show(conf, doc, type('Out', (), {
            'write': lambda self, text: out.append(text)})())
        self.assertIn('700 MiB/s of memory bandwidth each', ''.join(out))
