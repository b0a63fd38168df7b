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
"""Neighbours: two ResQ guests in one cache domain, the case ResQ is for.

Both are partitioned in the same domain with masks that share no way
(with each other, the default group or any other group), each mask has
exactly the ways Placement allocated, and deleting one leaves the other's
group (mask and CPUs) as it was.
"""

from tempest.lib import decorators

from resq_common import cbm
from resq_tempest_plugin.tests import base


class NeighboursTest(base.ResQScenarioTest):
    """Two ResQ guests sharing one host's cache domain."""

    @decorators.attr(type='slow')
    @decorators.idempotent_id('0c3f5f0e-0b64-4a55-9d7e-3c8e6c3ad2b1')
    def test_two_guests_in_one_domain_have_disjoint_masks(self):
        name = self.host_with_room(pcpus=2)
        host = self.hosts[name]
        flavor, ways = self.resq_flavor()
        first = self.boot(flavor['id'], host=name)
        second = self.boot(flavor['id'], host=name)
        a = self.wait_for_partition(first['id'])
        b = self.wait_for_partition(second['id'])
        self.assertEqual((name, name), (a['host'], b['host']))
        self.assertEqual(a['domain'], b['domain'],
                         'the guests landed in different cache domains; '
                         'this host has more than one')
        self.assertEqual((ways, ways), (a['ways'], b['ways']))
        self.assertNotEqual(a['group'], b['group'])
        self.assertEqual(0, a['mask'] & b['mask'],
                         'masks %x and %x overlap' % (a['mask'], b['mask']))
        self.assertEqual(ways, cbm.bits(a['mask']))
        self.assertEqual(ways, cbm.bits(b['mask']))
        self.assertFalse(a['cpus'] & b['cpus'],
                         'both guests are pinned to CPUs %s'
                         % sorted(a['cpus'] & b['cpus']))
        kept = b['group']
        before = {f: v for f, v in self.settled_snapshot(name).items()
                  if f.startswith(kept + '/')}
        self.assertIn(kept + '/schemata', before)
        self.delete_server(first['id'])
        self.wait_for_release(first['id'])
        self.wait_for_no_allocation(first['id'])
        after = {f: v for f, v in self.settled_snapshot(name).items()
                 if f.startswith(kept + '/')}
        self.assertEqual(before, after, 'deleting its neighbour changed '
                         'group %s' % kept)
        problems, facts = self.partition_state(second['id'])
        self.assertEqual([], problems)
        self.assertEqual(b['mask'], facts['mask'])
        self.assertIsNotNone(host.group_of(second['id']))
