import math
import statistics

from resq_profiler import catalog
from resq_profiler import drivers
from resq_profiler import nfmodel
from resq_profiler import profiler
from resq_profiler import truth
from tests import base

ALL_WAYS = frozenset(range(20))
MB = nfmodel.MIB


def _parts(sizes):
    parts, start = [], 0
    for size in sizes:
        parts.append(frozenset(range(start, start + size)))
        start += size
    return parts


class FootprintTest(base.TestCase):

    def test_uniform_access_is_the_textbook_curve(self):
        # alpha = 0: every line equally likely, so an LRU cache of a
        # fraction f of the working set misses 1 - f of the references.
        for f in (0.1, 0.25, 0.5, 0.8):
            self.assertAlmostEqual(1 - f, truth.capacity_miss(0.0, f),
                                   delta=0.002)

    def test_miss_ratio_falls_with_cache_and_skew(self):
        for alpha in (0.0, 1.0, 5.0, 10.0):
            misses = [truth.capacity_miss(alpha, f / 20.0)
                      for f in range(0, 21)]
            self.assertEqual(1.0, misses[0])
            self.assertEqual(0.0, misses[-1])
            self.assertTrue(all(b <= a for a, b in zip(misses, misses[1:])),
                            alpha)
        # A hotter core misses less with the same small cache.
        self.assertLess(truth.capacity_miss(8.0, 0.1),
                        truth.capacity_miss(1.0, 0.1))

    def test_calibration_keeps_the_catalog(self):
        for spec in catalog.CATALOG.values():
            nf = truth.TruthNF(spec)
            one_way = nfmodel.Platform().way_size_bytes
            self.assertAlmostEqual(spec.miss_ratio_one_way,
                                   nf.miss_ratio(one_way), delta=1e-3,
                                   msg=spec.name)
            full = nfmodel.Platform().llc_bytes
            self.assertAlmostEqual(spec.mpps, nf.solo_mpps, places=6)
            if nf.ws <= one_way:
                # Firewall: one way holds it all, nothing left to lose.
                self.assertEqual(0.0, nf.penalty)
                continue
            rel = (2.1e3 / nf.cycles(one_way)) / (2.1e3 / nf.cycles(full))
            self.assertAlmostEqual(spec.relative_throughput_one_way, rel,
                                   places=6, msg=spec.name)

    def test_occupancy_fills_the_cache_by_footprint(self):
        # Three NFs whose working sets exceed 9 MB share it: together they
        # hold exactly the cache, the fastest and flattest the most.
        members = [(30 * MB, 8.0, 4e7), (24 * MB, 8.0, 5e6),
                   (20 * MB, 0.0, 4e7)]
        shares = truth._share(members, 9 * MB)
        self.assertAlmostEqual(9 * MB, sum(shares), delta=1024)
        self.assertTrue(all(s > 0 for s in shares))
        self.assertGreater(shares[0], shares[1])   # more references
        self.assertGreater(shares[2], shares[0])   # flatter access
        # Working sets that fit are held whole.
        small = [(1 * MB, 1.0, 1e6), (2 * MB, 1.0, 1e7)]
        self.assertEqual([1 * MB, 2 * MB], truth._share(small, 9 * MB))

    def test_server_occupancy_sums_to_the_shared_cache(self):
        names = ['Stats', 'LPM', 'MazuNAT', 'Snort', 'EndRE', 'Suricata']
        insts = [nfmodel.Instance(catalog.get(n), ALL_WAYS) for n in names]
        outs = truth.simulate_server(insts)
        # The NFs share the 20 ways less the packet buffers DDIO holds in
        # its two (sized buffers fill them).
        cache = nfmodel.Platform().llc_bytes - 2 * nfmodel.Platform(
        ).way_size_bytes
        self.assertAlmostEqual(cache, sum(o.occupancy_bytes for o in outs),
                               delta=0.01 * cache)


