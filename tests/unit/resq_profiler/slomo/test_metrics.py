import math

from resq_profiler.slomo import metrics
from resq_profiler import truth
from tests import base


def reading(scale=1.0):
    return {c: scale * (i + 1) for i, c in enumerate(metrics.COUNTERS)}


class ContentiousnessTest(base.TestCase):

    def test_composition_sums_every_counter_and_counts(self):
        a = metrics.Contentiousness.from_dict(
            {'solo': reading(1), 'pressured': reading(10)})
        b = metrics.Contentiousness.from_dict(
            {'solo': reading(2), 'pressured': reading(20)})
        row = metrics.compose([a, b, b], 4, 1000)
        self.assertEqual(len(metrics.FEATURES), len(row))
        features = dict(zip(metrics.FEATURES, row))
        self.assertEqual(3.0, features['competitors'])
        for name in metrics.FEATURES_V1[:-1]:
            cond, counter = name.split('.')
            want = sum(getattr(x, cond)[counter] for x in (a, b, b))
            self.assertAlmostEqual(want, features[name], msg=name)
        # The class: its ways, and how full the competitors' pressured
        # occupancy makes it.
        self.assertEqual(4.0, features['class_ways'])
        self.assertAlmostEqual(
            features['pressured.llc_occupancy_bytes'] / 4000.0,
            features['class_fill'])
        # Without a class: the version-1 vector (whole LLC).
        self.assertEqual(row[:len(metrics.FEATURES_V1)],
                         metrics.compose([a, b, b]))

    def test_no_competitors_is_all_zero(self):
        self.assertEqual([0.0] * len(metrics.FEATURES_V1),
                         metrics.compose([]))
        self.assertEqual([0.0] * len(metrics.FEATURES_V1) + [20.0, 0.0],
                         metrics.compose([], 20, 2 ** 20))

    def test_bad_class_is_named(self):
        for ways in (0, -1, True, 'four', float('nan')):
            exc = self.assertRaises(ValueError, metrics.compose, [], ways,
                                    1000)
            self.assertIn('at least one way', str(exc))
        exc = self.assertRaises(ValueError, metrics.compose, [], 4, 0)
        self.assertIn('bytes per way', str(exc))

    def test_from_counters_and_round_trip(self):
        c = truth.Counters(1e7, 1e5, 2e6, 6.4e6, 0.0)
        item = metrics.Contentiousness.from_counters(c, c)
        self.assertEqual(1e7, item.solo['llc_refs_per_s'])
        self.assertEqual(item, metrics.Contentiousness.from_dict(
            item.as_dict()))

    def test_bad_readings_are_named(self):
        bad = reading()
        del bad['llc_occupancy_bytes']
        exc = self.assertRaises(
            ValueError, metrics.Contentiousness.from_dict,
            {'solo': bad, 'pressured': reading()})
        self.assertIn('contentiousness.solo', str(exc))
        self.assertIn('llc_occupancy_bytes', str(exc))
        for value in (-1.0, math.nan, math.inf, 'many', True):
            bad = reading()
            bad['mem_bw_bytes_per_s'] = value
            exc = self.assertRaises(
                ValueError, metrics.Contentiousness.from_dict,
                {'solo': reading(), 'pressured': bad})
            self.assertIn('pressured.mem_bw_bytes_per_s', str(exc))
        self.assertRaises(ValueError, metrics.Contentiousness.from_dict, [])


