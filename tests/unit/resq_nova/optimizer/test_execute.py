"""The executor's decisions, against a scripted cloud (failure injection).

The real path (Nova's API, conductor, scheduler and Placement) is in
tests/functional/test_optimizer.py; here a double of the two clients lets
a test decide when each migration ends, fails or hangs.
"""

import datetime
import threading

from resq_common import cache_domain
from resq_common.clients import compute as compute_mod
from resq_nova.optimizer import execute
from resq_nova.optimizer import snapshot
from tests import base
from tests.unit.resq_nova.optimizer import base as obase

ROOTS = {h: '00000000-0000-0000-0000-00000000000%d' % i
         for i, h in enumerate(('h1', 'h2', 'h3', 'h4'), 1)}


def rp(host, dom=0):
    return cache_domain.provider_uuid(ROOTS[host], dom)


class Cloud:
    """Nova and Placement as far as the executor sees them."""

    def __init__(self, snap):
        self.snap = snap
        self.servers = {i.uuid: {'id': i.uuid, 'status': 'ACTIVE',
                                 'OS-EXT-SRV-ATTR:host': i.host,
                                 'OS-EXT-STS:task_state': None}
                        for i in snap.instances}
        self.allocs = {i.uuid: {rp(i.host, i.domain): {
            'CUSTOM_LLC_WAY': i.ways, 'CUSTOM_LLC_CLOS': i.clos}}
            for i in snap.instances}
        self.refuse = {}
        self.hang = set()
        self.fail = set()
        self.started = []
        self.running = 0
        self.max_running = 0
        self.lock = threading.Lock()
        self.release = {}
        self.migrations = {}
        # uuid -> reads of its allocations before Nova frees the source
        self.lag = {}
        self.abort_refused = None
        self.aborted = []

    # compute
    def get_server(self, uuid, microversion=None):
        return dict(self.servers[uuid])

    def live_migrate(self, uuid, host):
        if uuid in self.refuse:
            raise compute_mod.ComputeError(method='POST', url='/x',
                                           reason=self.refuse[uuid])
        with self.lock:
            self.started.append(uuid)
            self.running += 1
            self.max_running = max(self.max_running, self.running)
        server = self.servers[uuid]
        server['status'] = 'MIGRATING'
        server['OS-EXT-STS:task_state'] = 'migrating'
        mig = {'id': len(self.migrations) + 1, 'uuid': 'mig-%s' % uuid,
               'status': 'running', 'dest_compute': host,
               'created_at': datetime.datetime.utcnow().isoformat()}
        self.migrations.setdefault(uuid, []).insert(0, mig)
        if uuid in self.hang:
            return 'req-%s' % uuid
        gate = self.release.get(uuid)
        if gate is not None:
            gate.wait(5)
        with self.lock:
            self.running -= 1
        server['status'] = 'ACTIVE'
        server['OS-EXT-STS:task_state'] = None
        if uuid not in self.fail:
            src = server['OS-EXT-SRV-ATTR:host']
            server['OS-EXT-SRV-ATTR:host'] = host
            inst = self.snap.instance(uuid)
            self.allocs[uuid] = {rp(host, 0): {
                'CUSTOM_LLC_WAY': inst.ways, 'CUSTOM_LLC_CLOS': inst.clos}}
            if self.lag.get(uuid):
                self.allocs[uuid][ROOTS[src]] = {'MEMORY_MB': 512}
            mig['status'] = 'completed'
        else:
            mig['status'] = 'error'
        return 'req-%s' % uuid

    def live_migrations(self, uuid):
        return [dict(m) for m in self.migrations.get(uuid, [])]

    def abort_live_migration(self, uuid, migration_id):
        if self.abort_refused:
            raise compute_mod.ComputeError(method='DELETE', url='/x',
                                           reason=self.abort_refused)
        self.aborted.append((uuid, migration_id))
        for mig in self.migrations[uuid]:
            if mig['id'] == migration_id:
                mig['status'] = 'cancelled'
        self.servers[uuid].update({'status': 'ACTIVE',
                                   'OS-EXT-STS:task_state': None})

    def instance_action(self, uuid, request_id):
        return {'events': [{'event': 'compute_live_migration',
                            'result': 'Error',
                            'details': 'libvirt: connection dropped'}]}

    # placement
    def get_allocations(self, uuid):
        if self.lag.get(uuid):
            self.lag[uuid] -= 1
            if not self.lag[uuid]:
                host = self.servers[uuid]['OS-EXT-SRV-ATTR:host']
                self.allocs[uuid] = {k: v for k, v in self.allocs[uuid].items()
                                     if k == rp(host, 0)}
        return dict(self.allocs[uuid])

    def get_inventories(self, provider):
        return {'CUSTOM_LLC_WAY': {'total': 11, 'reserved': 2},
                'CUSTOM_LLC_CLOS': {'total': 4, 'reserved': 1}}

    def get_usages(self, provider):
        ways = clos = 0
        for alloc in self.allocs.values():
            res = alloc.get(provider, {})
            ways += res.get('CUSTOM_LLC_WAY', 0)
            clos += res.get('CUSTOM_LLC_CLOS', 0)
        return {'CUSTOM_LLC_WAY': ways, 'CUSTOM_LLC_CLOS': clos}

    def find_provider(self, name):
        return {'uuid': ROOTS[name]}


