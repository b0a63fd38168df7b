from resq_common import profile as profile_mod
from resq_nova.admission import greedy
from tests import base
from tests.unit.resq_profiler import test_profile


def make_profile(**changes):
    return profile_mod.Profile.from_dict(test_profile.make_doc(**changes))


class SizeTest(base.TestCase):
    """The test profile: 3, 4, 4.5, 5 ... 5.5 Mpps at 1, 2, 3, 4 ... 20."""

    def setUp(self):
        super().setUp()
        self.prof = make_profile()

    def test_k_from_fair_share_then_round_robin_ways(self):
        # Fair share 18/9 = 2 ways: 4 Mpps * 0.97 = 3.88 per instance.
        term = greedy.SLOTerm('t', self.prof, 10.0, 25.0)
        sizing = greedy.size(term, 9, 18)
        self.assertEqual(0.97, sizing.load_cap)
        self.assertEqual(3, sizing.instances)
        # Start at 1 way each (3 * 2.91 = 8.73), then round-robin:
        # 2,1,1 -> 9.7; 2,2,1 -> 10.67 >= 10.
        self.assertEqual((2, 2, 1), sizing.ways)
        self.assertGreaterEqual(sizing.aggregate_mpps, 10.0)
        self.assertAlmostEqual(0.97 * (4 + 4 + 3), sizing.aggregate_mpps)

    def test_latency_target_lowers_the_load_cap(self):
        term = greedy.SLOTerm('t', self.prof, 10.0, 12.0)
        sizing = greedy.size(term, 9, 18)
        self.assertAlmostEqual(0.5 * 0.97, sizing.load_cap)
        self.assertEqual(6, sizing.instances)

    def test_discount_is_configurable(self):
        term = greedy.SLOTerm('t', self.prof, 2.9, 25.0)
        self.assertEqual((1,), greedy.size(term, 9, 18, 0.0).ways)
        self.assertEqual((2,), greedy.size(term, 9, 18, 0.1).ways)

    def test_refusals_name_the_constraint(self):
        exc = self.assertRaises(
            greedy.AdmissionRefused, greedy.size,
            greedy.SLOTerm('fast', self.prof, 1.0, 5.0), 9, 18)
        self.assertEqual(greedy.LATENCY, exc.constraint)
        self.assertIn('below the floor', str(exc))
        self.assertIn('fast', str(exc))
        exc = self.assertRaises(
            greedy.AdmissionRefused, greedy.size,
            greedy.SLOTerm('big', self.prof, 100.0, 25.0, max_instances=4),
            9, 18)
        self.assertEqual(greedy.INSTANCES, exc.constraint)
        self.assertIn('at most 4', str(exc))
        exc = self.assertRaises(
            greedy.AdmissionRefused, greedy.size,
            greedy.SLOTerm('mtu', self.prof, 1.0, 25.0, packet_bytes=1518),
            9, 18)
        self.assertEqual(greedy.PROFILE, exc.constraint)
        self.assertIn('1518', str(exc))
        self.assertRaises(greedy.AdmissionRefused, greedy.size,
                          greedy.SLOTerm('zero', self.prof, 0, 25.0), 9, 18)


