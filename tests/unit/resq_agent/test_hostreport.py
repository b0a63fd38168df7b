import random

from resq_agent import hostreport
from resq_agent import layout
from resq_common import cache_domain
from resq_common.clients import resq as resq_client
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


class Middle(random.Random):
    """No jitter: every draw is the middle of its range."""

    def uniform(self, a, b):
        return (a + b) / 2.0


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
            clock=lambda: self.now, version='x', rng=Middle())

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
        # Unchanged and due: the heartbeat, not the report.
        self.assertTrue(self.reporter.heartbeat())
        self.assertEqual(2, len(self.sent()))
        self.assertEqual(1, self.api.beats)
        self.assertEqual(3, self.api.hosts['host1']['domains'][0][
            'ways_used'])

    def test_unreachable_is_warned_once_and_retried(self):
        self.api.fail = self.api.down()
        with self.assertLogs('resq_agent.hostreport', 'WARNING') as logs:
            self.assertFalse(self.reporter.after_apply(None, []))
            self.assertFalse(self.reporter.heartbeat())
        self.assertEqual(1, len(logs.output))
        self.assertIn('retrying in 60 s', logs.output[0])
        self.api.fail = None
        # Backing off: nothing is sent before the wait ends.
        self.now += 59
        self.assertFalse(self.reporter.heartbeat())
        self.now += 1
        with self.assertLogs('resq_agent.hostreport', 'INFO') as logs:
            self.assertTrue(self.reporter.heartbeat())
        self.assertIn('to resq-api again', logs.output[0])
        self.assertIn('host1', self.api.hosts)

    def test_nothing_before_the_first_pass(self):
        self.assertFalse(self.reporter.heartbeat())
        self.assertEqual([], self.api.calls)


UUID_A = '0a0a0a0a-0000-4000-8000-00000000000a'
UUID_B = '0b0b0b0b-0000-4000-8000-00000000000b'
UUID_C = '0c0c0c0c-0000-4000-8000-00000000000c'


def reading(occupancy, rate=None):
    """What the monitor gives for an instance (and the manager keeps)."""
    return {'llc_occupancy_bytes': occupancy,
            'mbm_total_bytes_per_s': rate, 'mbm_local_bytes_per_s': None}


class InstancesTest(base.TestCase):

    def test_a_server_per_assignment_with_its_readings(self):
        body = hostreport.build(domains(), [
            assign(UUID_B, 1, 2, [8]), assign(UUID_A, 0, 3, [0, 1]),
            assign(UUID_C, 0, 2, [2])], usage={
                UUID_A: reading(3 << 20, 1.5e9), UUID_B: reading(None),
                'gone': reading(1)})
        self.assertEqual([
            {'server_uuid': UUID_A, 'domain': 0, 'ways': 3,
             'llc_occupancy_bytes': 3 << 20,
             'mbm_total_bytes_per_s': 1.5e9},
            {'server_uuid': UUID_B, 'domain': 1, 'ways': 2,
             'llc_occupancy_bytes': None, 'mbm_total_bytes_per_s': None},
            {'server_uuid': UUID_C, 'domain': 0, 'ways': 2,
             'llc_occupancy_bytes': None, 'mbm_total_bytes_per_s': None},
        ], body['instances'])
        # The domains count the same assignments.
        self.assertEqual([5, 2], [d['ways_used'] for d in body['domains']])

    def test_no_usage_no_readings(self):
        body = hostreport.build(domains(), [assign(UUID_A, 0, 3, [0])])
        (inst,) = body['instances']
        self.assertIsNone(inst['llc_occupancy_bytes'])
        self.assertIsNone(inst['mbm_total_bytes_per_s'])
        self.assertEqual([], hostreport.build(domains(), [])['instances'])

    def test_readings_that_are_not_measurements_are_none(self):
        for bad in (-1, float('nan'), float('inf'), True, 'x', 2 ** 64):
            (inst,) = hostreport.build(
                domains(), [assign(UUID_A, 0, 3, [0])],
                usage={UUID_A: reading(bad, bad)})['instances']
            self.assertEqual((None, None), (inst['llc_occupancy_bytes'],
                                            inst['mbm_total_bytes_per_s']),
                             bad)

    def test_a_server_in_a_domain_not_reported_is_left_out(self):
        body = hostreport.build(domains(), [
            assign(UUID_A, 0, 3, [0]), assign(UUID_B, 7, 2, [30]),
            assign(UUID_A, 1, 1, [9])])
        self.assertEqual([(UUID_A, 0)], [(i['server_uuid'], i['domain'])
                                         for i in body['instances']])

    def test_placement_leaves_out_what_is_measured(self):
        one = hostreport.build(domains(), [assign(UUID_A, 0, 3, [0])],
                               usage={UUID_A: reading(1, 2.0)})
        two = hostreport.build(domains(), [assign(UUID_A, 0, 3, [0])],
                               usage={UUID_A: reading(5, 9.0)})
        self.assertNotEqual(one, two)
        self.assertEqual(hostreport.placement(one),
                         hostreport.placement(two))
        moved = hostreport.build(domains(), [assign(UUID_A, 1, 3, [8])])
        self.assertNotEqual(hostreport.placement(one),
                            hostreport.placement(moved))
        self.assertIsNone(hostreport.placement(None))
        self.assertNotIn('instances', hostreport.without_instances(one))


