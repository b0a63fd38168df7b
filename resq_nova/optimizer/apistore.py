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
"""Snapshots and plans in resq-api, each move's state written as it changes.

The same interface as :class:`resq_nova.optimizer.store.Store` (files),
for :class:`resq_nova.optimizer.service.Optimizer`:

* a new plan is ``POST /plans``; the API supersedes older proposed plans;
* applying starts with ``POST /plans/{id}/apply``, one conditional update
  in the database: of two optimizers (or an optimizer and an operator's
  ``openstack resq plan apply``) that start together exactly one applies,
  the other is refused before anything moves;
* each move's state is ``PUT /plans/{id}/actions/{index}`` as it changes
  (``ongoing``, then ``succeeded``, ``failed``, ``skipped`` or
  ``cancelled``), so a crash leaves an exact record;
* before each move the plan's state is read back: a plan an operator
  cancelled starts no further move;
* the end is ``PUT /plans/{id}/result``.

The single-writer lock stays tooz's (``coordination_url``).
"""

import contextlib
import threading

from oslo_log import log as logging

from resq_common.clients import resq as resq_client
from resq_nova.optimizer import coordination
from resq_nova.optimizer import execute
from resq_nova.optimizer import store as store_mod

LOG = logging.getLogger(__name__)

# The executor's outcomes as the API's action states.
ACTION_STATES = {
    execute.REQUESTED: 'requested',
    execute.ONGOING: 'ongoing',
    execute.DONE: 'succeeded',
    execute.FAILED: 'failed',
    execute.SKIPPED: 'skipped',
    execute.CANCELLED: 'cancelled',
    execute.NOT_RUN: 'cancelled',
}
# The executor's plan status as the API's final plan state.
PLAN_STATES = {
    execute.APPLIED: 'applied',
    execute.PLAN_FAILED: 'failed',
    execute.REFUSED: 'failed',
    execute.CANCELLED: 'cancelled',
}
FINISHED = frozenset(('applied', 'failed', 'cancelled', 'superseded'))


def locator(plan_id):
    return 'resq-api:/plans/%s' % plan_id


