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
"""The optimizer: plan (and apply) on the live cloud, once or every interval.

:class:`Optimizer` ties the pieces together for the commands and for the
service: take a snapshot (live, under the lock, or from a file), plan,
store both, notify; apply a stored plan under the lock, store the
outcomes, notify. :class:`OptimizerService` runs it every ``[resq_optimizer]
interval`` seconds under oslo.service, proposing by default and applying
only when ``[resq_optimizer] apply`` is set; it moves servers reported
without isolation only with ``[resq_optimizer] repair_isolation``, inside
``repair_window``. Every live migration it asks of Nova is logged and
announced with who asks and why (:mod:`resq_nova.optimizer.actions`).
"""

import collections
import contextlib
import datetime
import threading

from oslo_log import log as logging

from resq_common.clients import compute as compute_mod
from resq_common import exception
from resq_nova.conf import optimizer as optimizer_conf
from resq_nova.optimizer import actions as actions_mod
from resq_nova.optimizer import collect
from resq_nova.optimizer import execute
from resq_nova.optimizer import notifier as notifier_mod
from resq_nova.optimizer import orphans as orphans_mod
from resq_nova.optimizer import planner
from resq_nova.optimizer import repair as repair_mod
from resq_nova.optimizer import snapshot as snap_mod
from resq_nova.optimizer import store as store_mod

LOG = logging.getLogger(__name__)
# The reason a freed host's compute service is disabled with; only hosts
# disabled with it are enabled again (by the optimizer or by admission).
FREED_REASON = compute_mod.FREED_REASON
# Outcomes that end a move the optimizer asked of Nova.
_FINAL = (execute.DONE, execute.FAILED, execute.SKIPPED, execute.NOT_RUN,
          execute.CANCELLED)


