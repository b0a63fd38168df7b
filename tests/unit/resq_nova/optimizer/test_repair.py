"""The optimizer acts only when asked: repair, its window, its actions.

Live migrations against real Nova are in tests/functional/test_optimizer.py;
here an in-memory compute and resq-api stand in, to check what the service
round does with each configuration and what it logs and announces.
"""

import datetime
import os
import types

import fixtures
from oslo_config import cfg

from resq_common.clients import compute as compute_mod
from resq_nova.conf import optimizer as optimizer_conf
from resq_nova.optimizer import actions
from resq_nova.optimizer import execute
from resq_nova.optimizer import service
from tests import base

A = '11111111-0000-0000-0000-00000000000a'
B = '11111111-0000-0000-0000-00000000000b'


def at(hour, minute=0):
    return datetime.datetime(2026, 11, 26, hour, minute,
                             tzinfo=datetime.timezone.utc)


class Nova:
    """Servers that move where Nova's scheduler would put them."""

    def __init__(self, fail=()):
        self.servers = {u: {'id': u, 'name': n, 'status': 'ACTIVE',
                            'OS-EXT-STS:task_state': None,
                            'OS-EXT-SRV-ATTR:host': 'h1'}
                        for u, n in ((A, 'a'), (B, 'b'))}
        self.fail = set(fail)
        self.migrated = []

    def identity(self):
        return {'user_id': 'u-42', 'project_id': 'p-7'}

    def get_server(self, uuid, microversion=None):
        return dict(self.servers[uuid])

    def live_migrate(self, uuid, host):
        self.migrated.append((uuid, host))
        if uuid in self.fail:
            raise compute_mod.ComputeError(
                method='POST', url='/servers/%s/action' % uuid,
                reason='400 No valid host was found')
        self.servers[uuid]['OS-EXT-SRV-ATTR:host'] = 'h2'


class ResQAPI:
    """resq-api's isolation records, as the agents write them."""

    def __init__(self, uuids=(A, B)):
        self.records = {u: {'server_uuid': u, 'host': 'h1',
                            'status': 'misplaced',
                            'detail': 'misplaced on h1: cores in domain 1, '
                                      'ways in domain 0'} for u in uuids}

    def list_isolation(self, status=None):
        return [dict(r) for r in self.records.values()
                if r['status'].startswith(status or '')]

    def set_isolation(self, uuid, status, host, detail):
        self.records[uuid].update(status=status, host=host, detail=detail)


class Notifications:
    """An oslo.messaging notifier's calls: ``[(level, event, payload)]``."""

    def __init__(self):
        self.sent = []
        self.notifier = self

    def info(self, ctxt, event_type, payload):
        self.sent.append(('INFO', event_type, payload))

    def error(self, ctxt, event_type, payload):
        self.sent.append(('ERROR', event_type, payload))

    def send_repair(self, result):
        (self.error if result['outcome'] != 'done' else self.info)(
            {}, 'resq.optimizer.repair', dict(result))

    def actions(self):
        return [(level, event, p['resq_object.data'])
                for level, event, p in self.sent
                if event.startswith('resq.optimizer.action.')]


class RepairRoundTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.flags('resq_optimizer', poll_interval=0.01,
                   state_dir=os.path.join(self.tmp, 'state'))
        self.flags('nova', username='resq-optimizer', project_name='service')
        self.nova = Nova()
        self.api = ResQAPI()
        self.note = Notifications()
        self.logs = self.useFixture(fixtures.FakeLogger(level='INFO'))

    def flags(self, group, **kw):
        if group == 'nova':
            # As loading the [nova] password plugin registers them.
            self.conf_fixture.register_opts(
                [cfg.StrOpt(k) for k in kw], group='nova')
        super().flags(group, **kw)

    def optimizer(self):
        return service.Optimizer(self.conf, compute=self.nova,
                                 notifier=self.note, isolation=self.api)

    def test_default_moves_nothing_and_says_what_waits(self):
        opt = self.optimizer()
        self.assertEqual([], opt.repair_round(now=at(3)))
        self.assertEqual([], self.nova.migrated)
        self.assertEqual([], self.note.sent)
        self.assertIn('2 server(s) run without isolation (%s on h1, %s on '
                      'h1); not moved: [resq_optimizer] repair_isolation is '
                      'off' % (A, B), self.logs.output)

    def test_a_default_service_round_migrates_nothing(self):
        opt = self.optimizer()
        planned = []
        self.useFixture(fixtures.MockPatchObject(
            opt, 'plan', side_effect=lambda: planned.append(1) or (
                {'id': 'p', 'proposed': False}, None)))
        self.useFixture(fixtures.MockPatchObject(opt, 'recover',
                                                 return_value=[]))
        opt.tick()
        self.assertEqual([1], planned)
        self.assertEqual([], self.nova.migrated)
        self.assertEqual({'misplaced'}, {r['status'] for r in
                                         self.api.records.values()})

    def test_enabled_repair_moves_and_says_who_and_why(self):
        self.flags('resq_optimizer', repair_isolation=True)
        results = self.optimizer().repair_round(now=at(3))
        self.assertEqual([(A, 'done', 'h2'), (B, 'done', 'h2')],
                         [(r['uuid'], r['outcome'], r['to_host'])
                          for r in results])
        self.assertEqual([(A, None), (B, None)], self.nova.migrated)
        self.assertEqual('moved', self.api.records[A]['status'])
        sent = self.note.actions()
        self.assertEqual([('INFO', actions.START), ('INFO', actions.END)] * 2,
                         [(level, event) for level, event, _ in sent])
        start, end = sent[0][2], sent[1][2]
        self.assertEqual({
            'action': 'repair_migration', 'server_uuid': A,
            'server_name': 'a', 'host': 'h1', 'target_host': None,
            'plan_id': None, 'user_id': 'u-42',
            'user_name': 'resq-optimizer', 'project_id': 'p-7',
            'project_name': 'service', 'outcome': None, 'detail': None,
            'result_host': None,
            'reason': 'repair of server %s reported without isolation on '
                      'h1 (misplaced on h1: cores in domain 1, ways in '
                      'domain 0)' % A}, start)
        self.assertEqual(('done', 'h2'), (end['outcome'],
                                          end['result_host']))
        self.assertIn('resq-optimizer as user resq-optimizer (u-42) of '
                      'project service (p-7) starts the repair live '
                      'migration of server a on h1: repair of server %s '
                      'reported without isolation' % A, self.logs.output)

    def test_failed_migration_is_announced_as_failed(self):
        self.flags('resq_optimizer', repair_isolation=True)
        self.nova.fail.add(A)
        results = self.optimizer().repair_round(now=at(3))
        self.assertEqual(['failed', 'done'], [r['outcome'] for r in results])
        (_, _, _), (level, event, end) = self.note.actions()[:2]
        self.assertEqual(('ERROR', actions.END, A, 'failed'),
                         (level, event, end['server_uuid'], end['outcome']))
        self.assertIn('No valid host', end['detail'])
        self.assertEqual('misplaced', self.api.records[A]['status'])

    def test_outside_the_window_nothing_moves(self):
        self.flags('resq_optimizer', repair_isolation=True,
                   repair_window='22:00-04:00')
        opt = self.optimizer()
        for now in (at(4), at(12), at(21, 59)):
            self.assertEqual([], opt.repair_round(now=now))
        self.assertEqual([], self.nova.migrated)
        self.assertEqual([], self.note.sent)
        self.assertIn('Outside [resq_optimizer] repair_window 22:00-04:00 '
                      '(UTC)', self.logs.output)
        self.assertEqual(2, len(opt.repair_round(now=at(23, 30))))
        self.assertEqual(2, len(self.nova.migrated))

    def test_no_move_starts_once_the_window_closed(self):
        self.flags('resq_optimizer', repair_isolation=True,
                   repair_window='01:00-02:00')
        opt = self.optimizer()
        clock = iter([at(1, 30), at(1, 59), at(2, 0)])
        opt.utcnow = lambda: next(clock)
        results = opt.repair_round()
        self.assertEqual([A], [r['uuid'] for r in results])
        self.assertIn('repair_window 01:00-02:00 (UTC) closed',
                      self.logs.output)

    def test_an_operator_repair_ignores_option_and_window(self):
        self.flags('resq_optimizer', repair_window='01:00-02:00')
        self.assertEqual(2, len(self.optimizer().repair()))


