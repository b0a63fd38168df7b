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
"""This host's cache domains and partitioned servers, reported to resq-api
(``PUT /hosts/<name>``).

After each enforcement pass the agent builds the report from what it
already computes: the Placement view of each domain
(:meth:`resq_agent.inventory.Inventory.cache_domains`) for the totals and
the leases, the layout's assignments for what instances use. Per domain:

``ways_total`` / ``clos_total`` / ``cores_total``
    what Placement offers reserved instances (``CUSTOM_LLC_WAY``,
    ``CUSTOM_LLC_CLOS`` and ``CUSTOM_RESQ_CORE`` total less reserved);
``ways_used`` / ``clos_used`` / ``cores_used``
    the ways, classes of service (one per instance) and distinct pinned
    CPUs of the instances the agent partitions in the domain;
``ways_leased`` / ``cores_leased``
    the on-demand lease (``[resq_agent] ondemand_ways``, its cores).

and per partitioned server (``instances``, resq-api microversion 1.1):
``server_uuid``, ``domain`` and ``ways`` from its assignment, and
``llc_occupancy_bytes`` and ``mbm_total_bytes_per_s`` from the monitor's
last reading of its group (CMT/MBM; null until there is one): the
readings the agent's status took last (each ``/metrics`` scrape and
monitoring notification, :meth:`resq_agent.manager.AgentManager.usage`),
and, when a heartbeat is due, a reading taken for it
(:meth:`~resq_agent.manager.AgentManager.measure`), so that the report
carries occupancy whether or not anything scrapes the agent. A pass
reads no resctrl file for the report.

When it is sent: a report whose domains or servers changed (a server
came, went, or moved to another domain or number of ways) is sent after
the pass that changed it (``PUT /hosts/<name>``, the full report).
Otherwise, every ``[resq_agent] host_report_interval`` seconds, the agent
sends a heartbeat (``PUT /hosts/<name>/heartbeat``, microversion 1.2, no
body): resq-api sets the stored report's ``updated_at`` (which shows an
agent that stopped) and parses or writes nothing else, so 100,000 agents
cost it one primary-key UPDATE each a minute. Occupancy and bandwidth
change at every reading: a change of them alone goes out as a full
report with the latest readings once the last full report is
:data:`FULL_EVERY` intervals old, not every pass nor every heartbeat;
with the interval 0 (changes only) they go out with the next change.

The heartbeats of a fleet are spread: each wait is the interval with
+-:data:`JITTER` at random, the first a random part of it (agents
restarted together do not report together). A resq-api that has no
report of the host (404 ``resq.host.not_found``: never sent, or its
database replaced) gets the full report at once. One older than 1.2
(406 for the version, 404 for the path) gets full reports, as before
heartbeats, and is asked again every :data:`FULL_EVERY` intervals.

Back-off: resq-api busy (503, 429 or another 5xx), or not answering
(connection refused, timed out), makes the agent wait before it sends
anything again: the interval, doubled after each further failure up to
:data:`BACKOFF_CAP` intervals, +-:data:`JITTER` at random, and at least
the ``Retry-After`` the answer gave (itself at most the cap); an answer
slower than :data:`SLOW_S` counts as a failure for the wait though what
it carried was stored. The first failure of an outage is a warning, the
recovery an info line; a change made meanwhile goes out with the first
send after the wait.

A resq-api older than 1.1 refuses a report with ``instances`` (406 for
the version, 400 for the field); so does one that finds the servers
inconsistent with the domains. The agent then sends the report without
them (microversion 1.0), warns once, and asks 1.1 again once per
interval (:data:`RETRY_S` when it is 0), saying when it is accepted;
until resq-api has the servers, every send is a full report.
"""

import math
import random
import threading
import time

from oslo_log import log as logging

from resq_common.clients import resq as resq_client
from resq_common import extra_specs

