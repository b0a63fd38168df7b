"""Memory bandwidth: Placement's allocation drives the group's MB line.

The agent against a real Placement (in-process), libvirt's test driver
and the fake resctrl kernel (:class:`resq_fake.resctrl.Kernel`, which
applies and refuses MB values as x86 resctrl does) in each MBA mode.
"""

import fixtures
from placement.tests.functional.fixtures import placement as placement_fixture
from prometheus_client import parser

from resq_agent import discovery
from resq_agent import enforcer
from resq_agent import inventory
from resq_agent import manager
from resq_agent import metrics as agent_metrics
from resq_agent import virt
from resq_common import cache_domain
from resq_common import cbm
from resq_common.clients import placement as placement_client
from resq_common import mba
from resq_common import metrics
from resq_common import resctrl
from tests import base
from tests.fixtures import libvirt as libvirt_fixture
from tests.fixtures import resctrl as resctrl_fixture
from tests.fixtures import sysfs as sysfs_fixture

A = 'cccccccc-0000-0000-0000-00000000000a'
B = 'cccccccc-0000-0000-0000-00000000000b'
DUAL = {0: tuple(range(0, 8)), 1: tuple(range(8, 16))}
DOMAIN_MIBPS = 20000
DEFAULT_MIBPS = 2000
MODES = {
    # tree, A's 3000 MiB/s, the default group's 2000 MiB/s, no limit
    'mbps': (dict(resources={'MB': {}}, mba_mbps=True), 3000, 2000,
             mba.MBPS_MAX),
    # 3000 of 20000 is 15 %: 20 in steps of 10; 2000 is 10 %.
    'percent': (dict(resources={'MB': {'min_bandwidth': 10,
                                       'bandwidth_gran': 10}}), 20, 10,
                100),
    # 1/8 GB/s units: 3000 MiB/s is 25.2 of them, 2000 is 16.8.
    'amd': (dict(resources={'MB': {}}, vendor='amd'), 26, 17, 2048),
}


class AgentHostBase(base.TestCase):
    """An agent on a fake kernel tree, against a real Placement."""

    def setUp(self):
        super().setUp()
        self.useFixture(base.PrivsepInProcess(self.conf))
        self.logs = self.useFixture(fixtures.FakeLogger(level='INFO'))
        fixture = self.useFixture(placement_fixture.PlacementFixture())
        self.client = placement_client.PlacementClient.for_endpoint(
            fixture.endpoint)
        self.root = self.client.ensure_provider(
            '6f2b4c1e-0000-4000-8000-000000000001', 'cn1')['uuid']
        self.client.set_inventories(self.root, {'VCPU': {'total': 16}})
        self.sysfs = self.useFixture(sysfs_fixture.SysfsTree(
            domains=DUAL, ways=20))
        self.doms = self.useFixture(libvirt_fixture.NovaDomains())
        self.flags('resq_agent', memory_bandwidth_mibps=DOMAIN_MIBPS,
                   default_group_memory_bandwidth_mibps=DEFAULT_MIBPS)
        self.inv = inventory.Inventory(
            self.client, 'cn1', 1, mem_bw_mibps=DOMAIN_MIBPS,
            default_mem_bw_mibps=DEFAULT_MIBPS)

    def host(self, **tree):
        self.tree = self.useFixture(resctrl_fixture.ResctrlTree(
            ways=20, domains=(0, 1), kernel=True, **tree))
        self.flags('resq_agent', resctrl_root=self.tree.root)
        mgr = manager.AgentManager(
            self.conf, discovery.discover(self.tree.root, self.sysfs.root),
            enforcer.ResctrlEnforcer(self.tree.root),
            virt.Hypervisor(libvirt_fixture.URI), self.inv)
        mgr.reconcile()                     # reports the providers
        return mgr

    def allocate(self, consumer, domain_id, ways, mibps=None):
        rp = cache_domain.provider_uuid(self.root, domain_id)
        generation = self.client._adapter.get(
            '/allocations/%s' % consumer, microversion='1.28').json().get(
                'consumer_generation')
        resources = {'CUSTOM_LLC_WAY': ways}
        if mibps:
            resources['CUSTOM_MEM_BW_MIBPS'] = mibps
        body = {'allocations': {
            rp: {'resources': resources},
            self.root: {'resources': {'VCPU': 1}}},
            'project_id': 'p', 'user_id': 'u',
            'consumer_generation': generation}
        resp = self.client._adapter.put('/allocations/%s' % consumer,
                                        json=body, microversion='1.28')
        self.assertEqual(204, resp.status_code, resp.text)

    def schemata(self, uuid=None):
        group = (resctrl_fixture.instance_group(
            self.tree.root, uuid, self.doms.cpus[uuid]) if uuid else None)
        text = self.tree.read(*((group, 'schemata') if group
                                else ('schemata',)))
        return resctrl.parse_schemata(text)

    def mb(self, uuid=None):
        return {d: int(v) for d, v in self.schemata(uuid)['MB'].items()}


