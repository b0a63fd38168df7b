"""On-demand admission inside real Nova services (issue 14).

Nova's functional harness (API, conductor, scheduler, computes over
fakelibvirt, Placement in-process) with the ResQ filter, and cache-domain
providers reported as an agent with ``[resq_agent] ondemand_ways`` reports
them: the lease's ways reserved, ``CUSTOM_RESQ_ONDEMAND_CORE`` offered.
On-demand admission (ResQ §5.1) only checks that one instance fits in some
host's lease: here, that Placement has a lease core for it in the cell its
cores are pinned to.
"""

from resq_nova.placement import cache_domain
from tests.functional import test_nova_scheduler

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
