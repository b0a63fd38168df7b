"""The pure parts of the optimizer's on-demand scale-out.

Booting against real Nova is in tests/functional/test_nova_scale_out.py;
here a small in-memory compute stands in for Nova only to inject what the
harness cannot make on demand (a boot that never settles, a refused
request, a clone caught while building, two escalations at once).
"""

import datetime
import threading

import fixtures

from resq_agent.ondemand import escalation
from resq_common.clients import compute as compute_mod
from resq_nova.optimizer import actions
from resq_nova.optimizer import ondemand
from tests import base
from tests.unit.resq_nova.optimizer import test_repair

ORIGIN = '11111111-0000-0000-0000-000000000001'
NOW = datetime.datetime(2026, 11, 23, 18, 0, 0,
                        tzinfo=datetime.timezone.utc).timestamp()


def od_flavor(term='od-a', name=None, slo='on-demand'):
    specs = {'resq:slo': slo}
    if term:
        specs['resq:term'] = term
    return {'original_name': name or 'resq.%s.ondemand' % (term or 'x'),
            'extra_specs': specs}


def stamp(seconds_ago):
    return datetime.datetime.fromtimestamp(
        NOW - seconds_ago, datetime.timezone.utc).strftime(
            '%Y-%m-%dT%H:%M:%SZ')


def clone(uuid, status, seconds_ago, origin=ORIGIN, name='od-a-2'):
    return {'id': uuid, 'name': name, 'status': status,
            'created': stamp(seconds_ago),
            'metadata': {ondemand.SCALED_FROM_KEY: origin}}


class TermTest(base.TestCase):

    def test_term_from_the_flavor(self):
        self.assertEqual(('od-a', 'resq.od-a.ondemand'), ondemand.term_of(
            {'id': 'x', 'flavor': od_flavor()}))
        # Without resq:term, from the name resq-admit gives the flavor.
        self.assertEqual(('fw.b', 'resq.fw.b.ondemand'), ondemand.term_of(
            {'id': 'x', 'flavor': od_flavor(None, 'resq.fw.b.ondemand')}))

    def test_not_an_on_demand_server(self):
        exc = self.assertRaises(ondemand.CannotClone, ondemand.term_of, {
            'id': 'x', 'flavor': od_flavor(slo='reserved')})
        self.assertIn('not an on-demand one', str(exc))
        exc = self.assertRaises(ondemand.CannotClone, ondemand.term_of, {
            'id': 'x', 'flavor': od_flavor(None, 'my-flavor')})
        self.assertIn("'my-flavor' without resq:term", str(exc))

    def test_term_servers_and_next_name(self):
        servers = [{'name': n} for n in ('od.a-1', 'od.a-3', 'odxa-2',
                                         'od.a-1b', 'od.a-', 'x-od.a-4')]
        numbered = ondemand.term_servers('od.a', servers)
        self.assertEqual([1, 3], sorted(numbered))
        self.assertEqual('od.a-4', ondemand.next_name('od.a', numbered))
        self.assertEqual('od.a-1', ondemand.next_name('od.a', {}))
        self.assertEqual('^od\\.a-[0-9]+$', ondemand.name_pattern('od.a'))


class ExistingCloneTest(base.TestCase):

    def test_building_clone_is_in_progress_however_old(self):
        found = ondemand.existing_clone(
            ORIGIN, [clone('c1', 'BUILD', 5000)], NOW, 600)
        self.assertEqual((ondemand.IN_PROGRESS, 'c1'),
                         (found[0], found[1]['id']))

    def test_recent_clone_is_reused_old_or_failed_ones_are_not(self):
        self.assertEqual((ondemand.REUSED, 'c2'), (lambda f: (
            f[0], f[1]['id']))(ondemand.existing_clone(ORIGIN, [
                clone('c1', 'ACTIVE', 500), clone('c2', 'ACTIVE', 100),
                clone('c3', 'ERROR', 10)], NOW, 600)))
        self.assertIsNone(ondemand.existing_clone(ORIGIN, [
            clone('c1', 'ACTIVE', 700), clone('c3', 'ERROR', 10),
            clone('c4', 'BUILD', 1, origin='other')], NOW, 600))
        self.assertIsNone(ondemand.existing_clone(ORIGIN, [
            clone('c1', 'ACTIVE', 1)], NOW, 0))


class CloneRequestTest(base.TestCase):

    def test_image_networks_key_and_groups(self):
        server = {'id': 'x', 'image': {'id': 'img'}, 'key_name': 'ops',
                  'security_groups': [{'name': 'web'}, {'name': 'default'},
                                      {'name': 'web'}]}
        self.assertEqual({'image': 'img', 'network': ['n1', 'n2'],
                          'key_name': 'ops',
                          'security_groups': ['default', 'web']},
                         ondemand.clone_request(server, [
                             {'net_id': 'n1'}, {'net_id': 'n2'}]))
        # No port: no network, and no security group (they are ports').
        self.assertEqual({'image': 'img', 'network': 'none',
                          'key_name': 'ops', 'security_groups': None},
                         ondemand.clone_request(server, []))

    def test_boot_from_volume_is_refused_by_name(self):
        exc = self.assertRaises(ondemand.CannotClone, ondemand.clone_request,
                                {'id': 'x', 'image': ''}, [])
        self.assertIn('server x was booted from a volume', str(exc))


