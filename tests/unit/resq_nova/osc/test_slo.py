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
"""``openstack resq slo show|release|delete`` take a name or a UUID.

On a real resq-api (in-process, :class:`tests.fixtures.resq_api.ResQAPI`),
which answers 400 to a term path that is not a UUID: a name is resolved
by listing the project's terms, as ``osc_lib.utils.find_resource`` does.
"""

import io
import json

from osc_lib import exceptions

from resq_nova.osc import client as osc_client
from resq_nova.osc.v1 import slo as slo_cmd
from tests import base
from tests.fixtures import resq_api
from tests.unit.resq_profiler import test_profile


class FakeClientManager:
    def __init__(self, resq):
        self.resq = resq


class FakeApp:
    def __init__(self, resq):
        self.client_manager = FakeClientManager(resq)
        self.stdout = io.StringIO()
        self.stderr = io.StringIO()


class TermByNameTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.api = self.useFixture(resq_api.ResQAPI())
        self.service = self.api.client('member_a')
        doc = test_profile.make_doc()
        self.service.put_profile(doc)
        self.profile_id = doc['id']

    def term(self, name, client=None):
        return (client or self.service).create_term({
            'name': name, 'profile_id': self.profile_id, 'slo': 'reserved',
            'throughput_mpps': 2.0, 'latency_p95_us': 80.0,
            'packet_bytes': 64, 'flavors': ['resq.%s.2w' % name],
            'servers': []})

    def run_cmd(self, cls, *argv, fmt=('-f', 'json')):
        app = FakeApp(osc_client.ResQClient(None, None, self.service))
        cmd = cls(app, None)
        parsed = cmd.get_parser('openstack resq slo').parse_args(
            list(argv) + list(fmt))
        self.assertEqual(0, cmd.run(parsed))
        return json.loads(app.stdout.getvalue()) if fmt else None

    def fails(self, cls, *argv):
        exc = self.assertRaises(exceptions.CommandError, self.run_cmd, cls,
                                *argv)
        self.assertNotIn('\n', str(exc))
        return str(exc)

    def test_show_by_name_or_uuid(self):
        fw = self.term('fw-a')
        self.term('lpm-b')
        self.assertEqual(fw['uuid'],
                         self.run_cmd(slo_cmd.ShowSLO, 'fw-a')['uuid'])
        self.assertEqual('fw-a',
                         self.run_cmd(slo_cmd.ShowSLO, fw['uuid'])['name'])

    def test_unknown_name_or_uuid(self):
        self.term('fw-a')
        for ref in ('fw-z', 'cccccccc-0000-4000-8000-00000000000c'):
            self.assertEqual(
                'no SLO term with the name or UUID %r in this project; '
                '"openstack resq slo list" lists them' % ref,
                self.fails(slo_cmd.ShowSLO, ref))

    def test_a_name_several_terms_have(self):
        uuids = sorted(self.term('fw-a')['uuid'] for _ in range(2))
        self.assertEqual('2 SLO terms are named \'fw-a\' (%s); give the UUID '
                         'of one' % ', '.join(uuids),
                         self.fails(slo_cmd.ShowSLO, 'fw-a'))
        # The UUID still finds each.
        self.assertEqual(uuids[1],
                         self.run_cmd(slo_cmd.ShowSLO, uuids[1])['uuid'])

    def test_another_projects_term_is_not_found_by_name(self):
        member_b = self.api.client('member_b')
        doc = test_profile.make_doc(id='p-b-lpm')
        member_b.put_profile(doc)
        member_b.create_term({
            'name': 'fw-b', 'profile_id': doc['id'], 'slo': 'reserved',
            'throughput_mpps': 2.0, 'latency_p95_us': 80.0,
            'packet_bytes': 64, 'flavors': [], 'servers': []})
        self.assertIn('no SLO term with the name or UUID \'fw-b\'',
                      self.fails(slo_cmd.ShowSLO, 'fw-b'))

    def test_release_and_delete_by_name(self):
        uuid = self.term('fw-a')['uuid']
        released = self.run_cmd(slo_cmd.ReleaseSLO, 'fw-a')
        self.assertEqual((uuid, 'released'),
                         (released['uuid'], released['status']))
        self.run_cmd(slo_cmd.DeleteSLO, 'fw-a', fmt=())
        self.assertEqual([], self.service.list_terms())
