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

One resource group per instance, ``resq-<instance uuid>``, holding the
instance's pinned pCPUs; its schemata has the instance's mask in its own
cache domain and the default group's mask in the others (a class of service
spans every domain; no CPU of the group runs there, and the default group's
ways are the ones nobody owns). Groups without the ``resq-`` prefix are
never touched; ``resq-`` groups no instance owns are removed.

Order of writes, so that a crash between any two leaves a state the next
pass repairs without leaking: remove stale groups (frees classes of
service), shrink the default group where it shrinks, write instance groups,
grow the default group. Every write is idempotent and skipped when the
tree already holds the value.
"""

import dataclasses
import errno

from oslo_log import log as logging

from resq_agent import discovery
import resq_agent.privsep.resctrl
from resq_common import cbm
from resq_common import resctrl
from resq_profiler import exception

LOG = logging.getLogger(__name__)


def group_name(instance_uuid):
    return resctrl.GROUP_PREFIX + instance_uuid.lower()


@dataclasses.dataclass
class GroupState:
    name: str
    masks: dict = None       # {domain: mask}; None when unreadable
    cpus: tuple = ()

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
    for key in ('L3', 'L3CODE'):
        if key in schemata:
            return dict(schemata[key])
    return None


class ResctrlEnforcer:
    """Writes layouts into the resctrl tree at ``root``.

    ``root`` is where the agent reads; the privileged side writes under the
    same ``[resq_agent] resctrl_root``, read from the agent's configuration
    files.
    """

    name = 'resctrl'

    def __init__(self, root):
        self.tree = resctrl.Resctrl(root)
        self.root = self.tree.root

    def groups(self):
        """``{group name: GroupState}`` of every ``resq-`` group."""
        states = {}
        for name in self.tree.owned_groups():
            state = GroupState(name)
            try:
                state.masks = _l3(self.tree.read_schemata(name))
                state.cpus = discovery.parse_cpu_list(
                    self.tree.read_cpus(name))
            except (OSError, ValueError, exception.ResctrlError) as exc:
                LOG.warning('resctrl group %s is incomplete (%s); it will '
                            'be rewritten or removed', name,
                            getattr(exc, 'message', exc))
            states[name] = state
        return states

    def current_masks(self):
        """``{instance uuid: {domain: mask}}`` from the tree."""
        return {s.instance_uuid: s.masks for s in self.groups().values()
                if s.masks is not None}

    def default_masks(self):
        return _l3(resctrl.parse_schemata(self.tree._read('schemata'))) or {}

    def apply(self, lay, domain_ids, steps=None):
        """Make the tree hold ``lay`` (a :class:`resq_agent.layout.Layout`).

        :param domain_ids: every cache domain of the host.
        :param steps: test hook, a list the step names are appended to.
        :returns: :class:`ApplyResult`; failures are logged and listed, and
            never stop the other instances' writes.
        """
        result = ApplyResult()
        record = steps.append if steps is not None else (lambda _: None)
        groups = self.groups()
        wanted = {group_name(a.instance_uuid): a for a in lay.assignments}
        for name in sorted(set(groups) - set(wanted)):
            if self._do(result, 'remove %s' % name,
                        resq_agent.privsep.resctrl.remove_group, name):
                result.removed.append(name)
                record('remove %s' % name)
        current_default = self.default_masks()
        final_default = {d: lay.default_masks.get(d, current_default.get(d))
                         for d in domain_ids}
        interim = {}
        for d, new in final_default.items():
            old = current_default.get(d)
            interim[d] = new if old is None or new & ~old == 0 else old
        if interim != current_default:
            self._write_default(result, interim, record, 'shrink')
        for name, assign in sorted(wanted.items()):
            self._write_group(result, groups.get(name), name, assign,
                              final_default, record)
        if final_default != interim:
            self._write_default(result, final_default, record, 'grow')
        return result

    def _write_group(self, result, state, name, assign, defaults, record):
        masks = dict(defaults)
        masks[assign.domain_id] = assign.mask
        mod = resq_agent.privsep.resctrl
        if state is None:
            if not self._do(result, 'create %s' % name, mod.create_group,
                            name):
                return
            record('create %s' % name)
            state = GroupState(name)
        if state.masks != masks:
            if not self._do(result, 'schemata %s' % name,
                            mod.write_l3_masks, name, masks):
                return
            record('schemata %s' % name)
            result.written.append(name)
            LOG.info('Instance %s: cache domain %d mask %s (%d ways)%s',
                     assign.instance_uuid, assign.domain_id,
                     cbm.fmt(assign.mask), assign.ways,
                     ', moved to remove fragmentation' if assign.moved
                     else '')
        if tuple(sorted(state.cpus)) != tuple(sorted(assign.cpus)):
            if self._do(result, 'cpus %s' % name, mod.assign_cpus,
                        name, list(assign.cpus)):
                record('cpus %s' % name)

    def _write_default(self, result, masks, record, why):
        if self._do(result, '%s default group' % why,
                    resq_agent.privsep.resctrl.write_default_l3_masks,
                    masks):
            record('%s default' % why)
            LOG.info('Default resctrl group: %s', ', '.join(
                'domain %d mask %s' % (d, cbm.fmt(m))
                for d, m in sorted(masks.items())))

    def _do(self, result, what, fn, *args):
        try:
            fn(*args)
            return True
        except exception.ResctrlError as exc:
            msg = '%s: %s' % (what, exc.message)
        except OSError as exc:
            if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
                msg = ('%s: resctrl at %s is not writable (%s); mount it '
                       'read-write and run the agent as root (through its '
                       'privsep daemon)' % (what, self.root, exc.strerror))
            else:
                msg = '%s: %s' % (what, exc)
        except Exception as exc:
            # The privsep daemon timing out (oslo_privsep.comm.
            # PrivsepTimeout), dying or answering garbage costs this one
            # write, not the pass.
            msg = '%s: privileged call failed: %s: %s' % (
                what, type(exc).__name__, exc)
        LOG.error('Cannot %s; other instances are not affected, the next '
                  'reconcile retries', msg)
        result.errors.append(msg)
        return False
