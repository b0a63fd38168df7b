import itertools
from unittest import mock

from resq_agent.ondemand import grouping
from resq_agent.ondemand import maxmin
from resq_agent.ondemand import model
from resq_agent.ondemand import mrc
from tests import base

MB = 1 << 20


def nf(name, priority=1.0):
    return model.NF(name, 10.0, priority=priority)


def names(groups):
    return [sorted(n.uuid for n in g) for g in groups]


def pairings(items):
    """Every way to split ``items`` into pairs."""
    if not items:
        yield []
        return
    a = items[0]
    for b in items[1:]:
        rest = [x for x in items if x not in (a, b)]
        for p in pairings(rest):
            yield [[a, b]] + p


# (amplitude Mbytes/s, working set MiB, skew) of six NFs; the seventh, a
# stream that misses whatever it holds.
SIX = ((2016, 6.92, 2), (1608, 3.58, 5), (501, 3.78, 2), (330, 5.98, 3),
       (2990, 4.82, 2), (1182, 5.01, 3))


def six_curves():
    return {'n%d' % i: mrc.power_law(a * 1e6, ws * MB, b)
            for i, (a, ws, b) in enumerate(SIX)}


def readings_for(curves):
    return {u: model.Reading(1.0, MB, c.miss_bw(MB))
            for u, c in curves.items()}


def exact(curves, groups, weights=None, ways=1):
    costs = grouping.Costs([curves[n.uuid] for g in groups for n in g],
                           weights or [1.0] * sum(map(len, groups)), ways,
                           MB, None)
    out, i = 0.0, 0
    for g in groups:
        out += costs.of(range(i, i + len(g)))
        i += len(g)
    return out


