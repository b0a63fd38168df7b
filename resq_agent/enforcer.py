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
"""Enforce a layout on resctrl (the default backend).

Shared classes of service: a resctrl group is one class of service, its
masks are per cache domain, and each ResQ instance runs in one domain. So
one group, ``resq-cos<k>``, serves up to one instance in *each* domain
(:mod:`resq_agent.layout` numbers them): its schemata holds each member's
mask in the member's domain and the default group's mask in the domains
where it has no member, its ``cpus_list`` the members' pinned pCPUs. Each
member's occupancy and bandwidth stay its own through a monitoring group,
``resq-cos<k>/mon_groups/resq-<instance uuid>``, holding its CPUs (where
the kernel offers L3 monitoring and RMIDs). An assignment without a class
(the on-demand lease's classes) gets a group of its own,
``resq-<id>``, as every instance did in earlier releases. Groups without
the ``resq-`` prefix are never touched; ``resq-`` groups nobody needs are
removed.

Which class holds an instance is read back from the tree by its CPUs
(a CPU is in exactly one group), so a restarted agent finds every
instance's class and mask again; an instance in a group of its own (an
earlier release's) keeps its mask and moves into a shared class.

Order of writes, so that a crash between any two leaves a state the next
pass repairs without leaking: remove stale groups (frees classes of
service) and stale monitoring groups, shrink the default group where it
shrinks, write each group (CPUs of departing members out first, then the
masks, then the CPUs of the members), its members' monitoring groups,
grow the default group. Every write is idempotent and skipped when the
tree already holds the value. A pass's writes cross the privileged
boundary as one batch in that order
(:func:`resq_agent.privsep.resctrl.apply_ops`); a group whose creation or
write failed gets no further write in the pass.

Where the host has memory bandwidth allocation (the layout's ``mb_max`` is
set) a group's ``MB:`` line goes in the same ``write(2)`` as its L3 lines:
each member's value in its domain, the value of no limit in the others (a
reused class never keeps a limit it had), and the default group's
``default_mb``. A line that differs from the plan (changed by hand, left
by a crash) is rewritten like a mask; without MBA no MB line is written.
"""

import dataclasses
import errno

from oslo_log import log as logging

from resq_agent import discovery
import resq_agent.privsep.resctrl
from resq_common import cbm
from resq_common import exception
from resq_common import resctrl

LOG = logging.getLogger(__name__)


CLASS_PREFIX = resctrl.GROUP_PREFIX + 'cos'


def group_name(instance_uuid):
    """An instance's own group, and its monitoring group in a class."""
    return resctrl.GROUP_PREFIX + instance_uuid.lower()


def class_group(clos):
    """The group of shared class of service ``clos``."""
    return '%s%d' % (CLASS_PREFIX, clos)


def clos_of_group(name):
    """The class number of a ``resq-cos<k>`` group, else None."""
    tail = name[len(CLASS_PREFIX):]
    if name.startswith(CLASS_PREFIX) and tail.isdigit() and tail.isascii():
        return int(tail)
    return None


def group_of(assignment):
    """The group enforcing a layout assignment."""
    if assignment.clos is not None:
        return class_group(assignment.clos)
    return group_name(assignment.instance_uuid)


@dataclasses.dataclass
class GroupPlan:
    """What one group must hold: members' masks, CPUs and themselves."""

    name: str
    masks: dict = dataclasses.field(default_factory=dict)
    cpus: tuple = ()
    members: list = dataclasses.field(default_factory=list)
    # {domain: MB value} of the members with bandwidth.
    mb: dict = dataclasses.field(default_factory=dict)
    # {domain: code mask} of the members with code ways (cdp).
    code: dict = dataclasses.field(default_factory=dict)

    @property
    def shared(self):
        return clos_of_group(self.name) is not None


def plans(lay):
    """``{group name: GroupPlan}`` for a layout."""
    result = {}
    for a in lay.assignments:
        plan = result.setdefault(group_of(a), GroupPlan(group_of(a)))
        plan.masks[a.domain_id] = a.mask
        if a.mb is not None:
            plan.mb[a.domain_id] = a.mb
        if a.code_mask is not None:
            plan.code[a.domain_id] = a.code_mask
        plan.cpus = tuple(sorted(set(plan.cpus) | set(a.cpus)))
        plan.members.append(a)
    return result


