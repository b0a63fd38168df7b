from resq_profiler import catalog
from resq_profiler import nfmodel
from tests import base

ALL_WAYS = frozenset(range(20))


def _even(i):
    return frozenset({2 * i, 2 * i + 1})


class SoloModelTest(base.TestCase):

    def test_solo_throughput_matches_table_1(self):
        for spec in catalog.CATALOG.values():
            model = nfmodel.NFModel(spec)
            self.assertAlmostEqual(spec.mpps, model.throughput_mpps(20),
                                   places=6, msg=spec.name)

    def test_sensitivity_classes(self):
        for spec in catalog.CATALOG.values():
            model = nfmodel.NFModel(spec)
            rel = model.throughput_mpps(2) / model.throughput_mpps(20)
            if spec.sensitivity == catalog.SENSITIVE:
                self.assertLess(rel, 0.80, spec.name)
            elif spec.sensitivity == catalog.NEUTRAL:
                self.assertTrue(0.80 <= rel < 0.92, (spec.name, rel))
            else:
                self.assertGreaterEqual(rel, 0.97, spec.name)

    def test_curve_shapes(self):
        for spec in catalog.CATALOG.values():
            model = nfmodel.NFModel(spec)
            thr = [model.throughput_mpps(w) for w in range(1, 21)]
            steps = [b - a for a, b in zip(thr, thr[1:])]
            self.assertTrue(all(s >= -1e-12 for s in steps), spec.name)
            self.assertTrue(all(b <= a + 1e-9 for a, b in
                                zip(steps, steps[1:])),
                            '%s throughput not concave' % spec.name)
            lat = [model.latency_p95_us(x / 10.0) for x in range(1, 11)]
            lsteps = [b - a for a, b in zip(lat, lat[1:])]
            self.assertTrue(all(s > 0 for s in lsteps), spec.name)
            self.assertTrue(all(b >= a - 1e-9 for a, b in
                                zip(lsteps, lsteps[1:])),
                            '%s latency not convex' % spec.name)

    def test_more_flows_hurt_flow_state_nfs_only(self):
        stats = nfmodel.NFModel(catalog.get('Stats'))
        few = stats.throughput_mpps(4, nfmodel.Traffic(64, 1000))
        many = stats.throughput_mpps(4, nfmodel.Traffic(64, 200000))
        self.assertGreater(few, many)
        fw = nfmodel.NFModel(catalog.get('Firewall'))
        self.assertAlmostEqual(fw.throughput_mpps(4, nfmodel.Traffic(64, 1)),
                               fw.throughput_mpps(4), places=9)


