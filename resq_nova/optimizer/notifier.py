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
"""Versioned notifications of the optimizer.

Event types ``resq.optimizer.plan.proposed`` (also for a plan that is not
proposed: it says why), ``resq.optimizer.plan.applied`` and
``resq.optimizer.plan.failed`` (a move failed or the plan was refused).
The payload is a versioned object, as Nova's are::

    {"resq_object.name": "PlanPayload", "resq_object.namespace": "resq",
     "resq_object.version": "1.0", "resq_object.data": {"id", "status",
     "proposed", "reason", "hosts_used_before", "hosts_used_after",
     "lower_bound", "gap_pct", "moves", "moves_done", "result"}}

``resq.optimizer.repair`` carries one repair's outcome; the start and end
of every action the optimizer takes (``resq.optimizer.action.*``) go
through the same notifier (:mod:`resq_nova.optimizer.actions`).
"""

import socket

from oslo_log import log as logging
import oslo_messaging

LOG = logging.getLogger(__name__)

PROPOSED = 'resq.optimizer.plan.proposed'
APPLIED = 'resq.optimizer.plan.applied'
FAILED = 'resq.optimizer.plan.failed'
REPAIR = 'resq.optimizer.repair'
PAYLOAD_VERSION = '1.0'


def payload(plan):
    actions = plan.get('actions') or ()
    return {
        'resq_object.name': 'PlanPayload',
        'resq_object.namespace': 'resq',
        'resq_object.version': PAYLOAD_VERSION,
        'resq_object.data': {
            'id': plan.get('id'), 'status': plan.get('status'),
            'proposed': plan.get('proposed'), 'reason': plan.get('reason'),
            'hosts_used_before': plan.get('hosts_used_before'),
            'hosts_used_after': plan.get('hosts_used_after'),
            'lower_bound': plan.get('lower_bound'),
            'gap_pct': plan.get('gap_pct'),
            'moves': len(plan.get('moves') or ()),
            'moves_done': sum(1 for a in actions
                              if a.get('outcome') == 'done'),
            'result': plan.get('result')}}


class PlanNotifier:
    """Sends the plan events; never raises (a lost event is logged)."""

    def __init__(self, conf, transport=None, host=None):
        self.transport = (transport if transport is not None else
                          oslo_messaging.get_notification_transport(conf))
        self.notifier = oslo_messaging.Notifier(
            self.transport,
            publisher_id='resq-optimizer.%s' % (host or socket.gethostname()),
            driver='messagingv2',
            topics=conf.resq_optimizer.notification_topics, retry=1)

    def send(self, event_type, plan):
        try:
            if event_type == FAILED:
                self.notifier.error({}, event_type, payload(plan))
            else:
                self.notifier.info({}, event_type, payload(plan))
        except Exception as exc:
            LOG.warning('Could not send %s for plan %s: %s', event_type,
                        plan.get('id'), exc)

    def send_repair(self, result):
        """``resq.optimizer.repair`` for one misplaced server's move.

        INFO when it is done, ERROR when it failed or was skipped; the
        payload is the outcome (:mod:`resq_nova.optimizer.repair`).
        """
        try:
            if result.get('outcome') == 'done':
                self.notifier.info({}, REPAIR, dict(result))
            else:
                self.notifier.error({}, REPAIR, dict(result))
        except Exception as exc:
            LOG.warning('Could not send %s for server %s: %s', REPAIR,
                        result.get('uuid'), exc)

    def cleanup(self):
        self.transport.cleanup()