class OldResQ(fake_resq.FakeResQ):
    """A resq-api that refuses reports with ``instances`` while ``old``."""

    def __init__(self, status=406):
        super().__init__()
        self.status = status
        self.old = True

    def heartbeat_host(self, hostname):
        if self.old:
            self.calls.append(('heartbeat_host_1.2', hostname))
            raise resq_client.ResQAPIError(
                method='PUT', url='/hosts/%s/heartbeat' % hostname,
                status=406, reason='406 resq-api does not serve version 1.2')
        return super().heartbeat_host(hostname)

    def report_host(self, hostname, report):
        if self.old and 'instances' in report:
            self.calls.append(('report_host_1.1', hostname))
            raise resq_client.ResQAPIError(
                method='PUT', url='/hosts/%s' % hostname, status=self.status,
                reason='%d resq-api does not serve version 1.1'
                % self.status)
        return super().report_host(hostname, report)


class ReporterBase(base.TestCase):

    def setUp(self):
        super().setUp()
        self.api = fake_resq.FakeResQ()
        self.now = 100.0
        self.usage = {UUID_A: reading(1 << 20, 10.0)}
        self.reporter = self.make(60)

    def make(self, interval, api=None):
        return hostreport.HostReporter(
            api or self.api, 'host1', domains, interval=interval,
            clock=lambda: self.now, version='x',
            usage=lambda: dict(self.usage), rng=Middle())

    def sent(self, api=None):
        return [c for c in (api or self.api).calls
                if c[0].startswith('report_host')]

    def occupancy(self, api=None):
        return [i['llc_occupancy_bytes'] for i in (api or self.api).hosts[
            'host1']['instances']]


