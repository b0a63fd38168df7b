"""resq-optimizer on a live cloud: Nova's own services and Placement.

Nova's real API, conductor and scheduler (with the ResQ filter and
weigher) and libvirt driver over fakelibvirt; Placement in-process with the
cache-domain providers written by resq-nova's Placement client, as the
agent writes them. The optimizer reads the cloud through its own Placement
and compute clients, plans, and applies the plan with real live
migrations: Nova's conductor asks the scheduler about each named host and
moves the allocations; fakelibvirt completes the migration the way Nova's
own libvirt functional tests do (the domain is created on the destination
and the job completes), unless a test makes it fail.
"""

import datetime
import json
import os

import fixtures
from nova import context as nova_context
from nova import objects
from nova.tests.fixtures import libvirt as fakelibvirt
from oslo_config import cfg
import oslo_messaging
from oslo_messaging.notify import _impl_test
from prometheus_client import parser as prom_parser

from resq_common import metrics
from resq_nova import conf as nova_conf
from resq_nova.optimizer import actions
from resq_nova.optimizer import collect
from resq_nova.optimizer import execute
from resq_nova.optimizer import metrics as opt_metrics
from resq_nova.optimizer import notifier as notifier_mod
from resq_nova.optimizer import service
from resq_nova.optimizer import snapshot as snap_mod
from tests.fixtures import resq_api
from tests.functional import test_nova_scheduler


class OptimizerTestBase(test_nova_scheduler.ResQNovaTestBase):

    def setUp(self):
        super().setUp()
        self.migrations = []
        self.fail_migration_of = set()
        # Migrations that keep running until aborted.
        self.hang_migration_of = set()
        self.useFixture(fixtures.MonkeyPatch(
            'nova.tests.fixtures.libvirt.Domain.migrateToURI3',
            self._migrate_stub))
        self.compute = self.compute_client()
        self.state_dir = self.useFixture(fixtures.TempDir()).path
        self.conf = cfg.ConfigOpts()
        nova_conf.register_opts(self.conf)
        self.conf([], project='resq', default_config_files=[])
        self.conf.set_override('state_dir', self.state_dir,
                               'resq_optimizer')
        self.conf.set_override('time_limit', 20.0, 'resq_optimizer')
        self.conf.set_override('poll_interval', 0.1, 'resq_optimizer')
        self.conf.set_override('migration_timeout', 60.0, 'resq_optimizer')
        self.optimizer = service.Optimizer(self.conf, self.client,
                                           self.compute)
        self.ctxt = nova_context.get_admin_context()

    def _migrate_stub(self, domain, destination, params, flags):
        """Complete (or fail) a live migration as fakelibvirt can."""
        uuid = domain.UUIDString()
        dest = [h for h in self.computes if '//%s/' % h in destination
                or destination.endswith(h)]
        self.migrations.append((uuid, dest))
        if uuid in self.hang_migration_of:
            domain._job_type = fakelibvirt.VIR_DOMAIN_JOB_UNBOUNDED
            return
        if uuid in self.fail_migration_of:
            # Nova 33's fake libvirt leaves the job running otherwise, and
            # the compute's monitor waits for it for ever.
            domain.fail_job()
            raise fakelibvirt.make_libvirtError(
                fakelibvirt.libvirtError, 'injected: the destination '
                'dropped the connection',
                error_code=fakelibvirt.VIR_ERR_OPERATION_FAILED,
                error_domain=fakelibvirt.VIR_FROM_QEMU)
        self.computes[dest[0]].driver._host.get_connection().createXML(
            params['destination_xml'],
            'fake-createXML-doesnt-care-about-flags')
        domain.complete_job()

    def announce(self):
        """The optimizer's notifications, on oslo.messaging's test driver.

        :returns: a callable giving ``[(level, event, data)]`` of the
            actions (``resq.optimizer.action.*``) sent so far.
        """
        _impl_test.reset()
        transport = oslo_messaging.get_notification_transport(
            self.conf, url='fake:/')
        self.addCleanup(transport.cleanup)
        note = notifier_mod.PlanNotifier(self.conf, transport, host='ctl')
        # Kept in memory by the test driver.
        note.notifier = oslo_messaging.Notifier(
            transport, publisher_id='resq-optimizer.ctl', driver='test')
        self.optimizer = service.Optimizer(
            self.conf, self.client, self.compute, notifier=note,
            isolation=self.optimizer.isolation)
        return lambda: [(level, msg['event_type'],
                         msg['payload']['resq_object.data'])
                        for _, msg, level, _ in _impl_test.NOTIFICATIONS
                        if msg['event_type'].startswith(
                            'resq.optimizer.action.')]

    def scrape(self):
        """``{(name, sorted labels): value}`` of the optimizer's /metrics."""
        text = metrics.render(opt_metrics.OptimizerCollector(
            self.optimizer))
        return {(s.name, tuple(sorted(s.labels.items()))): s.value
                for f in prom_parser.text_string_to_metric_families(text)
                for s in f.samples}

    def boot(self, host, ways, vcpus=1, group=None, name=None,
             memory_mb=512):
        flavor = self.resq_flavor(ways=ways, vcpus=vcpus,
                                  memory_mb=memory_mb)
        server = self._build_server(flavor_id=flavor, networks='none',
                                    host=host, name=name)
        body = {'server': server}
        if group:
            body['os:scheduler_hints'] = {'group': group}
        created = self.api.post_server(body)
        server = self._wait_for_state_change(created, 'ACTIVE')
        self.assertEqual(host, self.host_of(server))
        return server

    def server(self, uuid):
        return self.api.get_server(uuid)

    def llc_of(self, uuid):
        """``{provider uuid: ways}`` of a server's LLC allocation."""
        return {rp: res['CUSTOM_LLC_WAY']
                for rp, res in self.client.get_allocations(uuid).items()
                if 'CUSTOM_LLC_WAY' in res}

    def assert_ways_with_cores(self, uuid):
        """The server's ways are in the cache domain of its pinned cores."""
        numa = objects.InstanceNUMATopology.get_by_instance_uuid(
            self.ctxt, uuid)
        cells = {cell.id for cell in numa.cells}
        self.assertEqual(1, len(cells))
        host = self.host_of(self.server(uuid))
        root = self.client.find_provider(host)['uuid']
        from resq_common import cache_domain
        (rp, _), = self.llc_of(uuid).items()
        self.assertEqual(cells.pop(), cache_domain.domain_of(root, rp))


