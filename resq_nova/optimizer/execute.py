#    Licensed under the Apache License, Version 2.0 (the "License"); you may
#    not use this file except in compliance with the License. You may obtain
#    a copy of the License at
#
#         http://www.apache.org/licenses/LICENSE-2.0
#
#    Unless required by applicable law or agreed to in writing, software
#    distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
#    WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
#    License for the specific language governing permissions and limitations
#    under the License.
"""A stored plan carried out by live migrations, each with its true outcome.

Before the first move the plan is checked against the cloud as it is now
(a fresh snapshot from Placement and Nova): every instance still where the
plan found it, every move still safe in order. A plan that no longer
matches is refused and nothing moves.

Then each move, in plan order: re-checked against Placement (the
instance's ways still in the source domain, the destination domain with
the ways and a class of service free, the server ACTIVE on its source
with no task); asked of Nova (``os-migrateLive`` to the named host,
through the scheduler and its filters, ResQ's included); watched until
the server is ACTIVE again or the timeout passes. With ``concurrency``
above one, a move starts only when it is safe while the moves still
running hold both their ends.

Outcomes: ``done``; ``failed`` with Nova's reason (the request refused,
the migration in error, the server elsewhere than asked, the timeout);
``skipped`` when the state changed under the plan; ``not-run`` after a
failure or skip, which stops the plan: later moves may depend on it;
``cancelled`` when the plan was cancelled before the move started (the
``cancelled`` callable is asked before each move; moves already running
finish and keep their outcomes).
"""

import concurrent.futures
import dataclasses
import datetime
import time

from oslo_log import log as logging

from resq_common import cache_domain
from resq_common.clients import compute as compute_mod
from resq_common.clients import placement as placement_client
from resq_common import exception
from resq_common import extra_specs
from resq_nova.optimizer import collect
from resq_nova.optimizer import ordering

LOG = logging.getLogger(__name__)

DONE = 'done'
FAILED = 'failed'
SKIPPED = 'skipped'
NOT_RUN = 'not-run'
CANCELLED = 'cancelled'
ONGOING = 'ongoing'        # only in records written while it runs
# Written before os-migrateLive is sent: a crash then leaves "sent or not,
# unknown", which recovery settles from Nova's migrations of the server.
REQUESTED = 'requested'
APPLIED = 'applied'
APPLYING = 'applying'
# A file store's plan whose applier stopped, closed by recovery.
INTERRUPTED = 'interrupted'
PLAN_FAILED = 'failed'
REFUSED = 'refused'
PLAN_KEYS = ('hosts_used_before', 'hosts_used_after', 'lower_bound',
             'gap_pct', 'proposed', 'reason', 'moves')
# Seconds a migration may seem to predate its request (clocks apart).
CLOCK_SLACK = 60
MOVE_KEYS = ('uuid', 'from_host', 'from_domain', 'to_host', 'to_domain')


class PlanRefused(exception.ResQException):
    msg_fmt = 'plan %(plan)s refused before the first move: %(reason)s'


