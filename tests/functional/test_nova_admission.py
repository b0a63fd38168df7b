"""resq-admit against real Nova services.

The admission command runs with the same clients it uses in production
(keystoneauth adapters, plain JSON): the compute client points at the
harness's in-process nova-api with the identity headers its no-auth
middleware reads, the Placement client at the in-process Placement. Hosts
run Nova's libvirt driver over fakelibvirt, with huge pages, and their
cache domains are reported by resq-nova's Placement reporter.
"""

import io
import json
import os

import fixtures
from nova.tests.functional.api import client as api_client
from oslo_config import cfg
import yaml

from resq_common.clients import compute as compute_mod
from resq_common.clients import resq as resq_client
from resq_common import profile as profile_mod
from resq_nova.cmd import admit
from resq_profiler import store as store_mod
from tests.fixtures import resq_api
from tests.functional import test_nova_scheduler
from tests.unit.resq_profiler import test_profile

PROFILE_ID = 'lpm-64B-100000flows-abcdef12'
IMAGE = '155d900f-4e14-4e4c-a73d-069cbf4541e6'
WAY_BYTES = 2359296     # the test profile's platform: 20 ways of 2304 KiB


class AdmissionTestBase(test_nova_scheduler.ResQNovaTestBase):

    def setUp(self):
        super().setUp()
        self.profiles = self.useFixture(fixtures.TempDir()).path
        # The scheduler filter and the command read the same store.
        self.flags(profile_dir=self.profiles, group='resq')
        store_mod.ProfileStore(self.profiles).put(
            profile_mod.Profile.from_dict(test_profile.make_doc()))
        self.compute = self.compute_client()

    def start_host(self, hostname, ways=20, way_bytes=WAY_BYTES,
                   num_closids=4):
        """One cell: 6 dedicated cores, 2 MiB pages, one cache domain.

        The domain has ``ways`` ways, 2 of them DDIO's, and
        ``num_closids - 1`` classes of service for instances (3 by
        default).
        """
        return self.start_resq_compute(hostname, ways=ways,
                                       way_size_bytes=way_bytes,
                                       huge_pages=True,
                                       num_closids=num_closids)[0]

    def run_admit(self, argv):
        """Run resq-admit; returns (exit status, stdout JSON, stderr)."""
        conf = cfg.ConfigOpts()
        admit.register_opts(conf)
        conf.register_cli_opts(admit.cli_opts)
        conf(['--ram-mb', '512', '--image', IMAGE, '--network', 'none',
              '--profile-dir', self.profiles, '--format', 'json',
              '--boot-timeout', '60'] + list(argv),
             project='resq', default_config_files=[])
        out, err = io.StringIO(), io.StringIO()
        rc = admit.run(conf, self.client, self.compute, out=out, err=err)
        text = out.getvalue()
        return rc, json.loads(text) if text else None, err.getvalue()

    def admit(self, *args, term='fw-a', mpps=10.0):
        return self.run_admit(['--term', term, '--profile', PROFILE_ID,
                               '--throughput-mpps', str(mpps),
                               '--latency-p95-us', '25'] + list(args))

    def other_project(self, project='other', roles=('reader', 'member')):
        """Nova's API as a user of another project (not an admin)."""
        other = api_client.TestOpenStackClient(
            project, self.api.base_url, project_id=project, roles=list(roles))
        other.microversion = 'latest'
        return other

    def flavors(self, prefix='resq.fw-a.'):
        # The admin's project has access to the private flavors it made;
        # is_public=None lists every flavor of every project as well.
        return {f['name']: f for f in self.api.api_get(
                '/flavors/detail?is_public=None').body['flavors']
                if f['name'].startswith(prefix)}

    def servers(self, prefix='fw-a-'):
        return {s['name']: s for s in self.api.get_servers()
                if s['name'].startswith(prefix)}


