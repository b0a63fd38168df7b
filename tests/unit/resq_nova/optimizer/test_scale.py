"""The planner at a real cloud's edges: what Nova checks, cells, swaps,
needless moves, the pooled bounds (against brute force), the stop rule,
plan age and pruning."""

import datetime
import itertools
import os
import random
from unittest import mock

from resq_nova.optimizer import bound
from resq_nova.optimizer import execute
from resq_nova.optimizer import model
from resq_nova.optimizer import ordering
from resq_nova.optimizer import planner
from resq_nova.optimizer import snapshot
from resq_nova.optimizer import store as store_mod
from tests import base
from tests.unit.resq_nova.optimizer import base as obase


def snap(hosts, insts, groups=()):
    return snapshot.from_dict(obase.snapshot(hosts, insts, groups))


def plan(s, **kw):
    kw.setdefault('time_limit', 10)
    kw.setdefault('mip_gap', 0.0)
    kw.setdefault('moves_gap', 0.0)
    return planner.make_plan(s, **kw)


class WhatNovaChecksTest(base.TestCase):

    def test_move_needing_memory_the_target_lacks_is_never_emitted(self):
        # h2 has cores and ways for a, but 1 GB of memory left; a needs 2.
        s = snap([obase.host('h1', resources={'MEMORY_MB': 8192}),
                  obase.host('h2', resources={'MEMORY_MB': 3072})],
                 [obase.inst('a', 'h1', resources={'MEMORY_MB': 2048}),
                  obase.inst('b', 'h2', resources={'MEMORY_MB': 2048})])
        p = plan(s)
        self.assertEqual(['b'], [mv['uuid'] for mv in p['moves']])
        self.assertEqual('h1', p['moves'][0]['to_host'])
        # With the memory, either way would do.
        s.host('h2').resources['MEMORY_MB'] = 4096
        self.assertEqual(1, len(plan(s)['moves']))

    def test_huge_pages_of_the_numa_cell(self):
        huge = [{'id': 0, 'cores': 6, 'ways': 9, 'reserved_ways': 2,
                 'hugepages_mb': 2048}]
        s = snap([obase.host('h1', domains=()) | {'domains': huge},
                  obase.host('h2', domains=()) | {'domains': [
                      dict(huge[0], hugepages_mb=4096)]}],
                 [obase.inst('a', 'h1', memory_mb=2048, hugepages=True),
                  obase.inst('b', 'h2', memory_mb=2048, hugepages=True)])
        p = plan(s)
        # Only h2's cell has huge pages for two.
        self.assertEqual([('a', 'h2')], [(mv['uuid'], mv['to_host'])
                                         for mv in p['moves']])
        # Small-page memory does not count against huge pages.
        s2 = snapshot.from_dict(dict(s.to_dict(), instances=[
            obase.inst('a', 'h1', memory_mb=2048),
            obase.inst('b', 'h2', memory_mb=2048)]))
        self.assertEqual(1, len(plan(s2)['moves']))

    def test_over_committed_memory_is_refused(self):
        exc = self.assertRaises(
            snapshot.SnapshotError, snap,
            [obase.host('h1', resources={'MEMORY_MB': 1024})],
            [obase.inst('a', 'h1', resources={'MEMORY_MB': 2048})])
        self.assertIn('2048 MEMORY_MB of 1024', str(exc))

    def test_bad_resource_class_is_named(self):
        exc = self.assertRaises(
            snapshot.SnapshotError, snap,
            [obase.host('h1', resources={'memory': 1024})], [])
        self.assertIn("'memory' is not a resource class name", str(exc))

    def test_cells_are_planned_apart(self):
        hosts = [obase.host(name, cell=cell) for name, cell in (
            ('a1', 'cell1'), ('a2', 'cell1'), ('b1', 'cell2'),
            ('b2', 'cell2'))]
        insts = [obase.inst('x', 'a1'), obase.inst('y', 'b1'),
                 obase.inst('z', 'b2')]
        p = plan(snap(hosts, insts))
        # Across cells, one host could hold all three; per cell, cell1 is
        # packed already and cell2 frees one host.
        self.assertEqual(3, p['hosts_used_before'])
        self.assertEqual(2, p['hosts_used_after'])
        self.assertEqual(2, p['lower_bound'])
        self.assertEqual(1, len(p['moves']))
        mv = p['moves'][0]
        self.assertEqual({mv['from_host'], mv['to_host']}, {'b1', 'b2'})
        self.assertEqual(['cell1', 'cell2'], [c['cell'] for c in p['cells']])
        # A group's members in another cell do not reach into this one.
        cells = snapshot.cells(snap(hosts, insts, [
            {'policy': 'anti-affinity', 'members': ['x', 'y']}]))
        self.assertEqual([['x'], ['y']], [
            c.server_groups[0].members for _, c in cells])

    def _three_cells(self):
        hosts, insts = [], []
        for c in range(3):
            for h in range(4):
                name = 'c%dh%d' % (c, h)
                hosts.append(obase.host(name, cell='cell%d' % c))
                insts += [obase.inst('%s-%d' % (name, n), name, cores=2,
                                     ways=3) for n in range(h % 2 + 1)]
        return snap(hosts, insts)

    def test_cells_in_parallel_plan_as_one_after_the_other(self):
        s = self._three_cells()
        serial = plan(s)
        self.assertEqual(1, serial['solver']['workers'])
        with mock.patch.object(planner, 'PARALLEL_MIN_INSTANCES', 1):
            apart = plan(s, workers=2)
        self.assertEqual(2, apart['solver']['workers'])
        for key in ('hosts_used_before', 'hosts_used_after', 'lower_bound',
                    'moves_lower_bound', 'cells'):
            self.assertEqual(serial[key], apart[key], key)
        self.assertEqual(
            sorted((m['uuid'], m['to_host']) for m in serial['moves']),
            sorted((m['uuid'], m['to_host']) for m in apart['moves']))
        self.assertEqual(['cell0', 'cell1', 'cell2'],
                         [c['cell'] for c in apart['cells']])
        self.assertLess(apart['hosts_used_after'],
                        apart['hosts_used_before'])

    def test_small_snapshots_are_planned_here(self):
        s = self._three_cells()
        with mock.patch.object(planner, '_plan_cells_apart') as apart:
            p = plan(s, workers=4)
        apart.assert_not_called()
        self.assertEqual(1, p['solver']['workers'])

    def test_a_broken_pool_leaves_the_cells_to_this_process(self):
        s = self._three_cells()

        class Broken(object):
            def __init__(self, max_workers, mp_context):
                self.workers = max_workers

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                return False

            def submit(self, fn, *args):
                raise planner.concurrent.futures.process.BrokenProcessPool(
                    'a worker was killed')

        with mock.patch.object(planner, 'PARALLEL_MIN_INSTANCES', 1), \
                mock.patch.object(planner.concurrent.futures,
                                  'ProcessPoolExecutor', Broken):
            p = plan(s, workers=3)
        self.assertEqual(plan(s)['hosts_used_after'], p['hosts_used_after'])
        self.assertEqual(['cell0', 'cell1', 'cell2'],
                         [c['cell'] for c in p['cells']])


