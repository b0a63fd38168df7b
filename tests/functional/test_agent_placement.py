"""The agent against a real Placement (in-process) and libvirt's test driver.

Inventory reporting, and allocations driving enforcement.
"""

import os
import shutil
import threading

import fixtures
from placement.tests.functional.fixtures import placement as placement_fixture

from resq_agent import discovery
from resq_agent import enforcer
from resq_agent import inventory
from resq_agent import manager
from resq_agent import virt
from resq_common import cache_domain
from resq_common import cbm
from resq_common.clients import placement as placement_client
from resq_common import resctrl
from tests import base
from tests.fixtures import hung as hung_fixture
from tests.fixtures import libvirt as libvirt_fixture
from tests.fixtures import resctrl as resctrl_fixture
from tests.fixtures import sysfs as sysfs_fixture

A = 'cccccccc-0000-0000-0000-00000000000a'
B = 'cccccccc-0000-0000-0000-00000000000b'
DUAL = {0: tuple(range(0, 8)), 1: tuple(range(8, 16))}


class AgentPlacementTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(base.PrivsepInProcess(self.conf))
        self.logs = self.useFixture(fixtures.FakeLogger(level='INFO'))
        fixture = self.useFixture(placement_fixture.PlacementFixture())
        self.client = placement_client.PlacementClient.for_endpoint(
            fixture.endpoint)
        # Nova's resource tracker made the compute node provider first.
        self.root = self.client.ensure_provider(
            '6f2b4c1e-0000-4000-8000-000000000001', 'cn1')['uuid']
        self.nova_inventory({'VCPU': {'total': 16}})
        self.sysfs = self.useFixture(sysfs_fixture.SysfsTree(
            domains=DUAL, ways=20))
        self.tree = self.useFixture(resctrl_fixture.ResctrlTree(
            ways=20, domains=(0, 1)))
        self.flags('resq_agent', resctrl_root=self.tree.root)
        self.doms = self.useFixture(libvirt_fixture.NovaDomains())
        self.inv = inventory.Inventory(self.client, 'cn1', 1)

    def l3(self, uuid):
        """The masks of the group enforcing an instance (by its CPUs)."""
        return resctrl_fixture.instance_l3(self.tree.root, uuid,
                                           self.doms.cpus[uuid])

    def nova_inventory(self, inv):
        self.client.set_inventories(self.root, inv)

    def topology(self, **kw):
        return discovery.discover(self.tree.root, self.sysfs.root, **kw)

    def allocate(self, consumer, domain_id, ways):
        rp = cache_domain.provider_uuid(self.root, domain_id)
        generation = self.client._adapter.get(
            '/allocations/%s' % consumer, microversion='1.28').json().get(
                'consumer_generation')
        body = {'allocations': {
            rp: {'resources': {'CUSTOM_LLC_WAY': ways}},
            self.root: {'resources': {'VCPU': 1}}},
            'project_id': 'p', 'user_id': 'u',
            'consumer_generation': generation}
        resp = self.client._adapter.put('/allocations/%s' % consumer,
                                        json=body, microversion='1.28')
        self.assertEqual(204, resp.status_code, resp.text)

    def test_report_twice_then_a_domain_change(self):
        topo = self.topology()
        first = self.inv.report(topo)
        rp1 = first[1]
        self.assertEqual(cache_domain.provider_uuid(self.root, 1), rp1)
        generation = self.client.get_provider(rp1)['generation']
        # Nova's periodic update of the compute node in between.
        self.nova_inventory({'VCPU': {'total': 16},
                             'MEMORY_MB': {'total': 4096}})
        self.assertEqual(first, self.inv.report(topo))
        self.assertEqual(generation,
                         self.client.get_provider(rp1)['generation'])
        inv = self.client.get_inventories(rp1)['CUSTOM_LLC_WAY']
        self.assertEqual((20, 3), (inv['total'], inv['reserved']))
        self.assertIn('CUSTOM_RESQ_LLC_WAYS_20', self.client.get_traits(rp1))
        self.assertEqual(4096, self.client.get_inventories(
            self.root)['MEMORY_MB']['total'])
        # The host comes back with 4 DDIO ways configured and one socket.
        sysfs = self.useFixture(sysfs_fixture.SysfsTree(
            domains={0: DUAL[0]}, ways=20))
        tree = self.useFixture(resctrl_fixture.ResctrlTree(ways=20))
        changed = discovery.discover(tree.root, sysfs.root, ddio_ways=4)
        self.inv.report(changed)
        self.assertEqual(5, self.client.get_inventories(first[0])[
            'CUSTOM_LLC_WAY']['reserved'])
        self.assertEqual({}, self.client.get_inventories(rp1))

    def make(self):
        return manager.AgentManager(
            self.conf, self.topology(),
            enforcer.ResctrlEnforcer(self.tree.root),
            virt.Hypervisor(libvirt_fixture.URI), self.inv)

    def test_allocations_drive_enforcement(self):
        mgr = self.make()
        mgr.reconcile()                      # reports the providers
        self.doms.add(A, (1, 2), ways=99)    # the flavor hint is ignored
        self.doms.add(B, (9,), ways=3)
        self.allocate(A, 0, 5)
        self.allocate(B, 1, 3)
        summary = mgr.reconcile()
        self.assertEqual([], summary['refused'])
        rt = resctrl.Resctrl(self.tree.root)
        self.assertEqual(5, cbm.bits(self.l3(A)[0]))
        self.assertEqual(3, cbm.bits(self.l3(B)[1]))
        self.assertTrue(mgr.status()['placement_reachable'])

        # Placement goes away: nothing is lost, the log says why.
        up = self.inv.client
        self.inv.client = placement_client.PlacementClient.for_endpoint(
            'http://127.0.0.1:9/placement')
        summary = mgr.reconcile()
        self.assertEqual([], summary['removed'])
        # A (domain 0) and B (domain 1) share the first class.
        self.assertEqual(['resq-cos1'], rt.owned_groups())
        self.assertEqual('1,2,9\n', self.tree.read('resq-cos1',
                                                   'cpus_list'))
        self.assertIn('Placement is unreachable', self.logs.output)
        self.assertFalse(mgr.status()['placement_reachable'])
        # ... and comes back: the next pass picks up the new allocation.
        self.inv.client = up
        self.allocate(B, 1, 6)
        mgr.reconcile()
        self.assertEqual(6, cbm.bits(self.l3(B)[1]))

    def test_hung_placement_blocks_neither_status_nor_enforcement(self):
        mgr = self.make()
        mgr.reconcile()
        self.doms.add(A, (1, 2), ways=2)     # the flavor says 2 ways
        self.allocate(A, 0, 5)               # Placement says 5
        mgr.reconcile()
        self.assertEqual(5, cbm.bits(self.l3(A)[0]))
        # Placement now accepts connections and never answers.
        hung = self.useFixture(hung_fixture.HungService())
        self.inv.client = placement_client.PlacementClient.for_endpoint(
            hung.endpoint)
        result = {}
        thread = threading.Thread(
            target=lambda: result.update(mgr.reconcile()))
        thread.start()
        self.assertTrue(hung.requested.wait(120))
        # The pass waits for Placement; the state lock is free meanwhile.
        status = mgr.status()
        self.assertEqual([(A, 5)], [(i['uuid'], i['ways'])
                                    for i in status['instances']])
        hung.release()
        thread.join()
        self.assertIn('Placement is unreachable',
                      result['placement_error'])
        # The last answer is still enforced, not the flavor's 2 ways.
        self.assertEqual(5, cbm.bits(self.l3(A)[0]))
        self.assertEqual([], result['removed'])
        self.assertFalse(mgr.status()['placement_reachable'])
        # One line in the log for the whole pass, without a traceback.
        lines = [ln for ln in self.logs.output.splitlines()
                 if 'Placement is unreachable' in ln]
        self.assertEqual(1, len(lines), self.logs.output)
        self.assertNotIn('Traceback', self.logs.output)
        # A second pass with Placement still hung keeps the last answer.
        hung2 = self.useFixture(hung_fixture.HungService())
        self.inv.client = placement_client.PlacementClient.for_endpoint(
            hung2.endpoint, timeout=1)
        summary = mgr.reconcile()
        self.assertIn('timed out', summary['placement_error'])
        self.assertEqual(5, cbm.bits(self.l3(A)[0]))

    def llc_total(self, domain_id):
        rp = cache_domain.provider_uuid(self.root, domain_id)
        try:
            inv = self.client.get_inventories(rp)
        except placement_client.ProviderNotFound:
            return None
        return inv.get('CUSTOM_LLC_WAY', {}).get('total')

    def rediscovering(self, root):
        self.flags('resq_agent', resctrl_root=root,
                   sysfs_root=self.sysfs.root)
        return manager.AgentManager(
            self.conf, discovery.discover_from_conf(self.conf),
            enforcer.ResctrlEnforcer(root),
            virt.Hypervisor(libvirt_fixture.URI), self.inv,
            discover=lambda: discovery.discover_from_conf(self.conf,
                                                          quiet=True))

    def test_resctrl_mounted_after_start_is_rediscovered(self):
        mnt = os.path.join(self.tmp, 'mnt')
        mgr = self.rediscovering(mnt)
        self.doms.add(A, (1, 2), ways=3)
        mgr.reconcile()
        self.assertIsNone(self.llc_total(0))
        self.assertFalse(mgr.status()['resctrl_available'])
        # resctrl gets mounted: the next pass finds it and reports it.
        shutil.copytree(self.tree.root, mnt)
        mgr.reconcile()
        self.assertEqual((20, 20), (self.llc_total(0), self.llc_total(1)))
        self.assertTrue(mgr.status()['resctrl_available'])
        self.assertIn('Cache topology changed', self.logs.output)
        self.allocate(A, 0, 3)
        mgr.reconcile()
        # A copied tree: no monitoring groups; A is found by its CPUs.
        self.assertEqual(3, cbm.bits(
            resctrl_fixture.instance_l3(mnt, A, cpus=(1, 2))[0]))

    def test_transiently_malformed_schemata(self):
        path = os.path.join(self.tree.root, 'schemata')

        def schemata(text):
            with open(path, 'w') as f:
                f.write(text)

        schemata('L3 garbled\n')
        mgr = self.rediscovering(self.tree.root)
        mgr.reconcile()
        self.assertIsNone(self.llc_total(0))
        # Readable again: rediscovered and reported without a restart.
        schemata(self.tree.default_schemata)
        mgr.reconcile()
        self.assertEqual(20, self.llc_total(0))
        # Garbled for a moment while running: the inventory stays.
        schemata('L3 garbled\n')
        mgr.reconcile()
        self.assertEqual(20, self.llc_total(0))
        self.assertTrue(mgr.status()['resctrl_available'])
        self.assertIn('keeping the cache topology found before',
                      self.logs.output)

    def put_allocation(self, consumer, rps):
        """Give ``consumer`` ``{provider uuid: {rc: amount}}``."""
        generation = self.client._adapter.get(
            '/allocations/%s' % consumer, microversion='1.28').json().get(
                'consumer_generation')
        body = {'allocations': {rp: {'resources': res}
                                for rp, res in rps.items()},
                'project_id': 'p', 'user_id': 'u',
                'consumer_generation': generation}
        resp = self.client._adapter.put('/allocations/%s' % consumer,
                                        json=body, microversion='1.28')
        self.assertEqual(204, resp.status_code, resp.text)

    def test_live_migration_source_keeps_its_partition(self):
        mgr = self.make()
        mgr.reconcile()
        # The destination host and its cache domains.
        cn2 = self.client.ensure_provider(
            '6f2b4c1e-0000-4000-8000-000000000002', 'cn2')['uuid']
        self.client.set_inventories(cn2, {'VCPU': {'total': 16}})
        inventory.Inventory(self.client, 'cn2', 1).report(self.topology())
        self.doms.add(A, (1, 2), ways=2)     # the flavor says 2 ways
        self.allocate(A, 0, 5)
        mgr.reconcile()
        rt = resctrl.Resctrl(self.tree.root)
        mask = self.l3(A)[0]
        self.assertEqual(5, cbm.bits(mask))
        # Live migration in flight, as Nova does it: the source allocation
        # moves to the migration record, the instance's to the destination.
        migration = 'aaaaaaaa-0000-4000-8000-00000000000f'
        self.put_allocation(migration, {
            cache_domain.provider_uuid(self.root, 0): {'CUSTOM_LLC_WAY': 5},
            self.root: {'VCPU': 1}})
        self.put_allocation(A, {
            cache_domain.provider_uuid(cn2, 0): {'CUSTOM_LLC_WAY': 5},
            cn2: {'VCPU': 1}})
        # Still running here: the partition stays, mask untouched, also
        # for an agent that starts during the migration (the flavor's
        # ways in the domain of its pinned CPUs then).
        summary = mgr.reconcile()
        self.assertEqual([], summary['removed'])
        self.assertEqual(mask, self.l3(A)[0])
        restarted = self.make()
        self.assertEqual([], restarted.reconcile()['removed'])
        self.assertEqual(2, cbm.bits(self.l3(A)[0]))
        # The migration ends: the domain stops here, the group goes.
        self.doms.remove(A)
        mgr.reconcile()
        self.assertEqual([], rt.owned_groups())

    def moved_away(self, mgr):
        """A's ways on cn2 only, while A runs here (as test above)."""
        mgr.reconcile()
        cn2 = self.client.ensure_provider(
            '6f2b4c1e-0000-4000-8000-000000000002', 'cn2')['uuid']
        self.client.set_inventories(cn2, {'VCPU': {'total': 16}})
        inventory.Inventory(self.client, 'cn2', 1).report(self.topology())
        self.doms.add(A, (1, 2), ways=2)
        self.allocate(A, 0, 5)
        mgr.reconcile()
        self.assertEqual(5, cbm.bits(self.l3(A)[0]))
        self.put_allocation(A, {
            cache_domain.provider_uuid(cn2, 0): {'CUSTOM_LLC_WAY': 5},
            cn2: {'VCPU': 1}})

    def test_a_domain_nova_left_behind_is_unpartitioned(self):
        # A start that failed here under a libvirtd restart, rescheduled:
        # the domain runs on, Placement holds its ways on another host,
        # and no migration job runs on it.
        now = [1000.0]
        mgr = self.make()
        mgr._clock = lambda: now[0]
        self.moved_away(mgr)
        mgr.hypervisor.has_job = lambda uuid: False
        # Within the grace (a migration's allocations move before its
        # job starts) it keeps its partition.
        mgr.reconcile()
        now[0] += manager.MOVING_OUT_GRACE_S - 1
        mgr.reconcile()
        self.assertEqual(5, cbm.bits(self.l3(A)[0]))
        now[0] += 2
        summary = mgr.reconcile()
        self.assertEqual([], resctrl.Resctrl(self.tree.root).owned_groups())
        self.assertTrue(summary['removed'])
        self.assertIn('a domain Nova left behind', self.logs.output)
        # Its ways come back here (an operator healed the allocation):
        # partitioned again.
        self.allocate(A, 0, 3)
        mgr.reconcile()
        self.assertEqual(3, cbm.bits(self.l3(A)[0]))

    def test_a_migration_job_keeps_the_source_partitioned(self):
        now = [1000.0]
        mgr = self.make()
        mgr._clock = lambda: now[0]
        self.moved_away(mgr)
        mgr.hypervisor.has_job = lambda uuid: True
        now[0] += 10 * manager.MOVING_OUT_GRACE_S
        mgr.reconcile()
        self.assertEqual(5, cbm.bits(self.l3(A)[0]))
        # libvirt cannot say: the partition stays too.
        mgr.hypervisor.has_job = lambda uuid: None
        now[0] += 10 * manager.MOVING_OUT_GRACE_S
        mgr.reconcile()
        self.assertEqual(5, cbm.bits(self.l3(A)[0]))

    def test_allocation_in_the_wrong_domain_follows_the_cores(self):
        mgr = self.make()
        seen = []
        mgr.misplaced_hooks.append(lambda new, gone: seen.append(
            (dict(new), set(gone))))
        mgr.reconcile()
        # Cores in cache 0 (CPU 1), ways in cache 1: moved to cache 0.
        self.doms.add(A, (1,), ways=2)
        self.allocate(A, 1, 2)
        summary = mgr.reconcile()
        self.assertEqual([], summary['refused'])
        self.assertEqual({cache_domain.provider_uuid(self.root, 0): {
            'CUSTOM_LLC_WAY': 2}}, {
                rp: res for rp, res in self.client.get_allocations(A).items()
                if rp != self.root})
        rt = resctrl.Resctrl(self.tree.root)
        self.assertEqual(2, cbm.bits(self.l3(A)[0]))
        self.assertEqual([], seen)
        # Cache 0 full (17 usable ways taken by B): back in cache 1, the
        # ways cannot follow; not partitioned, and reported once.
        self.allocate(A, 1, 2)
        self.allocate(B, 0, 17)
        summary = mgr.reconcile()
        self.assertIn('are not all in cache domain 1',
                      summary['refused'][0]['reason'])
        self.assertEqual([], rt.owned_groups())
        self.assertEqual(1, len(seen))
        self.assertIn('cannot move to domain 0', seen[0][0][A])
        mgr.reconcile()
        self.assertEqual(1, len(seen))

    def test_non_resq_instance_is_ignored(self):
        mgr = self.make()
        mgr.reconcile()
        self.doms.add(A, (1,))
        self.assertEqual(0, mgr.reconcile()['instances'])
