"""resq-optimizer at a real cloud's edges, on Nova's own services.

Nova's API, conductor, scheduler and libvirt driver (over fakelibvirt)
with Placement in-process, as in test_optimizer: a move the target has no
memory for, Nova cells, a migration that hangs and is aborted through
Nova, when a move counts as done, and freed hosts disabled and enabled.
"""

from nova.tests.fixtures import libvirt as fakelibvirt

from resq_nova.optimizer import collect
from resq_nova.optimizer import execute
from resq_nova.optimizer import ordering
from resq_nova.optimizer import service
from tests.functional import test_optimizer


class MemoryAndDoneTest(test_optimizer.OptimizerTestBase):

    def setUp(self):
        super().setUp()
        for h in ('host1', 'host2', 'host3'):
            self.start_resq_compute(h)

    def test_move_needing_memory_the_target_lacks_is_never_emitted(self):
        a = self.boot('host1', ways=2, name='a', memory_mb=2048)
        # host2 keeps 1,536 MB for instances after this ordinary server
        # (fakelibvirt's hosts have terabytes, hence no RAM quota).
        self.flags(ram=-1, group='quota')
        inv = self.client.get_inventories(
            self.client.find_provider('host2')['uuid'])['MEMORY_MB']
        usable = collect.usable(inv) * inv.get('allocation_ratio', 1.0)
        big = self._create_flavor(name='big', memory_mb=int(usable) - 1536,
                                  vcpu=1, disk=1)
        self._wait_for_state_change(self.api.post_server({
            'server': self._build_server(flavor_id=big, networks='none',
                                         host='host2')}), 'ACTIVE')
        snap = collect.collect(self.client, self.compute)
        self.assertEqual(1536, snap.host('host2').resources['MEMORY_MB'])
        self.assertEqual({'MEMORY_MB': 2048, 'DISK_GB': 1},
                         snap.instance(a['id']).resources)
        plan, _ = self.optimizer.plan()
        # a on host2 would free host1, but Nova would refuse it.
        self.assertFalse(plan['proposed'], plan['reason'])
        self.assertEqual([], plan['moves'])

        # A small instance fits there: that plan is made and carried out,
        # each move done only once Nova is done with it.
        b = self.boot('host3', ways=2, name='b', memory_mb=512)
        plan, _ = self.optimizer.plan()
        self.assertTrue(plan['proposed'], plan['reason'])
        self.assertNotIn((a['id'], 'host2'), [
            (mv['uuid'], mv['to_host']) for mv in plan['moves']])
        seen = []

        def progress(action):
            if action.get('outcome') == execute.DONE:
                server = action['uuid']
                mig = self.compute.live_migrations(server)[0]
                src = self.client.find_provider(action['from_host'])['uuid']
                seen.append((mig['status'],
                             src in self.client.get_allocations(server)))

        plan, _ = self.optimizer.apply(plan['id'], progress=progress)
        self.assertEqual(execute.APPLIED, plan['status'], plan['result'])
        self.assertEqual([('completed', False)] * len(plan['moves']), seen)
        self.assertEqual('host3' if plan['moves'][0]['uuid'] == b['id']
                         else 'host1', plan['moves'][0]['from_host'])

    def test_timed_out_migration_is_aborted_and_reported(self):
        self.useFixture(__import__('fixtures').MonkeyPatch(
            'nova.tests.fixtures.libvirt.Domain.abortJob', _abort_job))
        a = self.boot('host1', ways=2, name='a')
        self.boot('host2', ways=2, name='b')
        plan, _ = self.optimizer.plan()
        self.assertTrue(plan['proposed'], plan['reason'])
        moving = plan['moves'][0]['uuid']
        self.hang_migration_of.add(moving)
        plan, _ = self.optimizer.apply(plan['id'], timeout=5)
        self.assertEqual(execute.PLAN_FAILED, plan['status'])
        action = plan['actions'][0]
        self.assertEqual(execute.FAILED, action['outcome'])
        self.assertIn('timed out after 5', action['detail'])
        self.assertIn('aborted through Nova: the server is ACTIVE on %s '
                      '(migration cancelled)' % plan['moves'][0]['from_host'],
                      action['detail'])
        server = self.server(moving)
        self.assertEqual(plan['moves'][0]['from_host'], self.host_of(server))
        self.assertEqual('cancelled',
                         self.compute.live_migrations(moving)[0]['status'])
        del a