def check_document(plan, source, ttl=None, now=None):
    """Refuse what is not a plan document to apply.

    :raises PlanRefused: not a plan, not proposed, already applied, or
        older than ``ttl`` seconds.
    """
    if not isinstance(plan, dict):
        raise PlanRefused(plan=source, reason='not a plan document')
    missing = [k for k in PLAN_KEYS if k not in plan]
    if missing:
        raise PlanRefused(plan=source, reason='it lacks %s'
                          % ', '.join(missing))
    if not isinstance(plan['moves'], list):
        raise PlanRefused(plan=source, reason='"moves" is not a list')
    for n, mv in enumerate(plan['moves']):
        if not isinstance(mv, dict) or any(k not in mv for k in MOVE_KEYS):
            raise PlanRefused(plan=source, reason='moves[%d] lacks one of '
                              '%s' % (n, ', '.join(MOVE_KEYS)))
    if not plan['proposed']:
        raise PlanRefused(plan=source, reason='it was not proposed (%s)'
                          % plan['reason'])
    if plan.get('status') in (APPLIED, PLAN_FAILED, REFUSED, CANCELLED,
                              INTERRUPTED):
        raise PlanRefused(plan=source, reason='it was already applied or '
                          'cancelled '
                          '(status %s); make a new plan' % plan['status'])
    if plan.get('status') == APPLYING:
        raise PlanRefused(plan=source, reason='it is being applied by %s '
                          '(lease until %s); if that optimizer stopped, the '
                          'next round closes the plan with the moves it '
                          'made; make a new plan' % (
                              plan.get('applier'),
                              plan.get('lease_expires')))
    if ttl:
        try:
            created = datetime.datetime.fromisoformat(plan['created_at'])
        except (KeyError, TypeError, ValueError):
            raise PlanRefused(plan=source, reason='it has no creation time '
                              '(created_at), so its age cannot be checked '
                              'against plan_ttl; make a new plan')
        if created.tzinfo is None:
            created = created.replace(tzinfo=datetime.timezone.utc)
        now = now or datetime.datetime.now(datetime.timezone.utc)
        age = (now - created).total_seconds()
        if age > ttl:
            raise PlanRefused(plan=source, reason='it is %d s old, older '
                              'than [resq_optimizer] plan_ttl (%d s): the '
                              'cloud has moved on; make a new plan'
                              % (age, ttl))


def check_against(snap, plan, source):
    """Refuse a plan that does not match ``snap`` (the cloud now).

    :returns: the ledger of ``snap`` for the moves to run on.
    :raises PlanRefused: naming the first mismatches.
    """
    problems = []
    by_uuid = {i.uuid: i for i in snap.instances}
    seen = set()
    for mv in plan['moves']:
        if mv['uuid'] in seen:
            continue            # the second leg of a detour
        seen.add(mv['uuid'])
        inst = by_uuid.get(mv['uuid'])
        if inst is None:
            problems.append('instance %s is not a ResQ instance of the '
                            'cloud any more' % mv['uuid'])
        elif (inst.host, inst.domain) != (mv['from_host'],
                                          mv['from_domain']):
            problems.append('instance %s is in domain %d of %s, the plan '
                            'expects domain %d of %s' % (
                                inst.uuid, inst.domain, inst.host,
                                mv['from_domain'], mv['from_host']))
        elif not inst.migratable:
            problems.append('instance %s cannot move now (%s)'
                            % (inst.uuid, inst.reason))
        elif 'ways' in mv and inst.ways != mv['ways']:
            problems.append('instance %s holds %d ways, the plan expects '
                            '%d' % (inst.uuid, inst.ways, mv['ways']))
    if not problems:
        unsafe = ordering.replay(snap, plan['moves'])
        if unsafe is not None:
            n, why = unsafe
            mv = plan['moves'][n]
            problems.append('moving %s to %s is no longer safe: %s'
                            % (mv['uuid'], mv['to_host'], why))
    if not problems and plan.get('freed_hosts'):
        after = ordering.hosts_in_use_after(snap, plan['moves'])
        still = sorted(set(plan['freed_hosts']) & after)
        if still:
            problems.append('it would no longer free %s (other instances '
                            'are there now)' % ', '.join(still))
    if problems:
        more = (' (and %d more)' % (len(problems) - 3)
                if len(problems) > 3 else '')
        raise PlanRefused(plan=source, reason='the cloud changed since it '
                          'was made: %s%s; make a new plan'
                          % ('; '.join(problems[:3]), more))
    return ordering.Ledger(snap)


