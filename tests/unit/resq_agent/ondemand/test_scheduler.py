from unittest import mock

from resq_agent.ondemand import grouping
from resq_agent.ondemand import maxmin
from resq_agent.ondemand import model
from resq_agent.ondemand import scheduler
from resq_common import cbm
from tests import base

WAY = 1 << 20
HIGH = 1e9


def nfs(*names):
    return [model.NF(n, 10.0, (i,)) for i, n in enumerate(names)]


def rd(lat, occ=1.0, miss=0.0):
    return model.Reading(lat, occ * WAY, miss)


class LocalSchedulerTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.lease = model.Lease(0, 4, 12, 6, 1, WAY)
        self.s = scheduler.LocalScheduler('resq', settle_s=10.0,
                                          high_miss_bw=HIGH)
        self.nfs = nfs('a', 'b', 'c')

    def test_unknown_policy_is_named(self):
        self.assertRaisesRegex(ValueError, "'lru'.*resq, durner, shared",
                               scheduler.LocalScheduler, 'lru')

    def test_starts_shared_over_the_whole_lease_and_settles(self):
        d = self.s.update(self.lease, self.nfs, {}, 0.0)
        self.assertEqual('reset', d.state)
        self.assertEqual([self.lease.mask], [m for m, _ in d.masks])
        bad = {'a': rd(50, 1, 5e9), 'b': rd(5), 'c': rd(5, 6)}
        d = self.s.update(self.lease, self.nfs, bad, 5.0)
        self.assertEqual('settling', d.state)
        self.assertFalse(d.changed)

    def test_violator_is_isolated_then_converges(self):
        self.s.update(self.lease, self.nfs, {}, 0.0)
        bad = {'a': rd(50, 1, 5e9), 'b': rd(5), 'c': rd(5, 6)}
        d = self.s.update(self.lease, self.nfs, bad, 10.0)
        self.assertEqual('replanned', d.state)
        self.assertEqual(('a',), d.violating)
        iso = [(m, c) for m, c in d.masks if c.members == ('a',)]
        self.assertEqual(1, len(iso))
        self.assertEqual(4, cbm.bits(iso[0][0]))       # 12 ways / 3
        for m, _ in d.masks:
            cbm.validate(m, self.lease.mask)
        # Isolation helped: no more changes, no escalation.
        good = {'a': rd(8, 3.5, 5e9), 'b': rd(5), 'c': rd(5, 6)}
        for t in (25.0, 40.0):
            d = self.s.update(self.lease, self.nfs, good, t)
            self.assertFalse(d.changed)
            self.assertEqual([], d.escalate)
            self.assertEqual('stable', d.state)

    def test_still_violating_when_isolated_escalates_once(self):
        self.s.update(self.lease, self.nfs, {}, 0.0)
        bad = {'a': rd(50, 1, 5e9), 'b': rd(5), 'c': rd(5, 6)}
        self.s.update(self.lease, self.nfs, bad, 10.0)
        d = self.s.update(self.lease, self.nfs, bad, 25.0)
        self.assertEqual('stable', d.state)
        self.assertEqual(['a'], [u for u, _ in d.escalate])
        self.assertIn('isolated class of 4 ways', d.escalate[0][1])
        d = self.s.update(self.lease, self.nfs, bad, 40.0)
        self.assertEqual([], d.escalate)

    def test_failed_source_freezes_the_masks(self):
        self.s.update(self.lease, self.nfs, {}, 0.0)
        before = self.s.masks
        bad = {'a': rd(50, 1, 5e9), 'c': rd(5, 6)}
        d = self.s.update(self.lease, self.nfs, bad, 20.0,
                          failed={'b': 'jsonlines: latency is NaN'})
        self.assertEqual('frozen', d.state)
        self.assertIn('b: jsonlines: latency is NaN', d.reason)
        self.assertEqual(before, d.masks)
        self.assertFalse(d.changed)
        # A missing reading counts as a failure, too.
        d = self.s.update(self.lease, self.nfs, bad, 30.0)
        self.assertEqual('frozen', d.state)
        self.assertIn('b: no reading', d.reason)

    def test_lease_change_starts_over_inside_the_new_lease(self):
        self.s.update(self.lease, self.nfs, {}, 0.0)
        bad = {'a': rd(50, 1, 5e9), 'b': rd(5), 'c': rd(5, 6)}
        self.s.update(self.lease, self.nfs, bad, 10.0)
        small = model.Lease(0, 4, 6, 6, 1, WAY)
        d = self.s.update(small, self.nfs, bad, 11.0)
        self.assertEqual('reset', d.state)
        self.assertIn('lease', d.reason)
        self.assertEqual([small.mask], [m for m, _ in d.masks])

    def test_lease_too_small_keeps_the_last_masks(self):
        self.s.update(self.lease, self.nfs, {}, 0.0)
        before = self.s.masks
        d = self.s.update(model.Lease(0, 4, 1, 6, 2, WAY), self.nfs, {}, 1.0)
        self.assertEqual('error', d.state)
        self.assertIn('min_cbm_bits', d.reason)
        self.assertEqual(before, d.masks)

    def test_shared_policy_never_splits(self):
        s = scheduler.LocalScheduler('shared', settle_s=0)
        s.update(self.lease, self.nfs, {}, 0.0)
        bad = {'a': rd(50, 1, 5e9), 'b': rd(5), 'c': rd(5, 6)}
        d = s.update(self.lease, self.nfs, bad, 1.0)
        self.assertEqual(1, len(d.masks))
        self.assertEqual(['a'], [u for u, _ in d.escalate])

    def test_durner_policy_steps_once_per_period(self):
        s = scheduler.LocalScheduler('durner', settle_s=1.0)
        s.update(self.lease, self.nfs, {}, 0.0)
        r = {'a': rd(50, 3), 'b': rd(5), 'c': rd(5, 2)}
        d = s.update(self.lease, self.nfs, r, 1.0)
        self.assertTrue(d.changed)
        self.assertEqual(3, [c.ways for _, c in d.masks
                             if c.members == ('a',)][0])
        d = s.update(self.lease, self.nfs, r, 1.5)
        self.assertEqual('settling', d.state)
        d = s.update(self.lease, self.nfs, r, 2.0)
        self.assertEqual(4, [c.ways for _, c in d.masks
                             if c.members == ('a',)][0])

    def test_replan_that_did_not_help_is_held_until_others_violate(self):
        nfs4 = nfs('a', 'b', 'c', 'd')
        self.s.update(self.lease, nfs4, {}, 0.0)
        bad = {'a': rd(50, 1, 5e9), 'b': rd(5), 'c': rd(5, 6),
               'd': rd(5, 6)}
        d = self.s.update(self.lease, nfs4, bad, 10.0)
        self.assertEqual('replanned', d.state)
        # a still violates though isolated: the re-plan did not help.
        d = self.s.update(self.lease, nfs4, bad, 25.0)
        self.assertEqual('stable', d.state)
        self.assertIn('did not help', d.reason)
        self.assertFalse(d.changed)
        self.assertEqual(['a'], [u for u, _ in d.escalate])
        # Someone else violating is a new situation: re-planned.
        other = dict(bad, c=rd(50, 0.5, 5e9))
        d = self.s.update(self.lease, nfs4, other, 40.0)
        self.assertEqual('replanned', d.state)

    def test_compliant_isolated_class_is_kept_on_replan(self):
        nfs4 = nfs('a', 'b', 'c', 'd')
        self.s.update(self.lease, nfs4, {}, 0.0)
        bad = {'a': rd(50, 1, 5e9), 'b': rd(5, 1), 'c': rd(5, 6),
               'd': rd(5, 6)}
        d = self.s.update(self.lease, nfs4, bad, 10.0)
        a_mask = [m for m, c in d.masks if c.members == ('a',)][0]
        # a is fine now; d violates with a small footprint.
        later = dict(bad, a=rd(8, 3, 5e9), d=rd(50, 0.5, 5e9))
        d = self.s.update(self.lease, nfs4, later, 25.0)
        self.assertEqual('replanned', d.state)
        self.assertEqual(a_mask, [m for m, c in d.masks
                                  if c.members == ('a',)][0])
        self.assertEqual(1, len([c for _, c in d.masks
                                 if c.members == ('d',)]))

    def test_failed_source_of_an_isolated_nf_pins_only_its_class(self):
        nfs4 = nfs('a', 'b', 'c', 'd')
        self.s.update(self.lease, nfs4, {}, 0.0)
        bad = {'a': rd(50, 1, 5e9), 'b': rd(5, 1), 'c': rd(5, 6),
               'd': rd(5, 6)}
        d = self.s.update(self.lease, nfs4, bad, 10.0)
        a_mask = [m for m, c in d.masks if c.members == ('a',)][0]
        # a's source fails; d now violates with a small footprint.
        later = {'b': rd(5, 1), 'c': rd(5, 6), 'd': rd(50, 0.5, 5e9)}
        d = self.s.update(self.lease, nfs4, later, 25.0,
                          failed={'a': 'scripted: latency is NaN'})
        self.assertEqual('replanned', d.state)
        self.assertEqual({'a': 'scripted: latency is NaN'}, d.failed)
        self.assertEqual(a_mask, [m for m, c in d.masks
                                  if c.members == ('a',)][0])
        self.assertEqual(1, len([c for _, c in d.masks
                                 if c.members == ('d',)]))
        self.assertNotIn('a', d.violating)
        for m, _ in d.masks:
            cbm.validate(m, self.lease.mask)


