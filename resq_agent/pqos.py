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
"""The libpqos backend, and choosing between it and resctrl.

The ``pqos`` Python wrapper (PyPI, 5.x) loads ``libpqos.so.5``. Debian
bookworm ships intel-cmt-cat 4.5 (``libpqos.so.4``), so on such hosts the
wrapper cannot work: the agent says so and enforces through resctrl.

With the library, :class:`PqosEnforcer` enforces a layout through libpqos:
class of service 0 is the default group (shrunk to the ways no instance
owns), classes 1..n-1 go to instances. libpqos numbers classes and cannot
name them, so which instance holds which class is the agent's own state,
kept in ``[resq_agent] state_dir``/``pqos-classes.json`` and written
atomically. The backend owns every class but 0: a core in a class that is
not its instance's goes back to class 0.

Order of writes, so a crash between any two leaves a state the next pass
repairs: move stray cores to class 0, reset and forget the classes of gone
instances, record the classes of new ones, shrink class 0 where it
shrinks, write the instances' classes and associate their cores, grow
class 0. Every write is skipped when libpqos already holds the value.
"""

import json
import os

from oslo_log import log as logging

from resq_agent import enforcer
import resq_agent.privsep.pqos
from resq_common import cbm
from resq_common import exception
from resq_common import jsonutils
from resq_profiler import store

LOG = logging.getLogger(__name__)
LIBRARY = 'libpqos.so.5'


STATE_FILE = 'pqos-classes.json'
DEFAULT_CLASS = 0


class StateError(Exception):
    """The class map in the state directory cannot be read or written."""


class ClassMap:
    """Which class of service each instance holds, persisted atomically."""

    def __init__(self, state_dir):
        self.state_dir = state_dir
        self.path = os.path.join(state_dir, STATE_FILE)

    def load(self):
        """``(classes, domains)``: ``{uuid: class id}``, ``[l3 ids]``."""
        try:
            with open(self.path, encoding='utf-8') as f:
                data = jsonutils.load(f)
            return ({str(u): int(c) for u, c in data['classes'].items()},
                    [int(d) for d in data['domains']])
        except FileNotFoundError:
            return {}, []
        except (OSError, ValueError, KeyError, TypeError,
                AttributeError) as exc:
            raise StateError('cannot read %s (%s); remove it to let the '
                             'agent give classes of service afresh'
                             % (self.path, exc))

    def save(self, classes, domains):
        """Replace the file in one step: temp file, fsync, rename."""
        text = json.dumps({'version': 1, 'domains': sorted(domains),
                           'classes': dict(sorted(classes.items()))},
                          indent=1)
        try:
            os.makedirs(self.state_dir, exist_ok=True)
            store.atomic_write(self.path, text, tmp_prefix='.' + STATE_FILE)
        except OSError as exc:
            raise StateError('cannot write %s (%s); make [resq_agent] '
                             'state_dir writable by the agent'
                             % (self.path, exc))


