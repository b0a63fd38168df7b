from resq_nova.optimizer import model
from resq_nova.optimizer import ordering
from resq_nova.optimizer import planner
from resq_nova.optimizer import snapshot
from tests import base
from tests.unit.resq_nova.optimizer import base as obase


def plan(doc, **kw):
    kw.setdefault('time_limit', 20)
    return planner.make_plan(snapshot.from_dict(doc), **kw)


def final_hosts(doc, the_plan):
    where = {i['uuid']: i['host'] for i in doc['instances']}
    for mv in the_plan['moves']:
        where[mv['uuid']] = mv['to_host']
    return where


class PlanTest(base.TestCase):

    def check_safe(self, doc, the_plan):
        """Replays the moves: nothing over-committed, ever."""
        snap = snapshot.from_dict(doc)
        ledger = ordering.Ledger(snap)
        by_uuid = {i.uuid: i for i in snap.instances}
        for mv in the_plan['moves']:
            inst = by_uuid[mv['uuid']]
            self.assertNotEqual(mv['from_host'], mv['to_host'])
            self.assertIsNone(ledger.blocker(inst, mv['to_host'],
                                             mv['to_domain']))
            ledger.start(inst, inst.host, mv['to_host'], mv['to_domain'])
            ledger.finish(inst, inst.host, inst.domain, mv['to_host'])

    def test_packs_and_moves_only_what_must(self):
        # h1 is full enough to stay; h2 and h3 hold one small instance
        # each: both move to h1, the least moves for the fewest hosts.
        doc = obase.snapshot(
            [obase.host(h) for h in ('h1', 'h2', 'h3')],
            [obase.inst('a', 'h1', ways=5, cores=3),
             obase.inst('b', 'h2'), obase.inst('c', 'h3', ways=2)])
        p = plan(doc)
        self.assertEqual((3, 1, 1, 0.0), (p['hosts_used_before'],
                                          p['hosts_used_after'],
                                          p['lower_bound'], p['gap_pct']))
        self.assertEqual({'b', 'c'}, {mv['uuid'] for mv in p['moves']})
        self.assertEqual(2, p['moves_lower_bound'])
        self.assertTrue(p['proposed'])
        self.check_safe(doc, p)

    def test_already_packed_is_not_proposed(self):
        doc = obase.snapshot([obase.host('h1'), obase.host('h2')],
                             [obase.inst('a', 'h1', ways=5),
                              obase.inst('b', 'h2', ways=5)])
        p = plan(doc)
        self.assertFalse(p['proposed'])
        self.assertEqual([], p['moves'])
        self.assertEqual(2, p['lower_bound'])
        self.assertIn('no plan uses fewer than the 2 hosts', p['reason'])

    def test_min_hosts_freed_threshold(self):
        doc = obase.snapshot([obase.host(h) for h in ('h1', 'h2')],
                             [obase.inst('a', 'h1'), obase.inst('b', 'h2')])
        p = plan(doc, min_hosts_freed=2)
        self.assertFalse(p['proposed'])
        self.assertIn('frees 1 host(s) with 1 move(s); min_hosts_freed is 2',
                      p['reason'])
        self.assertTrue(plan(doc, min_hosts_freed=1)['proposed'])

    def test_hard_constraints(self):
        hosts = [obase.host('h1', az='az1'), obase.host('h2', az='az2'),
                 obase.host('h3', az='az1', disabled=True),
                 obase.host('h4', az='az1', down=True)]
        instances = [
            # pinned to az2: cannot join h1
            obase.inst('z', 'h2', az='az2'),
            obase.inst('a', 'h1'),
            # on a down host: stays, and h4 stays in use
            obase.inst('d', 'h4'),
            # on a disabled host: may leave, nothing arrives there
            obase.inst('e', 'h3')]
        doc = obase.snapshot(hosts, instances)
        p = plan(doc)
        where = final_hosts(doc, p)
        self.assertEqual('h2', where['z'])
        self.assertEqual('h4', where['d'])
        self.assertNotEqual('h3', where['e'])
        self.assertNotIn('h3', {mv['to_host'] for mv in p['moves']})
        self.assertIn({'uuid': 'd', 'reason': 'its host h4 has its compute '
                       'service down'}, p['fixed'])
        self.check_safe(doc, p)

    def test_affinity_members_stay_and_anti_affinity_holds(self):
        doc = obase.snapshot(
            [obase.host(h) for h in ('h1', 'h2', 'h3', 'h4')],
            [obase.inst('a', 'h1'), obase.inst('b', 'h2'),
             obase.inst('c', 'h3'), obase.inst('x', 'h4'),
             obase.inst('y', 'h4')],
            [{'policy': 'anti-affinity', 'members': ['a', 'b', 'c']},
             {'policy': 'affinity', 'members': ['x', 'y'], 'id': 'g2'}])
        p = plan(doc)
        where = final_hosts(doc, p)
        self.assertEqual(3, len({where[u] for u in 'abc'}))
        self.assertEqual(('h4', 'h4'), (where['x'], where['y']))
        self.assertEqual(3, p['hosts_used_after'])
        self.assertEqual(3, p['lower_bound'])
        self.assertIn({'uuid': 'x', 'reason': 'member of affinity group g2 '
                       '(Nova keeps its members on one host)'}, p['fixed'])
        self.check_safe(doc, p)

    def test_no_live_migration_within_a_host(self):
        # Two domains on h1; the optimum keeps h1 and cannot move a from
        # domain 0 to domain 1 by live migration.
        doc = obase.snapshot(
            [obase.host('h1', domains=((1, 9), (1, 9))),
             obase.host('h2', domains=((1, 9),))],
            [obase.inst('a', 'h1', domain=0), obase.inst('b', 'h2')])
        p = plan(doc)
        self.assertEqual(1, p['hosts_used_after'])
        self.assertEqual([('b', 'h1', 1)], [(m['uuid'], m['to_host'],
                                             m['to_domain'])
                                            for m in p['moves']])

    def test_classes_of_service_per_domain(self):
        doc = obase.snapshot(
            [obase.host('h1', domains=((4, 9), (4, 9)), clos=2, dom_clos=1),
             obase.host('h2', clos=3)],
            [obase.inst('a', 'h1', domain=0), obase.inst('b', 'h2', ways=4),
             obase.inst('c', 'h2', ways=4)])
        p = plan(doc)
        # h1 takes one more instance (domain 1), not two.
        self.assertEqual(2, p['hosts_used_after'])
        self.assertFalse(p['proposed'])

    def test_lazy_anti_affinity_keeps_valid_bounds(self):
        hosts = [obase.host('h%d' % i) for i in range(6)]
        instances = [obase.inst('m%d' % i, 'h%d' % i) for i in range(4)]
        groups = [{'policy': 'anti-affinity',
                   'members': ['m0', 'm1', 'm2', 'm3']}]
        p = plan(obase.snapshot(hosts, instances, groups))
        self.assertFalse(p['proposed'])
        self.assertEqual(4, p['lower_bound'])
        self.assertEqual(0.0, p['gap_pct'])