class SwapTest(base.TestCase):

    def swap_cloud(self, spare=True):
        # h1 full on ways, h2 full on cores; the solver wants a <-> b.
        hosts = [obase.host('h1', domains=((4, 6),)),
                 obase.host('h2', domains=((4, 6),))]
        if spare:
            hosts.append(obase.host('h3', domains=((4, 6),)))
        return snap(hosts, [obase.inst('a', 'h1', cores=1, ways=5),
                            obase.inst('b', 'h2', cores=3, ways=2)])

    def test_swap_goes_through_a_host_with_room(self):
        s = self.swap_cloud()
        targets = {'a': ('h2', 0), 'b': ('h1', 0)}
        moves, left = ordering.order(s, targets)
        self.assertEqual([], moves)
        self.assertEqual(2, len(left))
        moves, left = ordering.order(s, targets, detour=True)
        self.assertEqual([], left)
        self.assertEqual(3, len(moves))
        first = moves[0]
        self.assertTrue(first['detour'])
        self.assertEqual('h3', first['to_host'])
        # The second leg starts where the first one went.
        again = [mv for mv in moves if mv['uuid'] == first['uuid']][1]
        self.assertEqual('h3', again['from_host'])
        self.assertIsNone(ordering.replay(s, moves))

    def test_no_safe_order_is_said_not_hidden(self):
        s = self.swap_cloud(spare=False)
        moves, left = ordering.order(s, {'a': ('h2', 0), 'b': ('h1', 0)},
                                     detour=True)
        self.assertEqual([], moves)
        self.assertIn('no safe order', left[0]['reason'])

    def test_blocked_moves_are_kept_in_place_and_solved_again(self):
        s = snap([obase.host('h1', domains=((4, 6),)),
                  obase.host('h2', domains=((4, 6),)),
                  obase.host('h3', domains=((1, 1),))],
                 [obase.inst('a', 'h1', cores=1, ways=5),
                  obase.inst('b', 'h2', cores=3, ways=2),
                  obase.inst('c', 'h3', cores=1, ways=1)])
        real = planner.solve
        swap = model.Result(
            hosts_before=3, hosts_after=2, lower_bound=2, gap_pct=0.0,
            targets={'a': ('h2', 0), 'b': ('h1', 0)},
            moves_lower_bound=1, status='test', build_s=0.0, solve_s=0.0,
            fixed={})
        calls = []

        def solve(snap_, **kw):
            calls.append(sorted(i.uuid for i in snap_.instances
                                if not i.migratable))
            return swap if len(calls) == 1 else real(snap_, **kw)

        self.useFixture(__import__('fixtures').MockPatch(
            'resq_nova.optimizer.planner.solve', side_effect=solve))
        p = plan(s)
        # The second solve kept a and b (no safe order) where they are.
        self.assertEqual([[], ['a', 'b']], calls)
        self.assertTrue(p['proposed'], p['reason'])
        self.assertEqual([('c', 'h3')], [(mv['uuid'], mv['from_host'])
                                         for mv in p['moves']])
        self.assertIn('2 move(s) of the first plan had no safe order',
                      p['reason'])
        self.assertIn('solved again with those instances kept in place',
                      p['reason'])
        self.assertEqual(['h3'], p['freed_hosts'])

    def test_moves_that_free_nothing_are_dropped(self):
        s = snap([obase.host('h1'), obase.host('h2'), obase.host('h3')],
                 [obase.inst('a', 'h1'), obase.inst('b', 'h2'),
                  obase.inst('c', 'h3')])
        moves = ordering.order(s, {'a': ('h2', 0), 'b': ('h3', 0)})[0]
        # b leaving h2 frees nothing: a arrives there.
        kept, dropped = ordering.needed_only(s, moves)
        self.assertEqual(['a'], [mv['uuid'] for mv in kept])
        self.assertEqual(['b'], [mv['uuid'] for mv in dropped])

    def test_a_move_that_makes_room_is_kept(self):
        # h2 has room for a only once b has left for h3.
        s = snap([obase.host('h1', domains=((4, 6),)),
                  obase.host('h2', domains=((4, 6),)),
                  obase.host('h3', domains=((4, 9),))],
                 [obase.inst('a', 'h1', ways=4), obase.inst('b', 'h2',
                                                            ways=4),
                  obase.inst('c', 'h3', ways=4)])
        moves = [
            {'uuid': 'b', 'from_host': 'h2', 'from_domain': 0,
             'to_host': 'h3', 'to_domain': 0},
            {'uuid': 'a', 'from_host': 'h1', 'from_domain': 0,
             'to_host': 'h2', 'to_domain': 0}]
        kept, dropped = ordering.needed_only(s, moves)
        self.assertEqual(['b', 'a'], [mv['uuid'] for mv in kept])
        self.assertEqual([], dropped)

    def test_reason_says_what_happened(self):
        s = self.swap_cloud(spare=False)
        swap = model.Result(
            hosts_before=2, hosts_after=1, lower_bound=1, gap_pct=0.0,
            targets={'a': ('h2', 0), 'b': ('h1', 0)}, moves_lower_bound=2,
            status='test', build_s=0.0, solve_s=0.0, fixed={})
        self.useFixture(__import__('fixtures').MockPatch(
            'resq_nova.optimizer.planner.solve', return_value=swap))
        p = plan(s)
        self.assertFalse(p['proposed'])
        self.assertEqual([], p['moves'])
        self.assertNotIn('no plan uses fewer', p['reason'])
        self.assertIn("2 move(s) of the solver's plan (2 -> 1 hosts) left "
                      "out for want of a safe order", p['reason'])
        self.assertIn('so nothing moves', p['reason'])