class PlanAndApplyTest(OptimizerTestBase):

    def setUp(self):
        super().setUp()
        self.rps = {h: self.start_resq_compute(h)[0]
                    for h in ('host1', 'host2', 'host3')}
        # host4 has two cells: cores 0-3 with domain 0, 4-5 with domain 1,
        # and 3 classes of service in each domain.
        self.rps4 = self.start_resq_compute('host4', sockets=2,
                                            num_closids=7)

    def test_fragmented_cloud_is_planned_live_and_repacked(self):
        a = self.boot('host1', ways=3, name='a')
        b = self.boot('host2', ways=2, name='b')
        c = self.boot('host3', ways=2, vcpus=2, name='c')
        snap = collect.collect(self.client, self.compute)
        self.assertEqual({'host1', 'host2', 'host3'}, snap.hosts_in_use())
        host4 = snap.host('host4')
        self.assertEqual([4, 2], [d.cores for d in host4.domains])
        self.assertEqual([9, 9], [d.ways for d in host4.domains])

        plan, path = self.optimizer.plan()
        self.assertTrue(plan['proposed'], plan['reason'])
        self.assertEqual(3, plan['hosts_used_before'])
        self.assertEqual(1, plan['hosts_used_after'])
        self.assertEqual(1, plan['lower_bound'])
        self.assertEqual(0.0, plan['gap_pct'])
        self.assertEqual(2, len(plan['moves']))
        self.assertEqual(2, plan['moves_lower_bound'])
        self.assertTrue(os.path.exists(path))
        with open(os.path.join(self.state_dir, 'snapshots',
                               plan['snapshot_id'] + '.json')) as f:
            replay = snap_mod.from_dict(json.load(f))
        self.assertEqual(3, len(replay.instances))
        kept = ({'host1', 'host2', 'host3'}
                - {mv['from_host'] for mv in plan['moves']}).pop()

        plan, _ = self.optimizer.apply(plan['id'])
        self.assertEqual(execute.APPLIED, plan['status'], plan['result'])
        self.assertEqual([execute.DONE] * 2,
                         [a['outcome'] for a in plan['actions']])
        for server in (a, b, c):
            self.assertEqual(kept, self.host_of(self.server(server['id'])))
            self.assert_ways_with_cores(server['id'])
        for host in {'host1', 'host2', 'host3'} - {kept}:
            usages = self.client.get_usages(
                self.client.find_provider(host)['uuid'])
            self.assertEqual({0}, set(usages.values()), usages)
            self.assertEqual(0, self.llc_usage(self.rps[host]))
        self.assertEqual(7, self.llc_usage(self.rps[kept]))
        # /metrics: one plan proposed and applied, two hosts freed by two
        # live migrations, the last round's figures.
        got = self.scrape()
        self.assertEqual(1, got[('resq_optimizer_plans_total',
                                 (('outcome', 'proposed'),))])
        self.assertEqual(1, got[('resq_optimizer_plans_total',
                                 (('outcome', 'applied'),))])
        self.assertEqual(0, got[('resq_optimizer_plans_total',
                                 (('outcome', 'failed'),))])
        self.assertEqual(2, got[('resq_optimizer_hosts_freed_total', ())])
        self.assertEqual(2, got[('resq_optimizer_moves_done_total', ())])
        self.assertEqual(1, got[('resq_optimizer_last_hosts_used', ())])
        self.assertEqual(0.0, got[('resq_optimizer_last_gap_ratio', ())])
        self.assertEqual(1, got[('resq_dependency_up',
                                 (('dependency', 'placement'),))])
        # Stored with its outcomes; applying it again is refused.
        stored, _ = self.optimizer.store.load_plan(plan['id'])
        self.assertEqual(execute.APPLIED, stored['status'])
        exc = self.assertRaises(execute.PlanRefused, self.optimizer.apply,
                                plan['id'])
        self.assertIn('already applied', str(exc))

    def test_moves_land_in_the_domain_of_the_pinned_cores(self):
        # b stays on host4 (pinned by its metadata); a must join it there,
        # in whichever of host4's two cells Nova pins its core.
        b = self.boot('host4', ways=4, name='b')
        self.api.post_server_metadata(b['id'], {'resq:migratable': 'false'})
        a = self.boot('host1', ways=4, vcpus=2, name='a')
        plan, _ = self.optimizer.plan()
        self.assertTrue(plan['proposed'], plan['reason'])
        self.assertEqual([(a['id'], 'host4')], [(mv['uuid'], mv['to_host'])
                                                for mv in plan['moves']])
        plan, _ = self.optimizer.apply(plan['id'])
        self.assertEqual(execute.APPLIED, plan['status'], plan['result'])
        self.assertEqual('host4', self.host_of(self.server(a['id'])))
        self.assert_ways_with_cores(a['id'])
        self.assert_ways_with_cores(b['id'])

    def test_non_resq_pinned_cores_are_taken_capacity(self):
        pinned = self._create_flavor(vcpu=4, memory_mb=512, disk=1,
                                     ephemeral=0, extra_spec={
                                         'hw:cpu_policy': 'dedicated'})
        self._create_server(flavor_id=pinned, networks='none', host='host4')
        self.boot('host1', ways=4, name='a')
        snap = collect.collect(self.client, self.compute)
        host4 = snap.host('host4')
        self.assertEqual(1, host4.other_load)
        # Placement does not say which cell the 4 cores are in: both
        # domains lose them.
        self.assertEqual([0, 0], [d.cores for d in host4.domains])
        plan, _ = self.optimizer.plan()
        self.assertFalse(plan['proposed'])
        self.assertEqual([], plan['moves'])
        self.assertIn('no plan uses fewer than the 2 hosts', plan['reason'])

    def test_failed_migration_stops_the_plan(self):
        servers = [self.boot('host1', ways=2, name='a'),
                   self.boot('host2', ways=2, name='b'),
                   self.boot('host3', ways=2, name='c')]
        plan, _ = self.optimizer.plan()
        self.assertEqual(2, len(plan['moves']))
        first, second = plan['moves']
        self.fail_migration_of.add(first['uuid'])
        plan, _ = self.optimizer.apply(plan['id'])
        self.assertEqual(execute.PLAN_FAILED, plan['status'])
        self.assertEqual([execute.FAILED, execute.NOT_RUN],
                         [a['outcome'] for a in plan['actions']])
        self.assertIn('migration', plan['actions'][0]['detail'])
        self.assertIn(first['uuid'], plan['result'])
        # The failed server is back on its source; nothing after it ran.
        self.assertEqual(first['from_host'], self.host_of(
            self.server(first['uuid'])))
        self.assertEqual(second['from_host'], self.host_of(
            self.server(second['uuid'])))
        self.assertEqual([first['uuid']], [u for u, _ in self.migrations])
        for server in servers:
            self.assertEqual(1, len(self.llc_of(server['id'])))
        got = self.scrape()
        self.assertEqual(1, got[('resq_optimizer_plans_total',
                                 (('outcome', 'failed'),))])
        self.assertEqual(0, got[('resq_optimizer_plans_total',
                                 (('outcome', 'applied'),))])
        self.assertEqual(0, got[('resq_optimizer_hosts_freed_total', ())])
        self.assertEqual(0, got[('resq_optimizer_moves_done_total', ())])

    def test_each_move_is_announced_with_its_true_outcome(self):
        self.boot('host1', ways=2, name='a')
        self.boot('host2', ways=2, name='b')
        self.boot('host3', ways=2, name='c')
        sent = self.announce()
        plan, _ = self.optimizer.plan()
        first, second = plan['moves']
        self.fail_migration_of.add(first['uuid'])
        plan, _ = self.optimizer.apply(plan['id'])
        self.assertEqual(execute.PLAN_FAILED, plan['status'])
        # The failed move: asked, then failed; the next was never asked.
        (l1, e1, start), (l2, e2, end) = sent()
        self.assertEqual(('INFO', actions.START, 'ERROR', actions.END),
                         (l1, e1, l2, e2))
        self.assertEqual(('plan_migration', first['uuid'], plan['id'],
                          first['from_host'], first['to_host'],
                          self.api.auth_user, self.api.project_id),
                         (start['action'], start['server_uuid'],
                          start['plan_id'], start['host'],
                          start['target_host'], start['user_id'],
                          start['project_id']))
        self.assertEqual('plan %s (%s)' % (plan['id'], plan['reason']),
                         start['reason'])
        self.assertEqual(('failed', plan['actions'][0]['detail']),
                         (end['outcome'], end['detail']))

    def test_applied_moves_are_announced_done(self):
        self.boot('host1', ways=3, name='a')
        self.boot('host2', ways=2, name='b')
        sent = self.announce()
        plan, _ = self.optimizer.plan()
        plan, _ = self.optimizer.apply(plan['id'])
        self.assertEqual(execute.APPLIED, plan['status'], plan['result'])
        (mv,) = plan['moves']
        self.assertEqual([('INFO', actions.START, None, None),
                          ('INFO', actions.END, 'done', mv['to_host'])],
                         [(lv, ev, d['outcome'], d['result_host'])
                          for lv, ev, d in sent()])

    def test_plan_whose_state_changed_is_refused_before_any_move(self):
        self.boot('host1', ways=3, name='a')
        self.boot('host2', ways=2, name='b')
        plan, _ = self.optimizer.plan()
        self.assertEqual(1, len(plan['moves']))
        dest = plan['moves'][0]['to_host']
        # Someone fills the destination's cache domain meanwhile.
        self.boot(dest, ways=6, name='intruder')
        exc = self.assertRaises(execute.PlanRefused, self.optimizer.apply,
                                plan['id'])
        self.assertIn('no longer safe', str(exc))
        self.assertIn(dest, str(exc))
        self.assertEqual([], self.migrations)
        stored, _ = self.optimizer.store.load_plan(plan['id'])
        self.assertEqual(execute.REFUSED, stored['status'])

    def test_anti_affinity_is_kept(self):
        group = self.api.post_server_groups({'name': 'ha',
                                             'policy': 'anti-affinity'})
        a = self.boot('host1', ways=2, group=group['id'], name='a')
        b = self.boot('host2', ways=2, group=group['id'], name='b')
        self.boot('host3', ways=2, name='c')
        plan, _ = self.optimizer.plan()
        self.assertTrue(plan['proposed'], plan['reason'])
        self.assertEqual(2, plan['hosts_used_after'])
        self.assertEqual(2, plan['lower_bound'])
        plan, _ = self.optimizer.apply(plan['id'])
        self.assertEqual(execute.APPLIED, plan['status'], plan['result'])
        self.assertNotEqual(self.host_of(self.server(a['id'])),
                            self.host_of(self.server(b['id'])))

    def test_pinned_and_disabled(self):
        a = self.boot('host1', ways=2, name='a')
        self.boot('host2', ways=2, name='b')
        self.api.post_server_metadata(a['id'], {'resq:migratable': 'false'})
        for host in ('host3', 'host4'):
            self.api.put_service(self.api.get_services(
                host=host, binary='nova-compute')[0]['id'],
                {'status': 'disabled'})
        plan, _ = self.optimizer.plan()
        self.assertEqual([{'uuid': a['id'],
                           'reason': 'its metadata says '
                                     'resq:migratable=false'}],
                         plan['fixed'])
        self.assertEqual(['host1'], [mv['to_host'] for mv in plan['moves']])
        self.assertTrue(plan['proposed'])