class Optimizer:

    def __init__(self, conf, placement=None, compute=None, store=None,
                 notifier=None, isolation=None):
        self.conf = conf
        self.opts = conf.resq_optimizer
        self.placement = placement
        self.compute = compute
        self.store = store or store_mod.Store(
            self.opts.state_dir, self.opts.coordination_url)
        self.notifier = notifier
        # resq-api's client: where the agents report misplaced servers.
        self.isolation = isolation or getattr(self.store, 'client', None)
        # Read now: a repair_window that is not one stops the optimizer
        # at start (a ValueError naming the option), not at its first
        # round.
        self.repair_window = optimizer_conf.parse_window(
            optimizer_conf.read_checked(self.opts, 'repair_window'))
        self.actions = actions_mod.ActionLog(notifier, compute, conf)
        self.utcnow = lambda: datetime.datetime.now(datetime.timezone.utc)
        # What /metrics shows (resq_nova.optimizer.metrics): plans by
        # outcome, hosts freed and moves made, and the last round's solve.
        self.figures = collections.Counter()
        self.last_plan = None
        # Set when the service is told to stop (SIGTERM): no round, repair
        # or plan application starts after it.
        self.stopping = threading.Event()
        # Consumers the migration audit found orphaned, kept between its
        # passes: {consumer: (generation, first seen)}.
        self.audit_seen = {}

    def reload_conf(self):
        """Read again the mutable options kept as parsed values.

        Called when the service (re)starts, e.g. after SIGHUP: the other
        options are read where they are used. A ``repair_window`` that
        is not one is logged and the previous window stays.
        """
        try:
            self.repair_window = optimizer_conf.parse_window(
                optimizer_conf.read_checked(self.opts, 'repair_window'))
        except ValueError as exc:
            LOG.error('%s; the repair window stays %s', exc,
                      getattr(self.repair_window, 'text', 'unset'))

    def _notify(self, event, plan):
        self._count(event, plan)
        if self.notifier is not None:
            self.notifier.send(event, plan)

    def _count(self, event, plan):
        if event == notifier_mod.PROPOSED:
            self.last_plan = plan
            self.figures['proposed' if plan.get('proposed')
                         else 'not_proposed'] += 1
        elif event == notifier_mod.APPLIED:
            self.figures['applied'] += 1
            self.figures['hosts_freed'] += len(plan.get('freed_hosts', ()))
        else:
            self.figures['failed'] += 1
        if event != notifier_mod.PROPOSED:
            self.figures['moves_done'] += sum(
                1 for a in plan.get('actions', ())
                if a.get('outcome') == execute.DONE)

    def plan(self, state_file=None, min_hosts_freed=None):
        """Make, store and announce one plan.

        :returns: ``(plan, path)``.
        :raises resq_nova.optimizer.snapshot.SnapshotError: bad file.
        :raises resq_nova.optimizer.store.OptimizerBusy: another optimizer.
        """
        if min_hosts_freed is None:
            min_hosts_freed = self.opts.min_hosts_freed
        if state_file:
            snap = snap_mod.load(state_file)
            return self._plan(snap, min_hosts_freed, source=state_file)
        with self.store.lock():
            snap = collect.collect(self.placement, self.compute,
                                   self.opts.cell_aggregate_key)
            return self._plan(snap, min_hosts_freed, source='live')

    def _plan(self, snap, min_hosts_freed, source):
        snapshot_id = planner.new_id('snapshot')
        doc = snap.to_dict()
        doc['source'] = source
        self.store.save_snapshot(snapshot_id, doc)
        plan = planner.make_plan(snap, min_hosts_freed=min_hosts_freed,
                                 time_limit=self.opts.time_limit,
                                 mip_gap=self.opts.mip_gap,
                                 snapshot_id=snapshot_id,
                                 moves_gap=self.opts.moves_gap,
                                 full_model_max=(
                                     self.opts.full_model_max_instances),
                                 workers=self.opts.plan_workers)
        path = self.store.save_plan(plan)
        LOG.info('Plan %s: %s', plan['id'], plan['reason'])
        self._notify(notifier_mod.PROPOSED, plan)
        return plan, path

    def apply(self, ref, progress=None, concurrency=None, timeout=None):
        """Carry out stored plan ``ref`` (an id or a file).

        While it runs the optimizer renews its lease on the plan (every
        third of ``[resq_optimizer] applier_lease``); once the lease is
        past, the plan counts as left by a stopped applier (see
        :meth:`recover`).

        :returns: ``(plan, path)``, the plan with its outcomes.
        :raises resq_nova.optimizer.execute.PlanRefused: nothing moved.
        """
        lease = self.opts.applier_lease
        with self.store.lock():
            plan, path = self.store.load_plan(ref)
            before = plan.get('status') if isinstance(plan, dict) else None
            if before not in (None, 'proposed'):
                # Refused as it is: its record stays what it says.
                execute.check_document(plan, ref)
            self.store.begin_apply(plan, lease=lease)
            executor = self._executor(plan, progress, concurrency, timeout)
            try:
                with _heartbeat(self.store, plan, lease):
                    executor.apply(plan, source=ref)
            except execute.PlanRefused as exc:
                if isinstance(plan, dict) and plan.get('status') not in (
                        execute.APPLIED, execute.PLAN_FAILED,
                        execute.CANCELLED):
                    plan['status'] = execute.REFUSED
                    plan['result'] = str(exc)
                    path = self._save(plan)
                    self._notify(notifier_mod.FAILED, plan)
                raise
            except Exception as exc:
                # Nova or Placement away while collecting the cloud's
                # state, say: this process knows it stopped, so the record
                # says so at once rather than "applying" until its lease
                # runs out (and "interrupted" after).
                if isinstance(plan, dict) and plan.get('status') not in (
                        execute.APPLIED, execute.PLAN_FAILED,
                        execute.CANCELLED, execute.REFUSED):
                    moved = any(a.get('outcome') != execute.NOT_RUN
                                for a in plan.get('actions') or ())
                    plan['status'] = (execute.PLAN_FAILED if moved
                                      else execute.REFUSED)
                    plan['result'] = '%s: %s' % (
                        'stopped' if moved else 'not started', exc)
                    path = self._save(plan)
                    self._notify(notifier_mod.FAILED, plan)
                raise
            if self.opts.disable_freed_hosts and plan['status'] == \
                    execute.APPLIED:
                plan['disabled_hosts'] = self.disable_freed(plan)
            path = self._save(plan)
        self._notify(notifier_mod.APPLIED if plan['status'] == execute.APPLIED
                     else notifier_mod.FAILED, plan)
        return plan, path

    def _executor(self, plan, progress=None, concurrency=None, timeout=None):
        """An executor whose progress is recorded in the store as it goes.

        Each live migration it asks of Nova is logged and announced
        (:mod:`resq_nova.optimizer.actions`).
        """
        announce = self._announcer(plan)

        def report(action):
            announce(action)
            # The record says a move is requested before it is sent to
            # Nova, and ongoing once Nova accepted it: a crash leaves it
            # marked so, not as never started.
            recorded = action
            step = {execute.REQUESTED: execute.REQUESTED,
                    'started': execute.ONGOING}.get(action.get('outcome'))
            if step:
                for real in plan.get('actions', ()):
                    if real['uuid'] == action['uuid'] and real.get(
                            'outcome') in (execute.NOT_RUN,
                                           execute.REQUESTED):
                        real['outcome'] = step
                        recorded = real
                        break
            self.store.record(plan, recorded)
            if progress is not None:
                progress(action)

        return execute.Executor(
            self.placement, self.compute,
            timeout=timeout or self.opts.migration_timeout,
            concurrency=concurrency or self.opts.concurrency,
            poll_interval=self.opts.poll_interval, progress=report,
            # Told to stop, no further move starts (those under way are
            # watched to their end; recovery closes what is left).
            cancelled=lambda: (
                'the optimizer is stopping' if self.stopping.is_set()
                else self.store.cancelled(plan)),
            plan_ttl=self.opts.plan_ttl,
            cell_key=self.opts.cell_aggregate_key)

    def _announcer(self, plan):
        """A progress hook announcing the start and end of each move."""
        started = {}
        lock = threading.Lock()
        reason = 'plan %s (%s)' % (plan.get('id'), plan.get('reason'))

        def announce(action):
            outcome = action.get('outcome')
            if outcome == execute.REQUESTED:
                record = self.actions.start(
                    actions_mod.PLAN_MIGRATION, action['uuid'],
                    action.get('from_host'), reason,
                    target_host=action.get('to_host'),
                    server_name=action.get('name'), plan_id=plan.get('id'))
                with lock:
                    started[action['uuid']] = record
                return
            if outcome not in _FINAL:
                return
            with lock:
                record = started.pop(action['uuid'], None)
            if record is not None:
                self.actions.end(record, outcome, action.get('detail'),
                                 action.get('to_host') if outcome ==
                                 execute.DONE else None)
        return announce

    def disable_freed(self, plan):
        """Disable the compute service of each host ``plan`` freed.

        Only hosts empty now (no server at all) are disabled, with a reason
        that names the plan; each one's true outcome is returned and
        logged. :returns: ``[{'host', 'outcome', 'detail'}]``.
        """
        results = []
        try:
            services = {s['host']: s for s in
                        self.compute.list_compute_services()}
            busy = {s.get('OS-EXT-SRV-ATTR:host')
                    for s in self.compute.list_all_servers()}
        except exception.ResQException as exc:
            LOG.error('Freed hosts of plan %s not disabled: %s',
                      plan['id'], exc)
            return [{'host': h, 'outcome': 'failed', 'detail': str(exc)}
                    for h in plan.get('freed_hosts', ())]
        for host in plan.get('freed_hosts', ()):
            service = services.get(host)
            if service is None or host in busy:
                results.append({'host': host, 'outcome': 'skipped',
                                'detail': 'not empty now' if service
                                else 'no compute service'})
                continue
            if service.get('status') == 'disabled':
                results.append({'host': host, 'outcome': 'skipped',
                                'detail': 'already disabled (%s)'
                                % service.get('disabled_reason')})
                continue
            try:
                self.compute.set_service_status(
                    service['id'], True, '%s%s' % (FREED_REASON, plan['id']))
                results.append({'host': host, 'outcome': 'disabled',
                                'detail': None})
            except exception.ResQException as exc:
                results.append({'host': host, 'outcome': 'failed',
                                'detail': str(exc)})
        for r in results:
            (LOG.info if r['outcome'] != 'failed' else LOG.error)(
                'Freed host %s of plan %s: %s%s', r['host'], plan['id'],
                r['outcome'], ' (%s)' % r['detail'] if r['detail'] else '')
        return results

    def enable_freed(self, count=None, why='admission needs room'):
        """Enable hosts this optimizer disabled as freed.

        ``count`` of them, all by default; hosts disabled for any other
        reason stay.

        :returns: ``[{'host', 'outcome', 'detail'}]``.
        """
        results = []
        for service in self.compute.list_compute_services():
            if count is not None and len(
                    [r for r in results if r['outcome'] == 'enabled']) \
                    >= count:
                break
            reason = service.get('disabled_reason') or ''
            if service.get('status') != 'disabled' or not reason.startswith(
                    FREED_REASON):
                continue
            try:
                self.compute.set_service_status(service['id'], False)
                results.append({'host': service['host'],
                                'outcome': 'enabled', 'detail': why})
                LOG.info('Enabled freed host %s again: %s',
                         service['host'], why)
            except exception.ResQException as exc:
                results.append({'host': service['host'],
                                'outcome': 'failed', 'detail': str(exc)})
                LOG.error('Enabling freed host %s failed: %s',
                          service['host'], exc)
        return results

    def prune(self):
        """Prune old plans and snapshots of a file store.

        Plans in resq-api are pruned by ``resq-manage db prune`` (cron),
        next to the database. :returns: ``(plans, snapshots)`` deleted.
        """
        prune = getattr(self.store, 'prune', None)
        if prune is None:
            return 0, 0
        return prune(self.opts.keep_plans, self.opts.keep_days * 86400)

    def _save(self, plan):
        """Store the plan with its outcomes (by its id, in the store).

        A plan applied from a file outside the store is stored there too;
        the operator's file is left as it was.
        """
        if not isinstance(plan.get('id'), str) or \
                not store_mod.ID_RE.match(plan['id']):
            plan['id'] = planner.new_id('plan')
        return self.store.save_plan(plan)

    def recover(self):
        """Close the plans left ``applying`` by an applier that stopped.

        A plan is left so when its applier's lease expired (it renews it
        while it works); this optimizer takes it over, then judges each
        move the record left requested or ongoing by what Nova did (see
        :meth:`resq_nova.optimizer.execute.Executor.recover`: a migration
        still running is waited for), and closes the plan with the moves
        made. :returns: the results, one line per plan closed.
        """
        orphaned = getattr(self.store, 'orphaned', None)
        if orphaned is None:
            return []
        results = []
        with self.store.lock():
            for plan in orphaned(lease=self.opts.applier_lease):
                try:
                    results.append(self._close(plan))
                except Exception:
                    # Left applying; its lease (now this optimizer's)
                    # expires and the next round tries again.
                    LOG.exception('Plan %s: closing it failed', plan['id'])
        return results

    def _close(self, plan):
        """Judge the moves of ``plan`` its applier left; close it."""
        executor = execute.Executor(
            self.placement, self.compute,
            timeout=self.opts.migration_timeout,
            poll_interval=self.opts.poll_interval)
        reason = ('plan %s (%s), closed after its applier %s stopped'
                  % (plan.get('id'), plan.get('reason'),
                     plan.get('applier')))
        # The lease taken over is held while a migration is waited for.
        with _heartbeat(self.store, plan, self.opts.applier_lease):
            for action in plan.get('actions') or ():
                left = action.get('outcome')
                if left in (execute.REQUESTED, execute.ONGOING):
                    executor.recover(action, action.get('requested_at')
                                     or plan.get('created_at'))
                    action['recovered'] = left
                    # The applier that asked announced the start; this
                    # is the end it could not announce.
                    self.actions.end(self.actions.record(
                        actions_mod.PLAN_MIGRATION, action['uuid'],
                        action.get('from_host'), reason,
                        target_host=action.get('to_host'),
                        server_name=action.get('name'),
                        plan_id=plan.get('id')), action.get('outcome'),
                        action.get('detail'), action.get('to_host')
                        if action.get('outcome') == execute.DONE else None)
        return self.store.close_orphan(plan)

    def repair(self, hold=None):
        """Live-migrate the servers resq-api lists as misplaced.

        What ``resq-optimizer repair`` runs when an operator asks; the
        service's rounds go through :meth:`repair_round`.

        :param hold: see :meth:`resq_nova.optimizer.repair.Repairer.run`.
        :returns: one outcome per server (see
            :mod:`resq_nova.optimizer.repair`), each also notified; none
            without resq-api (the agents then report nowhere it can read).
        """
        if self.isolation is None:
            LOG.warning('[resq_api] is not configured: servers the agents '
                        'find without isolation are not repaired')
            return []
        results = repair_mod.Repairer(
            self.compute, self.isolation,
            timeout=self.opts.migration_timeout,
            poll_interval=self.opts.poll_interval,
            actions=self.actions).run(hold=hold)
        if self.notifier is not None and hasattr(self.notifier,
                                                 'send_repair'):
            for result in results:
                self.notifier.send_repair(result)
        return results

    def repair_round(self, now=None):
        """The service round's repair: only when configured to.

        Nothing moves unless ``[resq_optimizer] repair_isolation`` is set,
        and then only inside ``repair_window`` (no move starts once it
        has closed). Otherwise the servers waiting are counted in the log.

        :param now: the time (aware datetime) to judge the window by;
            :attr:`utcnow` when None, asked again before each move.
        :returns: the outcomes, as :meth:`repair`.
        """
        if not self.opts.repair_isolation:
            self._count_unrepaired()
            return []
        window = self.repair_window
        clock = (lambda: now) if now is not None else self.utcnow
        if window is not None and not window.contains(clock()):
            LOG.info('Outside [resq_optimizer] repair_window %s (UTC): '
                     'servers without isolation are not moved this round',
                     window.text)
            return []

        def hold():
            if window is not None and not window.contains(clock()):
                return ('[resq_optimizer] repair_window %s (UTC) closed; '
                        'the next window moves it' % window.text)
            return None

        return self.repair(hold=hold)

    def _count_unrepaired(self):
        """Log the servers waiting for repair (never raises)."""
        if self.isolation is None:
            return
        try:
            waiting = list(self.isolation.list_isolation(
                status=repair_mod.MISPLACED_PREFIX))
        except Exception as exc:
            LOG.debug('Cannot list servers without isolation: %s', exc)
            return
        if waiting:
            LOG.warning('%d server(s) run without isolation (%s); not moved: '
                        '[resq_optimizer] repair_isolation is off. Move them '
                        'with "resq-optimizer repair", or set '
                        'repair_isolation (and repair_window)',
                        len(waiting), ', '.join(sorted(
                            '%s on %s' % (r.get('server_uuid'), r.get('host'))
                            for r in waiting)))

    def audit(self, release=None, why_not=None, min_age=0.0):
        """Release the allocations of deleted servers' migrations.

        See :mod:`resq_nova.optimizer.orphans`. ``release`` overrides
        ``[resq_optimizer] release_orphaned_migrations`` (the command's
        ``--dry-run``), ``why_not`` the reason then logged. A consumer is
        released once judged orphaned ``min_age`` seconds before (the
        service: ``audit_interval``; an operator's one-shot audit: 0).

        :returns: one record per consumer holding LLC ways that is no
            server.
        """
        if release is None:
            release = self.opts.release_orphaned_migrations
        kw = {'why_not': why_not} if why_not else {}
        results = orphans_mod.Auditor(
            self.placement, self.compute, release=release,
            seen=self.audit_seen, min_age=min_age,
            max_migrations=orphans_mod.MAX_MIGRATIONS,
            stopping=self.stopping.is_set, **kw).run()
        for r in results:
            self.figures['migrations_' + r['outcome']] += 1
        return results

    def audit_tick(self):
        """The service's audit, every ``audit_interval`` s; never raises."""
        if self.stopping.is_set():
            return None
        try:
            return self.audit(min_age=self.opts.audit_interval / 2.0)
        except exception.ResQException as exc:
            LOG.error('Migration allocation audit failed: %s; retrying in '
                      '[resq_optimizer] audit_interval', exc)
        except Exception:
            LOG.exception('Migration allocation audit failed unexpectedly')
        return None

    def tick(self):
        """One round of the service: recover, repair, plan; apply if set.

        Servers running without isolation are moved first when
        ``[resq_optimizer] repair_isolation`` is set (and inside
        ``repair_window``); plans are applied only with ``apply``. Never
        raises: a failed round is logged in one line and the next one runs
        at the next interval.
        """
        if self.stopping.is_set():
            LOG.info('Stopping: no new optimizer round')
            return None
        LOG.info('Optimizer round starting')
        try:
            self.recover()
        except exception.ResQException as exc:
            LOG.error('Closing interrupted plans failed: %s', exc)
        if self.stopping.is_set():
            return None
        try:
            self.repair_round()
        except exception.ResQException as exc:
            LOG.error('Moving servers without isolation failed: %s', exc)
        except Exception:
            LOG.exception('Moving servers without isolation failed '
                          'unexpectedly')
        try:
            self.prune()
        except exception.ResQException as exc:
            LOG.error('Pruning old plans failed: %s', exc)
        if self.stopping.is_set():
            return None
        try:
            plan, _ = self.plan()
            if self.stopping.is_set():
                LOG.info('Stopping: plan %s is not applied', plan['id'])
                return plan
            if plan['proposed'] and self.opts.apply:
                plan, _ = self.apply(plan['id'])
                LOG.info('Plan %s: %s', plan['id'], plan['result'])
            return plan
        except exception.ResQException as exc:
            LOG.error('Optimizer round failed: %s', exc)
        except Exception:
            LOG.exception('Optimizer round failed unexpectedly')
        return None