def brute_force(s):
    """``(fewest hosts, fewest moves at that count)`` by trying all."""
    fixed = model.fixed_instances(s)
    slots = [(h.name, d.id) for h in s.hosts for d in h.domains]
    best = None
    insts = s.instances
    for combo in itertools.product(range(len(slots)), repeat=len(insts)):
        moved = []
        for inst, k in zip(insts, combo):
            host, dom = slots[k]
            if inst.uuid in fixed and (host, dom) != (inst.host,
                                                      inst.domain):
                break
            moved.append((inst, host, dom))
        else:
            if not _fits(s, moved):
                continue
            used = {h for _, h, _ in moved} | {
                h.name for h in s.hosts if h.other_load}
            moves = sum(1 for inst, h, _ in moved if h != inst.host)
            value = (len(used), moves)
            if best is None or value < best:
                best = value
    return best


def _fits(s, placed):
    use = {}
    clos = {}
    for inst, host, dom in placed:
        u = use.setdefault((host, dom), [0, 0])
        u[0] += inst.cores
        u[1] += inst.ways
        clos[host] = clos.get(host, 0) + inst.clos
    for (host, dom), (cores, ways) in use.items():
        d = s.host(host).domain(dom)
        if cores > d.cores or ways > d.ways:
            return False
    return all(n <= s.host(h).clos for h, n in clos.items())