class Nova:
    """In-memory compute API for failure injection (see module doc)."""

    def __init__(self, project='p1', settle='ACTIVE'):
        self.project = project
        self.settle = settle
        self.refuse = None
        self.servers = {ORIGIN: {
            'id': ORIGIN, 'name': 'od-a-1', 'status': 'ACTIVE',
            'tenant_id': 'p1', 'flavor': od_flavor(), 'image': {'id': 'i'},
            'created': stamp(9999), 'metadata': {},
            'OS-EXT-SRV-ATTR:host': 'h1'}}
        self.created = []
        self.lock = threading.Lock()

    def get_server(self, uuid, microversion=None):
        return dict(self.servers[uuid])

    def project_id(self):
        return self.project

    def list_servers_detail(self, regex):
        with self.lock:
            return [dict(s) for s in self.servers.values()]

    def find_flavor(self, name):
        return {'id': 'f1'}

    def list_interfaces(self, uuid):
        return []

    def has_keypair(self, name):
        return False

    def create_server(self, name, flavor_id, image, network, host=None,
                      metadata=None, key_name=None, security_groups=None):
        if self.refuse:
            raise compute_mod.ComputeError(method='POST', url='/servers',
                                           reason=self.refuse)
        with self.lock:
            uuid = 'c%d' % (len(self.created) + 1)
            self.created.append((name, host, metadata, network))
            self.servers[uuid] = {'id': uuid, 'name': name,
                                  'status': 'BUILD', 'created': stamp(0),
                                  'metadata': dict(metadata),
                                  'OS-EXT-SRV-ATTR:host': None}
        return uuid

    def wait_for_server(self, uuid, timeout):
        server = self.servers[uuid]
        server['status'] = self.settle
        if self.settle == 'ACTIVE':
            server['OS-EXT-SRV-ATTR:host'] = 'h2'
        return dict(server)

    def instance_actions(self, uuid):
        return []


