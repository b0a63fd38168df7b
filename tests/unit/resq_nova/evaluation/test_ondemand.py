import os

from resq_nova.evaluation import figures
from resq_nova.evaluation import ondemand
from resq_profiler import plot
from tests import base


class OnDemandSimulationTest(base.TestCase):

    def test_policies_side_by_side(self):
        doc = ondemand.evaluate(periods=40)
        self.assertEqual(set(ondemand.POLICIES), set(doc['policies']))
        shared = doc['policies']['shared']
        resq = doc['policies']['resq']
        # One class, never moved, nothing isolated.
        self.assertEqual((0, 0.0, 1), (shared['moves'],
                                       shared['ways_isolated'],
                                       shared['classes']))
        # The max-min split isolates and lowers violations against the
        # shared class on the same traffic.
        self.assertGreater(resq['ways_isolated'], 0)
        self.assertLess(resq['violation_pct'], shared['violation_pct'])
        self.assertGreater(doc['policies']['durner']['moves'], 0)
        self.assertIn('violation%', ondemand.table(doc))
        # Deterministic for a seed.
        self.assertEqual(doc, ondemand.evaluate(periods=40))

    def test_steady_traffic_converges(self):
        f = ondemand.run_policy('resq', nfs=8, swing=0.0, noise=0.0,
                                mean_load=0.85, periods=20)
        self.assertIsNotNone(f['rounds'])
        self.assertLess(f['rounds'], 12)

    def test_bad_input_is_named(self):
        self.assertRaisesRegex(ValueError, 'at least one NF',
                               ondemand.run_policy, 'resq', nfs=0)
        self.assertRaisesRegex(ValueError, 'does not fit the 20-way',
                               ondemand.run_policy, 'resq', lease_ways=19)
        self.assertRaisesRegex(ValueError, "'lru'", ondemand.run_policy,
                               'lru')

    def test_figure(self):
        doc = ondemand.evaluate(periods=5)
        path = os.path.join(self.tmp, 'ondemand.png')
        plot.save_figure(figures.ondemand(doc), path)
        with open(path, 'rb') as f:
            self.assertEqual(b'\x89PNG', f.read(4))
