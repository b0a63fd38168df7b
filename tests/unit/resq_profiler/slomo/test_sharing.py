from resq_profiler import catalog
from resq_profiler import nfmodel
from resq_profiler.slomo import document
from resq_profiler.slomo import sharing
from resq_profiler import truth
from tests import base
from tests.unit.resq_profiler.slomo import util

WAYS = frozenset(range(20))


def _models(*names):
    return {n: util.model(n) for n in names}


def _observed(members):
    """The testbed's capacity of each member sharing the whole LLC."""
    return [o.capacity_mpps for o in truth.simulate_server(
        [nfmodel.Instance(catalog.get(n), WAYS) for n in members])]


class CanShareTest(base.TestCase):

    def test_light_nfs_share_and_the_testbed_agrees(self):
        members = ['Firewall', 'Efficuts', 'IPsec', 'Firewall']
        models = _models('Firewall', 'Efficuts', 'IPsec')
        targets = {n: 0.95 * m.solo_mpps for n, m in models.items()}
        ok, reasons = sharing.can_share(models, members, targets)
        self.assertTrue(ok, reasons)
        self.assertEqual([], reasons)
        for name, cap in zip(members, _observed(members)):
            self.assertGreaterEqual(cap, targets[name])

    def test_heavy_mix_refused_and_the_testbed_agrees(self):
        members = ['LPM', 'LPM', 'LPM', 'Stats', 'Stats', 'Stats']
        models = _models('LPM', 'Stats')
        targets = {'LPM': 0.97 * models['LPM'].solo_mpps,
                   'Stats': 0.5 * models['Stats'].solo_mpps}
        ok, reasons = sharing.can_share(models, members, targets)
        self.assertFalse(ok)
        # One line for LPM (not one per instance), none for Stats.
        self.assertEqual(1, len(reasons), reasons)
        self.assertIn('LPM: predicted', reasons[0])
        self.assertIn('below its target of %.3f Mpps' % targets['LPM'],
                      reasons[0])
        self.assertLess(_observed(members)[0], targets['LPM'])

    def test_no_model_means_isolation(self):
        models = _models('LPM')
        models['Snort'] = None
        ok, reasons = sharing.can_share(models, ['LPM', 'Snort'],
                                        {'LPM': 1.0, 'Snort': 0.1})
        self.assertFalse(ok)
        self.assertEqual(1, len(reasons))
        self.assertIn('Snort has no valid SLOMO model', reasons[0])
        self.assertIn('own partition (isolation)', reasons[0])
        ok, reasons = sharing.can_share({'LPM': models['LPM']},
                                        ['LPM', 'Stats'],
                                        {'LPM': 1.0, 'Stats': 1.0})
        self.assertFalse(ok)
        self.assertIn('Stats has no valid SLOMO model', reasons[0])

    def test_models_of_other_platforms_do_not_mix(self):
        models = _models('LPM', 'Firewall')
        doc = dict(util.trained_doc('Firewall'))
        doc['platform'] = dict(doc['platform'], llc_ways=11)
        models['Firewall'] = document.Model(document.seal(doc))
        ok, reasons = sharing.can_share(models, ['LPM', 'Firewall'],
                                        {'LPM': 0.1, 'Firewall': 0.1})
        self.assertFalse(ok)
        self.assertIn('different platforms', reasons[0])

    def test_bad_targets(self):
        models = _models('LPM', 'Firewall')
        for targets in ({'LPM': 1.0}, {'LPM': 1.0, 'Firewall': 0},
                        {'LPM': 1.0, 'Firewall': -2.0},
                        {'LPM': 1.0, 'Firewall': float('nan')},
                        {'LPM': 1.0, 'Firewall': '3'}, None):
            exc = self.assertRaises(ValueError, sharing.can_share, models,
                                    ['LPM', 'Firewall'], targets)
            self.assertIn("target of 'Firewall'", str(exc))
            self.assertRaises(ValueError, sharing.admission_warning, models,
                              ['LPM'], 'Firewall', targets)


class AdmissionWarningTest(base.TestCase):

    def test_no_warning_for_a_light_neighbour(self):
        models = _models('LPM', 'Firewall')
        targets = {'LPM': 0.95 * models['LPM'].solo_mpps,
                   'Firewall': 0.9 * models['Firewall'].solo_mpps}
        self.assertIsNone(sharing.admission_warning(
            models, ['LPM', 'Firewall'], 'Firewall', targets))

    def test_warns_when_a_neighbour_would_miss_its_target(self):
        models = _models('LPM', 'Stats')
        shared = ['LPM', 'LPM', 'LPM', 'Stats', 'Stats']
        before = sharing.predictions(models, shared)[0][1]
        after = sharing.predictions(models, shared + ['Stats'])[0][1]
        # Another Stats slows LPM (as on the testbed).
        self.assertLess(after, before)
        obs = _observed(shared), _observed(shared + ['Stats'])
        self.assertLess(obs[1][0], obs[0][0])
        # A target between the two: kept before the admission, not after.
        targets = {'LPM': (before + after) / 2,
                   'Stats': 0.1 * models['Stats'].solo_mpps}
        self.assertTrue(sharing.can_share(models, shared, targets)[0])
        text = sharing.admission_warning(models, shared, 'Stats', targets)
        self.assertIsNotNone(text)
        self.assertIn('admitting Stats', text)
        self.assertIn('LPM: predicted %.3f Mpps (%.3f now)' % (after, before),
                      text)
        self.assertNotIn('Stats: predicted', text)

    def test_warns_for_the_candidate_and_for_missing_models(self):
        models = _models('LPM', 'Stats')
        targets = {'LPM': 0.1, 'Stats': 10 * models['Stats'].solo_mpps}
        text = sharing.admission_warning(models, ['LPM'], 'Stats', targets)
        self.assertIn('Stats itself: predicted', text)
        models['Snort'] = None
        text = sharing.admission_warning(models, ['LPM'], 'Snort',
                                         {'LPM': 0.1, 'Snort': 0.1})
        self.assertIn('Snort has no valid SLOMO model', text)
