"""On-demand escalation over RabbitMQ, decided on an in-process Placement.

The agent's :class:`Escalator` sends its notification and casts to the
optimizer's RPC server (:mod:`resq_nova.optimizer.ondemand`) on the broker
at 127.0.0.1:5672; the optimizer asks a real Placement, holding cache
domains reported as agents with and without an on-demand lease report
them, where one more instance fits, and announces its decision.
"""

import queue
import uuid

import oslo_messaging
from placement.tests.functional.fixtures import placement as placement_fixture

from resq_agent.ondemand import escalation
from resq_agent.ondemand import host as od_host
from resq_agent import reporter
from resq_agent import service
from resq_common import cache_domain
from resq_common.clients import placement as placement_client
from resq_common.rpc import optimizer as rpcapi
from resq_nova import conf as nova_conf
from resq_nova.optimizer import notifier
from resq_nova.optimizer import ondemand
from tests.functional import test_agent_messaging as messaging

WAIT = messaging.WAIT
X = 'dddddddd-0000-0000-0000-00000000000a'


class EscalationBase(messaging.MessagingTestCase):

    def setUp(self):
        super().setUp()
        nova_conf.register_opts(self.conf)
        tag = uuid.uuid4().hex[:10]
        self.opt_topic = 'resq_opt_%s' % tag
        self.note_topic = 'resq_opt_notes_%s' % tag
        self.flags('resq_optimizer', rpc_topic=self.opt_topic,
                   notification_topics=[self.note_topic])
        self.flags('resq_agent', optimizer_topic=self.opt_topic)
        fixture = self.useFixture(placement_fixture.PlacementFixture())
        self.placement = placement_client.PlacementClient.for_endpoint(
            fixture.endpoint)
        self.rps = {}
        for host, lease in (('host-a', 4), ('host-b', 4), ('host-c', 0)):
            self.placement.ensure_provider(str(uuid.uuid4()), host)
            self.rps[host] = reporter.report(self.placement, host, [
                cache_domain.CacheDomain(
                    0, 11, io_ways=2, num_closids=8, cores=4,
                    default_group_ways=1, instance_ways=8 - lease,
                    lease_ways=lease, lease_classes=2 if lease else 0,
                    lease_cores=2)])[0]
        self.got = self.listen([self.note_topic] + list(
            self.conf.resq_agent.notification_topics))
        self.start_optimizer()

    def listen(self, topics):
        got = queue.Queue()

        class Endpoint:
            def _put(self, level, event_type, payload):
                got.put((level, event_type, payload))

            def info(self, ctxt, publisher_id, event_type, payload, meta):
                self._put('info', event_type, payload)

            def warn(self, ctxt, publisher_id, event_type, payload, meta):
                self._put('warn', event_type, payload)

            def error(self, ctxt, publisher_id, event_type, payload, meta):
                self._put('error', event_type, payload)

        transport = oslo_messaging.get_notification_transport(self.conf)
        self.addCleanup(transport.cleanup)
        listener = oslo_messaging.get_notification_listener(
            transport, [oslo_messaging.Target(topic=t) for t in topics],
            [Endpoint()], executor='threading')
        listener.start()
        self.addCleanup(listener.wait)
        self.addCleanup(listener.stop)
        return got

    def start_optimizer(self):
        transport = oslo_messaging.get_rpc_transport(self.conf)
        self.addCleanup(transport.cleanup)
        note = notifier.PlanNotifier(self.conf, host='ctl-1')
        self.addCleanup(note.cleanup)
        server = ondemand.get_server(
            self.conf, transport,
            ondemand.EscalationEndpoint(self.placement, note,
                                        mode=ondemand.BOOT))
        server.start()
        self.addCleanup(server.wait)
        self.addCleanup(server.stop)

    def escalator(self):
        rpc_t = oslo_messaging.get_rpc_transport(self.conf)
        note_t = oslo_messaging.get_notification_transport(self.conf)
        self.addCleanup(rpc_t.cleanup)
        self.addCleanup(note_t.cleanup)
        return escalation.Escalator(self.conf, rpc_t, note_t, 'host-a')

    def events(self, n):
        out = {}
        for _ in range(n):
            level, event, payload = self.got.get(timeout=WAIT)
            out[event] = (level, payload)
        return out

    def fill_lease(self, host, cores):
        body = {'allocations': {self.rps[host]: {'resources': {
                'CUSTOM_RESQ_ONDEMAND_CORE': cores}}},
                'project_id': 'p', 'user_id': 'u',
                'consumer_generation': None}
        resp = self.placement._adapter.put(
            '/allocations/%s' % uuid.uuid4(), json=body,
            microversion='1.28')
        self.assertEqual(204, resp.status_code, resp.text)


