import json

from resq_profiler import budget
from resq_profiler import catalog
from tests import base


def _point(runs, err_max, err_median=None):
    return {'runs_median': runs, 'runs_max': runs,
            'error_pct_median': err_max if err_median is None
            else err_median, 'error_pct_max': err_max, 'profiles': 1}


class ClaimTest(base.TestCase):

    def test_claim_needs_both_runs_and_error(self):
        self.assertEqual((False, None), budget.claim_holds(
            {'6': _point(6, 3.0), '12': _point(12, 1.2),
             'auto': _point(29, 0.9)}))
        self.assertEqual((True, '12'), budget.claim_holds(
            {'6': _point(6, 3.0), '12': _point(12, 1.0),
             'auto': _point(13, 0.5)}))
        # The worst profile counts, not the median one.
        self.assertEqual((False, None), budget.claim_holds(
            {'12': _point(12, 1.5, err_median=0.2)}))
        # The limits are the paper's unless given.
        self.assertEqual((True, '18'), budget.claim_holds(
            {'18': _point(18, 0.4)}, runs=20))

    def test_claim_for_the_median_profile(self):
        curve = {'12': _point(12, 1.5, err_median=0.8),
                 'auto': _point(20, 0.9, err_median=0.4)}
        self.assertEqual((False, None), budget.claim_holds(curve))
        self.assertEqual((True, '12'), budget.claim_holds(
            curve, stat='error_pct_median'))

    def test_runs_for_error_is_the_first_budget_within_it(self):
        curve = {'6': _point(6, 3.0), '12': _point(12, 1.2),
                 '18': _point(17, 0.9), 'auto': _point(29, 0.5)}
        self.assertEqual(17, budget.runs_for_error(curve))
        self.assertEqual(29, budget.runs_for_error(curve, error_pct=0.6))
        self.assertIsNone(budget.runs_for_error(curve, error_pct=0.1))

    def test_summarise_is_median_and_worst(self):
        point = budget.summarise([(10, 0.5), (14, 2.0), (12, 0.25)])
        self.assertEqual({'runs_median': 12, 'runs_max': 14,
                          'error_pct_median': 0.5, 'error_pct_max': 2.0,
                          'profiles': 3}, point)

    def test_keys(self):
        self.assertEqual('0.5', budget.key(0.5))
        self.assertEqual('0', budget.key(0.0))
        self.assertEqual('1', budget.key(1.0))
        self.assertEqual('auto', budget.key(None))


class TradeoffTest(base.TestCase):

    NFS = ('IPsec', 'Stats')

    def test_noisy_tradeoff(self):
        noise = 0.5
        out = budget.tradeoff(noise_levels=(noise,), seeds=(0,),
                              budgets=(6, 12), kind='testbed', nfs=self.NFS)
        json.dumps(out)
        self.assertEqual(['6', '12', 'auto'], out['budgets'])
        curve = out['curve']['0.5']
        self.assertEqual(['6', '12', 'auto'], list(curve))
        for b in (6, 12):
            point = curve[str(b)]
            self.assertEqual(len(self.NFS), point['profiles'])
            # A budget caps the runs of every profile.
            self.assertLessEqual(point['runs_max'], b)
        # More budget never makes the median profile worse beyond the
        # noise of one measurement.
        errs = [curve[k]['error_pct_median'] for k in out['budgets']]
        for fewer, more in zip(errs, errs[1:]):
            self.assertLessEqual(more, fewer + noise)
        self.assertLess(errs[-1], errs[0])
        # The headline figures are the profiler's own stopping rule ...
        self.assertEqual(curve['auto']['runs_median'],
                         out['runs_median_by_noise']['0.5'])
        self.assertEqual(curve['auto']['error_pct_max'],
                         out['error_pct_by_noise']['0.5'])
        # ... and the claim flag follows from the curve.
        self.assertEqual(budget.claim_holds(curve),
                         (out['paper_claim_holds']['0.5'],
                          out['paper_claim_budget']['0.5']))
        self.assertEqual(
            budget.claim_holds(curve, stat='error_pct_median')[0],
            out['paper_claim_holds_median_profile']['0.5'])
        self.assertEqual(budget.runs_for_error(curve),
                         out['runs_for_paper_error']['0.5'])

    def test_noiseless_runs_one_seed_and_meets_the_claim(self):
        out = budget.tradeoff(noise_levels=(0.0,), seeds=(0, 1, 2),
                              budgets=(), kind='nfmodel', nfs=('Stats',))
        point = out['curve']['0']['auto']
        # Seeds of a noiseless level would repeat it: one profile.
        self.assertEqual(1, point['profiles'])
        self.assertLessEqual(point['runs_max'], budget.PAPER_RUNS)
        self.assertLessEqual(point['error_pct_max'], budget.PAPER_ERROR_PCT)
        self.assertTrue(out['paper_claim_holds']['0'])
        self.assertEqual('auto', out['paper_claim_budget']['0'])

    def test_bad_arguments_say_what_to_fix(self):
        cases = [
            ({'kind': 'hardware'}, 'kind must be one of nfmodel, testbed'),
            ({'noise_levels': ()}, 'at least one noise level'),
            ({'noise_levels': (-1.0,)}, 'percentages from 0 to 20'),
            ({'noise_levels': ('0.5',)}, 'percentages from 0 to 20'),
            ({'seeds': ()}, 'seeds must be a non-empty sequence'),
            ({'seeds': (0.5,)}, 'seeds must be a non-empty sequence'),
            ({'budgets': (5,)}, 'integers of at least 6'),
            ({'budgets': (12.5,)}, 'integers of at least 6'),
            ({'nfs': ('Bogus',)}, 'unknown NF(s) Bogus'),
        ]
        for kwargs, message in cases:
            err = self.assertRaises(ValueError, budget.tradeoff, **kwargs)
            self.assertIn(message, str(err), kwargs)
        err = self.assertRaises(ValueError, budget.tradeoff,
                                nfs=('Bogus',))
        self.assertIn(', '.join(catalog.names()), str(err))
