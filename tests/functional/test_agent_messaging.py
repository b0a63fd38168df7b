"""The agent's messaging against the RabbitMQ broker on 127.0.0.1:5672.

Every test uses its own exchanges, topics and host name, so tests (and
other users of the broker) never see each other's messages. The manager is
a recording double: the real one is exercised by helper tests of its own;
here what matters is what arrives over the broker.
"""

import queue
import socket
import threading
import uuid

import fixtures
from oslo_config import cfg
import oslo_messaging

from resq_agent import notifications
from resq_agent import rpc
from resq_agent import rpcapi
from resq_agent import service
from tests import base

BROKER = ('127.0.0.1', 5672)
WAIT = 60   # upper bound for a message to arrive, not a speed assertion


def rabbit_url(port=BROKER[1]):
    return 'rabbit://guest:guest@127.0.0.1:%d/' % port


class RecordingManager:
    """Stands in for AgentManager: records calls, returns fixed data."""

    def __init__(self):
        self.events = queue.Queue()
        self.reconciles = queue.Queue()

    def instance_changed(self, instance_uuid, event_type=None):
        self.events.put((instance_uuid, event_type))

    def reconcile(self):
        self.reconciles.put(True)
        return {'applied': ['i-1'], 'removed': []}

    def status(self):
        return {'domains': [{'id': 0, 'ways': 11}],
                'instances': [
                    {'uuid': 'i-1', 'domain_id': 0, 'ways': 3,
                     'mask': '1c', 'llc_occupancy_bytes': 2359296,
                     'mbm_total_bytes_per_s': 1.5e9},
                    {'uuid': 'i-2', 'domain_id': 0, 'ways': 2,
                     'mask': '3', 'llc_occupancy_bytes': 1048576,
                     'mbm_total_bytes_per_s': None}]}


class TcpProxy:
    """A TCP forwarder to the broker that can be switched on later.

    Lets a test start the agent against a broker address that refuses
    connections and then make that address work, without touching the
    shared RabbitMQ.
    """

    def __init__(self):
        probe = socket.socket()
        probe.bind(('127.0.0.1', 0))
        self.port = probe.getsockname()[1]
        probe.close()
        self._sock = None
        self._stop = threading.Event()

    def start(self):
        self._sock = socket.socket()
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(('127.0.0.1', self.port))
        self._sock.listen(16)
        self._sock.settimeout(0.2)
        threading.Thread(target=self._accept, daemon=True).start()

    def stop(self):
        self._stop.set()
        if self._sock is not None:
            self._sock.close()

    def _accept(self):
        while not self._stop.is_set():
            try:
                client, _ = self._sock.accept()
            except (socket.timeout, OSError):
                continue
            upstream = socket.create_connection(BROKER)
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b),
                                 daemon=True).start()

    def _pump(self, src, dst):
        try:
            while not self._stop.is_set():
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


class MessagingTestCase(base.TestCase):

    def setUp(self):
        super().setUp()
        ok, reason = service.broker_reachable([BROKER])
        if not ok:
            self.fail('RabbitMQ is not running on %s:%d (%s); start it '
                      'with "rabbitmq-server -detached"' % (BROKER + (
                          reason,)))
        self.logs = self.useFixture(fixtures.FakeLogger(level='INFO'))
        rpc.register_opts(self.conf)
        tag = uuid.uuid4().hex[:10]
        self.host = 'compute-%s' % tag
        self.nova_exchange = 'nova-test-%s' % tag
        self.conf.set_override('transport_url', rabbit_url())
        self.conf.set_override('control_exchange', 'resq-test-%s' % tag)
        self.flags('resq_agent', compute_host=self.host,
                   rpc_topic='resq-agent-%s' % tag,
                   nova_control_exchange=self.nova_exchange,
                   nova_notification_topic='versioned_%s' % tag,
                   notification_topics=['resq_notifications_%s' % tag],
                   reconcile_interval=0, status_notification_interval=0,
                   messaging_retry_interval=1)
        self.conf.set_override('rabbit_retry_interval', 1,
                               'oslo_messaging_rabbit')
        self.manager = RecordingManager()

    def agent_api(self):
        api = rpcapi.AgentAPI(self.conf)
        # Close its connection: a leftover heartbeat thread would keep
        # reconnecting to this test's broker address after the test.
        self.addCleanup(api.transport.cleanup)
        return api

    def start_service(self, wait=True):
        svc = service.AgentService(self.conf, self.manager)
        svc.start()
        self.addCleanup(svc.stop)
        if wait:
            self.assertTrue(svc.connected.wait(WAIT),
                            'agent never connected: %s' % self.logs.output)
        return svc

    def nova_notifier(self):
        """A notifier configured like nova-compute of this test."""
        nova_conf = cfg.ConfigOpts()
        rpc.register_opts(nova_conf)
        nova_conf([], project='nova')
        nova_conf.set_override('control_exchange', self.nova_exchange)
        transport = oslo_messaging.get_notification_transport(
            nova_conf, url=rabbit_url())
        self.addCleanup(transport.cleanup)
        return oslo_messaging.Notifier(
            transport, publisher_id='nova-compute:%s' % self.host,
            driver='messagingv2',
            topics=[self.conf.resq_agent.nova_notification_topic])

    @staticmethod
    def instance_payload(instance_uuid, host, node=None):
        return {'nova_object.name': 'InstanceActionPayload',
                'nova_object.namespace': 'nova',
                'nova_object.version': '1.8',
                'nova_object.data': {
                    'uuid': instance_uuid, 'host': host,
                    'node': node or host, 'state': 'active',
                    'power_state': 'running', 'task_state': None,
                    'flavor': {'nova_object.name': 'FlavorPayload',
                               'nova_object.data': {
                                   'vcpus': 2, 'extra_specs': {
                                       'resq:slo': 'reserved'}}}}}