class TestbedCountersTest(base.TestCase):
    """The testbed's counter readings behave like hardware's would."""

    def test_competitor_raises_the_nf_misses_and_lowers_occupancy(self):
        from resq_profiler import catalog
        from resq_profiler import nfmodel
        ways = frozenset(range(20))
        inst = nfmodel.Instance(catalog.get('LPM'), ways)
        outs, (alone,), _ = truth.run_server([inst])
        hog = truth.Synthetic(2e8, 64 * 2 ** 20)
        outs2, (shared,), (syn,) = truth.run_server(
            [inst], synthetic=[(hog, ways)])
        self.assertGreater(shared.llc_misses_per_s / shared.llc_refs_per_s,
                           alone.llc_misses_per_s / alone.llc_refs_per_s)
        self.assertLess(shared.llc_occupancy_bytes,
                        alone.llc_occupancy_bytes)
        self.assertLess(outs2[0].capacity_mpps, outs[0].capacity_mpps)
        # The NF's references follow its throughput; DMA its packets.
        refs = catalog.get('LPM').l3_refs_per_packet
        self.assertAlmostEqual(outs2[0].capacity_mpps * 1e6 * refs,
                               shared.llc_refs_per_s, delta=1.0)
        self.assertAlmostEqual(outs2[0].capacity_mpps * 1e6 * 64,
                               shared.io_bytes_per_s, delta=1.0)
        self.assertEqual(2e8, syn.llc_refs_per_s)
        self.assertEqual(0.0, syn.io_bytes_per_s)
        self.assertGreater(syn.mem_bw_bytes_per_s, 0.0)
        # The same outcomes as simulate_server gives.
        self.assertEqual(outs2, truth.simulate_server(
            [inst], synthetic=[(hog, ways)]))

    def test_synthetic_alone_and_noise(self):
        small = truth.Synthetic(1e7, 2 ** 20)
        _, _, (c,) = truth.run_server([], synthetic=[(small,
                                                      frozenset(range(20)))])
        self.assertAlmostEqual(2 ** 20, c.llc_occupancy_bytes, delta=1)
        self.assertAlmostEqual(0.0, c.llc_misses_per_s, delta=1e-6)
        noisy = c.noisy(truth.Noise(5.0, 1))
        self.assertNotEqual(c, noisy)
        self.assertTrue(all(v >= 0 for v in (
            noisy.llc_refs_per_s, noisy.llc_misses_per_s,
            noisy.llc_occupancy_bytes, noisy.mem_bw_bytes_per_s)))
        self.assertEqual(([], [], []), truth.run_server([]))

    def test_synthetic_packet_io(self):
        from resq_profiler import nfmodel
        ways = frozenset(range(8))
        plain = truth.Synthetic(1e7, 2 ** 20)
        self.assertFalse(plain.does_io)
        # Without DMA buffers or a packet rate it does no I/O.
        for quiet in (truth.Synthetic(1e7, 2 ** 20, packet_mpps=5.0),
                      truth.Synthetic(1e7, 2 ** 20, dma_buffers=4096)):
            self.assertFalse(quiet.does_io)
            self.assertEqual(truth.run_server([], synthetic=[(plain, ways)]),
                             truth.run_server([], synthetic=[(quiet, ways)]))
        # Small rings at small packets fit DDIO: I/O but no leak.
        small = truth.Synthetic(1e7, 2 ** 20, packet_mpps=5.0,
                                packet_bytes=64, dma_buffers=512)
        _, _, (c,) = truth.run_server([], synthetic=[(small, ways)])
        self.assertEqual(5e6 * 64, c.io_bytes_per_s)
        self.assertAlmostEqual(0.0, c.mem_bw_bytes_per_s, delta=1e-6)
        # DPDK's default rings at 1518 B overflow DDIO: the leaked packets
        # cross the bus twice, their headers miss.
        big = truth.Synthetic(1e7, 2 ** 20, packet_mpps=5.0,
                              packet_bytes=1518, dma_buffers=4096)
        _, _, (c,) = truth.run_server([], synthetic=[(big, ways)])
        platform = nfmodel.Platform()
        ddio = platform.io_ways * platform.way_size_bytes
        leak = 1.0 - ddio / (4096 * nfmodel.buffer_bytes(1518))
        self.assertAlmostEqual(5e6 * leak * 2, c.llc_misses_per_s,
                               delta=1.0)
        self.assertAlmostEqual(5e6 * leak * (2 * 64 + 2 * 1518),
                               c.mem_bw_bytes_per_s, delta=10.0)
        # And an NF next to it pays for the leak.
        from resq_profiler import catalog
        inst = nfmodel.Instance(catalog.get('LPM'), ways)
        alone = truth.simulate_server([inst], synthetic=[(plain, ways)])
        leaky = truth.simulate_server([inst], synthetic=[(big, ways)])
        self.assertLess(leaky[0].capacity_mpps, alone[0].capacity_mpps)

    def test_whole_llc_rows_get_the_class_features(self):
        a = metrics.Contentiousness.from_dict(
            {'solo': reading(1), 'pressured': reading(10)})
        self.assertEqual(metrics.compose([a, a], 20, 1000),
                         metrics.with_class(metrics.compose([a, a]), 20,
                                            1000))
        exc = self.assertRaises(ValueError, metrics.with_class, [1.0], 20,
                                1000)
        self.assertIn('whole-LLC features', str(exc))