class AgentMbaTest(AgentHostBase):

    def test_each_mode_gives_the_allocation_its_mb_value(self):
        for mode, (tree, value, default, unlimited) in sorted(MODES.items()):
            mgr = self.host(**tree)
            self.assertEqual(mode, mgr.topology.mba_info.mode)
            self.doms.add(A, (1, 2))
            self.doms.add(B, (9,))
            self.allocate(A, 0, 4, 3000)
            self.allocate(B, 1, 2)            # ways, no bandwidth
            summary = mgr.reconcile()
            self.assertEqual([], summary['errors'], mode)
            self.assertEqual(4, cbm.bits(self.schemata(A)['L3'][0]))
            # A and B share class 1: A's value in its domain, no limit
            # in B's, where B asked for none.
            self.assertEqual({0: value, 1: unlimited}, self.mb(A), mode)
            self.assertEqual({0: default, 1: default}, self.mb(), mode)
            entry = [i for i in mgr.status()['instances']
                     if i['uuid'] == A][0]
            self.assertEqual((3000, value), (entry['mem_bw_mibps'],
                                             entry['mb']))
            self.assertEqual(mode, mgr.status()['mba'])
            # /metrics: the limit beside the MBM reading; B's group's
            # value is no limit, and B has no bandwidth limit.
            got = self.scrape(mgr)
            for uuid, dom, want in ((A, '0', value), (B, '1', unlimited)):
                self.assertEqual(want, got[(
                    'resq_instance_mb_schemata_value', frozenset({
                        ('server_uuid', uuid), ('domain', dom),
                        ('slo', ''), ('profile', ''), ('mode', mode)}))])
            limits = {k[1]: v for k, v in got.items() if k[0] == (
                'resq_instance_memory_bandwidth_limit_bytes_per_second')}
            self.assertEqual([mba.granted_mibps(
                value, mgr.topology.mba_info, DOMAIN_MIBPS) * 2 ** 20],
                list(limits.values()))
            self.assertIn(('server_uuid', A), list(limits)[0])
            self.assertGreaterEqual(list(limits.values())[0],
                                    3000 * 2 ** 20)
            for uuid in (A, B):
                self.doms.remove(uuid)
                self.client._adapter.delete('/allocations/%s' % uuid)
            mgr.reconcile()

    def scrape(self, mgr):
        out = {}
        for family in parser.text_string_to_metric_families(
                metrics.render(agent_metrics.AgentCollector(mgr))):
            for s in family.samples:
                out[(s.name, frozenset(s.labels.items()))] = s.value
        return out

    def test_reconcile_repairs_a_changed_mb_line(self):
        mgr = self.host(**MODES['percent'][0])
        self.doms.add(A, (1, 2))
        self.allocate(A, 0, 4, 3000)
        mgr.reconcile()
        self.assertEqual({0: 20, 1: 100}, self.mb(A))
        group = resctrl_fixture.instance_group(self.tree.root, A, (1, 2))
        path = self.tree.root + '/' + group + '/schemata'
        before = self.tree.read(group, 'schemata')
        self.assertIn('MB:0=20;1=100', before)
        with open(path, 'w') as f:        # someone else's write
            f.write(before.replace('MB:0=20;1=100', 'MB:0=100;1=10'))
        default = self.tree.read('schemata')
        self.assertIn('MB:0=10;1=10', default)
        with open(self.tree.root + '/schemata', 'w') as f:
            f.write(default.replace('MB:0=10;1=10', 'MB:0=100;1=100'))
        summary = mgr.reconcile()
        self.assertEqual([], summary['errors'])
        self.assertIn(group, summary['written'])
        self.assertEqual(before, self.tree.read(group, 'schemata'))
        self.assertEqual({0: 10, 1: 10}, self.mb())
        # Placement's allocation changes: so does the line.
        self.allocate(A, 0, 4, 10000)
        mgr.reconcile()
        self.assertEqual({0: 50, 1: 100}, self.mb(A))
        self.assertEqual(4, cbm.bits(self.schemata(A)['L3'][0]))

    def test_bandwidth_follows_the_ways_to_the_cores_domain(self):
        mgr = self.host(**MODES['mbps'][0])
        self.doms.add(A, (1,))
        self.allocate(A, 1, 2, 3000)          # cores in cache 0
        self.assertEqual([], mgr.reconcile()['refused'])
        self.assertEqual({cache_domain.provider_uuid(self.root, 0): {
            'CUSTOM_LLC_WAY': 2, 'CUSTOM_MEM_BW_MIBPS': 3000}}, {
                rp: res for rp, res in self.client.get_allocations(A).items()
                if rp != self.root})
        self.assertEqual({0: 3000, 1: mba.MBPS_MAX}, self.mb(A))

    def test_percent_without_the_domains_bandwidth_is_logged_once(self):
        mgr = self.host(**MODES['percent'][0])
        self.doms.add(A, (1, 2))
        self.allocate(A, 0, 4, 3000)
        # The option is unset on this agent (Placement still holds the
        # bandwidth another configuration offered).
        self.flags('resq_agent', memory_bandwidth_mibps=0)
        for _ in range(3):
            summary = mgr.reconcile()
        self.assertEqual([], summary['errors'])
        self.assertEqual(4, cbm.bits(self.schemata(A)['L3'][0]))
        self.assertEqual({0: 100, 1: 100}, self.mb(A))
        lines = [ln for ln in self.logs.output.splitlines()
                 if 'Instance %s holds 3000 MiB/s' % A in ln]
        self.assertEqual(1, len(lines), self.logs.output)
        self.assertIn('set [resq_agent] memory_bandwidth_mibps', lines[0])
        self.assertIn('Its LLC ways are enforced', lines[0])
        # The default group's limit cannot be a percentage either.
        self.assertEqual(1, self.logs.output.count(
            'The default resctrl group\'s memory bandwidth cannot be '
            'limited to 2000 MiB/s'))
        self.assertEqual({0: 100, 1: 100}, self.mb())

    def test_no_mba_enforces_the_ways_and_says_why_once(self):
        mgr = self.host()
        self.assertIsNone(mgr.topology.mba_info)
        self.assertNotIn('CUSTOM_MEM_BW_MIBPS', self.client.get_inventories(
            cache_domain.provider_uuid(self.root, 0)))
        # Bandwidth held from when the host had MBA (its kernel changed).
        rp = cache_domain.provider_uuid(self.root, 0)
        inv = self.client.get_inventories(rp)
        inv['CUSTOM_MEM_BW_MIBPS'] = {'total': DOMAIN_MIBPS}
        self.client.set_inventories(rp, inv)
        self.doms.add(A, (1, 2))
        self.allocate(A, 0, 4, 3000)
        before = self.tree.read('schemata')
        for _ in range(2):
            mgr.reconcile()
        self.assertEqual(4, cbm.bits(self.schemata(A)['L3'][0]))
        self.assertNotIn('MB', self.schemata(A))
        self.assertEqual(before.replace(
            before.split('\n')[0], self.tree.read('schemata').split(
                '\n')[0]), self.tree.read('schemata'))
        lines = [ln for ln in self.logs.output.splitlines()
                 if 'Instance %s holds 3000 MiB/s' % A in ln]
        self.assertEqual(1, len(lines), self.logs.output)
        self.assertIn('no info/MB', lines[0])
        self.assertIsNone(mgr.status()['mba'])
