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
"""The base of resq-nova's scenario tests.

Tests drive the cloud through its APIs and the project's own commands
(``openstack resq slo admit``, ``resq-optimizer``) on admin credentials
of a project of their own (flavors are admin-only and a term's flavors
are private to the admitting project), and look behind the curtain, as
whitebox-tempest-plugin does: at the guest's libvirt XML and at the
compute host's resctrl groups (:mod:`resq_tempest_plugin.common.host`).

What the agent does follows the cloud's events asynchronously, so every
look behind the curtain polls until what it expects holds, up to
``[compute] build_timeout``, and fails naming what still differs.
"""

import json
import os
import re

import fixtures
from oslo_config import cfg
from oslo_log import log as logging
from tempest.common import waiters
from tempest import config
from tempest.lib.common import api_microversion_fixture
from tempest.lib.common.utils import data_utils
from tempest.lib.common.utils import test_utils
from tempest.lib import exceptions as lib_exc
from tempest import test
import yaml

from resq_common import cache_domain
from resq_common import cbm
from resq_common import extra_specs
from resq_tempest_plugin.common import cli
from resq_tempest_plugin.common import host as host_mod
from resq_tempest_plugin.common import metrics
from resq_tempest_plugin.services import orchestration_client
from resq_tempest_plugin.services import resq_client

CONF = config.CONF
LOG = logging.getLogger(__name__)
RC_LLC_WAY = extra_specs.RC_LLC_WAY
# The throughput targets tried, as fractions of the profile's peak, when
# a test needs a ResQ flavor of another way count.
FRACTIONS = (0.75, 0.5, 0.9, 0.25, 0.6, 0.4, 0.1)


def specs_ways(specs):
    """The ways flavor extra specs ask Placement for (all groups)."""
    return sum(int(v) for k, v in specs.items()
               if k.startswith('resources') and k.endswith(':' + RC_LLC_WAY))