class ServiceAdmissionTest(AdmissionTestBase):
    """Profiles from resq-api and the admitted term recorded there."""

    def setUp(self):
        super().setUp()
        self.resq = self.useFixture(resq_api.ResQAPI())
        self.member = self.resq.client('member_a')
        self.member.put_profile(test_profile.make_doc())
        self.conf_file = os.path.join(self.profiles, 'admit.conf')
        self.api_conf('member_a')

    def api_conf(self, persona):
        with open(self.conf_file, 'w') as f:
            f.write('[resq_api]\nauth_type = admin_token\nendpoint = %s\n'
                    'token = %s\n'
                    % (self.resq.endpoint, self.resq.tokens[persona]))

    def run_admit(self, argv):
        conf = cfg.ConfigOpts()
        admit.register_opts(conf)
        conf.register_cli_opts(admit.cli_opts)
        conf(['--ram-mb', '512', '--image', IMAGE, '--network', 'none',
              '--format', 'json', '--boot-timeout', '60'] + list(argv),
             project='resq', default_config_files=[self.conf_file])
        out, err = io.StringIO(), io.StringIO()
        rc = admit.run(conf, self.client, self.compute, out=out, err=err)
        text = out.getvalue()
        return rc, json.loads(text) if text else None, err.getvalue()

    def test_profile_from_the_service_and_term_recorded(self):
        self.start_host('host1')
        # No local profile: only resq-api has it.
        os.unlink(store_mod.ProfileStore(self.profiles).path(PROFILE_ID))
        rc, doc, err = self.admit()
        self.assertEqual(0, rc, err)
        term = self.member.get_term(doc['slo_term'])
        # Recorded with the project's credentials: requested, until the
        # admission service admits it.
        self.assertEqual(('fw-a', PROFILE_ID, 'reserved', 'requested',
                          'p-a'),
                         (term['name'], term['profile_id'], term['slo'],
                          term['status'], term['project_id']))
        self.assertEqual('admitted', self.resq.client('service').update_term(
            term['uuid'], term['generation'], status='admitted')['status'])
        self.assertEqual(sorted(s['id'] for s in doc['servers']),
                         sorted(term['servers']))
        self.assertEqual(sorted(f['name'] for f in doc['flavors']),
                         sorted(term['flavors']))
        # Another project does not see it; its profile cannot go while
        # the term holds it.
        self.assertEqual([], self.resq.client('member_b').list_terms())
        self.assertRaises(resq_client.Conflict, self.member.delete_profile,
                          PROFILE_ID)

    def test_a_profile_the_project_cannot_see_is_refused(self):
        self.start_host('host1')
        self.api_conf('member_b')
        rc, doc, err = self.admit()
        self.assertEqual(1, rc)
        self.assertIn('no profile %r in resq-api' % PROFILE_ID, err)
        self.assertEqual({}, self.servers())
        self.assertEqual([], self.resq.client('admin').list_terms(
            all_projects='true'))

    def test_dry_run_records_nothing(self):
        self.start_host('host1')
        rc, doc, err = self.admit('--dry-run')
        self.assertEqual(0, rc, err)
        self.assertNotIn('slo_term', doc)
        self.assertEqual([], self.member.list_terms())