@contextlib.contextmanager
def _heartbeat(store, plan, lease):
    """Renew the applier's lease on ``plan`` every third of ``lease``."""
    stop = threading.Event()

    def beat():
        while not stop.wait(lease / 3.0):
            try:
                store.renew(plan, lease=lease)
            except Exception:
                LOG.exception('Plan %s: the lease could not be renewed',
                              plan.get('id'))

    thread = threading.Thread(target=beat, daemon=True,
                              name='lease-%s' % plan.get('id'))
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def serve_metrics(conf, optimizer):
    """Serve ``optimizer``'s figures on ``[resq_optimizer] metrics_listen``.

    Called in the process that plans: oslo.service's launcher forks the
    worker that runs the rounds, and a server started before the fork
    would show the parent's optimizer, which never plans. An address that
    cannot be bound is logged, and the rounds go on without metrics (the
    parent checked it before forking: see ``resq-optimizer run``).

    :returns: the HTTP server, or None.
    """
    from resq_common import metrics
    from resq_nova.optimizer import metrics as opt_metrics

    listen = conf.resq_optimizer.metrics_listen
    try:
        return metrics.serve(listen, opt_metrics.OptimizerCollector(
            optimizer))
    except (OSError, exception.ResQException) as exc:
        LOG.error('Prometheus metrics are not served: [resq_optimizer] '
                  'metrics_listen %r: %s', listen, exc)
        return None


