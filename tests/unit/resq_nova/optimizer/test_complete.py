#    Licensed under the Apache License, Version 2.0 (the "License"); you may
#    not use this file except in compliance with the License. You may obtain
#    a copy of the License at
#
#         http://www.apache.org/licenses/LICENSE-2.0
#
#    Unless required by applicable law or agreed to in writing, software
#    distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
#    WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
#    License for the specific language governing permissions and limitations
#    under the License.
"""Bin completion of the kept domains' holes (issue 34, item 2)."""

import collections
import random
import time
from unittest import mock

from resq_nova.optimizer import bound
from resq_nova.optimizer import common
from resq_nova.optimizer import heuristic
from resq_nova.optimizer import planner
from resq_nova.optimizer import snapshot
from tests import base
from tests.unit.resq_nova.optimizer import base as obase

# Host shapes of the mixed clouds: (domains, cores, ways) per domain.
SHAPES = ((2, 9, 18), (2, 14, 11), (1, 20, 20))
SIZES = ((1, 2), (1, 3), (1, 4), (2, 4), (1, 6), (2, 6), (2, 8), (3, 9))


def mixed(seed, hosts=24, per_host=4, cells=1):
    """A small fragmented cloud of three host shapes, as the benchmark's.

    Some instances pinned (not migratable), some pinned to a zone, one
    host disabled, anti-affinity pairs.
    """
    rng = random.Random(seed)
    docs, use, insts = [], {}, []
    for i in range(hosts):
        ndom, cores, ways = SHAPES[i % 3]
        docs.append(obase.host(
            'h%02d' % i, domains=((cores, ways),) * ndom, clos=15,
            az='az%d' % (i % 2), disabled=(i == 5),
            cell='c%d' % (i % cells) if cells > 1 else None))
        for d in range(ndom):
            use['h%02d' % i, d] = [cores, ways - 2]
    for n in range(hosts * per_host):
        cores, ways = rng.choice(SIZES)
        for _ in range(50):
            h = rng.choice(docs)
            key = (h['name'], rng.randrange(len(h['domains'])))
            if use[key][0] >= cores and use[key][1] >= ways + 2:
                break
        else:
            continue
        use[key][0] -= cores
        use[key][1] -= ways
        extra = {}
        if rng.random() < 0.1:
            extra['az'] = h['az']
        insts.append(obase.inst('i%03d' % n, key[0], key[1], cores=cores,
                                ways=ways,
                                migratable=rng.random() > 0.05,
                                reason='pinned', **extra))
    # Anti-affinity pairs of instances on different hosts.
    pairs = [(a, b) for a, b in zip(insts[::2], insts[1::2])
             if a['host'] != b['host']]
    groups = [{'policy': 'anti-affinity', 'id': 'g%d' % g,
               'members': [a['uuid'], b['uuid']]}
              for g, (a, b) in enumerate(pairs[:3])]
    return snapshot.from_dict(obase.snapshot(docs, insts, groups))


def check(test, snap, fixed, targets, drained):
    """Every rule the MILP has holds in the end state."""
    hosts = {h.name: h for h in snap.hosts}
    where = {}
    used = collections.defaultdict(lambda: [0, 0, 0])
    for inst in snap.instances:
        to = targets.get(inst.uuid, (inst.host, inst.domain))
        if inst.uuid in targets:
            test.assertNotIn(inst.uuid, fixed)
            test.assertNotEqual(inst.host, to[0],
                                'a move within its own host')
            test.assertTrue(hosts[to[0]].accepts)
            test.assertNotIn(to[0], drained)
            if inst.az:
                test.assertEqual(inst.az, hosts[to[0]].az)
        where[inst.uuid] = to[0]
        for pos, amount in enumerate((inst.cores, inst.ways, inst.clos)):
            used[to][pos] += amount
        used[to[0], 'host'][2] += inst.clos
    for (name, dom_id), (cores, ways, _) in list(used.items()):
        if dom_id == 'host':
            continue
        dom = hosts[name].domain(dom_id)
        test.assertLessEqual(cores, dom.cores, (name, dom_id))
        test.assertLessEqual(ways, dom.ways, (name, dom_id))
    for name, h in hosts.items():
        test.assertLessEqual(used[name, 'host'][2], h.clos)
    for g in snap.server_groups:
        on = [where[m] for m in g.members]
        test.assertEqual(len(on), len(set(on)), g.members)
    for name in drained:
        test.assertNotIn(name, set(where.values()))