class GroupingTest(base.TestCase):

    def test_light_nfs_are_kept_from_heavy_missers(self):
        # From readings alone. Alike NFs in a class sized for them lose
        # nothing against each alone in its share; a light NF beside a
        # heavy misser loses its cache to it.
        readings = {'h1': model.Reading(1, 8 * MB, 5e9),
                    'h2': model.Reading(1, 8 * MB, 5e9),
                    'l1': model.Reading(1, 1 * MB, 1e6),
                    'l2': model.Reading(1, 1 * MB, 1e6)}
        groups = grouping.group([nf(n) for n in sorted(readings)],
                                readings, 2, ways_per_nf=2, way_bytes=MB)
        self.assertEqual([['h1', 'h2'], ['l1', 'l2']],
                         sorted(names(groups)))

    def test_matches_brute_force_on_the_exact_class_cost(self):
        curves = six_curves()
        nfs = [nf(u) for u in sorted(curves)]
        groups = grouping.group(nfs, readings_for(curves), 3,
                                ways_per_nf=1, way_bytes=MB, curves=curves)
        self.assertEqual(3, len(groups))
        self.assertTrue(all(len(g) == 2 for g in groups))
        best = min(exact(curves, p) for p in pairings(nfs))
        worst = max(exact(curves, p) for p in pairings(nfs))
        got = exact(curves, groups)
        self.assertLess(best, worst * 0.9)
        self.assertAlmostEqual(best, got, delta=best * 1e-6)

    def test_every_member_is_charged_not_only_against_the_anchor(self):
        # A tiny NF as anchor loses little and costs its partners nothing
        # (they gain cache from it), so anchor-only pricing calls the
        # class free; the sensitive NF loses to the stream beside it.
        tiny = mrc.power_law(1e6, 0.2 * MB, 2.0)
        hot = mrc.power_law(2e9, 6 * MB, 3.0)
        stream = mrc.Curve([0.0, 64 * MB], [3e9, 3e9])
        costs = grouping.Costs([tiny, hot, stream], [1.0] * 3, 1, 2 * MB,
                               None)
        pairs = costs.of((0, 1)) + costs.of((0, 2))
        self.assertGreater(costs.of((0, 1, 2)), 10 * pairs + 1e6)

    def test_the_class_size_is_in_the_cost(self):
        a = mrc.power_law(1e9, 3 * MB, 2.0)
        b = mrc.Curve([0.0, 64 * MB], [2e9, 2e9])
        small = grouping.Costs([a, b], [1.0, 1.0], 1, MB, None)
        large = grouping.Costs([a, b], [1.0, 1.0], 8, MB, None)
        self.assertGreater(small.of((0, 1)), 0.0)
        self.assertLess(large.of((0, 1)), small.of((0, 1)) * 0.5)
        # Without a size per NF the class holds what its members hold.
        occ = grouping.Costs([a, b], [1.0, 1.0], None, MB, [MB, 15 * MB])
        self.assertEqual(16 * MB, occ.size((0, 1)))

    def test_priority_keeps_an_nf_with_fewer_losses(self):
        curves = six_curves()
        readings = readings_for(curves)

        def own_loss(groups):
            g = next(g for g in groups if any(n.uuid == 'n0' for n in g))
            order = sorted(g, key=lambda n: n.uuid != 'n0')
            return exact(curves, [order], [1.0] + [0.0] * (len(g) - 1))

        plain = grouping.group([nf(u) for u in sorted(curves)], readings,
                               3, ways_per_nf=1, way_bytes=MB,
                               curves=curves)
        high = grouping.group([nf(u, 8.0 if u == 'n0' else 1.0)
                               for u in sorted(curves)], readings, 3,
                              ways_per_nf=1, way_bytes=MB, curves=curves)
        self.assertGreater(own_loss(plain), 1e7)
        self.assertLess(own_loss(high), own_loss(plain) * 0.5)
        self.assertNotEqual(names(plain), names(high))
        e = self.assertRaises(ValueError, grouping.group,
                              [nf(u, 0.0) for u in sorted(curves)],
                              readings, 3)
        self.assertIn('priority must be a positive number', str(e))

    def test_colour_budgets_bound_the_classes(self):
        curves = six_curves()
        readings = readings_for(curves)
        nfs = [nf(u) for u in sorted(curves)]
        groups = grouping.group(nfs, readings, 2, ways_per_nf=1,
                                way_bytes=MB, curves=curves,
                                budgets=[1, 5])
        self.assertEqual([1, 5], [len(g) for g in groups])
        for bad in ([1, 1], [3], [0, 6]):
            e = self.assertRaises(ValueError, grouping.group, nfs,
                                  readings, 2, budgets=bad)
            self.assertIn('budgets', str(e))

    def test_local_search_leaves_no_improving_move_or_swap(self):
        curves = six_curves()
        order = sorted(curves)
        costs = grouping.Costs([curves[u] for u in order], [1.0] * 6, 1,
                               MB, None)
        # The worst pairing as a start.
        start = max(pairings(list(range(6))), key=costs.total)
        caps = [3, 3, 3]
        done = grouping.local_search(costs, start, caps)
        self.assertLess(costs.total(done), costs.total(start))
        self.assertEqual(list(range(6)), sorted(i for g in done for i in g))
        total = costs.total(done)
        for a, b in itertools.permutations(range(3), 2):
            for u in done[a]:
                if len(done[a]) > 1 and len(done[b]) < caps[b]:
                    moved = [list(g) for g in done]
                    moved[a].remove(u)
                    moved[b].append(u)
                    self.assertGreaterEqual(costs.total(moved),
                                            total * (1 - 1e-9))
                for w in done[b]:
                    swapped = [list(g) for g in done]
                    swapped[a][swapped[a].index(u)] = w
                    swapped[b][swapped[b].index(w)] = u
                    self.assertGreaterEqual(costs.total(swapped),
                                            total * (1 - 1e-9))

    def test_fewer_nfs_than_classes_each_alone(self):
        readings = {'a': model.Reading(1, MB, 1e9)}
        self.assertEqual([['a']], names(grouping.group([nf('a')],
                                                       readings, 4)))
        self.assertEqual([], grouping.group([], readings, 0))
        self.assertRaises(ValueError, grouping.group, [nf('a')], readings,
                          0)

    def test_maxmin_passes_the_class_size(self):
        lease = model.Lease(0, 0, 16, 4, 1, MB)
        nfs = [model.NF('v%d' % i, 10.0) for i in range(6)]
        # All violate with small footprints and high miss rates: more
        # isolated NFs than classes.
        readings = {n.uuid: model.Reading(20.0, 0.5 * MB, 2e9 + i * 1e8)
                    for i, n in enumerate(nfs)}
        with mock.patch.object(grouping, 'group',
                               wraps=grouping.group) as group:
            plan = maxmin.plan(lease, nfs, readings, 1e9)
        kwargs = group.call_args.kwargs
        self.assertEqual(MB, kwargs['way_bytes'])
        self.assertEqual(2, kwargs['ways_per_nf'])
        grouped = [c for c in plan.classes if c.kind == 'grouped']
        self.assertEqual(3, len(grouped))
        # Each member brings its fair share; the last class also takes
        # the ways no round handed out.
        for c in grouped[:-1]:
            self.assertEqual(2 * len(c.members), c.ways)
        self.assertEqual(16, sum(c.ways for c in plan.classes))