class RpcTest(MessagingTestCase):

    def test_round_trip(self):
        self.start_service()
        api = self.agent_api()
        self.assertEqual(self.manager.status(),
                         api.status({}, self.host, timeout=WAIT))
        self.assertEqual({'applied': ['i-1'], 'removed': []},
                         api.reconcile({}, self.host, timeout=WAIT))
        self.assertTrue(self.manager.reconciles.get(timeout=1))

    def test_other_host_does_not_answer(self):
        self.start_service()
        api = self.agent_api()
        self.assertRaises(oslo_messaging.MessagingTimeout, api.status, {},
                          'not-' + self.host, timeout=2)

    def test_version_cap(self):
        self.flags('resq_agent', rpc_version_cap='0.9')
        api = self.agent_api()
        self.assertRaises(oslo_messaging.RPCVersionCapError, api.status, {},
                          self.host)


class NovaNotificationTest(MessagingTestCase):

    def test_instance_events_of_this_host_reach_the_manager(self):
        self.start_service()
        notifier = self.nova_notifier()
        mine = str(uuid.uuid4())
        for event in ('instance.create.end',
                      'instance.live_migration_post_dest.end',
                      'instance.delete.end'):
            notifier.info({}, event, self.instance_payload(mine, self.host))
            self.assertEqual((mine, event),
                             self.manager.events.get(timeout=WAIT))

    def test_listener_has_its_own_pool(self):
        # Another consumer of Nova's notifications (say, Ceilometer) in
        # the default pool still gets every event: the agent takes copies.
        self.start_service()
        other = queue.Queue()

        class Endpoint:
            def info(self, ctxt, publisher_id, event_type, payload, meta):
                other.put(event_type)

        transport = oslo_messaging.get_notification_transport(
            self.conf, url=rabbit_url())
        self.addCleanup(transport.cleanup)
        listener = oslo_messaging.get_notification_listener(
            transport, [oslo_messaging.Target(
                topic=self.conf.resq_agent.nova_notification_topic,
                exchange=self.nova_exchange)], [Endpoint()],
            executor='threading')
        listener.start()
        self.addCleanup(listener.wait)
        self.addCleanup(listener.stop)
        mine = str(uuid.uuid4())
        self.nova_notifier().info({}, 'instance.power_on.end',
                                  self.instance_payload(mine, self.host))
        self.assertEqual((mine, 'instance.power_on.end'),
                         self.manager.events.get(timeout=WAIT))
        self.assertEqual('instance.power_on.end', other.get(timeout=WAIT))


class DefaultTopicTest(MessagingTestCase):
    """The default RPC topic: the agent's two queues must be apart.

    The RPC server's queue is ``resq-agent.<host>``; a Nova notification
    pool of that name shared it, and each consumer took about half of the
    other's messages.
    """

    def test_every_call_and_every_event_arrives(self):
        self.flags('resq_agent', rpc_topic='resq-agent')
        self.start_service()
        api = self.agent_api()
        for _ in range(6):
            self.assertEqual(self.manager.status(),
                             api.status({}, self.host, timeout=10))
        notifier = self.nova_notifier()
        sent = [str(uuid.uuid4()) for _ in range(6)]
        for mine in sent:
            notifier.info({}, 'instance.create.end',
                          self.instance_payload(mine, self.host))
        self.assertEqual(sorted(sent), sorted(
            self.manager.events.get(timeout=WAIT)[0] for _ in sent))
        self.assertEqual('resq-agent-nova.%s' % self.host,
                         notifications.pool_name(self.host))