class WindowTest(base.TestCase):

    def test_windows(self):
        night = optimizer_conf.parse_window('22:00-04:00')
        self.assertEqual((1320, 240), (night.start, night.end))
        self.assertTrue(night.contains(at(23)))
        self.assertTrue(night.contains(at(0)))
        self.assertTrue(night.contains(at(3, 59)))
        self.assertFalse(night.contains(at(4)))
        self.assertFalse(night.contains(at(12)))
        day = optimizer_conf.parse_window(' 09:30-10:00 ')
        self.assertTrue(day.contains(at(9, 30)))
        self.assertFalse(day.contains(at(10)))
        # Another time zone is judged in UTC.
        cet = datetime.timezone(datetime.timedelta(hours=1))
        self.assertTrue(day.contains(datetime.datetime(
            2026, 11, 26, 10, 45, tzinfo=cet)))
        self.assertIsNone(optimizer_conf.parse_window(''))

    def test_bad_windows_are_refused_by_name(self):
        for text in ('25:00-03:00', '22:00', '22-04', '9:00-10:00',
                     '10:00-10:00', 'night'):
            exc = self.assertRaises(ValueError, optimizer_conf.parse_window,
                                    text)
            self.assertIn('[resq_optimizer] repair_window must be '
                          '"HH:MM-HH:MM" in UTC', str(exc))
            self.assertIn(repr(text), str(exc))

    def test_bad_window_in_the_file_stops_the_optimizer_at_start(self):
        path = os.path.join(self.tmp, 'resq-optimizer.conf')
        with open(path, 'w') as f:
            f.write('[resq_optimizer]\nrepair_window = 22:00-4\n')
        self.conf(['--config-file', path], project='resq')
        exc = self.assertRaises(ValueError, service.Optimizer, self.conf,
                                store=object())
        self.assertIn('repair_window in %s is not valid: '
                      '[resq_optimizer] repair_window must be "HH:MM-HH:MM" '
                      'in UTC' % path, str(exc))
        self.assertIn("'22:00-4'", str(exc))
        self.assertNotIn('LocationInfo', str(exc))


class PlanActionsTest(base.TestCase):
    """A plan's moves, as the executor reports them, announced."""

    def test_start_and_true_end_of_each_move(self):
        note = Notifications()
        opt = service.Optimizer(self.conf, compute=Nova(), notifier=note,
                                store=object())
        plan = {'id': 'plan-1', 'reason': 'frees 1 host(s)'}
        announce = opt._announcer(plan)
        moves = [dict(uuid=u, name=n, from_host='h1', to_host='h2')
                 for u, n in ((A, 'a'), (B, 'b'))]
        announce(dict(moves[0], outcome=execute.REQUESTED))
        announce(dict(moves[0], outcome='started'))
        announce(dict(moves[0], outcome=execute.DONE))
        announce(dict(moves[1], outcome=execute.REQUESTED))
        announce(dict(moves[1], outcome=execute.FAILED,
                      detail='the migration ended in error'))
        # A move never asked of Nova was no action.
        announce(dict(moves[1], uuid='c', outcome=execute.NOT_RUN))
        got = [(level, event, d['server_uuid'], d['outcome'],
                d['result_host']) for level, event, d in note.actions()]
        self.assertEqual([
            ('INFO', actions.START, A, None, None),
            ('INFO', actions.END, A, 'done', 'h2'),
            ('INFO', actions.START, B, None, None),
            ('ERROR', actions.END, B, 'failed', None)], got)
        data = note.actions()[0][2]
        self.assertEqual(('plan_migration', 'plan-1', 'h2',
                          'plan plan-1 (frees 1 host(s))', 'u-42', 'p-7'),
                         (data['action'], data['plan_id'],
                          data['target_host'], data['reason'],
                          data['user_id'], data['project_id']))


class ActorTest(base.TestCase):

    def test_identity_from_the_token_or_the_headers(self):
        client = compute_mod.ComputeClient.for_endpoint(
            'http://nova', headers={'X-User-Id': 'u1',
                                    'X-Auth-Project-Id': 'p1'})
        self.assertEqual({'user_id': 'u1', 'project_id': 'p1'},
                         client.identity())
        bare = compute_mod.ComputeClient.for_endpoint('http://nova')
        self.assertEqual({'user_id': None, 'project_id': None},
                         bare.identity())
        log = actions.ActionLog(compute=types.SimpleNamespace())
        self.assertEqual('resq-optimizer as user unknown of project unknown',
                         log.who(log.actor()))
