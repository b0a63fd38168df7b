from resq_agent.ondemand import maxmin
from resq_agent.ondemand import model
from resq_common import cbm
from tests import base

WAY = 1 << 20          # 1 MiB ways keep the numbers readable
HIGH = 1e9             # bytes/s from which a miss rate is "high"


def lease(ways=16, classes=8, first=2, min_bits=1):
    return model.Lease(0, first, ways, classes, min_bits, WAY)


def nf(name, target=10.0):
    return model.NF(name, target, (1,))


def rd(lat, occ_ways, miss=0.0):
    return model.Reading(lat, occ_ways * WAY, miss)


class MasksTest(base.TestCase):

    def test_classes_are_packed_contiguously_inside_the_lease(self):
        le = lease(ways=10, first=4)
        plan = model.Plan((model.ClassOfService(3, ('a',), 'isolated'),
                           model.ClassOfService(2, ('b', 'c'))))
        out = model.masks(le, plan)
        self.assertEqual([0x70, 0x3f80], [m for m, _ in out])
        # The last class took the ways nobody was given.
        self.assertEqual(7, out[-1][1].ways)
        for m, _ in out:
            cbm.validate(m, le.mask, le.min_cbm_bits)

    def test_refuses_what_the_kernel_would_refuse(self):
        le = lease(ways=6, classes=2, min_bits=2)
        too_many = model.Plan(tuple(model.ClassOfService(2, (n,))
                                    for n in 'abc'))
        self.assertRaisesRegex(model.PlanError, '3 classes of service.*2',
                               model.masks, le, too_many)
        small = model.Plan((model.ClassOfService(1, ('a',)),
                            model.ClassOfService(5, ('b',))))
        self.assertRaisesRegex(model.PlanError, 'min_cbm_bits 2',
                               model.masks, le, small)
        big = model.Plan((model.ClassOfService(4, ('a',)),
                          model.ClassOfService(4, ('b',))))
        self.assertRaisesRegex(model.PlanError, 'needs 8 ways.*has 6',
                               model.masks, le, big)

    def test_lease_checks_name_the_option(self):
        self.assertRaisesRegex(model.PlanError, 'ondemand_ways',
                               lease(ways=1, min_bits=2).check)
        self.assertRaisesRegex(model.PlanError, 'ondemand_classes',
                               lease(classes=0).check)