class PqosEnforcer:
    """Enforces layouts through libpqos (same interface as resctrl's)."""

    name = 'pqos'

    def __init__(self, interface, state_dir):
        self.interface = interface
        self.classes = ClassMap(state_dir)
        self._cores = {}

    def _call(self, fn, *args):
        return fn(self.interface, *args)

    def cores(self, l3id):
        if l3id not in self._cores:
            self._cores[l3id] = self._call(
                resq_agent.privsep.pqos.cores_of, l3id)
        return self._cores[l3id]

    def _read(self, domains):
        """``(masks {l3id: {class: mask}}, {core: class})``."""
        priv = resq_agent.privsep.pqos
        masks = {d: self._call(priv.read_l3_classes, d) for d in domains}
        cores = sorted({c for d in domains for c in self.cores(d)})
        return masks, self._call(priv.read_associations, cores)

    def groups(self):
        """``{resq-<uuid>: GroupState}`` for every class the agent holds."""
        classes, domains = self.classes.load()
        masks, assoc = self._read(domains)
        return {enforcer.group_name(u): enforcer.GroupState(
            enforcer.group_name(u),
            {d: masks[d][c] for d in domains if c in masks[d]},
            tuple(k for k, v in sorted(assoc.items()) if v == c))
            for u, c in classes.items()}

    def current_masks(self):
        return {s.instance_uuid: s.masks for s in self.groups().values()}

    def current(self, cpus_of=None):
        """``{instance uuid: (masks, None)}``: a class per instance."""
        return {u: (m, None) for u, m in self.current_masks().items()}

    def default_masks(self):
        _, domains = self.classes.load()
        masks, _ = self._read(domains)
        return {d: m[DEFAULT_CLASS] for d, m in masks.items()
                if DEFAULT_CLASS in m}

    def apply(self, lay, domain_ids, steps=None):
        """Make libpqos hold ``lay``; see the module for the order.

        :returns: :class:`resq_agent.enforcer.ApplyResult`; a failure is
            logged and listed and stops only what depends on it.
        """
        result = enforcer.ApplyResult()
        run = _Run(self, result, steps)
        priv = resq_agent.privsep.pqos
        domains = sorted(domain_ids)
        try:
            plat = self._call(priv.platform)
            classes, _ = self.classes.load()
            masks, assoc = self._read(domains)
        except Exception as exc:
            run.fail('read libpqos state', exc)
            return result
        wanted = {a.instance_uuid: a for a in lay.assignments}
        # 1. Cores in a class that is not their instance's: class 0.
        home = {c: classes[a.instance_uuid] for a in wanted.values()
                if a.instance_uuid in classes for c in a.cpus}
        stray = [c for c, k in sorted(assoc.items())
                 if k != DEFAULT_CLASS and home.get(c) != k]
        if stray and run.do('associate cores %s with class 0' % stray,
                            priv.associate_cores, stray, DEFAULT_CLASS):
            assoc.update({c: DEFAULT_CLASS for c in stray})
        # 2. Gone instances: reset their class, then forget it.
        for uuid in sorted(set(classes) - set(wanted)):
            cid = classes[uuid]
            if any(k == cid for k in assoc.values()):
                continue    # its cores could not be moved; next pass
            if all(run.reset(masks, d, cid, plat['cbm_mask'])
                   for d in domains):
                del classes[uuid]
                if run.save(classes, domains):
                    result.removed.append(enforcer.group_name(uuid))
                    run.record('release %s' % uuid)
        # 3. New instances: a free class, recorded before it is written.
        free = sorted(set(range(1, plat['num_classes']))
                      - set(classes.values()))
        for uuid in sorted(set(wanted) - set(classes)):
            if not free:
                run.fail('give instance %s a class of service' % uuid,
                         'none left: libpqos reports %d classes, %d held '
                         'by instances and class 0 by the default group'
                         % (plat['num_classes'], len(classes)))
                continue
            classes[uuid] = free.pop(0)
        if not run.save(classes, domains):
            return result
        # 4-6. Shrink class 0, write instances, grow class 0.
        final = {d: lay.default_masks.get(d, masks[d].get(DEFAULT_CLASS))
                 for d in domains}
        interim = {d: m if masks[d].get(DEFAULT_CLASS) is None
                   or m & ~masks[d][DEFAULT_CLASS] == 0
                   else masks[d][DEFAULT_CLASS] for d, m in final.items()}
        run.write_class(DEFAULT_CLASS, interim, masks, plat, 'shrink')
        for uuid, a in sorted(wanted.items()):
            if uuid in classes:
                self._write_instance(run, a, classes[uuid], final, masks,
                                     assoc, plat)
        run.write_class(DEFAULT_CLASS, final, masks, plat, 'grow')
        return result

    def _write_instance(self, run, a, cid, defaults, masks, assoc, plat):
        want = dict(defaults)
        want[a.domain_id] = a.mask
        ok, wrote = run.write_class(cid, want, masks, plat, 'instance %s'
                                    % a.instance_uuid)
        if wrote:
            run.result.written.append(enforcer.group_name(a.instance_uuid))
        if not ok:
            return
        join = sorted(c for c in a.cpus if assoc.get(c) != cid)
        if join and run.do('associate cores %s with class %d' % (join, cid),
                           resq_agent.privsep.pqos.associate_cores, join,
                           cid):
            run.record('associate %s' % a.instance_uuid)
            LOG.info('Instance %s: class of service %d, L3 %d mask %s '
                     '(%d ways), cores %s', a.instance_uuid, cid,
                     a.domain_id, cbm.fmt(a.mask), a.ways, join)


