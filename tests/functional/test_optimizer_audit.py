"""The optimizer's migration audit against Nova's own services.

A live migration Nova gives up on ("too late to rollback": the driver's
call raises, as when the source's libvirtd goes away mid-way) leaves the
server in ERROR with its allocation on the destination and its
migration's on the source. Deleting the server removes the server's
allocations, not the migration's: the source's cache ways stay held. The
audit releases exactly those, and never a server's or a migration's Nova
still lists.
"""

import time

import fixtures
from nova.tests import fixtures as nova_fixtures
from nova.tests.fixtures import libvirt as fakelibvirt

from resq_nova.optimizer import orphans
from resq_nova.optimizer import service
from tests.functional import test_optimizer
from tests.functional import test_optimizer_edges


def hang_migration(test, server, dest):
    """Live-migrate ``server`` to ``dest``; it runs until the cleanup.

    :returns: the migration, as Nova lists it.
    """
    test.useFixture(fixtures.MonkeyPatch(
        'nova.tests.fixtures.libvirt.Domain.abortJob',
        test_optimizer_edges._abort_job))
    test.hang_migration_of.add(server['id'])
    test.compute.live_migrate(server['id'], dest)
    test._wait_for_migration_status(server, ['running'])
    (migration,) = test.compute.live_migrations(server['id'])
    test.addCleanup(test._wait_for_migration_status, server, ['cancelled'])
    test.addCleanup(test.compute.abort_live_migration, server['id'],
                    migration['id'])
    return migration


