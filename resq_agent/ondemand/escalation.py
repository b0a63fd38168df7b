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
"""Escalation: an on-demand NF the host cannot keep within its target.

When the local scheduler holds a stable plan and an NF still misses its
latency target (ResQ §5.3.2: "if not would notify the central
scheduler"), the agent

* sends the versioned notification ``resq.ondemand.escalation`` (level
  warn) on ``[resq_agent] notification_topics``, for operators and
  metering;
* casts ``escalate`` to the optimizer (:class:`resq_common.rpc.optimizer.
  OptimizerAPI`), which looks for a host whose lease has room for one more
  instance or reports that the SLO cannot be met.

The payload is a versioned object, as Nova's are::

    {"resq_object.name": "OnDemandEscalationPayload",
     "resq_object.namespace": "resq", "resq_object.version": "1.0",
     "resq_object.data": {"instance_uuid", "host", "domain_id", "reason",
                          "lease_ways", "vcpus", "target_us"}}
"""

from oslo_log import log as logging
import oslo_messaging

from resq_common.rpc import optimizer as optimizer_rpcapi

LOG = logging.getLogger(__name__)

EVENT = 'resq.ondemand.escalation'
PAYLOAD_NAME = 'OnDemandEscalationPayload'
PAYLOAD_VERSION = '1.0'
FIELDS = ('instance_uuid', 'host', 'domain_id', 'reason', 'lease_ways',
          'vcpus', 'target_us')


def payload(host, escalation):
    data = dict(escalation, host=host)
    return {'resq_object.name': PAYLOAD_NAME,
            'resq_object.namespace': 'resq',
            'resq_object.version': PAYLOAD_VERSION,
            'resq_object.data': {k: data.get(k) for k in FIELDS}}


class Escalator:
    """Sends escalations; never raises.

    A lost one is logged; the NF is escalated again when it violates
    again after having met its target.
    """

    def __init__(self, conf, transport, notification_transport, host):
        self.host = host
        self.notifier = oslo_messaging.Notifier(
            notification_transport, publisher_id='resq-agent.%s' % host,
            driver='messagingv2',
            topics=conf.resq_agent.notification_topics, retry=1)
        self.optimizer = optimizer_rpcapi.OptimizerAPI(
            transport, conf.resq_agent.optimizer_topic)

    def send(self, escalations):
        """Send each; returns how many reached the broker both ways."""
        sent = 0
        for esc in escalations:
            body = payload(self.host, esc)
            ok = True
            try:
                self.notifier.warn({}, EVENT, body)
            except Exception as exc:
                ok = False
                LOG.warning('Could not send %s for %s: %s', EVENT,
                            esc.get('instance_uuid'), exc)
            try:
                self.optimizer.escalate({}, body)
            except Exception as exc:
                ok = False
                LOG.warning('Could not escalate %s to the optimizer: %s',
                            esc.get('instance_uuid'), exc)
            sent += ok
        return sent
