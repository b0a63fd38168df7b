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
"""The Lagrangian moves bound (issue 34, moves)."""

import itertools
import random
import time
from unittest import mock

from resq_nova.optimizer import bound
from resq_nova.optimizer import common
from resq_nova.optimizer import model
from resq_nova.optimizer import planner
from resq_nova.optimizer import snapshot
from tests import base
from tests.unit.resq_nova.optimizer import base as obase
from tests.unit.resq_nova.optimizer import test_complete
from tests.unit.resq_nova.optimizer import test_scale


def fewest_moves(s, hosts_after):
    """Fewest instances leaving their cache domain, at most that many hosts.

    By trying every placement; ``None`` when none keeps so few hosts. An
    instance that changes its domain moves, as the per-host model counts
    departures (and as plans move: never within their host).
    """
    fixed = common.fixed_instances(s)
    slots = [(h.name, d.id) for h in s.hosts for d in h.domains]
    best = None
    for combo in itertools.product(range(len(slots)), repeat=len(
            s.instances)):
        placed, moves = [], 0
        for inst, k in zip(s.instances, combo):
            at = slots[k]
            if at != (inst.host, inst.domain):
                if inst.uuid in fixed or not s.host(at[0]).accepts:
                    break
                moves += 1
            placed.append((inst, at[0], at[1]))
        else:
            used = {h for _, h, _ in placed} | {
                h.name for h in s.hosts if h.other_load}
            if len(used) <= hosts_after and test_scale._fits(s, placed) \
                    and (best is None or moves < best):
                best = moves
    return best


def fragmented(rng):
    """Three or four hosts of one or two domains, instances of 2-6 ways."""
    hosts, insts, use = [], [], {}
    for n in range(rng.randint(3, 4)):
        hosts.append(obase.host('h%d' % n, domains=((4, 8),) * rng.randint(
            1, 2), clos=4))
    for n in range(rng.randint(3, 6)):
        h = rng.choice(hosts)
        d = rng.randrange(len(h['domains']))
        ways = rng.choice((2, 3, 4, 6))
        u = use.setdefault((h['name'], d), [0, 0])
        if u[0] + 1 > 4 or u[1] + ways > 8:
            continue
        u[0] += 1
        u[1] += ways
        insts.append(obase.inst('i%d' % n, h['name'], d, 1, ways,
                                migratable=rng.random() > 0.1,
                                reason='pinned'))
    return snapshot.from_dict(obase.snapshot(hosts, insts))


def twins(rng):
    """Hosts in identical pairs: domains of one kind, shapes repeated."""
    hosts, insts = [], []
    for n in range(2):
        shapes = [rng.choice(((1, 2), (1, 3), (1, 4)))
                  for _ in range(rng.randint(1, 2))]
        if sum(w for _, w in shapes) > 8:
            shapes = shapes[:1]
        for twin in 'ab':
            name = 'h%d%s' % (n, twin)
            hosts.append(obase.host(name, domains=((4, 8),), clos=4))
            for k, (cores, ways) in enumerate(shapes):
                insts.append(obase.inst('%s-%d' % (name, k), name, 0, cores,
                                        ways))
    return snapshot.from_dict(obase.snapshot(hosts, insts))