class ContentionTest(base.TestCase):

    def _with_pressure(self, name, refs_per_s):
        syn = [(truth.Synthetic(refs_per_s / 5), ALL_WAYS)] * (
            5 if refs_per_s else 0)
        inst = nfmodel.Instance(catalog.get(name), ALL_WAYS)
        return truth.simulate_server([inst], synthetic=syn)[0]

    def test_more_competing_pressure_lowers_sensitive_throughput(self):
        levels = (0, 2e7, 8e7, 3.2e8)
        for name in catalog.names(catalog.SENSITIVE):
            thr = [self._with_pressure(name, r).capacity_mpps
                   for r in levels]
            self.assertTrue(all(b < a for a, b in zip(thr, thr[1:])),
                            (name, thr))
            self.assertLess(thr[-1] / thr[0], 0.75, name)
        # Insensitive NFs barely notice the same pressure.
        fw = [self._with_pressure('Firewall', r).capacity_mpps
              for r in levels]
        self.assertGreater(fw[-1] / fw[0], 0.97)

    def test_neighbours_raise_latency_at_the_same_offered_load(self):
        spec = catalog.get('Stats')
        load = 0.8 * truth.solo(spec, 20).capacity_mpps
        alone = truth.simulate_server([nfmodel.Instance(
            spec, ALL_WAYS, offered_mpps=load)])[0]
        crowd = truth.simulate_server(
            [nfmodel.Instance(spec, ALL_WAYS, offered_mpps=load)]
            + [nfmodel.Instance(catalog.get('MazuNAT'), ALL_WAYS)] * 8)[0]
        self.assertGreater(crowd.latency_p95_us, alone.latency_p95_us)
        self.assertLess(crowd.capacity_mpps, alone.capacity_mpps)

    def test_cat_partitions_isolate_the_cache(self):
        spec = catalog.get('Stats')
        parts = _parts([4, 2, 2, 2, 2, 2, 2, 2])
        alone = truth.simulate_server([nfmodel.Instance(spec, parts[0])])[0]
        crowd = truth.simulate_server(
            [nfmodel.Instance(spec, parts[0])]
            + [nfmodel.Instance(catalog.get('MazuNAT'), p)
               for p in parts[1:]])[0]
        self.assertAlmostEqual(alone.occupancy_bytes, crowd.occupancy_bytes,
                               delta=1.0)
        # What is left is the memory bus, ResQ's residual under 3%.
        self.assertGreater(crowd.capacity_mpps, 0.97 * alone.capacity_mpps)

    def test_unsized_dma_leaks_with_mtu_packets(self):
        mtu = nfmodel.Traffic(1518)
        spec = catalog.get('Stats')
        parts = _parts([2] * 9)

        def run(buffers):
            return truth.simulate_server([
                nfmodel.Instance(spec, p, mtu, None, buffers)
                for p in parts])[0]

        unsized = run(2 * nfmodel.NFModel.DEFAULT_DESCRIPTORS)
        sized = run(None)
        self.assertLess(unsized.capacity_mpps, 0.9 * sized.capacity_mpps)
        self.assertGreater(unsized.mem_bw_utilisation, 0.7)
        self.assertGreater(unsized.miss_ratio, 0)
        # Sized buffers fit DDIO: the memory bus stays lightly loaded.
        self.assertLess(sized.mem_bw_utilisation, 0.3)
        # With 64 B packets the same queues nearly fit DDIO.
        small = truth.simulate_server([
            nfmodel.Instance(spec, p, nfmodel.Traffic(64), None, 4096)
            for p in parts])[0]
        self.assertLess(small.mem_bw_utilisation, 0.2)

    def test_overlapping_partitions_are_refused(self):
        spec = catalog.get('LPM')
        self.assertRaises(ValueError, truth.simulate_server, [
            nfmodel.Instance(spec, frozenset({0, 1})),
            nfmodel.Instance(spec, frozenset({1, 2}))])
        self.assertEqual([], truth.simulate_server([]))

    def test_noise_is_seeded_and_checked(self):
        a, b = truth.Noise(1.0, 3), truth.Noise(1.0, 3)
        self.assertEqual([a(10.0) for _ in range(5)],
                         [b(10.0) for _ in range(5)])
        self.assertEqual(10.0, truth.Noise(0.0, 3)(10.0))
        self.assertRaises(ValueError, truth.Noise, -1.0, 0)