class ServerSimulationTest(base.TestCase):

    def _solo(self, name):
        return nfmodel.NFModel(catalog.get(name)).throughput_mpps(20)

    def test_alone_on_server_equals_solo(self):
        out = nfmodel.simulate_server([nfmodel.Instance(
            catalog.get('LPM'), ALL_WAYS)])
        self.assertAlmostEqual(self._solo('LPM'), out[0].throughput_mpps,
                               places=3)

    def test_sharing_the_llc_degrades_sensitive_nfs(self):
        spec = catalog.get('Stats')
        out = nfmodel.simulate_server(
            [nfmodel.Instance(spec, ALL_WAYS) for _ in range(9)])
        rel = out[0].throughput_mpps / self._solo('Stats')
        self.assertLess(rel, 0.85)
        ins = catalog.get('Firewall')
        out = nfmodel.simulate_server(
            [nfmodel.Instance(ins, ALL_WAYS) for _ in range(9)])
        self.assertGreater(out[0].throughput_mpps / self._solo('Firewall'),
                           0.99)

    def test_occupancy_follows_access_pressure(self):
        heavy, light = catalog.get('Stats'), catalog.get('IPsec')
        out = nfmodel.simulate_server([nfmodel.Instance(heavy, ALL_WAYS),
                                       nfmodel.Instance(light, ALL_WAYS)])
        self.assertGreater(out[0].occupancy_bytes, out[1].occupancy_bytes)
        total = sum(o.occupancy_bytes for o in out)
        self.assertLessEqual(total, nfmodel.Platform().llc_bytes + 1)
        # A sensitive NF beside insensitive ones keeps most of its solo
        # throughput: it takes the cache they do not use.
        mixed = nfmodel.simulate_server(
            [nfmodel.Instance(heavy, ALL_WAYS)]
            + [nfmodel.Instance(catalog.get('Firewall'), ALL_WAYS)
               for _ in range(8)])
        self.assertGreater(mixed[0].throughput_mpps / self._solo('Stats'),
                           0.97)

    def test_cat_isolates_with_sized_buffers(self):
        spec = catalog.get('MazuNAT')
        alone = nfmodel.simulate_server([nfmodel.Instance(spec,
                                                          _even(0))])
        crowd = nfmodel.simulate_server(
            [nfmodel.Instance(spec, _even(0))]
            + [nfmodel.Instance(catalog.get('Stats'), _even(i))
               for i in range(1, 9)])
        self.assertAlmostEqual(alone[0].throughput_mpps,
                               crowd[0].throughput_mpps, delta=0.03
                               * alone[0].throughput_mpps)

    def test_leaky_dma_with_mtu_packets(self):
        """ResQ Table 2: CAT alone leaks at 1518 B; sized buffers fix it."""
        big = nfmodel.Traffic(1518)
        spec = catalog.get('Stats')
        comp = catalog.get('MazuNAT')
        rest = frozenset(range(1, 20))

        def run(buffers):
            insts = [nfmodel.Instance(spec, frozenset({0}), big, None,
                                      buffers)]
            insts += [nfmodel.Instance(comp, rest, big, 0.35, buffers)
                      for _ in range(11)]
            return nfmodel.simulate_server(insts)[0]

        solo = nfmodel.simulate_server([nfmodel.Instance(
            spec, frozenset({0}), big)])[0].throughput_mpps
        leaky = run(2048)
        sized = run(None)
        self.assertGreater(1 - leaky.throughput_mpps / solo, 0.10)
        self.assertGreater(leaky.mem_bw_utilisation, 0.9)
        self.assertLess(1 - sized.throughput_mpps / solo, 0.03)
        # With 64 B packets the same unsized buffers fit in DDIO's share.
        small = nfmodel.simulate_server(
            [nfmodel.Instance(spec, frozenset({0}), nfmodel.Traffic(), None,
                              2048)]
            + [nfmodel.Instance(comp, rest, nfmodel.Traffic(), 2.0, 2048)
               for _ in range(11)])[0]
        solo64 = nfmodel.NFModel(spec).throughput_mpps(1)
        self.assertLess(1 - small.throughput_mpps / solo64, 0.03)

    def test_latency_grows_past_saturation(self):
        model = nfmodel.NFModel(catalog.get('Snort'))
        full = model.latency_p95_us(1.0)
        self.assertLess(model.latency_p95_us(0.9), full)
        self.assertAlmostEqual(1.2 * full, model.latency_p95_us(1.2))

    def test_offered_load_and_latency(self):
        spec = catalog.get('LPM')
        out = nfmodel.simulate_server([
            nfmodel.Instance(spec, _even(0), offered_mpps=1.0),
            nfmodel.Instance(spec, _even(1), offered_mpps=100.0)])
        self.assertAlmostEqual(1.0, out[0].throughput_mpps)
        self.assertLess(out[1].throughput_mpps, 100.0)
        self.assertGreater(out[1].latency_p95_us, out[0].latency_p95_us)

    def test_overlapping_partitions_are_rejected(self):
        spec = catalog.get('LPM')
        self.assertRaises(ValueError, nfmodel.simulate_server, [
            nfmodel.Instance(spec, frozenset({0, 1})),
            nfmodel.Instance(spec, frozenset({1, 2}))])

    def test_sized_buffers(self):
        plat = nfmodel.Platform()
        # ResQ §4.3's figures: 24576 buffers need 3 MiB at 64 B and
        # 37.5 MiB at 1518 B.
        model = nfmodel.NFModel(catalog.get('Stats'))
        self.assertEqual(3 * nfmodel.MIB, model.dma_footprint_bytes(
            nfmodel.Traffic(64), 24576))
        self.assertEqual(37.5 * nfmodel.MIB, model.dma_footprint_bytes(
            nfmodel.Traffic(1518), 24576))
        # DDIO's 2 ways of 2.25 MiB hold 2949 MTU-sized buffers.
        self.assertEqual(2949, nfmodel.sized_buffers(plat, 1518, 1))
        self.assertEqual(245, nfmodel.sized_buffers(plat, 1518, 12))
        self.assertEqual(36864, nfmodel.sized_buffers(plat, 64, 1))


class CatalogTest(base.TestCase):

    def test_lookup(self):
        self.assertEqual('MazuNAT', catalog.get('mazunat').name)
        exc = self.assertRaises(catalog.exception.UnknownNF, catalog.get,
                                'Bogus')
        self.assertIn("'Bogus'", str(exc))
        self.assertIn('Suricata', str(exc))
        self.assertEqual(9, len(catalog.names()))
        self.assertEqual(['LPM', 'MazuNAT', 'Snort', 'Stats'],
                         catalog.names(catalog.SENSITIVE))