class ScaleOutTest(base.TestCase):

    def run_once(self, nova, **kwargs):
        return ondemand.ScaleOut(nova, wall=lambda: NOW, **kwargs).run(
            ORIGIN, 'h2')

    def test_booted(self):
        nova = Nova()
        outcome, reason, uuid, host = self.run_once(nova)
        self.assertEqual((ondemand.BOOTED, 'c1', 'h2'),
                         (outcome, uuid, host))
        self.assertEqual([('od-a-2', 'h2', {'resq_scaled_from': ORIGIN},
                           'none')], nova.created)

    def test_boot_that_never_settles_is_failed(self):
        outcome, reason, uuid, host = self.run_once(Nova(settle='BUILD'),
                                                    boot_timeout=30)
        self.assertEqual((ondemand.FAILED, 'c1'), (outcome, uuid))
        self.assertIn('is still BUILD after 30s', reason)

    def test_refused_request_is_failed(self):
        nova = Nova()
        nova.refuse = '403 Policy does not allow hypervisor_hostname'
        outcome, reason, uuid, host = self.run_once(nova)
        self.assertEqual((ondemand.FAILED, None), (outcome, uuid))
        self.assertIn('Nova refused to boot od-a-2 on h2', reason)
        self.assertIn('Policy does not allow', reason)

    def test_key_pair_of_another_user_is_said(self):
        nova = Nova()
        nova.servers[ORIGIN]['key_name'] = 'alice'
        outcome, reason, uuid, host = self.run_once(nova)
        self.assertEqual(ondemand.BOOTED, outcome)
        self.assertIn("key pair alice is not the optimizer user's", reason)

    def test_clone_still_building_is_in_progress(self):
        nova = Nova(settle='BUILD')
        nova.servers['c9'] = dict(clone('c9', 'BUILD', 30), name='od-a-2')
        outcome, reason, uuid, host = self.run_once(nova)
        self.assertEqual((ondemand.IN_PROGRESS, 'c9'), (outcome, uuid))
        self.assertEqual([], nova.created)

    def test_two_escalations_at_once_boot_one_clone(self):
        nova = Nova(settle='BUILD')
        scale = ondemand.ScaleOut(nova, wall=lambda: NOW, boot_timeout=1)
        results = []
        threads = [threading.Thread(target=lambda: results.append(
            scale.run(ORIGIN, 'h2')[0])) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(1, len(nova.created))
        self.assertEqual(1, results.count(ondemand.FAILED))
        self.assertEqual(3, results.count(ondemand.IN_PROGRESS))

    def test_other_project_and_cap(self):
        outcome, reason, _, _ = self.run_once(Nova(project='p2'))
        self.assertEqual(ondemand.NOT_BOOTED, outcome)
        self.assertIn('server %s is in project p1; the optimizer boots only '
                      'in its own project p2' % ORIGIN, reason)
        outcome, reason, _, _ = self.run_once(Nova(), max_instances=1)
        self.assertEqual('unmet', outcome)
        self.assertIn('ondemand_max_instances is 1', reason)


class FromConfTest(base.TestCase):

    def test_options_reach_the_scale_out(self):
        self.conf_fixture.config(group='resq_optimizer',
                                 ondemand_scale_out='boot',
                                 ondemand_max_instances=3,
                                 ondemand_boot_timeout=42.0,
                                 ondemand_clone_window=7)
        ep = ondemand.EscalationEndpoint.from_conf(self.conf, None,
                                                   compute=Nova())
        self.assertEqual((3, 42.0, 7), (ep.scale_out.max_instances,
                                        ep.scale_out.boot_timeout,
                                        ep.scale_out.window))
        self.conf_fixture.config(group='resq_optimizer',
                                 ondemand_scale_out='notify')
        ep = ondemand.EscalationEndpoint.from_conf(self.conf, None,
                                                   compute=Nova())
        self.assertIsNone(ep.scale_out)

    def test_unknown_mode_is_refused_by_oslo_config(self):
        self.assertRaises(ValueError, self.conf_fixture.config,
                          group='resq_optimizer', ondemand_scale_out='spawn')

    def test_default_is_off_and_does_nothing_but_log(self):
        class Nothing:
            def __getattr__(self, name):
                raise AssertionError('%s asked of the cloud' % name)

        note = test_repair.Notifications()
        logs = self.useFixture(fixtures.FakeLogger(level='INFO'))
        ep = ondemand.EscalationEndpoint.from_conf(
            self.conf, Nothing(), note, compute=Nothing())
        self.assertEqual(ondemand.OFF, ep.mode)
        self.assertIsNone(ep.scale_out)
        result = ep.escalate({}, escalation.payload('h1', {
            'instance_uuid': ORIGIN, 'vcpus': 1,
            'reason': 'latency above target'}))
        self.assertEqual(('off', 'not_booted', None), (
            result['decision'], result['outcome'], result['target_host']))
        self.assertIn('ondemand_scale_out is off', result['reason'])
        self.assertEqual([], note.sent)
        self.assertIn('On-demand NF %s on h1 escalated (latency above '
                      'target); [resq_optimizer] ondemand_scale_out is off'
                      % ORIGIN, logs.output)


class ScaleOutActionTest(base.TestCase):
    """A boot is an action: who asks, why, and its true outcome."""

    def run_once(self, nova):
        note = test_repair.Notifications()
        log = actions.ActionLog(note, nova)
        result = ondemand.ScaleOut(nova, wall=lambda: NOW,
                                   actions=log).run(
            ORIGIN, 'h2', why='on h1: latency above target')
        return result, note.actions()

    def test_booted(self):
        nova = Nova()
        nova.identity = lambda: {'user_id': 'u1', 'project_id': 'p1'}
        (outcome, _, uuid, _), sent = self.run_once(nova)
        self.assertEqual(ondemand.BOOTED, outcome)
        (l1, e1, start), (l2, e2, end) = sent
        self.assertEqual((('INFO', actions.START), ('INFO', actions.END)),
                         ((l1, e1), (l2, e2)))
        self.assertEqual(('scale_out_boot', None, 'od-a-2', 'h2', 'u1', 'p1',
                          'scale-out of term od-a: server %s escalated (on '
                          'h1: latency above target)' % ORIGIN),
                         (start['action'], start['server_uuid'],
                          start['server_name'], start['target_host'],
                          start['user_id'], start['project_id'],
                          start['reason']))
        self.assertEqual(('booted', uuid, 'h2'), (
            end['outcome'], end['server_uuid'], end['result_host']))

    def test_refused_and_failed_boots_are_announced_as_failed(self):
        nova = Nova()
        nova.refuse = '403 Policy does not allow hypervisor_hostname'
        _, sent = self.run_once(nova)
        self.assertEqual([('INFO', actions.START, None),
                          ('ERROR', actions.END, 'failed')],
                         [(lv, ev, d['outcome']) for lv, ev, d in sent])
        self.assertIn('Policy does not allow', sent[1][2]['detail'])
        _, sent = self.run_once(Nova(settle='ERROR'))
        self.assertEqual(('ERROR', 'failed', 'c1'), (
            sent[1][0], sent[1][2]['outcome'], sent[1][2]['server_uuid']))

    def test_no_boot_no_action(self):
        nova = Nova(project='p2')
        (outcome, _, _, _), sent = self.run_once(nova)
        self.assertEqual(ondemand.NOT_BOOTED, outcome)
        self.assertEqual([], sent)
