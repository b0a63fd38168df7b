"""SLOMO inside a class of service, and models trained before it."""

import statistics

from resq_profiler import catalog
from resq_profiler import nfmodel
from resq_profiler.slomo import document
from resq_profiler.slomo import ensemble
from resq_profiler.slomo import metrics
from resq_profiler.slomo import sharing
from resq_profiler.slomo import training
from resq_profiler import truth
from tests import base
from tests.unit.resq_profiler.slomo import util


def observed(members, ways):
    part = frozenset(range(ways))
    return [o.capacity_mpps for o in truth.simulate_server(
        [nfmodel.Instance(catalog.get(n), part) for n in members])]


def v1_doc(name):
    """A format-version-1 document: whole-LLC features only."""
    doc = dict(util.trained_doc(name))
    d = util.driver(name)
    _, _, xs, ys = training.rows(d, runs=12)
    n = len(metrics.FEATURES_V1)
    fitted = ensemble.fit([x[:n] for x in xs], ys, {'n_estimators': 5})
    doc.update(format_version=1, features=list(metrics.FEATURES_V1),
               ensemble=fitted)
    return document.seal(doc)


class ClassSizeTest(base.TestCase):

    def test_a_small_class_slows_a_cache_sensitive_nf_alone(self):
        model = util.model('LPM')
        by_ways = {w: model.predict_mpps([], w) for w in (2, 4, 8, 20)}
        self.assertEqual(by_ways[20], model.predict_mpps([]))
        self.assertLess(by_ways[2], by_ways[8])
        self.assertLess(by_ways[8], by_ways[20])
        # As on the testbed, within 5% of it.
        for w, mpps in by_ways.items():
            (obs,) = observed(['LPM'], w)
            self.assertAlmostEqual(obs, mpps, delta=0.05 * obs, msg=w)

    def test_mixes_confined_to_few_ways(self):
        names = ('LPM', 'Stats', 'Firewall', 'MazuNAT')
        models = {n: util.model(n) for n in names}
        mixes = (['LPM', 'Stats'], ['LPM', 'Firewall', 'MazuNAT'],
                 ['Stats', 'Stats', 'Firewall'], ['MazuNAT', 'LPM'])
        for ways in (2, 4):
            mine, whole = [], []
            for mix in mixes:
                for i, (name, obs) in enumerate(zip(mix,
                                                    observed(mix, ways))):
                    others = [models[o].contentiousness
                              for j, o in enumerate(mix) if j != i]
                    mine.append(abs(models[name].predict_mpps(others, ways)
                                    - obs) / obs)
                    whole.append(abs(models[name].predict_mpps(others)
                                     - obs) / obs)
            self.assertLess(statistics.fmean(mine), 0.06, ways)
            # Asking about the whole LLC is far off in a small class.
            self.assertLess(3 * statistics.fmean(mine),
                            statistics.fmean(whole), ways)

    def test_io_competitor_slows_the_nf_and_the_model_sees_it(self):
        d = util.driver('LPM', noise_pct=0.0)
        quiet = truth.Synthetic(2e7, 4 * 2 ** 20, 'quiet')
        loud = truth.Synthetic(2e7, 4 * 2 ** 20, 'loud', packet_mpps=8.0,
                               packet_bytes=1518, dma_buffers=4096)
        slow = {k.name: d.contention_run([k], ways=8)[0]
                for k in (quiet, loud)}
        # Its buffers overflow DDIO: the leak costs the NF throughput.
        self.assertLess(slow['loud'], 0.97 * slow['quiet'])
        model = util.model('LPM')
        cont = {k.name: training.competitor_contentiousness(d, k)
                for k in (quiet, loud)}
        self.assertGreater(cont['loud'].solo['io_bytes_per_s'], 0)
        self.assertEqual(0, cont['quiet'].solo['io_bytes_per_s'])
        pred = {n: model.predict_mpps([c], 8) for n, c in cont.items()}
        # The model predicts the leak's cost: at least half of it and at
        # most twice it (without I/O features it would predict none).
        drop = 1 - slow['loud'] / slow['quiet']
        predicted_drop = 1 - pred['loud'] / pred['quiet']
        self.assertTrue(0.5 * drop < predicted_drop < 2 * drop,
                        (drop, predicted_drop))
        for n in pred:
            self.assertAlmostEqual(slow[n], pred[n], delta=0.1 * slow[n])

    def test_bad_class_sizes(self):
        model = util.model('Firewall')
        for ways in (0, 21, 2.5, True, '4'):
            self.assertRaises(ValueError, model.predict_mpps, [], ways)
        models = {'Firewall': model}
        exc = self.assertRaises(ValueError, sharing.can_share, models,
                                ['Firewall'], {'Firewall': 0.1}, 0)
        self.assertIn('ways >= 1', str(exc))


class VersionOneTest(base.TestCase):
    """Documents trained on the whole LLC only, before class sizes."""

    def test_loads_and_predicts_the_whole_llc_only(self):
        doc = v1_doc('Firewall')
        model = document.parse(document.Model(doc).to_json(),
                               platform=nfmodel.Platform().as_dict())
        self.assertEqual(1, model.version)
        rel = model.relative([model.contentiousness])
        self.assertTrue(0.0 <= rel <= 1.0)
        self.assertEqual(rel, model.relative([model.contentiousness], 20))
        exc = self.assertRaises(document.ClassSizeUnsupported,
                                model.predict_mpps, [], 4)
        self.assertIn('whole LLC only (format version 1)', str(exc))
        self.assertIn('slomo-train firewall-64B', str(exc))
        self.assertIn('retrain', str(exc))

    def test_sharing_and_warning_say_to_retrain(self):
        models = {'Firewall': document.Model(v1_doc('Firewall')),
                  'LPM': util.model('LPM')}
        targets = {'Firewall': 0.01, 'LPM': 0.01}
        ok, reasons = sharing.can_share(models, ['Firewall', 'LPM'],
                                        targets, ways=4)
        self.assertFalse(ok)
        self.assertEqual(1, len(reasons), reasons)
        self.assertIn('Firewall: trained on the whole LLC only', reasons[0])
        # On the whole LLC it still answers.
        self.assertTrue(sharing.can_share(models, ['Firewall', 'LPM'],
                                          targets)[0])
        text = sharing.admission_warning(models, ['LPM'], 'Firewall',
                                         targets, ways=4)
        self.assertIn('of 4 ways would push', text)
        self.assertIn('retrain', text)
