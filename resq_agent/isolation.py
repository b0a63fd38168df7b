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
"""Instances that run without isolation, marked on the server.

When the agent finds an instance's cores and ways in different cache
domains and cannot move the ways to the cores (no room there), the
instance runs unpartitioned. The agent says so where the tenant and the
optimizer look: the server metadata key ``resq_isolation`` (``misplaced
on <host>: <reason>``, back to ``ok`` once repaired), beside the fault
notification ``resq.instance.misplaced`` (:mod:`resq_agent.notifications`).
``resq-optimizer`` live-migrates servers so marked, letting Nova's
scheduler and the ResQ filter choose a host where both fit, and writes
``moved to <host>`` when the move is done.

An agent clears only its own mark: it writes ``ok`` only while the value
is still the one it wrote. A server that left the host (repaired by the
optimizer, or moved by an operator) may already carry the optimizer's
``moved to`` or the new host's agent's own mark; the old host's late
``ok`` must not erase it.

Writes that fail (Nova down, the server busy) are retried after every
enforcement pass until they land.
"""

from oslo_log import log as logging

from resq_agent import metadata
from resq_common import isolation as isolation_contract

LOG = logging.getLogger(__name__)

# The contract with resq-optimizer, which reads the mark.
ISOLATION_KEY = isolation_contract.ISOLATION_KEY
MISPLACED = isolation_contract.MISPLACED_PREFIX
OK = 'ok'
# Nova's limit on a metadata value.
MAX_VALUE = 255


def misplaced_value(reason, host=None):
    value = ('%s on %s: %s' % (MISPLACED, host, reason) if host else
             '%s: %s' % (MISPLACED, reason))
    return value if len(value) <= MAX_VALUE else value[:MAX_VALUE - 3] + '...'


class IsolationPublisher:
    """A misplaced hook of :class:`resq_agent.manager.AgentManager`."""

    def __init__(self, conf, server_metadata=None, host=None):
        self.conf = conf
        self.host = host
        self._metadata = server_metadata
        self._pending = {}      # uuid -> value still to write
        self._written = {}      # uuid -> the misplaced mark that landed
        self._failing = False

    def __call__(self, misplaced, resolved):
        for uuid, reason in misplaced.items():
            self._pending[uuid] = misplaced_value(reason, self.host)
        for uuid in resolved:
            if uuid in self._written:
                self._pending[uuid] = OK
            else:
                # Its mark never landed: there is nothing to clear.
                self._pending.pop(uuid, None)
        self.flush()

    def after_apply(self, topology, assignments):
        """Post-apply hook: retry what did not land."""
        if self._pending:
            self.flush()

    def _client(self):
        if self._metadata is None:
            self._metadata = metadata.ServerMetadata.from_conf(self.conf)
        return self._metadata

    def flush(self):
        for uuid, value in sorted(self._pending.items()):
            expect = None
            if value == OK:
                expect = {ISOLATION_KEY: self._written[uuid]}
            try:
                self._client().publish(uuid, {ISOLATION_KEY: value},
                                       expect=expect)
            except metadata.NovaUnavailable as exc:
                log = LOG.debug if self._failing else LOG.warning
                log('Cannot mark servers without cache isolation: %s', exc)
                self._failing = True
                return
            except metadata.ServerGone:
                LOG.debug('Instance %s is gone; nothing to mark', uuid)
                self._written.pop(uuid, None)
            except metadata.Superseded as exc:
                LOG.info('%s; leaving it', exc)
                self._written.pop(uuid, None)
            except metadata.MetadataError as exc:
                LOG.warning('%s; retrying after the next pass', exc)
                continue
            else:
                if value == OK:
                    self._written.pop(uuid, None)
                else:
                    self._written[uuid] = value
                LOG.info('Server %s: metadata %s=%s', uuid, ISOLATION_KEY,
                         value)
            self._failing = False
            del self._pending[uuid]