class _Run:
    """One apply pass: its result, step log and error handling."""

    def __init__(self, enf, result, steps):
        self.enf = enf
        self.result = result
        self.record = steps.append if steps is not None else (lambda _: 0)

    def fail(self, what, exc):
        msg = '%s: %s' % (what, exc)
        LOG.error('Cannot %s; other instances are not affected, the next '
                  'reconcile retries', msg)
        self.result.errors.append(msg)
        return False

    def do(self, what, fn, *args):
        try:
            self.enf._call(fn, *args)
            return True
        except Exception as exc:
            # libpqos raises its own PqosError family (and the daemon may
            # re-raise anything); none of it must stop the other writes.
            return self.fail(what, exc)

    def reset(self, masks, l3id, cid, full):
        """Give class ``cid`` of ``l3id`` every way, as libpqos resets it."""
        if masks[l3id].get(cid) != full:
            if not self.do('reset class %d on L3 %d' % (cid, l3id),
                           resq_agent.privsep.pqos.set_l3_class, l3id, cid,
                           full):
                return False
            masks[l3id][cid] = full
        return True

    def save(self, classes, domains):
        try:
            self.enf.classes.save(classes, domains)
            return True
        except StateError as exc:
            return self.fail('record classes of service', exc)

    def write_class(self, cid, want, masks, plat, why):
        """Write ``want`` ({l3id: mask}) into class ``cid``, checked first.

        :returns: ``(whether the class now holds want everywhere, whether
            anything was written)``.
        """
        ok, wrote = True, False
        for d, mask in sorted(want.items()):
            if mask is None or masks[d].get(cid) == mask:
                continue
            try:
                cbm.validate(mask, plat['cbm_mask'], plat['min_cbm_bits'])
            except cbm.InvalidMask as exc:
                ok = self.fail('set class %d on L3 %d for %s' % (
                    cid, d, why), exc)
                continue
            if self.do('set class %d on L3 %d for %s' % (cid, d, why),
                       resq_agent.privsep.pqos.set_l3_class, d, cid, mask):
                masks[d][cid] = mask
                wrote = True
                self.record('class %d L3 %d %s' % (cid, d, why))
            else:
                ok = False
        return ok, wrote


def probe():
    """``None`` when the pqos wrapper loads libpqos, else why not."""
    try:
        resq_agent.privsep.pqos.wrapper()
    except ImportError as exc:
        return ('the pqos Python package is not installed (%s); install it '
                'with "pip install pqos" together with intel-cmt-cat 5.x'
                % exc)
    except OSError as exc:
        return ('the pqos Python package cannot load %s (%s); it needs '
                'intel-cmt-cat 5.x (Debian bookworm ships 4.5 with '
                'libpqos.so.4)' % (LIBRARY, exc))
    return None


class UnsupportedBackend(exception.ResQException):
    msg_fmt = '%(reason)s'


def load_backend(conf):
    """The enforcer ``[resq_agent] backend`` asks for, or resctrl.

    :raises UnsupportedBackend: for pqos over MSR, which cannot enforce.
    """
    opts = conf.resq_agent
    root = opts.resctrl_root
    if opts.backend != 'pqos':
        return enforcer.ResctrlEnforcer(root)
    if opts.pqos_interface == 'MSR':
        # The agent's cache layout (domains, ways, I/O ways, classes) comes
        # from resctrl discovery, and libpqos's MSR interface needs resctrl
        # unmounted: the two never hold together, so nothing would ever be
        # enforced. Refused rather than run unpartitioned.
        raise UnsupportedBackend(reason=(
            '[resq_agent] backend = pqos with pqos_interface = MSR cannot '
            'enforce anything: the agent discovers the cache through '
            'resctrl, which libpqos\'s MSR interface needs unmounted; set '
            'pqos_interface = OS (resctrl mounted) or backend = resctrl'))
    reason = probe()
    if reason is None:
        backend = PqosEnforcer(opts.pqos_interface, opts.state_dir)
        try:
            # Initialises libpqos (as root, in the privsep daemon).
            plat = backend._call(resq_agent.privsep.pqos.platform)
        except Exception as exc:
            reason = ('libpqos failed to initialise on its %s interface: '
                      '%s' % (opts.pqos_interface, exc))
    if reason is not None:
        LOG.warning('[resq_agent] backend = pqos, but %s. Falling back to '
                    'the resctrl backend (%s).', reason, root)
        return enforcer.ResctrlEnforcer(root)
    LOG.info('libpqos %s on its %s interface: %d L3 classes of service%s; '
             'instance classes recorded in %s', LIBRARY,
             opts.pqos_interface, plat['num_classes'],
             ', CDP on' if plat['cdp'] else '', backend.classes.path)
    return backend
