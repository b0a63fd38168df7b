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
"""The agent's on-demand side: NFs, leases and classes on this host.

:class:`OnDemandHost` is called from every layout pass of the agent's
manager, after the reserved instances are laid out. Per cache domain it
finds the on-demand NFs (``resq:slo=on-demand`` with pinned CPUs in the
domain and ``resq:latency_p95_us``), the lease (:mod:`.lease`), reads
each NF's latency (its source) and its own LLC occupancy and memory
bandwidth (CMT/MBM, :mod:`resq_agent.monitor`), lets the domain's
:class:`.scheduler.LocalScheduler` decide, and adds one assignment per
class of service to the layout: the enforcer then writes them like any
other group, ``resq-od<domain>-<n>``, holding the CPUs of the class's NFs.
No remote call is made here; escalations are queued for the caller.

CMT and MBM count per resctrl group and the max-min procedure needs each
NF's own figures, so after the enforcer wrote the classes
(:meth:`OnDemandHost.sync_monitoring`) every NF that shares a class gets a
monitoring group ``resq-od<domain>-<n>/mon_groups/resq-<uuid>`` holding its
pinned CPUs: it costs an RMID, no class of service. An NF that changes
class gets a new one in its new class (the kernel cannot move a
monitoring group between control groups), one that leaves loses it, and
monitoring groups of NFs that are gone (an agent restart) are removed. An
isolated NF's class counters are its own and need none.

When the kernel has no L3 monitoring (no ``info/L3_MON``), the backend is
not resctrl, or RMIDs run out, the NFs without a monitoring group of their
own share what their class measured less what its monitored members did,
evenly (the ``even-split`` mode; with no monitoring group at all that is
the class's figures divided by its members). The agent says so once in its
log, at WARNING, and its status shows the mode per cache domain.

Each domain's scheduler keeps the NFs' readings under the allocations
they had, for their miss-ratio curves, and reads their profiles
(``[resq_agent] ondemand_profile_dir``, else ``ondemand_slomo_dir``)
through the host's one :class:`.profiles.ProfileCurves`; the status names
the source of each NF's last curve (``profile``, ``readings`` or
``prior``) and how many allocations it remembers.
"""

import collections
import time

from oslo_log import log as logging

from resq_agent import layout
from resq_agent import monitor as monitor_mod
from resq_agent.ondemand import latency
from resq_agent.ondemand import lease as lease_mod
from resq_agent.ondemand import model
from resq_agent.ondemand import profiles as profiles_mod
from resq_agent.ondemand import scheduler as sched_mod
import resq_agent.privsep.resctrl
from resq_common import exception
from resq_common import extra_specs as specs_mod
from resq_common import resctrl

LOG = logging.getLogger(__name__)
CLASS_PREFIX = 'od'
# How NFs sharing a class get their occupancy and bandwidth.
PER_NF = 'per-nf'
EVEN_SPLIT = 'even-split'


def class_id(domain_id, index):
    """The pseudo instance id of a class; its group is ``resq-<id>``."""
    return '%s%d-%d' % (CLASS_PREFIX, domain_id, index)


def mon_group_name(uuid):
    """The monitoring group of an NF inside its class's group."""
    return resctrl.GROUP_PREFIX + uuid.lower()


