"""On-demand admission inside real Nova services (issue 14).

Nova's functional harness (API, conductor, scheduler, computes over
fakelibvirt, Placement in-process) with the ResQ filter, and cache-domain
providers reported as an agent with ``[resq_agent] ondemand_ways`` reports
them: the lease's ways reserved, ``CUSTOM_RESQ_ONDEMAND_CORE`` offered.
On-demand admission (ResQ §5.1) only checks that one instance fits in some
host's lease: here, that Placement has a lease core for it in the cell its
cores are pinned to.
"""

import io
import json

import fixtures
from oslo_config import cfg
import yaml

from resq_common import cache_domain
from resq_common import profile as profile_mod
from resq_nova.cmd import admit
from resq_profiler import store as store_mod
from tests.functional import test_nova_admission
from tests.functional import test_nova_scheduler
from tests.unit.resq_profiler import test_profile

IMAGE = test_nova_admission.IMAGE

ON_DEMAND = {'hw:cpu_policy': 'dedicated', 'resq:slo': 'on-demand',
             'resq:latency_p95_us': '60'}


class OnDemandAdmissionTest(test_nova_scheduler.ResQNovaTestBase):

    def start_host(self, hostname, lease_ways=0, lease_cores=0):
        """One cell of 8 cores (0-5 dedicated), one 11-way cache domain."""
        dom = cache_domain.CacheDomain(
            0, 11, io_ways=2, num_closids=8, cores=6,
            default_group_ways=1,
            instance_ways=11 - 2 - 1 - lease_ways,
            lease_ways=lease_ways, lease_classes=2 if lease_ways else 0,
            lease_cores=lease_cores)
        return self.start_resq_compute(hostname, domains=[dom])[0]

    def on_demand_flavor(self, vcpus=1, **extra):
        spec = dict(ON_DEMAND, **{
            'resources_OD:CUSTOM_RESQ_ONDEMAND_CORE': str(vcpus)})
        spec.update(extra)
        return self._create_flavor(vcpu=vcpus, memory_mb=512, disk=1,
                                   ephemeral=0, extra_spec=spec)

    def lease_usage(self, rp):
        return self.client.get_usages(rp).get('CUSTOM_RESQ_ONDEMAND_CORE', 0)

    def test_on_demand_goes_where_a_lease_has_room(self):
        leased = self.start_host('host1', lease_ways=4, lease_cores=2)
        self.start_host('host2')
        flavor = self.on_demand_flavor()
        hosts = [self.host_of(self._create_server(flavor_id=flavor,
                                                  networks='none'))
                 for _ in range(2)]
        self.assertEqual(['host1', 'host1'], hosts)
        self.assertEqual(2, self.lease_usage(leased))
        self.assertEqual(0, self.llc_usage(leased))
        # The lease holds two; host2 leases nothing: no valid host.
        server = self._create_server(flavor_id=flavor, networks='none',
                                     expected_state='ERROR')
        self.assertIn('No valid host', server['fault']['message'])

    def test_reserved_slos_never_take_the_lease(self):
        leased = self.start_host('host1', lease_ways=4, lease_cores=2)
        # 11 ways - 2 DDIO - 1 default - 4 leased: 4 for reserved SLOs.
        too_big = self.resq_flavor(ways=5)
        server = self._create_server(flavor_id=too_big, networks='none',
                                     expected_state='ERROR')
        self.assertIn('No valid host', server['fault']['message'])
        fits = self.resq_flavor(ways=4)
        self._create_server(flavor_id=fits, networks='none')
        self.assertEqual(4, self.llc_usage(leased))
        # The on-demand lease is still there for on-demand NFs.
        self._create_server(flavor_id=self.on_demand_flavor(),
                            networks='none')
        self.assertEqual(1, self.lease_usage(leased))

    def test_reserved_slos_never_take_the_lease_cores(self):
        leased = self.start_host('host1', lease_ways=4, lease_cores=2)
        # 6 dedicated cores, 2 kept for the lease: 4 for reserved SLOs,
        # counted in the cache domain as resq-admit's flavors ask.
        self.assertEqual(4, self.client.get_inventories(leased)[
            'CUSTOM_RESQ_CORE']['total'])
        four = self.resq_flavor(ways=2, vcpus=4, **{
            'resources_LLC:CUSTOM_RESQ_CORE': '4'})
        self._create_server(flavor_id=four, networks='none')
        one = self.resq_flavor(ways=1, vcpus=1, **{
            'resources_LLC:CUSTOM_RESQ_CORE': '1'})
        server = self._create_server(flavor_id=one, networks='none',
                                     expected_state='ERROR')
        self.assertIn('No valid host', server['fault']['message'])
        # The lease's two cores are still there for on-demand NFs.
        flavor = self.on_demand_flavor()
        for _ in range(2):
            self._create_server(flavor_id=flavor, networks='none')
        self.assertEqual(2, self.lease_usage(leased))

    def test_on_demand_without_target_is_refused_with_the_reason(self):
        self.start_host('host1', lease_ways=4, lease_cores=2)
        spec = dict(ON_DEMAND)
        del spec['resq:latency_p95_us']
        spec['resources_OD:CUSTOM_RESQ_ONDEMAND_CORE'] = '1'
        flavor = self._create_flavor(vcpu=1, memory_mb=512, disk=1,
                                     ephemeral=0, extra_spec=spec)
        server = self._create_server(flavor_id=flavor, networks='none',
                                     expected_state='ERROR')
        self.assertIn('No valid host', server['fault']['message'])
        self.assertIn('resq:latency_p95_us', self.stdlog.logger.output)