class BoundTest(base.TestCase):

    def random_cloud(self, rng):
        hosts = []
        for n in range(rng.randint(2, 4)):
            doms = tuple((rng.randint(2, 4), rng.randint(4, 8))
                         for _ in range(rng.randint(1, 2)))
            hosts.append(obase.host('h%d' % n, domains=doms,
                                    clos=rng.randint(2, 3)))
        insts = []
        use = {}
        for n in range(rng.randint(2, 5)):
            h = rng.choice(hosts)
            d = rng.randrange(len(h['domains']))
            cores, ways = rng.randint(1, 2), rng.randint(1, 4)
            u = use.setdefault((h['name'], d), [0, 0, 0])
            dom = h['domains'][d]
            hc = sum(v[2] for k, v in use.items() if k[0] == h['name'])
            if (u[0] + cores > dom['cores'] or u[1] + ways > dom['ways']
                    or hc + 1 > h['clos']):
                continue
            u[0] += cores
            u[1] += ways
            u[2] += 1
            insts.append(obase.inst('i%d' % n, h['name'], d, cores, ways,
                                    migratable=rng.random() > 0.2))
        return snap(hosts, insts)

    def test_pooled_bounds_never_exceed_brute_force(self):
        rng = random.Random(7)
        tight = 0
        for _ in range(40):
            s = self.random_cloud(rng)
            if not s.instances:
                continue
            fixed = model.fixed_instances(s)
            hosts, moves = brute_force(s)
            lower, _ = bound.hosts_lower_bound(s, fixed)
            self.assertLessEqual(lower, hosts, s.to_dict())
            mlb = bound.moves_lower_bound(s, fixed, hosts)
            self.assertLessEqual(mlb, moves, s.to_dict())
            tight += lower == hosts
            # And the planner's plan is never better than the optimum
            # (it would be wrong) and proven within its stated gap.
            p = plan(s)
            self.assertGreaterEqual(p['hosts_used_after'], hosts)
            self.assertLessEqual(p['lower_bound'], hosts)
        self.assertGreater(tight, 20)

    def test_pooled_moves_bound_never_exceeds_brute_force(self):
        rng = random.Random(11)
        stronger = 0
        for _ in range(60):
            s = self.random_cloud(rng)
            if not s.instances:
                continue
            fixed = model.fixed_instances(s)
            hosts, moves = brute_force(s)
            least = bound.moves_lower_bound(s, fixed, hosts)
            pooled = bound.moves_lower_bound(s, fixed, hosts,
                                             pooled_seconds=5.0)
            self.assertLessEqual(pooled, moves, s.to_dict())
            self.assertGreaterEqual(pooled, least)
            self.assertLessEqual(bound.pooled_moves_bound(s, fixed, hosts),
                                 moves, s.to_dict())
            stronger += pooled > least
        self.assertGreater(stronger, 0)

    def test_pooled_moves_bound_closes_what_capacity_forces(self):
        # a holds one instance but b and c cannot take it (their classes
        # of service are all taken): to keep two hosts, b or c closes,
        # two moves, where the fewest instances on one host say one.
        hosts = [obase.host('a', domains=((8, 16),), clos=4),
                 obase.host('b', domains=((4, 8),), clos=2),
                 obase.host('c', domains=((4, 8),), clos=2)]
        insts = [obase.inst('i1', 'a', 0, 1, 2),
                 obase.inst('i2', 'b', 0, 1, 2),
                 obase.inst('i3', 'b', 0, 1, 2),
                 obase.inst('i4', 'c', 0, 1, 2),
                 obase.inst('i5', 'c', 0, 1, 2)]
        s = snap(hosts, insts)
        fixed = model.fixed_instances(s)
        self.assertEqual((2, 2), brute_force(s))
        self.assertEqual(1, bound.moves_lower_bound(s, fixed, 2))
        self.assertEqual(2, bound.moves_lower_bound(s, fixed, 2,
                                                    pooled_seconds=5.0))

    def test_pooled_bound_counts_domains_not_just_sums(self):
        # Four instances of 5 ways: two hosts of two 6-way domains hold
        # them, though three hosts' summed 12 ways would seem to hold
        # 20 ways in two.
        s = snap([obase.host('h%d' % n, domains=((4, 6), (4, 6)), clos=4)
                  for n in range(4)],
                 [obase.inst('i%d' % n, 'h%d' % n, ways=5)
                  for n in range(4)])
        self.assertEqual(2, bound.hosts_lower_bound(s, {})[0])
        s = snap([obase.host('h%d' % n, domains=((4, 6),), clos=4)
                  for n in range(3)] + [obase.host('h3', domains=((4, 12),),
                                                   clos=4)],
                 [obase.inst('i%d' % n, 'h%d' % n, ways=5)
                  for n in range(3)])
        # 5 + 5 fit in h3's 12 ways; the third needs its own domain.
        self.assertEqual(2, bound.hosts_lower_bound(s, {})[0])

    def test_bound_keeps_the_lp_when_the_milp_is_stopped(self):
        # Twenty hosts of 6-way domains, one 5-way instance each: ten
        # hosts at least (one per domain, two domains per host). A MILP
        # stopped before it proves anything leaves the LP relaxation's
        # bound, not the forced hosts alone.
        s = snap([obase.host('h%d' % n, domains=((4, 6), (4, 6)), clos=4)
                  for n in range(20)],
                 [obase.inst('i%d' % n, 'h%d' % n, ways=5)
                  for n in range(20)])
        full, status = bound.hosts_lower_bound(s, {})
        self.assertEqual(10, full)
        self.assertNotIn('LP relaxation', status)
        real = bound.highs.new_highs

        def stopped(highspy):
            h = real(highspy)
            run = h.run

            def only_the_lp():
                if h.getOptionValue('solve_relaxation')[1]:
                    return run()
                # The MIP "ran out of time" before its first bound.
                return highspy.HighsStatus.kOk

            h.run = only_the_lp
            return h

        with mock.patch.object(bound.highs, 'new_highs', stopped):
            lp, status = bound.hosts_lower_bound(s, {})
        self.assertIn('LP relaxation bound', status)
        self.assertEqual(10, lp)

    def test_stop_rule_returns_without_the_per_host_model(self):
        s = snap([obase.host('h%d' % n) for n in range(6)],
                 [obase.inst('i%d' % n, 'h%d' % n) for n in range(6)])
        result = planner.solve(s, time_limit=10, mip_gap=0.01)
        # Three classes of service per host: two hosts, four moves.
        self.assertEqual(2, result.hosts_after)
        self.assertEqual(2, result.lower_bound)
        self.assertEqual(4, result.moves_lower_bound)
        self.assertEqual(4, len(result.targets))
        self.assertIn('heuristic', result.status)
        self.assertEqual(0.0, result.build_s)