class MigrationAuditTest(test_optimizer.OptimizerTestBase):

    def setUp(self):
        super().setUp()
        self.rps = {h: self.start_resq_compute(h)[0]
                    for h in ('host1', 'host2')}
        self.roots = {h: self.client.find_provider(h)['uuid']
                      for h in self.rps}

    def abandon(self, server):
        """Live-migrate to host2; the driver raises at once.

        What nova-compute does then is its own: the migration and the
        server in ERROR, no allocation given back.
        """
        def broken(*args, **kwargs):
            raise fakelibvirt.make_libvirtError(
                fakelibvirt.libvirtError, 'injected: Connection to the '
                'hypervisor is broken',
                error_code=fakelibvirt.VIR_ERR_SYSTEM_ERROR,
                error_domain=fakelibvirt.VIR_FROM_RPC)
        with fixtures.MonkeyPatch(
                'nova.virt.libvirt.driver.LibvirtDriver.live_migration',
                broken):
            self.api.api_post(
                '/servers/%s/action' % server['id'],
                {'os-migrateLive': {'host': 'host2',
                                    'block_migration': 'auto'}},
                check_response_status=[202, 500])
            self._wait_for_migration_status(server, ['error'])
            # Nova records no fault: it gave up, nothing failed it knows.
            for _ in range(100):
                server = self.api.get_server(server['id'])
                if server['status'] == 'ERROR':
                    break
                time.sleep(0.1)
            self.assertEqual('ERROR', server['status'])
        (migration,) = self.compute.live_migrations(server['id'])
        return server, migration

    def usage(self, host):
        return self.llc_usage(self.rps[host])

    def test_the_migration_of_a_deleted_server_is_released(self):
        server = self.boot('host1', ways=3)
        server, migration = self.abandon(server)
        # What Nova left: the server's ways on host2, the migration's on
        # host1, both held.
        self.assertEqual({self.rps['host2']: 3}, self.llc_of(server['id']))
        self.assertEqual({self.rps['host1']: 3},
                         self.llc_of(migration['uuid']))
        # While the server exists its migration is only shown.
        (kept,) = self.optimizer.audit()
        self.assertEqual((migration['uuid'], orphans.KEPT),
                         (kept['consumer'], kept['outcome']))
        self.assertEqual('error', kept['migration']['status'])
        self.assertEqual(3, self.usage('host1'))

        self._delete_server(server)
        # Nova removed the server's allocation, not the migration's, and
        # no longer lists the migration.
        self.assertEqual(0, self.usage('host2'))
        self.assertEqual(3, self.usage('host1'))
        self.assertEqual([], self.compute.list_migrations())

        (released,) = self.optimizer.audit()
        self.assertEqual((migration['uuid'], orphans.RELEASED),
                         (released['consumer'], released['outcome']))
        self.assertEqual(3, released['held'][self.rps['host1']][
            'CUSTOM_LLC_WAY'])
        self.assertEqual(0, self.usage('host1'))
        # All of it: the compute node's core and memory too.
        self.assertEqual({}, self.client.get_allocations(migration['uuid']))
        self.assertEqual(0, self.client.get_usages(
            self.roots['host1']).get('PCPU', 0))
        self.assertEqual([], self.optimizer.audit())
        self.assertEqual(1, self.scrape()[(
            'resq_optimizer_migration_allocations_total',
            (('outcome', 'released'),))])

    def test_servers_and_moves_under_way_are_never_released(self):
        a = self.boot('host1', ways=3, name='a')
        b = self.boot('host2', ways=2, name='b')
        migration = hang_migration(self, a, 'host2')
        before = {h: self.usage(h) for h in self.rps}
        (kept,) = self.optimizer.audit()
        self.assertEqual((migration['uuid'], orphans.KEPT, 'running'),
                         (kept['consumer'], kept['outcome'],
                          kept['migration']['status']))
        self.assertEqual(before, {h: self.usage(h) for h in self.rps})
        self.assertEqual({self.rps['host2']: 2}, self.llc_of(b['id']))

    def test_with_release_off_it_is_only_shown(self):
        self.conf.set_override('release_orphaned_migrations', False,
                               'resq_optimizer')
        server, migration = self.abandon(self.boot('host1', ways=3))
        self._delete_server(server)
        (kept,) = self.optimizer.audit()
        self.assertEqual(orphans.KEPT, kept['outcome'])
        self.assertIn('release_orphaned_migrations is off', kept['detail'])
        self.assertEqual(3, self.usage('host1'))

    def test_a_consumer_changed_meanwhile_is_left_alone(self):
        server, migration = self.abandon(self.boot('host1', ways=3))
        self._delete_server(server)
        real = self.client.get_consumer

        def stale(uuid):
            found = real(uuid)
            return dict(found, consumer_generation=found[
                'consumer_generation'] - 1)
        self.useFixture(fixtures.MonkeyPatch(
            'resq_common.clients.placement.PlacementClient.get_consumer',
            lambda client, uuid: stale(uuid)))
        (failed,) = self.optimizer.audit()
        self.assertEqual(orphans.FAILED, failed['outcome'])
        self.assertEqual(3, self.usage('host1'))

    def test_the_service_releases_only_what_two_audits_found(self):
        server, migration = self.abandon(self.boot('host1', ways=3))
        self._delete_server(server)
        (first,) = self.optimizer.audit(min_age=3600)
        self.assertEqual(orphans.KEPT, first['outcome'])
        self.assertIn('released if still so in', first['detail'])
        self.assertEqual(3, self.usage('host1'))
        (second,) = self.optimizer.audit(min_age=0)
        self.assertEqual(orphans.RELEASED, second['outcome'])
        self.assertEqual(0, self.usage('host1'))

    def test_the_service_audits_on_its_own_timer(self):
        server, migration = self.abandon(self.boot('host1', ways=3))
        self._delete_server(server)
        self.conf.set_override('audit_interval', 1, 'resq_optimizer')
        self.conf.set_override('interval', 3600, 'resq_optimizer')
        svc = service.make_service(self.conf, self.optimizer)
        svc.start()
        self.addCleanup(svc.stop)
        for _ in range(100):
            if self.usage('host1') == 0:
                break
            time.sleep(0.1)
        self.assertEqual(0, self.usage('host1'))


class DownCellAuditTest(test_optimizer.OptimizerTestBase):
    """While a cell is down Nova's lists leave it out: nothing released."""

    NUMBER_OF_CELLS = 2

    def setUp(self):
        super().setUp()
        self.rps = {}
        for host, cell in (('host1', 'cell1'), ('host2', 'cell1'),
                           ('host3', 'cell2')):
            self.rps[host] = self.start_resq_compute(host,
                                                     cell_name=cell)[0]

    def test_a_migration_under_way_in_a_down_cell_is_kept(self):
        a = self.boot('host1', ways=3, name='a')
        migration = hang_migration(self, a, 'host2')
        with nova_fixtures.DownCellFixture(
                down_cell_mappings=[self.cell_mappings['cell1']]):
            # Nova's list leaves the migration out, without an error.
            self.assertEqual([], self.compute.list_migrations())
            (kept,) = self.optimizer.audit()
        self.assertEqual((migration['uuid'], orphans.KEPT),
                         (kept['consumer'], kept['outcome']))
        self.assertIn('Nova cannot reach the cell', kept['detail'])
        self.assertEqual(3, self.llc_usage(self.rps['host1']))