class ReadingsTest(ReporterBase):
    """Occupancy and bandwidth wait; placement does not."""

    def test_occupancy_alone_waits_for_the_interval(self):
        a = [assign(UUID_A, 0, 3, [0])]
        self.assertTrue(self.reporter.after_apply(None, a))
        self.assertEqual([1 << 20], self.occupancy())
        self.usage = {UUID_A: reading(2 << 20, 20.0)}
        self.assertFalse(self.reporter.after_apply(None, a))
        start = self.now
        self.now += 30
        self.assertFalse(self.reporter.heartbeat())
        self.assertEqual([1 << 20], self.occupancy())
        # Due: heartbeats, the readings wait ...
        full_after = hostreport.FULL_EVERY * 60 * (1 - hostreport.JITTER)
        beats = 0
        while self.now + 60 - start < full_after:
            self.now += 60
            self.assertTrue(self.reporter.heartbeat())
            beats += 1
        self.assertEqual([1 << 20], self.occupancy())
        self.assertEqual(1, len(self.sent()))
        self.assertEqual(beats, self.api.beats)
        # ... until the last full report is FULL_EVERY intervals old (less
        # the jitter): then the latest readings go out.
        self.now += 60
        self.usage = {UUID_A: reading(3 << 20, 30.0)}
        self.assertTrue(self.reporter.heartbeat())
        self.assertEqual([3 << 20], self.occupancy())
        self.assertEqual(2, len(self.sent()))
        self.assertEqual(beats, self.api.beats)

    def test_placement_changes_go_at_once_with_the_readings(self):
        self.assertTrue(self.reporter.after_apply(
            None, [assign(UUID_A, 0, 3, [0])]))
        self.usage[UUID_B] = reading(7 << 20)
        self.now += 1
        # A new server, then the same server with other ways.
        self.assertTrue(self.reporter.after_apply(
            None, [assign(UUID_A, 0, 3, [0]), assign(UUID_B, 0, 2, [1])]))
        self.assertEqual([1 << 20, 7 << 20], self.occupancy())
        self.assertTrue(self.reporter.after_apply(
            None, [assign(UUID_A, 0, 4, [0]), assign(UUID_B, 0, 2, [1])]))
        self.assertEqual([4, 2], [i['ways'] for i in self.api.hosts[
            'host1']['instances']])
        self.assertEqual(3, len(self.sent()))

    def test_interval_zero_sends_changes_only(self):
        reporter = self.make(0)
        a = [assign(UUID_A, 0, 3, [0])]
        self.assertTrue(reporter.after_apply(None, a))
        self.usage = {UUID_A: reading(9 << 20)}
        self.now += 3600
        self.assertFalse(reporter.after_apply(None, a))
        self.assertFalse(reporter.heartbeat())
        self.assertEqual([1 << 20], self.occupancy())
        self.assertTrue(reporter.after_apply(None, []))
        self.assertEqual([], self.api.hosts['host1']['instances'])

    def test_without_usage_the_readings_are_none(self):
        reporter = hostreport.HostReporter(self.api, 'host1', domains,
                                           clock=lambda: self.now,
                                           version='x')
        self.assertTrue(reporter.after_apply(None, [assign(UUID_A, 0, 3,
                                                           [0])]))
        self.assertEqual([None], self.occupancy())


class FallbackTest(ReporterBase):
    """A resq-api older than 1.1 gets the report without its servers."""

    def check_falls_back(self, status):
        api = OldResQ(status)
        reporter = self.make(60, api)
        a = [assign(UUID_A, 0, 3, [0])]
        with self.assertLogs('resq_agent.hostreport', 'WARNING') as logs:
            self.assertTrue(reporter.after_apply(None, a))
            # A change: 1.0 at once, without asking 1.1 again.
            self.assertTrue(reporter.after_apply(
                None, a + [assign(UUID_B, 0, 2, [1])]))
            # Due: 1.1 asked again, refused again, no second warning.
            self.now += 60
            self.assertTrue(reporter.heartbeat())
        self.assertEqual(1, len(logs.output))
        self.assertIn('microversion 1.1', logs.output[0])
        self.assertIn('%d resq-api does not serve' % status, logs.output[0])
        self.assertEqual(['report_host_1.1', 'report_host', 'report_host',
                          'report_host_1.1', 'report_host'],
                         [c[0] for c in self.sent(api)])
        self.assertEqual({'domains', 'agent_version'},
                         set(api.hosts['host1']))
        self.assertEqual(5, api.hosts['host1']['domains'][0]['ways_used'])
        # resq-api upgraded: the next heartbeat sends the servers.
        api.old = False
        self.now += 60
        with self.assertLogs('resq_agent.hostreport', 'INFO') as logs:
            self.assertTrue(reporter.heartbeat())
        self.assertIn('again (microversion 1.1)', logs.output[0])
        self.assertEqual([1 << 20, None], self.occupancy(api))
        # Refused again later: a new outage, a new warning.
        api.old = True
        self.now += 60
        with self.assertLogs('resq_agent.hostreport', 'WARNING') as logs:
            self.assertTrue(reporter.heartbeat())
        self.assertEqual(1, len(logs.output))

    def test_406_falls_back_to_1_0(self):
        self.check_falls_back(406)

    def test_400_falls_back_to_1_0(self):
        self.check_falls_back(400)

    def test_interval_zero_asks_again_after_retry_s(self):
        api = OldResQ()
        reporter = self.make(0, api)
        self.assertTrue(reporter.after_apply(None, []))
        self.now += hostreport.RETRY_S - 1
        self.assertTrue(reporter.after_apply(None, [assign(UUID_A, 0, 3,
                                                           [0])]))
        self.now += 1
        self.assertTrue(reporter.after_apply(None, []))
        self.assertEqual(['report_host_1.1', 'report_host', 'report_host',
                          'report_host_1.1', 'report_host'],
                         [c[0] for c in self.sent(api)])

    def test_other_errors_are_failures_not_fallbacks(self):
        api = OldResQ(500)
        reporter = self.make(60, api)
        with self.assertLogs('resq_agent.hostreport', 'WARNING') as logs:
            self.assertFalse(reporter.after_apply(None, []))
        self.assertIn('Cannot report the cache domains', logs.output[0])
        self.assertEqual(['report_host_1.1'], [c[0] for c in self.sent(api)])
        self.assertNotIn('host1', api.hosts)

    def test_unreachable_while_falling_back(self):
        api = OldResQ()
        reporter = self.make(60, api)
        self.assertTrue(reporter.after_apply(None, []))
        api.old = False
        api.fail = api.down()
        self.now += 60
        with self.assertLogs('resq_agent.hostreport', 'WARNING') as logs:
            self.assertFalse(reporter.heartbeat())
        self.assertIn('Cannot report the cache domains', logs.output[0])
        api.fail = None
        self.now += 60
        self.assertTrue(reporter.heartbeat())
        self.assertIn('instances', api.hosts['host1'])