class PartitionChecks:
    """Where a guest's partition is, and whether it is as designed."""

    def show_server(self, server_id):
        return self.servers_client.show_server(server_id)['server']

    def compute_node_provider(self, node):
        """The Placement provider uuid of compute node ``node``."""
        found = self.providers_client.list_resource_providers(
            name=node)['resource_providers']
        if len(found) != 1:
            return None
        return found[0]['uuid']

    def free(self, name, resource_class='PCPU'):
        """Units of ``resource_class`` host ``name`` has left in Placement.

        Its compute nodes' providers are its hypervisors' ids (UUIDs
        since compute API 2.53).
        """
        free = 0
        # Unvalidated: tempest's schema refuses a node without statistics
        # (one whose compute service has not reported yet).
        resp, body = self.hypervisor_client.get('os-hypervisors/detail')
        for hyp in json.loads(body)['hypervisors']:
            if (hyp.get('service') or {}).get('host') != name:
                continue
            inv = self.providers_client.list_resource_provider_inventories(
                hyp['id'])['inventories'].get(resource_class)
            if inv:
                used = self.providers_client.list_resource_provider_usages(
                    hyp['id'])['usages'].get(resource_class, 0)
                free += int((inv['total'] - inv['reserved'])
                            * inv.get('allocation_ratio', 1.0)) - used
        return free

    def free_pcpus(self, name):
        """Dedicated CPUs compute host ``name`` has left in Placement."""
        return self.free(name, 'PCPU')

    def host_with_room(self, pcpus=1, vcpus=0):
        """A host of [resq] compute_hosts with room for the guests.

        ``pcpus`` free dedicated CPUs, and ``vcpus`` free shared ones (for
        unpinned guests).
        """
        for name in sorted(self.hosts):
            if (self.free(name, 'PCPU') >= pcpus
                    and (not vcpus or self.free(name, 'VCPU') >= vcpus)):
                return name
        self.fail('no compute host of %s has %d free dedicated CPU(s)%s'
                  % (', '.join(sorted(self.hosts)), pcpus,
                     ' and %d shared' % vcpus if vcpus else ''))

    def llc_allocations(self, server_id):
        """``{provider uuid: ways}`` of the server's CUSTOM_LLC_WAY."""
        allocs = self.placement_client.list_allocations(
            server_id)['allocations']
        return {rp: res['resources'][RC_LLC_WAY]
                for rp, res in allocs.items()
                if RC_LLC_WAY in res['resources']}

    @staticmethod
    def flavor_ways(server):
        """The ways the server's flavor asks Placement for."""
        return specs_ways(server['flavor'].get('extra_specs') or {})

    def _placement_facts(self, server):
        """``(problems, {'provider', 'domain', 'ways'})`` in Placement."""
        llc = self.llc_allocations(server['id'])
        if len(llc) != 1:
            return ['Placement holds %d %s allocations for it: %s' % (
                len(llc), RC_LLC_WAY, llc)], None
        [(rp, ways)] = llc.items()
        node = server['OS-EXT-SRV-ATTR:hypervisor_hostname']
        root = self.compute_node_provider(node)
        provider = self.providers_client.show_resource_provider(rp)
        problems = []
        if root is None or provider['parent_provider_uuid'] != root:
            problems.append('its ways are on provider %s (%s), whose parent '
                            '%s is not compute node %s\'s provider %s' % (
                                rp, provider['name'],
                                provider['parent_provider_uuid'], node, root))
        domain = cache_domain.domain_of(root, rp) if root else None
        if domain is None:
            problems.append('provider %s is not one of compute node %s\'s '
                            'cache domains' % (rp, node))
        wanted = self.flavor_ways(server)
        if wanted != ways:
            problems.append('its flavor asks for %d ways, Placement '
                            'allocated %d' % (wanted, ways))
        return problems, {'provider': rp, 'domain': domain, 'ways': ways}

    def _mask_problems(self, host, group, facts):
        """The group's mask in the guest's domain, against the design."""
        mask = host.l3_masks(group).get(facts['domain'])
        if mask is None:
            return ['group %s has no L3 mask for domain %s' % (
                group, facts['domain'])]
        facts['mask'] = mask
        problems = []
        if cbm.bits(mask) != facts['ways']:
            problems.append('group %s\'s mask %x has %d ways, Placement '
                            'allocated %d' % (group, mask,
                                              cbm.bits(mask),
                                              facts['ways']))
        if not cbm.is_contiguous(mask):
            problems.append('mask %x of %s is not contiguous' % (mask, group))
        default = host.l3_masks().get(facts['domain'], 0)
        if mask & default:
            problems.append('mask %x of %s shares ways with the default '
                            'group\'s %x' % (mask, group, default))
        for other in host.groups():
            theirs = host.l3_masks(other).get(facts['domain'], 0)
            if other != group and theirs & mask:
                problems.append('mask %x of %s overlaps %s\'s %x' % (
                    mask, group, other, theirs))
        return problems

    def _cpu_problems(self, host, group, mon, cpus):
        """The guest's pinned CPUs in its group, and out of the default."""
        problems = []
        held = host.cpus(group)
        if not cpus <= held:
            problems.append('group %s holds CPUs %s, not all of the pinned '
                            '%s' % (group, sorted(held), sorted(cpus)))
        if mon is None and held != cpus:
            problems.append('its own group %s holds CPUs %s, pinned are %s'
                            % (group, sorted(held), sorted(cpus)))
        if mon is not None and host.cpus(group, 'mon_groups', mon) != cpus:
            problems.append('monitoring group %s/%s holds CPUs %s, pinned '
                            'are %s' % (group, mon, sorted(host.cpus(
                                group, 'mon_groups', mon)), sorted(cpus)))
        if cpus & host.cpus():
            problems.append('pinned CPUs %s are still in the default group'
                            % sorted(cpus & host.cpus()))
        return problems

    def partition_state(self, server_id):
        """``(problems, facts)`` of the server's partition, as it is now.

        No problems: its host's resctrl has a ``resq-`` group for it whose
        mask in the cache domain Placement allocated from has exactly the
        allocated ways (contiguous, shared with no other group) and holds
        its pinned CPUs (libvirt's ``<vcpupin>``), which left the default
        group.
        """
        server = self.show_server(server_id)
        host = self.hosts.get(server['OS-EXT-SRV-ATTR:host'])
        if host is None:
            return ['it is on %s, not in [resq] compute_hosts' % server[
                'OS-EXT-SRV-ATTR:host']], None
        problems, facts = self._placement_facts(server)
        if facts is None or facts['domain'] is None:
            return problems, facts
        facts['host'] = host.name
        facts['cpus'] = host.pinned_cpus(server_id)
        if not facts['cpus']:
            return problems + ['its libvirt XML on %s pins no CPU' %
                               host.name], facts
        found = host.group_of(server_id)
        if found is None:
            return problems + ['no resq- group of %s names it' % host.name
                               ], facts
        facts['group'], facts['mon'] = found
        problems += self._mask_problems(host, facts['group'], facts)
        problems += self._cpu_problems(host, facts['group'], facts['mon'],
                                       facts['cpus'])
        return problems, facts

    def wait_for(self, check, what):
        """Poll ``check() -> [problems]`` until it returns none.

        :raises AssertionError: naming the problems left at the timeout.
        """
        last = {}

        def settled():
            last['problems'] = check()
            return not last['problems']

        if not test_utils.call_until_true(settled,
                                          CONF.compute.build_timeout,
                                          CONF.compute.build_interval):
            self.fail('%s: not so after %d s: %s' % (
                what, CONF.compute.build_timeout,
                '; '.join(last['problems'])))

    def wait_for_partition(self, server_id):
        """Wait until the partition is in place; its facts."""
        facts = {}

        def check():
            problems, found = self.partition_state(server_id)
            facts.update(found or {})
            return problems

        self.wait_for(check, 'server %s is partitioned' % server_id)
        return facts

    def wait_for_release(self, server_id, hosts=None):
        """Wait until no ``resq-`` group of ``hosts`` (default all) holds it.

        :param hosts: host names.
        """
        hosts = [self.hosts[h] for h in hosts] if hosts else list(
            self.hosts.values())

        def check():
            return ['%s still has %s' % (h.name, '/'.join(
                g for g in h.group_of(server_id) if g))
                for h in hosts if h.group_of(server_id)]

        self.wait_for(check, 'server %s is released on %s' % (
            server_id, ', '.join(h.name for h in hosts)))

    def settled_snapshot(self, name):
        """Host ``name``'s resctrl files, once unchanged for an interval."""
        host = self.hosts[name]
        last = {}

        def check():
            now = host.snapshot()
            settled = last.get('snapshot') == now
            last['snapshot'] = now
            return [] if settled else ['resctrl of %s is changing' % name]

        self.wait_for(check, 'resctrl of %s settles' % name)
        return last['snapshot']

    def wait_for_no_allocation(self, server_id):
        def check():
            allocs = self.placement_client.list_allocations(
                server_id)['allocations']
            return ['Placement still holds %s' % allocs] if allocs else []

        self.wait_for(check, 'server %s holds nothing in Placement'
                      % server_id)

    def migration_uuids(self, server_id):
        """The uuids of the server's migrations (Placement consumers)."""
        return [m['uuid'] for m in self.migrations_client.list_migrations(
            instance_uuid=server_id)['migrations']]

    def wait_for_nothing_held(self, server_id, consumers=()):
        """Wait until nothing anywhere is the server's.

        No group of any host names it, and neither it nor any of
        ``consumers`` (its migrations) holds anything in Placement.
        """
        self.wait_for_release(server_id)
        for consumer in (server_id,) + tuple(consumers):
            self.wait_for_no_allocation(consumer)


