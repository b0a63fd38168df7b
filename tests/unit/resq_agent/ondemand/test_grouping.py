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


def random_costs(n, seed, ways=1):
    import random
    rnd = random.Random(seed)
    curves = [mrc.power_law(rnd.uniform(1e7, 5e9), rnd.uniform(0.3, 8) * MB,
                            rnd.choice((1.5, 2.0, 3.0, 5.0)))
              for _ in range(n)]
    weights = [rnd.choice((1.0, 1.0, 2.0, 8.0)) for _ in range(n)]
    return grouping.Costs(curves, weights, ways, MB, None)


class CostsTest(base.TestCase):

    def test_pairs_at_once_cost_exactly_what_one_at_a_time_does(self):
        for seed in range(4):
            at_once = random_costs(12, seed)
            at_once.pairs()
            for i, j in itertools.combinations(range(12), 2):
                one = random_costs(12, seed)
                # Each way a pair is costed one at a time.
                self.assertEqual(one.of((i, j)), at_once.of((i, j)))
                self.assertEqual(random_costs(12, seed).of_each([j], [i]),
                                 [at_once.of((i, j))])

    def test_pairs_leave_classes_sized_by_occupancy_alone(self):
        costs = grouping.Costs([mrc.power_law(1e9, MB, 2.0)] * 3,
                               [1.0] * 3, None, MB, [MB, MB, MB])
        costs.pairs()
        self.assertEqual({}, costs._memo)

    def test_memo_is_by_members_whatever_their_order(self):
        costs = random_costs(5, 1)
        self.assertEqual(costs.of((0, 3, 4)), costs.of([4, 0, 3]))
        self.assertEqual(0.0, costs.of([2]))
        self.assertEqual([0, 3, 4], grouping.indices(grouping.mask([4, 0,
                                                                    3])))


class BoundedSearchTest(base.TestCase):

    def setUp(self):
        super().setUp()
        curves = six_curves()
        self.costs = grouping.Costs([curves[u] for u in sorted(curves)],
                                    [1.0] * 6, 1, MB, None)
        self.start = max(pairings(list(range(6))), key=self.costs.total)

    def test_no_step_left_keeps_the_start(self):
        self.assertEqual(self.start, grouping.local_search(
            self.costs, self.start, [3, 3, 3], steps=0))

    def test_one_step_is_one_improving_move_or_swap(self):
        one = grouping.local_search(self.costs, self.start, [3, 3, 3],
                                    steps=1)
        self.assertLess(self.costs.total(one), self.costs.total(self.start))
        moved = sum(1 for g in one for i in g
                    if not any(i in s and set(g) & set(s) - {i}
                               for s in self.start))
        self.assertLessEqual(moved, 2)
        full = grouping.local_search(self.costs, self.start, [3, 3, 3])
        self.assertLessEqual(self.costs.total(full), self.costs.total(one))

    def test_the_bound_is_in_steps_per_nf(self):
        # No step per NF: the default budget of a search is none.
        with mock.patch.object(grouping, 'SEARCH_STEPS_PER_NF', 0):
            self.assertEqual(self.start, grouping.local_search(
                self.costs, self.start, [3, 3, 3]))