class HeartbeatTest(ReporterBase):
    """Unchanged reports are heartbeats (1.2); see the module."""

    def setUp(self):
        super().setUp()
        self.a = [assign(UUID_A, 0, 3, [0])]
        self.assertTrue(self.reporter.after_apply(None, self.a))

    def kinds(self, api=None):
        return [c[0] for c in (api or self.api).calls]

    def test_a_host_resq_api_does_not_know_gets_the_full_report(self):
        # resq-api's database was replaced: no report of the host.
        del self.api.hosts['host1']
        self.now += 60
        with self.assertLogs('resq_agent.hostreport', 'INFO') as logs:
            self.assertTrue(self.reporter.heartbeat())
        self.assertIn('has no report of host1', logs.output[0])
        self.assertEqual(['report_host', 'heartbeat_host', 'report_host'],
                         self.kinds())
        self.assertIn('host1', self.api.hosts)
        self.now += 60
        self.assertTrue(self.reporter.heartbeat())
        self.assertEqual('heartbeat_host', self.kinds()[-1])

    def check_older_resq_api(self, status, code=None):
        api = fake_resq.FakeResQ()
        refused = resq_client.NotFound if status == 404 else \
            resq_client.ResQAPIError

        def old(hostname):
            api.calls.append(('heartbeat_host', hostname))
            raise refused(method='PUT', url='/hosts/host1/heartbeat',
                          reason='%d' % status, status=status, code=code)

        api.heartbeat_host = old
        reporter = self.make(60, api)
        self.assertTrue(reporter.after_apply(None, self.a))
        self.now += 60
        with self.assertLogs('resq_agent.hostreport', 'INFO') as logs:
            self.assertTrue(reporter.heartbeat())
        self.assertIn('older than microversion 1.2', logs.output[0])
        # Full reports, as before heartbeats, until heartbeats are asked
        # again FULL_EVERY intervals on.
        for _ in range(hostreport.FULL_EVERY - 1):
            self.now += 60
            self.assertTrue(reporter.heartbeat())
        self.now += 60
        self.assertTrue(reporter.heartbeat())
        self.assertEqual(
            ['report_host', 'heartbeat_host', 'report_host']
            + ['report_host'] * (hostreport.FULL_EVERY - 1)
            + ['heartbeat_host', 'report_host'], self.kinds(api))
        # Upgraded: heartbeats again, when next asked.
        del api.heartbeat_host
        self.now += 60 * hostreport.FULL_EVERY
        with self.assertLogs('resq_agent.hostreport', 'INFO') as logs:
            self.assertTrue(reporter.heartbeat())
        self.assertIn('takes heartbeats of host1 again', logs.output[0])
        self.assertEqual('heartbeat_host', self.kinds(api)[-1])

    def test_406_from_an_older_resq_api_sends_full_reports(self):
        self.check_older_resq_api(406, 'resq.microversion.unsupported')

    def test_404_from_an_older_resq_api_sends_full_reports(self):
        self.check_older_resq_api(404, 'resq.no_route')

    def test_waits_are_jittered_and_the_first_is_random(self):
        reporter = hostreport.HostReporter(
            self.api, 'host1', domains, interval=60,
            clock=lambda: self.now, rng=random.Random(44))
        first = reporter.next_wait()
        waits = [reporter.next_wait() for _ in range(200)]
        self.assertTrue(0 <= first <= 60)
        self.assertTrue(all(54 <= w <= 66 for w in waits), waits)
        self.assertGreater(max(waits) - min(waits), 8)
        # Changes only: the runner idles.
        reporter.interval = 0
        self.assertEqual(0, reporter.next_wait())