class PairingTest(base.TestCase):

    def test_derangement_uses_other_hosts(self):
        class Inst:
            def __init__(self, uuid):
                self.uuid = uuid

        class H:
            def __init__(self, name):
                self.name = name

        hosts = [H('h0'), H('h1'), H('h2')]
        leavers = {0: [Inst('a'), Inst('b')], 1: [Inst('c')]}
        slots = {0: [0], 1: [0], 2: [0]}
        targets = {}
        model._derange(leavers, slots, hosts, targets, {}, {}, {})
        self.assertEqual(3, len(targets))
        self.assertNotEqual('h0', targets['a'][0])
        self.assertNotEqual('h0', targets['b'][0])
        self.assertNotEqual('h1', targets['c'][0])


class OrderingTest(base.TestCase):

    def test_order_waits_for_room_and_leaves_out_cycles(self):
        # b must leave h2 before a fits there; c and d would swap, which no
        # order allows (each destination is full until the other leaves).
        doc = obase.snapshot(
            [obase.host('h1', domains=((6, 5),)),
             obase.host('h2', domains=((6, 5),)),
             obase.host('h3', domains=((6, 9),)),
             obase.host('h4', domains=((6, 3),)),
             obase.host('h5', domains=((6, 3),))],
            [obase.inst('a', 'h1', ways=4), obase.inst('b', 'h2', ways=4),
             obase.inst('c', 'h4', ways=3), obase.inst('d', 'h5', ways=3)])
        snap = snapshot.from_dict(doc)
        moves, left = ordering.order(snap, {
            'a': ('h2', 0), 'b': ('h3', 0), 'c': ('h5', 0),
            'd': ('h4', 0)})
        self.assertEqual(['b', 'a'], [m['uuid'] for m in moves])
        self.assertEqual({'c', 'd'}, {x['uuid'] for x in left})
        self.assertIn('no safe order: domain 0 of h5 has 0 of the 3 ways it '
                      'needs free', [x['reason'] for x in left
                                     if x['uuid'] == 'c'][0])
        self.assertEqual({'h2', 'h3', 'h4', 'h5'},
                         ordering.hosts_in_use_after(snap, moves))
