import dataclasses
import os

from resq_nova.evaluation import chains
from resq_nova.evaluation import figures
from resq_nova.evaluation import run
from tests import base

UNBALANCED, BURSTY = chains.SCENARIOS


class AllocateTest(base.TestCase):

    def test_weighted_and_work_conserving(self):
        # Everyone backlogged: by weight.
        self.assertEqual([750.0, 2250.0],
                         chains._allocate(3000, [1e9, 1e9], [1, 3]))
        # What the first cannot use goes to the second.
        self.assertEqual([100.0, 2900.0],
                         chains._allocate(3000, [100, 1e9], [1, 1]))
        # Idle NFs get nothing; less demand than capacity leaves it idle.
        self.assertEqual([0.0, 500.0, 700.0],
                         chains._allocate(3000, [0, 500, 700], [5, 1, 1]))


class ChainsTest(base.TestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.doc = chains.evaluate()

    def test_deterministic(self):
        self.assertEqual(self.doc['unbalanced']['nfvnice'],
                         chains.simulate(UNBALANCED, True, True))

    def test_packets_are_accounted_for(self):
        for name, sc in (('unbalanced', UNBALANCED), ('bursty_nf', BURSTY)):
            for variant in chains.VARIANTS:
                r = self.doc[name][variant]
                delivered = r['throughput_mpps'] * sc.duration_us
                dropped = r['drop_pct'] / 100 * r['offered_mpps'] * (
                    sc.duration_us)
                self.assertAlmostEqual(
                    r['offered_mpps'] * sc.duration_us,
                    delivered + dropped + r['in_flight_packets'],
                    delta=0.002 * r['offered_mpps'] * sc.duration_us)
                self.assertLessEqual(r['in_flight_packets'],
                                     len(sc.costs) * sc.ring)

    def test_rate_cost_shares_raise_an_unbalanced_chains_throughput(self):
        rows = self.doc['unbalanced']
        self.assertGreater(rows['rate_cost']['throughput_mpps'],
                           rows['default']['throughput_mpps'] * 1.02)
        self.assertGreater(rows['nfvnice']['throughput_mpps'],
                           rows['backpressure']['throughput_mpps'] * 1.02)

    def test_backpressure_cuts_wasted_work(self):
        for name in ('unbalanced', 'bursty_nf'):
            rows = self.doc[name]
            for without, with_bp in (('default', 'backpressure'),
                                     ('rate_cost', 'nfvnice')):
                self.assertLess(rows[with_bp]['wasted_work_pct'],
                                rows[without]['wasted_work_pct'] / 2,
                                (name, with_bp))
                self.assertLess(rows[with_bp]['wasted_packets_pct'],
                                rows[without]['wasted_packets_pct'] / 2)
                # It drops at the entry instead, never more than 1 % of the
                # throughput lost.
                self.assertGreater(rows[with_bp]['entry_drop_pct'], 0)
                self.assertEqual(0.0, rows[without]['entry_drop_pct'])
                self.assertGreater(rows[with_bp]['throughput_mpps'],
                                   rows[without]['throughput_mpps'] * 0.99)

    def test_no_overload_no_difference(self):
        calm = dataclasses.replace(UNBALANCED, name='calm', rates=(1.0,))
        doc = chains.evaluate([calm])['calm']
        for variant in chains.VARIANTS:
            # All of it, less what is still in the rings at the end.
            self.assertAlmostEqual(1.0, doc[variant]['throughput_mpps'],
                                   delta=0.001)
            self.assertEqual(0.0, doc[variant]['drop_pct'])
            self.assertEqual(0.0, doc[variant]['policed_pct'])

    def test_bad_scenarios_are_refused(self):
        for field, value in (('costs', (100.0, 0.0)), ('costs', ()),
                             ('rates', (-1.0,)), ('rates', (float('nan'),)),
                             ('ring', 0), ('period_us', -5),
                             ('cost_bursts', ((3, 2.0, 100, 10),)),
                             ('cost_bursts', ((0, 2.0, 100, 200),))):
            sc = dataclasses.replace(UNBALANCED, **{field: value})
            exc = self.assertRaises(ValueError, chains.simulate, sc)
            self.assertIn('chain scenario unbalanced', str(exc))

    def test_table_and_figure(self):
        text = chains.table(self.doc)
        self.assertIn('unbalanced  nfvnice', text)
        doc = {'sets': {}, 'chains': self.doc}
        paths = figures.write(doc, self.tmp)
        self.assertEqual(os.path.join(self.tmp, 'chains.png'), paths[-1])
        with open(paths[-1], 'rb') as f:
            self.assertEqual(b'\x89PNG', f.read(4))


class RunTest(base.TestCase):

    def test_resq_evaluate_document_has_chains(self):
        doc = run.evaluate(self.conf, ['mixed'], ['agnostic'], terms=5)
        self.assertEqual({'unbalanced', 'bursty_nf'}, set(doc['chains']))
        self.assertEqual(set(chains.VARIANTS) | {'config'},
                         set(doc['chains']['unbalanced']))
        self.assertIn('bursty_nf   backpressure', run.table(doc))