class AgeAndPruneTest(base.TestCase):

    def proposed(self, created):
        return {'id': 'plan-x', 'created_at': created.isoformat(),
                'hosts_used_before': 2, 'hosts_used_after': 1,
                'lower_bound': 1, 'gap_pct': 0.0, 'proposed': True,
                'reason': 'test', 'moves': [], 'status': 'proposed'}

    def test_plan_older_than_its_ttl_is_refused(self):
        now = datetime.datetime(2026, 11, 25, 12, 0,
                                tzinfo=datetime.timezone.utc)
        fresh = self.proposed(now - datetime.timedelta(minutes=10))
        execute.check_document(fresh, 'p', ttl=3600, now=now)
        old = self.proposed(now - datetime.timedelta(hours=2))
        exc = self.assertRaises(execute.PlanRefused, execute.check_document,
                                old, 'p', ttl=3600, now=now)
        self.assertIn('older than [resq_optimizer] plan_ttl', str(exc))
        undated = dict(fresh)
        del undated['created_at']
        exc = self.assertRaises(execute.PlanRefused, execute.check_document,
                                undated, 'p', ttl=3600, now=now)
        self.assertIn('no creation time', str(exc))

    def test_file_store_prunes_by_age_and_count(self):
        store = store_mod.Store(self.useFixture(
            __import__('fixtures').TempDir()).path)
        now = datetime.datetime(2026, 11, 25, tzinfo=datetime.timezone.utc)

        def stamp(days):
            return (now - datetime.timedelta(days=days)).strftime(
                '%Y%m%dT%H%M%S')

        for n, (days, status) in enumerate([
                (0, 'applied'), (1, 'not-proposed'), (2, 'applied'),
                (30, 'applied'), (31, 'proposed'), (40, 'applying')]):
            snap_id = 'snapshot-%s-%06d' % (stamp(days), n)
            store.save_snapshot(snap_id, {})
            store.save_plan({'id': 'plan-%s-%06d' % (stamp(days), n),
                             'status': status, 'snapshot_id': snap_id})
        gone = store.prune(keep=2, max_age_seconds=14 * 86400, now=now)
        self.assertEqual((2, 2), gone)
        left = store.list_plans()
        # The newest two, and the proposed and applying ones whatever
        # their age; their snapshots stay with them.
        self.assertEqual(4, len(left))
        self.assertEqual(
            {'applied', 'not-proposed', 'proposed', 'applying'},
            {store.load_plan(p)[0]['status'] for p in left})
        self.assertEqual(4, len(os.listdir(store.snapshots)))


