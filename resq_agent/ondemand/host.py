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
each NF's latency (its source) and its class's occupancy and memory
bandwidth (CMT/MBM, :mod:`resq_agent.monitor`), lets the domain's
:class:`.scheduler.LocalScheduler` decide, and adds one assignment per
class of service to the layout: the enforcer then writes them like any
other group, ``resq-od<domain>-<n>``, holding the CPUs of the class's NFs.
No remote call is made here; escalations are queued for the caller.

CMT and MBM count per resctrl group, so an NF sharing a class is given
its class's occupancy and bandwidth divided evenly among the members (an
isolated NF's are exact).
"""

import collections
import time

from oslo_log import log as logging

from resq_agent import layout
from resq_agent.ondemand import latency
from resq_agent.ondemand import lease as lease_mod
from resq_agent.ondemand import model
from resq_agent.ondemand import scheduler as sched_mod
from resq_nova import extra_specs as specs_mod

LOG = logging.getLogger(__name__)
CLASS_PREFIX = 'od'


def class_id(domain_id, index):
    """The pseudo instance id of a class; its group is ``resq-<id>``."""
    return '%s%d-%d' % (CLASS_PREFIX, domain_id, index)


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
        self.sharing = None
        if opts.ondemand_slomo_dir:
            from resq_agent.ondemand import sharing
            self.sharing = sharing.SlomoSharing(opts.ondemand_slomo_dir)

    @classmethod
    def from_conf(cls, conf, monitor=None):
        return cls(conf, latency.load(conf, time.time), monitor)

    def _scheduler(self, domain_id):
        opts = self.conf.resq_agent
        if domain_id not in self.schedulers:
            self.schedulers[domain_id] = sched_mod.LocalScheduler(
                opts.ondemand_policy, opts.ondemand_settle_s,
                opts.ondemand_high_miss_mbps * 1e6,
                may_share=self.sharing)
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
        members = collections.Counter(self._groups.get(n.uuid)
                                      for n in nfs)
        for n in nfs:
            try:
                s = self.source.latest(n.uuid)
            except latency.SourceFailed as exc:
                failed[n.uuid] = exc.message
                continue
            occ = bw = 0.0
            group = self._groups.get(n.uuid)
            if self.monitor is not None and group is not None:
                m = self.monitor.sample('resq-' + group)
                share = max(members[group], 1)
                occ = (m.get('llc_occupancy_bytes') or 0) / share
                bw = (m.get('mbm_total_bytes_per_s') or 0) / share
            readings[n.uuid] = model.Reading(s.latency_us, occ, bw, s.load,
                                             s.mpps)
        return readings, failed

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
        now = self.clock()
        groups = {}
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
            self._log(shape.id, d)
            cpus = {n.uuid: n.cpus for n in nfs}
            for i, (mask, cls) in enumerate(d.masks):
                cid = class_id(shape.id, i)
                members = [u for u in cls.members if u in cpus]
                for u in members:
                    groups[u] = cid
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
        self.source.forget(present)
        return classes, refused

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
        return {str(dom): {'state': d.state, 'reason': d.reason,
                           'violating': list(d.violating),
                           'classes': [{'mask': '%x' % m, 'ways': c.ways,
                                        'nfs': list(c.members)}
                                       for m, c in d.masks]}
                for dom, d in sorted(self.decisions.items())}


def _assignment(cid, domain_id, ways, mask, cpus):
    return layout.Assignment(cid, domain_id, ways, mask, tuple(cpus))
