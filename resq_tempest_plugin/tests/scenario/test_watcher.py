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
"""Watcher's applier carries out resq-nova's strategy; the partition follows.

As in ``test_migration``: a ResQ guest on one host, a guest without
``resq:`` specs on the other. A ONESHOT audit of goal
``resq_cache_consolidation`` with resq-nova's strategy proposes an action
plan that live-migrates the ResQ guest onto the other host; Watcher's
applier carries it out. The destination's agent partitions the guest, the
source's releases it, Placement holds its ways on the destination.
"""

import time

from tempest.common import waiters
from tempest import config
from tempest.lib.common.utils import data_utils
from tempest.lib import decorators

from resq_tempest_plugin.services import watcher_client
from resq_tempest_plugin.tests import base

CONF = config.CONF
GOAL = STRATEGY = 'resq_cache_consolidation'
# Audits tried before the plan must have the move: Watcher's compute model
# is rebuilt periodically, and a server booted just before the first audit
# may not be in it yet.
AUDITS = 4


class WatcherMigrationTest(base.ResQScenarioTest):
    """An audit's action plan started; the partition follows the guest."""

    required_hosts = 2

    @classmethod
    def skip_checks(cls):
        super().skip_checks()
        if not CONF.service_available.watcher:
            raise cls.skipException(
                '[service_available] watcher is False: no Watcher with '
                'resq-nova\'s goal and strategy to run an audit on')
        if not CONF.resq.live_migration:
            raise cls.skipException(
                '[resq] live_migration is False: Watcher\'s plan '
                'live-migrates')

    @classmethod
    def setup_clients(cls):
        super().setup_clients()
        params = config.service_client_config()
        cls.watcher_client = watcher_client.WatcherClient(
            cls.os_admin.auth_provider, CONF.resq.watcher_catalog_type,
            CONF.identity.region, **params)

    def wait_state(self, show, uuid, done, what):
        """Poll ``show(uuid)['state']`` until it is one of ``done``."""
        deadline = time.monotonic() + CONF.compute.build_timeout * 3
        while True:
            doc = show(uuid)
            if doc['state'] in done:
                return doc
            if time.monotonic() > deadline:
                self.fail('%s %s still %s' % (what, uuid, doc['state']))
            time.sleep(CONF.compute.build_interval)

    def audit(self, template):
        """A ONESHOT audit, SUCCEEDED; ``(audit, its action plans)``."""
        audit = self.watcher_client.create_audit(
            template['uuid'], parameters={'min_hosts_freed': 1,
                                          'time_limit': 30})
        self.addCleanup(self.watcher_client.delete_quietly, 'audit',
                        audit['uuid'])
        audit = self.wait_state(self.watcher_client.show_audit,
                                audit['uuid'], ('SUCCEEDED', 'FAILED',
                                                'CANCELLED'), 'audit')
        self.assertEqual('SUCCEEDED', audit['state'],
                         'the audit failed; see watcher-decision-engine\'s '
                         'log: %s' % dict(audit))
        plans = self.watcher_client.list_action_plans(audit['uuid'])
        for plan in plans:
            self.addCleanup(self.watcher_client.delete_quietly,
                            'action_plan', plan['uuid'])
        return audit, plans

    def recommended_move(self, server_id):
        """The action plan that migrates ``server_id``, and its action."""
        template = self.watcher_client.create_audit_template(
            data_utils.rand_name('resq-watcher'), GOAL, STRATEGY)
        self.addCleanup(self.watcher_client.delete_quietly,
                        'audit_template', template['uuid'])
        seen = []
        for _ in range(AUDITS):
            audit, plans = self.audit(template)
            for plan in plans:
                actions = self.watcher_client.list_actions(plan['uuid'])
                seen.append((plan['state'], plan.get(
                    'efficacy_indicators'), actions))
                moves = [a for a in actions
                         if a['action_type'] == 'migrate' and
                         a['input_parameters'].get('resource_id') ==
                         server_id]
                if plan['state'] == 'RECOMMENDED' and moves:
                    self.assertEqual(1, len(actions), actions)
                    return plan, moves[0]
            # Watcher's model may not hold the servers yet.
            time.sleep(CONF.compute.build_interval * 5)
        self.fail('no audit of %d proposed to move %s: %s' % (
            AUDITS, server_id, seen))

    @decorators.attr(type='slow')
    @decorators.idempotent_id('6c0d1f3e-7a52-4c8e-9d3b-2f5e8a41b7c9')
    def test_action_plan_moves_partition_with_guest(self):
        server, facts = self.admitted_server()
        source = facts['host']
        target = sorted(h for h in self.hosts if h != source)[0]
        plain = self.boot(self.create_flavor()['id'], host=target)
        self.assertEqual(target, plain['OS-EXT-SRV-ATTR:host'])
        plan, action = self.recommended_move(server['id'])
        params = action['input_parameters']
        self.assertEqual(('live', source, target), (
            params['migration_type'], params['source_node'],
            params['destination_node']))
        self.watcher_client.start_action_plan(plan['uuid'])
        plan = self.wait_state(self.watcher_client.show_action_plan,
                               plan['uuid'], ('SUCCEEDED', 'FAILED',
                                              'CANCELLED', 'SUPERSEDED'),
                               'action plan')
        self.assertEqual('SUCCEEDED', plan['state'], '%s; its actions: %s'
                         % (dict(plan), self.watcher_client.list_actions(
                             plan['uuid'])))
        waiters.wait_for_server_status(self.servers_client, server['id'],
                                       'ACTIVE')
        self.assertEqual(target, self.show_server(server['id'])[
            'OS-EXT-SRV-ATTR:host'])
        after = self.wait_for_partition(server['id'])
        self.assertEqual((target, facts['ways']),
                         (after['host'], after['ways']))
        self.wait_for_release(server['id'], [source])
        self.assertEqual({after['provider']: facts['ways']},
                         self.llc_allocations(server['id']))