class Executor:
    """Carries out one plan; see the module doc."""

    def __init__(self, placement, compute, timeout=600.0, concurrency=1,
                 poll_interval=2.0, progress=None, clock=time.monotonic,
                 sleep=time.sleep, cancelled=None, plan_ttl=None,
                 cell_key=collect.CELL_KEY):
        if concurrency < 1:
            raise ValueError('concurrency must be at least 1, got %r'
                             % concurrency)
        self.placement = placement
        self.compute = compute
        self.timeout = timeout
        self.concurrency = concurrency
        self.poll_interval = poll_interval
        self.progress = progress or (lambda action: None)
        self.cancelled = cancelled or (lambda: False)
        self.clock = clock
        self.sleep = sleep
        self.plan_ttl = plan_ttl
        self.cell_key = cell_key

    def apply(self, plan, source=None, snap=None):
        """Carry out ``plan``; it is updated with outcomes and returned.

        :raises PlanRefused: before anything moved.
        """
        source = source or plan.get('id', '<plan>')
        check_document(plan, source, self.plan_ttl)
        if snap is None:
            snap = collect.collect(self.placement, self.compute,
                                   self.cell_key)
        ledger = check_against(snap, plan, source)
        by_uuid = {i.uuid: i for i in snap.instances}
        providers = {(h.name, d.id): d.provider for h in snap.hosts
                     for d in h.domains}
        providers.update((('root', h.name), h.uuid) for h in snap.hosts
                         if h.uuid)
        actions = [dict(mv, outcome=NOT_RUN, detail=None)
                   for mv in plan['moves']]
        plan['actions'] = actions
        plan['status'] = 'applying'
        started = _now()
        stop = cancelled = None
        pending = list(actions)
        running = {}
        with concurrent.futures.ThreadPoolExecutor(
                max_workers=self.concurrency) as pool:
            while (pending and stop is None) or running:
                # Start what is safe while the running moves hold both ends.
                while (pending and stop is None
                       and len(running) < self.concurrency):
                    cancelled = self.cancelled()
                    if cancelled:
                        stop = pending[0]
                        for action in pending:
                            self._outcome(action, CANCELLED, cancelled)
                        pending = []
                        break
                    action = pending[0]
                    # Where this move starts (a detour's second leg starts
                    # where the first one went).
                    inst = dataclasses.replace(
                        by_uuid[action['uuid']], host=action['from_host'],
                        domain=action['from_domain'])
                    why = ledger.blocker(inst, action['to_host'],
                                         action['to_domain'])
                    if why:
                        if running:
                            break           # wait for a running move
                        self._outcome(action, SKIPPED, 'the plan order no '
                                      'longer holds: %s' % why)
                        stop = action
                        break
                    pending.pop(0)
                    ledger.start(inst, inst.host, action['to_host'],
                                 action['to_domain'])
                    running[pool.submit(self._move, action, inst,
                                        providers)] = (action, inst)
                if not running:
                    break
                done, _ = concurrent.futures.wait(
                    running, return_when=concurrent.futures.FIRST_COMPLETED)
                for future in done:
                    action, inst = running.pop(future)
                    if not self._settle(future, action, inst, ledger):
                        stop = stop or action
        _close(plan, actions, stop, cancelled)
        plan['applied_at'] = started
        plan['finished_at'] = _now()
        return plan

    def _settle(self, future, action, inst, ledger):
        """Book a finished move in the ledger; whether it was done."""
        try:
            future.result()
        except Exception as exc:   # a bug must not hide
            LOG.exception('Move of %s failed unexpectedly', inst.uuid)
            self._outcome(action, FAILED, 'unexpected error: %s' % exc)
        if action['outcome'] != DONE:
            ledger.abort(inst, inst.host, action['to_host'],
                         action['to_domain'])
            return False
        landed = action.get('landed_domain', action['to_domain'])
        if landed != action['to_domain']:
            ledger.abort(inst, inst.host, action['to_host'],
                         action['to_domain'])
            ledger.start(inst, inst.host, action['to_host'], landed)
        ledger.finish(inst, inst.host, inst.domain, action['to_host'])
        return True

    def _outcome(self, action, outcome, detail):
        action['outcome'] = outcome
        action['detail'] = detail
        action['at'] = _now()
        log = LOG.info if outcome == DONE else LOG.warning
        log('Move of %s to %s: %s%s', action['uuid'], action['to_host'],
            outcome, ' (%s)' % detail if detail else '')
        self.progress(action)

    # -- one move -----------------------------------------------------------
    def _move(self, action, inst, providers):
        why = self._recheck(action, inst, providers)
        if why:
            return self._outcome(action, SKIPPED, 'the state changed: %s'
                                 % why)
        action['requested_at'] = _now()
        self.progress(dict(action, outcome=REQUESTED))
        try:
            request_id = self.compute.live_migrate(action['uuid'],
                                                   action['to_host'])
        except compute_mod.ComputeError as exc:
            if isinstance(exc, compute_mod.ComputeUnavailable):
                # No answer: the request may have reached Nova.
                LOG.warning('Live migration of %s: no answer from Nova '
                            '(%s); judging it by its migrations',
                            action['uuid'], exc)
                return self.recover(action, action['requested_at'])
            return self._outcome(action, FAILED, 'Nova refused the live '
                                 'migration: %s' % exc)
        action['request_id'] = request_id
        # Only now: Nova accepted it (202).
        self.progress(dict(action, outcome='started'))
        return self._watch(action, request_id,
                           providers.get(('root', inst.host)))

    # -- a move whose applier stopped ---------------------------------------
    def recover(self, action, since):
        """Judge a move left requested or ongoing by what Nova did.

        Its live migration is the newest one of the server to the move's
        destination created since ``since`` (ISO time): completed, it is
        ``done`` (as a watched move, once the source allocation is gone);
        still running, it is watched to its end, bounded by the timeout
        (then aborted, as any move); in error, ``failed``. Without such a
        migration and the server settled, the request never reached Nova:
        ``not-run``.
        """
        try:
            src = self.placement.find_provider(action['from_host'])['uuid']
        except (placement_client.PlacementError, KeyError, TypeError):
            src = None
        deadline = self.clock() + self.timeout
        while True:
            mig = self._migration_since(action, since)
            if mig is not None:
                return self._watch(action, action.get('request_id'), src)
            try:
                server = self.compute.get_server(action['uuid'])
            except compute_mod.ComputeError as exc:
                server = None
                LOG.warning('Cannot read server %s (%s)', action['uuid'],
                            exc)
            if server is not None and server.get('status') != 'MIGRATING' \
                    and not server.get('OS-EXT-STS:task_state'):
                if server.get('OS-EXT-SRV-ATTR:host') == action['to_host']:
                    return self._watch(action, None, src)
                return self._outcome(action, NOT_RUN, 'not started: Nova '
                                     'has no live migration of it to %s '
                                     'since %s; the server is %s on %s' % (
                                         action['to_host'], since,
                                         server.get('status'),
                                         server.get('OS-EXT-SRV-ATTR:host')))
            if self.clock() >= deadline:
                return self._outcome(action, FAILED, 'after %ss the server '
                                     'is still %s and Nova shows no live '
                                     'migration of it to %s' % (
                                         self.timeout,
                                         server and server.get('status'),
                                         action['to_host']))
            self.sleep(self.poll_interval)

    def _migration_since(self, action, since):
        """The move's migration in Nova, or ``None``."""
        try:
            migrations = self.compute.live_migrations(action['uuid'])
        except compute_mod.ComputeError:
            return None
        start = _parse(since)
        if start is not None:
            # Nova's clock may lag this host's a little.
            start -= datetime.timedelta(seconds=CLOCK_SLACK)
        for mig in migrations:
            created = _parse(mig.get('created_at'))
            if mig.get('dest_compute') == action['to_host'] and (
                    start is None or created is None or created >= start):
                return mig
        return None

    def _recheck(self, action, inst, providers):
        """Why the move is not safe any more, or ``None``."""
        try:
            server = self.compute.get_server(action['uuid'])
            if server.get('OS-EXT-SRV-ATTR:host') != inst.host:
                return 'the server is on %s now' % server.get(
                    'OS-EXT-SRV-ATTR:host')
            if (server.get('status') != 'ACTIVE'
                    or server.get('OS-EXT-STS:task_state')):
                return 'the server is %s (task %s)' % (
                    server.get('status'), server.get('OS-EXT-STS:task_state'))
            src = providers.get((inst.host, inst.domain))
            allocs = self.placement.get_allocations(action['uuid'])
            if allocs.get(src, {}).get(extra_specs.RC_LLC_WAY) != inst.ways:
                return ('its %d ways are no longer allocated in domain %d '
                        'of %s' % (inst.ways, inst.domain, inst.host))
            dst = providers.get((action['to_host'], action['to_domain']))
            if dst is None:
                return 'the destination domain is not in Placement'
            inv = self.placement.get_inventories(dst)
            use = self.placement.get_usages(dst)
            for rc, need in ((extra_specs.RC_LLC_WAY, inst.ways),
                             (extra_specs.RC_LLC_CLOS, inst.clos),
                             (extra_specs.RC_MEM_BW, inst.mem_bw_mibps)):
                if not need:
                    continue
                free = (collect.usable(inv.get(rc)) - int(use.get(rc, 0)))
                if free < need:
                    return ('domain %d of %s has %d %s free, the move needs '
                            '%d' % (action['to_domain'], action['to_host'],
                                    free, rc, need))
        except (compute_mod.ComputeError,
                placement_client.PlacementError) as exc:
            return 'cannot check it (%s)' % exc
        return None

    def _watch(self, action, request_id, src_provider=None):
        """Wait for the move to be done, or abort it at the timeout.

        Done: the server ACTIVE on the target, its migration record
        ``completed`` and its allocation on the source gone (Nova frees it
        last; the next move may need that room). At the timeout a migration
        still running is aborted through Nova.
        """
        deadline = self.clock() + self.timeout
        arrived = None
        while True:
            try:
                server = self.compute.get_server(action['uuid'])
            except compute_mod.ComputeError as exc:
                server = None
                LOG.warning('Cannot read server %s (%s); still watching',
                            action['uuid'], exc)
            if server is not None and server.get('status') != 'MIGRATING' \
                    and not server.get('OS-EXT-STS:task_state'):
                host = server.get('OS-EXT-SRV-ATTR:host')
                if host != action['to_host'] or server['status'] != 'ACTIVE':
                    return self._outcome(action, FAILED, self._reason(
                        action, request_id, server))
                arrived = self._settled(action, src_provider)
                if arrived is True:
                    return self._outcome(action, DONE, self._landed(action))
            if self.clock() >= deadline:
                if arrived is not None:
                    return self._outcome(action, FAILED, 'the server is '
                                         'ACTIVE on %s but after %ss %s'
                                         % (action['to_host'], self.timeout,
                                            arrived))
                return self._outcome(action, FAILED, self._abort(
                    action, server))
            self.sleep(self.poll_interval)

    def _settled(self, action, src_provider):
        """``True`` once Nova is done with the move, else what is left."""
        status = self._migration_status(action)
        if status != 'completed':
            return 'its migration is %s, not completed' % status
        if src_provider:
            try:
                allocs = self.placement.get_allocations(action['uuid'])
            except placement_client.PlacementError as exc:
                return 'its allocations cannot be read (%s)' % exc
            if src_provider in allocs:
                return ('its allocation on %s is not released yet'
                        % action['from_host'])
        return True

    def _abort(self, action, server):
        """Abort a timed-out migration; the failure detail with its outcome."""
        head = 'timed out after %ss; the server is %s' % (
            self.timeout, server and server.get('status'))
        try:
            migrations = self.compute.live_migrations(action['uuid'])
        except compute_mod.ComputeError as exc:
            return '%s; its migration cannot be read to abort it (%s)' % (
                head, exc)
        live = [m for m in migrations
                if m.get('status') in ('queued', 'preparing', 'running')]
        if not live:
            return '%s (migration %s; nothing to abort)' % (
                head, migrations[0]['status'] if migrations else 'not found')
        mig = live[0]
        try:
            self.compute.abort_live_migration(action['uuid'], mig['id'])
        except compute_mod.ComputeError as exc:
            return ('%s (migration %s %s); Nova refused to abort it: %s; it '
                    'may still complete' % (head, mig['id'], mig['status'],
                                            exc))
        # Wait a little for the abort to take: the server back on its
        # source, or (too late to abort) on the target.
        settle = self.clock() + max(self.poll_interval * 10, 30.0)
        while self.clock() < settle:
            try:
                srv = self.compute.get_server(action['uuid'])
            except compute_mod.ComputeError:
                srv = None
            if srv and srv.get('status') != 'MIGRATING' and not srv.get(
                    'OS-EXT-STS:task_state'):
                return ('%s (migration %s %s); aborted through Nova: the '
                        'server is %s on %s (migration %s)' % (
                            head, mig['id'], mig['status'], srv['status'],
                            srv.get('OS-EXT-SRV-ATTR:host'),
                            self._migration_status(action)))
            self.sleep(self.poll_interval)
        return ('%s (migration %s %s); abort accepted by Nova but the '
                'server has not settled yet (migration %s)' % (
                    head, mig['id'], mig['status'],
                    self._migration_status(action)))

    def _landed(self, action):
        """Where the ways landed, when not in the planned domain.

        Nova pins the cores in the cell its NUMA fit picks and the ResQ
        filter keeps the ways with them, so a host with several cache
        domains may take the instance in another domain than planned.
        """
        try:
            allocs = self.placement.get_allocations(action['uuid'])
            root = self.placement.find_provider(action['to_host'])['uuid']
        except placement_client.PlacementError as exc:
            return 'cannot read where its ways landed (%s)' % exc
        for rp, res in allocs.items():
            dom = cache_domain.domain_of(root, rp)
            if dom is not None and extra_specs.RC_LLC_WAY in res:
                if dom != action['to_domain']:
                    action['landed_domain'] = dom
                    return ('its ways landed in domain %d (Nova pinned its '
                            'cores in that cell)' % dom)
                return None
        return 'no LLC allocation found on %s' % action['to_host']

    def _migration_status(self, action):
        try:
            migrations = self.compute.live_migrations(action['uuid'])
        except compute_mod.ComputeError:
            return 'unknown'
        return migrations[0]['status'] if migrations else 'not found'

    def _reason(self, action, request_id, server):
        """Nova's reason the server is not ACTIVE on the destination."""
        parts = ['the server is %s on %s' % (
            server.get('status'), server.get('OS-EXT-SRV-ATTR:host'))]
        parts.append('migration %s' % self._migration_status(action))
        parts.extend(nova_errors(self.compute, action['uuid'], request_id))
        fault = server.get('fault') or {}
        if fault.get('message'):
            parts.append(fault['message'])
        return '; '.join(str(p) for p in parts)


