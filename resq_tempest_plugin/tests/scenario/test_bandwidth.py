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
"""A flavor with memory bandwidth: Placement's amount on the host's MB line.

A host whose kernel has memory bandwidth allocation offers
``CUSTOM_MEM_BW_MIBPS`` on its cache domains' providers. A flavor asking
for more than a domain has left gets no host; one that fits boots there,
and its resctrl group's ``MB:`` line in that domain holds the allocation
in the kernel's unit; a delete gives the bandwidth back.
"""

from tempest.common import waiters
from tempest.lib import decorators
from tempest.lib import exceptions as lib_exc

from resq_common import cache_domain
from resq_common import extra_specs
from resq_common import mba
from resq_tempest_plugin.common import host as host_mod
from resq_tempest_plugin.tests import base

RC_MEM_BW = extra_specs.RC_MEM_BW


class MemoryBandwidthTest(base.ResQScenarioTest):
    """Bandwidth flavors: refused past a domain's room, enforced on MB."""

    def bandwidth_domain(self):
        """``(host, provider uuid, inventory, mode)`` offering bandwidth.

        Skips when no host of [resq] compute_hosts offers any: the scenario
        needs a host whose kernel has MBA and whose agent has
        ``[resq_agent] memory_bandwidth_mibps``.
        """
        for name in sorted(self.hosts):
            root = self.compute_node_provider(name)
            if root is None or self.free_pcpus(name) < 1:
                continue
            for dom in range(4):
                rp = cache_domain.provider_uuid(root, dom)
                try:
                    inv = self.providers_client.\
                        list_resource_provider_inventories(rp)[
                            'inventories'].get(RC_MEM_BW)
                except lib_exc.NotFound:
                    break
                if inv:
                    traits = self.providers_client.\
                        list_resource_provider_traits(rp)['traits']
                    modes = [t[len(cache_domain.TRAIT_MBA_PREFIX):].lower()
                             for t in traits
                             if t.startswith(cache_domain.TRAIT_MBA_PREFIX)]
                    return name, rp, inv, modes[0] if modes else None
        raise self.skipException(
            'no host of [resq] compute_hosts with a free dedicated CPU '
            'offers %s: it needs memory bandwidth allocation in its kernel '
            'and [resq_agent] memory_bandwidth_mibps' % RC_MEM_BW)

    def bandwidth_flavor(self, mibps):
        flavor, ways = self.resq_flavor()
        self.flavors_client.set_flavor_extra_spec(flavor['id'], **{
            'resq:mem_bw_mibps': str(mibps),
            'resources_LLC:%s' % RC_MEM_BW: str(mibps)})
        return flavor

    def used(self, rp):
        return self.providers_client.list_resource_provider_usages(rp)[
            'usages'].get(RC_MEM_BW, 0)

    @decorators.attr(type='slow')
    @decorators.idempotent_id('5d0b7c6e-8a43-4f0e-9f59-0b3e2d6c1a74')
    def test_bandwidth_flavor_gets_its_mb_line(self):
        name, rp, inv, mode = self.bandwidth_domain()
        before = self.used(rp)
        room = inv['total'] - inv['reserved'] - before
        # More than the domain has left: no host, though one has cores
        # and ways.
        too_much = self.boot(self.bandwidth_flavor(room + 1)['id'],
                             wait=False)
        waiters.wait_for_server_status(self.servers_client,
                                       too_much['id'], 'ERROR')
        fault = self.show_server(too_much['id']).get('fault') or {}
        self.assertIn('No valid host', fault.get('message', ''))
        # What fits lands there, and is enforced.
        mibps = min(3000, room)
        server = self.boot(self.bandwidth_flavor(mibps)['id'])
        facts = self.wait_for_partition(server['id'])
        self.assertEqual(name, facts['host'])
        allocs = self.placement_client.list_allocations(
            server['id'])['allocations']
        self.assertEqual(mibps, allocs[rp]['resources'][RC_MEM_BW])
        host = self.hosts[name]

        def mb_line():
            schemata = host.read(facts['group'], 'schemata')
            return host_mod.parse_schemata(schemata).get('MB', {}).get(
                facts['domain'])

        if mode == mba.MODE_MBPS:
            wanted = mibps
        else:
            info = mba.MbaInfo(mode, int(host.read('info', 'MB',
                                                   'min_bandwidth')),
                               int(host.read('info', 'MB',
                                             'bandwidth_gran')))
            wanted = mba.schemata_value(mibps, info, inv['total'])
        self.wait_for(lambda: ([] if mb_line() == wanted else [
            'group %s\'s MB line for domain %s is %s, not %s' % (
                facts['group'], facts['domain'], mb_line(), wanted)]),
            'the MB line of %s' % server['id'])
        self.delete_server(server['id'])
        self.wait_for(lambda: [] if self.used(rp) <= before else [
            '%s holds %d MiB/s, %d before the server' % (
                rp, self.used(rp), before)], 'the bandwidth back')
