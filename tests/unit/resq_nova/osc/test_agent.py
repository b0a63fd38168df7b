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
"""``openstack resq agent list`` and ``agent show`` on a real resq-api.

resq-api runs in-process (:class:`tests.fixtures.resq_api.ResQAPI`: the
whole WSGI stack, keystonemiddleware's auth_token with faked tokens, a
SQLite database); the agents' reports are stored through the project's
client as the agent sends them; the cliff commands run with the plugin's
client and cliff's JSON formatter, as in ``tests/functional/
test_osc_plugin.py``.
"""

import datetime
import io
import json

import fixtures
from osc_lib import exceptions

from resq_nova.osc import client as osc_client
from resq_nova.osc.v1 import agent as agent_cmd
from tests import base
from tests.fixtures import resq_api

SERVER = 'aaaaaaaa-0000-4000-8000-00000000000a'
DOMAINS = [{'id': 0, 'ways_total': 9, 'ways_used': 3},
           {'id': 1, 'ways_total': 9, 'ways_used': 0}]


class FakeClientManager:
    def __init__(self, resq):
        self.resq = resq


class FakeApp:
    """What a command uses of OpenStackClient's application."""

    def __init__(self, resq):
        self.client_manager = FakeClientManager(resq)
        self.stdout = io.StringIO()
        self.stderr = io.StringIO()


class AgentCommandsTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.api = self.useFixture(resq_api.ResQAPI())
        # The plugin's client as OpenStackClient makes it (at its default
        # microversion, 1.0), resq-api's alone.
        self.resq = osc_client.ResQClient(None, None,
                                          self.api.client('admin'))
        agent = self.api.client('service')
        # An agent of this release: microversion 1.1, with its servers.
        agent.report_host('cmp-1', {
            'domains': DOMAINS, 'agent_version': '1.0.0',
            'instances': [{'server_uuid': SERVER, 'domain': 0, 'ways': 3}]})
        # An older one: 1.0, no servers.
        agent.report_host('cmp-2', {'domains': DOMAINS[:1],
                                    'agent_version': '0.9.0'})

    def run_cmd(self, cls, *argv, fmt=('-f', 'json')):
        app = FakeApp(self.resq)
        cmd = cls(app, None)
        parsed = cmd.get_parser('openstack resq agent').parse_args(
            list(argv) + list(fmt))
        self.assertEqual(0, cmd.run(parsed))
        out = app.stdout.getvalue()
        return json.loads(out) if fmt else out

    def later(self, seconds):
        when = datetime.datetime.now(datetime.timezone.utc) + \
            datetime.timedelta(seconds=seconds)
        self.useFixture(fixtures.MonkeyPatch(
            'resq_nova.osc.v1.agent._now', lambda: when))

    def test_list_shows_every_agent(self):
        rows = self.run_cmd(agent_cmd.ListAgent)
        self.assertEqual(
            [('cmp-1', '1.0.0', '1.1', 'up', 2, 1),
             ('cmp-2', '0.9.0', '1.0', 'up', 1, None)],
            [(r['Host'], r['Agent Version'], r['Microversion'], r['State'],
              r['Domains'], r['Servers']) for r in rows])
        stored = self.api.client('admin').get_host('cmp-1')['updated_at']
        self.assertEqual(stored, rows[0]['Last Report'])
        self.assertLess(rows[0]['Age (s)'], 60)

    def test_stale_after_the_heartbeats(self):
        self.later(agent_cmd.STALE_AFTER_S + 5)
        rows = self.run_cmd(agent_cmd.ListAgent)
        self.assertEqual(['stale', 'stale'], [r['State'] for r in rows])
        self.assertGreater(rows[0]['Age (s)'], agent_cmd.STALE_AFTER_S)
        rows = self.run_cmd(agent_cmd.ListAgent, '--stale-after', '3600')
        self.assertEqual(['up', 'up'], [r['State'] for r in rows])

    def test_show_one_agent(self):
        data = self.run_cmd(agent_cmd.ShowAgent, 'cmp-1')
        self.assertEqual('cmp-1', data['host'])
        self.assertEqual('1.0.0', data['agent_version'])
        self.assertEqual('1.1', data['microversion'])
        self.assertEqual('up', data['state'])
        self.assertEqual(1, data['servers'])
        self.assertEqual(DOMAINS, data['domains'])
        data = self.run_cmd(agent_cmd.ShowAgent, 'cmp-2')
        self.assertEqual(('1.0', None), (data['microversion'],
                                         data['servers']))

    def test_table_output(self):
        table = self.run_cmd(agent_cmd.ListAgent, fmt=())
        self.assertRegex(table, r'\| cmp-2 +\| 0\.9\.0 +\| 1\.0 +\|')
        shown = self.run_cmd(agent_cmd.ShowAgent, 'cmp-1', fmt=())
        self.assertIn("ways_total='9'", shown)

    def test_unknown_host(self):
        exc = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                agent_cmd.ShowAgent, 'cmp-9')
        self.assertIn("no agent has reported host 'cmp-9' to resq-api",
                      str(exc))
        self.assertIn('"openstack resq agent list"', str(exc))

    def test_a_member_may_not_read_hosts(self):
        self.resq.service = self.api.client('member_a')
        exc = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                agent_cmd.ListAgent)
        self.assertIn('resq:hosts:read', str(exc))
        self.assertNotIn('\n', str(exc))

    def test_without_resq_api(self):
        self.resq.service = None
        exc = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                agent_cmd.ListAgent)
        self.assertIn('reads the agents\' reports from resq-api', str(exc))


class ViewTest(base.TestCase):

    def test_report_without_a_time(self):
        row = agent_cmd.view({'hostname': 'h', 'domains': []},
                             datetime.datetime.now(datetime.timezone.utc))
        self.assertEqual((None, 'stale', '1.0', None), (
            row['age_s'], row['state'], row['microversion'],
            row['agent_version']))
