"""On-demand scale-out inside real Nova services (issue 14 item 6).

Nova's functional harness (API, conductor, scheduler with the ResQ
filter, computes over fakelibvirt, Placement in-process) with cache-domain
providers reported as an agent with an on-demand lease reports them. An
escalation reaches the optimizer's RPC endpoint as the agent sends it
(:func:`resq_agent.ondemand.escalation.payload`); the optimizer decides on
Placement and boots the clone through Nova's API with resq-nova's compute
client. Its decision is sent with a real oslo.messaging notifier (the
in-memory ``test`` driver), except in :class:`ScaleOutOverBrokerTest`,
where the agent's escalator, the optimizer's RPC server and a listener
for its decision all go through the RabbitMQ broker on this machine.
"""

import queue
import types
import uuid

import fixtures
from nova import conf as nova_conf
from nova import crypto
from oslo_config import cfg
import oslo_messaging
from oslo_messaging.notify import _impl_test

from resq_agent import conf as agent_conf
from resq_agent.ondemand import escalation
from resq_agent import rpc as agent_rpc
from resq_agent import service as agent_service
from resq_common import cache_domain
from resq_nova import conf as resq_nova_conf
from resq_nova.optimizer import actions
from resq_nova.optimizer import notifier
from resq_nova.optimizer import ondemand
from tests.functional import test_agent_messaging as messaging
from tests.functional import test_nova_scheduler

TERM = 'od-a'
FLAVOR = 'resq.%s.ondemand' % TERM


class ScaleOutBase(test_nova_scheduler.ResQNovaTestBase):

    def setUp(self):
        super().setUp()
        _impl_test.reset()
        transport = oslo_messaging.get_notification_transport(
            nova_conf.CONF, url='fake:/')
        self.notifier = types.SimpleNamespace(notifier=oslo_messaging.Notifier(
            transport, publisher_id='resq-optimizer.ctl', driver='test'))
        self.compute = self.compute_client()
        self.rps = {}

    def start_host(self, hostname, lease_cores=0):
        """One cell of 8 cores (0-5 dedicated), one 11-way cache domain.

        With ``lease_cores``, a 4-way on-demand lease of that many cores.
        """
        lease_ways = 4 if lease_cores else 0
        dom = cache_domain.CacheDomain(
            0, 11, io_ways=2, num_closids=8, cores=6, default_group_ways=1,
            instance_ways=11 - 2 - 1 - lease_ways, lease_ways=lease_ways,
            lease_classes=2 if lease_ways else 0, lease_cores=lease_cores)
        self.rps[hostname] = self.start_resq_compute(hostname,
                                                     domains=[dom])[0]

    def term_flavor(self, name=FLAVOR, term=TERM):
        return self._create_flavor(name=name, vcpu=1, memory_mb=512, disk=1,
                                   ephemeral=0, extra_spec={
                                       'hw:cpu_policy': 'dedicated',
                                       'resq:slo': 'on-demand',
                                       'resq:latency_p95_us': '60',
                                       'resq:term': term,
                                       'resources_OD:'
                                       'CUSTOM_RESQ_ONDEMAND_CORE': '1'})

    def boot_first(self, host='host1', name='%s-1' % TERM, api=None):
        flavor = self.term_flavor()
        return self._create_server(name=name, flavor_id=flavor,
                                   networks='none', host=host, api=api)

    def endpoint(self, compute=None, **kwargs):
        kwargs.setdefault('boot_timeout', 60)
        # Off unless asked: these tests ask for boot.
        kwargs.setdefault('mode', ondemand.BOOT)
        return ondemand.EscalationEndpoint(
            self.client, self.notifier, compute or self.compute, **kwargs)

    def escalate(self, endpoint, server, host='host1'):
        return endpoint.escalate({}, escalation.payload(host, {
            'instance_uuid': server['id'], 'domain_id': 0, 'lease_ways': 4,
            'vcpus': 1, 'target_us': 60.0,
            'reason': 'latency above target with an isolated class'}))

    def servers(self):
        return sorted((s['name'], s['status'], s['OS-EXT-SRV-ATTR:host'])
                      for s in self.api.get_servers())

    def notes(self, actions=False):
        """``[(level, event type, data)]`` sent so far.

        The decisions, or with ``actions`` the boots' start and end.
        """
        return [(priority, msg['event_type'],
                 msg['payload']['resq_object.data'])
                for _, msg, priority, _ in _impl_test.NOTIFICATIONS
                if msg['event_type'].startswith(
                    'resq.optimizer.action.') == actions]

    def lease_usage(self, host):
        return self.client.get_usages(self.rps[host]).get(
            'CUSTOM_RESQ_ONDEMAND_CORE', 0)