class EscalationTest(EscalationBase):

    def test_escalation_finds_a_lease_with_room_or_reports_unmet(self):
        esc = self.escalator()
        item = {'instance_uuid': X, 'domain_id': 0, 'lease_ways': 4,
                'vcpus': 1, 'target_us': 50.0,
                'reason': 'latency above target with an isolated class'}
        self.assertEqual(1, esc.send([item]))
        got = self.events(2)
        level, body = got[escalation.EVENT]
        self.assertEqual('warn', level)
        self.assertEqual(('OnDemandEscalationPayload', '1.0'),
                         (body['resq_object.name'],
                          body['resq_object.version']))
        self.assertEqual((X, 'host-a', 1), (
            body['resq_object.data']['instance_uuid'],
            body['resq_object.data']['host'],
            body['resq_object.data']['vcpus']))
        level, body = got[ondemand.SCALE_OUT]
        data = body['resq_object.data']
        # Not back to host-a (its lease failed), not host-c (no lease).
        self.assertEqual(('info', 'scale_out', 'host-b',
                          self.rps['host-b']),
                         (level, data['decision'], data['target_host'],
                          data['target_provider']))
        # Payload 1.1: this optimizer has no compute client, so it only
        # announces the host and says it booted nothing.
        self.assertEqual('1.1', body['resq_object.version'])
        self.assertEqual(('not_booted', None, None), (
            data['outcome'], data['server_uuid'], data['server_host']))
        self.assertIn('no compute client', data['reason'])
        # host-b's lease fills up: nothing left anywhere else.
        self.fill_lease('host-b', 2)
        esc.send([item])
        got = self.events(2)
        level, body = got[ondemand.UNMET]
        self.assertEqual('error', level)
        self.assertEqual('unmet', body['resq_object.data']['decision'])
        self.assertIn('no other host has room',
                      body['resq_object.data']['reason'])

    def test_bad_escalation_is_refused_by_name(self):
        transport = oslo_messaging.get_rpc_transport(self.conf)
        self.addCleanup(transport.cleanup)
        api = rpcapi.OptimizerAPI(transport, self.opt_topic)
        answer = api.escalate_and_wait({}, {'resq_object.name': 'Other'},
                                       timeout=WAIT)
        self.assertEqual('refused', answer['decision'])
        self.assertIn('not an OnDemandEscalationPayload', answer['reason'])
        body = escalation.payload('host-a', {'instance_uuid': X})
        body['resq_object.version'] = '2.0'
        answer = api.escalate_and_wait({}, body, timeout=WAIT)
        self.assertIn('reads 1.x', answer['reason'])


class AgentServiceEscalationTest(EscalationBase):
    """The agent service's reconcile sends what the local scheduler queued.

    The queue is a real OnDemandHost's.
    """

    def test_periodic_reconcile_escalates(self):
        self.flags('resq_agent', compute_host='host-a')
        od = od_host.OnDemandHost(self.conf, source=None)
        od.escalations.append({'instance_uuid': X, 'domain_id': 0,
                               'lease_ways': 4, 'vcpus': 1,
                               'target_us': 50.0, 'reason': 'r'})
        self.manager.ondemand = od
        svc = service.AgentService(self.conf, self.manager)
        svc.start()
        self.addCleanup(svc.stop)
        self.assertTrue(svc.connected.wait(WAIT))
        svc._reconcile()
        got = self.events(2)
        self.assertEqual('host-a', got[escalation.EVENT][1][
            'resq_object.data']['host'])
        self.assertEqual('host-b', got[ondemand.SCALE_OUT][1][
            'resq_object.data']['target_host'])
        # Taken: the next reconcile sends nothing again.
        self.assertEqual(0, svc.send_escalations())
