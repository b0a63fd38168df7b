import math
import statistics

from resq_profiler import catalog
from resq_profiler import exception
from resq_profiler import nfmodel
from resq_profiler.slomo import document
from resq_profiler.slomo import ensemble
from resq_profiler.slomo import metrics
from resq_profiler.slomo import training
from resq_profiler import truth
from tests import base
from tests.unit.resq_profiler.slomo import util

WAYS = frozenset(range(20))


class TrainingTest(base.TestCase):

    def test_document_records_what_it_was_trained_on(self):
        doc = util.trained_doc('LPM')
        document.validate(doc, platform=nfmodel.Platform().as_dict())
        self.assertEqual('LPM', doc['nf']['name'])
        self.assertEqual('lpm-64B', doc['nf']['profile_id'])
        self.assertEqual('model', doc['training']['driver'])
        self.assertEqual(util.RUNS + 1, doc['training']['runs'])
        self.assertIn('scikit-learn', doc['training']['library'])
        self.assertEqual(list(metrics.FEATURES), doc['features'])
        solo = truth.solo(catalog.get('LPM'), 20).capacity_mpps
        # Measured with 0.5% noise.
        self.assertAlmostEqual(solo, doc['solo_mpps'], delta=0.03 * solo)

    def test_plan_is_deterministic_and_bounded(self):
        sizes = [2, 4, 20]
        a = training.plan(30, seed=4, sizes=sizes)
        self.assertEqual(a, training.plan(30, seed=4, sizes=sizes))
        self.assertNotEqual(a, training.plan(30, seed=5, sizes=sizes))
        self.assertEqual(30, len(a))
        # First the NF alone in every class size.
        self.assertEqual([(2, []), (4, []), (20, [])], a[:3])
        for ways, chosen in a[3:]:
            self.assertIn(ways, sizes)
            self.assertTrue(1 <= len(chosen) <= training.MAX_COMPETITORS)
            self.assertTrue(all(0 <= i < training.PALETTE_SIZE
                                for i in chosen))
        self.assertEqual(set(sizes), {w for w, _ in a[3:]})
        self.assertRaises(ValueError, training.plan, 0)
        self.assertRaises(ValueError, training.plan, 3, sizes=[])

    def test_class_sizes_span_the_llc(self):
        self.assertEqual([2, 3, 4, 6, 8, 12, 16, 20],
                         training.class_sizes(20))
        self.assertEqual([2, 3, 4, 7, 9, 11], training.class_sizes(11, 2))
        self.assertEqual([1], training.class_sizes(1))
        self.assertRaises(ValueError, training.class_sizes, 1, 2)
        doc = util.trained_doc('LPM')
        self.assertEqual(training.class_sizes(20),
                         doc['training']['class_ways'])

    def test_palette_does_packet_io_and_the_counters_show_it(self):
        d = util.driver('LPM', noise_pct=0.0)
        kinds = training.palette()
        io = [k for k in kinds if k.does_io]
        self.assertEqual(len(kinds) // 2, len(io))
        for kind in (io[0], kinds[0]):
            cont = training.competitor_contentiousness(d, kind)
            self.assertEqual(kind.does_io,
                             cont.solo['io_bytes_per_s'] > 0, kind)
        self.assertEqual({False, True},
                         {k.packet_bytes > 64 for k in io})

    def _held_out_synthetic(self, name, solo, ways=(2, 4, 8, 20)):
        """Synthetic sets from another seed: none was trained on."""
        d = util.driver(name, noise_pct=0.0)
        kinds = training.palette(seed=99)
        cont = [training.competitor_contentiousness(d, k) for k in kinds]
        rows = []
        for w, chosen in training.plan(30, seed=99, sizes=ways)[
                len(ways):]:
            mpps, _, _ = d.contention_run([kinds[i] for i in chosen],
                                          ways=w)
            rows.append(([cont[i] for i in chosen], w, mpps))
        return rows

    def test_beats_a_trivial_baseline_on_held_out_sets(self):
        for name in ('LPM', 'Stats'):
            model = util.model(name)
            held = self._held_out_synthetic(name, model.solo_mpps)
            # Trivial: the held-out runs' own mean throughput (a constant
            # that even knows the answers' average), and solo throughput.
            mean = statistics.fmean(m for _, _, m in held)
            mine = [abs(model.predict_mpps(c, w) - m) / m
                    for c, w, m in held]
            trivial = [abs(mean - m) / m for _, _, m in held]
            solo = [abs(model.solo_mpps - m) / m for _, _, m in held]
            self.assertLess(statistics.fmean(mine),
                            0.5 * statistics.fmean(trivial), name)
            self.assertLess(statistics.fmean(mine),
                            0.5 * statistics.fmean(solo), name)

    def test_predicts_real_colocations_better_than_the_baseline(self):
        from resq_nova.evaluation import dobrescu
        baseline = dobrescu.Predictor(noise_pct=0.5)
        names = ('LPM', 'Stats', 'Firewall', 'MazuNAT')
        models = {n: util.model(n) for n in names}
        mine, theirs = [], []
        for mix in (['Stats'] * 4, ['Firewall'] * 4, ['MazuNAT'] * 2,
                    ['Stats', 'Stats', 'Firewall'], ['MazuNAT', 'Firewall'],
                    ['Stats', 'MazuNAT', 'Firewall', 'Firewall', 'Stats']):
            insts = [nfmodel.Instance(catalog.get(n), WAYS)
                     for n in ['LPM'] + mix]
            observed = truth.simulate_server(insts)[0].capacity_mpps
            predicted = models['LPM'].predict_mpps(
                [models[n].contentiousness for n in mix])
            mine.append(abs(predicted - observed) / observed)
            theirs.append(abs(baseline.predict('LPM', mix) - observed)
                          / observed)
        self.assertLess(statistics.fmean(mine), statistics.fmean(theirs))
        self.assertLess(statistics.fmean(mine), 0.08)
        # The heavy neighbours slow it more than the light ones.
        self.assertLess(
            models['LPM'].predict_mpps([models['Stats'].contentiousness] * 4),
            models['LPM'].predict_mpps(
                [models['Firewall'].contentiousness] * 4))

    def test_query_never_nan_or_negative(self):
        model = util.model('Stats')
        huge = metrics.Contentiousness.from_dict({
            c: {k: 1e300 for k in metrics.COUNTERS}
            for c in metrics.CONDITIONS})
        zero = metrics.Contentiousness.from_dict({
            c: {k: 0.0 for k in metrics.COUNTERS}
            for c in metrics.CONDITIONS})
        for comps in ([], [zero] * 50, [huge] * 8, [huge, zero]):
            value = model.predict_mpps(comps)
            self.assertTrue(math.isfinite(value))
            self.assertGreaterEqual(value, 0.0)
            self.assertLessEqual(value, model.solo_mpps)

    def test_drivers_without_contention_runs_are_refused(self):
        d = util.driver('LPM', truth='nfmodel')
        exc = self.assertRaises(exception.MeasurementError, training.train,
                                d, 'lpm', runs=2)
        self.assertIn('model_truth = testbed', str(exc))

        class Plain(type(d)):
            name = 'plain'
            contention_run = type(d).__mro__[1].contention_run
        plain = Plain(util.make_conf(), 'LPM', nfmodel.Traffic())
        exc = self.assertRaises(exception.MeasurementError, training.train,
                                plain, 'lpm', runs=2)
        self.assertIn("'plain' profiling driver cannot run", str(exc))

    def test_extra_whole_llc_rows(self):
        d = util.driver('Firewall')
        stats = util.model('Stats').contentiousness
        row = metrics.compose([stats] * 3)
        doc = training.train(d, 'fw', runs=10, extra=[(row, 0.5)], draws=1)
        self.assertEqual(12, doc['training']['runs'])
        self.assertEqual(1, doc['training']['extra_rows'])
        model = document.Model(doc)
        plain = document.Model(training.train(d, 'fw', runs=10, draws=1))
        # Taken as a whole-LLC row: the fit moves towards it there.
        self.assertLess(model.relative([stats] * 3),
                        plain.relative([stats] * 3) - 0.05)


class DrawsTest(base.TestCase):
    """Training draws: each its palette, plan and fit.

    The model is their mean (bagging over draws, issue 45).
    """

    def test_draw_zero_is_the_seeds_own(self):
        sizes = [2, 4, 20]
        self.assertEqual(training.palette(3), training.palette(3, draw=0))
        self.assertEqual(training.plan(30, 3, sizes=sizes),
                         training.plan(30, 3, sizes=sizes, draw=0))
        one = training.palette(3, draw=1)
        self.assertEqual(one, training.palette(3, draw=1))
        self.assertNotEqual(training.palette(3), one)
        self.assertNotEqual(training.palette(4, draw=1), one)
        self.assertNotEqual(training.plan(30, 3, sizes=sizes),
                            training.plan(30, 3, sizes=sizes, draw=1))
        for bad in (-1, 1.5, True, '1'):
            self.assertRaises(ValueError, training.palette, 3, draw=bad)

    def test_one_draw_is_the_model_of_before_draws(self):
        d = util.driver('Firewall')
        doc = training.train(d, 'fw', runs=15, draws=1,
                             params={'n_estimators': 20})
        d = util.driver('Firewall')
        solo, mine, xs, ys = training.rows(d, runs=15)
        self.assertEqual(ensemble.fit(xs, ys, {'n_estimators': 20}),
                         doc['ensemble'])
        self.assertEqual(solo, doc['solo_mpps'])
        self.assertEqual(mine.as_dict(), doc['contentiousness'])
        self.assertEqual(1, doc['training']['draws'])

    def test_the_model_is_the_mean_of_its_draws(self):
        params = {'n_estimators': 20}
        doc = training.train(util.driver('Firewall'), 'fw', runs=15,
                             draws=3, params=params)
        document.validate(doc, platform=nfmodel.Platform().as_dict())
        t = doc['training']
        self.assertEqual((3, 48, 45), (t['draws'], t['runs'],
                                       t['contention_runs']))
        self.assertEqual(60, len(doc['ensemble']['trees']))
        # The same draws measured again, in the same order.
        d = util.driver('Firewall')
        draws = [training.rows(d, runs=15, draw=k) for k in range(3)]
        fits = [ensemble.Ensemble(ensemble.fit(x, y, params))
                for _, _, x, y in draws]
        self.assertNotEqual(draws[0][2], draws[1][2])
        self.assertAlmostEqual(statistics.fmean(s for s, _, _, _ in draws),
                               doc['solo_mpps'], places=9)
        self.assertAlmostEqual(
            statistics.fmean(m.pressured['llc_occupancy_bytes']
                             for _, m, _, _ in draws),
            doc['contentiousness']['pressured']['llc_occupancy_bytes'])
        mean = ensemble.Ensemble(doc['ensemble'])
        for _, _, xs, _ in draws:
            for x in xs[::4]:
                self.assertAlmostEqual(
                    statistics.fmean(f.predict(x) for f in fits),
                    mean.predict(x), places=9)
        self.assertIn('training draw 3 of 3', ' '.join(
            self._progress(params)))
        for bad in (0, -1, 1.5, True):
            self.assertRaises(ValueError, training.train,
                              util.driver('Firewall'), 'fw', runs=5,
                              draws=bad)

    def _progress(self, params):
        said = []
        training.train(util.driver('Stats'), 'st', runs=5, draws=3,
                       params=params, progress=said.append)
        return said
