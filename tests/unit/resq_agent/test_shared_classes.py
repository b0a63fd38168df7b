"""Shared classes of service on the fake kernel (issue 22, deliverable 7).

The fake kernel refuses a group beyond ``num_closids`` (ENOSPC) as the
real one does, so a host that partitions more instances than it has
classes proves that each class serves one instance in each domain.
"""

from resq_agent import enforcer
from resq_agent import layout
import resq_agent.privsep.resctrl
from resq_common import cbm
from tests.unit.resq_agent import test_manager

WIDE = {0: tuple(range(0, 16)), 1: tuple(range(16, 32))}


def uuid(domain, n):
    return 'cccccccc-0000-0000-0000-%06d%06d' % (domain, n)


class SharedClassesTest(test_manager.ManagerTestBase):

    cpus = WIDE

    def test_each_domain_holds_num_closids_minus_one(self):
        # 16 classes, one held by the tree's foreign group, one by the
        # default group: 14 per domain, 28 on the host.
        for d in (0, 1):
            for n in range(15):
                self.doms.add(uuid(d, n), (WIDE[d][n],), ways=1)
        summary = self.make().reconcile()
        self.assertEqual([], summary['errors'])
        self.assertEqual(28, summary['instances'])
        refused = sorted(r['uuid'] for r in summary['refused'])
        self.assertEqual([uuid(0, 14), uuid(1, 14)], refused)
        self.assertEqual(14, len([g for g in self.rt.groups()
                                  if g.startswith('resq-cos')]))
        masks = self.masks()
        for d in (0, 1):
            mine = [masks[uuid(d, n)][d] for n in range(14)]
            self.assertEqual(14, len(set(mine)))
            union = 0
            for m in mine:
                self.assertEqual(0, union & m)
                union |= m
            self.assertEqual(0, union & self.default()[d])
        # Each group: one member per domain, the CPUs of both.
        self.assertEqual((0, 16), tuple(sorted(
            int(c) for c in self.rt.read_cpus('resq-cos1').split(','))))

    def test_restart_reads_classes_back_from_the_cpus(self):
        a, b, c = uuid(0, 1), uuid(0, 2), uuid(1, 1)
        self.doms.add(a, (1,), ways=2)
        self.doms.add(b, (2,), ways=3)
        self.doms.add(c, (17,), ways=4)
        self.make().reconcile()
        before = self.masks()
        groups = {u: self.group(u) for u in (a, b, c)}
        # A new agent (a restart) keeps every class and mask: nothing to
        # write.
        summary = self.make().reconcile()
        self.assertEqual([], summary['written'])
        self.assertEqual(before, self.masks())
        self.assertEqual(groups, {u: self.group(u) for u in (a, b, c)})

    def test_an_instance_in_a_group_of_its_own_moves_into_a_class(self):
        # What an earlier release left: resq-<uuid> with the mask.
        a = uuid(0, 1)
        self.doms.add(a, (1,), ways=3)
        mod = resq_agent.privsep.resctrl
        own = enforcer.group_name(a)
        mod.create_group(own)
        mod.write_l3_masks(own, {0: 0x38, 1: 0x3ffff})
        mod.assign_cpus(own, [1])
        summary = self.make().reconcile()
        self.assertEqual([own], summary['removed'])
        self.assertEqual('resq-cos1', self.group(a))
        # Its ways stay where they were: its warm cache is kept.
        self.assertEqual(0x38, self.masks()[a][0])


class NoMonitoringTest(SharedClassesTest):
    """Without L3 monitoring the classes hold; only figures are missing."""

    monitoring = False

    def groups_of(self):
        # No monitoring groups to find members by: their CPUs.
        found = {}
        for g in self.rt.owned_groups():
            cpus = set(int(c) for c in self.rt.read_cpus(g).split(',')
                       if c)
            for u, pinned in self.doms.cpus.items():
                if set(pinned) <= cpus:
                    found[u] = g
        return found


class DepartureOrderTest(test_manager.ManagerTestBase):

    def two_members_applied(self):
        """'a' and 'b' in class 1 of domains 0 and 1, applied."""
        enf = enforcer.ResctrlEnforcer(self.tree.root)
        shape = [layout.DomainShape(d, 0xfffff, 1, 0, 1) for d in (0, 1)]
        first = layout.compute(shape, [
            layout.Request('a', 0, 2, (1,)),
            layout.Request('b', 1, 2, (9,))], 16, shared=True)
        enf.apply(first, [0, 1])
        return enf, shape, first

    def test_a_departing_member_leaves_before_the_masks_change(self):
        enf, shape, first = self.two_members_applied()
        # 'a' leaves domain 0's class 1 and 'c' takes it, with other ways.
        second = layout.compute(shape, [
            layout.Request('b', 1, 2, (9,), current_mask=first.assignment(
                'b').mask, current_clos=1),
            layout.Request('c', 0, 5, (3,))], 16, shared=True)
        steps = []
        enf.apply(second, [0, 1], steps)
        at = {s: i for i, s in enumerate(steps)}
        self.assertLess(at['cpus resq-cos1 (departed)'],
                        at['schemata resq-cos1'])
        self.assertLess(at['schemata resq-cos1'], at['cpus resq-cos1'])
        self.assertEqual('3,9', self.rt.read_cpus('resq-cos1'))
        l3 = self.rt.read_schemata('resq-cos1')['L3']
        self.assertEqual(5, cbm.bits(l3[0]))
        self.assertEqual(first.assignment('b').mask, l3[1])
        # The departed member's monitoring group went with it.
        self.assertEqual(['resq-b', 'resq-c'],
                         self.rt.mon_groups('resq-cos1'))

    def test_a_class_whose_members_all_left_goes_with_its_monitoring(self):
        enf, shape, first = self.two_members_applied()
        self.assertEqual(['resq-a', 'resq-b'],
                         self.rt.mon_groups('resq-cos1'))
        # Every member leaves: the class's group is removed, and its
        # monitoring groups with it (rmdir takes them); no separate
        # removal of those is sent after the group is gone.
        result = enf.apply(layout.compute(shape, [], 16, shared=True),
                           [0, 1])
        self.assertEqual([], result.errors)
        self.assertIn('resq-cos1', result.removed)
        self.assertNotIn('resq-cos1', enf.groups())


class LeaseClassesTest(test_manager.ManagerTestBase):
    """Each leasing domain's on-demand classes are host-wide groups."""

    def test_reserved_instances_get_what_the_leases_leave(self):
        from resq_agent import inventory
        self.flags('resq_agent', ondemand_ways=4, ondemand_classes=3)
        mgr = self.make()
        # 16 classes, the tree's foreign group one: 15; two domains each
        # leasing 3: 9 left, one of them the default group's.
        self.assertEqual(15 - 2 * 3, mgr.num_closids)
        doms = inventory.Inventory(None, 'cn1', 1, lease_ways=4,
                                   lease_classes=3).cache_domains(
            mgr.topology)
        self.assertEqual({8 + 1}, {d.inventory()['CUSTOM_LLC_CLOS']['total']
                                   for d in doms})
