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
"""The agent's one object: what runs + what Placement allocated -> CAT.

:meth:`AgentManager.reconcile` reads every running Nova instance from
libvirt and its LLC allocation from Placement, lays out masks and enforces
them; its end state depends on nothing else (the current masks only decide
who keeps their ways). Events (:meth:`instance_changed`) are queued and a
worker re-reads just that instance before laying out again.

When Placement is unreachable the agent keeps enforcing what it knows: the
last allocation it read, or else the flavor's ``resources*:CUSTOM_LLC_WAY``
in the cache domain of the instance's pinned CPUs. It never removes a
group because Placement or libvirt did not answer.

An allocation's ``CUSTOM_MEM_BW_MIBPS`` (MiB/s, beside its ways) becomes
its group's ``MB:`` value in the kernel's mode (:mod:`resq_common.mba`),
written with its ways where the host has MBA; where it cannot be
enforced the ways still are, and the log says why once.
"""

import dataclasses
import queue
import threading
import time

from oslo_log import log as logging

from resq_agent import discovery
from resq_agent import enforcer as enforcer_mod
from resq_agent import hostreport
from resq_agent import inventory as inventory_mod
from resq_agent import isolation
from resq_agent import layout
from resq_agent import monitor as monitor_mod
from resq_agent.ondemand import host as ondemand_host
from resq_agent import virt
from resq_common.clients import placement as placement_client
from resq_common.clients import resq as resq_client
from resq_common import deadline
from resq_common import mba

LOG = logging.getLogger(__name__)
_STOP = object()
_RECONCILE = object()
_UNREAD = object()
RECHECK = 'recheck'
RECHECK_DELAY_S = 0.2
# Seconds an instance may run here with its ways only on another host and
# no libvirt job before it counts as a domain Nova left behind: Nova moves
# the allocations to the destination before the migration job starts
# (after the destination's pre_live_migration).
MOVING_OUT_GRACE_S = 120
# What the monitor measures of an instance, kept for the host report.
USAGE = ('llc_occupancy_bytes', 'mbm_total_bytes_per_s',
         'mbm_local_bytes_per_s')
# Events after which the instance should be running.
STARTING = {'started', 'resumed', 'instance.create.end',
            'instance.power_on.end', 'instance.live_migration_post_dest.end'}


def _summary(topology):
    if not topology.resctrl_available:
        return 'no CAT: %s' % topology.reason
    return ', '.join('domain %d: %d ways' % (d.id, d.ways)
                     for d in topology.domains if d.cat) or 'no domains'


def _changes(old, new):
    """What differs between two topologies, for the log."""
    if (old.resctrl_available != new.resctrl_available
            or [d.id for d in old.domains] != [d.id for d in new.domains]):
        return '%s -> %s' % (_summary(old), _summary(new))
    changes = []
    for field in dataclasses.fields(old):
        if field.name != 'domains' and (getattr(old, field.name)
                                        != getattr(new, field.name)):
            changes.append('%s %r -> %r' % (field.name,
                                            getattr(old, field.name),
                                            getattr(new, field.name)))
    for before, after in zip(old.domains, new.domains):
        for field in dataclasses.fields(before):
            a, b = getattr(before, field.name), getattr(after, field.name)
            if a != b:
                changes.append('domain %d: %s %r -> %r' % (
                    before.id, field.name, a, b))
    return ', '.join(changes) or 'no field differs'


def _monitored(assignment):
    """``(group, monitoring group or None)`` holding an instance's data."""
    if assignment.clos is None:
        return enforcer_mod.group_name(assignment.instance_uuid), None
    return (enforcer_mod.group_of(assignment),
            enforcer_mod.group_name(assignment.instance_uuid))


