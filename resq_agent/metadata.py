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
"""Guest mbuf budgets as Nova server metadata.

The guest sizes its DPDK mempool from what it can read: Nova server
metadata is served by the metadata service (``meta`` in
``openstack/latest/meta_data.json``) and written to the config drive, so
the agent publishes each ResQ instance's budget there through the compute
API (``POST /servers/{id}/metadata`` merges keys, leaving the user's own
metadata alone). It reads first and writes only when a value differs.
"""

from oslo_log import log as logging

from resq_common.clients import compute
from resq_common.conf import clients
from resq_profiler import exception

LOG = logging.getLogger(__name__)

GROUP = clients.NOVA
BUDGET_KEY = 'resq_mbuf_budget'
PACKET_KEY = 'resq_packet_bytes'


class NovaUnavailable(exception.ResQException):
    msg_fmt = ('Nova\'s compute API is unreachable (%(reason)s); check the '
               '[nova] options. Guest budgets are published at the next '
               'reconcile.')


class MetadataError(exception.ResQException):
    msg_fmt = ('Could not %(action)s metadata of server %(server)s: '
               '%(status)s %(reason)s')


class ServerGone(MetadataError):
    pass


class ServerBusy(MetadataError):
    """409: the server is locked or in a task (building, migrating)."""


class Superseded(MetadataError):
    """Someone else wrote the key since; the write was not made."""

    msg_fmt = ('Metadata %(key)s of server %(server)s is %(found)r, no '
               'longer %(expected)r: another writer changed it')


class ServerMetadata:
    """Guest-visible server metadata, through resq-nova's compute client."""

    def __init__(self, client):
        self._client = client

    @classmethod
    def from_conf(cls, conf, group=GROUP):
        """Build from the keystoneauth options of ``[nova]``.

        :raises NovaUnavailable: when the group has no usable credentials.
        """
        try:
            return cls(compute.ComputeClient.from_conf(conf, group))
        except clients.MissingCredentials as exc:
            raise NovaUnavailable(reason=str(exc))

    def _call(self, call, server, action, *args):
        try:
            return call(server, *args)
        except compute.ComputeUnavailable as exc:
            raise NovaUnavailable(reason=exc.kwargs.get('reason', exc))
        except compute.ComputeError as exc:
            cls = {404: ServerGone, 409: ServerBusy}.get(exc.status_code,
                                                         MetadataError)
            raise cls(action=action, server=server, status=exc.status_code,
                      reason=exc.kwargs.get('reason', ''))

    def get(self, server):
        return self._call(self._client.get_server_metadata, server, 'read')

    def publish(self, server, values, expect=None):
        """Merge ``values`` into the server's metadata if any differs.

        :param values: ``{key: value}``; values are sent as strings.
        :param expect: ``{key: value}`` the metadata must still hold for
            the write to happen (someone else's newer value wins; the
            check and the write are two calls, so this narrows a race
            between writers to their round trip, it does not close it).
        :returns: True when a write happened.
        :raises Superseded: ``expect`` does not hold.
        :raises NovaUnavailable, ServerGone, ServerBusy, MetadataError:
        """
        want = {k: str(v) for k, v in values.items()}
        have = self.get(server)
        for key, value in (expect or {}).items():
            if have.get(key) != value:
                raise Superseded(server=server, key=key, expected=value,
                                 found=have.get(key))
        if all(have.get(k) == v for k, v in want.items()):
            return False
        self._call(self._client.update_server_metadata, server, 'update',
                   want)
        return True

    def publish_budget(self, budget):
        """Publish one :class:`resq_agent.dma.GuestBudget`."""
        return self.publish(budget.instance_uuid, {
            BUDGET_KEY: budget.mbufs, PACKET_KEY: budget.packet_bytes})