class OnDemandAdmitTest(test_nova_scheduler.ResQNovaTestBase):
    """``resq-admit --slo on-demand`` against the real services."""

    def setUp(self):
        super().setUp()
        self.profiles = self.useFixture(fixtures.TempDir()).path
        self.flags(profile_dir=self.profiles, group='resq')
        self.profile = profile_mod.Profile.from_dict(test_profile.make_doc())
        store_mod.ProfileStore(self.profiles).put(self.profile)
        self.compute = self.compute_client()

    def start_host(self, hostname, lease_ways=0):
        dom = cache_domain.CacheDomain(
            0, 11, io_ways=2, num_closids=8, cores=6, default_group_ways=1,
            instance_ways=11 - 2 - 1 - lease_ways, lease_ways=lease_ways,
            lease_classes=2 if lease_ways else 0, lease_cores=2)
        return self.start_resq_compute(hostname, domains=[dom],
                                       huge_pages=True)[0]

    def admit(self, *args, latency='80'):
        conf = cfg.ConfigOpts()
        admit.register_opts(conf)
        conf.register_cli_opts(admit.cli_opts)
        conf(['--slo', 'on-demand', '--term', 'od-a',
              '--latency-p95-us', latency, '--ram-mb', '512',
              '--image', IMAGE, '--network', 'none',
              '--profile-dir', self.profiles, '--format', 'json',
              '--boot-timeout', '60'] + list(args),
             project='resq', default_config_files=[])
        out, err = io.StringIO(), io.StringIO()
        rc = admit.run(conf, self.client, self.compute, out=out, err=err)
        text = out.getvalue()
        return rc, json.loads(text) if text else None, err.getvalue()

    def test_boots_one_server_in_a_lease(self):
        self.start_host('host1')
        leased = self.start_host('host2', lease_ways=4)
        rc, doc, err = self.admit()
        self.assertEqual(0, rc, err)
        self.assertEqual([leased], [r['provider']
                                    for r in doc['leases_with_room']])
        self.assertEqual(['host2'], [s['host'] for s in doc['servers']])
        self.assertTrue(doc['flavor']['created'])
        specs = doc['flavor']['extra_specs']
        self.assertEqual(('on-demand', '80', '1'), (
            specs['resq:slo'], specs['resq:latency_p95_us'],
            specs['resources_OD:CUSTOM_RESQ_ONDEMAND_CORE']))
        self.assertEqual(1, self.client.get_usages(leased)[
            'CUSTOM_RESQ_ONDEMAND_CORE'])

    def test_heat_template_boots_nothing_and_shares_the_flavor(self):
        self.start_host('host2', lease_ways=4)
        path = self.useFixture(fixtures.TempDir()).path + '/od-a.yaml'
        rc, doc, err = self.admit('--heat-template', path)
        self.assertEqual(0, rc, err)
        self.assertEqual([], self.api.get_servers())
        self.assertIsNone(self.compute.find_flavor('resq.od-a.ondemand'))
        with open(path) as f:
            tmpl = yaml.safe_load(f)
        self.assertEqual(['OS::Nova::Flavor', 'OS::Nova::Server'],
                         [r['type'] for r in tmpl['resources'].values()])
        self.assertEqual((path, False), (doc['heat_template'],
                                         doc['flavor']['exists']))
        # Once the term's flavor exists (admitted by booting), a template
        # names it, and the stack's project is given access.
        rc, doc, err = self.admit()
        self.assertEqual(0, rc, err)
        self._delete_server(self.api.get_servers()[0])
        rc, doc, err = self.admit('--heat-template', path,
                                  '--stack-project', 'tenant-a')
        self.assertEqual(0, rc, err)
        self.assertEqual(['resq.od-a.ondemand'], doc['flavors_shared'])
        flavor = self.compute.find_flavor('resq.od-a.ondemand')
        self.assertIn('tenant-a', self.compute.flavor_access(flavor['id']))
        with open(path) as f:
            tmpl = yaml.safe_load(f)
        self.assertEqual(['OS::Nova::Server'],
                         [r['type'] for r in tmpl['resources'].values()])
        self.assertEqual('resq.od-a.ondemand', tmpl['resources']['server_0'][
            'properties']['flavor'])

    def test_refused_without_a_lease_with_room(self):
        self.start_host('host1')
        rc, doc, err = self.admit()
        self.assertEqual(1, rc)
        self.assertIn('REFUSED (lease)', err)
        self.assertIn('ondemand_ways', err)
        self.assertEqual([], self.api.get_servers())

    def test_target_below_the_best_case_is_an_error(self):
        self.start_host('host1', lease_ways=4)
        floor = self.profile.latency_floor_us
        rc, doc, err = self.admit('--profile', self.profile.profile_id,
                                  latency='%g' % (floor / 2))
        self.assertEqual(1, rc)
        self.assertIn('REFUSED (latency)', err)
        self.assertIn('even alone with the whole cache', err)
        self.assertEqual([], self.api.get_servers())
        # At the floor it is admitted.
        rc, doc, err = self.admit('--profile', self.profile.profile_id,
                                  latency='%g' % (floor * 1.5))
        self.assertEqual(0, rc, err)
        self.assertEqual(self.profile.profile_id,
                         doc['flavor']['extra_specs']['resq:profile'])

    def test_slomo_warns_where_sharing_the_lease_hurts(self):
        from resq_profiler.slomo import store as slomo_store
        from resq_profiler.slomo import training
        from tests.unit.resq_profiler.slomo import util

        # LPM profiled and its SLOMO model trained on the testbed, both in
        # the profile store.
        driver = util.driver('LPM')
        from resq_profiler import profiler
        prof = profiler.run(util.make_conf(), 'LPM',
                            driver.traffic, driver_name='model')
        store_mod.ProfileStore(self.profiles).put(prof)
        doc = training.train(driver, prof.profile_id, draws=1)
        slomo_store.ModelStore(self.profiles).put(doc)
        solo = doc['solo_mpps']
        self.start_host('host1', lease_ways=4)

        def admit_term(term, mpps):
            conf = cfg.ConfigOpts()
            admit.register_opts(conf)
            conf.register_cli_opts(admit.cli_opts)
            conf(['--slo', 'on-demand', '--term', term,
                  '--latency-p95-us', '%g' % (prof.latency_floor_us * 3),
                  '--profile', prof.profile_id,
                  '--throughput-mpps', '%g' % mpps, '--ram-mb', '512',
                  '--image', IMAGE, '--network', 'none',
                  '--profile-dir', self.profiles, '--boot-timeout', '60'],
                 project='resq', default_config_files=[])
            out, err = io.StringIO(), io.StringIO()
            rc = admit.run(conf, self.client, self.compute, out=out, err=err)
            return rc, out.getvalue(), err.getvalue()

        # Alone in the lease at a modest rate: no warning.
        rc, text, err = admit_term('od-a', 0.5 * solo)
        self.assertEqual(0, rc, err)
        self.assertNotIn('WARNING', text)
        # A second LPM offered nearly its solo rate next to the first: the
        # model predicts it cannot keep up, and says where.
        rc, text, err = admit_term('od-b', 0.99 * solo)
        self.assertEqual(0, rc, err)
        self.assertIn('WARNING on host1: admitting %s to the shared cache '
                      'class (with %s)' % (prof.profile_id, prof.profile_id),
                      text)
        self.assertIn('below its target', text)
        # Predicted in the lease's 4 ways (its Placement trait).
        self.assertIn('of 4 ways would push', text)
        self.assertIn('ACTIVE on host1', text)
        flavor = self.compute.find_flavor('resq.od-b.ondemand')
        self.assertAlmostEqual(0.99 * solo, float(
            flavor['extra_specs']['resq:throughput_mpps']), places=3)
