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
"""Live migrations in an order that never over-commits anything. Pure.

A live migration holds the instance's cores, ways and class of service on
both hosts until it ends. A move may start when its destination cache
domain has the cores and ways free, and its destination host (and domain,
where Placement counts them per domain) a class of service, with every
earlier move finished and the instance still holding its source; and when
no other member of its anti-affinity groups is on the destination host.
Moves whose turn never comes (they wait on each other in a cycle, or on
moves left out) are left out with the reason, never emitted unsafe.
"""

import collections


class Ledger:
    """What each cache domain and host holds, move by move."""

    def __init__(self, snap):
        self.snap = snap
        self.dom = collections.defaultdict(lambda: [0, 0, 0])
        self.host_clos = collections.Counter()
        self.where = {}
        self.mates = collections.defaultdict(set)
        for g in snap.server_groups:
            if g.policy == 'anti-affinity':
                for u in g.members:
                    self.mates[u].update(x for x in g.members if x != u)
        for inst in snap.instances:
            self.add(inst, inst.host, inst.domain)
            self.where[inst.uuid] = {inst.host}

    def add(self, inst, host, dom, sign=1):
        use = self.dom[host, dom]
        use[0] += sign * inst.cores
        use[1] += sign * inst.ways
        use[2] += sign * inst.clos
        self.host_clos[host] += sign * inst.clos

    def blocker(self, inst, host, dom_id):
        """Why ``inst`` cannot start moving to ``host``/``dom_id`` now.

        ``None`` when it can.
        """
        h = self.snap.host(host)
        if h is None:
            return 'host %s is not in the snapshot' % host
        dom = h.domain(dom_id)
        if dom is None:
            return 'host %s has no cache domain %d' % (host, dom_id)
        if not h.accepts:
            return 'host %s is %s' % (host, 'down' if h.down
                                      else 'disabled')
        use = self.dom[host, dom_id]
        if use[0] + inst.cores > dom.cores:
            return ('domain %d of %s has %d of the %d cores it needs free'
                    % (dom_id, host, dom.cores - use[0], inst.cores))
        if use[1] + inst.ways > dom.ways:
            return ('domain %d of %s has %d of the %d ways it needs free'
                    % (dom_id, host, dom.ways - use[1], inst.ways))
        if dom.clos is not None and use[2] + inst.clos > dom.clos:
            return ('domain %d of %s has no class of service free'
                    % (dom_id, host))
        if self.host_clos[host] + inst.clos > h.clos:
            return 'host %s has no class of service free' % host
        for u in self.mates.get(inst.uuid, ()):
            if host in self.where.get(u, ()):
                return ('%s, of its anti-affinity group, is on %s'
                        % (u, host))
        return None

    def start(self, inst, src, dst, dst_dom):
        """Both ends hold the instance while it moves."""
        self.add(inst, dst, dst_dom)
        self.where[inst.uuid] = {src, dst}

    def finish(self, inst, src, src_dom, dst):
        self.add(inst, src, src_dom, -1)
        self.where[inst.uuid] = {dst}

    def abort(self, inst, src, dst, dst_dom):
        self.add(inst, dst, dst_dom, -1)
        self.where[inst.uuid] = {src}


def order(snap, targets):
    """``(moves, left_out)`` for ``{uuid: (host, domain)}``.

    ``moves`` are dicts in execution order; ``left_out`` are
    ``{'uuid', 'to_host', 'to_domain', 'reason'}``.
    """
    ledger = Ledger(snap)
    by_uuid = {i.uuid: i for i in snap.instances}
    pending = sorted(targets.items(), key=lambda kv: (
        by_uuid[kv[0]].host, -by_uuid[kv[0]].ways, kv[0]))
    moves = []
    progress = True
    while pending and progress:
        progress = False
        waiting = []
        for uuid, (host, dom_id) in pending:
            inst = by_uuid[uuid]
            if ledger.blocker(inst, host, dom_id) is None:
                ledger.start(inst, inst.host, host, dom_id)
                ledger.finish(inst, inst.host, inst.domain, host)
                moves.append({'uuid': uuid, 'name': inst.name,
                              'from_host': inst.host,
                              'from_domain': inst.domain,
                              'to_host': host, 'to_domain': dom_id,
                              'cores': inst.cores, 'ways': inst.ways,
                              'clos': inst.clos})
                progress = True
            else:
                waiting.append((uuid, (host, dom_id)))
        pending = waiting
    left_out = []
    for uuid, (host, dom_id) in pending:
        reason = ledger.blocker(by_uuid[uuid], host, dom_id)
        left_out.append({'uuid': uuid, 'to_host': host, 'to_domain': dom_id,
                         'reason': 'no safe order: %s even after every '
                         'move that can go first' % reason})
    return moves, left_out


def hosts_in_use_after(snap, moves):
    """Hosts holding anything once ``moves`` are done."""
    where = {i.uuid: i.host for i in snap.instances}
    for mv in moves:
        where[mv['uuid']] = mv['to_host']
    return ({h.name for h in snap.hosts if h.other_load}
            | set(where.values()))
