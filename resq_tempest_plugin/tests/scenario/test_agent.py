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
"""The agent: adoption after a restart, and what it measures (CMT).

A restarted agent finds every running guest's class and mask in the tree
again and writes nothing. A guest's LLC occupancy, as the kernel counts
it in its monitoring group's ``mon_data``, shows on the agent's
``/metrics`` and in the host report resq-api keeps.
"""

import random

from tempest import config
from tempest.lib import decorators
from tempest.lib import exceptions as lib_exc

from resq_tempest_plugin.common import cli
from resq_tempest_plugin.common import metrics
from resq_tempest_plugin.tests import base

CONF = config.CONF
WAYS_METRIC = 'resq_instance_llc_ways'
OCCUPANCY_METRIC = 'resq_instance_llc_occupancy_bytes'
SERVER_KEYS = ('uuid', 'server_uuid', 'instance_uuid', 'server_id', 'id')


def find_occupancy(doc, server_id):
    """The occupancy a report gives for ``server_id``, or None.

    Looks through the whole document for an entry naming the server (by
    one of :data:`SERVER_KEYS`) with an ``*occupancy*`` field.
    """
    if isinstance(doc, dict):
        if any(doc.get(k) == server_id for k in SERVER_KEYS):
            for key, value in doc.items():
                if 'occupancy' in key and isinstance(value, (int, float)):
                    return value
        children = doc.values()
    elif isinstance(doc, list):
        children = doc
    else:
        return None
    for child in children:
        found = find_occupancy(child, server_id)
        if found is not None:
            return found
    return None


class AgentTest(base.ResQScenarioTest):
    """Adoption by a restarted agent; occupancy on /metrics and in the API."""

    @classmethod
    def skip_checks(cls):
        super().skip_checks()
        for name in cls.configured_hosts():
            if not CONF.resq.agent_metrics.get(name):
                raise cls.skipException('[resq] agent_metrics has no URL '
                                        'for compute host %s' % name)

    def occupancy_counted(self, facts):
        """Write a guest's occupancy as the kernel counts it; the total.

        :returns: the occupancy summed over the cache domains of its
            monitoring group, as read back through the resctrl mount.
        """
        host = self.hosts[facts['host']]
        value = random.randint(16, 4096) * 65536
        host.write_occupancy(facts['group'], facts['mon'], facts['domain'],
                             value)
        total = host.occupancy(facts['group'], facts['mon'])
        self.assertGreaterEqual(total, value)
        return total

    @decorators.attr(type='slow')
    @decorators.idempotent_id('140867b1-b5ed-4046-9004-d4c992d789dd')
    def test_restarted_agent_adopts_guest_and_writes_nothing(self):
        command = CONF.resq.agent_restart_command
        if not command:
            raise self.skipException('[resq] agent_restart_command is not '
                                     'set: the agent cannot be restarted')
        server, facts = self.admitted_server()
        name = facts['host']
        before = self.settled_snapshot(name)
        self.assertIn('%s/schemata' % facts['group'], before)
        proc = cli.run(['/bin/sh', '-c', command.format(host=name)])
        self.assertEqual(0, proc.returncode, cli.describe(proc))

        def adopted():
            samples = self.agent_samples(name)
            if samples is None:
                return ['the agent of %s does not answer' % name]
            ways = metrics.instance_value(samples, WAYS_METRIC, server['id'])
            if ways != facts['ways']:
                return ['its %s is %s, not %d' % (WAYS_METRIC, ways,
                                                  facts['ways'])]
            return []

        self.wait_for(adopted, 'the restarted agent of %s adopted %s' % (
            name, server['id']))
        after = self.hosts[name].snapshot()
        changed = sorted(f for f in set(before) | set(after)
                         if before.get(f) != after.get(f))
        self.assertEqual([], changed, 'the restarted agent wrote these '
                         'resctrl files (before, after): %s' % {
                             f: (before.get(f), after.get(f))
                             for f in changed})
        problems, _ = self.partition_state(server['id'])
        self.assertEqual([], problems)

    @decorators.attr(type='slow')
    @decorators.idempotent_id('b9c3aa62-6994-4509-aa75-e0404ec51653')
    def test_occupancy_shows_on_agent_metrics(self):
        server, facts = self.admitted_server()
        expected = self.occupancy_counted(facts)

        def shown():
            value = metrics.instance_value(
                self.agent_samples(facts['host']), OCCUPANCY_METRIC,
                server['id'])
            return [] if value == expected else [
                '%s is %s, not %d' % (OCCUPANCY_METRIC, value, expected)]

        self.wait_for(shown, 'the agent of %s shows %s\'s occupancy' % (
            facts['host'], server['id']))

    @decorators.attr(type='slow')
    @decorators.idempotent_id('53477bb6-2b1a-4fc0-9343-5c4af2fccd73')
    def test_occupancy_shows_in_host_report(self):
        server, facts = self.admitted_server()
        expected = self.occupancy_counted(facts)
        last = {}

        def reported():
            try:
                last['report'] = self.resq_client.show_host(facts['host'])
            except lib_exc.NotFound:
                return ['resq-api has no report of host %s' % facts['host']]
            value = find_occupancy(last['report'], server['id'])
            return [] if value == expected else [
                'the report gives %s for it, not %d; report: %s' % (
                    value, expected, dict(last['report']))]

        self.wait_for(reported, 'resq-api\'s host report of %s shows %s\'s '
                      'occupancy' % (facts['host'], server['id']))
