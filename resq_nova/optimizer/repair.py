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
"""Servers running without isolation, moved to a host where both fit.

An agent that finds a server's cores and ways in different cache domains,
and cannot move the ways to the cores' domain, reports it ``misplaced``
to resq-api (:mod:`resq_agent.isolation`); only admin and service users
may write that status. The optimizer live-migrates each server resq-api
lists as misplaced on the host Nova has it on, without naming a target:
Nova's scheduler, with the ResQ filter, chooses one where the cores and
the ways land in one cache domain. Each move's true outcome is reported:
``done`` only when the server is ACTIVE on another host (its status then
``moved``), ``failed`` with Nova's reason otherwise, ``skipped`` when the
server is busy (its next round tries again). Server metadata is never
read: the server's owner can write it.

``resq-optimizer repair`` moves them when an operator asks; ``run`` does
only with ``[resq_optimizer] repair_isolation`` and, when
``repair_window`` is set, inside that window (no move starts after it
closes). Each live migration is logged and announced with who asks and
why (:mod:`resq_nova.optimizer.actions`).
"""

import time

from oslo_log import log as logging

from resq_common.clients import compute as compute_mod
from resq_common import isolation as isolation_contract
from resq_nova.optimizer import actions as actions_mod

LOG = logging.getLogger(__name__)

# The metadata key agents without [resq_api] write, for people only.
ISOLATION_KEY = isolation_contract.ISOLATION_KEY
MISPLACED_PREFIX = isolation_contract.MISPLACED_PREFIX
DONE, FAILED, SKIPPED = 'done', 'failed', 'skipped'


class Repairer:
    """Live-migrate the servers resq-api lists as misplaced.

    Server metadata is not read: the server's owner can write it.
    """

    def __init__(self, compute, isolation, timeout=600.0, poll_interval=2.0,
                 clock=time.monotonic, sleep=time.sleep, actions=None):
        self.compute = compute
        self.isolation = isolation
        self.timeout = timeout
        self.poll_interval = poll_interval
        self.clock = clock
        self.sleep = sleep
        self.actions = actions or actions_mod.ActionLog(compute=compute)

    def run(self, hold=None):
        """Move every misplaced server once; their outcomes, in order.

        :param hold: asked before each move; when it answers a reason
            (the maintenance window closed), no further move starts.
        """
        results = []
        for record in self.isolation.list_isolation(status=MISPLACED_PREFIX):
            why_not = hold() if hold is not None else None
            if why_not:
                LOG.info('Server %s reported without isolation on %s is '
                         'not moved now: %s', record['server_uuid'],
                         record['host'], why_not)
                break
            try:
                server = self.compute.get_server(record['server_uuid'])
            except compute_mod.ComputeError as exc:
                LOG.warning('Server %s reported misplaced on %s cannot be '
                            'read (%s); tried again next round',
                            record['server_uuid'], record['host'], exc)
                continue
            if server.get('OS-EXT-SRV-ATTR:host') != record['host']:
                # It left the host the agent saw it on; that host's report
                # no longer describes it (the new host's agent reports).
                LOG.info('Server %s was reported misplaced on %s but is on '
                         '%s now; not moved', record['server_uuid'],
                         record['host'], server.get('OS-EXT-SRV-ATTR:host'))
                continue
            results.append(self.move(server, record.get('detail') or
                                     record['status']))
        return results

    def move(self, server, reason):
        uuid = server['id']
        source = server.get('OS-EXT-SRV-ATTR:host')
        result = {'uuid': uuid, 'name': server.get('name'),
                  'from_host': source, 'to_host': None, 'reason': reason}
        if server.get('status') != 'ACTIVE' or server.get(
                'OS-EXT-STS:task_state'):
            return self._outcome(result, SKIPPED, 'the server is %s (task '
                                 '%s); tried again next round' % (
                                     server.get('status'),
                                     server.get('OS-EXT-STS:task_state')))
        result['action'] = self.actions.start(
            actions_mod.REPAIR_MIGRATION, uuid, source,
            'repair of server %s reported without isolation on %s (%s)'
            % (uuid, source, reason), server_name=server.get('name'))
        try:
            self.compute.live_migrate(uuid, None)
        except compute_mod.ComputeError as exc:
            return self._outcome(result, FAILED, 'Nova refused the live '
                                 'migration: %s' % exc)
        deadline = self.clock() + self.timeout
        while True:
            self.sleep(self.poll_interval)
            try:
                now = self.compute.get_server(uuid)
            except compute_mod.ComputeError as exc:
                LOG.warning('Cannot read server %s (%s); still watching',
                            uuid, exc)
                now = None
            if now is not None and now.get('status') != 'MIGRATING' \
                    and not now.get('OS-EXT-STS:task_state'):
                host = now.get('OS-EXT-SRV-ATTR:host')
                result['to_host'] = host
                if now.get('status') == 'ACTIVE' and host != source:
                    self._unmark(uuid, host)
                    return self._outcome(result, DONE, None)
                fault = (now.get('fault') or {}).get('message')
                return self._outcome(result, FAILED, 'the server is %s on '
                                     '%s%s' % (now.get('status'), host,
                                               '; %s' % fault if fault
                                               else ''))
            if self.clock() >= deadline:
                return self._outcome(result, FAILED, 'timed out after %ss'
                                     % self.timeout)

    def _unmark(self, uuid, host):
        """Record the move, so the next round does not move it again.

        The destination's agent reports it misplaced again if its cores
        and ways are still apart there.
        """
        try:
            self.isolation.set_isolation(uuid, 'moved', host,
                                         'moved to %s by resq-optimizer'
                                         % host)
        except Exception as exc:
            LOG.warning('Server %s moved to %s but its isolation status '
                        'could not be updated in resq-api (%s); the next '
                        'round may move it again', uuid, host, exc)

    def _outcome(self, result, outcome, detail):
        result['outcome'] = outcome
        result['detail'] = detail
        action = result.pop('action', None)
        if action is not None:
            self.actions.end(action, outcome, detail, result['to_host'])
        log = LOG.info if outcome == DONE else LOG.warning
        log('Server %s without isolation on %s: live migration %s%s',
            result['uuid'], result['from_host'], outcome,
            ' (%s)' % detail if detail else ' to %s' % result['to_host'])
        return result
