import copy
import random

from sklearn import ensemble as sk_ensemble

from resq_profiler.slomo import ensemble
from tests import base


def _data(n=200, seed=1):
    rng = random.Random(seed)
    xs = [[rng.uniform(0, 1e8), rng.uniform(0, 5e7), rng.randint(0, 8)]
          for _ in range(n)]
    ys = [1.0 - 0.3 * x[0] / 1e8 - 0.1 * (x[1] > 2e7) + 0.01 * x[2]
          for x in xs]
    return xs, ys


class EnsembleTest(base.TestCase):

    def test_exported_trees_predict_what_scikit_learn_predicts(self):
        xs, ys = _data()
        model = sk_ensemble.GradientBoostingRegressor(
            n_estimators=40, max_depth=3, random_state=0).fit(xs, ys)
        exported = ensemble.export(model)
        ensemble.check(exported)
        mine = ensemble.Ensemble(exported)
        probe, _ = _data(50, seed=2)
        for row, want in zip(probe, model.predict(probe)):
            self.assertAlmostEqual(want, mine.predict(row), places=9)
        self.assertEqual(40, len(exported['trees']))

    def test_fit_uses_the_default_parameters(self):
        xs, ys = _data()
        doc = ensemble.fit(xs, ys)
        self.assertEqual(ensemble.DEFAULT_PARAMS['n_estimators'],
                         len(doc['trees']))
        self.assertEqual(3, doc['n_features'])
        self.assertRaises(ValueError, ensemble.Ensemble(doc).predict, [1.0])

    def test_check_refuses_broken_trees(self):
        xs, ys = _data()
        doc = ensemble.fit(xs, ys, {'n_estimators': 3})
        cases = []
        bad = copy.deepcopy(doc)
        bad['trees'][1]['left'][0] = 0      # a loop back to the root
        cases.append((bad, 'fresh node'))
        bad = copy.deepcopy(doc)
        bad['trees'][0]['feature'][0] = 7
        cases.append((bad, 'feature 7 of 3'))
        bad = copy.deepcopy(doc)
        bad['trees'][2]['value'].pop()
        cases.append((bad, '"value" has'))
        bad = copy.deepcopy(doc)
        bad['trees'][0]['threshold'][0] = float('nan')
        cases.append((bad, 'non-finite'))
        for bad, text in cases:
            exc = self.assertRaises(ValueError, ensemble.check, bad)
            self.assertIn(text, str(exc))
            self.assertIn('ensemble.trees[', str(exc))


class MeanTest(base.TestCase):
    """One ensemble for the mean of fits (bagging over training draws)."""

    def test_predicts_the_mean_of_its_fits(self):
        fits = [ensemble.fit(*_data(120, seed=s), {'n_estimators': 15})
                for s in (1, 2, 3)]
        mean = ensemble.mean(fits)
        ensemble.check(mean)
        self.assertEqual(45, len(mean['trees']))
        self.assertEqual(3, mean['n_features'])
        each = [ensemble.Ensemble(f) for f in fits]
        model = ensemble.Ensemble(mean)
        probe, _ = _data(40, seed=9)
        for row in probe:
            self.assertAlmostEqual(sum(e.predict(row) for e in each) / 3,
                                   model.predict(row), places=9)
        # The fits are left as they were.
        self.assertEqual(15, len(fits[0]['trees']))
        self.assertEqual(
            ensemble.fit(*_data(120, seed=1), {'n_estimators': 15}), fits[0])

    def test_one_fit_is_itself(self):
        fit = ensemble.fit(*_data(), {'n_estimators': 5})
        self.assertIs(fit, ensemble.mean([fit]))

    def test_refuses_what_has_no_mean(self):
        self.assertRaises(ValueError, ensemble.mean, [])
        xs, ys = _data()
        a = ensemble.fit(xs, ys, {'n_estimators': 5})
        b = ensemble.fit(xs, ys, {'n_estimators': 5, 'learning_rate': 0.2})
        exc = self.assertRaises(ValueError, ensemble.mean, [a, b])
        self.assertIn('one learning rate', str(exc))
        c = ensemble.fit([x[:2] for x in xs], ys, {'n_estimators': 5})
        self.assertRaises(ValueError, ensemble.mean, [a, c])
