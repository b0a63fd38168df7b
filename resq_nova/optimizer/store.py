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
"""Plans and snapshots on disk, and the lock one optimizer holds.

``[resq_optimizer] state_dir`` holds ``snapshots/<id>.json`` and
``plans/<id>.json``, each written atomically (a reader sees a whole
document or none), and ``resq-optimizer.lock``: the optimizer that acts on
the cloud (plans, applies) holds it, a second one is told who does.
"""

import collections
import datetime
import json
import os
import re
import threading

from resq_common import exception
from resq_common import fileutils
from resq_common import jsonutils
from resq_nova.optimizer import coordination

ID_RE = re.compile(r'^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$')


class StoreError(exception.ResQException):
    msg_fmt = 'optimizer state %(path)s: %(reason)s'


class PlanNotFound(exception.ResQException):
    """No plan ``plan`` where the store looked (``where``); ``hint``."""

    msg_fmt = 'no plan %(plan)s in %(where)s; %(hint)s'


def _stamp(doc_id):
    """The creation time in an id (``plan-20261125T031500-abcdef``)."""
    parts = doc_id.split('-')
    return parts[1] if len(parts) > 2 else ''


def _remove(path):
    try:
        os.unlink(path)
        return True
    except FileNotFoundError:
        return False


def _iso(when):
    return when.isoformat(timespec='seconds')


def _expiry(lease):
    return _iso(datetime.datetime.now(datetime.timezone.utc)
                + datetime.timedelta(seconds=lease))


def _parse(when):
    try:
        value = datetime.datetime.fromisoformat(str(when))
    except ValueError:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=datetime.timezone.utc)
    return value


def _interrupted(plan, counts):
    """The result of a plan its applier left, closed by recovery."""
    actions = plan.get('actions') or ()
    return ('interrupted: the optimizer applying it (%s) stopped (its lease '
            'expired at %s); %d of %d moves done (%s)' % (
                plan.get('stopped_applier'), plan.get('stopped_lease'),
                counts['done'], len(actions),
                ', '.join('%d %s' % (n, outcome)
                          for outcome, n in sorted(counts.items()))))


def read_plan(path):
    """``(document, path)`` of the plan file ``path``.

    :raises StoreError: it cannot be read, or is not JSON.
    """
    try:
        return jsonutils.loads(jsonutils.read_text(path)), path
    except ValueError as exc:
        raise StoreError(path=path, reason='is not a plan (not JSON: '
                         '%s)' % exc)
    except OSError as exc:
        raise StoreError(path=path, reason='cannot be read (%s)'
                         % exc.strerror)


# The lock is tooz's now (resq_nova.optimizer.coordination).
OptimizerBusy = coordination.OptimizerBusy


