"""The seeds benchmark's SLOMO part: its JSON keys and table (issue 45)."""

from unittest import mock

from benchmarks import seeds
from tests import base


def _over_seeds():
    spread = {'mean': 2.5, 'worst_seed': 4.25, 'worst_seed_id': 3,
              'by_seed': [1.0, 2.0, 2.75, 4.25]}
    return {'seeds': 4, 'runs': 240, 'draws': 5, 'noise_pct': 0.5,
            'mixes': 30,
            'ways': {'2': dict(spread), '20': dict(spread, mean=3.0)},
            'max_abs_pct': {'2': 11.0, '20': 14.5},
            'io': {'mean': 2.0, 'worst_seed': 3.5, 'worst_seed_id': 1,
                   'by_seed': [1.0, 3.5, 2.0, 1.5]}}


class SlomoSeedsTest(base.TestCase):

    def test_json_keys_per_truth(self):
        keys = seeds._slomo_figures({'testbed': _over_seeds()})
        self.assertEqual(4, keys['seeds'])
        self.assertEqual(
            {'testbed': {
                '2': {'mean': 2.5, 'worst_seed': 4.25, 'worst_seed_id': 3},
                '20': {'mean': 3.0, 'worst_seed': 4.25,
                       'worst_seed_id': 3}}},
            keys['slomo_class_error_pct'])
        self.assertEqual({'testbed': {'mean': 2.0, 'worst_seed': 3.5,
                                      'worst_seed_id': 1}},
                         keys['slomo_io_error_seeds_pct'])
        self.assertEqual({'testbed': {'draws': 5, 'runs': 240, 'mixes': 30,
                                      'noise_pct': 0.5}},
                         keys['slomo_training'])
        # The keys of before seeds, kept.
        self.assertEqual({'2': 11.0, '20': 14.5},
                         keys['slomo_class_max_error_pct'])
        self.assertEqual(2.0, keys['slomo_io_error_pct'])
        # A second truth gets its own entry beside the testbed's.
        keys = seeds._slomo_figures({'testbed': _over_seeds(),
                                     'trace': _over_seeds()})
        self.assertEqual(['testbed', 'trace'],
                         sorted(keys['slomo_class_error_pct']))

    def test_one_draw_figures(self):
        doc = dict(_over_seeds(), draws=1)
        keys = seeds._one_draw_figures({'testbed': doc})
        self.assertEqual(1, keys['testbed']['draws'])
        self.assertEqual({'mean': 3.0, 'worst_seed': 4.25,
                          'worst_seed_id': 3},
                         keys['testbed']['class_error_pct']['20'])
        self.assertEqual(3.5, keys['testbed']['io_error_pct']['worst_seed'])

    def test_table(self):
        text = '\n'.join(seeds._slomo_table({'testbed': _over_seeds()}))
        self.assertIn('SLOMO against the testbed: 4 seeds, 5 training '
                      'draws of 240 contention runs per NF, 30 test mixes',
                      text)
        self.assertIn('2.50%', text)
        self.assertIn('4.25% (seed 3)', text)
        self.assertIn('14.5%', text)
        self.assertIn('I/O-heavy', text)

    def test_measures_the_testbed_over_the_seeds(self):
        with mock.patch.object(seeds.accuracy, 'over_seeds',
                               return_value=_over_seeds()) as over:
            by_truth, secs = seeds._slomo(7)
        self.assertEqual(7, over.call_args[0][0])
        self.assertNotIn('draws', over.call_args[1])
        self.assertEqual(['testbed'], list(by_truth))
        with mock.patch.object(seeds.accuracy, 'over_seeds',
                               return_value=_over_seeds()) as over:
            seeds._slomo(7, draws=1)
        self.assertEqual(1, over.call_args[1]['draws'])
        self.assertGreaterEqual(secs, 0)
        self.assertEqual(10, seeds.SLOMO_SEEDS)