class LocalSchedulerFuzzTest(base.TestCase):
    """Random readings and failing sources over many periods."""

    def test_masks_valid_and_failed_nfs_never_move(self):
        import random
        rnd = random.Random(3)
        for policy in scheduler.POLICIES:
            lease = model.Lease(0, 2, 16, 5, 1, WAY)
            names = ['n%d' % i for i in range(9)]
            s = scheduler.LocalScheduler(policy, settle_s=0.0,
                                         high_miss_bw=HIGH)
            s.update(lease, nfs(*names), {}, 0.0)
            before = {}
            for t in range(1, 80):
                failed = {n: 'down' for n in names if rnd.random() < 0.08}
                readings = {n: rd(rnd.choice((5, 50)), rnd.uniform(0, 5),
                                  rnd.choice((0.0, 5e9)))
                            for n in names if n not in failed}
                d = s.update(lease, nfs(*names), readings, float(t),
                             failed=failed)
                owner = {}
                covered = 0
                for m, c in d.masks:
                    cbm.validate(m, lease.mask)
                    self.assertEqual(0, covered & m)
                    covered |= m
                    for u in c.members:
                        owner[u] = m
                self.assertEqual(lease.mask, covered)
                self.assertLessEqual(len(d.masks), lease.classes)
                self.assertEqual(set(names), set(owner))
                for u in failed:
                    self.assertEqual(before.get(u, owner[u]), owner[u],
                                     '%s moved at %d (%s)' % (u, t, policy))
                before = owner