class AdmissionTest(AdmissionTestBase):

    def test_boots_largest_first_with_ways_per_domain(self):
        rps = {h: self.start_host(h) for h in ('host1', 'host2')}
        rc, doc, err = self.admit()
        self.assertEqual(0, rc, err)
        # 6 dedicated cores and 18 usable ways per domain: fair share 3
        # ways, 3 instances, then the ways round-robin to 2, 2, 1.
        self.assertEqual([2, 2, 1], [s['ways'] for s in doc['servers']])
        self.assertEqual(['fw-a-0', 'fw-a-1', 'fw-a-2'],
                         [s['name'] for s in doc['servers']])
        self.assertEqual(['resq.fw-a.2w', 'resq.fw-a.1w'],
                         sorted(doc['flavors_created'], reverse=True))
        for name, flavor in self.flavors().items():
            specs = self.api.get_flavor(flavor['id'])['extra_specs']
            self.assertEqual(name.split('.')[-1][:-1],
                             specs['resources_LLC:CUSTOM_LLC_WAY'])
            self.assertEqual('required', specs[
                'trait_LLC:CUSTOM_RESQ_LLC_WAYS_20'])
            self.assertEqual('fw-a', specs['resq:term'])
        # Packed first fit onto one host, as the plan predicted; every
        # server's ways come from that host's cache-domain provider. The
        # two hosts are identical, so which one is a tie both the plan and
        # the scheduler break arbitrarily: only the packing is compared.
        hosts = {s['host'] for s in doc['servers']}
        self.assertEqual(1, len(hosts))
        self.assertEqual(1, len({i['host'] for i in doc['instances']}))
        host = hosts.pop()
        for server in doc['servers']:
            live = self.api.get_server(server['id'])
            self.assertEqual('ACTIVE', live['status'])
            self.assertEqual(host, live['OS-EXT-SRV-ATTR:host'])
            allocs = self.client.get_allocations(server['id'])
            self.assertEqual(server['ways'],
                             allocs[rps[host]]['CUSTOM_LLC_WAY'])
        self.assertEqual(5, self.llc_usage(rps[host]))
        other = 'host2' if host == 'host1' else 'host1'
        self.assertEqual(0, self.llc_usage(rps[other]))

    def test_refused_when_the_cluster_lacks_room(self):
        rp = self.start_host('host1')
        # Another tenant holds 16 of the 18 usable ways.
        big = self.resq_flavor(ways=16)
        self._create_server(flavor_id=big, networks='none')
        rc, doc, err = self.admit()
        self.assertEqual(1, rc)
        self.assertEqual('cluster_capacity', doc['refused'])
        self.assertIn('REFUSED (cluster_capacity)', err)
        self.assertIn('needs 3 instances and 5 ways', err)
        self.assertIn('2 free ways', err)
        self.assertEqual({}, self.flavors())
        self.assertEqual({}, self.servers())
        self.assertEqual(16, self.llc_usage(rp))

    def disable(self, host, reason):
        (svc,) = [x for x in self.compute.list_compute_services()
                  if x['host'] == host]
        self.compute.set_service_status(svc['id'], True, reason)

    def status(self, host):
        (svc,) = [x for x in self.compute.list_compute_services()
                  if x['host'] == host]
        return svc['status']

    def test_a_host_freed_by_a_plan_is_enabled_when_admission_needs_it(self):
        from resq_common.clients import compute as compute_mod

        self.start_host('host1')
        self.start_host('host2')
        # host1 is full; host2 was freed by a plan and disabled.
        big = self.resq_flavor(ways=16)
        self._create_server(flavor_id=big, networks='none', host='host1')
        self.disable('host2', compute_mod.FREED_REASON + 'plan-x')
        rc, doc, err = self.admit('--dry-run')
        self.assertEqual(0, rc, err)
        self.assertEqual(['host2'], doc['hosts_to_enable'])
        self.assertEqual('disabled', self.status('host2'))
        rc, doc, err = self.admit()
        self.assertEqual(0, rc, err)
        self.assertEqual([{'host': 'host2', 'outcome': 'enabled',
                           'detail': 'admission needs its room'}],
                         doc['hosts_enabled'])
        self.assertEqual('enabled', self.status('host2'))
        # Every server booted, where the plan said (host1's last two ways
        # included).
        self.assertEqual([i['host'] for i in doc['instances']],
                         [s['host'] for s in doc['servers']])
        self.assertIn('host2', [s['host'] for s in doc['servers']])

    def test_a_host_disabled_by_an_operator_is_not_counted(self):
        self.start_host('host1')
        self.start_host('host2')
        big = self.resq_flavor(ways=16)
        self._create_server(flavor_id=big, networks='none', host='host1')
        self.disable('host2', 'maintenance')
        rc, doc, err = self.admit()
        # Without the gate the plan would count host2 and the boot would
        # fail in Nova's scheduler; now the term is refused up front.
        self.assertEqual(1, rc)
        self.assertEqual('cluster_capacity', doc['refused'])
        self.assertEqual({}, self.servers())
        self.assertEqual('disabled', self.status('host2'))

    def test_refused_on_another_platform(self):
        self.start_host('host1', ways=11, way_bytes=2621440)
        rc, doc, err = self.admit()
        self.assertEqual(1, rc)
        self.assertEqual('platform', doc['refused'])
        self.assertIn('CUSTOM_RESQ_LLC_WAYS_11', err)
        self.assertEqual({}, self.flavors())

    def test_second_run_reuses_the_flavors(self):
        self.start_host('host1')
        rc, first, err = self.admit()
        self.assertEqual(0, rc, err)
        before = {n: f['id'] for n, f in self.flavors().items()}
        # Admitting the term again while its servers exist is refused.
        rc, _, err = self.admit()
        self.assertEqual(1, rc)
        self.assertIn('already has servers: fw-a-0, fw-a-1, fw-a-2', err)
        for server in self.servers().values():
            self._delete_server(server)
        rc, second, err = self.admit()
        self.assertEqual(0, rc, err)
        self.assertEqual([], second['flavors_created'])
        self.assertTrue(all(f['exists'] for f in second['flavors']))
        self.assertEqual(before, {n: f['id']
                                  for n, f in self.flavors().items()})
        self.assertEqual(3, len(second['servers']))

    def test_mismatching_flavor_is_an_error(self):
        self.start_host('host1')
        rc, plan, err = self.admit('--dry-run')
        self.assertEqual(0, rc, err)
        wanted = plan['flavors'][0]
        specs = dict(wanted['extra_specs'], **{'resq:latency_p95_us': '30'})
        self._create_flavor(name=wanted['name'], vcpu=1, memory_mb=512,
                            disk=1, ephemeral=0, extra_spec=specs)
        rc, _, err = self.admit()
        self.assertEqual(1, rc)
        self.assertIn("flavor %s exists but differs" % wanted['name'], err)
        self.assertIn("resq:latency_p95_us is '30', wanted '25'", err)
        # Nothing else was created.
        self.assertEqual([wanted['name']], list(self.flavors()))
        self.assertEqual({}, self.servers())

    def test_dry_run_and_heat_template_create_nothing(self):
        self.start_host('host1')
        rc, plan, err = self.admit('--dry-run')
        self.assertEqual(0, rc, err)
        self.assertEqual([2, 2, 1], [i['ways'] for i in plan['instances']])
        self.assertEqual(['host1'] * 3, [i['host'] for i in plan['instances']])
        path = self.useFixture(fixtures.TempDir()).path + '/fw-a.yaml'
        rc, doc, err = self.admit('--heat-template', path)
        self.assertEqual(0, rc, err)
        with open(path) as f:
            tmpl = yaml.safe_load(f)
        self.assertEqual(
            ['OS::Nova::Flavor'] * 2 + ['OS::Nova::Server'] * 3,
            [r['type'] for r in tmpl['resources'].values()])
        self.assertEqual({}, self.flavors())
        self.assertEqual({}, self.servers())

    def test_flavors_are_private_to_the_admitting_project(self):
        self.start_host('host1')
        rc, doc, err = self.admit(mpps=4.0)
        self.assertEqual(0, rc, err)
        flavor = self.flavors()['resq.fw-a.3w']
        self.assertFalse(flavor['os-flavor-access:is_public'])
        access = self.api.api_get('/flavors/%s/os-flavor-access'
                                  % flavor['id']).body['flavor_access']
        self.assertEqual([self.api.project_id],
                         [a['tenant_id'] for a in access])
        # Another project neither sees the flavor nor boots with it.
        other = self.other_project()
        self.assertNotIn(flavor['id'], [f['id'] for f in other.get_flavors()])
        exc = self.assertRaises(
            api_client.OpenStackApiException, other.post_server,
            {'server': {'name': 'thief', 'flavorRef': flavor['id'],
                        'imageRef': IMAGE, 'networks': 'none'}})
        self.assertEqual(400, exc.response.status_code)
        self.assertIn('Flavor', str(exc))
        # A member (not admin) of the admitting project sees and boots it.
        member = self.other_project(self.api.project_id)
        self.assertIn(flavor['id'], [f['id'] for f in member.get_flavors()])
        server = self._create_server(flavor_id=flavor['id'], networks='none',
                                     api=member)
        self.assertEqual('ACTIVE', server['status'])
        # Idempotent: the project's access is given back on the next run,
        # and the flavor reused.
        self.api.api_post('/flavors/%s/action' % flavor['id'],
                          {'removeTenantAccess': {
                              'tenant': self.api.project_id}})
        for name, srv in self.servers().items():
            self._delete_server(srv)
        self._delete_server(server)
        rc, again, err = self.admit(mpps=4.0)
        self.assertEqual(0, rc, err)
        self.assertEqual([], again['flavors_created'])
        self.assertEqual(flavor['id'], self.flavors()['resq.fw-a.3w']['id'])
        access = self.api.api_get('/flavors/%s/os-flavor-access'
                                  % flavor['id']).body['flavor_access']
        self.assertEqual([self.api.project_id],
                         [a['tenant_id'] for a in access])

    def test_heat_template_shares_existing_flavors_with_the_stack(self):
        self.start_host('host1')
        rc, doc, err = self.admit(mpps=4.0)
        self.assertEqual(0, rc, err)
        for srv in self.servers().values():
            self._delete_server(srv)
        flavor = self.flavors()['resq.fw-a.3w']
        tenant = self.other_project('tenant-a')
        self.assertNotIn(flavor['id'],
                         [f['id'] for f in tenant.get_flavors()])
        path = self.useFixture(fixtures.TempDir()).path + '/fw-a.yaml'
        # Without the stack's project: the template is written, and the
        # flavor the stack needs is named with what to do.
        rc, doc, err = self.admit('--heat-template', path, mpps=4.0)
        self.assertEqual(0, rc, err)
        [warning] = doc['warnings']
        self.assertIn('flavor resq.fw-a.3w exists and is private', warning)
        self.assertIn('--stack-project', warning)
        self.assertNotIn(flavor['id'],
                         [f['id'] for f in tenant.get_flavors()])
        # With it: the tenant's project sees the flavor and boots with it,
        # as the stack's servers would.
        rc, doc, err = self.admit('--heat-template', path, '--stack-project',
                                  'tenant-a', mpps=4.0)
        self.assertEqual(0, rc, err)
        self.assertEqual(('tenant-a', ['resq.fw-a.3w']), (
            doc['stack_project'], doc['flavors_shared']))
        self.assertNotIn('warnings', doc)
        access = self.api.api_get('/flavors/%s/os-flavor-access'
                                  % flavor['id']).body['flavor_access']
        self.assertEqual(sorted([self.api.project_id, 'tenant-a']),
                         sorted(a['tenant_id'] for a in access))
        with open(path) as f:
            tmpl = yaml.safe_load(f)
        self.assertEqual(['OS::Nova::Server'],
                         sorted({r['type'] for r in
                                 tmpl['resources'].values()}))
        server = self._create_server(flavor_id=flavor['id'], networks='none',
                                     api=tenant)
        self.assertEqual('ACTIVE', server['status'])
        # Only with a template: booted servers are in resq-admit's project.
        rc, _, err = self.admit('--stack-project', 'tenant-a', mpps=4.0)
        self.assertEqual(1, rc)
        self.assertIn('--stack-project is for --heat-template', err)

    def test_public_flavor_of_the_same_name_is_a_mismatch(self):
        self.start_host('host1')
        rc, plan, err = self.admit('--dry-run', mpps=4.0)
        self.assertEqual(0, rc, err)
        wanted = plan['flavors'][0]
        self._create_flavor(name=wanted['name'], vcpu=1, memory_mb=512,
                            disk=1, ephemeral=0,
                            extra_spec=wanted['extra_specs'])
        rc, _, err = self.admit(mpps=4.0)
        self.assertEqual(1, rc)
        self.assertIn('flavor %s exists but differs from what SLO term fw-a '
                      'needs: it is public, wanted private to the admitting '
                      'project; delete it' % wanted['name'], err)
        self.assertEqual({}, self.servers())