class Store:
    def __init__(self, state_dir, coordination_url=None, create=True):
        """The store in ``state_dir``.

        :param create: make its directories now (a store only read, as by
            ``openstack resq plan list``, creates nothing).
        """
        self.root = os.path.abspath(state_dir)
        self.coordination_url = (coordination_url
                                 or coordination.default_url(state_dir))
        self._record_lock = threading.Lock()
        self.plans = os.path.join(self.root, 'plans')
        self.snapshots = os.path.join(self.root, 'snapshots')
        for path in (self.plans, self.snapshots) if create else ():
            try:
                os.makedirs(path, exist_ok=True)
            except OSError as exc:
                raise StoreError(path=path, reason='cannot be created (%s); '
                                 'set [resq_optimizer] state_dir to a '
                                 'writable directory' % exc.strerror)

    def _write(self, directory, doc_id, doc):
        if not ID_RE.match(doc_id):
            raise StoreError(path=directory, reason='bad id %r' % doc_id)
        path = os.path.join(directory, doc_id + '.json')
        try:
            fileutils.atomic_write(path, json.dumps(doc, indent=1,
                                                    sort_keys=True) + '\n')
        except OSError as exc:
            raise StoreError(path=path, reason='cannot be written (%s)'
                             % exc.strerror)
        return path

    def save_snapshot(self, snapshot_id, doc):
        return self._write(self.snapshots, snapshot_id, doc)

    def save_plan(self, plan):
        return self._write(self.plans, plan['id'], plan)

    def plan_path(self, ref):
        """The file of plan ``ref``: an id in the store or a path."""
        if ID_RE.match(ref):
            path = os.path.join(self.plans, ref + '.json')
            if os.path.exists(path):
                return path
        if os.path.exists(ref):
            return ref
        raise PlanNotFound(plan=ref, where='%s (nor a file of that name)'
                           % self.plans,
                           hint='"ls %s" lists the stored plans' % self.plans)

    def load_plan(self, ref):
        return read_plan(self.plan_path(ref))

    def list_plans(self):
        try:
            names = os.listdir(self.plans)
        except FileNotFoundError:
            return []       # a store only read, never written
        return sorted(f[:-5] for f in names if f.endswith('.json'))

    def prune(self, keep, max_age_seconds, now=None):
        """Delete old plans and snapshots; ``(plans, snapshots)`` deleted.

        A plan goes when it is finished (not proposed, not applying) and
        either older than ``max_age_seconds`` or past the newest ``keep``;
        a snapshot when no plan left names it and the same holds. Ids start
        with their UTC creation time, which orders them.
        """
        now = now or datetime.datetime.now(datetime.timezone.utc)
        cutoff = (now - datetime.timedelta(seconds=max_age_seconds)
                  ).strftime('%Y%m%dT%H%M%S')
        plans = sorted(self.list_plans(), reverse=True)
        gone = 0
        left_snaps = set()
        for n, plan_id in enumerate(plans):
            old = _stamp(plan_id) < cutoff or n >= keep
            doc = None
            try:
                doc, _ = self.load_plan(plan_id)
            except StoreError:
                pass
            if isinstance(doc, dict) and (
                    not old or doc.get('status') in ('proposed',
                                                     'applying')):
                left_snaps.add(doc.get('snapshot_id'))
                continue
            if _remove(os.path.join(self.plans, plan_id + '.json')):
                gone += 1
        snaps = sorted((f[:-5] for f in os.listdir(self.snapshots)
                        if f.endswith('.json')), reverse=True)
        snaps_gone = 0
        for n, snap_id in enumerate(snaps):
            if snap_id in left_snaps:
                continue
            if _stamp(snap_id) < cutoff or n >= keep:
                if _remove(os.path.join(self.snapshots, snap_id + '.json')):
                    snaps_gone += 1
        return gone, snaps_gone

    # -- what the optimizer asks while it applies a plan ------------------
    def begin_apply(self, plan, lease=60.0):
        """Take the plan's lease for this optimizer (written with the plan).

        The lock makes this optimizer the only one acting; the lease in
        the plan file tells the next one whether its applier still works
        on it (see :meth:`orphaned`).
        """
        plan['applier'] = coordination.member_id()
        plan['lease_expires'] = _expiry(lease)

    def renew(self, plan, lease=60.0):
        """Renew the lease: the plan file rewritten whole, atomically."""
        with self._record_lock:
            plan['lease_expires'] = _expiry(lease)
            self.save_plan(plan)

    def record(self, plan, action):
        """Write the plan with its outcomes so far after each change.

        A crash during apply leaves the file with every outcome known
        until then (actions ``requested`` may or may not have reached
        Nova, ``ongoing`` ones were running).
        """
        with self._record_lock:
            self.save_plan(plan)

    def orphaned(self, lease=60.0, now=None):
        """Plans left ``applying`` whose applier's lease expired.

        Each is taken over (its lease now this optimizer's) before it is
        returned; a plan without a lease (written before leases) counts
        as expired.
        """
        now = now or datetime.datetime.now(datetime.timezone.utc)
        found = []
        for plan_id in self.list_plans():
            try:
                plan, _ = self.load_plan(plan_id)
            except StoreError:
                continue
            if not isinstance(plan, dict) or \
                    plan.get('status') != 'applying':
                continue
            expires = _parse(plan.get('lease_expires'))
            if expires is not None and expires > now:
                continue
            # The first applier that stopped (not a recovery that failed).
            plan.setdefault('stopped_applier', plan.get('applier'))
            plan.setdefault('stopped_lease', plan.get('lease_expires'))
            self.begin_apply(plan, lease)
            self.save_plan(plan)
            found.append(plan)
        return found

    def close_orphan(self, plan):
        """Close a plan its applier left, with the moves really made.

        Its state becomes ``interrupted``; moves judged by recovery keep
        their outcomes, moves never started are ``not-run``.

        :returns: the result text.
        """
        counts = collections.Counter()
        for action in plan.get('actions') or ():
            if action.get('outcome') == 'not-run' and not action.get(
                    'recovered'):
                action['detail'] = ('not started: the optimizer applying '
                                    'the plan stopped')
            counts[action.get('outcome')] += 1
        plan['status'] = 'interrupted'
        plan['result'] = _interrupted(plan, counts)
        plan['finished_at'] = _iso(datetime.datetime.now(
            datetime.timezone.utc))
        self.save_plan(plan)
        return plan['result']

    def cancelled(self, plan):
        """Plans in files are cancelled by not applying them."""
        return None

    def lock(self):
        """The single-writer lock (tooz, ``coordination_url``)."""
        return coordination.Lock(self.coordination_url)