class LagrangeTest(base.TestCase):

    def clouds(self, count, seed):
        """Small clouds of the three kinds above, with their fixed."""
        rng = random.Random(seed)
        for n in range(count):
            s = (fragmented(rng), test_scale.BoundTest.random_cloud(None, rng),
                 twins(rng))[n % 3]
            if s.instances:
                yield s, common.fixed_instances(s)

    def test_at_any_prices_it_never_exceeds_brute_force(self):
        # Weak duality: the relaxation's optimum is a lower bound at any
        # prices, not only at those the steps find; so prices found any
        # way (a start, a step, another cloud) give a valid bound, worked
        # out on the whole snapshot.
        rng = random.Random(11)
        checked = 0
        for s, fixed in self.clouds(27, 3):
            for hosts_after in range(1, len(s.hosts_in_use()) + 1):
                least = fewest_moves(s, hosts_after)
                if least is None:
                    continue
                lag = bound._Lagrange(s, fixed, hosts_after)
                if lag.kinds is None:
                    continue
                prices = bound._price_starts(lag.kinds) + [
                    [rng.uniform(-1.5, 4.0) for _ in lag.kinds]
                    for _ in range(5)]
                for p in prices:
                    value, grad = lag.solve(p)
                    self.assertLessEqual(value, least + 1e-6,
                                         (hosts_after, p, s.to_dict()))
                    self.assertEqual(len(lag.kinds), len(grad))
                    checked += 1
        self.assertGreater(checked, 150)

    def test_domains_of_one_kind_are_weighed_once(self):
        s = snapshot.from_dict(obase.snapshot(
            [obase.host('h%d' % n, domains=((4, 8), (4, 8)), clos=8)
             for n in range(6)],
            [obase.inst('i%d%d' % (n, k), 'h%d' % n, k % 2, 1, 2)
             for n in range(6) for k in range(3)]))
        lag = bound._Lagrange(s, {}, 3)
        # Twelve domains: six hold two 2-way instances, six hold one
        # (two kinds), whose sub-multisets are rows: 3 and 2.
        self.assertEqual(2, len(lag.first))
        self.assertEqual(5, len(lag.row_type))
        self.assertEqual(12, len(lag.dom_type))
        # (The nine instances of the three hosts that close: the fewest.)
        self.assertEqual(9, bound.lagrangian_moves_bound(s, {}, 3, 5.0))

    def test_kinds_too_many_to_weigh_stay_below_the_optimum(self):
        # Past KEEP_SUBSETS_MAX sub-multisets a kind's gain is bounded
        # from above instead: weaker, still a lower bound on the moves.
        checked = 0
        for s, fixed in self.clouds(12, 4):
            for hosts_after in range(1, len(s.hosts_in_use()) + 1):
                least = fewest_moves(s, hosts_after)
                if least is None:
                    continue
                exact = bound.lagrangian_moves_bound(s, fixed, hosts_after,
                                                     5.0)
                with mock.patch.object(bound, 'KEEP_SUBSETS_MAX', 1):
                    loose = bound.lagrangian_moves_bound(s, fixed,
                                                         hosts_after, 5.0)
                self.assertLessEqual(loose, least)
                self.assertLessEqual(exact, least)
                checked += 1
        self.assertGreater(checked, 10)

    def test_prices_start_from_the_smallest_shape(self):
        self.assertEqual(
            [[0.0, 0.0, 0.0], [0.0, 1.0, 3.0], [0.0, 0.0, 1.0],
             [0.0, 1.0, 3.0]],
            bound._price_starts([(1, 2), (1, 4), (2, 8)]))

    def test_never_exceeds_brute_force(self):
        rng = random.Random(5)
        checked = 0
        for n in range(60):
            s = (fragmented(rng) if n % 2 else
                 test_scale.BoundTest.random_cloud(None, rng))
            if not s.instances:
                continue
            fixed = common.fixed_instances(s)
            in_use = len(s.hosts_in_use())
            for hosts_after in range(1, in_use + 1):
                least = fewest_moves(s, hosts_after)
                if least is None:
                    continue
                lag = bound.lagrangian_moves_bound(s, fixed, hosts_after,
                                                   5.0)
                self.assertLessEqual(lag, least,
                                     (hosts_after, s.to_dict()))
                pooled = bound.moves_lower_bound(s, fixed, hosts_after,
                                                 pooled_seconds=5.0)
                checked += 1
                # (On clouds this small the pooled bound is already exact;
                # the cases below show where the Lagrangian one is not.)
                self.assertLessEqual(pooled, least)
        self.assertGreater(checked, 30)

    def holes(self):
        # c's 4-way instance fits no hole of k1 or k2 (2 ways each):
        # keeping two hosts takes two moves, whichever closes.
        hosts = [obase.host('c', domains=((8, 4),), clos=4)] + [
            obase.host(n, domains=((8, 8),), clos=4) for n in ('k1', 'k2')]
        insts = [obase.inst('z', 'c', ways=4),
                 obase.inst('x', 'k1', ways=4), obase.inst('s', 'k1', ways=2),
                 obase.inst('y', 'k2', ways=4), obase.inst('t', 'k2', ways=2)]
        return snapshot.from_dict(obase.snapshot(hosts, insts))

    def test_it_sees_that_a_large_instance_needs_a_large_hole(self):
        s = self.holes()
        self.assertEqual(2, fewest_moves(s, 2))
        self.assertEqual(1, bound.moves_lower_bound(s, {}, 2,
                                                    pooled_seconds=5.0))
        self.assertEqual(2, bound.lagrangian_moves_bound(s, {}, 2, 5.0))
        self.assertEqual(2, bound.moves_lower_bound(
            s, {}, 2, pooled_seconds=5.0, lagrange_seconds=5.0))

    def test_never_exceeds_the_per_host_models_optimum(self):
        for seed in (1, 2):
            s = test_complete.mixed(seed, hosts=12, per_host=4)
            fixed = common.fixed_instances(s)
            result = planner.solve(s, time_limit=10.0, mip_gap=0.0,
                                   moves_gap=0.0)
            groups = {gi for gi, g in enumerate(s.server_groups)
                      if g.policy == 'anti-affinity'}
            milp = model.Milp(s, fixed, groups, 30.0, time.monotonic())
            m, run = milp.m, milp.runner
            run.objective([(m.dep[v], 1) for v in milp.v.dindex],
                          cap=([m.open[hi] for hi in m.open],
                               result.hosts_after))
            best, lower, status, _ = run.run(
                30.0, 0.0, milp.start_from(result.targets))
            self.assertEqual('Optimal', status, seed)
            lag = bound.lagrangian_moves_bound(s, fixed, result.hosts_after,
                                               5.0)
            pooled = bound.moves_lower_bound(s, fixed, result.hosts_after,
                                             pooled_seconds=5.0)
            self.assertLessEqual(lag, round(best), seed)
            # (Here 15 and 14, the optimum, where the pooled bound says 11
            # and 12.)
            self.assertGreater(lag, pooled, seed)

    def test_the_plan_carries_it(self):
        s = self.holes()
        with mock.patch.object(planner, 'LAGRANGE_MAX_HOSTS', 0):
            without = planner.make_plan(s, full_model_max=0)
        plan = planner.make_plan(s, full_model_max=0)
        self.assertEqual(2, plan['hosts_used_after'])
        self.assertEqual((1, 2), (without['moves_lower_bound'],
                                  plan['moves_lower_bound']))
        self.assertEqual(2, len(plan['moves']))

    def test_its_time_is_bounded(self):
        s = test_complete.mixed(3, hosts=24, per_host=5)
        fixed = common.fixed_instances(s)
        clock = iter([0.0] + [100.0] * 1000)
        with mock.patch.object(bound.time, 'monotonic',
                               lambda: next(clock)):
            with mock.patch.object(bound._Lagrange, 'solve',
                                   wraps=None) as step:
                step.return_value = (3.0, [1.0])
                got = bound.lagrangian_moves_bound(s, fixed, 10, 1.0)
        # The start prices, then no step.
        self.assertEqual(4, step.call_count)
        self.assertEqual(3, got)

    def test_nothing_movable_says_nothing(self):
        s = snapshot.from_dict(obase.snapshot(
            [obase.host('a'), obase.host('b')],
            [obase.inst('i', 'a', migratable=False, reason='pinned')]))
        self.assertEqual(0, bound.lagrangian_moves_bound(
            s, common.fixed_instances(s), 1))