class ScaleOutTest(ScaleOutBase):

    def test_clone_boots_active_where_the_lease_has_room(self):
        self.start_host('host1', lease_cores=1)
        self.start_host('host2', lease_cores=2)
        self.start_host('host3')
        first = self.boot_first()
        result = self.escalate(self.endpoint(), first)
        self.assertEqual(('scale_out', 'booted', 'host2', 'host2'), (
            result['decision'], result['outcome'], result['target_host'],
            result['server_host']), result['reason'])
        clone = self.api.get_server(result['server_uuid'])
        self.assertEqual(('%s-2' % TERM, 'ACTIVE', 'host2', FLAVOR),
                         (clone['name'], clone['status'],
                          clone['OS-EXT-SRV-ATTR:host'],
                          clone['flavor']['original_name']))
        self.assertEqual(first['id'], clone['metadata'][
            ondemand.SCALED_FROM_KEY])
        self.assertEqual(first['image']['id'], clone['image']['id'])
        self.assertEqual(1, self.lease_usage('host2'))
        # The decision, with the true outcome, in payload 1.1.
        [(level, event, data)] = self.notes()
        self.assertEqual(('INFO', ondemand.SCALE_OUT, 'booted',
                          result['server_uuid'], 'host2'),
                         (level, event, data['outcome'],
                          data['server_uuid'], data['server_host']))
        self.assertEqual('1.1', [
            msg['payload']['resq_object.version'] for _, msg, _, _ in
            _impl_test.NOTIFICATIONS if msg['event_type'] ==
            ondemand.SCALE_OUT][0])
        # The boot itself: who asked, why, and its true outcome.
        (l1, e1, start), (l2, e2, end) = self.notes(actions=True)
        self.assertEqual((('INFO', actions.START), ('INFO', actions.END)),
                         ((l1, e1), (l2, e2)))
        self.assertEqual(('scale_out_boot', '%s-2' % TERM, 'host2',
                          self.api.auth_user, self.api.project_id),
                         (start['action'], start['server_name'],
                          start['target_host'], start['user_id'],
                          start['project_id']))
        self.assertIn('scale-out of term %s: server %s escalated (on '
                      'host1: latency above target' % (TERM, first['id']),
                      start['reason'])
        self.assertEqual(('booted', result['server_uuid'], 'host2'),
                         (end['outcome'], end['server_uuid'],
                          end['result_host']))

    def test_clone_has_the_networks_key_pair_and_security_groups(self):
        self.start_host('host1', lease_cores=1)
        self.start_host('host2', lease_cores=2)
        _, public, _ = crypto.generate_key_pair()
        self.api.post_keypair({'keypair': {'name': 'ops',
                                           'public_key': public}})
        net = self.neutron.network_1['id']
        body = self._build_server(name='%s-1' % TERM,
                                  flavor_id=self.term_flavor(),
                                  networks=[{'uuid': net}], host='host1')
        body['key_name'] = 'ops'
        body['security_groups'] = [{'name': 'default'}]
        first = self._wait_for_state_change(
            self.api.post_server({'server': body}), 'ACTIVE')
        result = self.escalate(self.endpoint(), first)
        self.assertEqual('booted', result['outcome'], result['reason'])
        clone = self.api.get_server(result['server_uuid'])
        self.assertEqual(('ops', [{'name': 'default'}]), (
            clone['key_name'], clone['security_groups']))
        ports = self.api.get_port_interfaces(clone['id'])
        self.assertEqual([net], [p['net_id'] for p in ports])

    def test_repeated_escalation_boots_no_second_clone(self):
        self.start_host('host1', lease_cores=1)
        self.start_host('host2', lease_cores=2)
        first = self.boot_first()
        endpoint = self.endpoint()
        booted = self.escalate(endpoint, first)
        self.assertEqual('booted', booted['outcome'], booted['reason'])
        again = self.escalate(endpoint, first)
        self.assertEqual(('scale_out', 'reused', booted['server_uuid'],
                          'host2'), (again['decision'], again['outcome'],
                                     again['server_uuid'],
                                     again['server_host']))
        self.assertIn('not booting another', again['reason'])
        self.assertEqual([('%s-1' % TERM, 'ACTIVE', 'host1'),
                          ('%s-2' % TERM, 'ACTIVE', 'host2')],
                         self.servers())
        # Past the window the NF still escalates: one more is booted.
        self.assertEqual('booted', self.escalate(
            self.endpoint(window=0), first)['outcome'])
        self.assertEqual(['%s-1' % TERM, '%s-2' % TERM, '%s-3' % TERM],
                         [s[0] for s in self.servers()])

    def test_no_room_is_unmet_and_boots_nothing(self):
        self.start_host('host1', lease_cores=1)
        self.start_host('host2')
        first = self.boot_first()
        result = self.escalate(self.endpoint(), first)
        self.assertEqual(('unmet', 'not_booted', None), (
            result['decision'], result['outcome'], result['server_uuid']))
        self.assertIn('no other host has room', result['reason'])
        self.assertEqual([('%s-1' % TERM, 'ACTIVE', 'host1')],
                         self.servers())
        [(level, event, data)] = self.notes()
        self.assertEqual(('ERROR', ondemand.UNMET), (level, event))

    def test_failed_spawn_is_failed_with_novas_reason(self):
        self.start_host('host1', lease_cores=1)
        self.start_host('host2', lease_cores=2)
        first = self.boot_first()
        # Failure injection: the hypervisor cannot spawn.

        def spawn(*args, **kwargs):
            raise RuntimeError('injected: host2 cannot start guests')

        self.useFixture(fixtures.MonkeyPatch(
            'nova.virt.libvirt.driver.LibvirtDriver.spawn', spawn))
        result = self.escalate(self.endpoint(), first)
        self.assertEqual(('scale_out', 'failed'), (
            result['decision'], result['outcome']), result['reason'])
        self.assertNotEqual('booted', result['outcome'])
        self.assertIn('is in ERROR', result['reason'])
        # Nova's fault: the only host asked for failed the build (the
        # spawn's own error stays in the compute's log and Nova's fault
        # history, which the API does not show).
        self.assertIn('Exceeded maximum number of retries',
                      result['reason'])
        self.assertEqual('ERROR', self.api.get_server(
            result['server_uuid'])['status'])
        [(level, event, data)] = self.notes()
        self.assertEqual(('ERROR', ondemand.SCALE_OUT, 'failed'),
                         (level, event, data['outcome']))

    def test_host_the_scheduler_refuses_is_failed(self):
        self.start_host('host1', lease_cores=1)
        self.start_host('host2', lease_cores=2)
        first = self.boot_first()
        # Between the decision and the boot, host2's compute service is
        # disabled: the scheduler has no valid host for the request.
        self.api.put_service(self.api.get_services(
            binary='nova-compute', host='host2')[0]['id'],
                             {'status': 'disabled'})
        result = self.escalate(self.endpoint(), first)
        self.assertEqual('failed', result['outcome'], result['reason'])
        self.assertIn('No valid host', result['reason'])

    def test_server_of_another_project_is_not_booted(self):
        self.start_host('host1', lease_cores=1)
        self.start_host('host2', lease_cores=2)
        first = self.boot_first()
        # The optimizer's credentials are scoped to another project.
        api = self.api
        optimizer = self.compute.for_endpoint(
            api.base_url, headers={'X-Auth-User': api.auth_user,
                                   'X-User-Id': api.auth_user,
                                   'X-Auth-Project-Id': 'optimizer-project',
                                   'X-Roles': ','.join(api.roles)},
            poll_interval=0.1)
        result = self.escalate(self.endpoint(compute=optimizer), first)
        self.assertEqual(('scale_out', 'not_booted', 'host2', None), (
            result['decision'], result['outcome'], result['target_host'],
            result['server_uuid']))
        self.assertIn('server %s is in project %s; the optimizer boots only '
                      'in its own project optimizer-project'
                      % (first['id'], api.project_id), result['reason'])
        self.assertIn('must boot it on host2', result['reason'])
        self.assertEqual(1, len(self.servers()))
        self.assertEqual(0, self.lease_usage('host2'))

    def test_notify_mode_announces_only(self):
        self.start_host('host1', lease_cores=1)
        self.start_host('host2', lease_cores=2)
        first = self.boot_first()
        result = self.escalate(self.endpoint(mode=ondemand.NOTIFY), first)
        self.assertEqual(('scale_out', 'not_booted', 'host2'), (
            result['decision'], result['outcome'], result['target_host']))
        self.assertIn('ondemand_scale_out is notify', result['reason'])
        self.assertEqual(1, len(self.servers()))
        self.assertEqual([ondemand.SCALE_OUT],
                         [event for _, event, _ in self.notes()])
        self.assertEqual([], self.notes(actions=True))

    def test_default_configuration_boots_nothing(self):
        self.start_host('host1', lease_cores=1)
        self.start_host('host2', lease_cores=2)
        first = self.boot_first()
        conf = cfg.ConfigOpts()
        resq_nova_conf.register_opts(conf)
        conf([], project='resq', default_config_files=[])
        endpoint = ondemand.EscalationEndpoint.from_conf(
            conf, self.client, self.notifier, self.compute)
        result = self.escalate(endpoint, first)
        self.assertEqual(('off', 'not_booted', None), (
            result['decision'], result['outcome'], result['target_host']))
        self.assertEqual(1, len(self.servers()))
        self.assertEqual(0, self.lease_usage('host2'))
        self.assertEqual([], self.notes() + self.notes(actions=True))

    def test_a_boot_that_fails_is_announced_as_failed(self):
        self.start_host('host1', lease_cores=1)
        self.start_host('host2', lease_cores=2)
        first = self.boot_first()
        # The clone's boot fails on host2 (its driver cannot spawn).
        self.useFixture(fixtures.MockPatchObject(
            self.computes['host2'].driver, 'spawn',
            side_effect=RuntimeError('injected: spawn failed')))
        result = self.escalate(self.endpoint(), first)
        self.assertEqual(('scale_out', 'failed'), (
            result['decision'], result['outcome']), result['reason'])
        [(level, _, data)] = self.notes()
        self.assertEqual(('ERROR', 'failed'), (level, data['outcome']))
        (_, _, start), (level, event, end) = self.notes(actions=True)
        self.assertEqual(('ERROR', actions.END, 'failed',
                          result['server_uuid']),
                         (level, event, end['outcome'], end['server_uuid']))
        self.assertIn('ERROR', end['detail'])

    def test_cap_reached_is_unmet(self):
        self.start_host('host1', lease_cores=1)
        self.start_host('host2', lease_cores=2)
        first = self.boot_first()
        result = self.escalate(self.endpoint(max_instances=1), first)
        self.assertEqual(('unmet', 'not_booted', None), (
            result['decision'], result['outcome'], result['target_host']))
        self.assertIn('term %s has 1 servers (%s-1), [resq_optimizer] '
                      'ondemand_max_instances is 1' % (TERM, TERM),
                      result['reason'])
        self.assertEqual(1, len(self.servers()))
        [(level, event, data)] = self.notes()
        self.assertEqual(('ERROR', ondemand.UNMET), (level, event))

    def test_server_of_a_reserved_flavor_is_not_cloned(self):
        self.start_host('host1', lease_cores=1)
        self.start_host('host2', lease_cores=2)
        server = self._create_server(
            name='fw-1', flavor_id=self.resq_flavor(ways=2), networks='none',
            host='host1')
        result = self.escalate(self.endpoint(), server)
        self.assertEqual('not_booted', result['outcome'])
        self.assertIn('not an on-demand one', result['reason'])
        self.assertEqual(1, len(self.servers()))