LOG = logging.getLogger(__name__)
# Seconds between asking a resq-api that refused microversion 1.1 again,
# when host_report_interval is 0.
RETRY_S = 600
# What the monitor measures of a server: not a reason to send at once.
MEASURED = ('llc_occupancy_bytes', 'mbm_total_bytes_per_s')
# The largest reading resq-api stores (a signed 64-bit integer).
MAX_READING = 2 ** 63 - 1
# Each wait between heartbeats is the interval times 1 +- this, at random.
JITTER = 0.1
# Readings alone (occupancy, bandwidth) go out as a full report once the
# last full report is this many intervals old.
FULL_EVERY = 10
# The longest back-off, in intervals.
BACKOFF_CAP = 10
# An answer slower than this (seconds) backs off as a 503 does.
SLOW_S = 5.0
# What makes the agent back off: resq-api busy or failing.
BUSY = (429,)


def _busy(exc):
    """Whether ``exc`` says resq-api is away, busy or failing."""
    if isinstance(exc, resq_client.ResQAPIUnavailable):
        return True
    status = exc.status
    return status is not None and (status >= 500 or status in BUSY)


def _usable(inventory, rc):
    inv = inventory.get(rc)
    return max(inv['total'] - inv['reserved'], 0) if inv else 0


def agent_version():
    try:
        from importlib import metadata
        return metadata.version('resq-nova')
    except Exception:
        return None


def _reading(value, kind):
    """A measurement as ``kind``, or None if missing or not one."""
    if value is None or isinstance(value, bool):
        return None
    try:
        value = kind(value)
        fits = math.isfinite(value) and 0 <= value <= MAX_READING
    except (TypeError, ValueError, OverflowError):
        return None
    return value if fits else None


def instances(assignments, domain_ids, usage=None):
    """The report's ``instances``, by server uuid. Pure.

    :param domain_ids: the report's domains; a server in another one is
        left out (resq-api refuses a server in a domain not reported).
    :param usage: ``{server uuid: reading}``, each reading as
        :meth:`resq_agent.monitor.Monitor.sample` returns it.
    """
    usage = usage or {}
    found = {}
    for a in assignments:
        if a.domain_id not in domain_ids or a.instance_uuid in found:
            continue
        sample = usage.get(a.instance_uuid) or {}
        found[a.instance_uuid] = {
            'server_uuid': a.instance_uuid,
            'domain': a.domain_id,
            'ways': a.ways,
            'llc_occupancy_bytes': _reading(
                sample.get('llc_occupancy_bytes'), int),
            'mbm_total_bytes_per_s': _reading(
                sample.get('mbm_total_bytes_per_s'), float),
        }
    return [found[uuid] for uuid in sorted(found)]


def build(domains, assignments, version=None, usage=None):
    """The report's body. Pure.

    :param domains: :class:`resq_common.cache_domain.CacheDomain` objects.
    :param assignments: :class:`resq_agent.layout.Assignment` objects.
    :param usage: the monitor's readings by server uuid (see
        :func:`instances`); None: none yet.
    """
    used = {}
    for a in assignments:
        ways, clos, cpus = used.get(a.domain_id, (0, 0, frozenset()))
        used[a.domain_id] = (ways + a.ways, clos + 1, cpus | set(a.cpus))
    report = []
    for d in sorted(domains, key=lambda d: d.domain_id):
        inv = d.inventory()
        ways, clos, cpus = used.get(d.domain_id, (0, 0, frozenset()))
        leased = d.lease_ways if d.cat else 0
        report.append({
            'id': d.domain_id,
            'ways_total': _usable(inv, extra_specs.RC_LLC_WAY),
            'ways_used': ways,
            'clos_total': _usable(inv, extra_specs.RC_LLC_CLOS),
            'clos_used': clos,
            'cores_total': _usable(inv, extra_specs.RC_RESQ_CORE),
            'cores_used': len(cpus),
            'ways_leased': leased,
            'cores_leased': ((d.lease_cores or d.cores or leased)
                             if leased else 0),
        })
    body = {'domains': report,
            'instances': instances(assignments,
                                   {d['id'] for d in report}, usage)}
    if version:
        body['agent_version'] = version
    return body


def placement(report):
    """The report without what is measured; None for None. Pure.

    What decides whether a report is sent at once (see the module).
    """
    if report is None:
        return None
    return dict(report, instances=[
        {k: v for k, v in inst.items() if k not in MEASURED}
        for inst in report.get('instances') or ()])


