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
"""``openstack resq profile show``: the curves in their own order."""

import io
import json

from resq_common import profile as profile_mod
from resq_nova.osc.v1 import profile as profile_cmd
from resq_profiler import store as store_mod
from tests import base
from tests.unit.resq_profiler import test_profile

WAYS = list(range(1, 21))
LOADS = [round(0.05 * i, 2) for i in range(1, 21)]


class FakeApp:
    def __init__(self):
        self.client_manager = None
        self.stdout = io.StringIO()
        self.stderr = io.StringIO()


class ShowProfileOrderTest(base.TestCase):

    def setUp(self):
        super().setUp()
        doc = test_profile.make_doc(**{
            'throughput.points': [[w, round(6 - 5.0 / w, 4)] for w in WAYS],
            'latency.points': [[x, round(10 + 10 * x * x, 4)]
                               for x in LOADS]})
        self.store = self.tmp
        store_mod.ProfileStore(self.store).put(
            profile_mod.Profile.from_dict(doc))
        self.prof_id = doc['id']

    def show(self, *fmt):
        app = FakeApp()
        cmd = profile_cmd.ShowProfile(app, None)
        parsed = cmd.get_parser('openstack resq profile show').parse_args(
            [self.prof_id, '--profile-dir', self.store] + list(fmt))
        self.assertEqual(0, cmd.run(parsed))
        return app.stdout.getvalue()

    def test_points_by_ways_and_load_not_as_strings(self):
        # The table (the default view): each field's human-readable text.
        out = self.show('-f', 'table', '--max-width', '0')
        rows = {}
        for line in out.splitlines():
            cells = [c.strip() for c in line.strip('|').split('|')]
            if len(cells) == 2:
                rows[cells[0]] = cells[1]
        self.assertEqual(WAYS, [int(p.split(':')[0])
                                for p in rows['throughput'].split(', ')])
        self.assertEqual([round(x * 100) for x in LOADS],
                         [int(p.split('%')[0])
                          for p in rows['latency'].split(', ')])
        pivots = [float(p.split()[1].split('-')[0])
                  for p in rows['concave_fit'].split(', ')]
        self.assertEqual(sorted(pivots), pivots)

    def test_json_lists_them_in_the_same_order(self):
        doc = json.loads(self.show('-f', 'json'))
        self.assertEqual(WAYS, [int(p.split(':')[0])
                                for p in doc['throughput']])
        self.assertEqual([round(x * 100) for x in LOADS],
                         [int(p.split('%')[0]) for p in doc['latency']])
