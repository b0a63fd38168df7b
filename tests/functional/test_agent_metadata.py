"""Guest mbuf budgets written into real Nova server metadata.

Nova's functional harness runs the compute API in-process (behind
wsgi-intercept); the agent's client is built from ``[nova]`` options with
keystoneauth's ``admin_token`` plugin and talks to it over HTTP through
keystoneauth, as in production. Keystone itself is stubbed by the harness,
which reads the caller's identity from ``X-Auth-User`` / ``X-Roles``
headers, so the test adds those to the adapter.
"""

import sys

import fixtures
from nova.tests.functional import integrated_helpers
from oslo_config import cfg

from resq_agent.conf import dma as dma_conf
from resq_agent import dma
from resq_agent import metadata


class ServerMetadataTest(integrated_helpers._IntegratedTestBase):
    ADMIN_API = True
    microversion = 'latest'

    def setUp(self):
        self.flags(api_paste_config=sys.prefix + '/etc/nova/api-paste.ini',
                   group='wsgi')
        super().setUp()
        self.server = self._create_server(networks='none')
        self.other = self._create_server(networks='none')
        # The agent's own configuration (not Nova's global CONF), from a
        # file as an operator writes it.
        path = self.useFixture(fixtures.TempDir()).path + '/agent.conf'
        with open(path, 'w') as f:
            f.write('[resq_agent]\novsdb_connection =\n'
                    '[nova]\nauth_type = admin_token\nendpoint = %s\n'
                    'token = resq-agent\n' % self.api_fixture.base_url)
        self.agent_conf = cfg.ConfigOpts()
        dma_conf.register_opts(self.agent_conf)
        self.agent_conf([], project='resq', default_config_files=[path])
        self.client = metadata.ServerMetadata.from_conf(self.agent_conf)
        self.client._client._adapter.additional_headers.update({
            'X-Auth-User': 'admin', 'X-User-Id': 'admin',
            'X-Auth-Project-Id': self.api_fixture.project_id,
            'X-Roles': 'reader,member,admin'})

    def metadata_of(self, server):
        return self.api.get_server(server['id'])['metadata']

    def test_publishes_and_keeps_user_metadata(self):
        self.api.post_server_metadata(self.server['id'], {'owner': 'nfv'})
        budget = dma.GuestBudget(self.server['id'], 0, 64, 18432)
        self.assertTrue(self.client.publish_budget(budget))
        self.assertEqual({'owner': 'nfv', 'resq_mbuf_budget': '18432',
                          'resq_packet_bytes': '64'},
                         self.metadata_of(self.server))
        self.assertEqual({}, self.metadata_of(self.other))

    def test_writes_only_when_a_value_changes(self):
        budget = dma.GuestBudget(self.server['id'], 0, 1518, 1474)
        self.assertTrue(self.client.publish_budget(budget))
        self.assertFalse(self.client.publish_budget(budget))
        updated = dma.GuestBudget(self.server['id'], 0, 1518, 737)
        self.assertTrue(self.client.publish_budget(updated))
        self.assertEqual('737',
                         self.metadata_of(self.server)['resq_mbuf_budget'])

    def test_deleted_server_is_reported_as_gone(self):
        self._delete_server(self.other)
        exc = self.assertRaises(metadata.ServerGone, self.client.get,
                                self.other['id'])
        self.assertIn(self.other['id'], str(exc))
        self.assertIn('404', str(exc))

    def test_sizer_publishes_through_the_api(self):
        Domain = type('Domain', (), {'id': 0, 'io_ways': 2,
                                     'way_size_bytes': 2359296})
        Topology = type('Topology', (), {'domains': [Domain]})
        Assign = type('Assign', (), {'instance_uuid': self.server['id'],
                                     'domain_id': 0, 'packet_bytes': 64})
        sizer = dma.DmaSizer(self.agent_conf, server_metadata=self.client)
        budgets = sizer(Topology, [Assign])
        self.assertEqual(str(budgets[0].guests[0].mbufs),
                         self.metadata_of(self.server)['resq_mbuf_budget'])

    def test_missing_credentials_name_the_group(self):
        conf = cfg.ConfigOpts()
        dma_conf.register_opts(conf)
        # No file: not even one a cloud run left in /etc/resq.
        conf([], project='resq', default_config_files=[])
        exc = self.assertRaises(metadata.NovaUnavailable,
                                metadata.ServerMetadata.from_conf, conf)
        self.assertIn('[nova] auth_type is not set', str(exc))

    def test_servers_without_isolation_are_marked_then_cleared(self):
        from resq_agent import isolation

        marks = isolation.IsolationPublisher(self.agent_conf, self.client)
        self.api.post_server_metadata(self.server['id'], {'owner': 'nfv'})
        marks({self.server['id']: 'its cores are pinned in cache domain 1 '
               'but its 3 ways are in domain 0' + ' x' * 200}, set())
        meta = self.metadata_of(self.server)
        self.assertEqual('nfv', meta['owner'])
        value = meta[isolation.ISOLATION_KEY]
        self.assertTrue(value.startswith('misplaced: its cores are pinned'))
        self.assertLessEqual(len(value), 255)
        self.assertNotIn(isolation.ISOLATION_KEY, self.metadata_of(
            self.other))
        # Repaired: back to ok. A server never marked is not written.
        marks({}, {self.server['id'], self.other['id']})
        self.assertEqual('ok', self.metadata_of(self.server)[
            isolation.ISOLATION_KEY])
        self.assertNotIn(isolation.ISOLATION_KEY, self.metadata_of(
            self.other))

    def test_marks_that_cannot_land_are_retried(self):
        from resq_agent import isolation

        class Down:
            def publish(self, server, values, expect=None):
                raise metadata.NovaUnavailable(reason='connection refused')

        marks = isolation.IsolationPublisher(self.agent_conf, Down())
        marks({self.server['id']: 'no room'}, set())
        self.assertNotIn(isolation.ISOLATION_KEY,
                         self.metadata_of(self.server))
        marks._metadata = self.client       # Nova is back
        marks.after_apply(None, [])
        self.assertEqual('misplaced: no room', self.metadata_of(
            self.server)[isolation.ISOLATION_KEY])

    def test_an_agent_clears_only_its_own_mark(self):
        from resq_agent import isolation

        uuid = self.server['id']
        why = 'its cores are pinned in cache domain 1 but its 3 ways are in ' \
              'domain 0'
        old = isolation.IsolationPublisher(self.agent_conf, self.client,
                                           host='host1')
        new = isolation.IsolationPublisher(self.agent_conf, self.client,
                                           host='host2')
        old({uuid: why}, set())
        self.assertEqual('misplaced on host1: ' + why, self.metadata_of(
            self.server)[isolation.ISOLATION_KEY])
        # Moved by an operator to host2, misplaced there too (same
        # reason); host1's agent then sees it gone: its late "ok" would
        # erase host2's mark, so it is not written.
        new({uuid: why}, set())
        old({}, {uuid})
        self.assertEqual('misplaced on host2: ' + why, self.metadata_of(
            self.server)[isolation.ISOLATION_KEY])
        self.assertEqual({}, old._pending)
        # The optimizer repaired it: its record stays when host2 clears.
        self.api.post_server_metadata(uuid, {
            isolation.ISOLATION_KEY: 'moved to host3'})
        new({}, {uuid})
        self.assertEqual('moved to host3', self.metadata_of(
            self.server)[isolation.ISOLATION_KEY])
        # An agent clears its own mark.
        new({uuid: why}, set())
        new({}, {uuid})
        self.assertEqual('ok', self.metadata_of(
            self.server)[isolation.ISOLATION_KEY])

    def test_a_mark_that_never_landed_is_not_cleared(self):
        from resq_agent import isolation

        class Down:
            def publish(self, server, values, expect=None):
                raise metadata.NovaUnavailable(reason='connection refused')

        marks = isolation.IsolationPublisher(self.agent_conf, Down(),
                                             host='host1')
        marks({self.server['id']: 'no room'}, set())
        marks({}, {self.server['id']})
        self.assertEqual({}, marks._pending)
        marks._metadata = self.client
        marks.after_apply(None, [])
        self.assertNotIn(isolation.ISOLATION_KEY,
                         self.metadata_of(self.server))
