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
"""Server side of the resq-agent RPC API: a thin endpoint on the manager.

The version history lives in :class:`resq_agent.rpcapi.AgentAPI`.
"""

import importlib

from oslo_log import log as logging
import oslo_messaging
from oslo_messaging import opts as om_opts

LOG = logging.getLogger(__name__)

# The exchange resq-agent's RPC and own notifications use unless
# [DEFAULT] control_exchange says otherwise.
EXCHANGE = 'resq'


def set_defaults():
    oslo_messaging.set_transport_defaults(EXCHANGE)


def register_opts(conf):
    """Register oslo.messaging's options on a private ConfigOpts.

    Safe to call more than once. Recent oslo.messaging releases register
    ``[oslo_messaging_metrics]`` and ``[oslo_messaging_tracing]`` on the
    global ``cfg.CONF`` only but read them from the ConfigOpts they are
    given (its own ConfFixture registers them the same way).
    """
    set_defaults()
    for group, opts in om_opts.list_opts():
        conf.register_opts(opts, group=group)
    for module, group in (('oslo_messaging._metrics.client',
                           'oslo_messaging_metrics'),
                          ('oslo_messaging._tracing.client',
                           'oslo_messaging_tracing')):
        try:
            opts = getattr(importlib.import_module(module), group)
        except (ImportError, AttributeError):   # not in this release
            continue
        conf.register_opts(opts, group=group)


class AgentEndpoint:
    """Dispatches RPC calls to an :class:`resq_agent.manager.AgentManager`.

    Only public methods are callable (oslo.messaging's default access
    policy); each returns plain JSON-able data.
    """

    target = oslo_messaging.Target(version='1.0')

    def __init__(self, manager):
        self.manager = manager

    def reconcile(self, ctxt):
        LOG.info('Reconcile requested over RPC')
        return self.manager.reconcile()

    def status(self, ctxt):
        return self.manager.status()


def get_server(conf, transport, manager, host):
    """An RPC server for ``host`` on ``rpc_topic``, not yet started."""
    target = oslo_messaging.Target(topic=conf.resq_agent.rpc_topic,
                                   server=host)
    return oslo_messaging.get_rpc_server(
        transport, target, [AgentEndpoint(manager)], executor='threading',
        access_policy=oslo_messaging.DefaultRPCAccessPolicy)
