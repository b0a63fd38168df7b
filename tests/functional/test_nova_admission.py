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

import fixtures
from oslo_config import cfg
import yaml

from resq_nova.cmd import admit
from resq_profiler import profile as profile_mod
from resq_profiler import store as store_mod
from tests.functional import test_nova_scheduler
from tests.unit.resq_profiler import test_profile

PROFILE_ID = 'lpm-64B-100000flows-abcdef12'
IMAGE = '155d900f-4e14-4e4c-a73d-069cbf4541e6'
WAY_BYTES = 2359296     # the test profile's platform: 20 ways of 2304 KiB


class AdmissionTest(test_nova_scheduler.ResQNovaTestBase):

    def setUp(self):
        super().setUp()
        self.profiles = self.useFixture(fixtures.TempDir()).path
        # The scheduler filter and the command read the same store.
        self.flags(profile_dir=self.profiles, group='resq')
        store_mod.ProfileStore(self.profiles).put(
            profile_mod.Profile.from_dict(test_profile.make_doc()))
        self.compute = self.compute_client()

    def start_host(self, hostname, ways=20, way_bytes=WAY_BYTES):
        """One cell: 6 dedicated cores, 2 MiB pages, one cache domain.

        The domain has ``ways`` ways, 2 of them DDIO's, and 3 classes of
        service for instances.
        """
        return self.start_resq_compute(hostname, ways=ways,
                                       way_size_bytes=way_bytes,
                                       huge_pages=True)[0]

    def admit(self, *args, term='fw-a', mpps=10.0):
        """Run resq-admit; returns (exit status, stdout JSON, stderr)."""
        conf = cfg.ConfigOpts()
        admit.register_opts(conf)
        conf.register_cli_opts(admit.cli_opts)
        conf(['--term', term, '--profile', PROFILE_ID,
              '--throughput-mpps', str(mpps), '--latency-p95-us', '25',
              '--ram-mb', '512', '--image', IMAGE, '--network', 'none',
              '--profile-dir', self.profiles, '--format', 'json',
              '--boot-timeout', '60'] + list(args),
             project='resq', default_config_files=[])
        out, err = io.StringIO(), io.StringIO()
        rc = admit.run(conf, self.client, self.compute, out=out, err=err)
        text = out.getvalue()
        return rc, json.loads(text) if text else None, err.getvalue()

    def flavors(self, prefix='resq.fw-a.'):
        return {f['name']: f for f in self.api.get_flavors()
                if f['name'].startswith(prefix)}

    def servers(self, prefix='fw-a-'):
        return {s['name']: s for s in self.api.get_servers()
                if s['name'].startswith(prefix)}

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
