from resq_agent import hostreport
from resq_agent import layout
from resq_common import cache_domain
from tests import base
from tests.unit import fake_resq


def domains(topology=None):
    return [cache_domain.CacheDomain(domain_id=0, ways=11, io_ways=2,
                                     default_group_ways=1, num_closids=16,
                                     cores=8, instance_ways=8),
            cache_domain.CacheDomain(domain_id=1, ways=11, io_ways=2,
                                     default_group_ways=1, num_closids=16,
                                     cores=8, instance_ways=6, lease_ways=2,
                                     lease_classes=2, lease_cores=2)]


def assign(uuid, domain, ways, cpus):
    return layout.Assignment(uuid, domain, ways, 0, tuple(cpus))


class BuildTest(base.TestCase):

    def test_totals_from_placement_used_from_the_layout(self):
        body = hostreport.build(domains(), [
            assign('a', 0, 3, [0, 1]), assign('b', 0, 2, [2]),
            assign('c', 1, 2, [8])], version='1.2.3')
        self.assertEqual('1.2.3', body['agent_version'])
        d0, d1 = body['domains']
        self.assertEqual({'id': 0, 'ways_total': 8, 'ways_used': 5,
                          'clos_total': 15, 'clos_used': 2,
                          'cores_total': 8, 'cores_used': 3,
                          'ways_leased': 0, 'cores_leased': 0}, d0)
        self.assertEqual((6, 2, 1, 1, 2, 2, 6),
                         (d1['ways_total'], d1['ways_used'], d1['clos_used'],
                          d1['cores_used'], d1['ways_leased'],
                          d1['cores_leased'], d1['cores_total']))


class ReporterTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.api = fake_resq.FakeResQ()
        self.now = 100.0
        self.reporter = hostreport.HostReporter(
            self.api, 'host1', domains, interval=60,
            clock=lambda: self.now, version='x')

    def sent(self):
        return [c for c in self.api.calls if c[0] == 'report_host']

    def test_changes_at_once_unchanged_as_a_heartbeat(self):
        self.assertTrue(self.reporter.after_apply(None, []))
        self.assertFalse(self.reporter.after_apply(None, []))
        self.assertTrue(self.reporter.after_apply(
            None, [assign('a', 0, 3, [0])]))
        self.now += 30
        self.assertFalse(self.reporter.heartbeat())
        self.now += 31
        self.assertTrue(self.reporter.heartbeat())
        self.assertEqual(3, len(self.sent()))
        self.assertEqual(3, self.api.hosts['host1']['domains'][0][
            'ways_used'])

    def test_unreachable_is_warned_once_and_retried(self):
        self.api.fail = self.api.down()
        with self.assertLogs('resq_agent.hostreport', 'WARNING') as logs:
            self.assertFalse(self.reporter.after_apply(None, []))
            self.assertFalse(self.reporter.heartbeat())
        self.assertEqual(1, len(logs.output))
        self.api.fail = None
        self.assertTrue(self.reporter.heartbeat())
        self.assertIn('host1', self.api.hosts)

    def test_nothing_before_the_first_pass(self):
        self.assertFalse(self.reporter.heartbeat())
        self.assertEqual([], self.api.calls)
