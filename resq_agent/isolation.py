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
optimizer look: the server metadata key ``resq_isolation`` (``misplaced:
<reason>``, back to ``ok`` once repaired), beside the fault notification
``resq.instance.misplaced`` (:mod:`resq_agent.notifications`).
``resq-optimizer`` live-migrates servers so marked, letting Nova's
scheduler and the ResQ filter choose a host where both fit.

Writes that fail (Nova down, the server busy) are retried after every
enforcement pass until they land.
"""

from oslo_log import log as logging

from resq_agent import metadata
from resq_nova.optimizer import repair

LOG = logging.getLogger(__name__)

# The contract with resq-optimizer, which reads the mark.
ISOLATION_KEY = repair.ISOLATION_KEY
MISPLACED = repair.MISPLACED_PREFIX
OK = 'ok'
# Nova's limit on a metadata value.
MAX_VALUE = 255


def misplaced_value(reason):
    value = '%s: %s' % (MISPLACED, reason)
    return value if len(value) <= MAX_VALUE else value[:MAX_VALUE - 3] + '...'


class IsolationPublisher:
    """A misplaced hook of :class:`resq_agent.manager.AgentManager`."""

    def __init__(self, conf, server_metadata=None):
        self.conf = conf
        self._metadata = server_metadata
        self._pending = {}      # uuid -> value still to write
        self._marked = set()    # uuids whose metadata says misplaced
        self._failing = False

    def __call__(self, misplaced, resolved):
        for uuid, reason in misplaced.items():
            self._pending[uuid] = misplaced_value(reason)
            self._marked.add(uuid)
        for uuid in resolved:
            if uuid in self._marked:
                self._pending[uuid] = OK
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
            try:
                self._client().publish(uuid, {ISOLATION_KEY: value})
            except metadata.NovaUnavailable as exc:
                log = LOG.debug if self._failing else LOG.warning
                log('Cannot mark servers without cache isolation: %s', exc)
                self._failing = True
                return
            except metadata.ServerGone:
                LOG.debug('Instance %s is gone; nothing to mark', uuid)
            except metadata.MetadataError as exc:
                LOG.warning('%s; retrying after the next pass', exc)
                continue
            self._failing = False
            del self._pending[uuid]
            if value == OK:
                self._marked.discard(uuid)
            LOG.info('Server %s: metadata %s=%s', uuid, ISOLATION_KEY, value)
