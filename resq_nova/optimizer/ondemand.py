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
"""The optimizer's side of on-demand escalations.

An agent escalates an on-demand NF its host cannot keep within its latency
target (:mod:`resq_agent.ondemand.escalation`). The optimizer asks
Placement for cache domains whose on-demand lease has room for one more
instance of the NF's size (``CUSTOM_RESQ_ONDEMAND_CORE``, one per vCPU),
on any host but the escalating one, and answers with one of

* ``resq.optimizer.ondemand.scale_out``: the host and cache domain where
  one more instance of the NF fits; whoever runs the NF (its tenant, an
  orchestrator listening to the notification) boots it: the optimizer
  does not boot servers in tenants' projects;
* ``resq.optimizer.ondemand.unmet``: no lease has room; the SLO cannot be
  met with the cloud as it is (notification level error).

Both are versioned notifications (``OnDemandDecisionPayload`` 1.0, with
the escalation's fields and ``decision``, ``target_host``,
``target_provider``, ``reason``); the RPC call returns the same data.
"""

from oslo_log import log as logging
import oslo_messaging

from resq_nova import extra_specs
from resq_nova import ondemand as od_admission
from resq_nova.placement import client as placement_client

LOG = logging.getLogger(__name__)

SCALE_OUT = 'resq.optimizer.ondemand.scale_out'
UNMET = 'resq.optimizer.ondemand.unmet'
PAYLOAD_VERSION = '1.0'
GROUP = '_OD'


class BadEscalation(ValueError):
    """An escalation the optimizer cannot read; the message says why."""


def read(body):
    """The data of an ``OnDemandEscalationPayload``.

    :raises BadEscalation: wrong object, major version or fields.
    """
    if not isinstance(body, dict) or body.get(
            'resq_object.name') != 'OnDemandEscalationPayload':
        raise BadEscalation('not an OnDemandEscalationPayload: %r'
                            % (body,))
    version = str(body.get('resq_object.version', ''))
    if version.split('.')[0] != '1':
        raise BadEscalation('OnDemandEscalationPayload version %s; this '
                            'optimizer reads 1.x' % version)
    data = body.get('resq_object.data') or {}
    for key in ('instance_uuid', 'host'):
        if not isinstance(data.get(key), str) or not data[key]:
            raise BadEscalation('escalation without %s: %r' % (key, data))
    vcpus = data.get('vcpus') or 1
    if not isinstance(vcpus, int) or vcpus < 1:
        raise BadEscalation('escalation of %s has vcpus %r'
                            % (data['instance_uuid'], vcpus))
    return dict(data, vcpus=vcpus)


def decide(data, candidates, exclude_roots):
    """Where one more instance fits; pure.

    :param candidates: Placement's ``GET /allocation_candidates`` body for
        ``resources_OD=CUSTOM_RESQ_ONDEMAND_CORE:<vcpus>``.
    :param exclude_roots: compute node provider UUIDs not to use (the
        escalating host: its lease is what failed).
    :returns: ``(decision, domain provider uuid or None, root uuid or
        None, reason)``; the candidate whose lease has the most free cores
        wins, so scale-outs spread over leases.
    """
    summaries = candidates.get('provider_summaries') or {}
    best = None
    for req in candidates.get('allocation_requests') or ():
        for rp in (req.get('mappings') or {}).get(GROUP, ()):
            summary = summaries.get(rp) or {}
            root = summary.get('root_provider_uuid')
            if root in exclude_roots:
                continue
            res = (summary.get('resources') or {}).get(
                extra_specs.RC_ONDEMAND_CORE) or {}
            free = res.get('capacity', 0) - res.get('used', 0)
            key = (free, rp)
            if best is None or key > best[0]:
                best = (key, rp, root)
    if best is None:
        return ('unmet', None, None,
                'no other host has room in its on-demand lease for %d '
                'core(s) of instance %s' % (
                    data['vcpus'], data['instance_uuid']))
    return ('scale_out', best[1], best[2],
            'one more instance fits in the lease of cache domain provider '
            '%s (%d free lease cores)' % (best[1], best[0][0]))


class EscalationEndpoint:
    """RPC endpoint of the optimizer (version history: OptimizerAPI)."""

    target = oslo_messaging.Target(version='1.0')

    def __init__(self, placement, notifier=None):
        self.placement = placement
        self.notifier = notifier

    def escalate(self, ctxt, escalation):
        try:
            data = read(escalation)
        except BadEscalation as exc:
            LOG.error('Ignoring an escalation: %s', exc)
            return {'decision': 'refused', 'reason': str(exc)}
        try:
            exclude = set()
            try:
                exclude.add(self.placement.find_provider(
                    data['host'])['uuid'])
            except placement_client.ProviderNotFound:
                pass
            body = od_admission.lease_candidates(self.placement,
                                                 data['vcpus'])
            decision, rp, root, reason = decide(data, body, exclude)
            target_host = (self.placement.get_provider(root)['name']
                           if root else None)
        except placement_client.PlacementError as exc:
            LOG.error('Cannot decide on the escalation of %s: %s',
                      data['instance_uuid'], exc)
            return {'decision': 'error', 'reason': str(exc)}
        result = dict(data, decision=decision, target_host=target_host,
                      target_provider=rp, reason=reason)
        if decision == 'unmet':
            LOG.warning('On-demand SLO of %s on %s cannot be met: %s',
                        data['instance_uuid'], data['host'], reason)
        else:
            LOG.info('On-demand NF %s on %s: %s, on host %s',
                     data['instance_uuid'], data['host'], reason,
                     target_host)
        self._notify(result)
        return result

    def _notify(self, result):
        if self.notifier is None:
            return
        body = {'resq_object.name': 'OnDemandDecisionPayload',
                'resq_object.namespace': 'resq',
                'resq_object.version': PAYLOAD_VERSION,
                'resq_object.data': result}
        try:
            if result['decision'] == 'unmet':
                self.notifier.notifier.error({}, UNMET, body)
            else:
                self.notifier.notifier.info({}, SCALE_OUT, body)
        except Exception as exc:
            LOG.warning('Could not send the decision on %s: %s',
                        result['instance_uuid'], exc)


def get_server(conf, transport, endpoint):
    """The optimizer's RPC server on ``[resq_optimizer] rpc_topic``."""
    target = oslo_messaging.Target(topic=conf.resq_optimizer.rpc_topic,
                                   server='resq-optimizer')
    return oslo_messaging.get_rpc_server(
        transport, target, [endpoint], executor='threading',
        access_policy=oslo_messaging.DefaultRPCAccessPolicy)