@dataclasses.dataclass
class GroupState:
    name: str
    masks: dict = None       # {domain: mask}; None when unreadable
    cpus: tuple = ()
    mb: dict = None          # {domain: MB value}; None: no MB line
    # {domain: code mask} where L3CODE and L3DATA differ (cdp); the
    # masks are then both lines' ways together.
    code: dict = dataclasses.field(default_factory=dict)

    @property
    def instance_uuid(self):
        return self.name[len(resctrl.GROUP_PREFIX):]


@dataclasses.dataclass
class ApplyResult:
    written: list = dataclasses.field(default_factory=list)
    removed: list = dataclasses.field(default_factory=list)
    errors: list = dataclasses.field(default_factory=list)

    def as_dict(self):
        return dataclasses.asdict(self)


def _l3(schemata):
    """``{domain: mask}``: the ways a group holds (code and data's)."""
    if 'L3' in schemata:
        return dict(schemata['L3'])
    if 'L3CODE' in schemata:
        data = schemata.get('L3DATA', {})
        return {d: m | data.get(d, 0) for d, m in schemata['L3CODE'].items()}
    return None


def _code(schemata):
    """``{domain: code mask}`` where a group's code and data masks differ."""
    code, data = schemata.get('L3CODE', {}), schemata.get('L3DATA', {})
    return {d: m for d, m in code.items() if data.get(d, m) != m}


def _mb(schemata):
    """``{domain: int}`` of a schemata's MB line; None without one."""
    if 'MB' not in schemata:
        return None
    values = {}
    for dom, value in schemata['MB'].items():
        try:
            values[dom] = int(value)
        except ValueError:
            values[dom] = None      # unreadable: differs from any plan
    return values


def _mb_differs(have, want):
    """Whether the MB line ``have`` lacks a value of the plan ``want``."""
    if want is None:
        return False
    return have is None or any(have.get(d) != v for d, v in want.items())


class _Batch:
    """A pass's privileged writes, in order.

    With each, what its outcome means: its name in errors, its step, and
    what to do once it is done.
    """

    def __init__(self):
        self.ops = []
        self.meta = []

    def add(self, op, what, step, done=None, arg=None):
        self.ops.append(op)
        self.meta.append((what, step, done, arg))


