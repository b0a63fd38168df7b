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
"""Client side of the resq-optimizer RPC API (used by the agents).

The optimizer listens on topic ``[resq_optimizer] rpc_topic`` (one server
per optimizer; there is one optimizer per cloud, under its lock).
"""

import oslo_messaging

TOPIC = 'resq_optimizer'


class OptimizerAPI:
    """Client side of the resq-optimizer RPC API.

    API version history:

    * 1.0 - Initial version: ``escalate(escalation)``, an on-demand NF its
      host cannot keep within its latency target
      (:func:`resq_agent.ondemand.escalation.payload`); a cast, the agent
      never waits for the optimizer.
    """

    RPC_API_VERSION = '1.0'

    def __init__(self, transport, topic=TOPIC):
        target = oslo_messaging.Target(topic=topic,
                                       version=self.RPC_API_VERSION)
        self.client = oslo_messaging.get_rpc_client(transport, target)

    def escalate(self, ctxt, escalation):
        self.client.prepare(version='1.0').cast(ctxt, 'escalate',
                                                escalation=escalation)

    def escalate_and_wait(self, ctxt, escalation, timeout=None):
        """The same as a call: the optimizer's decision (tools, tests).

        The data of an ``OnDemandDecisionPayload``; from 1.1 on with the
        scale-out's ``outcome``, ``server_uuid`` and ``server_host``. With
        ``[resq_optimizer] ondemand_scale_out = boot`` the answer comes
        once the boot's outcome is known: give a ``timeout`` above
        ``ondemand_boot_timeout``.
        """
        return self.client.prepare(version='1.0', timeout=timeout).call(
            ctxt, 'escalate', escalation=escalation)
