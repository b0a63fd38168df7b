import fixtures
import oslo_messaging

from resq_agent import notifications
from tests import base


class Recorder:
    def __init__(self):
        self.calls = []

    def instance_changed(self, instance_uuid, event_type=None):
        self.calls.append((instance_uuid, event_type))


U1 = 'eeeeeeee-0000-0000-0000-000000000001'
U2 = 'eeeeeeee-0000-0000-0000-000000000002'
U3 = 'eeeeeeee-0000-0000-0000-000000000003'


def payload(uuid=U1, host='cmp1', node='cmp1.example.org'):
    return {'nova_object.name': 'InstanceActionPayload',
            'nova_object.namespace': 'nova',
            'nova_object.version': '1.8',
            'nova_object.data': {'uuid': uuid, 'host': host, 'node': node}}


class NovaInstanceEndpointTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.manager = Recorder()
        self.endpoint = notifications.NovaInstanceEndpoint(
            self.manager, {'cmp1', 'cmp1.example.org', None})

    def info(self, event, body):
        return self.endpoint.info({}, 'nova-compute:cmp1', event, body, {})

    def test_this_hosts_instances_only(self):
        self.assertEqual(oslo_messaging.NotificationResult.HANDLED,
                         self.info('instance.create.end', payload()))
        self.info('instance.delete.end', payload(U2, host='cmp2',
                                                 node='cmp2'))
        # Matched by hypervisor hostname when the service host differs.
        self.info('instance.power_off.end', payload(U3, host='other',
                                                    node='cmp1.example.org'))
        self.assertEqual([(U1, 'instance.create.end'),
                          (U3, 'instance.power_off.end')],
                         self.manager.calls)

    def test_malformed_payloads_are_ignored(self):
        for body in ({}, {'nova_object.data': {'host': 'cmp1'}},
                     {'nova_object.data': 'x'}, 'text', None,
                     {'uuid': 'u-1', 'host': 'cmp1'}):
            self.assertEqual(oslo_messaging.NotificationResult.HANDLED,
                             self.info('instance.create.end', body))
        self.assertEqual([], self.manager.calls)

    def test_a_bad_uuid_is_dropped_alone(self):
        logs = self.useFixture(fixtures.FakeLogger())
        for bad in ('u-1', '../x', 42, ['a']):
            self.assertEqual(oslo_messaging.NotificationResult.HANDLED,
                             self.info('instance.create.end', payload(bad)))
        self.info('instance.create.end', payload(U2))
        self.assertEqual([(U2, 'instance.create.end')], self.manager.calls)
        self.assertIn("instance uuid 'u-1' is not a UUID", logs.output)

    def test_fields_of_the_wrong_type_are_one_warning_each(self):
        logs = self.useFixture(fixtures.FakeLogger())
        bad = [
            (payload(host=['cmp1']), 'nova_object.data.host is a list'),
            (payload(node={'n': 1}), 'nova_object.data.node is a dict'),
            (payload(uuid=None), 'nova_object.data.uuid is a null'),
            (payload(uuid=7.5), 'nova_object.data.uuid is a float'),
            ({'nova_object.data': [1]}, 'nova_object.data is a list'),
            ({'nova_object.data': {'host': 'cmp1'}},
             'nova_object.data.uuid is missing'),
            (['x'], 'the payload is a list'),
        ]
        for body, _ in bad:
            self.assertEqual(oslo_messaging.NotificationResult.HANDLED,
                             self.info('instance.create.end', body))
        self.info('instance.create.end', payload(U2))
        self.assertEqual([(U2, 'instance.create.end')], self.manager.calls)
        lines = logs.output.splitlines()
        self.assertEqual(len(bad), len(lines), logs.output)
        for (_, field), line in zip(bad, lines):
            self.assertIn('Dropping instance.create.end from '
                          'nova-compute:cmp1: ', line)
            self.assertIn(field, line)
        self.assertNotIn('Traceback', logs.output)

    def test_filter_rule_selects_instance_events(self):
        rule = notifications.NovaInstanceEndpoint.filter_rule
        for event in ('instance.create.end', 'instance.delete.end',
                      'instance.live_migration_post_dest.end'):
            self.assertTrue(rule.match({}, 'nova-compute:cmp1', event, {},
                                       payload()), event)
        for event in ('instance.create.start', 'instance.update',
                      'instance.create.endx', 'volume.create.end',
                      'instance.exists'):
            self.assertFalse(rule.match({}, 'nova-compute:cmp1', event, {},
                                        payload()), event)

    def test_publisher_id(self):
        self.assertEqual('resq-agent.cmp1', notifications.publisher_id('cmp1'))
