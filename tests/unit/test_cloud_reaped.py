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
"""The soak's count of domains nova-compute reaped (its log lines)."""

import time

from tests import base
from tests.cloud import faults

# As nova-compute 34 logged it in the all-in-one cloud (a local delete
# while nova-compute was down, then its periodic task at start).
REAPED = (
    "2026-11-29 17:40:33.425 2858 INFO nova.compute.manager [None "
    "req-35476023-2684-44bb-9c5f-91b60235085d - - - - - -] [instance: "
    "3c833821-4846-4bb9-b040-4d59c9901175] Destroying instance with name "
    "label 'instance-0000000a' which is marked as DELETED but still "
    "present on host.\n")
OTHER = (
    "2026-11-29 17:40:33.465 2858 INFO nova.compute.manager [None "
    "req-35476023-2684-44bb-9c5f-91b60235085d - - - - - -] [instance: "
    "3c833821-4846-4bb9-b040-4d59c9901175] Terminating instance\n")


class TestReapedDomains(base.TestCase):
    def test_reaped_line(self):
        [rec] = faults.reaped_domains([OTHER, REAPED, OTHER])
        self.assertEqual('3c833821-4846-4bb9-b040-4d59c9901175',
                         rec['uuid'])
        self.assertEqual('instance-0000000a', rec['name'])
        at = time.mktime(time.strptime('2026-11-29 17:40:33',
                                       '%Y-%m-%d %H:%M:%S')) + 0.425
        self.assertAlmostEqual(at, rec['at'], places=3)

    def test_since(self):
        at = faults.reaped_domains([REAPED])[0]['at']
        self.assertEqual([], faults.reaped_domains([REAPED], since=at + 1))
        self.assertEqual(1, len(faults.reaped_domains([REAPED],
                                                      since=at - 1)))

    def test_log_only_and_shutdown_lines_are_not_reaps(self):
        # action = log / shutdown leave the domain: not counted as reaped.
        lines = [REAPED.replace('Destroying instance', 'Detected instance'),
                 REAPED.replace('Destroying instance',
                                'Powering off instance')]
        self.assertEqual([], faults.reaped_domains(lines))
