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
"""The bound-guided repack with evictions (issue 34, item 2)."""

import time

from resq_nova.optimizer import bound
from resq_nova.optimizer import common
from resq_nova.optimizer import heuristic
from resq_nova.optimizer import ordering
from resq_nova.optimizer import planner
from resq_nova.optimizer import snapshot
from tests import base
from tests.unit.resq_nova.optimizer import base as obase


def _snap(hosts, insts, groups=()):
    return snapshot.from_dict(obase.snapshot(hosts, insts, groups))


def _cloud(third_disabled=False):
    """Two 8-way hosts and a full 4-way one; the two would do.

    ``k1`` and ``k2`` each hold a 4-way and a 2-way instance (2 ways
    free); ``c`` is full with one 4-way instance that fits no hole as it
    is, and nothing fits into ``c``: the drain closes nothing. Moving
    ``k1``'s 2-way instance to ``k2`` makes room for it on ``k1``.
    """
    hosts = [obase.host('c', domains=((8, 4),), clos=4)] + [
        obase.host(n, domains=((8, 8),), clos=4) for n in ('k1', 'k2')]
    if third_disabled:
        hosts[2]['disabled'] = True
    insts = [obase.inst('z', 'c', ways=4),
             obase.inst('x', 'k1', ways=4), obase.inst('s', 'k1', ways=2),
             obase.inst('y', 'k2', ways=4), obase.inst('t', 'k2', ways=2)]
    return _snap(hosts, insts)


class RepackTest(base.TestCase):

    def keep_of(self, s):
        keep = {}
        lower, _ = bound.hosts_lower_bound(s, {}, keep=keep)
        return lower, keep

    def test_the_drain_closes_nothing_the_repack_closes_one(self):
        s = _cloud()
        self.assertEqual(set(), heuristic.drain(s, {})[1])
        lower, keep = self.keep_of(s)
        self.assertEqual(2, lower)
        self.assertEqual({('c',): 0, ('k1', 'k2'): 2}, keep)
        targets, drained = heuristic.repack(s, {}, keep,
                                            time.monotonic() + 10)
        self.assertEqual({'c'}, drained)
        # z takes the room s leaves; s goes to the other host's hole.
        self.assertEqual({'z': ('k1', 0), 's': ('k2', 0)}, targets)

    def test_the_plan_orders_the_eviction_first_and_keeps_it(self):
        s = _cloud()
        p = planner.make_plan(s, time_limit=10, mip_gap=0.0, moves_gap=0.0,
                              full_model_max=0)
        self.assertEqual(2, p['hosts_used_after'])
        self.assertEqual(['s', 'z'], [mv['uuid'] for mv in p['moves']])
        # s's move frees nothing by itself, but z needs its room: kept.
        moves, dropped = ordering.needed_only(s, p['moves'])
        self.assertEqual([], dropped)
        self.assertEqual(2, len(moves))

    def test_nothing_is_evicted_onto_a_disabled_host(self):
        s = _cloud(third_disabled=True)
        keep = {('c',): 0, ('k1',): 1, ('k2',): 1}
        # k2 accepts nothing: s has nowhere to go, so c cannot close.
        self.assertIsNone(heuristic.repack(s, {}, keep,
                                           time.monotonic() + 10))

    def test_fixed_instances_are_not_evicted(self):
        hosts = [obase.host('c', domains=((8, 4),), clos=4)] + [
            obase.host(n, domains=((8, 8),), clos=4) for n in ('k1', 'k2')]
        insts = [obase.inst('z', 'c', ways=4),
                 obase.inst('x', 'k1', ways=4),
                 obase.inst('s', 'k1', ways=2, migratable=False,
                            reason='pinned'),
                 obase.inst('y', 'k2', ways=4),
                 obase.inst('t', 'k2', ways=2, migratable=False,
                            reason='pinned')]
        s = _snap(hosts, insts)
        fixed = common.fixed_instances(s)
        self.assertIsNone(heuristic.repack(
            s, fixed, {('c',): 0, ('k1', 'k2'): 2}, time.monotonic() + 10))

    def test_fewer_closes_when_all_cannot(self):
        # Two hosts to close by the keep counts, room for one of them.
        hosts = [obase.host(n, domains=((8, 8),), clos=4)
                 for n in ('a', 'b', 'k')]
        insts = [obase.inst('i1', 'a', ways=2),
                 obase.inst('i2', 'b', ways=4), obase.inst('i3', 'b', ways=2),
                 obase.inst('i4', 'k', ways=4)]
        s = _snap(hosts, insts)
        targets, drained = heuristic.repack(s, {}, {('a', 'b', 'k'): 1},
                                            time.monotonic() + 10)
        # a (the emptiest) closes; b's 6 ways do not fit k's 4 left.
        self.assertEqual({'a'}, drained)
        self.assertEqual(['i1'], sorted(targets))


class SafeAtTest(base.TestCase):

    def test_an_instance_nobody_needs_may_stay(self):
        s = _cloud()
        moves = [{'uuid': 's', 'from_host': 'k1', 'from_domain': 0,
                  'to_host': 'k2', 'to_domain': 0}]
        # No move goes into k1: s may stay.
        self.assertTrue(ordering._safe_at(s, [], 'k1'))
        moves.append({'uuid': 'z', 'from_host': 'c', 'from_domain': 0,
                      'to_host': 'k1', 'to_domain': 0})
        # z into k1 needs s gone.
        self.assertFalse(ordering._safe_at(s, moves[1:], 'k1'))
        self.assertTrue(ordering._safe_at(s, moves, 'k1'))