class BackOffTest(ReporterBase):
    """Busy or away: waits that grow, Retry-After honoured."""

    def busy(self, status=503, retry_after=None):
        return resq_client.ResQAPIError(
            method='PUT', url='/hosts/host1', reason='%d busy' % status,
            status=status, retry_after=retry_after)

    def test_waits_double_up_to_the_cap_warned_once(self):
        self.api.fail = self.busy()
        self.reporter.next_wait()      # the first, random wait
        waits = []
        with self.assertLogs('resq_agent.hostreport', 'DEBUG') as logs:
            self.assertFalse(self.reporter.after_apply(None, []))
            for _ in range(6):
                waits.append(self.reporter.next_wait())
                # The runner's heartbeat before the wait ends sends
                # nothing.
                self.assertFalse(self.reporter.heartbeat())
                self.now += waits[-1]
                self.assertFalse(self.reporter.heartbeat())
        self.assertEqual([60, 120, 240, 480, 600, 600], waits)
        self.assertEqual(1, len([o for o in logs.output
                                 if o.startswith('WARNING')]))
        self.assertEqual(7, len([c for c in self.api.calls]))
        # Back: one send, and the normal interval again.
        self.api.fail = None
        self.now += 600
        self.assertTrue(self.reporter.heartbeat())
        self.assertEqual(60, self.reporter.next_wait())

    def test_retry_after_is_honoured_within_the_cap(self):
        self.api.fail = self.busy(retry_after=300)
        self.reporter.next_wait()
        self.assertFalse(self.reporter.after_apply(None, []))
        self.assertEqual(300, self.reporter.next_wait())
        self.now += 299
        self.assertFalse(self.reporter.heartbeat())
        self.now += 1
        self.api.fail = self.busy(429, retry_after=86400)
        self.assertFalse(self.reporter.heartbeat())
        self.assertEqual(600, self.reporter.next_wait())

    def test_unreachable_backs_off_and_client_errors_do_not(self):
        self.api.fail = self.api.down()
        self.assertFalse(self.reporter.after_apply(None, []))
        self.assertTrue(self.reporter._backing_off())
        self.now += 60
        self.api.fail = resq_client.ResQAPIError(
            method='PUT', url='/hosts/host1', reason='400 bad', status=400)
        self.assertFalse(self.reporter.heartbeat())
        self.assertFalse(self.reporter._backing_off())

    def test_a_slow_answer_backs_off_though_stored(self):
        def slow(hostname, report):
            self.now += hostreport.SLOW_S + 1
            self.api.hosts[hostname] = report

        self.api.report_host = slow
        self.reporter.next_wait()
        self.assertTrue(self.reporter.after_apply(None, []))
        self.assertIn('host1', self.api.hosts)
        self.assertEqual(60, self.reporter.next_wait())
        self.assertTrue(self.reporter._backing_off())