def without_instances(report):
    """The report as a resq-api older than microversion 1.1 takes it."""
    return {k: v for k, v in report.items() if k != 'instances'}


class HostReporter:
    """A post-apply hook of :class:`resq_agent.manager.AgentManager`.

    :param resq: a :class:`resq_common.clients.resq.ResQClient`.
    :param domains: ``topology -> [CacheDomain]`` (no I/O).
    :param usage: ``() -> {server uuid: reading}``, the monitor's last
        readings (no I/O); None until set: the manager sets its own
        :meth:`~resq_agent.manager.AgentManager.usage`.
    :param measure: ``() -> None``, takes new readings (resctrl reads),
        called by a due heartbeat before it builds the report; None until
        set: the manager sets its own
        :meth:`~resq_agent.manager.AgentManager.measure`.
    :param rng: a :class:`random.Random` for the jitter (tests).
    """

    def __init__(self, resq, hostname, domains, interval=60,
                 clock=time.monotonic, version=None, usage=None,
                 measure=None, rng=None):
        self.resq = resq
        self.hostname = hostname
        self.domains = domains
        self.interval = interval
        self.clock = clock
        self.version = version if version is not None else agent_version()
        self.usage = usage
        self.measure = measure
        self._placed = None       # (domains, assignments) of the last pass
        self._latest = None
        self._sent = None
        self._sent_at = None
        self._failing = False
        self._refused_at = None   # when resq-api last refused 1.1
        self._complete = False    # the last full report had its servers
        self._full_at = None      # when the last full report was sent
        self._no_beat_at = None   # when resq-api last refused heartbeats
        self._failures = 0        # busy or unreachable answers in a row
        self._not_before = None   # backing off until then
        self._waited = False      # next_wait gave its first, random wait
        self._rng = rng or random.Random()
        self._lock = threading.Lock()

    def after_apply(self, topology, assignments):
        domains = self.domains(topology)
        with self._lock:
            self._placed = (domains, list(assignments))
            self._latest = self._build()
            return self._send()

    def heartbeat(self):
        """Resend the report with new readings if due (periodic)."""
        if self.measure is not None and self._placed is not None \
                and self._due():
            # Outside the lock: the manager's status() takes its own.
            try:
                self.measure()
            except Exception:
                LOG.exception('Cannot measure the occupancy of the servers '
                              'of %s for its host report; reporting the '
                              'last readings', self.hostname)
        with self._lock:
            if self._placed is not None:
                self._latest = self._build()
            return self._send()

    def send(self):
        """Send the latest report if it changed or is due; True if sent."""
        with self._lock:
            return self._send()

    def _build(self):
        domains, assignments = self._placed
        usage = self.usage() if self.usage is not None else None
        return build(domains, assignments, self.version, usage)

    def _due(self):
        # The runner's waits are jittered: one a little shorter than the
        # interval is due too.
        return self._sent_at is None or bool(
            self.interval and self.clock() - self._sent_at
            >= self.interval * (1 - JITTER))

    def next_wait(self):
        """Seconds until the next heartbeat (the service's runner asks).

        The first is a random part of the interval; then the interval
        +-:data:`JITTER`; while backing off, until the back-off ends.
        """
        interval = self.interval
        if not interval:
            return interval
        if not self._waited:
            self._waited = True
            return self._rng.uniform(0, interval)
        if self._not_before is not None:
            left = self._not_before - self.clock()
            if left > 0:
                return left
        return interval * self._rng.uniform(1 - JITTER, 1 + JITTER)

    def _backing_off(self):
        return self._not_before is not None and \
            self.clock() < self._not_before

    def _back_off(self, retry_after=None):
        """Wait longer after each failure: see the module."""
        self._failures += 1
        interval = self.interval or RETRY_S
        cap = BACKOFF_CAP * interval
        wait = min(cap, interval * 2 ** (self._failures - 1))
        wait *= self._rng.uniform(1 - JITTER, 1 + JITTER)
        if retry_after:
            wait = max(wait, retry_after)
        self._not_before = self.clock() + min(cap, wait)

    def _full(self, changed):
        """Whether the due send is the full report (else a heartbeat)."""
        if changed or self._sent is None or not self._complete:
            return True
        if self._no_beat_at is not None and \
                self.clock() - self._no_beat_at < self._beat_retry_s():
            return True
        return self._latest != self._sent and (
            self.clock() - self._full_at
            >= FULL_EVERY * (self.interval or RETRY_S) * (1 - JITTER))

    def _send(self):
        if self._latest is None or self._backing_off():
            return False
        changed = placement(self._latest) != placement(self._sent)
        if not changed and not self._due():
            return False
        report = self._latest
        started = self.clock()
        try:
            full = self._full(changed)
            if not full:
                full = not self._beat()
            if full:
                self._put(report)
        except resq_client.ResQAPIError as exc:
            if _busy(exc):
                self._back_off(exc.retry_after)
            log = LOG.debug if self._failing else LOG.warning
            log('Cannot report the cache domains of %s to resq-api (%s); '
                'retrying %s', self.hostname, exc,
                'in %.0f s' % (self._not_before - self.clock())
                if self._backing_off() else 'after the next pass')
            self._failing = True
            return False
        if self._failing:
            LOG.info('Reporting the cache domains of %s to resq-api again',
                     self.hostname)
        self._failing = False
        if self.clock() - started > SLOW_S:
            # Stored, but resq-api is struggling: the next waits grow.
            self._back_off()
        else:
            self._failures = 0
            self._not_before = None
        if changed:
            LOG.info('Reported %d cache domain(s) and %d partitioned '
                     'server(s) of %s to resq-api', len(report['domains']),
                     len(report.get('instances') or ()), self.hostname)
        self._sent_at = self.clock()
        if full:
            self._sent, self._full_at = report, self._sent_at
        return True

    def _beat(self):
        """The heartbeat; False when the full report must go instead."""
        try:
            self.resq.heartbeat_host(self.hostname)
        except resq_client.HostNotReported:
            LOG.info('resq-api has no report of %s; sending the full '
                     'report', self.hostname)
            return False
        except resq_client.ResQAPIError as exc:
            if exc.status not in (404, 406):
                raise
            if self._no_beat_at is None:
                LOG.info('resq-api does not take heartbeats of %s (%s): it '
                         'is older than microversion 1.2; sending the full '
                         'report instead, and asking again every %d s',
                         self.hostname, exc, self._beat_retry_s())
            self._no_beat_at = self.clock()
            return False
        if self._no_beat_at is not None:
            LOG.info('resq-api takes heartbeats of %s again (microversion '
                     '1.2)', self.hostname)
        self._no_beat_at = None
        return True

    def _put(self, report):
        """PUT ``report``; without its servers if resq-api refuses them."""
        if 'instances' in report and self._ask_instances():
            try:
                self.resq.report_host(self.hostname, report)
            except resq_client.ResQAPIError as exc:
                if exc.status not in resq_client.VERSION_REFUSED:
                    raise
                self._refused(exc)
            else:
                if self._refused_at is not None:
                    LOG.info('resq-api takes the partitioned servers of %s '
                             'again (microversion 1.1)', self.hostname)
                self._refused_at = None
                self._complete = True
                return
        self.resq.report_host(self.hostname, without_instances(report))
        self._complete = 'instances' not in report

    def _retry_s(self):
        return self.interval or RETRY_S

    def _beat_retry_s(self):
        """How often a resq-api that refused heartbeats is asked again."""
        return FULL_EVERY * self._retry_s()

    def _ask_instances(self):
        """Whether to send the servers (1.1) rather than the domains."""
        return (self._refused_at is None
                or self.clock() - self._refused_at >= self._retry_s())

    def _refused(self, exc):
        if self._refused_at is None:
            LOG.warning(
                'resq-api refused the report of %s with its partitioned '
                'servers (microversion 1.1): %s. It is older than this '
                'agent, or finds the servers inconsistent with the cache '
                'domains; reporting the cache domains alone (microversion '
                '1.0) and asking again every %d s', self.hostname, exc,
                self._retry_s())
        self._refused_at = self.clock()