class OnDemandHost:

    def __init__(self, conf, source, monitor=None, clock=time.monotonic):
        opts = conf.resq_agent
        self.conf = conf
        self.source = source
        self.monitor = monitor
        self.clock = clock
        self.classes = opts.ondemand_classes
        self.lend_spare = opts.ondemand_lend_spare
        self.schedulers = {}
        self.decisions = {}
        self.escalations = collections.deque(maxlen=1000)
        self._groups = {}     # uuid -> class id it is in
        # uuid -> (class group, CPUs) of the NFs sharing a class, from the
        # last layout; uuid -> (class group, monitoring group) of those
        # whose monitoring group holds their CPUs now.
        self._wanted_mon = {}
        self._mon = {}
        self._fallback = None    # why some NFs have no monitoring group
        self._figures_of = {}    # uuid -> what the last pass measured
        # uuid -> (latency us, target us) last read, and how many passes
        # found the NF violating its target (metrics).
        self.latency_of = {}
        self.violations = collections.Counter()
        self._warned = None
        self.sharing = None
        if opts.ondemand_slomo_dir:
            from resq_agent.ondemand import sharing
            self.sharing = sharing.SlomoSharing(opts.ondemand_slomo_dir)
        # Profiles shape the NFs' miss-ratio curves; they sit beside the
        # SLOMO models in the profile store when no directory is given.
        profile_dir = opts.ondemand_profile_dir or opts.ondemand_slomo_dir
        self.profiles = (profiles_mod.ProfileCurves(profile_dir)
                         if profile_dir else None)

    @classmethod
    def from_conf(cls, conf, monitor=None):
        """An on-demand host on ``conf``.

        ``monitor`` defaults to a :class:`resq_agent.monitor.Monitor` of
        its own: the manager's forgets groups that are no instance's.
        """
        if monitor is None:
            opts = conf.resq_agent
            monitor = monitor_mod.Monitor(opts.resctrl_root,
                                          opts.monitor_min_interval_s)
        return cls(conf, latency.load(conf, time.time), monitor)

    def _scheduler(self, domain_id):
        opts = self.conf.resq_agent
        if domain_id not in self.schedulers:
            self.schedulers[domain_id] = sched_mod.LocalScheduler(
                opts.ondemand_policy, opts.ondemand_settle_s,
                opts.ondemand_high_miss_mbps * 1e6,
                may_share=self.sharing, profiles=self.profiles)
        return self.schedulers[domain_id]

    def nfs(self, instances, topology):
        """``({domain id: [model.NF]}, [(uuid, domain, reason)])``."""
        out, refused = collections.defaultdict(list), []
        for inst in sorted(instances, key=lambda i: i.uuid):
            if inst.extra_specs.get('resq:slo') != specs_mod.ON_DEMAND:
                continue
            doms = {d.id for d in topology.domains for c in inst.cpus
                    if c in d.cpus}
            target = inst.extra_specs.get('resq:latency_p95_us')
            reason = None
            try:
                target = specs_mod.check_value('resq:latency_p95_us',
                                               target)
            except specs_mod.InvalidResQSpec as exc:
                reason = ('an on-demand SLO needs its latency target: %s'
                          % exc)
            if not inst.cpus:
                reason = ('it has no pinned CPUs: CAT partitions cores, so '
                          'its flavor needs hw:cpu_policy=dedicated')
            elif len(doms) != 1:
                reason = ('its pinned CPUs are in %d cache domains; an '
                          'on-demand NF must sit in one' % len(doms))
            dom = doms.pop() if len(doms) == 1 else None
            if reason:
                refused.append((inst.uuid, dom, reason))
                continue
            out[dom].append(model.NF(inst.uuid, float(target),
                                     tuple(inst.cpus),
                                     inst.extra_specs.get('resq:profile')))
        return out, refused

    def _readings(self, domain_id, nfs):
        readings, failed = {}, {}
        figures = self._figures(nfs)
        for n in nfs:
            try:
                s = self.source.latest(n.uuid)
            except latency.SourceFailed as exc:
                failed[n.uuid] = exc.message
                continue
            occ, bw = figures.get(n.uuid, (0.0, 0.0))
            self.latency_of[n.uuid] = (s.latency_us, n.target_us)
            readings[n.uuid] = model.Reading(s.latency_us, occ, bw, s.load,
                                             s.mpps)
        return readings, failed

    def _figures(self, nfs):
        """``{uuid: (occupancy bytes, memory bandwidth bytes/s)}``.

        An NF with a monitoring group of its own in the class it is in
        gets that group's counters; the others of a class share what the
        class measured less its monitored members, evenly.
        """
        if self.monitor is None:
            return {}
        figures = {}
        by_class = collections.defaultdict(list)
        for n in nfs:
            group = self._groups.get(n.uuid)
            if group is not None:
                by_class[group].append(n.uuid)
        out = {}
        for group, members in by_class.items():
            gname = resctrl.GROUP_PREFIX + group
            total = self.monitor.sample(gname)
            occ_left = total.get('llc_occupancy_bytes') or 0
            bw_left = total.get('mbm_total_bytes_per_s') or 0
            rest = []
            for uuid in members:
                mon = self._mon.get(uuid)
                if len(members) < 2 or mon is None or mon[0] != gname:
                    rest.append(uuid)
                    continue
                m = self.monitor.sample(gname, mon[1])
                occ = m.get('llc_occupancy_bytes') or 0
                bw = m.get('mbm_total_bytes_per_s') or 0
                out[uuid] = (float(occ), float(bw))
                figures[uuid] = 'monitoring group'
                occ_left -= occ
                bw_left -= bw
            for uuid in rest:
                out[uuid] = (max(occ_left, 0) / len(rest),
                             max(bw_left, 0) / len(rest))
                figures[uuid] = ('class' if len(members) == 1 else
                                 'class split evenly')
        self._figures_of.update(
            (u, {'llc_occupancy_bytes': out[u][0],
                 'mbm_total_bytes_per_s': out[u][1], 'measured_by': how})
            for u, how in figures.items())
        return out

    def extend(self, lay, shapes, instances, topology):
        """The on-demand classes beside the reserved layout ``lay``.

        ``lay.default_masks`` is updated in place where a lease is in use
        (the default group then keeps out of it).

        :returns: ``(assignments, refused)``: one
            :class:`resq_agent.layout.Assignment` per class, and
            ``[(uuid, domain, reason)]`` of on-demand instances that get
            no class.
        """
        classes = []
        by_dom, refused = self.nfs(instances, topology)
        present = {n.uuid for nfs in by_dom.values() for n in nfs}
        for gone in set(self.latency_of) - present:
            del self.latency_of[gone]
        for gone in set(self.violations) - present:
            del self.violations[gone]
        now = self.clock()
        self._figures_of = {}
        groups, wanted_mon = {}, {}
        for shape in shapes:
            nfs = by_dom.pop(shape.id, [])
            if not nfs:
                self.schedulers.pop(shape.id, None)
                self.decisions.pop(shape.id, None)
                continue
            dom = topology.domain(shape.id)
            le = lease_mod.lease_of(
                shape, lay.assignments, self.classes, self.lend_spare,
                dom.way_size_bytes if dom and dom.way_size_bytes else 1)
            if le is None:
                refused.extend((n.uuid, shape.id, 'cache domain %d leases no '
                                'ways to on-demand NFs: set [resq_agent] '
                                'ondemand_ways' % shape.id) for n in nfs)
                continue
            readings, failed = self._readings(shape.id, nfs)
            d = self._scheduler(shape.id).update(le, nfs, readings, now,
                                                 failed)
            self.decisions[shape.id] = d
            self.violations.update(d.violating)
            self._log(shape.id, d)
            cpus = {n.uuid: n.cpus for n in nfs}
            for i, (mask, cls) in enumerate(d.masks):
                cid = class_id(shape.id, i)
                members = [u for u in cls.members if u in cpus]
                for u in members:
                    groups[u] = cid
                    if len(members) > 1:
                        wanted_mon[u] = (resctrl.GROUP_PREFIX + cid,
                                         tuple(sorted(cpus[u])))
                classes.append(_assignment(
                    cid, shape.id, cls.ways, mask,
                    sorted({c for u in members for c in cpus[u]})))
            if d.masks:
                lay.default_masks[shape.id] = lease_mod.default_mask(
                    shape, lay.assignments, self.lend_spare)
            by_uuid = {n.uuid: n for n in nfs}
            for uuid, reason in d.escalate:
                self.escalations.append({
                    'instance_uuid': uuid, 'domain_id': shape.id,
                    'reason': reason, 'lease_ways': le.ways,
                    'vcpus': len(by_uuid[uuid].cpus),
                    'target_us': by_uuid[uuid].target_us})
        for dom_id, nfs in by_dom.items():
            refused.extend((n.uuid, dom_id, 'cache domain %s has no CAT'
                            % dom_id) for n in nfs)
        self._groups = groups
        self._wanted_mon = wanted_mon
        self.source.forget(present)
        return classes, refused

    # -- per-NF monitoring groups ------------------------------------------
    def sync_monitoring(self, tree):
        """Give every NF sharing a class its own monitoring group.

        Call it after the enforcer wrote the layout :meth:`extend` made.
        Removes the ``resq-`` monitoring groups of the agent's classes that
        no NF of that class wants any more (first: that frees RMIDs), then
        creates or corrects the wanted ones. Idempotent.

        :param tree: the :class:`resq_common.resctrl.Resctrl` the enforcer
            writes, or None when the backend is not resctrl.
        :returns: ``[error message]`` of privileged calls that failed for
            another reason than missing monitoring or RMIDs.
        """
        errors = []
        if tree is None:
            self._mon = {}
            self._set_fallback('the CAT backend is not resctrl: no '
                               'monitoring groups')
            return errors
        if not tree.has_monitoring():
            self._mon = {}
            self._set_fallback('the kernel offers no L3 monitoring '
                               '(%s has no info/L3_MON)' % tree.root)
            return errors
        mod = resq_agent.privsep.resctrl
        existing = {}
        prefix = resctrl.GROUP_PREFIX + CLASS_PREFIX
        for group in tree.owned_groups():
            if not group.startswith(prefix):
                continue
            for mon in tree.mon_groups(group):
                if not resctrl.GROUP_RE.fullmatch(mon):
                    continue     # not the agent's: left alone
                try:
                    cpus = tree.read_mon_cpus(group, mon)
                except (OSError, exception.ResctrlError):
                    cpus = None
                existing[(group, mon)] = cpus
        wanted = {(g, mon_group_name(u)): (u, cpus)
                  for u, (g, cpus) in self._wanted_mon.items()}
        for group, mon in sorted(set(existing) - set(wanted)):
            try:
                mod.remove_mon_group(group, mon)
                LOG.info('Removed monitoring group %s/mon_groups/%s: its NF '
                         'left the class', group, mon)
            except Exception as exc:
                errors.append('remove monitoring group %s/%s: %s' % (
                    group, mon, getattr(exc, 'message', exc)))
        mon_of, short = {}, None
        budget = self._rmid_budget(tree)
        for (group, mon), (uuid, cpus) in sorted(wanted.items()):
            if existing.get((group, mon)) == cpus:
                mon_of[uuid] = (group, mon)
                continue
            if (group, mon) not in existing:
                if budget[0] < 1:
                    short = short or budget[1]
                    continue
                budget[0] -= 1
            try:
                mod.create_mon_group(group, mon, list(cpus))
                mon_of[uuid] = (group, mon)
            except exception.MonitoringUnavailable as exc:
                short = short or exc.message
            except Exception as exc:
                errors.append('monitoring group %s/%s: %s' % (
                    group, mon, getattr(exc, 'message', exc)))
        self._mon = mon_of
        missing = sorted(set(self._wanted_mon) - set(mon_of))
        if short:
            self._set_fallback(short)
        elif missing:
            self._set_fallback('monitoring groups could not be written')
        else:
            self._set_fallback(None)
        keep = {resctrl.GROUP_PREFIX + c for c in set(self._groups.values())}
        keep.update(mon_of.values())
        if self.monitor is not None:
            self.monitor.forget(keep)
        return errors

    @staticmethod
    def _rmid_budget(tree):
        """``[RMIDs monitoring groups may still take, why not more]``.

        Every control group holds an RMID too, so monitoring groups only
        take the RMIDs beyond one per class of service: a class or a
        reserved instance's group never fails for want of an RMID.
        """
        try:
            total = tree.num_rmids()
            closids = tree.info()['num_closids']
        except (OSError, ValueError, exception.ResctrlError) as exc:
            return [0, 'cannot read info/L3_MON/num_rmids: %s' % (
                getattr(exc, 'message', exc),)]
        used = len(tree.mon_groups_of_root()) + sum(
            len(tree.mon_groups_of(g)) for g in tree.groups())
        left = max(total - closids - used, 0)
        return [left, 'RMIDs run out: info/L3_MON/num_rmids is %d, one is '
                'kept for each of the %d classes of service '
                '(num_closids) and monitoring groups hold %d' % (
                    total, closids, used)]

    def _set_fallback(self, reason):
        self._fallback = reason
        if reason is None:
            if self._warned is not None:
                LOG.info('On-demand NFs sharing a class are measured per NF '
                         'again (monitoring groups)')
            self._warned = None
            return
        if self._warned != reason and self._wanted_mon:
            LOG.warning('On-demand NFs sharing a class of service are given '
                        'their class\'s LLC occupancy and memory bandwidth '
                        'split evenly, not their own: %s', reason)
            self._warned = reason

    def monitoring(self, domain_id):
        """``(mode, reason)`` of the NFs sharing classes in a domain."""
        d = self.decisions.get(domain_id)
        shared = [u for _, c in (d.masks if d else []) if len(c.members) > 1
                  for u in c.members]
        missing = [u for u in shared if u not in self._mon]
        if missing:
            return EVEN_SPLIT, self._fallback or (
                'no monitoring group yet for %s' % ', '.join(missing))
        return PER_NF, None

    def _log(self, domain_id, d):
        if d.state == 'frozen':
            LOG.warning('On-demand NFs of cache domain %d keep their masks: '
                        'latency source failed (%s)', domain_id, d.reason)
        elif d.failed:
            LOG.warning('On-demand NFs of cache domain %d whose latency '
                        'source failed keep their classes of their own (%s)',
                        domain_id, '; '.join('%s: %s' % item for item in
                                             sorted(d.failed.items())))
        if d.state == 'error':
            LOG.error('On-demand NFs of cache domain %d keep their masks: '
                      '%s', domain_id, d.reason)
        elif d.changed:
            LOG.info('On-demand classes of cache domain %d: %s (%s)',
                     domain_id, ', '.join(
                         '%d ways for %s' % (c.ways, ', '.join(c.members))
                         for _, c in d.masks), d.reason)
        for uuid, reason in d.escalate:
            LOG.warning('On-demand NF %s misses its latency target and '
                        'the host cannot help: %s; escalating', uuid, reason)

    def take_escalations(self):
        out = list(self.escalations)
        self.escalations.clear()
        return out

    def status(self):
        out = {}
        for dom, d in sorted(self.decisions.items()):
            mode, why = self.monitoring(dom)
            out[str(dom)] = {
                'state': d.state, 'reason': d.reason,
                'violating': list(d.violating),
                'classes': [{'mask': '%x' % m, 'ways': c.ways,
                             'nfs': list(c.members)} for m, c in d.masks],
                'monitoring': {'mode': mode, 'reason': why,
                               'mon_groups': sorted(
                                   '%s/%s' % self._mon[u]
                                   for _, c in d.masks for u in c.members
                                   if u in self._mon),
                               'nfs': {u: self._figures_of[u]
                                       for _, c in d.masks
                                       for u in c.members
                                       if u in self._figures_of}},
                'curves': self._curves_status(dom, d)}
        return out

    def _curves_status(self, domain_id, decision):
        """Per NF: its last curve's source and allocations remembered."""
        s = self.schedulers.get(domain_id)
        if s is None:
            return {}
        return {u: {'source': s.curve_sources.get(u),
                    'allocations': len(s.history(u))}
                for _, c in decision.masks for u in c.members}


def _assignment(cid, domain_id, ways, mask, cpus):
    return layout.Assignment(cid, domain_id, ways, mask, tuple(cpus))
