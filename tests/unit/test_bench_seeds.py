"""The seeds benchmark: its JSON keys and tables (issue 45)."""

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
            'bias_pct': {'2': {'mean': -1.0, 'min': -2.0, 'max': 0.5}},
            'whole_llc_bias_pct': {'2': {'mean': 9.0, 'min': 7.0,
                                         'max': 11.0}},
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
        self.assertEqual(11.0, keys['slomo_whole_llc_bias_pct']['testbed'][
            '2']['max'])
        self.assertEqual(-1.0, keys['slomo_class_bias_pct']['testbed'][
            '2']['mean'])
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
        # Every class size from 2 to 20 ways.
        self.assertEqual(tuple(range(2, 21)), over.call_args[1]['ways'])

    def test_worst_over_sizes(self):
        ways = _over_seeds()['ways']
        ways['4'] = {'mean': 3.5, 'worst_seed': 5.5, 'worst_seed_id': 7}
        worst = seeds._worst_over_sizes(ways)
        self.assertEqual({'worst_seed': 5.5, 'ways': 4, 'seed': 7,
                          'mean_max': 3.5, 'mean_max_ways': 4, 'sizes': 3,
                          'sizes_over_target': 1, 'target_pct': 5.0,
                          'met': False}, worst)
        del ways['4']
        worst = seeds._worst_over_sizes(ways)
        self.assertTrue(worst['met'])
        # A tie names the smaller class.
        self.assertEqual(2, worst['ways'])
        self.assertEqual(0, worst['sizes_over_target'])
        keys = seeds._slomo_figures({'testbed': _over_seeds()})
        self.assertTrue(keys['slomo_class_error_worst']['testbed']['met'])
        keys = seeds._one_draw_figures({'testbed': _over_seeds()})
        self.assertEqual(4.25,
                         keys['testbed']['class_error_worst']['worst_seed'])


def _grouping_doc():
    spread = {'mean': 3.0, 'worst_seed': 6.25, 'worst_seed_id': 4}
    h2h = {'wins': 5, 'ties': 3, 'losses': 2, 'mean_diff_pts': -1.2}
    return {'seeds': 10, 'scenarios': {'12nf-4cls': {
        'nfs': 12, 'classes': 4,
        'violation_pct': {'netcontainer': dict(spread),
                          'roundrobin': dict(spread, mean=8.0),
                          'heaviest': dict(spread, mean=2.0)},
        'capacity_loss_pct': {'netcontainer': dict(spread, mean=0.5)},
        'by_seed': {'netcontainer': [3.0] * 10},
        'netcontainer_vs': {'roundrobin': dict(h2h)},
        'netcontainer_vs_capacity_loss': {'roundrobin': dict(h2h)}}}}


class GroupingSeedsTest(base.TestCase):

    def test_json_keys_per_truth_and_scenario(self):
        keys = seeds._grouping_figures({'testbed': _grouping_doc()})
        self.assertEqual({'testbed': {'12nf-4cls': {
            'mean': 3.0, 'worst_seed': 6.25, 'worst_seed_id': 4}}},
            keys['netcontainer_violation_pct'])
        self.assertEqual(8.0, keys['roundrobin_violation_pct']['testbed'][
            '12nf-4cls']['mean'])
        self.assertEqual(2.0, keys['grouping_violation_pct']['testbed'][
            '12nf-4cls']['heaviest']['mean'])
        self.assertEqual(0.5, keys['grouping_capacity_loss_pct']['testbed'][
            '12nf-4cls']['netcontainer']['mean'])
        self.assertEqual(5, keys['netcontainer_vs']['testbed']['12nf-4cls'][
            'roundrobin']['wins'])
        self.assertIn('roundrobin', keys['netcontainer_vs_capacity_loss'][
            'testbed']['12nf-4cls'])
        self.assertEqual({'testbed': 10}, keys['grouping_seeds'])
        self.assertEqual({'12nf-4cls': {'nfs': 12, 'classes': 4}},
                         keys['grouping_scenarios'])
        # A second truth sits beside the testbed's.
        keys = seeds._grouping_figures({'testbed': _grouping_doc(),
                                        'trace': _grouping_doc()})
        self.assertEqual(['testbed', 'trace'],
                         sorted(keys['netcontainer_violation_pct']))

    def test_measures_the_testbed_over_the_seeds(self):
        with mock.patch.object(seeds.grouping, 'over_seeds',
                               return_value=_grouping_doc()) as over:
            by_truth = seeds._grouping(12)
        self.assertEqual(12, over.call_args[0][0])
        self.assertEqual(['testbed'], list(by_truth))
        self.assertGreaterEqual(seeds.GROUPING_SEEDS, 10)


class MainTest(base.TestCase):
    """The whole run, its parts mocked: the table and the JSON line."""

    def test_main_prints_every_key(self):
        import io
        import json

        fast = {'period_ms': 500, 'pass_ms_p95': 120.0,
                'other_chain_loss_pct': 0.0,
                'congested_chain_held_pct': 40.0}
        gains = {'unbalanced_slow': {'nfvnice_vs_rate_cost': 6.8,
                                     'nfvnice_vs_default': 3.1,
                                     'backpressure_vs_default': 1.3,
                                     'rate_cost_vs_default': -3.5}}
        row = {'aggregate_mpps': 0.58, 'nf': [{'cpu_pct': 100.0}]}
        paper3 = {'default': row, 'nfvnice': row}
        durner = {'gain_pts': {'mean': 6.0, 'max': 20.0},
                  'config': {'seeds': 200}}
        out = io.StringIO()
        with mock.patch.object(seeds, '_slomo', return_value=(
                {'testbed': _over_seeds()}, 1.0)), \
                mock.patch.object(seeds, '_nfvnice',
                                  return_value=(fast, gains, paper3)), \
                mock.patch.object(seeds, '_grouping', return_value={
                    'testbed': _grouping_doc()}), \
                mock.patch.object(seeds.durner, 'evaluate',
                                  return_value=durner), \
                mock.patch('sys.stdout', out):
            self.assertEqual(0, seeds.main([]))
        text = out.getvalue()
        doc = json.loads(text.strip().splitlines()[-1])
        self.assertEqual('seeds', doc['benchmark'])
        self.assertEqual(3.1, doc['nfvnice_gain_pct_at_period'][
            'unbalanced_slow']['nfvnice_vs_default'])
        self.assertEqual(3.0, doc['netcontainer_violation_pct']['testbed'][
            '12nf-4cls']['mean'])
        self.assertIn('slomo_class_error_worst', doc)
        self.assertIn('+6.80% / +3.10%', text)
        self.assertIn('12nf-4cls: violations 3.00% (worst seed 6.25%) vs '
                      'round-robin 8.00% (6.25%)', text)
        self.assertIn('NetContainer against the testbed', text)