class CompleteTest(base.TestCase):

    def test_closes_what_the_drain_cannot(self):
        # c's 4-way instance fits no hole; evicting k1's 2-way one (to
        # k2's hole) makes room for it.
        hosts = [obase.host('c', domains=((8, 4),), clos=4)] + [
            obase.host(n, domains=((8, 8),), clos=4) for n in ('k1', 'k2')]
        insts = [obase.inst('z', 'c', ways=4),
                 obase.inst('x', 'k1', ways=4), obase.inst('s', 'k1', ways=2),
                 obase.inst('y', 'k2', ways=4), obase.inst('t', 'k2', ways=2)]
        s = snapshot.from_dict(obase.snapshot(hosts, insts))
        self.assertEqual(set(), heuristic.drain(s, {})[1])
        targets, drained = heuristic.complete(
            s, {}, {('c',): 0, ('k1', 'k2'): 2}, time.monotonic() + 10)
        self.assertEqual({'c'}, drained)
        self.assertEqual({'z': ('k1', 0), 's': ('k2', 0)}, targets)

    def test_a_hole_takes_the_set_that_fills_it(self):
        # Holes of 6 ways (k) and 2 (b): a's 4-way and 2-way instances
        # fill them exactly (b's 3-way ones would leave room unused).
        hosts = [obase.host(n, domains=((8, 8),), clos=4)
                 for n in ('a', 'b', 'k')]
        insts = [obase.inst('i1', 'a', ways=4), obase.inst('i2', 'a', ways=2),
                 obase.inst('i3', 'b', ways=3), obase.inst('i4', 'b', ways=3),
                 obase.inst('i5', 'k', ways=2, migratable=False,
                            reason='pinned')]
        s = snapshot.from_dict(obase.snapshot(hosts, insts))
        fixed = common.fixed_instances(s)
        targets, drained = heuristic.complete(
            s, fixed, {('a', 'b'): 1}, time.monotonic() + 10)
        self.assertEqual({'a'}, drained)
        self.assertEqual(('k', 0), targets['i1'])
        self.assertEqual(['i1', 'i2'], sorted(targets))
        check(self, s, fixed, targets, drained)

    def test_a_host_whose_instance_fits_nowhere_stays_and_keeps_all(self):
        # a and b should close by the counts; b's 6-way instance fits
        # nowhere (k's hole holds 4), so b stays open, and its 2-way
        # instance, which may already have left, stays (or comes back).
        hosts = [obase.host(n, domains=((8, 8),), clos=4)
                 for n in ('a', 'b')] + [
            obase.host('k', domains=((8, 8), (8, 8)), clos=8)]
        insts = [obase.inst('i1', 'a', ways=2),
                 obase.inst('i2', 'b', ways=6), obase.inst('i3', 'b', ways=2),
                 obase.inst('i4', 'k', ways=2, migratable=False,
                            reason='pinned'),
                 obase.inst('i5', 'k', domain=1, ways=6, migratable=False,
                            reason='pinned')]
        s = snapshot.from_dict(obase.snapshot(hosts, insts))
        fixed = common.fixed_instances(s)
        targets, drained = heuristic.complete(
            s, fixed, {('a', 'b'): 0}, time.monotonic() + 10)
        self.assertEqual({'a'}, drained)
        self.assertEqual(['i1'], sorted(targets))
        check(self, s, fixed, targets, drained)

    def test_past_its_deadline_it_finishes_its_first_pass_only(self):
        s = mixed(1)
        fixed = common.fixed_instances(s)
        keep = {}
        bound.hosts_lower_bound(s, fixed, 10.0, keep=keep)
        got = heuristic.complete(s, fixed, keep, time.monotonic() + 60)
        self.assertIsNotNone(got)
        # (A machine too busy to finish in time still gets the plan.)
        self.assertEqual(got, heuristic.complete(s, fixed, keep,
                                                 time.monotonic() - 1))
        # When the first pass fails, fewer hosts are tried while there is
        # time, and none past the deadline.
        with mock.patch.object(heuristic, '_complete_once',
                               return_value=None) as once:
            self.assertIsNone(heuristic.complete(s, fixed, keep,
                                                 time.monotonic() + 60))
            self.assertGreater(once.call_count, 1)
            once.reset_mock()
            self.assertIsNone(heuristic.complete(s, fixed, keep,
                                                 time.monotonic() - 1))
            self.assertEqual(1, once.call_count)

    def test_nothing_to_close_is_none(self):
        hosts = [obase.host(n, domains=((8, 8),), clos=4) for n in 'ab']
        insts = [obase.inst('i1', 'a', ways=6), obase.inst('i2', 'b', ways=6)]
        s = snapshot.from_dict(obase.snapshot(hosts, insts))
        self.assertIsNone(heuristic.complete(s, {}, {('a', 'b'): 2},
                                             time.monotonic() + 10))
        self.assertIsNone(heuristic.complete(s, {}, {('a', 'b'): 1},
                                             time.monotonic() + 10))

    def test_plans_of_mixed_clouds_keep_every_rule(self):
        for seed in range(8):
            s = mixed(seed)
            fixed = common.fixed_instances(s)
            keep = {}
            lower, _ = bound.hosts_lower_bound(s, fixed, 10.0, keep=keep)
            got = heuristic.complete(s, fixed, keep, time.monotonic() + 10)
            if got is None:
                continue
            targets, drained = got
            check(self, s, fixed, targets, drained)
            # The plan never beats the proven bound.
            self.assertGreaterEqual(len(s.hosts_in_use()) - len(drained),
                                    lower, seed)

    def test_evictions_found_through_the_index_keep_every_rule(self):
        # (The index replaces the scan past INDEX_DOMAINS kept domains.)
        closed = 0
        with mock.patch.object(heuristic, 'INDEX_DOMAINS', 0):
            for seed in range(8):
                s = mixed(seed)
                fixed = common.fixed_instances(s)
                keep = {}
                lower, _ = bound.hosts_lower_bound(s, fixed, 10.0,
                                                   keep=keep)
                got = heuristic.complete(s, fixed, keep,
                                         time.monotonic() + 10)
                if got is None:
                    continue
                check(self, s, fixed, got[0], got[1])
                self.assertGreaterEqual(
                    len(s.hosts_in_use()) - len(got[1]), lower, seed)
                closed += len(got[1])
        self.assertGreater(closed, 0)

    def test_the_plan_is_never_worse_than_the_drain(self):
        for seed in range(4):
            s = mixed(seed, hosts=30)
            fixed = common.fixed_instances(s)
            plain = len(s.hosts_in_use()) - len(heuristic.drain(s, fixed)[1])
            p = planner.make_plan(s, time_limit=10, mip_gap=0.01,
                                  full_model_max=0)
            self.assertLessEqual(p['hosts_used_after'], plain, seed)
            self.assertGreaterEqual(p['hosts_used_after'],
                                    p['lower_bound'], seed)

    def test_past_complete_max_hosts_the_repack_plans_alone(self):
        s = mixed(2, hosts=30)
        with mock.patch.object(planner, 'COMPLETE_MAX_HOSTS', 0), \
                mock.patch.object(heuristic, 'complete') as complete:
            p = planner.make_plan(s, time_limit=10, mip_gap=0.01,
                                  full_model_max=0)
        complete.assert_not_called()
        self.assertGreaterEqual(p['hosts_used_after'], p['lower_bound'])

    def test_no_move_leaves_its_cell(self):
        s = mixed(3, hosts=30, cells=2)
        p = planner.make_plan(s, time_limit=10, mip_gap=0.01,
                              full_model_max=0)
        self.assertTrue(p['moves'])
        for mv in p['moves']:
            self.assertEqual(s.host(mv['from_host']).cell,
                             s.host(mv['to_host']).cell, mv)


