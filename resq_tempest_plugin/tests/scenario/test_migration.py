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
"""resq-optimizer's plan moves a guest, and its partition moves with it.

Two hosts each hold one guest: a ResQ guest on one, a guest without
``resq:`` specs (load that stays) on the other. The plan that frees a
host moves the ResQ guest to the other one; ``resq-optimizer apply``
carries it out by live migration (or, where ``[resq] live_migration`` is
False, the test carries the plan's move out by cold migration). The
destination's agent partitions the guest, the source's releases it.
"""

import json
import os

import fixtures
from tempest.common import waiters
from tempest import config
from tempest.lib import decorators

from resq_common.clients import compute as compute_mod
from resq_tempest_plugin.common import cli
from resq_tempest_plugin.tests import base

CONF = config.CONF


class OptimizerMigrationTest(base.ResQScenarioTest):
    """A plan's move carried out; the partition follows the guest."""

    required_hosts = 2

    @classmethod
    def skip_checks(cls):
        super().skip_checks()
        if not os.path.isfile(CONF.resq.optimizer_config):
            raise cls.skipException('[resq] optimizer_config %s does not '
                                    'exist' % CONF.resq.optimizer_config)

    def optimizer(self, *args):
        """``resq-optimizer --config-file <[resq] optimizer_config> ...``."""
        command = cli.find_command('resq-optimizer')
        self.assertIsNotNone(command, 'resq-optimizer is not installed')
        return cli.run([command, '--config-file', CONF.resq.optimizer_config]
                       + list(args))

    def make_plan(self):
        """A plan of the live cloud, which must be proposed."""
        out = os.path.join(self.useFixture(fixtures.TempDir()).path,
                           'plan.json')
        proc = self.optimizer('plan', '--min-hosts-freed', '1', '--json',
                              out)
        self.assertEqual(0, proc.returncode, cli.describe(proc))
        with open(out) as f:
            plan = json.load(f)
        self.assertTrue(plan['proposed'], 'the plan is not proposed: %s'
                        % plan.get('reason'))
        return plan

    def enable_freed_hosts(self):
        """Enable again compute services a plan disabled as freed."""
        for svc in self.services_client.list_services(
                binary='nova-compute')['services']:
            if (svc['status'] == 'disabled' and (svc.get(
                    'disabled_reason') or '').startswith(
                    compute_mod.FREED_REASON)):
                self.services_client.update_service(svc['id'],
                                                    status='enabled')

    def apply_plan(self, plan):
        """``resq-optimizer apply``; the plan is applied in resq-api too."""
        self.addCleanup(self.enable_freed_hosts)
        proc = self.optimizer('apply', plan['id'], '--timeout',
                              str(CONF.compute.build_timeout * 3))
        if proc.returncode:
            faults = {m['uuid']: self.show_server(m['uuid']).get('fault')
                      for m in plan['moves']}
            self.fail('%s\nNova\'s faults of the moved servers: %s' % (
                cli.describe(proc), faults))
        rec = self.resq_client.show_plan(plan['id'])
        self.assertEqual('applied', rec['state'], dict(rec))

    def cold_migrate(self, server_id, host):
        self.servers_client.migrate_server(server_id, host=host)
        waiters.wait_for_server_status(self.servers_client, server_id,
                                       'VERIFY_RESIZE')
        self.servers_client.confirm_resize_server(server_id)
        waiters.wait_for_server_status(self.servers_client, server_id,
                                       'ACTIVE')

    @decorators.attr(type='slow')
    @decorators.idempotent_id('a9f280d5-d328-46ca-8d27-b1ab086f36d1')
    def test_plan_moves_partition_with_guest(self):
        server, facts = self.admitted_server()
        source = facts['host']
        target = sorted(h for h in self.hosts if h != source)[0]
        plain = self.boot(self.create_flavor()['id'], host=target)
        self.assertEqual(target, plain['OS-EXT-SRV-ATTR:host'])
        plan = self.make_plan()
        moves = [m for m in plan['moves'] if m['uuid'] == server['id']]
        self.assertEqual(1, len(moves), plan['moves'])
        [move] = moves
        self.assertEqual((source, target),
                         (move['from_host'], move['to_host']))
        if CONF.resq.live_migration:
            self.apply_plan(plan)
        else:
            self.cold_migrate(server['id'], target)
        waiters.wait_for_server_status(self.servers_client, server['id'],
                                       'ACTIVE')
        after = self.wait_for_partition(server['id'])
        self.assertEqual((target, move['to_domain'], facts['ways']),
                         (after['host'], after['domain'], after['ways']))
        self.wait_for_release(server['id'], [source])
        self.assertEqual({after['provider']: facts['ways']},
                         self.llc_allocations(server['id']))
