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
"""Client side of the resq-agent RPC API (used by tools and the optimizer).

Each agent listens on topic ``[resq_agent] rpc_topic`` with its compute
host as server name, so a call reaches exactly one host's agent.
"""

import oslo_messaging

from resq_agent import rpc


def get_transport(conf):
    """The RPC transport of ``[DEFAULT] transport_url``."""
    rpc.register_opts(conf)
    return oslo_messaging.get_rpc_transport(conf)


class AgentAPI:
    """Client side of the resq-agent RPC API.

    API version history:

    * 1.0 - Initial version: ``reconcile(host)`` runs a full pass and
      returns its summary; ``status(host)`` returns what the agent
      enforces and measures (domains, instances with masks, LLC occupancy
      and memory bandwidth).

    Bump the minor version for every compatible change and note it here;
    servers accept any 1.x up to their own, clients are capped by
    ``[resq_agent] rpc_version_cap`` during rolling upgrades.
    """

    RPC_API_VERSION = '1.0'

    def __init__(self, conf, transport=None):
        rpc.register_opts(conf)
        opts = conf.resq_agent
        target = oslo_messaging.Target(topic=opts.rpc_topic,
                                       version=self.RPC_API_VERSION)
        self.transport = transport or get_transport(conf)
        self.client = oslo_messaging.get_rpc_client(
            self.transport, target, version_cap=opts.rpc_version_cap)

    def _prepare(self, host, timeout=None):
        kwargs = {'server': host, 'version': '1.0'}
        if timeout is not None:
            kwargs['timeout'] = timeout
        return self.client.prepare(**kwargs)

    def reconcile(self, ctxt, host, timeout=None):
        """Ask ``host``'s agent for a full reconcile; returns its summary.

        :raises oslo_messaging.MessagingTimeout: no agent answered.
        """
        return self._prepare(host, timeout).call(ctxt, 'reconcile')

    def status(self, ctxt, host, timeout=None):
        """``host``'s agent status (the ``resq-agent status`` document)."""
        return self._prepare(host, timeout).call(ctxt, 'status')