class KeptTest(base.TestCase):
    """Which solution of the pooled bound guides the completion."""

    def kept(self, incumbent, x, lp_x, value):
        import highspy

        h = mock.Mock()
        h.getInfo.return_value = mock.Mock(
            objective_function_value=incumbent,
            primal_solution_status=(
                highspy.SolutionStatus.kSolutionStatusFeasible))
        h.getSolution.return_value = mock.Mock(col_value=[x])
        names = tuple('h%02d' % i for i in range(60))
        opened = {'shape': mock.Mock(index=0)}
        return bound._kept(h, highspy, opened, {'shape': list(names)},
                           lp_x, value)[names]

    def test_a_close_incumbent_is_kept(self):
        self.assertEqual(11, self.kept(11.0, 11.0, [10.2], 10.2))

    def test_a_poor_incumbent_gives_way_to_the_lp(self):
        # A MILP stopped early with every host open: the LP's solution,
        # rounded up, guides instead.
        self.assertEqual(11, self.kept(60.0, 60.0, [10.2], 10.2))

    def test_a_poor_incumbent_without_an_lp_is_kept(self):
        self.assertEqual(60, self.kept(60.0, 60.0, None, 10.2))


def _in_use_after(snap, targets):
    where = {i.uuid: targets.get(i.uuid, (i.host, i.domain))[0]
             for i in snap.instances}
    return set(where.values()) | {h.name for h in snap.hosts
                                  if h.other_load}