class ScaleOutOverBrokerTest(ScaleOutBase):
    """The whole path over the RabbitMQ broker on this machine.

    The agent's :class:`~resq_agent.ondemand.escalation.Escalator` sends
    the escalation (notification and RPC cast), the optimizer's RPC server
    receives it, boots the clone in Nova's harness and sends its decision,
    which a listener on the broker reads.
    """

    def setUp(self):
        super().setUp()
        ok, reason = agent_service.broker_reachable([messaging.BROKER])
        if not ok:
            self.fail('RabbitMQ is not running on %s:%d (%s); start it with '
                      '"rabbitmq-server -detached"'
                      % (messaging.BROKER + (reason,)))
        tag = uuid.uuid4().hex[:10]
        self.bconf = cfg.ConfigOpts()
        resq_nova_conf.register_opts(self.bconf)
        agent_conf.register_opts(self.bconf)
        agent_rpc.register_opts(self.bconf)
        self.bconf([], project='resq')
        self.bconf.set_override('transport_url', messaging.rabbit_url())
        self.bconf.set_override('control_exchange', 'resq-scale-%s' % tag)
        self.bconf.set_override('rpc_topic', 'resq_opt_%s' % tag,
                                'resq_optimizer')
        self.bconf.set_override('notification_topics',
                                ['resq_opt_notes_%s' % tag],
                                'resq_optimizer')
        self.bconf.set_override('optimizer_topic', 'resq_opt_%s' % tag,
                                'resq_agent')
        self.bconf.set_override('notification_topics',
                                ['resq_agent_notes_%s' % tag], 'resq_agent')
        self.bconf.set_override('ondemand_scale_out', 'boot',
                                'resq_optimizer')

    def transport(self, rpc=True):
        get = (oslo_messaging.get_rpc_transport if rpc else
               oslo_messaging.get_notification_transport)
        transport = get(self.bconf)
        self.addCleanup(transport.cleanup)
        return transport

    def test_agent_escalation_boots_the_clone_over_the_broker(self):
        self.start_host('host1', lease_cores=1)
        self.start_host('host2', lease_cores=2)
        first = self.boot_first()
        got = queue.Queue()

        class Listener:
            def info(self, ctxt, publisher_id, event_type, payload, meta):
                got.put(('INFO', event_type, payload))

            def error(self, ctxt, publisher_id, event_type, payload, meta):
                got.put(('ERROR', event_type, payload))

        listener = oslo_messaging.get_notification_listener(
            self.transport(rpc=False), [oslo_messaging.Target(
                topic=t) for t in
                self.bconf.resq_optimizer.notification_topics],
            [Listener()], executor='threading')
        listener.start()
        self.addCleanup(listener.wait)
        self.addCleanup(listener.stop)
        note = notifier.PlanNotifier(self.bconf, self.transport(rpc=False),
                                     host='ctl-1')
        endpoint = ondemand.EscalationEndpoint.from_conf(
            self.bconf, self.client, note, self.compute)
        server = ondemand.get_server(self.bconf, self.transport(), endpoint)
        server.start()
        self.addCleanup(server.wait)
        self.addCleanup(server.stop)
        esc = escalation.Escalator(self.bconf, self.transport(),
                                   self.transport(rpc=False), 'host1')
        self.assertEqual(1, esc.send([{
            'instance_uuid': first['id'], 'domain_id': 0, 'lease_ways': 4,
            'vcpus': 1, 'target_us': 60.0,
            'reason': 'latency above target with an isolated class'}]))
        # The boot's start and end, then the decision.
        sent = [got.get(timeout=messaging.WAIT * 3) for _ in range(3)]
        self.assertEqual([actions.START, actions.END, ondemand.SCALE_OUT],
                         [event for _, event, _ in sent])
        self.assertEqual('booted', sent[1][2]['resq_object.data']['outcome'])
        level, event, body = sent[2]
        data = body['resq_object.data']
        self.assertEqual(('INFO', ondemand.SCALE_OUT, 'booted', 'host2'),
                         (level, event, data['outcome'],
                          data['server_host']), data['reason'])
        clone = self.api.get_server(data['server_uuid'])
        self.assertEqual(('%s-2' % TERM, 'ACTIVE', 'host2'), (
            clone['name'], clone['status'], clone['OS-EXT-SRV-ATTR:host']))
        self.assertEqual(first['id'],
                         clone['metadata'][ondemand.SCALED_FROM_KEY])
