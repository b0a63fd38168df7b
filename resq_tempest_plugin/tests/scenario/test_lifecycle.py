#    Licensed under the Apache License, Version 2.0 (the "License"); you may
#    not use this file except in compliance with the License. You may obtain
#    a copy of the License at
#
#         http://www.apache.org/licenses/LICENSE-2.0
#
#    Unless required by applicable law or agreed to in writing, software
#    distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
#    WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
#    License for the specific language governing permissions and limitations
#    under the License.
"""The partition follows the guest through Nova's server actions.

Stopped, the guest holds its ways in Placement but no resctrl group (a
group partitions running CPUs); started or rebooted, it is partitioned
again; resized to another ResQ flavor, it is partitioned with the new
ways where it runs and released where it ran; shelved and offloaded it
holds nothing; deleted (after a resize too, confirmed or not), nothing is
left behind, its migrations' allocations included.
"""

from tempest.common import compute
from tempest.common import waiters
from tempest import config
from tempest.lib import decorators

from resq_tempest_plugin.tests import base

CONF = config.CONF


class LifecycleTest(base.ResQScenarioTest):
    """Stop/start, hard reboot, delete, resize, shelve/unshelve."""

    def _wait(self, server_id, status):
        waiters.wait_for_server_status(self.servers_client, server_id,
                                       status)

    def _same_partition(self, before, after):
        self.assertEqual(
            (before['host'], before['ways'], before['cpus']),
            (after['host'], after['ways'], after['cpus']))

    @decorators.attr(type='slow')
    @decorators.idempotent_id('948dee30-16f5-4f4f-a060-cea850c61811')
    def test_stop_start_hard_reboot_delete(self):
        server, facts = self.admitted_server()
        sid = server['id']
        self.servers_client.stop_server(sid)
        self._wait(sid, 'SHUTOFF')
        self.wait_for_release(sid)
        # Nova keeps the stopped guest's claim; the agent keeps no group.
        self.assertEqual({facts['provider']: facts['ways']},
                         self.llc_allocations(sid))
        self.servers_client.start_server(sid)
        self._wait(sid, 'ACTIVE')
        self._same_partition(facts, self.wait_for_partition(sid))
        self.servers_client.reboot_server(sid, type='HARD')
        self._wait(sid, 'ACTIVE')
        self._same_partition(facts, self.wait_for_partition(sid))
        self.delete_server(sid)
        self.wait_for_release(sid)
        self.wait_for_no_allocation(sid)

    @decorators.attr(type='slow')
    @decorators.idempotent_id('b500de17-1ebc-4883-bb4c-30ce2d027500')
    def test_resize_to_another_resq_flavor(self):
        if not CONF.compute_feature_enabled.resize:
            raise self.skipException('[compute-feature-enabled] resize is '
                                     'False')
        server, facts = self.admitted_server()
        sid = server['id']
        flavor, ways = self.resq_flavor(exclude_ways={facts['ways']})
        self.servers_client.resize_server(sid, flavor['id'])
        self._wait(sid, 'VERIFY_RESIZE')
        self.servers_client.confirm_resize_server(sid)
        self._wait(sid, 'ACTIVE')
        after = self.wait_for_partition(sid)
        self.assertEqual(flavor['name'],
                         self.show_server(sid)['flavor']['original_name'])
        self.assertEqual(ways, after['ways'])
        self.wait_for_release(sid, [h for h in self.hosts
                                    if h != after['host']])
        self.assertEqual({after['provider']: ways},
                         self.llc_allocations(sid))
        # Deleted after the resize: nothing of it or of its resize's
        # migration is left anywhere.
        self._delete_leaving_nothing(sid)

    def _delete_leaving_nothing(self, sid):
        """Delete a resized server; nothing of it or its migration stays."""
        migrations = self.migration_uuids(sid)
        self.assertTrue(migrations)
        self.delete_server(sid)
        self.wait_for_nothing_held(sid, migrations)

    @decorators.attr(type='slow')
    @decorators.idempotent_id('0f6c2b8e-5d1a-4c3e-9b7f-2a4d6e8c1b39')
    def test_delete_while_resize_awaits_confirmation(self):
        # Nova confirms the resize as part of the delete: the source's
        # allocation (the migration's) and the destination's both go, and
        # no host keeps a group.
        if not CONF.compute_feature_enabled.resize:
            raise self.skipException('[compute-feature-enabled] resize is '
                                     'False')
        server, facts = self.admitted_server()
        sid = server['id']
        flavor, ways = self.resq_flavor(exclude_ways={facts['ways']})
        self.servers_client.resize_server(sid, flavor['id'])
        self._wait(sid, 'VERIFY_RESIZE')
        self._delete_leaving_nothing(sid)

    @decorators.attr(type='slow')
    @decorators.idempotent_id('5d393230-92fe-4bc1-9d66-1a80655b3205')
    def test_shelve_unshelve(self):
        if not CONF.compute_feature_enabled.shelve:
            raise self.skipException('[compute-feature-enabled] shelve is '
                                     'False')
        server, facts = self.admitted_server()
        sid = server['id']
        compute.shelve_server(self.servers_client, sid,
                              force_shelve_offload=True)
        self.wait_for_release(sid)
        self.wait_for_no_allocation(sid)
        self.servers_client.unshelve_server(sid)
        self._wait(sid, 'ACTIVE')
        after = self.wait_for_partition(sid)
        self.assertEqual(facts['ways'], after['ways'])
        self.wait_for_release(sid, [h for h in self.hosts
                                    if h != after['host']])