class MaxMinTest(base.TestCase):

    def test_no_violation_keeps_one_shared_class(self):
        nfs = [nf('a'), nf('b')]
        plan = maxmin.plan(lease(), nfs, {'a': rd(5, 2), 'b': rd(9, 9)},
                           HIGH)
        self.assertEqual(((16, ('a', 'b')),), plan.key())

    def test_high_miss_violator_under_fair_share_is_isolated(self):
        # 4 NFs on 16 ways: fair share 4.
        nfs = [nf(n) for n in 'abcd']
        readings = {'a': rd(20, 3, miss=2e9),   # violates, misses: isolate
                    'b': rd(20, 2, miss=1e6),   # violates, misses little
                    'c': rd(5, 1),              # compliant, small
                    'd': rd(5, 9)}              # over the fair share
        plan = maxmin.plan(lease(), nfs, readings, HIGH)
        iso = [c for c in plan.classes if c.kind == 'isolated']
        self.assertEqual([('a',)], [c.members for c in iso])
        self.assertEqual(4, iso[0].ways)          # floor(16 / 4)
        low = plan.classes[plan.class_of('b')]
        self.assertEqual(('b', 'c'), low.members)
        self.assertEqual(3, low.ways)             # 2 + 1 ways occupied
        rest = plan.classes[plan.class_of('d')]
        self.assertEqual(('d',), rest.members)
        self.assertEqual(16 - 4 - 3, rest.ways)
        self.assertEqual(16, sum(c.ways for c in plan.classes))
        self.assertEqual((), plan.unmet)

    def test_sharing_check_isolates_who_cannot_keep_up(self):
        # b violates but misses little: ResQ's rule shares it with c. A
        # sharing check that predicts b cannot carry its rate next to c
        # gives it a class of its own; c (compliant) stays shared.
        nfs = [nf(n) for n in 'abcd']
        readings = {'a': rd(20, 3, miss=2e9), 'b': rd(20, 2, miss=1e6),
                    'c': rd(5, 1), 'd': rd(5, 9)}
        asked = []

        def may_share(members, rds):
            asked.append(sorted(n.uuid for n in members))
            return {'b', 'c'}

        plan = maxmin.plan(lease(), nfs, readings, HIGH, may_share)
        self.assertEqual([['b', 'c']], asked)
        iso = sorted(c.members for c in plan.classes if c.kind != 'shared')
        self.assertEqual([('a',), ('b',)], iso)
        self.assertEqual(('c',), plan.classes[plan.class_of('c')].members)
        self.assertEqual(16, sum(c.ways for c in plan.classes))
        # A check that clears everyone changes nothing.
        same = maxmin.plan(lease(), nfs, readings, HIGH, lambda m, r: set())
        self.assertEqual(maxmin.plan(lease(), nfs, readings, HIGH).key(),
                         same.key())

    def test_repeats_on_the_shared_class_until_stable(self):
        # Round 1 (fair 4): a small compliant NF leaves; the rest (fair
        # 15/3 = 5 in round 2) has a violator now under its fair share.
        nfs = [nf(n) for n in 'abcd']
        readings = {'a': rd(5, 1),
                    'b': rd(20, 4.6, miss=5e9),
                    'c': rd(5, 6),
                    'd': rd(5, 8)}
        plan = maxmin.plan(lease(), nfs, readings, HIGH)
        self.assertGreaterEqual(plan.rounds, 2)
        b = plan.classes[plan.class_of('b')]
        self.assertEqual(('b',), b.members)
        self.assertEqual(5, b.ways)
        self.assertEqual(16, sum(c.ways for c in plan.classes))

    def test_everyone_over_fair_share_is_stable(self):
        nfs = [nf('a'), nf('b')]
        plan = maxmin.plan(lease(ways=8), nfs,
                           {'a': rd(20, 6, 2e9), 'b': rd(20, 6, 2e9)}, HIGH)
        self.assertEqual(((8, ('a', 'b')),), plan.key())

    def test_fair_share_under_min_bits_is_unmet(self):
        nfs = [nf(n) for n in 'abcdef']
        readings = {n: rd(20, 0.5, 2e9) for n in 'abcdef'}
        plan = maxmin.plan(lease(ways=6, min_bits=2), nfs, readings, HIGH)
        self.assertEqual(tuple('abcdef'), plan.unmet)
        model.masks(lease(ways=6, min_bits=2), plan)

    def test_class_limit_groups_violators(self):
        # 8 violators to isolate, 4 classes: one stays for the rest, so
        # they are grouped into 3 classes; every mask is still valid.
        names = ['n%d' % i for i in range(8)]
        nfs = [nf(n) for n in names] + [nf('big')]
        readings = {n: rd(20, 0.5, (i + 1) * 1e9)
                    for i, n in enumerate(names)}
        readings['big'] = rd(5, 20)
        le = lease(ways=18, classes=4)
        plan = maxmin.plan(le, nfs, readings, HIGH)
        self.assertLessEqual(len(plan.classes), 4)
        grouped = [c for c in plan.classes
                   if c.kind in ('grouped', 'isolated')]
        self.assertEqual(3, len(grouped))
        self.assertEqual(sorted(names),
                         sorted(m for c in grouped for m in c.members))
        out = model.masks(le, plan)
        self.assertEqual(4, len(out))
        covered = 0
        for m, _ in out:
            self.assertEqual(0, covered & m)
            covered |= m
        self.assertEqual(le.mask, covered)


class MaxMinInvariantsTest(base.TestCase):
    """Random leases and readings: every plan lays out as valid masks."""

    def test_every_plan_is_a_valid_layout(self):
        import random
        rnd = random.Random(7)
        for _ in range(300):
            n = rnd.randint(1, 40)
            le = lease(ways=rnd.randint(2, 40), classes=rnd.randint(1, 16),
                       first=rnd.randint(0, 4), min_bits=rnd.randint(1, 2))
            if le.ways < le.min_cbm_bits:
                continue
            names = ['nf%02d' % i for i in range(n)]
            readings = {u: rd(rnd.choice((5, 20)), rnd.uniform(0, 6),
                              rnd.choice((0.0, 2e9)))
                        for u in names}
            plan = maxmin.plan(le, [nf(u) for u in names], readings, HIGH)
            out = model.masks(le, plan)
            self.assertLessEqual(len(out), le.classes)
            covered = 0
            for m, c in out:
                self.assertEqual(0, covered & m)
                covered |= m
            self.assertEqual(le.mask, covered)
            self.assertEqual(sorted(names),
                             sorted(u for _, c in out for u in c.members))