class _Recorder(list):
    """A progress list that also calls ``hook`` on each record."""

    def __init__(self, items, hook):
        super().__init__(items)
        self.hook = hook

    def append(self, item):
        self.hook(item)
        super().append(item)


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


class ExecutorTest(base.TestCase):

    def setUp(self):
        super().setUp()
        hosts = []
        for h in ('h1', 'h2', 'h3', 'h4'):
            doc = obase.host(h)
            doc['domains'][0]['provider'] = rp(h)
            doc['uuid'] = ROOTS[h]
            hosts.append(doc)
        self.snap = snapshot.from_dict(obase.snapshot(
            hosts, [obase.inst('a', 'h1'), obase.inst('b', 'h2'),
                    obase.inst('c', 'h3', ways=8), obase.inst('d', 'h4')]))
        self.cloud = Cloud(self.snap)
        self.clock = Clock()
        self.seen = []

    def plan(self, *moves):
        return {'id': 'plan-x', 'hosts_used_before': 4,
                'hosts_used_after': 2, 'lower_bound': 2, 'gap_pct': 0.0,
                'proposed': True, 'reason': 'test', 'status': 'proposed',
                'moves': [{'uuid': u, 'from_host': self.snap.instance(u).host,
                           'from_domain': 0, 'to_host': h, 'to_domain': 0,
                           'ways': self.snap.instance(u).ways}
                          for u, h in moves]}

    def apply(self, plan, **kw):
        kw.setdefault('poll_interval', 1.0)
        executor = execute.Executor(self.cloud, self.cloud,
                                    progress=self.seen.append,
                                    clock=self.clock, sleep=self.clock.sleep,
                                    **kw)
        return executor.apply(plan, snap=self.snap)

    def outcomes(self, plan):
        return [(a['uuid'], a['outcome']) for a in plan['actions']]

    def test_all_done(self):
        plan = self.apply(self.plan(('a', 'h2'), ('d', 'h2')))
        self.assertEqual(execute.APPLIED, plan['status'])
        self.assertEqual([('a', 'done'), ('d', 'done')],
                         self.outcomes(plan))
        # Requested before os-migrateLive, started once Nova accepted it.
        self.assertEqual(['requested', 'started', 'done'] * 2,
                         [s['outcome'] for s in self.seen])

    def test_no_answer_is_judged_by_novas_migrations(self):
        real = self.cloud.live_migrate

        def lost_answer(uuid, host):
            real(uuid, host)
            raise compute_mod.ComputeUnavailable(reason='reset')

        self.cloud.live_migrate = lost_answer
        plan = self.apply(self.plan(('a', 'h2')))
        # Nova had it and completed it: done, not "refused".
        self.assertEqual([('a', 'done')], self.outcomes(plan))
        self.assertNotIn('started', [s['outcome'] for s in self.seen])

    def recover(self, uuid, to_host, since):
        action = {'uuid': uuid, 'from_host': self.snap.instance(uuid).host,
                  'to_host': to_host, 'to_domain': 0, 'outcome': 'ongoing'}
        executor = execute.Executor(self.cloud, self.cloud, timeout=60,
                                    poll_interval=1.0, clock=self.clock,
                                    sleep=self.clock.sleep)
        executor.recover(action, since)
        return action

    def test_recover_a_request_never_sent(self):
        action = self.recover('a', 'h2', execute._now())
        self.assertEqual(execute.NOT_RUN, action['outcome'])
        self.assertIn('not started: Nova has no live migration of it to h2',
                      action['detail'])

    def test_recover_waits_for_a_running_migration(self):
        self.cloud.hang.add('a')
        since = execute._now()
        self.cloud.live_migrate('a', 'h2')
        sleep = self.clock.sleep

        def finish_later(seconds):
            sleep(seconds)
            if self.clock.now >= 5:
                server = self.cloud.servers['a']
                server.update({'status': 'ACTIVE',
                               'OS-EXT-STS:task_state': None,
                               'OS-EXT-SRV-ATTR:host': 'h2'})
                self.cloud.allocs['a'] = {rp('h2', 0): {
                    'CUSTOM_LLC_WAY': 2}}
                self.cloud.migrations['a'][0]['status'] = 'completed'

        self.clock.sleep = finish_later
        action = self.recover('a', 'h2', since)
        self.assertEqual(execute.DONE, action['outcome'], action['detail'])
        self.assertGreaterEqual(self.clock.now, 5)

    def test_recover_a_failed_migration(self):
        self.cloud.fail.add('a')
        since = execute._now()
        self.cloud.live_migrate('a', 'h2')
        action = self.recover('a', 'h2', since)
        self.assertEqual(execute.FAILED, action['outcome'])
        self.assertIn('migration error', action['detail'])

    def test_refused_by_nova_stops_the_plan(self):
        self.cloud.refuse['a'] = '400 No valid host was found'
        plan = self.apply(self.plan(('a', 'h2'), ('d', 'h2')))
        self.assertEqual(execute.PLAN_FAILED, plan['status'])
        self.assertEqual([('a', 'failed'), ('d', 'not-run')],
                         self.outcomes(plan))
        self.assertIn('Nova refused the live migration', plan['actions'][0][
            'detail'])
        self.assertIn('No valid host', plan['actions'][0]['detail'])
        self.assertEqual([], self.cloud.started)

    def test_failed_migration_has_novas_reason(self):
        self.cloud.fail.add('a')
        plan = self.apply(self.plan(('a', 'h2'), ('d', 'h2')))
        self.assertEqual([('a', 'failed'), ('d', 'not-run')],
                         self.outcomes(plan))
        detail = plan['actions'][0]['detail']
        self.assertIn('the server is ACTIVE on h1', detail)
        self.assertIn('migration error', detail)
        self.assertIn('libvirt: connection dropped', detail)

    def test_timeout(self):
        self.cloud.hang.add('a')
        plan = self.apply(self.plan(('a', 'h2'), ('d', 'h2')), timeout=30)
        self.assertEqual([('a', 'failed'), ('d', 'not-run')],
                         self.outcomes(plan))
        detail = plan['actions'][0]['detail']
        self.assertIn('timed out after 30s; the server is MIGRATING '
                      '(migration 1 running); aborted through Nova: the '
                      'server is ACTIVE on h1 (migration cancelled)', detail)
        self.assertEqual([('a', 1)], self.cloud.aborted)

    def test_timeout_whose_abort_nova_refuses(self):
        self.cloud.hang.add('a')
        self.cloud.abort_refused = '409 the migration is completing'
        plan = self.apply(self.plan(('a', 'h2'), ('d', 'h2')), timeout=30)
        self.assertEqual([('a', 'failed'), ('d', 'not-run')],
                         self.outcomes(plan))
        self.assertIn('Nova refused to abort it', plan['actions'][0][
            'detail'])
        self.assertIn('it may still complete', plan['actions'][0]['detail'])
        self.assertEqual([], self.cloud.aborted)

    def test_done_waits_for_the_source_allocation_to_go(self):
        self.cloud.lag['a'] = 4
        at_done = []
        self.seen = _Recorder(self.seen, lambda action: at_done.append(
            set(self.cloud.allocs[action['uuid']])) if action['outcome'] ==
            'done' and action['uuid'] == 'a' else None)
        plan = self.apply(self.plan(('a', 'h2'), ('d', 'h2')))
        self.assertEqual([('a', 'done'), ('d', 'done')],
                         self.outcomes(plan))
        # Reported done only once the source allocation was gone.
        self.assertEqual([{rp('h2')}], at_done)
        self.assertEqual(0, self.cloud.lag['a'])

    def test_source_allocation_never_released_is_a_failure(self):
        self.cloud.lag['a'] = 10 ** 6
        plan = self.apply(self.plan(('a', 'h2'), ('d', 'h2')), timeout=20)
        self.assertEqual([('a', 'failed'), ('d', 'not-run')],
                         self.outcomes(plan))
        self.assertIn('its allocation on h1 is not released yet',
                      plan['actions'][0]['detail'])

    def test_state_changed_under_the_plan_is_skipped(self):
        # d's ways are gone from its source domain when its turn comes.
        self.cloud.allocs['d'] = {}
        plan = self.apply(self.plan(('a', 'h2'), ('d', 'h2')))
        self.assertEqual([('a', 'done'), ('d', 'skipped')],
                         self.outcomes(plan))
        self.assertIn('the state changed: its 2 ways are no longer '
                      'allocated in domain 0 of h4',
                      plan['actions'][1]['detail'])
        self.assertEqual(execute.PLAN_FAILED, plan['status'])

    def test_cancel_stops_before_the_next_move(self):
        # Cancelled while the first move runs: it finishes, the rest do
        # not start, and the plan says so.
        asked = []

        def cancelled():
            asked.append(len(self.cloud.started))
            return 'cancelled by admin' if self.cloud.started else None

        plan = self.apply(self.plan(('a', 'h2'), ('d', 'h2')),
                          cancelled=cancelled)
        self.assertEqual(execute.CANCELLED, plan['status'])
        self.assertEqual([('a', 'done'), ('d', 'cancelled')],
                         self.outcomes(plan))
        self.assertEqual(['a'], self.cloud.started)
        self.assertIn('cancelled (cancelled by admin); 1 of 2 moves done',
                      plan['result'])
        # A cancelled plan cannot be applied again.
        exc = self.assertRaises(execute.PlanRefused, self.apply, plan)
        self.assertIn('status cancelled', str(exc))

    def test_concurrency_never_over_commits(self):
        # a and d go to h2 together (2 + 2 + b's 2 ways of 9); c (8 ways)
        # to h4 must wait until d has left h4.
        plan = self.plan(('a', 'h2'), ('d', 'h2'), ('c', 'h4'))
        gate = threading.Event()
        self.cloud.release['a'] = gate
        self.cloud.release['d'] = gate

        def open_gate():
            while len(self.cloud.started) < 2:
                threading.Event().wait(0.01)
            gate.set()

        opener = threading.Thread(target=open_gate)
        opener.start()
        plan = self.apply(plan, concurrency=3)
        opener.join()
        self.assertEqual(execute.APPLIED, plan['status'], plan.get('result'))
        self.assertEqual(['a', 'd'], sorted(self.cloud.started[:2]))
        self.assertEqual('c', self.cloud.started[2])
        self.assertEqual(2, self.cloud.max_running)

    def test_plan_documents_refused(self):
        plan = self.plan(('a', 'h2'))
        plan['proposed'] = False
        exc = self.assertRaises(execute.PlanRefused, self.apply, plan)
        self.assertIn('it was not proposed (test)', str(exc))
        plan = self.plan(('a', 'h2'))
        del plan['moves'][0]['to_host']
        exc = self.assertRaises(execute.PlanRefused, self.apply, plan)
        self.assertIn('moves[0] lacks one of', str(exc))
        plan = self.plan(('a', 'h3'))
        exc = self.assertRaises(execute.PlanRefused, self.apply, plan)
        self.assertIn('moving a to h3 is no longer safe: domain 0 of h3 has '
                      '1 of the 2 ways it needs free', str(exc))
        plan = self.plan(('a', 'h2'))
        plan['moves'][0]['from_host'] = 'h4'
        exc = self.assertRaises(execute.PlanRefused, self.apply, plan)
        self.assertIn('instance a is in domain 0 of h1, the plan expects '
                      'domain 0 of h4', str(exc))
        self.assertEqual([], self.cloud.started)
