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
                             ('period_us', 2.5), ('cores', 'numa'),
                             ('priorities', (1, 2)),
                             ('priorities', (1, 0, 1)),
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


class PaperChainTest(base.TestCase):
    """NFVnice's 3-NF chain, a core per NF, at a 10 ms agent period."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.doc = chains.paper_3nf_table(10000, periods=chains.MIN_PERIODS)

    def test_default_burns_the_upstream_cores_on_lost_packets(self):
        nf1, nf2, nf3 = self.doc['default']['nf']
        for row in (nf1, nf2, nf3):
            self.assertGreater(row['cpu_pct'], 99.5)
        # The paper: 80 % and 49 %; here 75 % because NF1 is slower on a
        # 2.6 GHz core (4.73 Mpps instead of 5.95).
        self.assertAlmostEqual(75.0, nf1['drop_pct'], delta=2)
        self.assertAlmostEqual(49.0, nf2['drop_pct'], delta=3)
        self.assertIsNone(nf3['dropped_after_mpps'])
        self.assertAlmostEqual(2600 / 4500.0,
                               self.doc['default']['aggregate_mpps'],
                               delta=0.002)

    def test_backpressure_frees_the_cores_at_the_same_throughput(self):
        before, after = self.doc['default'], self.doc['nfvnice']
        nf1, nf2, nf3 = after['nf']
        self.assertLess(nf1['cpu_pct'], 30)
        self.assertLess(nf2['cpu_pct'], 70)
        # Cycles spent on packets a later NF drops: a seventh.
        self.assertLess(after['wasted_cycles_per_us'],
                        before['wasted_cycles_per_us'] / 5)
        # Within the policer's 5 % margin.
        self.assertGreater(after['aggregate_mpps'],
                           before['aggregate_mpps'] * 0.95)
        text = chains.paper_3nf_text(self.doc)
        self.assertIn('agent period 10 ms', text)
        self.assertIn('0.82', text)        # the paper's NF1 beside ours


class PeriodTest(base.TestCase):

    def test_priority_weighs_the_share(self):
        # Rate-cost weights of two NFs with the same measured load and
        # cost; priority 2 gets twice the cycles of priority 1 when both
        # are backlogged on one core.
        sc = chains.Scenario('prio', costs=(500.0, 500.0), rates=(3.0,),
                             priorities=(2, 1))
        run = chains._Run(sc, True, False, 100, 1)
        run.period_in = [300.0, 300.0]
        run.control()
        grant = chains._allocate(3000, [1e9, 1e9], run.weights)
        self.assertAlmostEqual(2.0, grant[0] / grant[1], delta=0.01)
        # In a whole run, the favoured NF gets more of the core (the
        # first: a later one cannot use more than the first passes on).
        shares = {}
        for prio in ((1, 1), (2, 1)):
            sc = dataclasses.replace(sc, rates=(6.0,), priorities=prio)
            nf = chains.simulate(sc, rate_cost=True)['nf']
            shares[prio] = nf[0]['cpu_pct'] / nf[1]['cpu_pct']
        self.assertGreater(shares[(2, 1)], shares[(1, 1)] * 1.5)

    def test_coarse_ticks_agree_with_fine_ones(self):
        # At a 1 ms period, a 10 us tick is what tick_for picks at 10 ms.
        for flags in ((False, False), (True, True)):
            fine = chains.simulate(UNBALANCED, *flags, period_us=1000,
                                   tick_us=1)
            coarse = chains.simulate(UNBALANCED, *flags, period_us=1000,
                                     tick_us=10)
            self.assertEqual(10, coarse['tick_us'])
            self.assertAlmostEqual(fine['throughput_mpps'],
                                   coarse['throughput_mpps'],
                                   delta=0.01 * fine['throughput_mpps'])
            self.assertAlmostEqual(fine['cpu_busy_pct'],
                                   coarse['cpu_busy_pct'], delta=1)

    def test_tick_follows_the_period(self):
        self.assertEqual(1, chains.tick_for(UNBALANCED))
        self.assertEqual(100, chains.tick_for(UNBALANCED, 100000))
        slow = chains.AGENT_SCALE_SCENARIOS[0]
        # 5 s at a 100 us period: a quarter of the period, not 1 us.
        self.assertEqual(25, chains.tick_for(slow, 100))
        self.assertRaises(ValueError, chains.simulate, UNBALANCED,
                          period_us=1000, tick_us=3)

    def test_at_period_lasts_whole_load_cycles(self):
        sc = chains.at_period(UNBALANCED, 50000)
        self.assertEqual(50000, sc.period_us)
        self.assertGreaterEqual(sc.duration_us, chains.MIN_PERIODS * 50000)
        self.assertEqual(0, sc.duration_us % 4000)

    def test_evaluate_at_period(self):
        # Five periods, not twenty, to keep the test short.
        doc = chains.evaluate_at_period(10000, [BURSTY, chains.PAPER_3NF],
                                        periods=5)
        self.assertEqual({'bursty_nf', 'paper_3nf'}, set(doc))
        row = doc['paper_3nf']
        self.assertEqual(set(chains.VARIANTS), set(row['throughput_mpps']))
        self.assertEqual({'nfvnice_vs_rate_cost', 'backpressure_vs_default',
                          'nfvnice_vs_default', 'rate_cost_vs_default'},
                         set(row['backpressure_gain_pct']))
        self.assertEqual(3, len(row['core_cpu_pct']['default']))
        self.assertEqual(1, len(doc['bursty_nf']['core_cpu_pct']['nfvnice']))
        thr = row['throughput_mpps']
        self.assertAlmostEqual(
            100 * (thr['backpressure'] / thr['default'] - 1),
            row['backpressure_gain_pct']['backpressure_vs_default'],
            delta=0.01)
        # Both mechanisms against the default scheduler, and against
        # rate-cost shares alone: each names its baseline.
        gain = row['backpressure_gain_pct']
        self.assertAlmostEqual(
            100 * (thr['nfvnice'] / thr['default'] - 1),
            gain['nfvnice_vs_default'], delta=0.01)
        self.assertAlmostEqual(
            100 * (thr['nfvnice'] / thr['rate_cost'] - 1),
            gain['nfvnice_vs_rate_cost'], delta=0.01)
        self.assertAlmostEqual(
            100 * (thr['rate_cost'] / thr['default'] - 1),
            gain['rate_cost_vs_default'], delta=0.01)
        gains = chains.gain_by_period([1000, 10000], [chains.PAPER_3NF],
                                      periods=5)
        self.assertEqual(
            row['backpressure_gain_pct']['nfvnice_vs_rate_cost'],
            gains['gain_pct']['paper_3nf']['nfvnice_vs_rate_cost'][1])
        self.assertEqual(set(chains.GAIN_KEYS),
                         set(gains['gain_pct']['paper_3nf']))
        self.assertIn('paper_3nf', chains.gain_text(gains))


class RunTest(base.TestCase):

    def test_resq_evaluate_document_has_chains(self):
        doc = run.evaluate(self.conf, ['mixed'], ['agnostic'], terms=5)
        self.assertEqual({'unbalanced', 'bursty_nf'}, set(doc['chains']))
        self.assertEqual(set(chains.VARIANTS) | {'config'},
                         set(doc['chains']['unbalanced']))
        self.assertIn('bursty_nf   backpressure', run.table(doc))
