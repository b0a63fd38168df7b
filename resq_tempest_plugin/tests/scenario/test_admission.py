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
"""A term admitted with ``openstack resq slo admit`` boots partitioned.

Both of the project's paths: the command creates the flavors and boots
the servers itself, or writes a Heat template that Heat launches. A term
that does not fit is refused before anything is made.
"""

import os

import fixtures
from tempest import config
from tempest.lib import decorators
import yaml

from resq_common import extra_specs
from resq_tempest_plugin.common import cli
from resq_tempest_plugin.tests import base

CONF = config.CONF


class AdmissionTest(base.ResQScenarioTest):
    """Admission by the CLI, and by the Heat template it writes."""

    @decorators.attr(type='slow')
    @decorators.idempotent_id('963a2892-7683-454c-b613-24f9929af3e6')
    def test_admitted_term_boots_partitioned_guest(self):
        term, doc = self.admit_ok()
        self.assertEqual(term, doc['term'])
        [inst] = doc['instances']
        [flavor] = doc['flavors']
        self.assertEqual('created', flavor['state'])
        server = self.show_server(inst['id'])
        self.assertEqual('ACTIVE', server['status'])
        self.assertEqual(flavor['name'], server['flavor']['original_name'])
        facts = self.wait_for_partition(server['id'])
        self.assertEqual((inst['host'], inst['ways']),
                         (facts['host'], facts['ways']))
        self.assertEqual(flavor['ways'], facts['ways'])
        self.wait_for_release(server['id'], [
            h for h in self.hosts if h != facts['host']])
        # The term is recorded in resq-api with its server.
        rec = self.resq_client.show_term(doc['slo_term'])
        self.assertEqual(term, rec['name'])
        self.assertEqual([server['id']], rec['servers'])

    @decorators.attr(type='slow')
    @decorators.idempotent_id('be0f2221-f723-494d-94dc-60ee87810d0d')
    def test_heat_template_boots_partitioned_guest(self):
        if not self.heat_available():
            raise self.skipException('Heat is not available (neither '
                                     '[service_available] heat nor the '
                                     'catalog has it): the admitted term\'s '
                                     'template needs it')
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'term.yaml')
        term, doc = self.admit_ok(heat_template=path)
        self.assertEqual(path, doc['heat_template'])
        # Nothing is booted by the command on this path.
        self.assertEqual([], self.servers_client.list_servers(
            name='^%s-' % term)['servers'])
        flavors = self.template_flavors(path)
        with open(path) as f:
            template = yaml.safe_load(f)
        stack, outputs = self.create_stack(template, {
            'image': CONF.compute.image_ref, 'network': 'none'})
        self.assertEqual(len(doc['instances']), len(outputs['servers']))
        ways = {name: base.specs_ways(props['extra_specs'])
                for name, props in flavors.items()}
        for server_id, inst in zip(outputs['servers'], doc['instances']):
            server = self.show_server(server_id)
            self.assertEqual('ACTIVE', server['status'])
            self.assertEqual(inst['name'], server['name'])
            facts = self.wait_for_partition(server_id)
            self.assertEqual(ways[server['flavor']['original_name']],
                             facts['ways'])
            self.assertEqual(inst['ways'], facts['ways'])
        self.delete_stack('%s/%s' % (stack['stack_name'], stack['id']))
        for server_id in outputs['servers']:
            self.wait_for_release(server_id)
            self.wait_for_no_allocation(server_id)

    @decorators.attr(type='slow')
    @decorators.idempotent_id('3b1d6f0a-7c2e-4e59-9a41-6d5c0f8e2b17')
    def test_shipped_slo_term_template_boots_partitioned_guests(self):
        """``etc/heat/resq-slo-term.yaml`` as shipped, sized for the cloud.

        Its parameters carry the sizes a small host can give (the
        template's defaults are 2 GiB of huge pages and a 10 GiB disk);
        its flavors, servers and cache-domain traits are the file's own.
        """
        if not self.heat_available():
            raise self.skipException('Heat is not available')
        if not CONF.resq.heat_templates_dir:
            raise self.skipException('[resq] heat_templates_dir is not set')
        path = os.path.join(CONF.resq.heat_templates_dir,
                            'resq-slo-term.yaml')
        with open(path) as f:
            template = yaml.safe_load(f)
        wanted = sum(1 for r in template['resources'].values()
                     if r['type'] == 'OS::Nova::Server')
        free = sum(self.free_pcpus(h) for h in self.hosts)
        self.assertGreaterEqual(free, wanted, 'the template boots %d '
                                'pinned servers; the hosts have %d free '
                                'dedicated CPUs' % (wanted, free))
        stack, outputs = self.create_stack(template, {
            'image': CONF.compute.image_ref, 'network': 'none',
            'ram_mb': CONF.resq.flavor_ram_mb, 'disk_gb': 1,
            'mem_page_size': 'small'})
        self.assertEqual(wanted, len(outputs['servers']))
        seen = []
        for server_id in outputs['servers']:
            server = self.show_server(server_id)
            self.assertEqual('ACTIVE', server['status'])
            self.assertTrue(server['flavor']['original_name'].startswith(
                'resq.lpm-tenant-a.'), server['flavor'])
            facts = self.wait_for_partition(server_id)
            self.assertEqual(self.flavor_ways(server), facts['ways'])
            seen.append(facts['ways'])
        self.assertEqual(sorted(int(r['properties']['metadata']['resq_ways'])
                                for r in template['resources'].values()
                                if r['type'] == 'OS::Nova::Server'),
                         sorted(seen))
        self.delete_stack('%s/%s' % (stack['stack_name'], stack['id']))
        for server_id in outputs['servers']:
            self.wait_for_release(server_id)
            self.wait_for_no_allocation(server_id)

    def _dedicated_cores(self):
        """The cores all cache domains offer reserved instances."""
        total = 0
        for rp in self.providers_client.list_resource_providers()[
                'resource_providers']:
            inv = self.providers_client.list_resource_provider_inventories(
                rp['uuid'])['inventories'].get(extra_specs.RC_RESQ_CORE)
            if inv:
                total += inv['total'] - inv['reserved']
        return total

    @decorators.idempotent_id('2895ea43-44ee-4577-a213-5a80b2a9b6d0')
    def test_term_that_does_not_fit_is_refused_before_booting(self):
        # Each instance serves at most the profile's peak, so this needs
        # one instance more than the cloud has dedicated cores.
        cores = self._dedicated_cores()
        self.assertGreater(cores, 0, 'no cache domain offers '
                           'CUSTOM_RESQ_CORE in Placement')
        term, proc = self.admit(fraction=cores + 1, max_instances=None)
        self.assertNotEqual(0, proc.returncode, cli.describe(proc))
        self.assertIn('REFUSED', proc.stderr, cli.describe(proc))
        self.assertEqual([], self.servers_client.list_servers(
            name='^%s-' % term)['servers'])
        self.assertEqual([], [
            f['name'] for f in self.flavors_client.list_flavors(
                is_public='None')['flavors']
            if f['name'].startswith('resq.%s.' % term)])
        self.assertEqual([], [
            t['uuid'] for t in self.resq_client.list_terms()['slo_terms']
            if t['name'] == term])

    @decorators.attr(type='slow')
    @decorators.idempotent_id('692ba2b9-d349-4448-b62a-2feb84229efe')
    def test_guest_without_resq_specs_is_untouched(self):
        name = self.host_with_room(pcpus=1, vcpus=1)
        host = self.hosts[name]
        others = {h: self.settled_snapshot(h) for h in self.hosts
                  if h != name}
        plain = self.boot(self.create_flavor()['id'], host=name)
        self.assertEqual({}, self.llc_allocations(plain['id']))
        # A ResQ guest booted after it on the same host: once its
        # partition is in place, the agent has seen the plain one too.
        flavor, _ = self.resq_flavor()
        resq = self.boot(flavor['id'], host=name)
        facts = self.wait_for_partition(resq['id'])
        self.assertIsNone(host.group_of(plain['id']))
        self.assertEqual([facts['group']], host.groups())
        cpus = host.floating_cpus(plain['id']) or host.pinned_cpus(
            plain['id'])
        self.assertTrue(cpus, 'the plain guest\'s libvirt XML names no CPU')
        self.assertLessEqual(cpus, host.cpus(),
                             'the plain guest\'s CPUs left the default group')
        for other, before in others.items():
            self.assertEqual(before, self.hosts[other].snapshot(),
                             'resctrl of %s changed' % other)