class ServiceStore:
    """Plans and snapshots kept by resq-api; see the module doc."""

    def __init__(self, client, coordination_url, applier=None):
        self.client = client
        self.coordination_url = coordination_url
        self.applier = applier or coordination.member_id()
        self._lock = threading.Lock()
        self._reported = {}   # (plan id, index) -> state written

    def lock(self):
        """The optimizers' tooz lock; none for a CLI (``url`` None).

        Without the lock two plans may be made together (harmless: the
        newer supersedes); applying stays one applier's by the claim.
        """
        if self.coordination_url is None:
            return contextlib.nullcontext(self)
        return coordination.Lock(self.coordination_url)

    def save_snapshot(self, snapshot_id, doc):
        self.client.create_snapshot(snapshot_id, doc)
        return 'resq-api:/snapshots/%s' % snapshot_id

    def save_plan(self, plan):
        """A new plan is created; an applied one gets its result."""
        state = PLAN_STATES.get(plan.get('status'))
        if state is None:
            self.client.create_plan(plan['id'], plan.get('snapshot_id'),
                                    plan)
        else:
            self._flush_actions(plan)
            self.client.set_plan_result(plan['id'], state,
                                        plan.get('result') or '')
        return locator(plan['id'])

    def load_plan(self, ref):
        """The stored plan document ``ref``, with its record's state.

        :raises resq_nova.optimizer.store.PlanNotFound:
        """
        try:
            record = self.client.get_plan(ref)
        except resq_client.NotFound:
            raise store_mod.PlanNotFound(
                plan=ref, where=self.where(),
                hint='"openstack resq plan list" lists its plans')
        plan = dict(record.get('plan') or {})
        plan['id'] = record.get('id', ref)
        # The record is the truth: its state, result and each move's state.
        plan['status'] = plan['state'] = record.get('state')
        plan['result'] = record.get('result')
        plan['applier'] = record.get('applier')
        plan['lease_expires'] = record.get('lease_expires')
        if record.get('state') not in ('proposed', 'superseded'):
            moves = plan.get('moves') or []
            plan['actions'] = [
                dict(moves[n] if n < len(moves) else {},
                     uuid=a['uuid'], name=a.get('name'),
                     from_host=a.get('from_host'), to_host=a.get('to_host'),
                     outcome=a['state'], detail=a.get('detail'))
                for n, a in enumerate(record.get('actions') or ())]
        return plan, locator(plan['id'])

    def list_plans(self):
        return [p['id'] for p in self.client.list_plans()]

    def where(self):
        """``resq-api at <its URL>``, as a message names the store."""
        endpoint = getattr(self.client, 'endpoint', None)
        endpoint = endpoint() if endpoint is not None else None
        return 'resq-api at %s' % endpoint if endpoint else 'resq-api'

    # -- applying -----------------------------------------------------------
    def begin_apply(self, plan, lease=None):
        """Claim the plan for this optimizer, for ``lease`` seconds.

        :raises resq_nova.optimizer.execute.PlanRefused: another applier
            has it, or it is not ``proposed`` any more.
        """
        try:
            self.client.apply_plan(plan['id'], self.applier, lease=lease)
        except resq_client.Conflict as exc:
            raise execute.PlanRefused(plan=plan['id'], reason=str(exc))

    def renew(self, plan, lease):
        """Renew this optimizer's lease on the plan it applies.

        A refusal (the plan ended, was cancelled or taken over) is logged;
        the moves stop at the next one, as :meth:`cancelled` then says.
        """
        try:
            self.client.heartbeat_plan(plan['id'], self.applier, lease)
        except resq_client.Conflict as exc:
            LOG.error('Plan %s: the lease was not renewed: %s', plan['id'],
                      exc)

    def record(self, plan, action):
        """Write one move's new state; never stops the moves.

        A write that fails is logged and written again with the result
        (``save_plan``), so the record ends complete when resq-api is back.
        """
        index = _index(plan, action)
        state = ACTION_STATES.get(action.get('outcome'))
        if index is None or state is None:
            return
        with self._lock:
            before = self._reported.get((plan['id'], index))
            if before == state:
                return
            self._reported[(plan['id'], index)] = state
        try:
            if state in ('succeeded', 'failed') and before != 'ongoing':
                # An outcome is written from ongoing (a move that failed
                # before it started, e.g. unexpectedly, still started).
                self._write(plan['id'], index, 'ongoing', '')
            self._write(plan['id'], index, state, action.get('detail') or '')
        except resq_client.ResQAPIError as exc:
            LOG.error('Plan %s: the state of move %d (%s) could not be '
                      'written to resq-api: %s; written again at the end',
                      plan['id'], index, state, exc)
            with self._lock:
                self._reported.pop((plan['id'], index), None)

    def _write(self, plan_id, index, state, detail):
        try:
            self.client.set_action_state(plan_id, index, state, detail)
        except resq_client.Conflict:
            # Already so (a cancel marks moves not started cancelled).
            now = self.client.get_plan(plan_id)['actions'][index]['state']
            if now != state:
                raise

    def cancelled(self, plan):
        """Why the plan must not go on (its state read back), or None."""
        try:
            record = self.client.get_plan(plan['id'])
        except resq_client.ResQAPIError as exc:
            # Unable to tell: stop rather than move blind.
            return 'its state cannot be read from resq-api (%s)' % exc
        if record.get('state') == 'applying' and \
                record.get('applier') in (None, self.applier):
            return None
        return 'the plan is %s in resq-api' % record.get('state')

    def orphaned(self, lease=60.0):
        """Plans left ``applying`` by an applier whose lease expired.

        Each is taken over by this optimizer first (resq-api allows it only
        once the lease is past, and to one optimizer), then returned as a
        plan document with its record's moves.
        """
        found = []
        for record in self.client.list_plans(state='applying'):
            try:
                self.client.take_over_plan(record['id'], self.applier, lease)
            except (resq_client.Conflict, resq_client.NotFound):
                continue
            plan, _ = self.load_plan(record['id'])
            plan['stopped_applier'] = record.get('applier')
            plan['stopped_lease'] = record.get('lease_expires')
            found.append(plan)
        return found

    def close_orphan(self, plan):
        """End a plan whose applier stopped, saying what really happened.

        Moves judged by recovery get their outcome; moves never started
        are cancelled; the plan is ``failed`` with a result naming the
        applier that stopped and the moves made.

        :returns: the result text.
        """
        done = 0
        actions = plan.get('actions') or ()
        for index, action in enumerate(actions):
            state, detail = action.get('outcome'), action.get('detail')
            if action.get('recovered'):
                state = ACTION_STATES[state]
                if state == 'cancelled' and action['recovered'] == 'ongoing':
                    state = 'failed'    # Nova accepted it, yet nothing ran
            elif state == 'pending':
                state, detail = 'cancelled', ('not started: the optimizer '
                                              'applying the plan stopped')
            else:
                done += state == 'succeeded'
                continue
            if state == 'succeeded' and action['recovered'] != 'ongoing':
                self._write(plan['id'], index, 'ongoing', '')
            self._write(plan['id'], index, state, detail or '')
            done += state == 'succeeded'
        result = ('interrupted: the optimizer applying it (%s) stopped (its '
                  'lease expired at %s); %d of %d moves done' % (
                      plan.get('stopped_applier'), plan.get('stopped_lease'),
                      done, len(actions)))
        self.client.set_plan_result(plan['id'], 'failed', result)
        LOG.warning('Plan %s: %s', plan['id'], result)
        return result

    def _flush_actions(self, plan):
        # Moves never started, and any state a failed write left behind.
        for action in plan.get('actions') or ():
            self.record(plan, action)


def client_from_conf(conf):
    """resq-api's client when ``[resq_api]`` is configured, else None."""
    api = conf[resq_client.GROUP]
    if api.auth_type or api.endpoint_override:
        return resq_client.ResQClient.from_conf(conf)
    return None


def from_conf(conf):
    """The store ``[resq_optimizer] plan_store`` names.

    ``auto`` uses resq-api when ``[resq_api]`` is configured (an auth
    plugin or an endpoint) and the state directory otherwise, warning that
    plans then stay on this host.

    :raises resq_common.conf.clients.MissingCredentials: ``resq-api``
        asked for without ``[resq_api]`` credentials.
    """
    opts = conf.resq_optimizer
    mode = opts.plan_store
    api = conf[resq_client.GROUP]
    configured = bool(api.auth_type or api.endpoint_override)
    if mode == 'files' or (mode == 'auto' and not configured):
        if mode == 'auto':
            LOG.warning('[resq_api] is not configured: plans and their '
                        'outcomes stay in %s on this host only; configure '
                        '[resq_api] to keep them in resq-api',
                        opts.state_dir)
        return store_mod.Store(opts.state_dir, opts.coordination_url)
    return ServiceStore(resq_client.ResQClient.from_conf(conf),
                        opts.coordination_url
                        or coordination.default_url(opts.state_dir))


def _index(plan, action):
    for n, mv in enumerate(plan.get('moves') or ()):
        if mv.get('uuid') == action.get('uuid'):
            return n
    return None