class UndoMovesTest(base.TestCase):
    """Moves undone once the plan's hosts are fixed (issue 34, round 2)."""

    def test_an_instance_goes_back_when_its_domain_has_room(self):
        hosts = [obase.host(n, domains=((8, 8),), clos=4) for n in 'abk']
        insts = [obase.inst('i1', 'a', ways=2), obase.inst('i2', 'k', ways=2),
                 obase.inst('i3', 'b', ways=2)]
        s = snapshot.from_dict(obase.snapshot(hosts, insts))
        # A plan that closes a and needlessly moves i2 from k to b.
        targets = {'i1': ('k', 0), 'i2': ('b', 0)}
        self.assertEqual({'i1': ('k', 0)},
                         heuristic.undo_moves(s, {}, targets))

    def test_a_mover_makes_way_for_an_evicted_instance(self):
        # i2 was evicted from k to m, and m's i4 moved into k's room:
        # both go home (i2's leaving made room for i4), two moves fewer.
        hosts = [obase.host(n, domains=((8, 8),), clos=4)
                 for n in ('a', 'b', 'k', 'm')]
        insts = [obase.inst('i1', 'a', ways=2), obase.inst('i2', 'k', ways=4),
                 obase.inst('i3', 'b', ways=4), obase.inst('i4', 'm', ways=4),
                 obase.inst('i5', 'k', ways=4, migratable=False,
                            reason='pinned')]
        s = snapshot.from_dict(obase.snapshot(hosts, insts))
        fixed = common.fixed_instances(s)
        targets = {'i1': ('b', 0), 'i2': ('m', 0), 'i4': ('k', 0)}
        got = heuristic.undo_moves(s, fixed, targets)
        self.assertEqual({'i1': ('b', 0)}, got)
        check(self, s, fixed, got, {'a'})

    def test_never_reopens_a_host_and_keeps_every_rule(self):
        for seed in range(8):
            s = mixed(seed, cells=2)
            for cell, sub in snapshot.cells(s):
                fixed = common.fixed_instances(sub)
                keep = {}
                bound.hosts_lower_bound(sub, fixed, 10.0, keep=keep)
                got = heuristic.complete(sub, fixed, keep,
                                         time.monotonic() + 10)
                if got is None:
                    continue
                targets, drained = got
                undone = heuristic.undo_moves(sub, fixed, targets)
                check(self, sub, fixed, undone, drained)
                self.assertLessEqual(len(undone), len(targets), seed)
                self.assertLessEqual(
                    _in_use_after(sub, undone), _in_use_after(sub, targets))
                self.assertEqual(set(), set(undone) - set(targets))

    def test_on_a_snapshot_of_two_cells_no_move_leaves_its_cell(self):
        for seed in range(4):
            s = mixed(seed, hosts=30, cells=2)
            fixed = common.fixed_instances(s)
            cell = {h.name: h.cell for h in s.hosts}
            targets, drained = heuristic.drain(s, fixed)
            targets = {u: t for u, t in targets.items()
                       if cell[t[0]] == cell[s.instance(u).host]}
            for u, t in heuristic.undo_moves(s, fixed, targets).items():
                self.assertEqual(cell[s.instance(u).host], cell[t[0]])
