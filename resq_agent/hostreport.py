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
"""This host's cache domains, reported to resq-api (``PUT /hosts/<name>``).

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

A report that changed is sent after the pass that changed it; an
unchanged one at most every ``[resq_agent] host_report_interval`` seconds
(the heartbeat: ``updated_at`` then shows an agent that stopped). An
unreachable API is logged once per outage; the next pass or heartbeat
tries again.
"""

import threading
import time

from oslo_log import log as logging

from resq_common.clients import resq as resq_client
from resq_common import extra_specs

LOG = logging.getLogger(__name__)


def _usable(inventory, rc):
    inv = inventory.get(rc)
    return max(inv['total'] - inv['reserved'], 0) if inv else 0


def agent_version():
    try:
        from importlib import metadata
        return metadata.version('resq-nova')
    except Exception:
        return None


def build(domains, assignments, version=None):
    """The report's body. Pure.

    :param domains: :class:`resq_common.cache_domain.CacheDomain` objects.
    :param assignments: :class:`resq_agent.layout.Assignment` objects.
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
    body = {'domains': report}
    if version:
        body['agent_version'] = version
    return body


class HostReporter:
    """A post-apply hook of :class:`resq_agent.manager.AgentManager`.

    :param resq: a :class:`resq_common.clients.resq.ResQClient`.
    :param domains: ``topology -> [CacheDomain]`` (no I/O).
    """

    def __init__(self, resq, hostname, domains, interval=60,
                 clock=time.monotonic, version=None):
        self.resq = resq
        self.hostname = hostname
        self.domains = domains
        self.interval = interval
        self.clock = clock
        self.version = version if version is not None else agent_version()
        self._latest = None
        self._sent = None
        self._sent_at = None
        self._failing = False
        self._lock = threading.Lock()

    def after_apply(self, topology, assignments):
        self._latest = build(self.domains(topology), assignments,
                             self.version)
        return self.send()

    def heartbeat(self):
        """Resend the last report if it is due (a periodic task)."""
        return self.send()

    def send(self):
        """Send the latest report if it changed or is due; True if sent."""
        with self._lock:
            return self._send()

    def _send(self):
        if self._latest is None:
            return False
        if (self._sent == self._latest and self._sent_at is not None
                and (not self.interval or
                     self.clock() - self._sent_at < self.interval)):
            return False
        report = self._latest
        try:
            self.resq.report_host(self.hostname, report)
        except resq_client.ResQAPIError as exc:
            log = LOG.debug if self._failing else LOG.warning
            log('Cannot report the cache domains of %s to resq-api (%s); '
                'retrying after the next pass', self.hostname, exc)
            self._failing = True
            return False
        if self._failing:
            LOG.info('Reporting the cache domains of %s to resq-api again',
                     self.hostname)
        self._failing = False
        if report != self._sent:
            LOG.info('Reported %d cache domain(s) of %s to resq-api',
                     len(report['domains']), self.hostname)
        self._sent, self._sent_at = report, self.clock()
        return True
