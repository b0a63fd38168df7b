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
"""Notifications: Nova's versioned instance events in, the agent's own
status and monitoring out.

Nova publishes versioned notifications (``[notifications]
notification_format = both``, or ``versioned``) on topic
``versioned_notifications`` of its control exchange. The payload is an ovo
primitive::

    {"nova_object.name": "InstanceActionPayload",
     "nova_object.data": {"uuid": ..., "host": ..., "node": ..., ...}}

The agent listens in a pool of its own (``resq-agent-nova.<host>``, see
:func:`pool_name`), so it gets a copy of every event without stealing them
from other consumers, and acts only on instances of its own host.
"""

import re

from oslo_log import log as logging
import oslo_messaging
from oslo_utils import uuidutils

LOG = logging.getLogger(__name__)

# Events after which an instance's partition may have to change on the
# host named in the payload.
INSTANCE_EVENTS = (
    'instance.create.end',
    'instance.delete.end',
    'instance.power_on.end',
    'instance.power_off.end',
    'instance.reboot.end',
    'instance.resume.end',
    'instance.suspend.end',
    'instance.shelve_offload.end',
    'instance.unshelve.end',
    'instance.rebuild.end',
    'instance.resize_finish.end',
    'instance.resize_revert.end',
    'instance.live_migration_post.end',
    'instance.live_migration_post_dest.end',
    'instance.live_migration_rollback.end',
    'instance.evacuate',
)

STATUS_EVENT = 'resq.agent.status'
MONITOR_EVENT = 'resq.instance.monitor'
MISPLACED_EVENT = 'resq.instance.misplaced'
ISOLATED_EVENT = 'resq.instance.isolated'


def publisher_id(host):
    return 'resq-agent.%s' % host


def pool_name(host):
    """The agent's pool for Nova's notifications: its queue's name.

    Not ``resq-agent.<host>``: that is its RPC server's queue (topic
    ``resq-agent``, server ``<host>``). Queue names are global in the
    broker, so one name made one queue with both bindings, and each of the
    two consumers took about half of the other's messages (RPC calls lost,
    Nova events missed).
    """
    return 'resq-agent-nova.%s' % host


class NovaInstanceEndpoint:
    """Nova instance events of this host to the manager.

    Calls ``manager.instance_changed(uuid, event_type)``.

    :param manager: anything with ``instance_changed(uuid, event_type)``.
    :param hosts: names this host goes by in payloads (``host`` is Nova's
        compute service host, ``node`` the hypervisor hostname).
    """

    filter_rule = oslo_messaging.NotificationFilter(
        event_type='^(%s)$' % '|'.join(re.escape(e)
                                       for e in INSTANCE_EVENTS))

    def __init__(self, manager, hosts):
        self.manager = manager
        self.hosts = {h for h in hosts if h}

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        """Tell the manager of an event of one of this host's instances.

        A malformed payload is logged as one warning naming the field that
        is wrong and dropped; it never raises, so it cannot take the rest
        of a batch with it.
        """
        try:
            data = instance_data(payload)
        except ValueError as exc:
            LOG.warning('Dropping %s from %s: %s', event_type, publisher_id,
                        exc)
            return oslo_messaging.NotificationResult.HANDLED
        if not ({data['host'], data['node']} & self.hosts):
            return oslo_messaging.NotificationResult.HANDLED
        if not uuidutils.is_uuid_like(data['uuid']):
            LOG.warning('Ignoring %s from %s: instance uuid %r is not a '
                        'UUID', event_type, publisher_id, data['uuid'][:80])
            return oslo_messaging.NotificationResult.HANDLED
        LOG.debug('%s for instance %s', event_type, data['uuid'])
        self.manager.instance_changed(data['uuid'], event_type)
        return oslo_messaging.NotificationResult.HANDLED


# The fields of a versioned instance payload the agent reads: name ->
# (the types it may have, what they are called in a message).
INSTANCE_FIELDS = {
    'uuid': ((str,), 'a string'),
    'host': ((str, type(None)), 'a string or null'),
    'node': ((str, type(None)), 'a string or null'),
}


def _kind(value):
    return 'null' if value is None else type(value).__name__


def instance_data(payload):
    """The agent's fields of a versioned instance payload, type-checked.

    :returns: ``{'uuid', 'host', 'node'}`` (host and node may be None).
    :raises ValueError: naming the first field that is missing or of the
        wrong type; one line, without the payload.
    """
    if not isinstance(payload, dict):
        raise ValueError('the payload is a %s, not an object'
                         % _kind(payload))
    data = payload.get('nova_object.data')
    if not isinstance(data, dict):
        raise ValueError('payload field nova_object.data is %s, not an '
                         'object (not a versioned notification)'
                         % ('missing' if data is None else
                            'a %s' % _kind(data)))
    if 'uuid' not in data:
        raise ValueError('payload field nova_object.data.uuid is missing')
    for name, (types, what) in INSTANCE_FIELDS.items():
        value = data.get(name)
        if not isinstance(value, types):
            raise ValueError('payload field nova_object.data.%s is a %s, '
                             'not %s' % (name, _kind(value), what))
    return {name: data.get(name) for name in INSTANCE_FIELDS}


def get_nova_listener(conf, transport, manager, host, hosts):
    """A listener on Nova's versioned notifications (not started)."""
    opts = conf.resq_agent
    targets = [oslo_messaging.Target(topic=opts.nova_notification_topic,
                                     exchange=opts.nova_control_exchange)]
    return oslo_messaging.get_notification_listener(
        transport, targets, [NovaInstanceEndpoint(manager, hosts)],
        executor='threading', pool=pool_name(host))


class StatusNotifier:
    """Sends the agent's status and per-instance monitoring samples.

    ``resq.agent.status`` carries the whole ``manager.status()`` document;
    one ``resq.instance.monitor`` per instance carries its entry (uuid,
    domain, ways, mask, LLC occupancy, memory bandwidth) plus the host, for
    consumers that meter per instance.
    """

    def __init__(self, conf, transport, host, retry=1):
        self.host = host
        # A bounded retry: a monitoring sample is worth less than a thread
        # stuck while RabbitMQ is down; oslo.messaging logs the drop.
        self.notifier = oslo_messaging.Notifier(
            transport, publisher_id=publisher_id(host), driver='messagingv2',
            topics=conf.resq_agent.notification_topics, retry=retry)

    def misplaced(self, misplaced, resolved):
        """A misplaced hook of the manager: one notification per instance.

        ``resq.instance.misplaced`` (priority ERROR) for an instance whose
        cores and ways are in different cache domains and could not be
        repaired, with the reason; ``resq.instance.isolated`` (INFO) once
        it is repaired or gone. Never raises.
        """
        for uuid, reason in sorted(misplaced.items()):
            self.notifier.error({}, MISPLACED_EVENT, {
                'uuid': uuid, 'reason': reason, 'host': self.host})
        for uuid in sorted(resolved):
            self.notifier.info({}, ISOLATED_EVENT, {'uuid': uuid,
                                                    'host': self.host})

    def send(self, status):
        """Send one status and its monitoring samples; never raises."""
        self.notifier.info({}, STATUS_EVENT, dict(status, host=self.host))
        for entry in status.get('instances', ()):
            self.notifier.info({}, MONITOR_EVENT,
                               dict(entry, host=self.host))
