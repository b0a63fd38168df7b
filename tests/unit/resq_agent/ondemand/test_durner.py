from resq_agent.ondemand import durner
from resq_agent.ondemand import model
from tests import base

WAY = 1 << 20


def nf(name):
    return model.NF(name, 10.0)


class DurnerTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.lease = model.Lease(0, 0, 10, 4, 1, WAY)
        self.nfs = [nf('a'), nf('b'), nf('c')]

    def test_first_grant_is_floor_of_occupancy_then_one_way_a_step(self):
        pol = durner.DurnerPolicy(self.lease, self.nfs)
        r = {'a': model.Reading(1, 3.7 * WAY, load=0.9),
             'b': model.Reading(1, 1 * WAY, load=0.5),
             'c': model.Reading(1, 1 * WAY, load=0.4)}
        plan = pol.step(r)
        self.assertEqual((3, ('a',)), (plan.classes[0].ways,
                                       plan.classes[0].members))
        self.assertEqual(('b', 'c'), plan.classes[1].members)
        plan = pol.step(dict(r, a=model.Reading(1, 3 * WAY, load=0.8)))
        self.assertEqual(4, plan.classes[0].ways)

    def test_keeps_the_allocation_with_the_lowest_maximum(self):
        pol = durner.DurnerPolicy(self.lease, self.nfs)
        loads = [0.9, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 0.95]
        plans = []
        for load in loads:
            r = {'a': model.Reading(1, 2 * WAY, load=load),
                 'b': model.Reading(1, 1 * WAY, load=0.3),
                 'c': model.Reading(1, 1 * WAY, load=0.2)}
            plans.append(pol.step(r))
            if pol.done:
                break
        self.assertTrue(pol.done)
        # 0.6 was measured under the allocation of the first step.
        self.assertEqual(0.6, pol.best_z)
        self.assertEqual(plans[0].key(), pol.best.key())
        # Never more exclusive ways than the lease minus the two shared.
        self.assertLessEqual(sum(pol.ways.values()), 10 - 2)
        for p in plans:
            model.masks(self.lease, p)

    def test_latency_ratio_is_the_load_without_utilisation(self):
        self.assertEqual(2.0, durner.load_of(nf('a'), model.Reading(20)))
        self.assertEqual(0.5, durner.load_of(
            nf('a'), model.Reading(20, load=0.5)))

    def test_class_budget_ends_the_search(self):
        lease = model.Lease(0, 0, 16, 2, 1, WAY)
        pol = durner.DurnerPolicy(lease, self.nfs)
        r = {'a': model.Reading(1, 2 * WAY, load=0.9),
             'b': model.Reading(1, 2 * WAY, load=0.5),
             'c': model.Reading(1, 1 * WAY, load=0.4)}
        pol.step(r)
        self.assertEqual(['a'], list(pol.ways))
        # b is now the busiest but a second exclusive class plus the
        # shared one would need 3 classes: done, best kept.
        pol.step(dict(r, a=model.Reading(1, 2 * WAY, load=0.3)))
        self.assertTrue(pol.done)
        self.assertLessEqual(len(pol.best.classes), 2)