class IncrementalGroupingTest(base.TestCase):
    """The grouping starts from the last period's when it still fits."""

    def setUp(self):
        super().setUp()
        self.curves = six_curves()
        self.nfs = [nf(u) for u in sorted(self.curves)]

    def group(self, curves, start=None, nfs=None, k=3):
        return grouping.group(nfs or self.nfs, readings_for(curves), k,
                              ways_per_nf=1, way_bytes=MB, curves=curves,
                              start=start)

    def test_same_input_twice_gives_the_same_grouping(self):
        first = self.group(self.curves)
        again = self.group(self.curves, start=names(first))
        self.assertEqual(names(first), names(again))

    def test_the_last_grouping_wins_a_tie_with_the_flow(self):
        # As good as the flow's answer, in another order: it is kept.
        first = names(self.group(self.curves))
        start = [list(reversed(g)) for g in reversed(first)]
        again = names(self.group(self.curves, start=start))
        self.assertEqual([sorted(g) for g in reversed(first)], again)

    def test_never_worse_than_from_scratch(self):
        curves = six_curves()
        fresh = self.group(curves)
        for start in pairings(sorted(curves)):
            got = self.group(curves, start=start)
            self.assertLessEqual(exact(curves, got),
                                 exact(curves, fresh) * (1 + 1e-12))

    def test_a_changed_nf_regroups(self):
        first = self.group(self.curves)
        self.assertIn(['n1', 'n5'], names(first))
        # n5 turns into a stream: whoever shares with it loses.
        changed = dict(self.curves, n5=mrc.Curve([0.0, 64 * MB],
                                                 [3e9, 3e9]))
        warm = self.group(changed, start=names(first))
        fresh = self.group(changed)
        self.assertNotIn(['n1', 'n5'], names(warm))
        self.assertEqual(sorted(names(fresh)), sorted(names(warm)))

    def test_nfs_that_left_are_dropped_and_new_ones_placed(self):
        first = names(self.group(self.curves))
        # n0 left; n6 is new.
        curves = dict(self.curves, n6=mrc.power_law(5e8, 2 * MB, 2.0))
        del curves['n0']
        nfs = [nf(u) for u in sorted(curves)]
        with mock.patch.object(grouping, 'local_search',
                               wraps=grouping.local_search) as search:
            got = names(self.group(curves, start=first, nfs=nfs))
        # The last grouping, n0 out and n6 in, is the first start.
        begin = [sorted(nfs[i].uuid for i in g)
                 for g in search.call_args_list[0].args[1]]
        self.assertEqual(sorted(u for g in first for u in g if u != 'n0')
                         + ['n6'], sorted(u for g in begin for u in g))
        self.assertEqual(sorted(curves), sorted(u for g in got for u in g))
        self.assertEqual(3, len(got))
        self.assertTrue(all(len(g) == 2 for g in got))

    def test_a_start_that_does_not_fit_is_left_out(self):
        costs = grouping.Costs([self.curves[n.uuid] for n in self.nfs],
                               [1.0] * 6, 1, MB, None)
        uuids = [n.uuid for n in self.nfs]
        caps = [2, 2, 2]
        # Fewer than half the NFs, a class over its cap, more classes
        # than k, an NF twice.
        for start in ([['n0', 'n1']], [['n0', 'n1', 'n2'], ['n3', 'n4']],
                      [['n0'], ['n1'], ['n2'], ['n3']],
                      [['n0', 'n1'], ['n1', 'n2'], ['n3']]):
            self.assertIsNone(grouping.carry(costs, uuids, start, caps),
                              start)
        # Two classes for three: n2, new, opens the third and n5, new
        # too, goes where there is room.
        two = grouping.carry(costs, uuids, [['n0', 'n1'], ['n3', 'n4']],
                             caps)
        self.assertEqual([[0, 1], [3, 4], [2, 5]], two)
        # No new NF: the member whose leaving saves most gets a class.
        costs3 = grouping.Costs([self.curves[u] for u in uuids[:4]],
                                [1.0] * 4, 1, MB, None)
        split = grouping.carry(costs3, uuids[:4], [['n0', 'n1'],
                                                   ['n2', 'n3']], caps)
        self.assertEqual(3, len(split))
        self.assertEqual([0, 1, 2, 3], sorted(i for g in split for i in g))
        # Such a start leaves the flow's answer alone.
        self.assertEqual(names(self.group(self.curves)),
                         names(self.group(self.curves,
                                          start=[['n0', 'n1']])))

    def test_explicit_budgets_take_no_start(self):
        first = names(self.group(self.curves))
        with mock.patch.object(grouping, 'carry') as carry:
            grouping.group(self.nfs, readings_for(self.curves), 3,
                           ways_per_nf=1, way_bytes=MB, curves=self.curves,
                           budgets=[2, 2, 2], start=first)
        carry.assert_not_called()