class SwapTest(test_optimizer.OptimizerTestBase):

    def setUp(self):
        super().setUp()
        for h in ('host1', 'host2', 'host3'):
            self.start_resq_compute(h)

    def test_swap_completes_through_a_spare_host(self):
        # host1 is full on ways, host2 on cores: a and b can only trade
        # places through host3.
        a = self.boot('host1', ways=9, name='a')
        b = self.boot('host2', ways=1, vcpus=6, name='b')
        snap = collect.collect(self.client, self.compute)
        targets = {a['id']: ('host2', 0), b['id']: ('host1', 0)}
        moves, left_out = ordering.order(snap, targets)
        self.assertEqual(([], 2), (moves, len(left_out)))
        moves, left_out = ordering.order(snap, targets, detour=True)
        self.assertEqual([], left_out)
        self.assertEqual([(a['id'], 'host3', True), (b['id'], 'host1', None),
                          (a['id'], 'host2', None)],
                         [(mv['uuid'], mv['to_host'], mv.get('detour'))
                          for mv in moves])
        plan = {'id': 'plan-swap', 'proposed': True, 'reason': 'swap',
                'hosts_used_before': 2, 'hosts_used_after': 2,
                'lower_bound': 2, 'gap_pct': 0.0, 'moves': moves,
                'status': 'proposed'}
        executor = execute.Executor(self.client, self.compute, timeout=60,
                                    poll_interval=0.1)
        plan = executor.apply(plan)
        self.assertEqual(execute.APPLIED, plan['status'], plan['result'])
        self.assertEqual([execute.DONE] * 3,
                         [x['outcome'] for x in plan['actions']])
        self.assertEqual('host2', self.host_of(self.server(a['id'])))
        self.assertEqual('host1', self.host_of(self.server(b['id'])))
        self.assert_ways_with_cores(a['id'])
        self.assert_ways_with_cores(b['id'])


def _abort_job(domain):
    """libvirt cancels the job it is asked to abort."""
    domain._job_type = fakelibvirt.VIR_DOMAIN_JOB_CANCELLED


class FreedHostsTest(test_optimizer.OptimizerTestBase):

    def setUp(self):
        super().setUp()
        for h in ('host1', 'host2'):
            self.start_resq_compute(h)
        self.conf.set_override('disable_freed_hosts', True,
                               'resq_optimizer')

    def status(self, host):
        (svc,) = [s for s in self.compute.list_compute_services()
                  if s['host'] == host]
        return svc['status'], svc.get('disabled_reason')

    def test_freed_host_is_disabled_and_enabled_again(self):
        self.boot('host1', ways=2)
        self.boot('host2', ways=2)
        plan, _ = self.optimizer.plan()
        plan, _ = self.optimizer.apply(plan['id'])
        self.assertEqual(execute.APPLIED, plan['status'], plan['result'])
        (freed,) = plan['freed_hosts']
        self.assertEqual([{'host': freed, 'outcome': 'disabled',
                           'detail': None}], plan['disabled_hosts'])
        self.assertEqual(('disabled', service.FREED_REASON + plan['id']),
                         self.status(freed))
        # The scheduler no longer offers it: the next plan sees it so.
        self.assertTrue(collect.collect(self.client, self.compute).host(
            freed).disabled)
        # An operator's own disabled host is left alone.
        other = ({'host1', 'host2'} - {freed}).pop()
        self.compute.set_service_status(
            [s for s in self.compute.list_compute_services()
             if s['host'] == other][0]['id'], True, 'maintenance')
        results = self.optimizer.enable_freed()
        self.assertEqual([freed], [r['host'] for r in results])
        self.assertEqual('enabled', results[0]['outcome'])
        self.assertEqual('enabled', self.status(freed)[0])
        self.assertEqual(('disabled', 'maintenance'), self.status(other))


class CellsTest(test_optimizer.OptimizerTestBase):
    NUMBER_OF_CELLS = 2

    def setUp(self):
        super().setUp()
        self.start_resq_compute('host1', cell_name='cell1')
        self.start_resq_compute('host2', cell_name='cell1')
        self.start_resq_compute('host3', cell_name='cell2')
        for cell, hosts in (('cell1', ('host1', 'host2')),
                            ('cell2', ('host3',))):
            agg = self.api.post_aggregate({'aggregate': {'name': cell}})
            for h in hosts:
                self.api.add_host_to_aggregate(agg['id'], h)
            self.api.post_aggregate_action(agg['id'], {'set_metadata': {
                'metadata': {'resq_nova_cell': cell}}})

    def test_each_cell_is_planned_apart(self):
        a = self.boot('host1', ways=2, name='a')
        self.boot('host3', ways=2, name='c')
        snap = collect.collect(self.client, self.compute)
        self.assertEqual({'host1': 'cell1', 'host2': 'cell1',
                          'host3': 'cell2'},
                         {h.name: h.cell for h in snap.hosts})
        plan, _ = self.optimizer.plan()
        # One host could hold both, but not across cells.
        self.assertFalse(plan['proposed'], plan['reason'])
        b = self.boot('host2', ways=2, name='b')
        plan, _ = self.optimizer.plan()
        self.assertTrue(plan['proposed'], plan['reason'])
        self.assertEqual(['cell1', 'cell2'],
                         [c['cell'] for c in plan['cells']])
        (mv,) = plan['moves']
        self.assertEqual({mv['from_host'], mv['to_host']},
                         {'host1', 'host2'})
        plan, _ = self.optimizer.apply(plan['id'])
        self.assertEqual(execute.APPLIED, plan['status'], plan['result'])
        self.assertEqual(self.host_of(self.server(a['id'])),
                         self.host_of(self.server(b['id'])))
