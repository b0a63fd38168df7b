"""One seed for every draw, and the spread of a run over several seeds."""

import functools
import json

from resq_nova.evaluation import run
from resq_nova.evaluation import seeds
from tests import base

# The smallest evaluation: the three NFs of the insensitive set, nine
# terms, the three ResQ schemes (the predictors profile every NF).
TINY = dict(sets=['insensitive'],
            schemes=['resq_greedy_paper', 'resq_greedy', 'resq_optimal'],
            terms=9, time_limit=20)


def _run(**kwargs):
    t = base.TestCase('run')
    t.setUp()
    try:
        args = dict(TINY, **kwargs)
        return run.evaluate(t.conf, args.pop('sets'), args.pop('schemes'),
                            **args)
    finally:
        t.doCleanups()


@functools.lru_cache(maxsize=None)
def _doc(seed):
    return _run(seed=seed)


@functools.lru_cache(maxsize=1)
def _spread_doc():
    return _run(seeds='3-4')


def _canonical(doc):
    return json.dumps(run.without_timings(doc), sort_keys=True)


class SeedTest(base.TestCase):

    def test_same_seed_same_document(self):
        # Two runs of seed 3: the --seeds run's first document and a run
        # of its own. Only the timings differ.
        again = dict(_spread_doc())
        again.pop('seed_spread')
        again['config'] = dict(again['config'])
        self.assertEqual([3, 4], again['config'].pop('seeds'))
        self.assertEqual(_canonical(_doc(3)), _canonical(again))
        self.assertIn('seconds', _doc(3)['sets']['insensitive'][
            'resq_greedy'])

    def test_seed_reseeds_the_profilers_noise(self):
        a, b = _doc(3)['profiles'], _doc(4)['profiles']
        self.assertEqual({'Efficuts', 'Firewall', 'IPsec'},
                         set(a['per_nf']))
        for nf in a['per_nf']:
            # Different noise, different measured curves, every NF.
            self.assertNotEqual(a['per_nf'][nf]['throughput'],
                                b['per_nf'][nf]['throughput'], nf)
            self.assertNotEqual(a['per_nf'][nf]['latency'],
                                b['per_nf'][nf]['latency'], nf)
        self.assertEqual(seeds.sub_seeds(4), _doc(4)['config']['sub_seeds'])
        self.assertEqual(4, _doc(4)['on_demand']['config']['seed'])
        # The noise is noise: both stay close to the testbed.
        for doc in (_doc(3), _doc(4)):
            self.assertLess(doc['profiles']['throughput_error_max_pct'], 5)

    def test_seed_overrides_model_seed(self):
        # A configured [resq_profiler] model_seed does not change what a
        # seed measures.
        self.flags('resq_profiler', model_seed=4)
        profiles = run.profile_catalog(self.conf, noise_pct=0.5, seed=3,
                                       names=['Firewall'])
        self.assertEqual(
            _doc(3)['profiles']['per_nf']['Firewall']['throughput'],
            [[int(w), round(t, 4)] for w, t in
             profiles['Firewall'].throughput])

    def test_spread_of_a_run(self):
        spread = _spread_doc()['seed_spread']
        self.assertEqual([3, 4], spread['seeds'])
        docs = [_doc(3), _doc(4)]
        for path in (('sets', 'insensitive', 'resq_greedy_paper',
                      'servers'),
                     ('sets', 'insensitive', 'resq_optimal',
                      'violation_pct'),
                     ('ratios', 'insensitive', 'paper_greedy_to_optimal'),
                     ('profiles', 'runs_median'),
                     ('on_demand', 'policies', 'resq', 'violation_pct')):
            values = []
            for doc in docs:
                for key in path:
                    doc = doc[key]
                values.append(doc)
            stat = spread['numbers']
            for key in path:
                stat = stat[key]
            self.assertEqual({'min': min(values), 'max': max(values),
                              'median': (values[0] + values[1]) / 2,
                              'values': values}, stat, path)
        text = run.table(_spread_doc())
        self.assertIn('spread over 2 seeds (3-4), min/median/max', text)
        self.assertIn('paper_greedy_to_optimal', text)

    def test_both_greedies_in_the_document(self):
        doc = _doc(3)
        rows = doc['sets']['insensitive']
        ratios = doc['ratios']['insensitive']
        best = rows['resq_optimal']['servers']
        self.assertEqual(round(rows['resq_greedy']['servers'] / best, 4),
                         ratios['greedy_to_optimal'])
        self.assertEqual(round(rows['resq_greedy_paper']['servers'] / best,
                               4), ratios['paper_greedy_to_optimal'])
        text = run.table(doc)
        self.assertIn('resq-nova greedy %d (' % rows['resq_greedy'][
            'servers'], text)
        self.assertIn('ResQ greedy (paper) %d (' % rows['resq_greedy_paper'][
            'servers'], text)


