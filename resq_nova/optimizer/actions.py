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
"""Who did what to which server, and why: every action the optimizer takes.

The optimizer changes the cloud in three ways only:

``plan_migration``
    a live migration of a plan it applies (``resq-optimizer apply``, or
    ``run`` with ``[resq_optimizer] apply``);
``repair_migration``
    a live migration of a server an agent reported without isolation
    (``resq-optimizer repair``, or ``run`` with ``[resq_optimizer]
    repair_isolation``);
``scale_out_boot``
    the boot of one more instance of an escalated on-demand NF
    (``[resq_optimizer] ondemand_scale_out = boot``).

Each one is logged at INFO before Nova is asked, naming the identity the
optimizer acts as (the user and project of its ``[nova]`` credentials)
and the reason (the plan, the repair of a server reported without
isolation, the scale-out of a term), and again when it ends with its true
outcome (INFO when it was done, WARNING otherwise). Each is also a
versioned notification on ``[resq_optimizer] notification_topics``:
``resq.optimizer.action.start`` (INFO) and ``resq.optimizer.action.end``
(INFO when done, ERROR otherwise), with the payload::

    {"resq_object.name": "ActionPayload", "resq_object.namespace": "resq",
     "resq_object.version": "1.0", "resq_object.data": {"action",
     "server_uuid", "server_name", "host", "target_host", "reason",
     "plan_id", "user_id", "user_name", "project_id", "project_name",
     "outcome", "detail", "result_host"}}

``host`` is where the server is (for a boot, the host asked for),
``target_host`` the host asked for (None: Nova's scheduler chooses),
``outcome`` None in ``start``; in ``end`` ``done`` or ``booted``, else
``failed``, ``not-run`` or ``cancelled``, with ``detail`` saying why, and
``result_host`` where the server is afterwards.
"""

import threading

from keystoneauth1 import exceptions as ks_exc
from oslo_config import cfg
from oslo_log import log as logging

LOG = logging.getLogger(__name__)

START = 'resq.optimizer.action.start'
END = 'resq.optimizer.action.end'
PAYLOAD_VERSION = '1.0'

PLAN_MIGRATION = 'plan_migration'
REPAIR_MIGRATION = 'repair_migration'
SCALE_OUT_BOOT = 'scale_out_boot'
SUCCESSES = ('done', 'booted')

_WHAT = {PLAN_MIGRATION: 'live migration', REPAIR_MIGRATION:
         'repair live migration', SCALE_OUT_BOOT: 'scale-out boot'}


def actor_names(conf):
    """``{'user_name', 'project_name'}`` of the ``[nova]`` credentials."""
    names = {'user_name': None, 'project_name': None}
    for key, opt in (('user_name', 'username'),
                     ('project_name', 'project_name')):
        try:
            names[key] = getattr(conf.nova, opt)
        except (AttributeError, cfg.NoSuchOptError):
            pass
    return names


class ActionLog:
    """Logs and notifies the optimizer's actions; never raises.

    :param notifier: anything with an oslo.messaging ``notifier``
        attribute (:class:`resq_nova.optimizer.notifier.PlanNotifier`), or
        None: the actions are then only logged.
    :param compute: the compute client the optimizer acts with; its
        ``identity()`` names the user and project.
    :param conf: the optimizer's configuration, for the ``[nova]`` user
        and project names.
    """

    def __init__(self, notifier=None, compute=None, conf=None):
        self.notifier = notifier
        self.compute = compute
        self.names = actor_names(conf) if conf is not None else {
            'user_name': None, 'project_name': None}
        self._ids = None
        self._lock = threading.Lock()

    def actor(self):
        """``{'user_id', 'user_name', 'project_id', 'project_name'}``.

        The ids come from the compute client's token (asked once); a name
        or id that is not known is None.
        """
        with self._lock:
            if self._ids is None:
                self._ids = self._identity()
            ids = self._ids
        return dict(self.names, **ids)

    def _identity(self):
        identity = getattr(self.compute, 'identity', None)
        ids = {'user_id': None, 'project_id': None}
        if identity is not None:
            try:
                ids.update(identity())
            except (ks_exc.ClientException, ValueError) as exc:
                LOG.debug('Cannot tell the optimizer\'s user: %s', exc)
        return ids

    @staticmethod
    def who(actor):
        def one(kind, name, ident):
            if name and ident:
                return '%s %s (%s)' % (kind, name, ident)
            return '%s %s' % (kind, name or ident or 'unknown')
        return 'resq-optimizer as %s of %s' % (
            one('user', actor['user_name'], actor['user_id']),
            one('project', actor['project_name'], actor['project_id']))

    def record(self, action, server_uuid, host, reason, target_host=None,
               server_name=None, plan_id=None):
        """The record of an action, neither logged nor announced.

        For an action another process started (a plan whose applier
        stopped): its end is announced with it.
        """
        return dict(self.actor(), action=action, server_uuid=server_uuid,
                    server_name=server_name, host=host,
                    target_host=target_host, reason=reason,
                    plan_id=plan_id, outcome=None, detail=None,
                    result_host=None)

    def start(self, action, server_uuid, host, reason, target_host=None,
              server_name=None, plan_id=None):
        """Log and announce an action about to be asked of Nova.

        :returns: the action's record, for :meth:`end`.
        """
        record = self.record(action, server_uuid, host, reason,
                             target_host, server_name, plan_id)
        LOG.info('%s starts the %s of server %s on %s%s: %s',
                 self.who(record), _WHAT[action],
                 server_name or server_uuid, host,
                 ' to %s' % target_host if target_host else '', reason)
        self._send(START, record, error=False)
        return record

    def end(self, record, outcome, detail=None, result_host=None,
            server_uuid=None):
        """Log and announce the true outcome of a started action."""
        record = dict(record, outcome=outcome, detail=detail,
                      result_host=result_host)
        if server_uuid:
            record['server_uuid'] = server_uuid
        ok = outcome in SUCCESSES
        (LOG.info if ok else LOG.warning)(
            '%s: the %s of server %s on %s (%s) ended %s%s',
            self.who(record), _WHAT[record['action']],
            record['server_name'] or record['server_uuid'], record['host'],
            record['reason'], outcome,
            ' on %s' % result_host if ok and result_host else
            ' (%s)' % detail if detail else '')
        self._send(END, record, error=not ok)
        return record

    def _send(self, event_type, record, error):
        notifier = getattr(self.notifier, 'notifier', None)
        if notifier is None:
            return
        body = {'resq_object.name': 'ActionPayload',
                'resq_object.namespace': 'resq',
                'resq_object.version': PAYLOAD_VERSION,
                'resq_object.data': dict(record)}
        try:
            (notifier.error if error else notifier.info)(
                {}, event_type, body)
        except Exception as exc:
            LOG.warning('Could not send %s for server %s: %s', event_type,
                        record.get('server_uuid'), exc)
