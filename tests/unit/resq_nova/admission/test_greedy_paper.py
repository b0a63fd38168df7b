"""ResQ's greedy as the paper states it (§5.3.1): size, then first-fit
decreasing, on instances whose result is computed by hand."""

import random

from resq_nova.admission import greedy
from tests import base
from tests.unit.resq_nova.admission import test_greedy

# Throughput 1 Mpps per way up to 4 ways, flat after: sizes are easy to
# compute by hand. Latency: 10 us at 10% load, 12 at half, 20 at full.
LINEAR = [[1, 1.0], [2, 2.0], [3, 3.0], [4, 4.0], [20, 4.0]]


def linear_profile():
    return test_greedy.make_profile(**{'throughput.points': LINEAR})


def term(name, target, latency=25.0, prof=None):
    return greedy.SLOTerm(name, prof or linear_profile(), target, latency)


def where(placements):
    return [(p.server, p.ways) for p in placements]


class PaperSizingTest(base.TestCase):
    """Steps 1-3 on the linear profile, without the discount."""

    def test_k_from_fair_share_then_round_robin(self):
        # 3 cores, 6 ways: a fair share of 2 ways, 2 Mpps an instance.
        # Target 5: K = ceil(5 / 2) = 3; 1,1,1 (3) -> 2,1,1 (4) -> 2,2,1.
        sizing, _ = greedy.admit_first_fit(
            term('a', 5.0), greedy.make_cluster(1, 3, 6), discount=0.0)
        self.assertEqual((2, 2, 1), sizing.ways)
        self.assertEqual((2.0, 2.0, 1.0), sizing.per_instance_mpps)

    def test_latency_cap_raises_k(self):
        # Target 12 us caps the load at 50%: 1 Mpps an instance at the
        # fair share. Target 3: K = 3, 1,1,1 gives 1.5 -> ... -> 2,2,2.
        sizing, _ = greedy.admit_first_fit(
            term('a', 3.0, latency=12.0), greedy.make_cluster(1, 3, 6),
            discount=0.0)
        self.assertEqual(0.5, sizing.load_cap)
        self.assertEqual((2, 2, 2), sizing.ways)


class FirstFitDecreasingTest(base.TestCase):

    def test_online_sequence(self):
        # Servers of 3 cores and 6 ways (fair share 2 ways = 2 Mpps).
        # a (5 Mpps): 2,2,1 -> server 0 (3 cores, 5 ways).
        # b (3 Mpps): 2,1   -> server 1 (2 cores, 3 ways).
        # c (2 Mpps): 2     -> server 0 has no core; server 1 (3, 5).
        # d (1 Mpps): 1     -> servers 0 and 1 full; server 2.
        servers = greedy.make_cluster(4, 3, 6)
        got = {}
        for name, target in (('a', 5.0), ('b', 3.0), ('c', 2.0),
                             ('d', 1.0)):
            got[name] = where(greedy.admit_first_fit(
                term(name, target), servers, discount=0.0)[1])
        self.assertEqual({
            'a': [('server-000', 2), ('server-000', 2), ('server-000', 1)],
            'b': [('server-001', 2), ('server-001', 1)],
            'c': [('server-001', 2)],
            'd': [('server-002', 1)]}, got)
        self.assertEqual([(3, 5), (3, 5), (1, 1), (0, 0)],
                         [(s.used_cores, s.used_ways) for s in servers])

    def test_largest_instance_first(self):
        # Server 0 has one core and 2 ways free: the 2-way instance of
        # (2, 1) takes it, the 1-way one goes to server 1 (in increasing
        # order the 1-way instance would have taken server 0).
        servers = greedy.make_cluster(2, 3, 6)
        servers[0].used_cores, servers[0].used_ways = 2, 4
        _, placements = greedy.admit_first_fit(term('t', 3.0), servers,
                                               discount=0.0)
        self.assertEqual([('server-000', 2), ('server-001', 1)],
                         where(placements))

    def test_first_fit_not_best_fit(self):
        # Server 0: a core and 5 ways free; server 1: a core and 2 ways.
        # A 2-way instance goes to the first that fits, server 0; the
        # improved greedy fits it tightest, on server 1.
        def cluster():
            servers = greedy.make_cluster(2)
            servers[0].used_cores, servers[0].used_ways = 8, 13
            servers[1].used_cores, servers[1].used_ways = 8, 16
            return servers

        paper = greedy.admit_first_fit(term('t', 2.0), cluster(),
                                       discount=0.0)
        self.assertEqual((2,), paper[0].ways)
        self.assertEqual([('server-000', 2)], where(paper[1]))
        improved = greedy.admit(term('t', 2.0), cluster(), discount=0.0)
        self.assertEqual([('server-001', 2)], where(improved[1]))

    def test_fair_share_sizing_opens_a_server(self):
        # The case the improved greedy is for: server 0 has one core and
        # 8 ways; one 6-way instance would do, the paper's greedy sizes
        # two fair-share ones and opens server 1 for the second.
        prof = test_greedy.make_profile()
        target = prof.throughput_at(6) * 0.97
        servers = greedy.make_cluster(2)
        servers[0].used_cores, servers[0].used_ways = 8, 10
        sizing, placements = greedy.admit_first_fit(
            greedy.SLOTerm('t', prof, target, 25.0), servers)
        self.assertEqual((1, 1), sizing.ways)
        self.assertEqual(['server-000', 'server-001'],
                         [p.server for p in placements])

    def test_refusal_leaves_the_cluster_unchanged(self):
        servers = greedy.make_cluster(1, 3, 6)
        servers[0].used_cores, servers[0].used_ways = 1, 5
        exc = self.assertRaises(greedy.AdmissionRefused,
                                greedy.admit_first_fit, term('t', 3.0),
                                servers, discount=0.0)
        self.assertEqual(greedy.CLUSTER_CAPACITY, exc.constraint)
        self.assertEqual((1, 5), (servers[0].used_cores,
                                  servers[0].used_ways))

    def test_never_exceeds_a_server(self):
        # Random terms on a small cluster until it refuses: what was
        # admitted, counted apart, never exceeds a server's cores or
        # ways, and every admitted term gets its target.
        rng = random.Random(7)
        prof = test_greedy.make_profile()
        servers = greedy.make_cluster(6, 9, 18)
        cores = [0] * len(servers)
        ways = [0] * len(servers)
        index = {s.name: i for i, s in enumerate(servers)}
        admitted = refused = 0
        for i in range(200):
            t = greedy.SLOTerm('t%d' % i, prof, rng.uniform(0.5, 12.0),
                               rng.choice([12.0, 15.0, 20.0, 25.0]))
            before = [(s.used_cores, s.used_ways) for s in servers]
            try:
                sizing, placements = greedy.admit_first_fit(t, servers)
            except greedy.AdmissionRefused:
                refused += 1
                self.assertEqual(before, [(s.used_cores, s.used_ways)
                                          for s in servers])
                continue
            admitted += 1
            self.assertGreaterEqual(sizing.aggregate_mpps,
                                    t.throughput_mpps - 1e-9)
            self.assertEqual(list(sizing.ways),
                             sorted(sizing.ways, reverse=True))
            for p in placements:
                cores[index[p.server]] += 1
                ways[index[p.server]] += p.ways
            for j, s in enumerate(servers):
                self.assertLessEqual(cores[j], s.cores)
                self.assertLessEqual(ways[j], s.ways)
                self.assertEqual((cores[j], ways[j]),
                                 (s.used_cores, s.used_ways))
        self.assertGreater(admitted, 5)
        self.assertGreater(refused, 0)