class PlaceTest(base.TestCase):

    def test_first_fit_decreasing(self):
        servers = greedy.make_cluster(3, cores=2, ways=6)
        sizing = greedy.Sizing('t', 1.0, (4, 3, 2, 1), (1, 1, 1, 1))
        placements = greedy.place(sizing, servers)
        self.assertEqual([('server-000', 4), ('server-001', 3),
                          ('server-000', 2), ('server-001', 1)],
                         [(p.server, p.ways) for p in placements])
        self.assertEqual([2, 2, 0], [s.used_cores for s in servers])
        self.assertEqual([6, 4, 0], [s.used_ways for s in servers])

    def test_refusal_leaves_cluster_unchanged(self):
        servers = greedy.make_cluster(2, cores=2, ways=6)
        servers[0].used_cores, servers[0].used_ways = 1, 5
        before = [(s.used_cores, s.used_ways) for s in servers]
        # 4 ways fit only server-001; the 3-way instance then fits nowhere
        # although 3 cores and 7 ways are free in total.
        exc = self.assertRaises(greedy.AdmissionRefused, greedy.place,
                                greedy.Sizing('t', 1.0, (4, 3), (1, 1)),
                                servers)
        self.assertEqual(greedy.NO_ROOM, exc.constraint)
        self.assertIn('instance 1 needs a core and 3 ways', str(exc))
        self.assertEqual(before, [(s.used_cores, s.used_ways)
                                  for s in servers])

    def test_cluster_capacity(self):
        servers = greedy.make_cluster(1, cores=2, ways=6)
        exc = self.assertRaises(greedy.AdmissionRefused, greedy.place,
                                greedy.Sizing('t', 1.0, (1, 1, 1), (1,) * 3),
                                servers)
        self.assertEqual(greedy.CLUSTER_CAPACITY, exc.constraint)
        self.assertIn('needs 3 cores', str(exc))
        self.assertIn('2 cores and 6 ways free', str(exc))

    def test_admit_is_online_and_incremental(self):
        prof = make_profile()
        servers = greedy.make_cluster(2)
        greedy.admit(greedy.SLOTerm('a', prof, 10.0, 25.0), servers)
        greedy.admit(greedy.SLOTerm('b', prof, 10.0, 25.0), servers)
        self.assertEqual([6, 0], [s.used_cores for s in servers])
        self.assertEqual([10, 0], [s.used_ways for s in servers])

    def test_make_cluster_rejects_nonsense(self):
        self.assertRaises(ValueError, greedy.make_cluster, 0)
        self.assertRaises(ValueError, greedy.make_cluster, 2, cores=0)


class OnlineGreedyTest(base.TestCase):
    """The improved online greedy's decisions on cases with a known best."""

    def setUp(self):
        super().setUp()
        self.prof = make_profile()

    def test_fills_what_is_free_instead_of_opening_a_server(self):
        # server-000 has one core and 8 ways free. One 6-way instance meets
        # the target; ResQ's greedy sizes two fair-share instances and
        # first fit has to open server-001 for the second.
        servers = greedy.make_cluster(2)
        servers[0].used_cores, servers[0].used_ways = 8, 10
        target = self.prof.throughput_at(6) * 0.97
        term = greedy.SLOTerm('t', self.prof, target, 25.0)
        self.assertEqual(2, greedy.size(term, 9, 18).instances)
        sizing, placements = greedy.admit(term, servers)
        self.assertEqual(1, sizing.instances)
        self.assertGreaterEqual(sizing.aggregate_mpps, target - 1e-9)
        self.assertEqual({'server-000'}, {p.server for p in placements})
        self.assertEqual((9, 0), (servers[0].used_cores,
                                  servers[1].used_cores))
        self.assertLessEqual(servers[0].used_ways, 18)

    def test_trades_cores_for_ways_by_their_scarcity(self):
        # 4.85 Mpps: one instance of 4 ways, or two of 1 way; both fit in
        # server-000. Where ways are scarce it takes two 1-way instances,
        # where cores are scarce one 4-way instance: the other choice
        # would strand the resource left over.
        target = self.prof.throughput_at(4) * 0.97
        for used, want in (((1, 14), (1, 1)), ((7, 2), (4,))):
            servers = greedy.make_cluster(2)
            servers[0].used_cores, servers[0].used_ways = used
            core_price, way_price = greedy.prices(servers)
            self.assertAlmostEqual(2.0, core_price + way_price)
            term = greedy.SLOTerm('t', self.prof, target, 25.0)
            sizing, placements = greedy.admit(term, servers)
            self.assertEqual(want, sizing.ways)
            self.assertEqual({'server-000'}, {p.server for p in placements})
        # Nothing placed yet: equal prices, and the fewer instances.
        servers = greedy.make_cluster(2)
        self.assertEqual((1.0, 1.0), greedy.prices(servers))
        sizing, _ = greedy.admit(greedy.SLOTerm('t', self.prof, target,
                                                25.0), servers)
        self.assertEqual((4,), sizing.ways)

    def test_every_option_meets_the_target_and_the_limits(self):
        term = greedy.SLOTerm('t', self.prof, 12.0, 25.0, max_instances=4)
        options = greedy.sizings(term, 9, 18)
        self.assertEqual(greedy.size(term, 9, 18), options[0])
        self.assertGreater(len(options), 1)
        for option in options:
            self.assertGreaterEqual(option.aggregate_mpps, 12.0 - 1e-9)
            self.assertLessEqual(option.instances, 4)
            self.assertTrue(all(1 <= w <= 18 for w in option.ways))

    def test_sizings_are_shared_by_name_not_across_profiles(self):
        term = greedy.SLOTerm('a', self.prof, 12.0, 25.0)
        first = greedy.sizings(term, 9, 18)
        again = greedy.sizings(greedy.SLOTerm('b', self.prof, 12.0, 25.0),
                               9, 18)
        self.assertEqual([s.ways for s in first], [s.ways for s in again])
        self.assertEqual({'b'}, {s.term for s in again})
        self.assertEqual({'a'}, {s.term for s in first})
        # Another profile object with a slower curve gets its own answer.
        slow = make_profile(**{'throughput.points': [
            [1, 1.5], [2, 2.0], [4, 2.5], [20, 2.75]]})
        other = greedy.sizings(greedy.SLOTerm('c', slow, 12.0, 25.0), 9, 18)
        self.assertGreater(other[0].instances, first[0].instances)

    def test_best_fit_scans_only_servers_in_use_and_ties_go_low(self):
        # Two servers in use with the same room, empties around them: the
        # instance goes to the lower index among the in-use ones, and an
        # instance that fits nowhere in use opens the first empty server
        # it fits.
        servers = greedy.make_cluster(6)
        for i in (2, 4):
            servers[i].used_cores, servers[i].used_ways = 8, 14
        servers[0].cores = 0  # empty but with no core: never opened
        sizing = greedy.Sizing('t', 1.0, (4, 2, 2), (1.0, 1.0, 1.0))
        opened, where = greedy._best_fit(sizing, servers)
        self.assertEqual((1, [2, 4, 1]), (opened, where))

    def test_refusal_keeps_its_explanation(self):
        servers = greedy.make_cluster(1, cores=2, ways=4)
        servers[0].used_cores, servers[0].used_ways = 1, 1
        term = greedy.SLOTerm('t', self.prof, 10.0, 25.0)
        exc = self.assertRaises(greedy.AdmissionRefused, greedy.admit, term,
                                servers)
        self.assertEqual(greedy.CLUSTER_CAPACITY, exc.constraint)
        self.assertEqual((1, 1), (servers[0].used_cores,
                                  servers[0].used_ways))


class BatchAdmissionTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.prof = make_profile()

    def test_jointly_on_top_of_what_is_placed(self):
        servers = greedy.make_cluster(4)
        servers[0].used_cores, servers[0].used_ways = 5, 9
        terms = [greedy.SLOTerm('chain-%d' % i, self.prof, 8.0, 25.0)
                 for i in range(3)]
        admitted, how = greedy.admit_batch(terms, servers, time_limit=30)
        self.assertEqual('milp', how)
        self.assertEqual({'chain-0', 'chain-1', 'chain-2'}, set(admitted))
        for term in terms:
            sizing, placements = admitted[term.name]
            self.assertGreaterEqual(sizing.aggregate_mpps, 8.0 - 1e-9)
            self.assertEqual(sizing.instances, len(placements))
        for server in servers:
            self.assertLessEqual(server.used_cores, server.cores)
            self.assertLessEqual(server.used_ways, server.ways)
        # No more servers than admitting them one by one needs.
        alone = greedy.make_cluster(4)
        alone[0].used_cores, alone[0].used_ways = 5, 9
        for term in terms:
            greedy.admit(term, alone)
        self.assertLessEqual(sum(1 for s in servers if s.used_cores),
                             sum(1 for s in alone if s.used_cores))
        self.assertGreater(servers[0].used_cores, 5)

    def test_whole_or_nothing_with_every_reason(self):
        servers = greedy.make_cluster(1)
        terms = [greedy.SLOTerm('ok', self.prof, 5.0, 25.0),
                 greedy.SLOTerm('slow', self.prof, 5.0, 1.0),
                 greedy.SLOTerm('big', self.prof, 80.0, 25.0)]
        exc = self.assertRaises(greedy.BatchRefused, greedy.admit_batch,
                                terms, servers, time_limit=10)
        self.assertIn('slow (latency)', str(exc))
        self.assertEqual(['slow'], [r.term for r in exc.refusals])
        exc = self.assertRaises(greedy.BatchRefused, greedy.admit_batch,
                                [terms[0], terms[2]], servers,
                                time_limit=10)
        self.assertIn('big (', str(exc))
        self.assertEqual((0, 0), (servers[0].used_cores,
                                  servers[0].used_ways))
