import functools

from resq_nova.evaluation import cluster
from resq_nova.evaluation import run
from resq_nova.evaluation import schemes
from resq_nova.evaluation import slosets
from tests import base


@functools.lru_cache(maxsize=1)
def _profiles():
    t = base.TestCase('run')
    t.setUp()
    try:
        return run.profile_catalog(t.conf)
    finally:
        t.doCleanups()


class SloSetTest(base.TestCase):

    def test_deterministic_and_classed(self):
        profiles = _profiles()
        a = slosets.make('sensitive', profiles, 40, seed=3)
        b = slosets.make('sensitive', profiles, 40, seed=3)
        c = slosets.make('sensitive', profiles, 40, seed=4)
        self.assertEqual([t.name for t in a], [t.name for t in b])
        self.assertNotEqual([t.name for t in a], [t.name for t in c])
        self.assertEqual({'LPM', 'MazuNAT', 'Snort', 'Stats'},
                         {t.profile.name for t in a})
        for t in a:
            self.assertAlmostEqual(0.9 * t.profile.peak_mpps,
                                   t.throughput_mpps)
            self.assertAlmostEqual(t.profile.latency_at(1.0),
                                   t.latency_p95_us)

    def test_bad_input(self):
        self.assertRaises(slosets.UnknownSet, slosets.make, 'spicy',
                          _profiles())
        self.assertRaises(ValueError, slosets.make, 'mixed', _profiles(), 0)


class SchemesTest(base.TestCase):
    """The expected shape of ResQ §6 on small sets."""

    def place(self, set_name, scheme, terms=36):
        slo = slosets.make(set_name, _profiles(), terms, seed=1)
        placed = schemes.SCHEMES[scheme](slo, 9, 18, time_limit=30)
        outcome = cluster.ground_truth(placed)
        self.assertEqual({t.name for t in slo}, set(outcome))
        return placed, outcome

    def violated(self, outcome):
        return sum(o.violated for o in outcome.values()) / len(outcome)

    def test_resq_never_violates(self):
        for set_name in slosets.SETS:
            for scheme in ('resq_greedy', 'resq_optimal'):
                placed, outcome = self.place(set_name, scheme)
                self.assertEqual(0, self.violated(outcome),
                                 (set_name, scheme))
                self._check_cat(placed)

    def _check_cat(self, placed):
        by_server = {}
        for p in placed:
            by_server.setdefault(p.server, []).append(p)
        for members in by_server.values():
            self.assertLessEqual(len(members), 9)
            used = [w for p in members for w in p.partition]
            self.assertEqual(len(used), len(set(used)))  # disjoint
            self.assertTrue(all(w < cluster.USABLE_WAYS for w in used))
            self.assertIsNotNone(members[0].dma_buffers)

    def test_contention_agnostic_violates_sensitive_terms(self):
        _, outcome = self.place('sensitive', 'agnostic')
        self.assertGreater(self.violated(outcome), 0.5)
        _, outcome = self.place('sensitive', 'even_cat')
        self.assertGreater(self.violated(outcome), 0.5)

    def test_insensitive_set_ties(self):
        counts = {s: cluster.servers_used(self.place('insensitive', s)[0])
                  for s in schemes.NAMES}
        self.assertEqual(1, len(set(counts.values())), counts)

    def test_optimal_no_worse_than_greedy_and_prediction_costly(self):
        greedy, _ = self.place('sensitive', 'resq_greedy')
        optimal, _ = self.place('sensitive', 'resq_optimal')
        pred, outcome = self.place('sensitive', 'prediction')
        self.assertLessEqual(cluster.servers_used(optimal),
                             cluster.servers_used(greedy))
        self.assertGreater(cluster.servers_used(pred),
                           cluster.servers_used(greedy))
        self.assertEqual(0, self.violated(outcome))

    def test_elastic_meets_throughput(self):
        _, outcome = self.place('mixed', 'elastic')
        self.assertFalse(any(o.throughput_violated
                             for o in outcome.values()))


class EvaluateTest(base.TestCase):

    def test_document_shape(self):
        doc = run.evaluate(self.conf, ['mixed'], ['agnostic',
                                                  'resq_greedy',
                                                  'resq_optimal'],
                           terms=20, time_limit=20)
        rows = doc['sets']['mixed']
        self.assertEqual({'agnostic', 'resq_greedy', 'resq_optimal'},
                         set(rows))
        for row in rows.values():
            self.assertIn('servers', row)
            self.assertIn('violation_pct', row)
        self.assertIn('gap_pct', rows['resq_optimal'])
        self.assertGreaterEqual(doc['ratios']['mixed']['greedy_to_optimal'],
                                1.0)
        self.assertIn('resq_optimal', run.table(doc))
        self.assertEqual({'resq', 'durner', 'shared'},
                         set(doc['on_demand']['policies']))

    def test_bad_input(self):
        for kwargs in ({'cores': 0}, {'ways': 19}, {'time_limit': 0}):
            self.assertRaises(ValueError, run.evaluate, self.conf, ['mixed'],
                              ['agnostic'], terms=5, **kwargs)
        self.assertRaises(ValueError, run.evaluate, self.conf, ['mixed'],
                          ['magic'], terms=5)
        self.assertRaises(slosets.UnknownSet, run.evaluate, self.conf,
                          ['spicy'], ['agnostic'], terms=5)