#: Seconds ``stop`` waits for the escalation RPC server to close.
RPC_STOP_TIMEOUT = 5


def make_service(conf, optimizer):
    """An oslo.service service running ``optimizer.tick`` periodically.

    And ``optimizer.audit_tick`` every ``[resq_optimizer] audit_interval``
    seconds (none when 0).

    It serves the optimizer's Prometheus metrics from the process that
    runs the rounds (oslo.service's worker), and the agents' on-demand
    escalations on ``[resq_optimizer] rpc_topic``
    (:mod:`resq_nova.optimizer.ondemand`) when the optimizer has a
    Placement client, booting scale-out instances with its compute client
    as ``[resq_optimizer] ondemand_scale_out`` says.
    """
    from oslo_service import service

    class OptimizerService(service.Service):
        rpc_server = None
        metrics_server = None

        def start(self):
            super().start()
            # After SIGHUP oslo.service starts the service again with
            # the mutable options' new values: interval is read below.
            # (SIGHUP stops the service first: rounds may run again.)
            optimizer.stopping.clear()
            optimizer.reload_conf()
            self.metrics_server = serve_metrics(conf, optimizer)
            self.tg.add_timer(conf.resq_optimizer.interval, optimizer.tick,
                              initial_delay=0)
            if conf.resq_optimizer.audit_interval and \
                    optimizer.placement is not None:
                self.tg.add_timer(conf.resq_optimizer.audit_interval,
                                  optimizer.audit_tick,
                                  initial_delay=conf.resq_optimizer
                                  .audit_interval)
            if optimizer.placement is not None:
                import oslo_messaging

                from resq_nova.optimizer import ondemand

                self.transport = oslo_messaging.get_rpc_transport(conf)
                self.rpc_server = ondemand.get_server(
                    conf, self.transport,
                    ondemand.EscalationEndpoint.from_conf(
                        conf, optimizer.placement, optimizer.notifier,
                        optimizer.compute))
                self.rpc_server.start()

        def stop(self, graceful=False):
            # First nothing new: no round starts once told to stop, even
            # while the broker's connection below takes its time.
            optimizer.stopping.set()
            self.tg.stop_timers()
            if self.rpc_server is not None:
                server, transport = self.rpc_server, self.transport
                self.rpc_server = None

                def close():
                    server.stop()
                    server.wait()
                    transport.cleanup()
                # With the broker unreachable oslo.messaging may retry its
                # connection for a minute; the escalations are not waited
                # for longer than RPC_STOP_TIMEOUT.
                closer = threading.Thread(target=close, daemon=True,
                                          name='rpc-stop')
                closer.start()
                closer.join(RPC_STOP_TIMEOUT)
                if closer.is_alive():
                    LOG.warning('The escalation RPC server did not stop in '
                                '%d s (is the message broker reachable?); '
                                'stopping without it', RPC_STOP_TIMEOUT)
            if self.metrics_server is not None:
                self.metrics_server.shutdown()
                self.metrics_server.server_close()
                self.metrics_server = None
            super().stop(graceful)

    return OptimizerService()
