"""resq-agent's Prometheus metrics from a real manager on the fake kernel."""

import json
import os
import re
import urllib.request

from prometheus_client import parser

from resq_agent import metrics as agent_metrics
from resq_common import deadline
from resq_common import metrics
from tests.unit.resq_agent import test_manager

A = test_manager.A
B = test_manager.B


def samples(text):
    """``{(name, frozenset(labels)): value}`` of an exposition."""
    out = {}
    for family in parser.text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


class FakeOnDemand:
    """What the collector reads of the on-demand host."""

    def __init__(self):
        self.latency_of = {B: (180.0, 150.0)}
        self.violations = {B: 3}

    def status(self):
        return {}


class FakeOptimizer:
    """What the optimizer's collector reads."""

    figures = {'proposed': 2, 'applied': 1, 'hosts_freed': 1}
    last_plan = {'solver': {'seconds': 1.5}, 'hosts_used_after': 3,
                 'lower_bound': 3, 'gap_pct': 0.0, 'moves': [{}, {}]}


class AgentMetricsTest(test_manager.ManagerTestBase):

    def setUp(self):
        super().setUp()
        self.doms.add(A, (1,), ways=3, packet_bytes=64, extra_specs={
            'resq:slo': 'reserved', 'resq:profile': 'fw-64',
            'resq:throughput_mpps': '2.5'})
        self.doms.add(B, (9,), ways=2)
        self.mgr = self.make()
        self.mgr.reconcile()

    def scrape(self):
        return samples(metrics.render(agent_metrics.AgentCollector(
            self.mgr)))

    def test_domains_and_classes(self):
        got = self.scrape()
        dom0, dom1 = (frozenset({('domain', d)}) for d in ('0', '1'))
        self.assertEqual(20, got[('resq_cache_ways', dom0)])
        self.assertEqual(3, got[('resq_cache_ways_used', dom0)])
        self.assertEqual(2, got[('resq_cache_ways_used', dom1)])
        self.assertEqual(0, got[('resq_cache_ways_leased', dom0)])
        # 16 classes, the tree's foreign group holds one, the default
        # group one: 14 per domain, one used in each.
        self.assertEqual(14, got[('resq_clos', dom0)])
        self.assertEqual(1, got[('resq_clos_used', dom1)])

    def test_instances_carry_their_term(self):
        # Counters of A's own monitoring group in its shared class.
        base = os.path.join(self.tree.root, 'resq-cos1', 'mon_groups',
                            'resq-' + A, 'mon_data', 'mon_L3_00')
        with open(os.path.join(base, 'llc_occupancy'), 'w') as f:
            f.write('4194304\n')
        got = self.scrape()
        a = frozenset({('server_uuid', A), ('domain', '0'),
                       ('slo', 'reserved'), ('profile', 'fw-64')})
        self.assertEqual(3, got[('resq_instance_llc_ways', a)])
        self.assertEqual(4194304,
                         got[('resq_instance_llc_occupancy_bytes', a)])
        self.assertEqual(2.5e6, got[(
            'resq_instance_throughput_target_packets_per_second', a)])
        # The fixture's flavors say reserved; B's names no profile.
        b = frozenset({('server_uuid', B), ('domain', '1'),
                       ('slo', 'reserved'), ('profile', '')})
        self.assertEqual(2, got[('resq_instance_llc_ways', b)])
        # No term, no target.
        self.assertNotIn(('resq_instance_throughput_target_packets_per_'
                          'second', b), got)

    def test_ondemand_latency_and_violations(self):
        self.mgr.ondemand = FakeOnDemand()
        got = self.scrape()
        b = frozenset({('server_uuid', B), ('profile', '')})
        self.assertAlmostEqual(180e-6,
                               got[('resq_ondemand_latency_seconds', b)])
        self.assertAlmostEqual(
            150e-6, got[('resq_ondemand_latency_target_seconds', b)])
        self.assertEqual(3, got[('resq_ondemand_violations_total', b)])

    def test_errors_events_and_dependencies(self):
        self.mgr.enforcement_errors = 2
        self.mgr.events_dropped = 7
        deadline.outcomes('placement').record(deadline.HUNG, 'no answer')
        got = self.scrape()
        self.assertEqual(2, got[('resq_enforcement_errors_total',
                                 frozenset())])
        self.assertEqual(7, got[('resq_events_dropped_total', frozenset())])
        lv = frozenset({('dependency', 'libvirt')})
        pl = frozenset({('dependency', 'placement')})
        self.assertEqual(1, got[('resq_dependency_up', lv)])
        self.assertEqual(0, got[('resq_dependency_up', pl)])
        self.assertEqual(1, got[('resq_dependency_hung', pl)])
        self.assertEqual(1, got[('resq_remote_call_failures_total', pl)])

    def test_served_over_http(self):
        server = metrics.serve('127.0.0.1:0', agent_metrics.AgentCollector(
            self.mgr))
        self.addCleanup(server.shutdown)
        port = server.server_address[1]
        with urllib.request.urlopen('http://127.0.0.1:%d/metrics'
                                    % port, timeout=10) as resp:
            text = resp.read().decode()
        self.assertIn('resq_cache_ways{domain="0"} 20.0', text)

    def test_off_by_default_and_bad_addresses_named(self):
        self.assertEqual('', self.conf.resq_agent.metrics_listen)
        self.assertIsNone(metrics.serve('', None))
        for bad, why in (('9477', 'no host or no port'),
                         ('host:99999', 'the port must be 0 to 65535'),
                         ('[::1:9477', 'unclosed "["'),
                         ('host:９４７７', 'the port must be 0 to 65535')):
            exc = self.assertRaises(metrics.InvalidListen,
                                    metrics.parse_listen, bad)
            self.assertIn(why, str(exc))
        self.assertEqual(('::1', 9477), metrics.parse_listen('[::1]:9477'))

    def test_the_dashboard_asks_only_for_exported_metrics(self):
        # etc/grafana/resq-nova.json
        from resq_nova.optimizer import metrics as opt_metrics
        self.mgr.ondemand = FakeOnDemand()
        deadline.outcomes('placement').record(deadline.OK)
        names = set()
        for collector in (agent_metrics.AgentCollector(self.mgr),
                          opt_metrics.OptimizerCollector(FakeOptimizer())):
            # Families too: a rate needs two readings before it has a
            # sample.
            for family in parser.text_string_to_metric_families(
                    metrics.render(collector)):
                names.add(family.name)
                names |= {s.name for s in family.samples}
        path = os.path.join(os.path.dirname(__file__), '..', '..', '..',
                            'etc', 'grafana', 'resq-nova.json')
        with open(path) as f:
            dashboard = json.load(f)
        ids, asked = set(), set()
        for panel in dashboard['panels']:
            self.assertNotIn(panel['id'], ids)
            ids.add(panel['id'])
            for target in panel.get('targets', ()):
                asked |= set(re.findall(r'\bresq_[a-z_]+', target['expr']))
        self.assertEqual(set(), asked - names)
        # Ways and classes per host and domain, terms, plans: all there.
        for wanted in ('resq_cache_ways_used', 'resq_clos_used',
                       'resq_ondemand_latency_seconds',
                       'resq_instance_throughput_target_packets_per_second',
                       'resq_optimizer_plans_total'):
            self.assertIn(wanted, asked)