class SpreadTest(base.TestCase):
    """The statistics, on documents made up by hand."""

    def doc(self, servers, pred=None, policy=1.0):
        rows = {'s': {'servers': servers, 'violation_pct': 0.0,
                      'solver_status': 'optimal'}}
        if pred is not None:
            rows['s']['prediction_error_pct'] = pred
        return {'sets': {'mixed': rows},
                'ratios': {'mixed': {'greedy_to_optimal': servers / 10}},
                'on_demand': {'policies': {'resq': {'violation_pct':
                                                    policy}}},
                'chains': {'x': {'default': {'drop_pct': 1.0}}}}

    def test_min_median_max(self):
        docs = [self.doc(12, 1.0, 3.0), self.doc(10, None, 1.0),
                self.doc(15, 2.0, 2.0), self.doc(11, 4.0, 5.0)]
        got = seeds.spread(docs, [5, 6, 7, 8])
        self.assertEqual([5, 6, 7, 8], got['seeds'])
        row = got['numbers']['sets']['mixed']['s']
        self.assertEqual({'min': 10, 'median': 11.5, 'max': 15,
                          'values': [12, 10, 15, 11]}, row['servers'])
        # A number a seed lacks is null there and left out of the
        # statistics.
        self.assertEqual({'min': 1.0, 'median': 2.0, 'max': 4.0,
                          'values': [1.0, None, 2.0, 4.0]},
                         row['prediction_error_pct'])
        ratio = got['numbers']['ratios']['mixed']['greedy_to_optimal']
        self.assertAlmostEqual(1.15, ratio['median'])
        self.assertEqual((1.0, 1.5), (ratio['min'], ratio['max']))
        self.assertEqual(2.5, got['numbers']['on_demand']['policies'][
            'resq']['violation_pct']['median'])
        # Strings and sections without draws are not headline numbers.
        self.assertNotIn('solver_status', row)
        self.assertNotIn('chains', got['numbers'])

    def test_odd_count_and_one_seed(self):
        got = seeds.spread([self.doc(3), self.doc(9), self.doc(4)],
                           [0, 1, 2])
        self.assertEqual(4, got['numbers']['sets']['mixed']['s'][
            'servers']['median'])
        one = seeds.spread([self.doc(3)], [0])
        self.assertEqual({'min': 3, 'median': 3, 'max': 3, 'values': [3]},
                         one['numbers']['sets']['mixed']['s']['servers'])
        self.assertRaises(ValueError, seeds.spread, [self.doc(3)], [0, 1])
        self.assertIn('spread over 1 seed (0)', seeds.table(one))

    def test_parse(self):
        self.assertEqual(list(range(10)), seeds.parse('0-9'))
        self.assertEqual([4], seeds.parse('4'))
        self.assertEqual([1, 5, 6, 7], seeds.parse('1, 5-7'))
        for bad in ('', 'a-b', '5-3', '-1', '0-100', '1,1', '1-2-3'):
            self.assertRaises(ValueError, seeds.parse, bad)

    def test_sub_seeds_cover_every_draw(self):
        self.assertEqual({name for name, _ in seeds.DRAWS},
                         set(seeds.sub_seeds(7)))
        self.assertEqual(seeds.sub_seeds(7), seeds.sub_seeds(7))
        self.assertNotEqual(seeds.sub_seeds(7), seeds.sub_seeds(8))

    def test_bad_seeds_fail_before_anything_runs(self):
        self.assertRaises(ValueError, run.evaluate, self.conf, ['mixed'],
                          ['agnostic'], terms=5, seeds='9-1')
