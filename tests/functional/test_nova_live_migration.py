"""Live migration of ResQ servers through real Nova services.

Nova's libvirt driver runs over fakelibvirt; the migration itself is
completed the way Nova's own libvirt functional tests do it
(``LibvirtMigrationMixin``: the ``migrateToURI3`` of fakelibvirt creates the
domain on the destination and completes the job). Everything above it is
Nova: the conductor's live-migration task asks the scheduler about the
named host, the ResQ filter runs, Placement allocations move.
"""

import logging

import fixtures
from nova.tests.functional.libvirt import base

from tests.functional import test_nova_scheduler


class LiveMigrationTest(base.LibvirtMigrationMixin,
                        test_nova_scheduler.ResQNovaTestBase):

    def setUp(self):
        super().setUp()
        self.rps = {h: self.start_resq_compute(h)[0]
                    for h in ('host1', 'host2', 'host3')}

    def boot_on(self, host, ways):
        flavor = self.resq_flavor(ways=ways)
        server = self._create_server(flavor_id=flavor, networks='none',
                                     host=host)
        self.assertEqual(host, self.host_of(server))
        return server

    def llc_allocations(self, server):
        return {rp: res['CUSTOM_LLC_WAY']
                for rp, res in self.client.get_allocations(
                    server['id']).items() if 'CUSTOM_LLC_WAY' in res}

    def test_moves_to_named_host_with_its_ways(self):
        self.server = self.boot_on('host1', ways=4)
        self.assertEqual({self.rps['host1']: 4},
                         self.llc_allocations(self.server))
        self.src = self.computes['host1']
        self.dest = self.computes['host2']
        server = self._live_migrate(self.server, host='host2')
        self.assertTrue(self.migrate_stub_ran)
        self.assertEqual('host2', self.host_of(server))
        # The ways now come from host2's cache domain; host1's are free.
        self.assertEqual({self.rps['host2']: 4},
                         self.llc_allocations(server))
        self.assertEqual(0, self.llc_usage(self.rps['host1']))
        self.assertEqual(4, self.llc_usage(self.rps['host2']))
        self.assertEqual(0, self.llc_usage(self.rps['host3']))

    def migrate_refused(self, server, host):
        """Ask to live-migrate to ``host``; the scheduler says no.

        The harness turns RPC casts into calls, so the conductor's
        NoValidHost reaches the API as a 500, as in Nova's own tests.
        """
        self.api.api_post(
            '/servers/%s/action' % server['id'],
            {'os-migrateLive': {'host': host, 'block_migration': 'auto'}},
            check_response_status=[500])
        self._wait_for_migration_status(server, ['error'])
        return self._wait_for_state_change(server, 'ACTIVE')

    def test_named_host_without_free_ways_is_refused(self):
        self.server = self.boot_on('host1', ways=4)
        # host2's domain: 9 usable ways, 7 taken: 4 more do not fit.
        self.boot_on('host2', ways=7)
        self.src = self.computes['host1']
        self.dest = self.computes['host2']
        server = self.migrate_refused(self.server, 'host2')
        self.assertFalse(self.migrate_stub_ran)
        self.assertEqual('host1', self.host_of(server))
        self.assertEqual({self.rps['host1']: 4},
                         self.llc_allocations(server))
        self.assertEqual(4, self.llc_usage(self.rps['host1']))
        self.assertEqual(7, self.llc_usage(self.rps['host2']))


class LiveMigrationFilterTest(base.LibvirtMigrationMixin,
                              test_nova_scheduler.ResQNovaTestBase):
    """A named destination goes through the ResQ filter too."""

    def test_ways_in_the_wrong_cell_refuse_the_named_host(self):
        # host2 has two sockets: cell 0 (pCPUs 0-3) and cell 1 (4-5), one
        # cache domain each. An ordinary pinned server takes all of cell
        # 0's cores; a ResQ server takes 7 of domain 1's 9 ways.
        dom = self.start_resq_compute('host2', sockets=2)
        pinned = self._create_flavor(vcpu=4, memory_mb=512, disk=1,
                                     ephemeral=0, extra_spec={
                                         'hw:cpu_policy': 'dedicated'})
        self._create_server(flavor_id=pinned, networks='none')
        self._create_server(flavor_id=self.resq_flavor(ways=7),
                            networks='none')
        self.assertEqual(0, self.llc_usage(dom[0]))
        self.assertEqual(7, self.llc_usage(dom[1]))
        # Placement can give 4 ways from domain 0, but the cores could only
        # be pinned in cell 1: the filter sends the server to host1.
        src = self.start_resq_compute('host1')[0]
        self.server = self._create_server(
            flavor_id=self.resq_flavor(ways=4), networks='none')
        self.assertEqual('host1', self.host_of(self.server))
        self.src = self.computes['host1']
        self.dest = self.computes['host2']
        # Per-host refusals are DEBUG, as Nova's filters log theirs.
        debug = self.useFixture(fixtures.FakeLogger(
            name='resq_nova.nova.scheduler.filters', level=logging.DEBUG))
        server = self.migrate_refused(self.server, 'host2')
        self.assertFalse(self.migrate_stub_ran)
        self.assertEqual('host1', self.host_of(server))
        self.assertEqual({src: 4}, {
            rp: res['CUSTOM_LLC_WAY'] for rp, res in
            self.client.get_allocations(server['id']).items()
            if 'CUSTOM_LLC_WAY' in res})
        self.assertEqual(0, self.llc_usage(dom[0]))
        self.assertEqual(7, self.llc_usage(dom[1]))
        self.assertIn('ResQFilter: no allocation candidate of (host2',
                      debug.output)

    migrate_refused = LiveMigrationTest.migrate_refused