class RepairTest(OptimizerTestBase):
    """Servers an agent marked as running without isolation."""

    def setUp(self):
        super().setUp()
        self.rps = {h: self.start_resq_compute(h)[0]
                    for h in ('host1', 'host2')}
        self.resq = self.useFixture(resq_api.ResQAPI())
        self.agent = self.resq.client('service')
        self.optimizer = service.Optimizer(
            self.conf, self.client, self.compute,
            isolation=self.resq.client('service'))

    def mark(self, server, reason='its cores are pinned in cache domain 1 '
             'but its 3 ways are in domain 0'):
        # As the agent of the server's host reports it.
        self.agent.set_isolation(server['id'], 'misplaced',
                                 self.host_of(self.server(server['id'])),
                                 'misplaced on host: ' + reason)

    def status(self, server):
        return self.agent.get_isolation(server['id'])['status']

    def test_a_tenants_own_metadata_moves_nothing(self):
        a = self.boot('host1', ways=3, name='a')
        # The owner writes the key agents used to write: nothing happens.
        self.api.post_server_metadata(a['id'], {
            'resq_isolation': 'misplaced: says the tenant'})
        self.assertEqual([], self.optimizer.repair())
        self.assertEqual('host1', self.host_of(self.server(a['id'])))
        self.assertEqual([], self.migrations)

    def test_a_report_from_a_host_the_server_left_is_ignored(self):
        a = self.boot('host1', ways=3, name='a')
        self.agent.set_isolation(a['id'], 'misplaced', 'host2', 'stale')
        self.assertEqual([], self.optimizer.repair())
        self.assertEqual([], self.migrations)

    def test_marked_server_moves_and_others_stay(self):
        a = self.boot('host1', ways=3, name='a')
        b = self.boot('host1', ways=2, name='b')
        self.mark(a)
        results = self.optimizer.repair()
        self.assertEqual([(a['id'], 'done', 'host1', 'host2')],
                         [(r['uuid'], r['outcome'], r['from_host'],
                           r['to_host']) for r in results])
        self.assertEqual('host2', self.host_of(self.server(a['id'])))
        self.assertEqual('host1', self.host_of(self.server(b['id'])))
        self.assertEqual({self.rps['host2']: 3}, self.llc_of(a['id']))
        self.assert_ways_with_cores(a['id'])
        self.assertEqual('moved', self.status(a))
        # Not moved again by the next round.
        self.assertEqual([], self.optimizer.repair())

    def test_no_host_with_room_is_a_failure_not_a_success(self):
        a = self.boot('host1', ways=3, name='a')
        # host2's cache is taken by servers of its own.
        for _ in range(3):
            self.boot('host2', ways=3)
        self.mark(a)
        (result,) = self.optimizer.repair()
        self.assertEqual('failed', result['outcome'])
        # Nova's harness answers the action synchronously (500 with the
        # scheduler's exception); a real API answers 202 and the migration
        # ends in error: either way the reason names NoValidHost.
        self.assertRegex(result['detail'], 'No valid host|NoValidHost')
        self.assertEqual('host1', self.host_of(self.server(a['id'])))
        self.assertEqual('misplaced', self.status(a))

    def test_failed_migration_is_reported_with_novas_reason(self):
        a = self.boot('host1', ways=3, name='a')
        self.mark(a)
        self.fail_migration_of.add(a['id'])
        (result,) = self.optimizer.repair()
        self.assertEqual('failed', result['outcome'])
        self.assertIn('host1', result['detail'])
        self.assertEqual('host1', self.host_of(self.server(a['id'])))

    def test_the_service_round_moves_nothing_by_default(self):
        a = self.boot('host1', ways=3, name='a')
        self.mark(a)
        sent = self.announce()
        logs = self.useFixture(fixtures.FakeLogger(level='INFO'))
        self.optimizer.tick()
        self.assertEqual([], self.migrations)
        self.assertEqual('host1', self.host_of(self.server(a['id'])))
        self.assertEqual('misplaced', self.status(a))
        self.assertEqual([], sent())
        self.assertIn('1 server(s) run without isolation (%s on host1); '
                      'not moved: [resq_optimizer] repair_isolation is off'
                      % a['id'], logs.output)

    def test_the_service_round_repairs_when_enabled_in_its_window(self):
        self.conf.set_override('repair_isolation', True, 'resq_optimizer')
        self.conf.set_override('repair_window', '22:00-04:00',
                               'resq_optimizer')
        a = self.boot('host1', ways=3, name='a')
        self.mark(a)
        sent = self.announce()
        noon = datetime.datetime(2026, 11, 26, 12, 0,
                                 tzinfo=datetime.timezone.utc)
        self.assertEqual([], self.optimizer.repair_round(now=noon))
        self.assertEqual([], self.migrations)
        self.assertEqual([], sent())
        night = noon.replace(hour=23)
        (result,) = self.optimizer.repair_round(now=night)
        self.assertEqual(('done', 'host2'), (result['outcome'],
                                             result['to_host']))
        self.assertEqual('host2', self.host_of(self.server(a['id'])))
        (l1, e1, start), (l2, e2, end) = sent()
        self.assertEqual(('INFO', actions.START, 'INFO', actions.END),
                         (l1, e1, l2, e2))
        self.assertEqual(('repair_migration', a['id'], 'host1', None,
                          self.api.auth_user, self.api.project_id),
                         (start['action'], start['server_uuid'],
                          start['host'], start['target_host'],
                          start['user_id'], start['project_id']))
        self.assertIn('repair of server %s reported without isolation on '
                      'host1' % a['id'], start['reason'])
        self.assertEqual(('done', 'host2'), (end['outcome'],
                                             end['result_host']))

    def test_a_failed_repair_is_announced_as_failed(self):
        self.conf.set_override('repair_isolation', True, 'resq_optimizer')
        a = self.boot('host1', ways=3, name='a')
        self.mark(a)
        self.fail_migration_of.add(a['id'])
        sent = self.announce()
        (result,) = self.optimizer.repair_round()
        self.assertEqual('failed', result['outcome'])
        (_, _, start), (level, event, end) = sent()
        self.assertEqual(('ERROR', actions.END, 'failed', result['detail']),
                         (level, event, end['outcome'], end['detail']))
        self.assertEqual('misplaced', self.status(a))