class ResQScenarioTest(PartitionChecks, test.BaseTestCase):
    """Admin clients, the compute hosts, and helpers to admit terms."""

    credentials = ['admin']
    compute_microversion = '2.74'
    placement_microversion = '1.14'
    # Compute hosts a test class needs.
    required_hosts = 1

    @classmethod
    def configured_hosts(cls):
        return {name: host_mod.ComputeHost(
            name, state, CONF.resq.agent_metrics.get(name))
            for name, state in sorted(CONF.resq.compute_hosts.items())}

    @classmethod
    def skip_checks(cls):
        super().skip_checks()
        for service in ('nova', 'resq'):
            if not getattr(CONF.service_available, service):
                raise cls.skipException(
                    '[service_available] %s is False: the resq-nova '
                    'scenarios need Nova and resq-api' % service)
        if not CONF.compute.image_ref:
            raise cls.skipException('[compute] image_ref is not set')
        hosts = cls.configured_hosts()
        if len(hosts) < cls.required_hosts:
            raise cls.skipException(
                '[resq] compute_hosts names %d compute host(s) (%s); %s '
                'needs %d' % (len(hosts), ', '.join(hosts) or 'none',
                              cls.__name__, cls.required_hosts))
        for host in hosts.values():
            problem = host.missing()
            if problem:
                raise cls.skipException(problem)

    @classmethod
    def setup_credentials(cls):
        # Guests boot without networks: none for the dynamic project.
        cls.set_network_resources()
        super().setup_credentials()

    @classmethod
    def setup_clients(cls):
        super().setup_clients()
        admin = cls.os_admin
        cls.servers_client = admin.servers_client
        cls.flavors_client = admin.flavors_client
        cls.services_client = admin.services_client
        cls.hypervisor_client = admin.hypervisor_client
        cls.placement_client = admin.placement_client
        cls.migrations_client = admin.migrations_client
        cls.providers_client = admin.resource_providers_client
        params = config.service_client_config()
        params.update(build_interval=CONF.compute.build_interval,
                      build_timeout=CONF.compute.build_timeout)
        cls.resq_client = resq_client.ResQClient(
            admin.auth_provider, CONF.resq.catalog_type,
            CONF.identity.region, endpoint_type=CONF.resq.endpoint_type,
            **params)
        cls.stacks_client = orchestration_client.OrchestrationClient(
            admin.auth_provider, CONF.resq.orchestration_catalog_type,
            CONF.identity.region, **params)

    @classmethod
    def resource_setup(cls):
        super().resource_setup()
        cls.hosts = cls.configured_hosts()
        services = {s['host']: s for s in cls.services_client.list_services(
            binary='nova-compute')['services']}
        for name in cls.hosts:
            if services.get(name, {}).get('state') != 'up':
                raise cls.skipException(
                    'nova-compute of [resq] compute_hosts host %s is %s'
                    % (name, services.get(name, {}).get('state', 'absent')))
        cls.profile = cls.resq_client.show_profile(
            CONF.resq.example_profile)['profile']

    def setUp(self):
        super().setUp()
        self.useFixture(api_microversion_fixture.APIMicroversionFixture(
            compute_microversion=self.compute_microversion,
            placement_microversion=self.placement_microversion))

    # -- the profile ----------------------------------------------------------
    def peak_mpps(self):
        return max(t for _, t in self.profile['throughput']['points'])

    def latency_target_us(self):
        """A p95 target every load the profile measured meets."""
        return max(y for _, y in self.profile['latency']['points'])

    # -- servers and flavors --------------------------------------------------
    def delete_server(self, server_id):
        """Delete a server (gone already is fine) and wait until it is."""
        try:
            self.servers_client.delete_server(server_id)
        except lib_exc.NotFound:
            return
        # A server left in ERROR (a failed migration) is deleted too.
        waiters.wait_for_server_termination(self.servers_client, server_id,
                                            ignore_error=True)

    def boot(self, flavor_id, host=None, wait=True):
        """A server without network; deleted at cleanup."""
        kwargs = {'host': host} if host else {}
        server = self.servers_client.create_server(
            name=data_utils.rand_name(name='resq-guest',
                                      prefix=CONF.resource_name_prefix),
            imageRef=CONF.compute.image_ref, flavorRef=flavor_id,
            networks='none', **kwargs)['server']
        self.addCleanup(self.delete_server, server['id'])
        if wait:
            waiters.wait_for_server_status(self.servers_client,
                                           server['id'], 'ACTIVE')
        return self.show_server(server['id'])

    def create_flavor(self, name=None, vcpus=1, ram=None, disk=1,
                      extra_specs=None):
        """A private flavor of this project; deleted at cleanup."""
        flavor = self.flavors_client.create_flavor(
            name=name or data_utils.rand_name(
                name='resq-flavor', prefix=CONF.resource_name_prefix),
            vcpus=vcpus, ram=ram or CONF.resq.flavor_ram_mb, disk=disk,
            is_public=False)['flavor']
        self.addCleanup(test_utils.call_and_ignore_notfound_exc,
                        self.flavors_client.delete_flavor, flavor['id'])
        self.flavors_client.add_flavor_access(
            flavor['id'], self.os_admin.credentials.project_id)
        if extra_specs:
            self.flavors_client.set_flavor_extra_spec(flavor['id'],
                                                      **extra_specs)
        return flavor

    # -- admission ------------------------------------------------------------
    def term_name(self):
        return data_utils.rand_name(name='resq-term',
                                    prefix=CONF.resource_name_prefix)

    def remove_term(self, term):
        """Everything admission may have made for ``term``."""
        servers = self.servers_client.list_servers(
            name='^%s-[0-9]+$' % re.escape(term))['servers']
        for server in servers:
            self.delete_server(server['id'])
        for flavor in self.flavors_client.list_flavors(
                is_public='None')['flavors']:
            if flavor['name'].startswith('resq.%s.' % term):
                test_utils.call_and_ignore_notfound_exc(
                    self.flavors_client.delete_flavor, flavor['id'])
        for rec in self.resq_client.list_terms()['slo_terms']:
            if rec['name'] == term:
                test_utils.call_and_ignore_notfound_exc(
                    self.resq_client.delete_term, rec['uuid'])

    def admit(self, fraction=FRACTIONS[0], heat_template=None, dry_run=False,
              max_instances=1):
        """``openstack resq slo admit`` on this test's credentials.

        A term of the example profile at ``fraction`` of its peak
        throughput; booted (no network), or written as a Heat template,
        or only planned. What it makes is removed at cleanup, whatever
        the command's outcome.

        :returns: ``(term name, the CompletedProcess)``.
        """
        term = self.term_name()
        self.addCleanup(self.remove_term, term)
        command = cli.find_command('openstack')
        self.assertIsNotNone(command, 'the openstack command (python-'
                             'openstackclient) is not installed')
        argv = [command, 'resq', 'slo', 'admit', '--term', term,
                '--profile', CONF.resq.example_profile,
                '--throughput-mpps', '%.4f' % (self.peak_mpps() * fraction),
                '--latency-p95-us', '%.3f' % self.latency_target_us(),
                '--vcpus', '1', '--ram-mb', str(CONF.resq.flavor_ram_mb),
                '--disk-gb', '1', '--mem-page-size', 'small',
                '--image', CONF.compute.image_ref,
                '--boot-timeout', str(CONF.compute.build_timeout),
                '-f', 'json']
        if max_instances:
            argv += ['--max-instances', str(max_instances)]
        if heat_template:
            argv += ['--heat-template', heat_template]
        elif dry_run:
            argv.append('--dry-run')
        else:
            argv += ['--network', 'none']
        return term, cli.run(argv, env=cli.credentials_env(
            self.os_admin.credentials))

    def admit_ok(self, **kwargs):
        """:meth:`admit`, which must succeed; ``(term, its document)``."""
        term, proc = self.admit(**kwargs)
        self.assertEqual(0, proc.returncode, cli.describe(proc))
        return term, json.loads(proc.stdout)

    def admitted_server(self, **kwargs):
        """One server of a term admitted and booted by the CLI.

        :returns: ``(server, partition facts)``.
        """
        term, doc = self.admit_ok(**kwargs)
        self.assertEqual(1, len(doc['instances']), doc)
        inst = doc['instances'][0]
        server = self.show_server(inst['id'])
        self.assertEqual('ACTIVE', server['status'])
        self.assertEqual(inst['host'], server['OS-EXT-SRV-ATTR:host'])
        facts = self.wait_for_partition(server['id'])
        self.assertEqual(inst['ways'], facts['ways'])
        return server, facts

    def template_flavors(self, path):
        """``{flavor name: properties}`` of an admission's Heat template."""
        with open(path) as f:
            template = yaml.safe_load(f)
        return {r['properties']['name']: r['properties']
                for r in template['resources'].values()
                if r['type'] == 'OS::Nova::Flavor'}

    def resq_flavor(self, exclude_ways=()):
        """A ResQ flavor of one instance, made by admission itself.

        Terms are written as Heat templates (nothing boots) at the
        throughput fractions of :data:`FRACTIONS` until one gives one
        instance of a way count not in ``exclude_ways``; its flavor, as
        the template defines it, is created in this project.

        :returns: ``(flavor, ways)``.
        """
        tried = []
        for fraction in FRACTIONS:
            path = os.path.join(self.useFixture(
                fixtures.TempDir()).path, 'term.yaml')
            term, proc = self.admit(fraction=fraction, heat_template=path)
            if proc.returncode:
                tried.append('%.2f: %s' % (fraction, proc.stderr.strip()))
                continue
            [(name, props)] = self.template_flavors(path).items()
            ways = specs_ways(props['extra_specs'])
            if ways in exclude_ways:
                tried.append('%.2f: %d ways' % (fraction, ways))
                continue
            flavor = self.create_flavor(
                name=name, vcpus=props['vcpus'], ram=props['ram'],
                disk=props['disk'], extra_specs=props['extra_specs'])
            return flavor, ways
        self.fail('no admission gave one instance of other than %s ways: %s'
                  % (sorted(exclude_ways), '; '.join(tried)))

    # -- Heat -----------------------------------------------------------------
    def heat_available(self):
        """``[service_available] heat``, else whether the catalog has it.

        The option is heat-tempest-plugin's; without that plugin it is not
        registered.
        """
        try:
            return CONF.service_available.heat
        except cfg.NoSuchOptError:
            catalog = self.os_admin.auth_provider.get_auth()[1].get(
                'catalog', [])
            return any(s['type'] == CONF.resq.orchestration_catalog_type
                       for s in catalog)

    def create_stack(self, template, parameters):
        """Launch a template; wait for CREATE_COMPLETE; deleted at cleanup.

        :returns: ``(stack, {output key: value})``.
        """
        name = data_utils.rand_name(name='resq-stack',
                                    prefix=CONF.resource_name_prefix)
        stack_id = self.stacks_client.create_stack(
            name, template, parameters)['stack']['id']
        ident = '%s/%s' % (name, stack_id)
        self.addCleanup(self.delete_stack, ident)
        stack = self.stacks_client.wait_for_stack_status(ident,
                                                         'CREATE_COMPLETE')
        return stack, {o['output_key']: o['output_value']
                       for o in stack.get('outputs') or ()}

    def delete_stack(self, ident):
        try:
            self.stacks_client.delete_stack(ident)
        except lib_exc.NotFound:
            return
        self.stacks_client.wait_for_resource_deletion(ident)

    # -- the agent ------------------------------------------------------------
    def agent_samples(self, host):
        """The samples of ``host``'s agent /metrics (None: unreachable)."""
        url = self.hosts[host].metrics_url
        if not url:
            raise self.skipException('[resq] agent_metrics has no URL for '
                                     'compute host %s' % host)
        return metrics.scrape(url)