class AgentManager:
    """Enforces cache partitions for the Nova instances of this host."""

    def __init__(self, conf, topology, enforcer, hypervisor, inventory=None,
                 post_apply_hooks=(), monitor=None, discover=None,
                 misplaced_hooks=(), ondemand=None, host_report=None):
        """Enforce for ``topology`` with these adapters.

        :param discover: ``() -> HostTopology``, called on each reconcile
            to find a topology that appeared or changed; None keeps
            ``topology`` for good.
        :param misplaced_hooks: ``(misplaced, resolved)`` callables, run
            outside the locks after a pass that found instances whose
            cores and ways are in different cache domains and could not
            be repaired (``{uuid: reason}``, each reported once) or that
            are repaired or gone since (a set of uuids).
        :param ondemand: :class:`resq_agent.ondemand.host.OnDemandHost`
            when this host leases ways to on-demand NFs.
        :param host_report: :class:`resq_agent.hostreport.HostReporter`
            whose heartbeat the service runs (its ``after_apply`` is one
            of ``post_apply_hooks``); it reports the occupancy and
            bandwidth of :meth:`usage` unless it was given readings of
            its own.
        """
        self.ondemand = ondemand
        self.host_report = host_report
        self._usage = {}          # uuid -> the monitor's last reading
        if host_report is not None and getattr(
                host_report, 'usage', False) is None:
            host_report.usage = self.usage
            if getattr(host_report, 'measure', False) is None:
                host_report.measure = self.measure
        self.conf = conf
        self.enforcer = enforcer
        self.hypervisor = hypervisor
        self.inventory = inventory
        self.post_apply_hooks = list(post_apply_hooks)
        self.misplaced_hooks = list(misplaced_hooks)
        self._misplaced = {}      # uuid -> reason, reported
        self.monitor = monitor
        # One class of service serves an instance in each cache domain
        # (resctrl); libpqos keeps a class per instance.
        self.shared_classes = getattr(enforcer, 'shares_classes', False)
        self._discover = discover
        self._set_topology(topology)
        # _pass_lock serialises passes (which call Placement and libvirt);
        # _lock guards the state and is never held across a remote call.
        self._pass_lock = threading.Lock()
        self._lock = threading.RLock()
        # Bounded: a flood of events (forged notifications, a storm of
        # libvirt events) is dropped and counted, and a reconcile repairs
        # what the dropped events would have; never a thread per event.
        self._queue = queue.Queue(maxsize=max(
            getattr(conf.resq_agent, 'event_queue_size', 1024), 1))
        self.events_dropped = 0
        self._reconcile_wanted = threading.Event()
        self._rechecks = {}       # uuid -> when to look again
        self._worker = None
        self._watcher = None
        self._known = {}          # uuid -> virt.Instance (running)
        self._allocs = {}         # uuid -> inventory.Allocation
        self._stale = {}          # the previous pass's, while it is down
        # Instances running here whose ways Placement holds only on
        # another host: uuid -> since when with no job running (None:
        # a job runs, a live migration away). Past MOVING_OUT_GRACE_S
        # without one they are Nova's leftovers (_leftover), unpartitioned.
        self._moving = {}
        self._leftover = set()
        self._clock = time.monotonic
        self._placement_error = None   # this pass's, once it failed
        self._inventory_error = None   # Placement refused this pass's report
        self._synced = {}         # uuid -> definition checked
        self._layout = layout.Layout([], [], {})
        # Memory bandwidth that cannot be enforced: key -> what was logged.
        self._mb_warnings = {}
        self._refused = []
        self._errors = []
        self._reported = False
        self.last_reconcile = None
        self.placement_reachable = None
        self.enforcement_errors = 0    # failed writes, ever (metrics)

    def _set_topology(self, topology):
        self.topology = topology
        opts = self.conf.resq_agent
        self.shapes = [discovery.shape_of(d, opts.default_group_ways,
                                          opts.default_group_io_ways,
                                          opts.ondemand_ways)
                       for d in topology.domains if d.cat]
        self.num_closids = min((d.num_closids for d in topology.domains
                                if d.cat), default=0)
        if opts.ondemand_ways:
            # The leases' classes are not the reserved instances' either:
            # each leasing domain's scheduler may use ondemand_classes
            # groups of its own, and every group is a host-wide class.
            self.num_closids = max(
                self.num_closids - opts.ondemand_classes * len(self.shapes),
                0)

    def _rediscover(self):
        """Take up a topology that appeared or changed since the last pass.

        resctrl mounted after the agent started, or a schemata file that
        was malformed for a moment, must not leave the host without
        inventory until a restart. A topology that loses CAT it had is not
        taken up: that is a transient read failure until proven otherwise,
        and dropping the inventory would strand the instances' ways.
        """
        if self._discover is None:
            return
        try:
            new = self._discover()
        except Exception as exc:
            LOG.warning('Cannot rediscover the cache topology (%s); keeping '
                        'the one found before', exc)
            return
        old = self.topology
        if new == old:
            return
        if old.resctrl_available and not new.resctrl_available:
            LOG.warning('resctrl cannot be read now (%s); keeping the cache '
                        'topology found before until it can', new.reason)
            return
        LOG.info('Cache topology changed (%s); reporting it to Placement',
                 _changes(old, new))
        with self._lock:
            self._set_topology(new)

    @classmethod
    def from_conf(cls, conf, post_apply_hooks=()):
        from resq_agent import pqos
        opts = conf.resq_agent
        topology = discovery.discover_from_conf(conf)
        hyp = virt.Hypervisor(opts.libvirt_uri, opts.libvirt_timeout)
        try:
            discovery.cross_check(topology, hyp.capabilities())
        except Exception as exc:
            LOG.warning('Cannot read libvirt host capabilities from %s: %s',
                        opts.libvirt_uri, exc)
        hostname = inventory_mod.hypervisor_hostname(conf, hyp)
        marks = isolation.IsolationPublisher(conf, host=hostname)
        inventory = inventory_mod.Inventory.from_conf(conf, hostname)
        hooks = list(post_apply_hooks) + [marks.after_apply]
        host_report = None
        api = conf[resq_client.GROUP]
        if api.auth_type or api.endpoint_override:
            host_report = hostreport.HostReporter(
                resq_client.ResQClient.from_conf(conf), hostname,
                inventory.cache_domains, opts.host_report_interval)
            hooks.append(host_report.after_apply)
        monitor = monitor_mod.Monitor(opts.resctrl_root,
                                      opts.monitor_min_interval_s)
        ondemand = None
        if opts.ondemand_ways:
            # A monitor of its own: status() makes the manager's forget
            # every group that is no instance's.
            ondemand = ondemand_host.OnDemandHost.from_conf(conf)
        return cls(conf, topology, pqos.load_backend(conf), hyp,
                   inventory, hooks, monitor,
                   discover=lambda: discovery.discover_from_conf(
                       conf, quiet=True),
                   misplaced_hooks=[marks], ondemand=ondemand,
                   host_report=host_report)

    # -- events ------------------------------------------------------------
    def instance_changed(self, instance_uuid, event_type=None):
        """Queue a re-check of one instance; returns at once.

        With the queue full the event is dropped and counted
        (``events_dropped`` in the status) and a full reconcile is asked
        for, which looks at every instance anyway.
        """
        try:
            self._queue.put_nowait((str(instance_uuid).lower(), event_type))
        except queue.Full:
            self.events_dropped += 1
            if not self._reconcile_wanted.is_set():
                LOG.warning('Instance events arrive faster than the agent '
                            'handles them (%d queued); dropping them and '
                            'reconciling every instance instead (%d dropped '
                            'so far)', self._queue.maxsize,
                            self.events_dropped)
            self._reconcile_wanted.set()

    def request_reconcile(self):
        """Ask for a full reconcile (libvirt came back); returns at once."""
        self._reconcile_wanted.set()
        try:
            self._queue.put_nowait((_RECONCILE, None))
        except queue.Full:
            pass    # the worker sees the flag when it takes the next one

    def start(self, watch_libvirt=True):
        if self._worker is None:
            self._worker = threading.Thread(target=self._work,
                                            name='resq-agent-worker',
                                            daemon=True)
            self._worker.start()
        if watch_libvirt and self._watcher is None:
            self._watcher = virt.EventWatcher(
                self.hypervisor.uri, self.instance_changed,
                on_reconnect=self.request_reconcile,
                retry_interval=self.conf.resq_agent.libvirt_retry_interval,
                timeout=self.conf.resq_agent.libvirt_timeout)
            self._watcher.start()

    def stop(self):
        if self._watcher is not None:
            self._watcher.stop()
            self._watcher = None
        if self._worker is not None:
            self._queue.put((_STOP, None))      # waits for room: stop is sure
            self._worker.join()
            self._worker = None

    def wait_idle(self):
        """Block until every queued event has been handled (tests)."""
        self._queue.join()

    def _recheck_later(self, uuid):
        if len(self._rechecks) >= self._queue.maxsize:
            self.events_dropped += 1
            self._reconcile_wanted.set()
            return
        self._rechecks.setdefault(uuid, time.monotonic() + RECHECK_DELAY_S)

    def _next(self):
        """The next queued item, or a recheck that is due (``None``)."""
        while True:
            now = time.monotonic()
            due = [u for u, t in self._rechecks.items() if t <= now]
            if due:
                for uuid in due:
                    del self._rechecks[uuid]
                return [(uuid, RECHECK) for uuid in due], False
            wait = (min(self._rechecks.values()) - now
                    if self._rechecks else None)
            try:
                return [self._queue.get(timeout=wait)], True
            except queue.Empty:
                continue

    def _work(self):
        while True:
            batch, from_queue = self._next()
            taken = len(batch) if from_queue else 0
            # Coalesce a burst (a host reboot) into one layout.
            while not self._queue.empty():
                batch.append(self._queue.get())
                taken += 1
            try:
                events = {}
                for uuid, event in batch:
                    if uuid is not _STOP and uuid is not _RECONCILE:
                        events.setdefault(uuid, []).append(event)
                if self._reconcile_wanted.is_set() or any(
                        u is _RECONCILE for u, _ in batch):
                    self._reconcile_wanted.clear()
                    self.reconcile()
                elif events:
                    self._handle(events)
            except Exception:
                LOG.exception('Handling instance events %s failed; the '
                              'next reconcile repairs it', batch)
            finally:
                for _ in range(taken):
                    self._queue.task_done()
            if any(u is _STOP for u, _ in batch):
                return

    def _handle(self, events):
        # Remote and libvirt calls first, under the pass lock only: status
        # and enforcement never wait for a service that does not answer.
        with self._pass_lock:
            seen = {}
            for uuid, kinds in events.items():
                try:
                    seen[uuid] = self.hypervisor.instance(uuid)
                except Exception as exc:
                    # libvirt down, or the domain half-defined: this
                    # instance only; a start is looked at once more, and
                    # the next reconcile re-reads every instance anyway.
                    LOG.warning('Cannot read instance %s from libvirt (%s); '
                                'the next reconcile retries', uuid, exc)
                    seen[uuid] = _UNREAD
                if seen[uuid] in (None, _UNREAD) and set(
                        kinds) & STARTING and RECHECK not in kinds:
                    # The event can overtake the state change it
                    # announces: look once more a moment later.
                    # (The worker does it: no thread per event.)
                    self._recheck_later(uuid)
                if seen[uuid] is _UNREAD:
                    del seen[uuid]
            # A start or a migration may come with a new allocation: ask
            # Placement again (unless it is known to be down this pass).
            fresh = self._fetch_allocations(
                [i for i in seen.values() if i is not None])
            unrepaired = self._repair(fresh, seen)
            with self._lock:
                for uuid, inst in seen.items():
                    # A start may come with a new definition: check it
                    # again for a <cachetune>.
                    self._synced.pop(uuid, None)
                    if inst is None:
                        self._known.pop(uuid, None)
                        self._allocs.pop(uuid, None)
                        self._stale.pop(uuid, None)
                        self._moving.pop(uuid, None)
                        self._leftover.discard(uuid)
                        continue
                    self._known[uuid] = inst
                    if uuid in fresh:
                        self._allocs[uuid] = fresh[uuid]
                    else:
                        old = self._allocs.pop(uuid, None)
                        if old is not None:
                            self._stale[uuid] = old
                LOG.debug('Instance events %s', events)
                _, lay = self._enforce()
            self._run_hooks(lay)
            self._report_misplaced(unrepaired, checked=set(fresh) | {
                u for u, i in seen.items() if i is None})

    # -- reconcile -----------------------------------------------------------
    def reconcile(self, enforce=True):
        """Full pass over libvirt and Placement; returns a summary.

        Placement is asked outside the state lock, each request bounded by
        ``[placement] timeout``, and not again in the pass once it failed.
        What failed is in the summary: ``error`` (libvirt could not be
        read: nothing was done), ``placement_error`` (Placement did not
        answer), ``inventory_error`` (it refused the inventory report),
        ``errors`` (writes that failed).
        """
        with self._pass_lock:
            started = time.monotonic()
            self._placement_error = None
            self._inventory_error = None
            self._rediscover()
            if enforce:
                self._report_inventory()
            unreadable = set()
            try:
                running = self.hypervisor.instances(unreadable)
            except Exception as exc:
                LOG.error('Cannot list instances from libvirt (%s): %s; '
                          'keeping the current partitions', self.hypervisor
                          .uri, exc)
                return {'error': 'libvirt: %s' % exc}
            fresh = self._fetch_allocations(running, batch=True)
            unrepaired = self._repair(fresh, {i.uuid: i for i in running})
            with self._lock:
                known = {i.uuid: i for i in running}
                # A domain libvirt listed but could not describe keeps
                # what the agent knew of it (and so its partition).
                for uuid in unreadable:
                    if uuid in self._known:
                        known[uuid] = self._known[uuid]
                self._known = known
                for uuid in set(self._moving) - set(known):
                    del self._moving[uuid]
                self._leftover &= set(known)
                # What Placement said last time stays the fallback for
                # the instances it did not answer for.
                self._stale = {u: a for u, a in
                               list(self._allocs.items())
                               + list(self._stale.items())
                               if u in self._known and u not in fresh}
                self._allocs = fresh
                summary, lay = self._enforce(enforce)
                self.last_reconcile = time.time()
            if enforce:
                self._run_hooks(lay)
                self._report_misplaced(unrepaired, checked=set(fresh) | (
                    set(self._misplaced) - set(self._known)))
            if self._placement_error is not None:
                summary['placement_error'] = self._placement_error
            if self._inventory_error is not None:
                summary['inventory_error'] = self._inventory_error
            summary['seconds'] = round(time.monotonic() - started, 3)
            return summary

    def _placement_failed(self, error):
        """Remember that Placement failed in this pass; log it once."""
        if self.placement_reachable is not False:
            # Logged outside any handler: oslo.log would append the
            # traceback. One line, the exception's own message.
            LOG.warning('%s; enforcing what is known, from the last '
                        'answers, the flavors and the pinned CPUs; '
                        'retrying at the next reconcile', error)
        self.placement_reachable = False
        self._placement_error = str(error)

    def _report_inventory(self):
        if self.inventory is None:
            return
        try:
            self.inventory.report(self.topology)
            self._reported = True
            return
        except placement_client.PlacementUnavailable as exc:
            error = exc
        except placement_client.PlacementError as exc:
            LOG.warning('Cannot report cache inventory to Placement: %s; '
                        'retrying at the next reconcile', exc)
            self._inventory_error = str(exc)
            return
        self._placement_failed(error)

    def _fetch_allocations(self, instances, batch=False):
        """``{uuid: (domain, ways) or None}`` Placement answered for.

        With ``batch`` (a full reconcile) one request per cache domain,
        plus one per instance whose flavor asks for ways it does not hold
        here; else (a few instances of an event) one per instance. At the
        first failure nothing more is asked: one timeout per pass, not one
        per instance. The instances it did not answer for are left out.
        """
        fresh = {}
        if self.inventory is None or self._placement_error is not None:
            return fresh
        if not instances:
            return fresh
        try:
            if batch:
                answers = self.inventory.llc_allocations(
                    instances, [d.id for d in self.topology.domains])
            else:
                answers = {i.uuid: self.inventory.llc_allocation(i.uuid)
                           for i in instances}
        except placement_client.PlacementError as exc:
            self._placement_failed(exc)
            return fresh
        self.placement_reachable = True
        for uuid, alloc in answers.items():
            if alloc == inventory_mod.MOVING_OUT:
                self._moving_out(uuid)
                continue
            self._moving.pop(uuid, None)
            if uuid in self._leftover:
                self._leftover.discard(uuid)
                LOG.info('Instance %s holds ways here again; partitioning '
                         'it', uuid)
            fresh[uuid] = alloc
        return fresh

    def _moving_out(self, uuid):
        """An instance runs here, its ways are only on another host.

        A live migration away: Nova moved this host's allocation to the
        migration record; the instance keeps its partition until it stops
        here. But a domain Nova left behind looks the same to Placement (a
        start that failed under a libvirtd restart, rescheduled to another
        host; a move Nova gave up on): it runs with no migration job, and
        partitioning it would take ways Placement gave no one here. Past
        :data:`MOVING_OUT_GRACE_S` without a job (Nova moves allocations
        before the job starts) it is left unpartitioned and logged; when
        libvirt cannot say, the partition stays.
        """
        job = getattr(self.hypervisor, 'has_job', None)
        try:
            running = job(uuid) if job is not None else None
        except Exception as exc:
            LOG.debug('Cannot ask libvirt for jobs of %s: %s', uuid, exc)
            running = None
        now = self._clock()
        if running is not False:
            self._moving[uuid] = None
            if uuid in self._leftover:
                self._leftover.discard(uuid)
            LOG.debug('Instance %s is migrating away; keeping its partition '
                      'until it stops here', uuid)
            return
        since = self._moving.get(uuid)
        if since is None:
            self._moving[uuid] = since = now
        if now - since < MOVING_OUT_GRACE_S or uuid in self._leftover:
            return
        self._leftover.add(uuid)
        LOG.warning('Instance %s runs here, but Placement holds its LLC ways '
                    'only on another host and no migration of it has run '
                    'here for %d s: a domain Nova left behind (a start that '
                    'failed and was rescheduled, a move it gave up on). Not '
                    'partitioned: its CPUs go back to the default group. '
                    'See "A libvirt domain outlives its deleted server" in '
                    'the troubleshooting guide', uuid, now - since)

    def _repair(self, fresh, instances):
        """Move ways to the cache domain of the cores when they differ.

        Nova pins the cores; Placement chose the domain of the ways. They
        disagree when the filter did not run (a forced host) or guessed
        another cell than the compute claim (a concurrent claim). The
        allocation then follows the cores when their domain has room;
        ``fresh`` is updated in place. Remote calls: outside the state
        lock, and none once Placement failed in this pass.

        :param instances: ``{uuid: virt.Instance or None}``.
        :returns: ``{uuid: reason}`` of the instances left misplaced.
        """
        unrepaired = {}
        for uuid, alloc in sorted(fresh.items()):
            inst = instances.get(uuid)
            if not alloc or inst is None or not inst.cpus:
                continue
            domain_id, ways = alloc.domain_id, alloc.ways
            cores = self._domain_of_cpus(inst.cpus)
            if cores == domain_id:
                continue
            if cores is None:
                unrepaired[uuid] = (
                    'its pinned CPUs %s span several cache domains, so no '
                    'domain can hold both its cores and its %d ways'
                    % (discovery.format_cpus(inst.cpus), ways))
                continue
            if self.inventory is None or self._placement_error is not None:
                continue
            try:
                self.inventory.move_llc(uuid, domain_id, cores)
            except placement_client.PlacementUnavailable as exc:
                self._placement_failed(exc)
                continue
            except placement_client.PlacementError as exc:
                unrepaired[uuid] = (
                    'its cores are pinned in cache domain %d but its %d '
                    'ways are in domain %d, and they cannot move to '
                    'domain %d: %s' % (cores, ways, domain_id, cores, exc))
                continue
            LOG.warning('Instance %s had its cores in cache domain %d and '
                        'its %d ways in domain %d; moved its ways and class '
                        'of service to domain %d in Placement', uuid, cores,
                        ways, domain_id, cores)
            fresh[uuid] = alloc._replace(domain_id=cores)
        return unrepaired

    def _report_misplaced(self, unrepaired, checked):
        """Tell the hooks what is newly misplaced and what is resolved.

        :param checked: the instances this pass can speak for: Placement
            answered for them, or they are gone.
        """
        new = {u: r for u, r in unrepaired.items()
               if self._misplaced.get(u) != r}
        resolved = {u for u in checked
                    if u in self._misplaced and u not in unrepaired}
        for uuid in resolved:
            del self._misplaced[uuid]
        self._misplaced.update(new)
        if not new and not resolved:
            return
        for uuid, reason in sorted(new.items()):
            LOG.error('Instance %s runs without cache isolation: %s; '
                      'reported for a live migration', uuid, reason)
        for hook in self.misplaced_hooks:
            try:
                hook(new, resolved)
            except Exception:
                LOG.exception('Misplaced-instance hook %r failed', hook)

    def _allocation(self, inst):
        """An ``inventory.Allocation``; None if the instance is not ResQ's.

        Local only: Placement's last answer, else the flavor's ways (and
        bandwidth) in the cache domain of the pinned CPUs; None for a
        domain Nova left behind (see :meth:`_moving_out`).
        """
        if inst.uuid in self._leftover:
            return None
        if inst.uuid in self._allocs:
            return self._allocs[inst.uuid]
        if inst.uuid in self._stale:
            return self._stale[inst.uuid]
        ways = inst.llc_ways
        if ways:
            # Without pinned CPUs the domain is unknown; _enforce says why.
            return inventory_mod.Allocation(self._domain_of_cpus(inst.cpus),
                                            ways, inst.mem_bw_mibps)
        return None

    def _domain_of_cpus(self, cpus):
        doms = {d.id for d in self.topology.domains for c in cpus
                if c in d.cpus}
        return doms.pop() if len(doms) == 1 else None

    def _enforce(self, enforce=True):
        """Lay out and write; ``(summary, layout)``. Makes no remote call."""
        current = self.enforcer.current(
            {u: i.cpus for u, i in self._known.items()}) if self.shapes else {}
        requests, refused = [], []
        info = self._mba_info()
        warned = set()
        for inst in sorted(self._known.values(), key=lambda i: i.uuid):
            alloc = self._allocation(inst)
            if alloc is None:
                continue
            domain_id, ways, mibps = alloc
            reason = None
            if not inst.cpus:
                reason = ('it has no pinned CPUs: CAT partitions cores, so '
                          'its flavor needs hw:cpu_policy=dedicated')
            elif domain_id is None:
                reason = ('its pinned CPUs %s span several cache domains '
                          'and Placement did not say which one holds its '
                          'ways' % discovery.format_cpus(inst.cpus))
            else:
                dom = self.topology.domain(domain_id)
                if dom is not None and dom.cpus and not set(
                        inst.cpus) <= set(dom.cpus):
                    reason = ('its pinned CPUs %s are not all in cache '
                              'domain %d (CPUs %s) where Placement '
                              'allocated its ways' % (
                                  discovery.format_cpus(inst.cpus),
                                  domain_id, discovery.format_cpus(dom.cpus)))
            if reason:
                refused.append(layout.Refusal(inst.uuid, domain_id, ways,
                                              reason))
                continue
            masks, clos = current.get(inst.uuid) or ({}, None)
            requests.append(layout.Request(
                inst.uuid, domain_id, ways, inst.cpus, inst.packet_bytes,
                masks.get(domain_id), clos, mem_bw_mibps=mibps,
                mb=self._mb_value(inst.uuid, mibps, info, warned),
                code_ways=self._code_ways(inst, ways, warned)))
        lay = layout.compute(self.shapes, requests, self.num_closids,
                             shared=self.shared_classes)
        if info is not None:
            lay.mb_max = info.max_value
            lay.default_mb = dict.fromkeys(
                (s.id for s in self.shapes), self._default_mb(info, warned))
        for key in set(self._mb_warnings) - warned:
            del self._mb_warnings[key]
        refused.extend(lay.refused)
        enforced = lay
        if enforce and self.ondemand is not None and self.shapes:
            classes, od_refused = self.ondemand.extend(
                lay, self.shapes, self._known.values(), self.topology)
            refused.extend(layout.Refusal(u, d, 0, reason)
                           for u, d, reason in od_refused)
            # The classes' groups are written with the instances' but are
            # no instance: libvirt and the DMA hooks never see them.
            enforced = dataclasses.replace(
                lay, assignments=lay.assignments + classes, refused=[])
        for r in refused:
            LOG.warning('Not partitioning instance %s (%d ways in cache '
                        'domain %s): %s', r.instance_uuid, r.ways,
                        r.domain_id, r.reason)
        self._refused = refused
        result = enforcer_mod.ApplyResult()
        if enforce and self.shapes:
            result = self.enforcer.apply(enforced,
                                         [s.id for s in self.shapes])
            if self.ondemand is not None:
                tree = (self.enforcer.tree if isinstance(
                    self.enforcer, enforcer_mod.ResctrlEnforcer) else None)
                result.errors.extend(self.ondemand.sync_monitoring(tree))
            self._layout = lay
        elif enforce and not self.topology.resctrl_available:
            LOG.info('No CAT on this host (%s); %d ResQ instance(s) run '
                     'unpartitioned', self.topology.reason, len(requests))
        else:
            self._layout = lay
        self._errors = result.errors
        self.enforcement_errors += len(result.errors)
        return {'instances': len(lay.assignments),
                'refused': [dict(uuid=r.instance_uuid, reason=r.reason)
                            for r in refused],
                'written': result.written, 'removed': result.removed,
                'errors': result.errors}, lay

    def _mba_info(self):
        """The host's :class:`resq_common.mba.MbaInfo` the agent enforces.

        None without MBA, or with a backend that writes no MB line.
        """
        info = self.topology.mba_info
        if info is not None and not getattr(self.enforcer, 'writes_mb',
                                            False):
            return None
        return info

    def _warn_mb(self, key, warned, message, *args):
        """Log ``message`` once while it holds for ``key``."""
        warned.add(key)
        text = message % args
        if self._mb_warnings.get(key) != text:
            self._mb_warnings[key] = text
            LOG.warning('%s', text)

    def _code_ways(self, inst, ways, warned):
        """Its code ways where the host can split them, else 0."""
        code = inst.code_ways
        if not code:
            return 0
        if not self.topology.cdp or self.enforcer.name != 'resctrl':
            why = ('the %s backend writes one mask for code and data; use '
                   '[resq_agent] backend = resctrl' % self.enforcer.name
                   if self.topology.cdp else
                   'this host\'s resctrl is not mounted with cdp (no '
                   'info/L3CODE): mount it with -o cdp, or keep flavors '
                   'with resq:code_ways off this host (they require '
                   'CUSTOM_RESQ_L3_CDP)')
            self._warn_mb((inst.uuid, 'code'), warned,
                          'Instance %s asks for %d of its LLC ways for code, '
                          'which cannot be enforced: %s. Code and data share '
                          'its ways.', inst.uuid, code, why)
            return 0
        return code if code < ways else 0

    def _mb_value(self, uuid, mibps, info, warned):
        """An instance's ``MB:`` value; None: no limit (or no MBA)."""
        if not mibps:
            return None
        if info is None:
            if self.topology.mba_info is not None:
                why = ('the %s backend writes no MB line; use [resq_agent] '
                       'backend = resctrl' % self.enforcer.name)
            else:
                why = ('this host\'s kernel offers no memory bandwidth '
                       'allocation (no info/MB under resctrl); enable MBA '
                       '(Intel RDT MBA or AMD PQoS in the firmware, a kernel '
                       'with CONFIG_X86_CPU_RESCTRL) or keep bandwidth '
                       'flavors off this host')
            self._warn_mb(uuid, warned, 'Instance %s holds %d MiB/s of memory '
                          'bandwidth in Placement that cannot be enforced: '
                          '%s. Its LLC ways are enforced.', uuid, mibps, why)
            return None
        try:
            return mba.schemata_value(
                mibps, info, self.conf.resq_agent.memory_bandwidth_mibps)
        except mba.InvalidBandwidth as exc:
            self._warn_mb(uuid, warned, 'Instance %s holds %d MiB/s of memory '
                          'bandwidth in Placement that cannot be enforced: '
                          '%s. Its LLC ways are enforced; its group gets no '
                          'bandwidth limit.', uuid, mibps, exc)
            return None

    def _default_mb(self, info, warned):
        """The default group's ``MB:`` value (no limit unless set)."""
        opts = self.conf.resq_agent
        want = opts.default_group_memory_bandwidth_mibps
        if not want:
            return info.max_value
        try:
            return mba.schemata_value(want, info,
                                      opts.memory_bandwidth_mibps)
        except mba.InvalidBandwidth as exc:
            self._warn_mb('default group', warned, 'The default resctrl '
                          'group\'s memory bandwidth cannot be limited to '
                          '%d MiB/s: %s. It is left unlimited.', want, exc)
            return info.max_value

    def _run_hooks(self, lay):
        """libvirt definitions, then post-apply hooks, outside the lock.

        The hooks are DMA sizing (OVSDB, Nova); a hung dependency holds
        neither the status nor the enforcement.
        """
        if not self.shapes:
            return
        self._sync_libvirt(lay)
        for hook in self.post_apply_hooks:
            try:
                hook(self.topology, list(lay.assignments))
            except Exception:
                LOG.exception('Post-apply hook %r failed', hook)

    def _sync_libvirt(self, lay):
        """One owner per partition: no ``<cachetune>`` in the definitions.

        libvirt would create its own resctrl group from one when the domain
        starts again; the agent's group is the partition. Checked once per
        instance, each check bounded by ``[resq_agent] libvirt_timeout``;
        once libvirt hangs the rest wait for the next pass.
        """
        wanted = {a.instance_uuid for a in lay.assignments}
        with self._lock:
            for uuid in set(self._synced) - wanted:
                del self._synced[uuid]
            todo = sorted(wanted - set(self._synced))
        for uuid in todo:
            try:
                if self.hypervisor.drop_cachetune(uuid):
                    LOG.info('Removed <cachetune> from the libvirt '
                             'definition of %s: the agent\'s resctrl group '
                             'is its partition', uuid)
            except deadline.DependencyHung as exc:
                LOG.warning('Cannot check the libvirt definitions for a '
                            '<cachetune>: %s', exc)
                return
            except Exception as exc:
                LOG.warning('Cannot remove the <cachetune> of %s from its '
                            'libvirt definition: %s', uuid, exc)
                continue
            with self._lock:
                self._synced[uuid] = True

    def terms(self):
        """``{uuid: {spec: value}}``: each running instance's SLO term.

        The ``resq:`` extra specs of its flavor (class, profile, targets).
        """
        with self._lock:
            return {u: {k[len('resq:'):]: v
                        for k, v in i.extra_specs.items()
                        if k.startswith('resq:')}
                    for u, i in self._known.items()}

    # -- status --------------------------------------------------------------
    def usage(self):
        """``{uuid: reading}``: what :meth:`status` last measured.

        Each reading has ``llc_occupancy_bytes``,
        ``mbm_total_bytes_per_s`` and ``mbm_local_bytes_per_s`` (None when
        unknown), as :meth:`resq_agent.monitor.Monitor.sample` gives them.
        No resctrl file is read: these are the readings of the last
        ``/metrics`` scrape, monitoring notification or :meth:`measure`.
        """
        with self._lock:
            return {u: dict(r) for u, r in self._usage.items()}

    def measure(self):
        """Read every instance's counters now (what :meth:`usage` gives)."""
        self.status()

    def status(self):
        """What is enforced and measured, JSON-able."""
        with self._lock:
            lay = self._layout
            instances = []
            for a in lay.assignments:
                entry = {'uuid': a.instance_uuid, 'domain_id': a.domain_id,
                         'ways': a.ways, 'mask': '%x' % a.mask,
                         'cpus': list(a.cpus),
                         'packet_bytes': a.packet_bytes}
                if a.clos is not None:
                    entry['clos'] = a.clos
                if a.mem_bw_mibps:
                    entry['mem_bw_mibps'] = a.mem_bw_mibps
                if lay.mb_max is not None:
                    # What the group's MB line holds in its domain.
                    entry['mb'] = a.mb if a.mb is not None else lay.mb_max
                if self.monitor is not None:
                    entry.update(self.monitor.sample(*_monitored(a)))
                instances.append(entry)
            if self.monitor is not None:
                self.monitor.forget({self.monitor.key(*_monitored(a))
                                     for a in lay.assignments})
                self._usage = {e['uuid']: {k: e.get(k) for k in USAGE}
                               for e in instances}
            return {
                'backend': self.enforcer.name,
                'resctrl_available': self.topology.resctrl_available,
                'placement_reachable': self.placement_reachable,
                'last_reconcile': self.last_reconcile,
                'domains': [dict({'id': s.id, 'ways': s.ways,
                                  'instance_ways': s.capacity,
                                  'default_mask': '%x' % lay.default_masks.get(
                                      s.id, s.cbm_mask)},
                                 **({'default_mb': lay.default_mb[s.id]}
                                    if lay.default_mb else {}))
                            for s in self.shapes],
                # How MB values are enforced: mbps, percent, amd; None.
                'mba': (lay.mb_max is not None and self.topology.mba_info
                        and self.topology.mba_info.mode) or None,
                'instances': instances,
                'refused': [{'uuid': r.instance_uuid, 'domain_id':
                             r.domain_id, 'ways': r.ways, 'reason': r.reason}
                            for r in self._refused],
                'errors': list(self._errors),
                'events_dropped': self.events_dropped,
                # Each dependency's last outcome: ok, failed or hung
                # (with since when and what), None if not asked yet.
                'dependencies': deadline.health(),
                'ondemand': (self.ondemand.status()
                             if self.ondemand is not None else None),
            }