class MeasuredFromTruthTest(base.TestCase):
    """Profiles measured from the testbed differ from it by noise only."""

    def _profile(self, name, noise):
        self.flags('resq_profiler', model_truth='testbed',
                   model_noise_pct=noise, model_seed=1)
        return profiler.run(self.conf, name, nfmodel.Traffic(),
                            driver_name='model')

    def test_noiseless_profile_is_the_testbed(self):
        spec = catalog.get('MazuNAT')
        prof = self._profile('MazuNAT', 0.0)
        fit = prof.measurement['fit']
        # What was measured is the testbed's value, exactly.
        for ways, mpps, _ in fit['throughput']['measured']:
            self.assertAlmostEqual(truth.solo(spec, ways).capacity_mpps,
                                   mpps, places=9)
        peak = prof.peak_mpps
        shared = prof.measurement['measurements']['shared']
        for load, us, _ in fit['latency']['measured']:
            if load == 1.0 and shared:
                # From the saturating runs: offered what the NF can do
                # (shared only when that is the stored peak).
                offered = truth.solo(spec, prof.latency_ways).capacity_mpps
                self.assertAlmostEqual(offered, peak, places=6)
            else:
                offered = load * peak
            self.assertAlmostEqual(truth.solo(
                spec, prof.latency_ways, offered_mpps=offered
            ).latency_p95_us, us, places=6)
        # The stored curves (fitted, or the measured points when the
        # model was given up) stay within the error the profile states.
        stated = prof.measurement['max_interpolation_error_pct']
        self.assertLessEqual(stated, 1.0)
        for ways in range(1, 21):
            real = truth.solo(spec, ways).capacity_mpps
            self.assertLessEqual(abs(prof.throughput_at(ways) / real - 1)
                                 * 100, max(stated, 0.5), ways)

    def test_noisy_profile_differs_by_the_noise(self):
        errs = []
        measured = []
        for name in ('MazuNAT', 'Stats', 'EndRE', 'Efficuts'):
            spec = catalog.get(name)
            prof = self._profile(name, 1.0)
            errs += [mpps / truth.solo(spec, ways).capacity_mpps - 1
                     for ways, mpps in prof.throughput]
            # A mean of n measurements is off by the noise over sqrt(n).
            measured += [
                (mpps / truth.solo(spec, ways).capacity_mpps - 1)
                * math.sqrt(n) for ways, mpps, n in
                prof.measurement['fit']['throughput']['measured']]
        self.assertTrue(all(abs(e) < 0.05 for e in errs), errs)
        # The measurements carry the noise (1%); the stored curve, fitted
        # to all of them, carries less of it, but not none.
        self.assertGreater(statistics.pstdev(measured), 0.005)
        self.assertLess(statistics.pstdev(measured), 0.02)
        self.assertGreater(statistics.pstdev(errs), 0.0005)
        self.assertLess(statistics.pstdev(errs), statistics.pstdev(measured))

    def test_testbed_and_planning_model_differ(self):
        # The evaluation's truth is not the planner's model.
        spec = catalog.get('Stats')
        model = nfmodel.NFModel(spec)
        self.assertGreater(abs(truth.solo(spec, 3).capacity_mpps
                               - model.throughput_mpps(3)), 0.05)
        self.flags('resq_profiler', model_truth='nfmodel')
        drv = drivers.load('model', self.conf, 'Stats', nfmodel.Traffic())
        self.assertEqual(model.throughput_mpps(3), drv.throughput(3))