class LiveStateTest(base.TestCase):
    """What collect refuses before reading any provider."""

    class Nova:
        def __init__(self, services=(), servers=(), aggregates=()):
            self.services = list(services)
            self.servers = list(servers)
            self.aggregates = list(aggregates)

        def list_compute_services(self):
            return self.services

        def list_hypervisors(self):
            return []

        def list_all_servers(self):
            return self.servers

        def list_aggregates(self):
            return self.aggregates

        def list_server_groups(self):
            return []

    def test_a_cell_that_does_not_answer_is_refused(self):
        from resq_nova.optimizer import collect

        up = {'host': 'h1', 'state': 'up', 'status': 'enabled'}
        # Nova 2.69+: services of a down cell come back without state.
        nova = self.Nova([up, {'host': 'h2', 'status': 'UNKNOWN'}])
        exc = self.assertRaises(collect.IncompleteSnapshot,
                                collect.collect, None, nova)
        self.assertIn('compute services of h2', str(exc))
        self.assertIn('nothing is planned this round', str(exc))
        nova = self.Nova([up], [{'id': 's1', 'status': 'UNKNOWN'}])
        exc = self.assertRaises(collect.IncompleteSnapshot,
                                collect.collect, None, nova)
        self.assertIn('only part of 1 server(s), e.g. s1', str(exc))

    def test_cells_come_from_aggregates(self):
        from resq_nova.optimizer import collect

        nova = self.Nova(aggregates=[
            {'hosts': ['h1', 'h2'], 'metadata': {'resq_nova_cell': 'c1'}},
            {'hosts': ['h3'], 'metadata': {'resq_nova_cell': 'c2'}},
            {'hosts': ['h1', 'h3'], 'metadata': {'ssd': 'true'}}])
        self.assertEqual({'h1': 'c1', 'h2': 'c1', 'h3': 'c2'},
                         collect.cells_of(nova))
        nova.aggregates.append({'hosts': ['h2'], 'metadata': {
            'resq_nova_cell': 'c2'}})
        exc = self.assertRaises(collect.IncompleteSnapshot,
                                collect.cells_of, nova)
        self.assertIn('host h2 is in aggregates naming cells c1 and c2',
                      str(exc))
