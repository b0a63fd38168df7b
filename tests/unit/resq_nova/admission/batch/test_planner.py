"""The joint admission decision on Placement's view, all or nothing."""

from resq_nova.admission.batch import isolated
from resq_nova.admission.batch import planner
from resq_nova.admission import greedy
from resq_nova.deploy import flavors
from tests import base
from tests.unit.resq_nova.admission import test_greedy
from tests.unit.resq_nova.admission import test_reserved as ta


class Cluster:
    """Placement's answers for a fixed set of providers."""

    def __init__(self, *providers):
        self.body = ta.body(*providers)
        self.asked = []

    def allocation_candidates(self, groups):
        self.asked.append(groups)
        return self.body

    def get_provider(self, uuid):
        return {'uuid': uuid, 'name': 'name-of-%s' % uuid}


class PlanTest(base.TestCase):
    """The test profile: 3, 4, 4.5, 5 ... Mpps at 1, 2, 3, 4 ... ways."""

    def setUp(self):
        super().setUp()
        self.prof = test_greedy.make_profile()
        self.options = flavors.FlavorOptions()

    def terms(self, *mpps, latency=25.0):
        return [greedy.SLOTerm(name, self.prof, m, latency)
                for name, m in zip(('fw', 'nat', 'ids', 'lb'), mpps)]

    def test_chain_on_top_of_what_is_used(self):
        # h1's domain holds 12 of 18 ways and 1 of 3 classes already.
        cluster = Cluster(ta.node('h1', pcpu=6, pcpu_used=1),
                          ta.domain('d1', 'h1', used=12, clos_used=1),
                          ta.node('h2', pcpu=6), ta.domain('d2', 'h2'))
        batch = planner.plan(cluster, self.terms(8.0, 8.0, 4.0),
                             self.options, {'fw': 'edge', 'nat': 'edge'})
        self.assertIn(batch.method, ('milp', 'greedy'))
        self.assertEqual(['fw', 'nat', 'ids'],
                         [p.term.name for p in batch.plans])
        self.assertEqual({'fw': 'edge', 'nat': 'edge'}, batch.chains)
        per_domain = {}
        for the_plan in batch.plans:
            self.assertGreaterEqual(the_plan.sizing.aggregate_mpps,
                                    the_plan.term.throughput_mpps - 1e-9)
            ways = [i.ways for i in the_plan.instances]
            self.assertEqual(sorted(ways, reverse=True), ways)
            for inst in the_plan.instances:
                self.assertEqual({'d1': 'h1', 'd2': 'h2'}[inst.domain],
                                 inst.host)
                used = per_domain.setdefault(inst.domain, [0, 0])
                used[0] += inst.ways
                used[1] += 1
        # Never more than each domain has free: ways and classes.
        self.assertLessEqual(per_domain.get('d1', [0, 0])[0], 6)
        self.assertLessEqual(per_domain.get('d1', [0, 0])[1], 2)
        self.assertLessEqual(per_domain.get('d2', [0, 0])[0], 18)
        self.assertLessEqual(per_domain.get('d2', [0, 0])[1], 3)
        self.assertEqual({'h1': 'name-of-h1', 'h2': 'name-of-h2'},
                         {h: n for h, n in batch.names.items()})

    def test_refused_whole_naming_each_term(self):
        # One domain, 3 classes: the first term takes them all.
        cluster = Cluster(ta.node('h1', pcpu=6), ta.domain('d1', 'h1'))
        exc = self.assertRaises(greedy.BatchRefused, planner.plan, cluster,
                                self.terms(10.0, 10.0, 10.0), self.options)
        self.assertEqual(['nat', 'ids'], [r.term for r in exc.refusals])
        for refusal in exc.refusals:
            self.assertIn(refusal.constraint, (greedy.CLUSTER_CAPACITY,
                                               greedy.NO_ROOM))
            self.assertIn('needs', refusal.reason)

    def test_one_bad_term_refuses_the_batch(self):
        cluster = Cluster(ta.node('h1', pcpu=6), ta.domain('d1', 'h1'))
        terms = self.terms(4.0, 4.0)
        terms.append(greedy.SLOTerm('slow', self.prof, 1.0, 1.0))
        exc = self.assertRaises(greedy.BatchRefused, planner.plan, cluster,
                                terms, self.options)
        self.assertEqual([('slow', greedy.LATENCY)],
                         [(r.term, r.constraint) for r in exc.refusals])

    def test_platform_and_empty_cluster(self):
        other = Cluster(ta.node('h1'), ta.domain(
            'd1', 'h1', traits=['CUSTOM_RESQ_LLC_WAYS_11']))
        exc = self.assertRaises(greedy.BatchRefused, planner.plan, other,
                                self.terms(4.0, 4.0), self.options)
        self.assertEqual([('fw', 'platform'), ('nat', 'platform')],
                         [(r.term, r.constraint) for r in exc.refusals])
        exc = self.assertRaises(greedy.BatchRefused, planner.plan, Cluster(),
                                self.terms(4.0), self.options)
        self.assertEqual('cluster_capacity', exc.refusals[0].constraint)

    def test_host_room_is_shared_by_its_domains(self):
        # Two sockets whose domains each have room, but the host has
        # memory for 3 instances in all: the plan never puts more there.
        cluster = Cluster(
            ta.node('h1', pcpu=12, mem=3 * 1024),
            ta.domain('d1', 'h1'), ta.domain('d2', 'h1'),
            ta.node('h2', pcpu=12), ta.domain('d3', 'h2'),
            ta.domain('d4', 'h2'))
        batch = planner.plan(cluster, self.terms(8.0, 8.0), self.options)
        hosts = [i.host for p in batch.plans for i in p.instances]
        self.assertLessEqual(hosts.count('h1'), 3)
        self.assertEqual(4, len(hosts))
        lone = Cluster(ta.node('h1', pcpu=12, mem=3 * 1024),
                       ta.domain('d1', 'h1'), ta.domain('d2', 'h1'))
        exc = self.assertRaises(greedy.BatchRefused, planner.plan, lone,
                                self.terms(8.0, 8.0), self.options)
        self.assertEqual({'fw', 'nat'}, {r.term for r in exc.refusals})
        self.assertIn("hosts' free dedicated cores, memory and disk",
                      exc.refusals[0].reason)

    def test_servers_of_counts_room_in_instances(self):
        hosts = planner.admission.cluster(ta.body(
            ta.node('h1', pcpu=6), ta.domain('d1', 'h1', used=4,
                                             clos_used=1),
            ta.node('h2', pcpu=6), ta.domain('d2', 'h2')), self.options)
        servers, host_of = planner.servers_of(hosts, vcpus=1)
        by_name = {s.name: s for s in servers}
        # 3 classes of service limit a domain to 3 instances.
        self.assertEqual((3, 18, 1, 4), (
            by_name['d1'].cores, by_name['d1'].ways,
            by_name['d1'].used_cores, by_name['d1'].used_ways))
        self.assertEqual((0, 0), (by_name['d2'].used_cores,
                                  by_name['d2'].used_ways))
        self.assertEqual({'d1': 'h1', 'd2': 'h2'}, host_of)

    def test_milp_in_a_child_process(self):
        def cluster():
            servers = greedy.make_cluster(4)
            servers[0].used_cores, servers[0].used_ways = 5, 9
            return servers

        terms = [greedy.SLOTerm('chain-%d' % i, self.prof, 8.0, 25.0)
                 for i in range(3)]
        here = cluster()
        admitted, how = greedy.admit_batch(terms, here, time_limit=30)
        self.assertEqual('milp', how)
        # The unit tests' process is not patched by eventlet; the child's
        # plan is the same as the one solved here.
        self.assertFalse(isolated.needed())
        there = cluster()
        again, how = greedy.admit_batch(terms, there, time_limit=30,
                                        solve=isolated.solve)
        self.assertEqual('milp', how)
        self.assertEqual({n: s.ways for n, (s, _) in admitted.items()},
                         {n: s.ways for n, (s, _) in again.items()})
        self.assertEqual([(s.used_cores, s.used_ways) for s in here],
                         [(s.used_cores, s.used_ways) for s in there])

    def test_child_errors_come_back(self):
        exc = self.assertRaises(ValueError, isolated.solve, [], 9, 18,
                                time_limit=-1)
        self.assertIn('time limit', str(exc))
