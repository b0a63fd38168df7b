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
and cannot move the ways to the cores' domain, marks the server's
metadata ``resq_isolation=misplaced: <reason>``
(:mod:`resq_agent.isolation`). The optimizer live-migrates each such
server without naming a host: Nova's scheduler, with the ResQ filter,
chooses one where the cores and the ways land in one cache domain. Each
move's true outcome is reported: ``done`` only when the server is ACTIVE
on another host (its mark then says ``moved to <host>``), ``failed``
with Nova's reason otherwise, ``skipped`` when the server is busy (its
next round tries again).
"""

import time

from oslo_log import log as logging

from resq_common.clients import compute as compute_mod
from resq_common import isolation as isolation_contract

LOG = logging.getLogger(__name__)

# The server metadata resq_agent.isolation writes (it imports these).
ISOLATION_KEY = isolation_contract.ISOLATION_KEY
MISPLACED_PREFIX = isolation_contract.MISPLACED_PREFIX
DONE, FAILED, SKIPPED = 'done', 'failed', 'skipped'


def misplaced(servers):
    """The servers whose metadata says they run without isolation."""
    return [s for s in servers
            if str((s.get('metadata') or {}).get(ISOLATION_KEY, ''))
            .startswith(MISPLACED_PREFIX)]


class Repairer:

    def __init__(self, compute, timeout=600.0, poll_interval=2.0,
                 clock=time.monotonic, sleep=time.sleep):
        self.compute = compute
        self.timeout = timeout
        self.poll_interval = poll_interval
        self.clock = clock
        self.sleep = sleep

    def run(self, servers=None):
        """Move every misplaced server once; their outcomes, in order.

        :param servers: server documents (with ``metadata``); default: all
            servers, from Nova.
        """
        if servers is None:
            servers = self.compute.list_all_servers()
        return [self.move(s) for s in misplaced(servers)]

    def move(self, server):
        uuid = server['id']
        source = server.get('OS-EXT-SRV-ATTR:host')
        result = {'uuid': uuid, 'name': server.get('name'),
                  'from_host': source, 'to_host': None,
                  'reason': server['metadata'][ISOLATION_KEY]}
        if server.get('status') != 'ACTIVE' or server.get(
                'OS-EXT-STS:task_state'):
            return self._outcome(result, SKIPPED, 'the server is %s (task '
                                 '%s); tried again next round' % (
                                     server.get('status'),
                                     server.get('OS-EXT-STS:task_state')))
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
        """Say it moved, so the next round does not move it again.

        The destination's agent marks it again if its cores and ways are
        still apart there.
        """
        try:
            self.compute.update_server_metadata(
                uuid, {ISOLATION_KEY: 'moved to %s' % host})
        except compute_mod.ComputeError as exc:
            LOG.warning('Server %s moved to %s but its %s mark could not '
                        'be updated (%s); the next round may move it again',
                        uuid, host, ISOLATION_KEY, exc)

    def _outcome(self, result, outcome, detail):
        result['outcome'] = outcome
        result['detail'] = detail
        log = LOG.info if outcome == DONE else LOG.warning
        log('Server %s without isolation on %s: live migration %s%s',
            result['uuid'], result['from_host'], outcome,
            ' (%s)' % detail if detail else ' to %s' % result['to_host'])
        return result