def nova_errors(compute, server_id, request_id):
    """Nova's reasons an instance action failed: its events in error.

    Each as ``<event>: <details>`` (the last line of the traceback when
    Nova gives no details), then the action's message; nothing when the
    action cannot be read (the caller still has the server's fault).
    """
    parts = []
    if not request_id:
        return parts
    try:
        act = compute.instance_action(server_id, request_id)
    except compute_mod.ComputeError:
        return parts
    for event in act.get('events') or ():
        if (event.get('result') or '').lower() == 'error':
            tail = (event.get('traceback') or '').strip().splitlines()[-1:]
            parts.append('%s: %s' % (event.get('event'), event.get('details')
                                     or (tail[0] if tail else 'error')))
    if act.get('message'):
        parts.append(act['message'])
    return parts


def _parse(when):
    """An ISO time as aware UTC, or ``None``."""
    try:
        value = datetime.datetime.fromisoformat(
            str(when).replace('Z', '+00:00'))
    except ValueError:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=datetime.timezone.utc)
    return value.replace(microsecond=0)


def _now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(
        timespec='seconds')


def _close(plan, actions, stop, cancelled):
    """The plan's status and result once no move runs."""
    done_count = sum(1 for a in actions if a['outcome'] == DONE)
    if cancelled and stop['outcome'] == CANCELLED:
        plan['status'] = CANCELLED
        plan['result'] = ('cancelled (%s); %d of %d moves done, the rest '
                          'not run' % (cancelled, done_count, len(actions)))
    elif stop is None:
        plan['status'] = APPLIED
        plan['result'] = '%d of %d moves done' % (done_count, len(actions))
    else:
        plan['status'] = PLAN_FAILED
        plan['result'] = ('stopped at %s (%s: %s); %d of %d moves done, '
                          'the rest not run' % (
                              stop['uuid'], stop['outcome'],
                              stop['detail'], done_count, len(actions)))