CHAIN = """
- name: fw
  profile: %(p)s
  throughput_mpps: %(mpps)s
  latency_p95_us: 25
  chain: edge
- name: nat
  profile: %(p)s
  throughput_mpps: %(mpps)s
  latency_p95_us: 25
  chain: edge
- name: ids
  profile: %(p)s
  throughput_mpps: %(mpps)s
  latency_p95_us: 25
  chain: edge
"""


class SLOFileTest(AdmissionTestBase):
    """resq-admit --slo-file: a three-NF chain, jointly, all or nothing."""

    def setUp(self):
        super().setUp()
        # Two hosts of 6 dedicated cores, 18 usable ways, 3 classes.
        self.rps = {h: self.start_host(h) for h in ('host1', 'host2')}

    def chain_file(self, mpps, name='chain.yaml'):
        path = os.path.join(self.profiles, '..', name)
        with open(path, 'w') as f:
            f.write(CHAIN % {'p': PROFILE_ID, 'mpps': mpps})
        return path

    def all_servers(self):
        return {s['name']: s for s in self.api.get_servers()}

    def test_chain_that_fits_then_one_that_does_not(self):
        # 3 x 8 Mpps: 2 instances each, 6 in all; each host has 3 classes
        # of service, so the chain only fits on both hosts together.
        path = self.chain_file(8)
        rc, doc, err = self.run_admit(['--slo-file', path])
        self.assertEqual(0, rc, err)
        self.assertIn(doc['method'], ('milp', 'greedy'))
        self.assertEqual(['fw', 'nat', 'ids'],
                         [t['term'] for t in doc['terms']])
        servers = self.all_servers()
        self.assertEqual(6, len(servers))
        used = {'host1': 0, 'host2': 0}
        for term in doc['terms']:
            self.assertEqual('edge', term['chain'])
            self.assertGreaterEqual(term['capacity_mpps'], 8.0)
            predicted = {i['name']: i['host'] for i in term['instances']}
            for server in term['servers']:
                self.assertEqual('ACTIVE', server['status'])
                live = self.api.get_server(server['id'])
                self.assertEqual('ACTIVE', live['status'])
                # Booted where the joint plan put it.
                self.assertEqual(predicted[server['name']],
                                 live['OS-EXT-SRV-ATTR:host'])
                self.assertEqual({'resq_chain': 'edge',
                                  'resq_term': term['term'],
                                  'resq_ways': str(server['ways'])},
                                 live['metadata'])
                used[live['OS-EXT-SRV-ATTR:host']] += server['ways']
            for name in term['flavors_created']:
                self.assertFalse(self.flavors('resq.%s.' % term['term'])[
                    name]['os-flavor-access:is_public'])
        self.assertEqual({h: self.llc_usage(rp)
                          for h, rp in self.rps.items()}, used)
        # Admitting the same file again is refused before anything: its
        # servers exist.
        rc, _, err = self.run_admit(['--slo-file', path])
        self.assertEqual(1, rc)
        for term in ('fw', 'nat', 'ids'):
            self.assertIn('SLO term %s already has servers' % term, err)
        # Both hosts' classes of service are taken: a second chain
        # does not fit, and nothing of it is created.
        flavors_before = set(self.flavors('resq.'))
        late = os.path.join(self.profiles, '..', 'late.yaml')
        with open(late, 'w') as f:
            f.write(CHAIN.replace('fw', 'lb').replace('nat', 'vpn').replace(
                'ids', 'dpi') % {'p': PROFILE_ID, 'mpps': 8})
        rc, refused, err = self.run_admit(['--slo-file', late])
        self.assertEqual(1, rc)
        lines = err.splitlines()
        self.assertEqual(['lb', 'vpn', 'dpi'],
                         [r['term'] for r in refused['refused']])
        for line, term in zip(lines, ('lb', 'vpn', 'dpi')):
            self.assertRegex(line, r'^REFUSED \((cluster_capacity|'
                             r'no_server_with_room)\): SLO term %s: ' % term)
        self.assertEqual('Nothing was created: the terms of %s are admitted '
                         'whole or not at all' % late, lines[-1])
        self.assertNotIn('Traceback', err)
        self.assertEqual(flavors_before, set(self.flavors('resq.')))
        self.assertEqual(6, len(self.all_servers()))

    def test_chain_too_big_creates_nothing(self):
        # 3 x 12 Mpps needs 3 instances each: 9 classes, the cluster has 6.
        path = self.chain_file(12)
        rc, doc, err = self.run_admit(['--slo-file', path])
        self.assertEqual(1, rc)
        refused = {r['term']: r for r in doc['refused']}
        self.assertIn('ids', refused)
        self.assertNotIn('fw', refused)
        for line in err.splitlines()[:-1]:
            self.assertTrue(line.startswith('REFUSED ('), line)
        self.assertIn('Nothing was created', err)
        self.assertEqual({}, self.flavors('resq.'))
        self.assertEqual({}, self.all_servers())
        self.assertEqual(0, sum(self.llc_usage(rp)
                                for rp in self.rps.values()))

    def test_dry_run_and_one_heat_template(self):
        path = self.chain_file(8)
        rc, plan, err = self.run_admit(['--slo-file', path, '--dry-run'])
        self.assertEqual(0, rc, err)
        self.assertEqual(6, sum(len(t['instances']) for t in plan['terms']))
        out = os.path.join(self.profiles, '..', 'chain-stack.yaml')
        rc, doc, err = self.run_admit(['--slo-file', path,
                                       '--heat-template', out])
        self.assertEqual(0, rc, err)
        with open(out) as f:
            tmpl = yaml.safe_load(f)
        servers = [r for r in tmpl['resources'].values()
                   if r['type'] == 'OS::Nova::Server']
        self.assertEqual(6, len(servers))
        self.assertEqual({'edge'}, {s['properties']['metadata']['resq_chain']
                                    for s in servers})
        for flavor in (r for r in tmpl['resources'].values()
                       if r['type'] == 'OS::Nova::Flavor'):
            self.assertFalse(flavor['properties']['is_public'])
        self.assertEqual({}, self.flavors('resq.'))
        self.assertEqual({}, self.all_servers())

    def test_failed_boot_reports_every_server(self):
        real = compute_mod.ComputeClient.create_server

        def create_server(client, name, *args, **kwargs):
            if name == 'ids-0':     # failure injection: Nova refuses one
                raise compute_mod.ComputeError(
                    method='POST', url='/servers', reason='500 injected')
            return real(client, name, *args, **kwargs)

        self.useFixture(fixtures.MockPatchObject(
            compute_mod.ComputeClient, 'create_server', create_server))
        rc, doc, err = self.run_admit(['--slo-file', self.chain_file(8)])
        self.assertEqual(1, rc)
        status = {s['name']: s['status'] for t in doc['terms']
                  for s in t['servers']}
        self.assertEqual({'fw-0': 'ACTIVE', 'fw-1': 'ACTIVE',
                          'nat-0': 'ACTIVE', 'nat-1': 'ACTIVE',
                          'ids-0': 'FAILED', 'ids-1': 'NOT TRIED'}, status)
        self.assertIn('deploying it failed at server ids-0', err)
        self.assertIn('ACTIVE servers: fw-0, fw-1, nat-0, nat-1', err)
        self.assertNotIn('Traceback', err)
        self.assertEqual({'fw-0', 'fw-1', 'nat-0', 'nat-1'},
                         set(self.all_servers()))

    def test_failed_flavor_reports_what_was_created(self):
        real = compute_mod.ComputeClient.create_flavor

        def create_flavor(client, name, *args, **kwargs):
            if name.startswith('resq.nat.'):    # failure injection
                raise compute_mod.ComputeError(
                    method='POST', url='/flavors', reason='500 injected')
            return real(client, name, *args, **kwargs)

        self.useFixture(fixtures.MockPatchObject(
            compute_mod.ComputeClient, 'create_flavor', create_flavor))
        rc, doc, err = self.run_admit(['--slo-file', self.chain_file(8)])
        self.assertEqual(1, rc)
        created = [n for t in doc['terms'] for n in t['flavors_created']]
        self.assertEqual(set(created), set(self.flavors('resq.')))
        self.assertTrue(all(n.startswith('resq.fw.') for n in created))
        self.assertEqual({'NOT TRIED'}, {s['status'] for t in doc['terms']
                                         for s in t['servers']})
        self.assertIn('deploying it failed at the flavors of SLO term nat',
                      err)
        self.assertIn('created flavors: %s' % ', '.join(created), err)
        self.assertIn('ACTIVE servers: none', err)
        self.assertEqual({}, self.all_servers())