class ResctrlEnforcer:
    """Writes layouts into the resctrl tree at ``root``.

    ``root`` is where the agent reads; the privileged side writes under the
    same ``[resq_agent] resctrl_root``, read from the agent's configuration
    files.
    """

    name = 'resctrl'
    # One group serves an instance in each cache domain (see the module).
    shares_classes = True
    # Writes MB lines with the L3 lines (see the module).
    writes_mb = True

    def __init__(self, root):
        self.tree = resctrl.Resctrl(root)
        self.root = self.tree.root

    def groups(self):
        """``{group name: GroupState}`` of every ``resq-`` group."""
        states = {}
        for name in self.tree.owned_groups():
            state = GroupState(name)
            try:
                schemata = self.tree.read_schemata(name)
                state.masks = _l3(schemata)
                state.code = _code(schemata)
                state.mb = _mb(schemata)
                state.cpus = discovery.parse_cpu_list(
                    self.tree.read_cpus(name))
            except (OSError, ValueError, exception.ResctrlError) as exc:
                LOG.warning('resctrl group %s is incomplete (%s); it will '
                            'be rewritten or removed', name,
                            getattr(exc, 'message', exc))
            states[name] = state
        return states

    def current_masks(self, cpus_of=None):
        """``{instance uuid: {domain: mask}}`` from the tree.

        :param cpus_of: ``{instance uuid: pinned CPUs}``: instances in a
            shared class are found by their CPUs (else only instances in
            a group of their own are).
        """
        return {u: masks for u, (masks, _) in self.current(
            cpus_of or {}).items()}

    def current(self, cpus_of):
        """``{instance uuid: (masks {domain: mask}, shared class)}``.

        The class is None for an instance in a group of its own.
        """
        found = {}
        masks_of = {}             # shared class -> its masks
        owner = {}                # CPU -> the shared class holding it
        for state in self.groups().values():
            if state.masks is None:
                continue
            clos = clos_of_group(state.name)
            if clos is None:
                found[state.instance_uuid] = (state.masks, None)
                continue
            masks_of[clos] = state.masks
            owner.update(dict.fromkeys(state.cpus, clos))
        for uuid, cpus in cpus_of.items():
            homes = {owner.get(c) for c in cpus}
            if len(homes) == 1 and None not in homes:
                clos = homes.pop()
                # Its group of its own (an earlier release's) wins: the
                # mask it runs with now.
                found.setdefault(uuid, (masks_of[clos], clos))
        return found

    def default_masks(self):
        return _l3(resctrl.parse_schemata(self.tree._read('schemata'))) or {}

    def _default_state(self):
        """The default group's ``(masks, MB values or None)``."""
        schemata = resctrl.parse_schemata(self.tree._read('schemata'))
        return _l3(schemata) or {}, _mb(schemata)

    def apply(self, lay, domain_ids, steps=None):
        """Make the tree hold ``lay`` (a :class:`resq_agent.layout.Layout`).

        The writes go to the privileged side as one batch (a few, for a
        pass large enough), in the order the module describes.

        :param domain_ids: every cache domain of the host.
        :param steps: test hook, a list the step names are appended to.
        :returns: :class:`ApplyResult`; failures are logged and listed, and
            never stop the other instances' writes.
        """
        result = ApplyResult()
        record = steps.append if steps is not None else (lambda _: None)
        batch = _Batch()
        groups = self.groups()
        wanted = plans(lay)
        for name in sorted(set(groups) - set(wanted)):
            batch.add(('remove', None, name), 'remove %s' % name,
                      'remove %s' % name, result.removed.append, name)
        monitored = self._stale_mon_groups(batch, wanted)
        current_default, current_mb = self._default_state()
        # Every group's MB line names every domain: no limit where it has
        # no member with bandwidth.
        mb_base = (None if lay.mb_max is None
                   else dict.fromkeys(domain_ids, lay.mb_max))
        default_mb = None
        if mb_base is not None:
            default_mb = dict(mb_base)
            default_mb.update(lay.default_mb or {})
        final_default = {d: lay.default_masks.get(d, current_default.get(d))
                         for d in domain_ids}
        interim = {}
        for d, new in final_default.items():
            old = current_default.get(d)
            interim[d] = new if old is None or new & ~old == 0 else old
        if interim != current_default:
            self._write_default(batch, interim, 'shrink', default_mb)
        elif _mb_differs(current_mb, default_mb):
            self._write_default(batch, interim, 'bandwidth of', default_mb)
        for name, plan in sorted(wanted.items()):
            self._write_group(batch, groups.get(name), plan, final_default,
                              result, mb_base)
            self._monitor_members(batch, plan, monitored)
        if final_default != interim:
            self._write_default(batch, final_default, 'grow', default_mb)
        for (what, step, done, arg), res in zip(
                batch.meta, resq_agent.privsep.resctrl.run_ops(batch.ops)):
            if res is None:
                if step:
                    record(step)
                if done:
                    done(arg)
            elif res == 'skipped':
                continue
            elif (isinstance(res, exception.MonitoringUnavailable)
                    and what.startswith('monitoring group')):
                LOG.warning('Instance %s is partitioned but not monitored: '
                            '%s', arg, res.message)
            else:
                self._failed(result, what, res)
        return result

    def _write_group(self, batch, state, plan, defaults, result,
                     mb_base=None):
        """Queue one group's writes, chained on the group's name.

        :param mb_base: ``{domain: no-limit MB value}`` where the host has
            MBA, else None.
        """
        name = plan.name
        masks = dict(defaults)
        masks.update(plan.masks)
        mb = None
        if mb_base is not None:
            mb = dict(mb_base)
            mb.update(plan.mb)
        if state is None:
            batch.add(('create', name, name), 'create %s' % name,
                      'create %s' % name)
            state = GroupState(name)
        cpus = tuple(sorted(plan.cpus))
        have = tuple(sorted(state.cpus))
        staying = tuple(c for c in have if c in cpus)
        stale = (state.masks != masks or _mb_differs(state.mb, mb)
                 or state.code != plan.code)
        if stale and staying != have:
            # Departing members' CPUs go back to the default group before
            # the masks change under them.
            batch.add(('cpus', name, name, list(staying)), 'cpus %s' % name,
                      'cpus %s (departed)' % name)
            have = staying
        if stale:
            moved = [a for a in plan.members
                     if (state.masks or {}).get(a.domain_id) != a.mask
                     or (mb is not None and (state.mb or {}).get(
                         a.domain_id) != mb[a.domain_id])
                     or state.code.get(a.domain_id) != a.code_mask]
            op = ('schemata', name, name, masks)
            if plan.code:
                op += (mb, dict(plan.code))
            elif mb is not None:
                op += (mb,)
            batch.add(op,
                      'schemata %s' % name, 'schemata %s' % name,
                      self._written(result, name), moved)
        if have != cpus:
            batch.add(('cpus', name, name, list(cpus)), 'cpus %s' % name,
                      'cpus %s' % name)

    @staticmethod
    def _written(result, name):
        def done(members):
            result.written.append(name)
            for a in members:
                LOG.info('Instance %s: cache domain %d mask %s (%d ways)%s '
                         'in resctrl group %s%s', a.instance_uuid,
                         a.domain_id, cbm.fmt(a.mask), a.ways,
                         (', MB %d (%d MiB/s)' % (a.mb, a.mem_bw_mibps)
                          if a.mb is not None else '')
                         + (', code %s' % cbm.fmt(a.code_mask)
                            if a.code_mask is not None else ''), name,
                         ', moved to remove fragmentation' if a.moved
                         else '')
        return done

    def _stale_mon_groups(self, batch, wanted):
        """Remove members' monitoring groups no member needs any more.

        :returns: ``{(group, mon): cpus}`` of those that stay, or None
            when the kernel offers no L3 monitoring.
        """
        if not self.tree.has_monitoring():
            return None
        keep = {(n, group_name(a.instance_uuid)): tuple(sorted(a.cpus))
                for n, p in wanted.items() if p.shared for a in p.members}
        found = {}
        for name in self.tree.owned_groups():
            if clos_of_group(name) is None:
                continue
            if name not in wanted:
                # Removed whole in this pass: rmdir of a group takes its
                # monitoring groups with it (nothing to remove after).
                continue
            for mon in self.tree.mon_groups(name):
                if not resctrl.GROUP_RE.fullmatch(mon):
                    continue          # not the agent's: left alone
                if (name, mon) in keep:
                    try:
                        found[(name, mon)] = tuple(sorted(
                            self.tree.read_mon_cpus(name, mon)))
                    except (OSError, ValueError, exception.ResctrlError):
                        found[(name, mon)] = None
                    continue
                batch.add(('remove_mon', None, name, mon),
                          'remove monitoring group %s/%s' % (name, mon),
                          'remove mon %s/%s' % (name, mon))
        return found

    def _monitor_members(self, batch, plan, monitored):
        """Each member of a shared class: a monitoring group of its own.

        Without monitoring (no L3_MON, no RMID left) the partition stands;
        only that instance's occupancy and bandwidth are unknown. Chained
        on the class: no monitoring group in a class that failed.
        """
        if monitored is None or not plan.shared:
            return
        for a in plan.members:
            mon = group_name(a.instance_uuid)
            cpus = tuple(sorted(a.cpus))
            if monitored.get((plan.name, mon)) == cpus:
                continue
            batch.add(('mon', plan.name, plan.name, mon, list(cpus)),
                      'monitoring group %s/%s' % (plan.name, mon),
                      'mon %s/%s' % (plan.name, mon), None, a.instance_uuid)

    def _write_default(self, batch, masks, why, mb=None):
        def done(_):
            LOG.info('Default resctrl group: %s', ', '.join(
                'domain %d mask %s%s' % (d, cbm.fmt(m), '' if mb is None
                                         else ' MB %s' % mb.get(d))
                for d, m in sorted(masks.items())))
        op = ('default', None, dict(masks))
        batch.add(op if mb is None else op + (dict(mb),),
                  '%s default group' % why, '%s default' % why, done)

    def _failed(self, result, what, exc):
        """Log and list a failed privileged call: it costs only itself."""
        if isinstance(exc, exception.ResctrlError):
            msg = '%s: %s' % (what, exc.message)
        elif isinstance(exc, OSError):
            if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
                msg = ('%s: resctrl at %s is not writable (%s); mount it '
                       'read-write and run the agent as root (through its '
                       'privsep daemon)' % (what, self.root, exc.strerror))
            else:
                msg = '%s: %s' % (what, exc)
        else:
            # The privsep daemon timing out (oslo_privsep.comm.
            # PrivsepTimeout), dying or answering garbage costs this one
            # write, not the pass.
            msg = '%s: privileged call failed: %s: %s' % (
                what, type(exc).__name__, exc)
        LOG.error('Cannot %s; other instances are not affected, the next '
                  'reconcile retries', msg)
        result.errors.append(msg)
