"""The optimizer's notifications and service round over RabbitMQ.

The broker on 127.0.0.1:5672; every test has its own topic. Plans come
from snapshot files here (the live path runs against Nova in
test_optimizer.py).
"""

import json
import os
import queue
import uuid

import fixtures
import oslo_messaging

from resq_nova import conf as nova_conf
from resq_nova.optimizer import execute
from resq_nova.optimizer import notifier
from resq_nova.optimizer import service
from tests.functional import test_agent_messaging as messaging
from tests.unit.resq_nova.optimizer import base as obase

WAIT = messaging.WAIT


class OptimizerNotificationTest(messaging.MessagingTestCase):

    def setUp(self):
        super().setUp()
        nova_conf.register_opts(self.conf)
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.topic = 'resq_optimizer_%s' % uuid.uuid4().hex[:10]
        self.flags('resq_optimizer', notification_topics=[self.topic],
                   state_dir=os.path.join(self.dir, 'state'),
                   time_limit=10.0)
        self.note = notifier.PlanNotifier(self.conf, host='ctl-1')
        self.addCleanup(self.note.cleanup)
        self.optimizer = service.Optimizer(self.conf, notifier=self.note)
        self.got = self.listen()

    def listen(self):
        got = queue.Queue()

        class Endpoint:
            def info(self, ctxt, publisher_id, event_type, payload, meta):
                got.put(('info', publisher_id, event_type, payload))

            def error(self, ctxt, publisher_id, event_type, payload, meta):
                got.put(('error', publisher_id, event_type, payload))

        transport = oslo_messaging.get_notification_transport(self.conf)
        self.addCleanup(transport.cleanup)
        listener = oslo_messaging.get_notification_listener(
            transport, [oslo_messaging.Target(topic=self.topic)],
            [Endpoint()], executor='threading')
        listener.start()
        self.addCleanup(listener.wait)
        self.addCleanup(listener.stop)
        return got

    def snapshot_file(self):
        path = os.path.join(self.dir, 'snap.json')
        with open(path, 'w') as f:
            json.dump(obase.snapshot(
                [obase.host('h1'), obase.host('h2'), obase.host('h3')],
                [obase.inst('a', 'h1'), obase.inst('b', 'h2')]), f)
        return path

    def test_proposed_and_failed(self):
        plan, _ = self.optimizer.plan(state_file=self.snapshot_file())
        level, publisher, event, payload = self.got.get(timeout=WAIT)
        self.assertEqual(('info', 'resq-optimizer.ctl-1',
                          'resq.optimizer.plan.proposed'),
                         (level, publisher, event))
        self.assertEqual('PlanPayload', payload['resq_object.name'])
        self.assertEqual('1.0', payload['resq_object.version'])
        data = payload['resq_object.data']
        self.assertEqual((plan['id'], True, 2, 1, 1), (
            data['id'], data['proposed'], data['hosts_used_before'],
            data['hosts_used_after'], data['moves']))

        # A plan that was not proposed is refused, and that is announced.
        plan['proposed'] = False
        plan['reason'] = 'made by hand'
        self.optimizer.store.save_plan(plan)
        exc = self.assertRaises(execute.PlanRefused, self.optimizer.apply,
                                plan['id'])
        self.assertIn('made by hand', str(exc))
        level, _, event, payload = self.got.get(timeout=WAIT)
        self.assertEqual(('error', 'resq.optimizer.plan.failed'),
                         (level, event))
        self.assertEqual(execute.REFUSED,
                         payload['resq_object.data']['status'])

    def test_service_round_survives_a_failing_cloud(self):
        class Down:
            def __getattr__(self, name):
                def call(*args, **kwargs):
                    from resq_common.clients import placement as client
                    raise client.PlacementUnavailable(
                        method='GET', url='/resource_providers',
                        reason='Connection refused')
                return call

        self.optimizer.placement = Down()
        self.optimizer.compute = Down()
        logs = self.useFixture(fixtures.FakeLogger(level='INFO'))
        self.assertIsNone(self.optimizer.tick())
        self.assertIn('Optimizer round failed: Placement is unreachable',
                      logs.output)
        self.assertNotIn('Traceback', logs.output)
        self.assertEqual([], self.optimizer.store.list_plans())
        self.assertTrue(self.got.empty())
