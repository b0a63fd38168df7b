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
"""Instances that run without isolation, reported to resq-api.

When the agent finds an instance's cores and ways in different cache
domains and cannot move the ways to the cores (no room there), the
instance runs unpartitioned. The agent reports it to resq-api
(``PUT /servers/{uuid}/isolation``: ``misplaced`` with the host and the
reason, back to ``ok`` once repaired) with its own service credentials
(``[resq_api]``; only admin and service users may write it), beside the
fault notification ``resq.instance.misplaced``
(:mod:`resq_agent.notifications`). ``resq-optimizer`` live-migrates the
servers resq-api lists as misplaced, letting Nova's scheduler and the
ResQ filter choose a host where both fit, and records ``moved``.

Without ``[resq_api]`` the agent writes the server metadata key
``resq_isolation`` instead, for people to read: the optimizer never acts
on metadata, which the server's owner can write.

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
from resq_common.clients import resq as resq_client
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


class ServiceUnavailable(metadata.NovaUnavailable):
    msg_fmt = ('resq-api is unreachable (%(reason)s); check the [resq_api] '
               'options. Isolation status is reported after the next pass.')


class ServiceIsolation:
    """The publisher's sink in resq-api (``publish`` as ServerMetadata's)."""

    def __init__(self, client, host):
        self._client = client
        self._host = host

    def publish(self, server, values, expect=None):
        value = values[ISOLATION_KEY]
        try:
            if expect is not None:
                now = self._client.get_isolation(server)
                wanted = expect[ISOLATION_KEY]
                if now is None or (now['status'], now['host'],
                                   now['detail']) != (MISPLACED, self._host,
                                                      wanted):
                    raise metadata.Superseded(
                        key='isolation status', server=server,
                        found=now and '%s on %s' % (now['status'],
                                                    now['host']),
                        expected=wanted)
            status = OK if value == OK else MISPLACED
            self._client.set_isolation(server, status, self._host,
                                       '' if value == OK else value)
        except resq_client.ResQAPIUnavailable as exc:
            raise ServiceUnavailable(reason=exc)
        except resq_client.ResQAPIError as exc:
            raise metadata.MetadataError(action='report the isolation '
                                         'status', server=server,
                                         status=exc.status, reason=exc)


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
            api = self.conf[resq_client.GROUP]
            if api.auth_type or api.endpoint_override:
                self._metadata = ServiceIsolation(
                    resq_client.ResQClient.from_conf(self.conf), self.host)
            else:
                LOG.error('[resq_api] is not configured: servers without '
                          'cache isolation are only marked in their '
                          'metadata, which resq-optimizer does not act on; '
                          'configure [resq_api] with the agent\'s service '
                          'credentials')
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