class StatusNotificationTest(MessagingTestCase):

    def listen_to_agent(self):
        got = queue.Queue()

        class Endpoint:
            def info(self, ctxt, publisher_id, event_type, payload, meta):
                got.put((publisher_id, event_type, payload))

            def error(self, ctxt, publisher_id, event_type, payload, meta):
                got.put((publisher_id, event_type, dict(payload,
                                                        priority='error')))

        transport = oslo_messaging.get_notification_transport(self.conf)
        self.addCleanup(transport.cleanup)
        listener = oslo_messaging.get_notification_listener(
            transport, [oslo_messaging.Target(
                topic=self.conf.resq_agent.notification_topics[0])],
            [Endpoint()], executor='threading')
        listener.start()
        self.addCleanup(listener.wait)
        self.addCleanup(listener.stop)
        return got

    def test_status_and_per_instance_monitoring(self):
        got = self.listen_to_agent()
        svc = self.start_service()
        self.assertTrue(svc.send_status())
        seen = [got.get(timeout=WAIT) for _ in range(3)]
        publishers = {s[0] for s in seen}
        self.assertEqual({'resq-agent.%s' % self.host}, publishers)
        by_event = {}
        for _, event, payload in seen:
            by_event.setdefault(event, []).append(payload)
        status = by_event[notifications.STATUS_EVENT][0]
        self.assertEqual(self.host, status['host'])
        self.assertEqual(2, len(status['instances']))
        monitor = {p['uuid']: p for p in by_event[notifications.MONITOR_EVENT]}
        self.assertEqual(2359296, monitor['i-1']['llc_occupancy_bytes'])
        self.assertEqual(1.5e9, monitor['i-1']['mbm_total_bytes_per_s'])
        self.assertEqual(self.host, monitor['i-2']['host'])

    def test_misplaced_instances_are_a_fault_then_resolved(self):
        got = self.listen_to_agent()
        self.manager.misplaced_hooks = []
        self.start_service()
        # The service hooks its notifier into the manager.
        (hook,) = self.manager.misplaced_hooks
        hook({'i-1': 'its cores are pinned in cache domain 1 but its 3 '
                     'ways are in domain 0'}, set())
        _, event, payload = got.get(timeout=WAIT)
        self.assertEqual(notifications.MISPLACED_EVENT, event)
        self.assertEqual(('i-1', self.host, 'error'), (
            payload['uuid'], payload['host'], payload['priority']))
        self.assertIn('cache domain 1', payload['reason'])
        hook({}, {'i-1'})
        _, event, payload = got.get(timeout=WAIT)
        self.assertEqual((notifications.ISOLATED_EVENT, 'i-1'),
                         (event, payload['uuid']))

    def test_periodic_notifications(self):
        got = self.listen_to_agent()
        self.flags('resq_agent', status_notification_interval=1)
        self.start_service()
        events = {got.get(timeout=WAIT)[1] for _ in range(6)}
        self.assertEqual({notifications.STATUS_EVENT,
                          notifications.MONITOR_EVENT}, events)


class BrokerDownTest(MessagingTestCase):

    def test_keeps_enforcing_and_recovers_without_restart(self):
        proxy = TcpProxy()
        self.addCleanup(proxy.stop)
        self.conf.set_override('transport_url', rabbit_url(proxy.port))
        self.flags('resq_agent', reconcile_interval=1,
                   status_notification_interval=1)
        svc = self.start_service(wait=False)
        # Broker unreachable: periodic reconciles go on all the same.
        for _ in range(2):
            self.assertTrue(self.manager.reconciles.get(timeout=WAIT))
        self.assertFalse(svc.connected.is_set())
        self.assertIn('Message broker unreachable', self.logs.output)
        self.assertIn('127.0.0.1:%d' % proxy.port, self.logs.output)
        self.assertIn('enforcement goes on', self.logs.output)
        self.assertFalse(svc.send_status())
        # The broker address starts answering: no restart needed.
        proxy.start()
        self.assertTrue(svc.connected.wait(WAIT), self.logs.output)
        self.assertIn('reachable again', self.logs.output)
        api = self.agent_api()
        self.assertEqual(self.manager.status(),
                         api.status({}, self.host, timeout=WAIT))
        self.assertTrue(svc.send_status())

    def test_stop_while_broker_down_returns(self):
        self.conf.set_override('transport_url', rabbit_url(1))
        svc = service.AgentService(self.conf, self.manager)
        svc.start()
        svc.stop()
        self.assertFalse(svc.connected.is_set())
        self.assertEqual([], svc._threads)
