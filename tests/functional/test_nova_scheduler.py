"""resq-nova inside real Nova services.

Nova's own functional harness runs nova-api, conductor, scheduler and
compute services in-process; computes use Nova's real libvirt driver over
fakelibvirt with the host shape each test chooses (NUMA cells, cores), and
Placement runs in-process. The ResQ filter and weigher are enabled the way
a deployer enables them, and the cache-domain providers are created by
resq-nova's Placement client, as the agent does.
"""

import contextlib
import sys

import fixtures
from nova.tests.fixtures import libvirt as fakelibvirt
from nova.tests.functional.api import client as api_client
from nova.tests.functional.libvirt import base

from resq_agent import reporter
from resq_common import cache_domain
from resq_common.clients import placement as placement_client
from resq_common import profile as profile_mod
from tests.unit.resq_profiler import test_profile

RESQ_FILTERS = ['ResQFilter']


class ResQNovaTestBase(base.ServersTestBase):
    ADDITIONAL_FILTERS = RESQ_FILTERS
    microversion = 'latest'
    ADMIN_API = True
    # The class paths nova.conf names.
    FILTER_PATH = 'resq_nova.nova.scheduler.filters.ResQFilter'
    WEIGHER_PATH = 'resq_nova.nova.scheduler.weights.ResQWeigher'

    def setUp(self):
        self.flags(api_paste_config=sys.prefix + '/etc/nova/api-paste.ini',
                   group='wsgi')
        self.flags(available_filters=[
            'nova.scheduler.filters.all_filters', self.FILTER_PATH],
            group='filter_scheduler')
        self.flags(weight_classes=[
            'nova.scheduler.weights.all_weighers', self.WEIGHER_PATH],
            group='filter_scheduler')
        # Cells of 4 cores: cell 0 has 0-3 dedicated, cell 1 has 4-5
        # dedicated and 6-7 for ordinary (shared-CPU) instances.
        self.flags(cpu_dedicated_set='0-5', cpu_shared_set='6-7',
                   group='compute')
        self.flags(vcpu_pin_set=None)
        super().setUp()
        self.client = placement_client.PlacementClient.for_endpoint(
            self.placement.fixture.endpoint)

    def start_resq_compute(self, hostname, sockets=1, ways=11,
                           domains=None, way_size_bytes=0, huge_pages=False,
                           num_closids=4, pci_info=None, cell_name=None):
        """Start a compute and report its cache domains.

        ``sockets`` NUMA cells share 8 cores; each cell has one cache domain
        of ``ways`` ways (of ``way_size_bytes``, which adds the platform
        traits), reported to Placement as the agent would. ``huge_pages``
        gives every cell 4096 pages of 2 MiB besides its 4 KiB pages.
        """
        mempages = None
        if huge_pages:
            mempages = {cell: fakelibvirt.create_mempages(
                [(4, 2 * 1024 * 1024 // sockets), (2048, 4096 // sockets)])
                for cell in range(sockets)}
        info = fakelibvirt.HostInfo(cpu_nodes=sockets, cpu_sockets=1,
                                    cpu_cores=8 // sockets, cpu_threads=1,
                                    kB_mem=16 * 1024 * 1024,
                                    mempages=mempages)
        self.start_compute(hostname=hostname, host_info=info,
                           pci_info=pci_info, cell_name=cell_name)
        per_cell = 8 // sockets
        # The dedicated cores of each cell (cpu_dedicated_set is 0-5), as
        # the agent reports them.
        doms = domains or [cache_domain.CacheDomain(
            d, ways, io_ways=2, num_closids=num_closids,
            way_size_bytes=way_size_bytes, domains_on_host=sockets,
            cores=len(set(range(d * per_cell, (d + 1) * per_cell))
                      & set(range(6))))
            for d in range(sockets)]
        return reporter.report(self.client, hostname, doms)

    def resq_flavor(self, ways, vcpus=1, name=None, memory_mb=512, **extra):
        spec = {'hw:cpu_policy': 'dedicated', 'resq:slo': 'reserved',
                'resources_LLC:CUSTOM_LLC_WAY': str(ways),
                'resources_LLC:CUSTOM_LLC_CLOS': '1',
                'resq:throughput_mpps': '1.5'}
        spec.update(extra)
        return self._create_flavor(name=name, vcpu=vcpus,
                                   memory_mb=memory_mb, disk=1, ephemeral=0,
                                   extra_spec=spec)

    def compute_client(self):
        """resq-nova's compute client on the in-process API (no auth)."""
        from resq_common.clients import compute as compute_mod

        api = self.api
        return compute_mod.ComputeClient.for_endpoint(
            api.base_url, headers={'X-Auth-User': api.auth_user,
                                   'X-User-Id': api.auth_user,
                                   'X-Auth-Project-Id': api.project_id,
                                   'X-Roles': ','.join(api.roles)},
            poll_interval=0.1)

    def llc_usage(self, rp_uuid):
        return self.client.get_usages(rp_uuid).get('CUSTOM_LLC_WAY', 0)

    def host_of(self, server):
        return server['OS-EXT-SRV-ATTR:host']


class ExtraSpecValidationTest(ResQNovaTestBase):

    def test_invalid_values_get_http_400_naming_key(self):
        flavor = self._create_flavor(vcpu=1, memory_mb=512, disk=1,
                                     ephemeral=0)
        for key, value, text in (
                ('resq:throughput_mpps', 'abc', 'a number > 0'),
                ('resq:slo', 'gold', 'reserved, on-demand'),
                ('resq:packet_bytes', '10', '64 to 9216'),
                ('resq:colour', 'red', 'not a resq-nova key')):
            exc = self.assertRaises(
                api_client.OpenStackApiException,
                self.api.post_extra_spec, flavor,
                {'extra_specs': {key: value}})
            self.assertEqual(400, exc.response.status_code)
            self.assertIn(key, exc.response.text)
            self.assertIn(text, exc.response.text)

    def test_valid_values_are_accepted(self):
        flavor = self._create_flavor(vcpu=1, memory_mb=512, disk=1,
                                     ephemeral=0)
        self.api.post_extra_spec(flavor, {'extra_specs': {
            'resq:slo': 'reserved', 'resq:throughput_mpps': '2.5',
            'resq:latency_p95_us': '40', 'resq:packet_bytes': '64',
            'resq:profile': 'stats-64B-100000flows-e3b0c442'}})


class DeprecatedPathsTest(ResQNovaTestBase):
    """A nova.conf written before the regrouping still schedules.

    ``available_filters`` and ``weight_classes`` name the previous paths
    (``resq_nova.scheduler...``); ``enabled_filters`` names the filter by
    its class name, as before.
    """

    FILTER_PATH = 'resq_nova.scheduler.filters.ResQFilter'
    WEIGHER_PATH = 'resq_nova.scheduler.weights.ResQWeigher'

    def setUp(self):
        from oslo_log import versionutils

        # Each warning is logged once per process: this test's scheduler
        # starts with none sent yet.
        self.useFixture(fixtures.MockPatchObject(
            versionutils, '_deprecated_messages_sent', {}))
        super().setUp()

    def test_old_paths_boot_a_resq_flavor_and_say_the_new_ones(self):
        from resq_nova.nova.scheduler import filters as new_filters
        from resq_nova.nova.scheduler import weights as new_weights
        from resq_nova.scheduler import filters as old_filters
        from resq_nova.scheduler import weights as old_weights

        hm = self.scheduler.manager.host_manager
        self.assertIsInstance(hm.filter_obj_map['ResQFilter'],
                              old_filters.ResQFilter)
        self.assertIsInstance(hm.filter_obj_map['ResQFilter'],
                              new_filters.ResQFilter)
        self.assertEqual(1, len([w for w in hm.weighers if isinstance(
            w, old_weights.ResQWeigher)]))
        self.assertTrue(issubclass(old_weights.ResQWeigher,
                                   new_weights.ResQWeigher))
        log = self.stdlog.logger.output
        for old, new, option in (
                (old_filters.OLD_PATH, new_filters.__name__ + '.ResQFilter',
                 'available_filters'),
                (old_weights.OLD_PATH, new_weights.__name__ + '.ResQWeigher',
                 'weight_classes')):
            self.assertEqual(1, log.count(
                'Deprecated: %s is a deprecated alias of %s, kept for one '
                'release: write %s in nova.conf [filter_scheduler] %s. The '
                'alias is removed in the next resq-nova release.'
                % (old, new, new, option)), log)
        rps = {h: self.start_resq_compute(h) for h in ('host1', 'host2')}
        flavor = self.resq_flavor(ways=3)
        server = self._create_server(flavor_id=flavor, networks='none')
        self.assertEqual(3, self.llc_usage(rps[self.host_of(server)][0]))
        # The filter still refuses what cannot fit.
        server = self._create_server(flavor_id=self.resq_flavor(ways=10),
                                     networks='none', expected_state='ERROR')
        self.assertIn('No valid host', server['fault']['message'])


class SchedulingTest(ResQNovaTestBase):

    def test_packs_first_fit_and_accounts_ways_per_domain(self):
        rps = {h: self.start_resq_compute(h) for h in ('host1', 'host2')}
        flavor = self.resq_flavor(ways=3)
        hosts = [self.host_of(self._create_server(flavor_id=flavor,
                                                  networks='none'))
                 for _ in range(3)]
        # 11 ways, 2 reserved for DDIO: three 3-way instances fill one host.
        self.assertEqual(1, len(set(hosts)))
        full = hosts[0]
        self.assertEqual(9, self.llc_usage(rps[full][0]))
        other = 'host2' if full == 'host1' else 'host1'
        self.assertEqual(0, self.llc_usage(rps[other][0]))
        # The next one cannot fit the full host's domain.
        server = self._create_server(flavor_id=flavor, networks='none')
        self.assertEqual(other, self.host_of(server))
        self.assertEqual(3, self.llc_usage(rps[other][0]))

    def test_too_many_ways_is_no_valid_host(self):
        self.start_resq_compute('host1')
        flavor = self.resq_flavor(ways=10)
        server = self._create_server(flavor_id=flavor, networks='none',
                                     expected_state='ERROR')
        self.assertIn('No valid host', server['fault']['message'])

    def test_deleting_servers_returns_ways(self):
        rps = self.start_resq_compute('host1')
        flavor = self.resq_flavor(ways=4)
        server = self._create_server(flavor_id=flavor, networks='none')
        self.assertEqual(4, self.llc_usage(rps[0]))
        self._delete_server(server)
        self.assertEqual(0, self.llc_usage(rps[0]))

    def test_flavors_without_resq_specs_schedule_as_before(self):
        self.start_resq_compute('host1')
        flavor = self._create_flavor(vcpu=1, memory_mb=512, disk=1,
                                     ephemeral=0)
        server = self._create_server(flavor_id=flavor, networks='none')
        self.assertEqual('host1', self.host_of(server))

    def test_reserved_without_isolation_is_refused(self):
        self.start_resq_compute('host1')
        # Dedicated cores but no LLC ways: the filter refuses, with the
        # reason in the scheduler log, instead of booting unisolated.
        flavor = self._create_flavor(vcpu=1, memory_mb=512, disk=1,
                                     ephemeral=0, extra_spec={
                                         'hw:cpu_policy': 'dedicated',
                                         'resq:slo': 'reserved'})
        server = self._create_server(flavor_id=flavor, networks='none',
                                     expected_state='ERROR')
        self.assertIn('No valid host', server['fault']['message'])
        self.assertIn('needs LLC ways from Placement',
                      self.stdlog.logger.output)

    def _profile(self):
        """A 20-way profile (2.25 MiB ways), not stored anywhere."""
        self.flags(profile_dir=self.useFixture(fixtures.TempDir()).path,
                   group='resq')
        prof = profile_mod.Profile.from_dict(test_profile.make_doc())
        return prof, cache_domain.platform_traits(
            prof.platform['llc_ways'], prof.platform['way_size_bytes'])

    def test_filter_needs_no_profile_files(self):
        # The scheduler's profile_dir is empty: the flavor carries the
        # cache shape and the ways the profile needs (as resq-admit writes
        # it), which is all the filter checks.
        prof, shape = self._profile()
        self.start_resq_compute('host1', ways=20, way_size_bytes=2359296)
        mpps = '%.3f' % (prof.throughput_at(3) - 0.001)
        need = prof.min_ways_for(float(mpps))
        self.assertGreater(need, 1)
        good = self.resq_flavor(
            ways=need, **{'resq:profile': prof.profile_id,
                          'resq:min_ways': str(need),
                          'resq:throughput_mpps': mpps},
            **{'trait_LLC:%s' % t: 'required' for t in shape})
        self._create_server(flavor_id=good, networks='none')
        # A hand-made flavor with fewer ways than the profile needs.
        short = self.resq_flavor(
            ways=need - 1, **{'resq:profile': prof.profile_id,
                              'resq:min_ways': str(need),
                              'resq:throughput_mpps': mpps},
            **{'trait_LLC:%s' % t: 'required' for t in shape})
        server = self._create_server(flavor_id=short, networks='none',
                                     expected_state='ERROR')
        self.assertIn('No valid host', server['fault']['message'])
        self.assertIn('asks for %d LLC ways but profile %s needs %d for '
                      '%g Mpps' % (need - 1, prof.profile_id, need,
                                   float(mpps)),
                      self.stdlog.logger.output)

    def test_flavor_without_a_class_of_service_is_refused(self):
        self.start_resq_compute('host1')
        flavor = self._create_flavor(vcpu=1, memory_mb=512, disk=1,
                                     ephemeral=0, extra_spec={
                                         'hw:cpu_policy': 'dedicated',
                                         'resq:slo': 'reserved',
                                         'resources_LLC:CUSTOM_LLC_WAY': '2'})
        server = self._create_server(flavor_id=flavor, networks='none',
                                     expected_state='ERROR')
        self.assertIn('No valid host', server['fault']['message'])
        self.assertIn('set "resources_LLC:CUSTOM_LLC_CLOS=1"',
                      self.stdlog.logger.output)

    def test_flavor_not_pinned_to_profile_platform_is_refused(self):
        prof, shape = self._profile()
        self.start_resq_compute('host1', ways=20, way_size_bytes=2359296)
        # Without the platform traits Placement could hand out ways of any
        # cache: the filter refuses and says what to add.
        loose = self.resq_flavor(ways=2, **{'resq:profile': prof.profile_id,
                                            'resq:min_ways': '2'})
        server = self._create_server(flavor_id=loose, networks='none',
                                     expected_state='ERROR')
        self.assertIn('No valid host', server['fault']['message'])
        self.assertIn('needs the cache shape it was measured on',
                      self.stdlog.logger.output)

    def test_profile_for_another_platform_gets_no_host(self):
        prof, shape = self._profile()
        # An 11-way cache of 1.375 MiB ways: not the profile's 20 x 2.25 MiB.
        rps = self.start_resq_compute('host1', ways=11,
                                      way_size_bytes=1441792)
        # No host has the profile's shape, so its traits exist only
        # because admission creates them with its flavors: without them
        # Placement answers 400 and nova-scheduler 34 fails with a
        # TypeError instead of NoValidHost.
        for trait in shape:
            self.client.ensure_trait(trait)
        flavor = self.resq_flavor(
            ways=2, **{'resq:profile': prof.profile_id, 'resq:min_ways': '2'},
            **{'trait_LLC:%s' % t: 'required' for t in shape})
        server = self._create_server(flavor_id=flavor, networks='none',
                                     expected_state='ERROR')
        self.assertIn('No valid host', server['fault']['message'])
        self.assertEqual(0, self.llc_usage(rps[0]))

    def _cores_tie_host1_fuller(self):
        """Cores tie (one pinned on each host); host1's domain is fuller.

        host1's domain holds 6 ways, host2's 1.

        :returns: the flavor of one way.
        """
        rps1 = self.start_resq_compute('host1')
        rps2 = self.start_resq_compute('host2')
        big = self.resq_flavor(ways=6, name='big')
        small = self.resq_flavor(ways=1, name='small')
        self._create_server(flavor_id=big, networks='none', host='host1')
        self._create_server(flavor_id=small, networks='none', host='host2')
        self.assertEqual((6, 1), (self.llc_usage(rps1[0]),
                                  self.llc_usage(rps2[0])))
        return small

    def test_weigher_packs_by_ways_when_cores_tie(self):
        small = self._cores_tie_host1_fuller()
        # Cores tie; the fuller cache domain wins (first fit), from the
        # usage in Nova's own allocation candidates: the weigher asks
        # Placement nothing.
        with self.placement_requests() as seen:
            server = self._create_server(flavor_id=small, networks='none')
        self.assertEqual('host1', self.host_of(server))
        self.assertGreater(seen['nova'], 0)
        self.assertEqual(seen['nova'], seen['gets'])
        self.assertEqual(1, len(seen['answers']))
        self.assertIsNotNone(seen['answers'][0])

    def test_weigher_asks_placement_when_novas_answer_is_missing(self):
        # The fallback: without Nova's answer (a Nova the hook does not
        # recognise), the weigher's own GET decides as Nova's answer did.
        small = self._cores_tie_host1_fuller()
        self.useFixture(fixtures.MockPatch(
            'resq_nova.nova.internals.nova_provider_summaries',
            return_value=None))
        with self.placement_requests() as seen:
            server = self._create_server(flavor_id=small, networks='none')
        self.assertEqual('host1', self.host_of(server))
        self.assertEqual(seen['nova'] + 1, seen['gets'])

    @contextlib.contextmanager
    def placement_requests(self):
        """Count nova-scheduler's ``GET /allocation_candidates``.

        ``gets``: every such GET of the report client; ``nova``: those of
        Nova's own ``get_allocation_candidates``; ``answers``: what the
        weigher got of Nova's answer, per ResQ request weighed.
        """
        from nova.scheduler.client import report

        from resq_nova.nova import internals

        seen = {'gets': 0, 'nova': 0, 'answers': []}
        get = report.SchedulerReportClient.get
        candidates = report.SchedulerReportClient.get_allocation_candidates
        take = internals.nova_provider_summaries

        def counting_get(client, url, *args, **kwargs):
            if url.startswith('/allocation_candidates'):
                seen['gets'] += 1
            return get(client, url, *args, **kwargs)

        def counting_candidates(client, *args, **kwargs):
            seen['nova'] += 1
            return candidates(client, *args, **kwargs)

        def taking(spec_obj):
            summaries = take(spec_obj)
            if spec_obj.flavor.extra_specs.get('resq:slo'):
                seen['answers'].append(summaries)
            return summaries

        with fixtures.MonkeyPatch(
                'nova.scheduler.client.report.SchedulerReportClient.get',
                counting_get), fixtures.MonkeyPatch(
                'nova.scheduler.client.report.SchedulerReportClient.'
                'get_allocation_candidates', counting_candidates), \
                fixtures.MonkeyPatch(
                    'resq_nova.nova.internals.nova_provider_summaries',
                    taking):
            yield seen

    def test_two_sockets_ways_and_cores_in_one_domain(self):
        rps = self.start_resq_compute('host1', sockets=2)
        flavor = self.resq_flavor(ways=5, vcpus=2)
        for _ in range(2):
            server = self._create_server(flavor_id=flavor, networks='none')
            inst = self._get_instance(server)
            cells = {c.id for c in inst.numa_topology.cells}
            self.assertEqual(1, len(cells))
            cell = cells.pop()
            allocs = self.client.get_allocations(server['id'])
            llc = [rp for rp, res in allocs.items()
                   if 'CUSTOM_LLC_WAY' in res]
            self.assertEqual([rps[cell]], llc)
        # Both domains now hold 5 of their 9 usable ways. Nova would pin a
        # third instance to a cell whose domain cannot give 5 more ways:
        # the filter refuses rather than split cores and ways.
        server = self._create_server(flavor_id=flavor, networks='none',
                                     expected_state='ERROR')
        self.assertIn('No valid host', server['fault']['message'])
        self.assertEqual(5, self.llc_usage(rps[0]))
        self.assertEqual(5, self.llc_usage(rps[1]))

    def _get_instance(self, server):
        from nova import context
        from nova import objects
        return objects.Instance.get_by_uuid(context.get_admin_context(),
                                            server['id'])


class CacheDomainOfCellTest(ResQNovaTestBase):
    """Cores and ways in one cache domain, whatever decides the cell.

    Cell ids that are not cache ids, SR-IOV-style PCI requests, a forced
    host.
    """

    def domains(self, numa_cells):
        return [cache_domain.CacheDomain(
            d, 11, io_ways=2, num_closids=8, domains_on_host=len(numa_cells),
            numa_cells=cells) for d, cells in enumerate(numa_cells)]

    def llc_provider(self, server):
        allocs = self.client.get_allocations(server['id'])
        return [rp for rp, res in allocs.items() if 'CUSTOM_LLC_WAY' in res]

    def pinned_cells(self, server):
        from nova import context
        from nova import objects
        inst = objects.Instance.get_by_uuid(context.get_admin_context(),
                                            server['id'])
        return {c.id for c in inst.numa_topology.cells}, inst

    def test_cache_ids_that_are_not_cell_ids(self):
        # Cache 0 holds the cores of cell 1 and cache 1 those of cell 0.
        rps = self.start_resq_compute('host1', sockets=2,
                                      domains=self.domains([(1,), (0,)]))
        flavor = self.resq_flavor(ways=3, vcpus=2)
        for _ in range(2):
            server = self._create_server(flavor_id=flavor, networks='none')
            (cell,), _ = self.pinned_cells(server)
            self.assertEqual([rps[1 - cell]], self.llc_provider(server))

    def test_sub_numa_clustering_two_cells_one_cache(self):
        rps = self.start_resq_compute('host1', sockets=2,
                                      domains=self.domains([(0, 1)]))
        flavor = self.resq_flavor(ways=3, vcpus=2)
        cells = set()
        for _ in range(2):
            server = self._create_server(flavor_id=flavor, networks='none')
            cells |= self.pinned_cells(server)[0]
            self.assertEqual([rps[0]], self.llc_provider(server))
        self.assertEqual({0, 1}, cells)
        self.assertEqual(6, self.llc_usage(rps[0]))

    def test_sriov_style_pci_request_decides_the_cell(self):
        from nova.tests.fixtures import libvirt as fakelibvirt
        from oslo_serialization import jsonutils
        dev = {'vendor_id': fakelibvirt.PCI_VEND_ID,
               'product_id': fakelibvirt.PCI_PROD_ID}
        self.flags(device_spec=[jsonutils.dumps(dev)],
                   alias=[jsonutils.dumps(dict(dev, name='nic'))],
                   group='pci')
        # The device sits in cell 1, whose cores are the second to be
        # taken by Nova's fit without PCI: the request decides.
        rps = self.start_resq_compute(
            'host1', sockets=2,
            pci_info=fakelibvirt.HostPCIDevicesInfo(num_pci=1, numa_node=1))
        flavor = self.resq_flavor(ways=3, vcpus=2, **{
            'pci_passthrough:alias': 'nic:1'})
        server = self._create_server(flavor_id=flavor, networks='none')
        self.assertEqual(({1}), self.pinned_cells(server)[0])
        self.assertEqual([rps[1]], self.llc_provider(server))

    def _agent(self, hostname):
        """resq-agent for ``hostname``.

        Real Placement, libvirt's test driver, a resctrl tree like the
        kernel's (2 caches of 11 ways).
        """
        from oslo_config import cfg

        from resq_agent import conf as agent_conf
        from resq_agent import discovery
        from resq_agent import enforcer
        from resq_agent import inventory
        from resq_agent import manager
        from resq_agent import virt
        from tests import base as tests_base
        from tests.fixtures import libvirt as libvirt_fixture
        from tests.fixtures import resctrl as resctrl_fixture
        from tests.fixtures import sysfs as sysfs_fixture

        conf = cfg.ConfigOpts()
        agent_conf.register_opts(conf)
        conf([], project='resq')
        tree = self.useFixture(resctrl_fixture.ResctrlTree(
            ways=11, domains=(0, 1), num_closids=8, kernel=True))
        sysfs = self.useFixture(sysfs_fixture.SysfsTree(
            domains={0: (0, 1, 2, 3), 1: (4, 5, 6, 7)}, ways=11,
            numa={0: (0, 1, 2, 3), 1: (4, 5, 6, 7)}))
        conf.set_override('resctrl_root', tree.root, 'resq_agent')
        self.useFixture(tests_base.PrivsepInProcess(conf))
        self.doms = self.useFixture(libvirt_fixture.NovaDomains())
        self.misplaced, self.resolved = {}, set()

        def hook(new, resolved):
            self.misplaced.update(new)
            self.resolved |= resolved

        return manager.AgentManager(
            conf, discovery.discover(tree.root, sysfs.root),
            enforcer.ResctrlEnforcer(tree.root),
            virt.Hypervisor(libvirt_fixture.URI),
            inventory.Inventory(self.client, hostname, 1),
            misplaced_hooks=[hook]), tree

    def test_forced_host_misplaced_then_repaired_by_the_agent(self):
        from resq_common import cbm
        from tests.fixtures import resctrl as resctrl_fixture

        rps = self.start_resq_compute('host1', sockets=2,
                                      domains=self.domains([(0,), (1,)]))
        # Cell 0's four dedicated cores go to a first instance.
        big = self._create_server(flavor_id=self.resq_flavor(ways=3,
                                                             vcpus=4),
                                  networks='none')
        self.assertEqual([rps[0]], self.llc_provider(big))
        # Someone holds every way of cache 1 for now.
        blocker = 'bbbbbbbb-0000-4000-8000-000000000001'
        body = {'allocations': {rps[1]: {'resources': {
            'CUSTOM_LLC_WAY': 9}}}, 'project_id': 'p', 'user_id': 'u',
            'consumer_generation': None}
        resp = self.client._adapter.put('/allocations/%s' % blocker,
                                        json=body, microversion='1.28')
        self.assertEqual(204, resp.status_code, resp.text)
        flavor = self.resq_flavor(ways=3, vcpus=2)
        # Without forcing, the filter finds no domain for cell 1's cores.
        server = self._create_server(flavor_id=flavor, networks='none',
                                     expected_state='ERROR')
        self.assertIn('No valid host', server['fault']['message'])
        # Forced (az:host skips every filter): ACTIVE, cores in cell 1,
        # ways from cache 0.
        server = self._create_server(flavor_id=flavor, networks='none',
                                     az='nova:host1')
        cells, inst = self.pinned_cells(server)
        self.assertEqual({1}, cells)
        self.assertEqual([rps[0]], self.llc_provider(server))

        mgr, tree = self._agent('host1')
        pinned = sorted(inst.numa_topology.cells[0].cpu_pinning.values())
        self.doms.add(server['id'], tuple(pinned), ways=3)
        summary = mgr.reconcile()
        # No room in cache 1: not partitioned, reported with the reason.
        self.assertEqual([server['id']], list(self.misplaced))
        self.assertIn('cannot move to domain 1', self.misplaced[server['id']])
        self.assertEqual([server['id']],
                         [r['uuid'] for r in summary['refused']])
        self.assertEqual([rps[0]], self.llc_provider(server))
        # Cache 1 frees up: the next pass moves the ways to the cores.
        resp = self.client._adapter.delete('/allocations/%s' % blocker,
                                           microversion='1.28')
        self.assertEqual(204, resp.status_code, resp.text)
        summary = mgr.reconcile()
        self.assertEqual([], summary['refused'])
        self.assertEqual({server['id']}, self.resolved)
        self.assertEqual([rps[1]], self.llc_provider(server))
        self.assertEqual({'CUSTOM_LLC_WAY': 3, 'CUSTOM_LLC_CLOS': 1},
                         self.client.get_allocations(server['id'])[rps[1]])
        mask = resctrl_fixture.instance_l3(tree.root, server['id'])[1]
        self.assertEqual(3, cbm.bits(mask))