class IncrementalReplanTest(base.TestCase):
    """Each re-plan's grouping starts from the classes the last one made."""

    def setUp(self):
        super().setUp()
        # Six violators that miss a lot, 16 ways and 4 classes: more to
        # isolate than classes, so they are grouped.
        self.lease = model.Lease(0, 0, 16, 4, 1, WAY)
        self.nfs = [model.NF('v%d' % i, 10.0, (i,)) for i in range(6)]
        self.readings = {n.uuid: model.Reading(20.0, 0.5 * WAY,
                                               2e9 + i * 1e8)
                         for i, n in enumerate(self.nfs)}

    def test_the_last_plans_isolated_and_grouped_classes_are_the_start(self):
        s = scheduler.LocalScheduler('resq', settle_s=0.0,
                                     high_miss_bw=HIGH)
        s.update(self.lease, self.nfs, {}, 0.0)
        with mock.patch.object(maxmin, 'plan', wraps=maxmin.plan) as plan:
            d = s.update(self.lease, self.nfs, self.readings, 1.0)
            self.assertEqual('replanned', d.state)
            # Fresh: the shared start names no class to go on from.
            self.assertEqual([], plan.call_args.kwargs['start'])
            grouped = [c.members for c in s.plan.classes
                       if c.kind != 'shared']
            self.assertTrue(grouped)
            # v5 meets its target now, so the next period re-plans.
            other = dict(self.readings, v5=model.Reading(5.0, 0.5 * WAY,
                                                         2e9))
            s.update(self.lease, self.nfs, other, 2.0)
            self.assertEqual(2, plan.call_count)
            self.assertEqual(grouped, plan.call_args.kwargs['start'])

    def test_same_readings_give_the_same_plan_from_the_last_one(self):
        first = maxmin.plan(self.lease, self.nfs, self.readings, HIGH)
        start = [c.members for c in first.classes if c.kind != 'shared']
        with mock.patch.object(grouping, 'carry',
                               wraps=grouping.carry) as carry:
            again = maxmin.plan(self.lease, self.nfs, self.readings, HIGH,
                                start=start)
        self.assertEqual(1, carry.call_count)
        self.assertEqual(first.key(), again.key())
