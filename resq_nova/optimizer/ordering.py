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

from resq_nova.optimizer import snapshot as snap_mod


def mates_of(snap):
    """``{uuid: {anti-affinity groupmates}}`` of ``snap``."""
    mates = collections.defaultdict(set)
    for g in snap.server_groups:
        if g.policy == 'anti-affinity':
            for u in g.members:
                mates[u].update(x for x in g.members if x != u)
    return mates


class Ledger:
    """What each cache domain and host holds, move by move."""

    def __init__(self, snap, instances=None, mates=None):
        """The room of every domain and host of ``snap``.

        :param instances: count only these (default: all of ``snap``'s);
            :func:`_safe_at` gives those of the one host it checks.
        :param mates: :func:`mates_of` ``snap`` when the caller has it.
        """
        self.snap = snap
        self.dom = collections.defaultdict(lambda: [0, 0, 0])
        # (Plain dicts of counts: a ledger is made for every host
        # needed_only asks about, and Counters are slow to make.)
        self.host_clos = collections.defaultdict(int)
        self.numa = collections.defaultdict(dict)
        self.res = collections.defaultdict(dict)
        # uuid -> the hosts holding it (two while it moves).
        self.where = where = {}
        self.mates = mates_of(snap) if mates is None else mates
        dom, host_clos, res = self.dom, self.host_clos, self.res
        for inst in snap.instances if instances is None else instances:
            # (add, inline: a ledger counts every instance of a cell.)
            host = inst.host
            use = dom[host, inst.domain]
            use[0] += inst.cores
            use[1] += inst.ways
            use[2] += inst.clos
            host_clos[host] += inst.clos
            if inst.memory_mb or inst.mem_bw_mibps:
                numa = self.numa[host, inst.domain]
                for key, amount in inst.numa_need().items():
                    numa[key] = numa.get(key, 0) + amount
            if inst.resources:
                held = res[host]
                for rc, amount in inst.resources.items():
                    held[rc] = held.get(rc, 0) + amount
            where[inst.uuid] = (host,)

    def add(self, inst, host, dom, sign=1):
        use = self.dom[host, dom]
        use[0] += sign * inst.cores
        use[1] += sign * inst.ways
        use[2] += sign * inst.clos
        self.host_clos[host] += sign * inst.clos
        # (numa_need() is empty without memory or bandwidth.)
        if inst.memory_mb or inst.mem_bw_mibps:
            numa = self.numa[host, dom]
            for key, amount in inst.numa_need().items():
                numa[key] = numa.get(key, 0) + sign * amount
        if inst.resources:
            res = self.res[host]
            for rc, amount in inst.resources.items():
                res[rc] = res.get(rc, 0) + sign * amount

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
        if inst.memory_mb or inst.mem_bw_mibps:
            why = self._numa_blocker(inst, host, dom, dom_id)
            if why:
                return why
        if inst.resources:
            held = self.res.get(host, {})
            for rc, amount in sorted(inst.resources.items()):
                cap = h.resources.get(rc)
                if cap is not None and held.get(rc, 0) + amount > cap:
                    return ('host %s has %d %s free, it needs %d'
                            % (host, cap - held.get(rc, 0), rc, amount))
        for u in self.mates.get(inst.uuid, ()):
            if host in self.where.get(u, ()):
                return ('%s, of its anti-affinity group, is on %s'
                        % (u, host))
        return None

    def _numa_blocker(self, inst, host, dom, dom_id):
        caps = dom.numa_caps()
        held = self.numa.get((host, dom_id), {})
        for key, amount in inst.numa_need().items():
            if key not in caps or held.get(key, 0) + amount <= caps[key]:
                continue
            if key == snap_mod.MEM_BW:
                return ('domain %d of %s has %d MiB/s of memory bandwidth '
                        'free, it needs %d' % (
                            dom_id, host, caps[key] - held.get(key, 0),
                            amount))
            return ('the NUMA cell of domain %d of %s has %d MB of %s '
                    'free, it needs %d' % (
                        dom_id, host, caps[key] - held.get(key, 0),
                        key, amount))
        return None

    def start(self, inst, src, dst, dst_dom):
        """Both ends hold the instance while it moves."""
        self.add(inst, dst, dst_dom)
        self.where[inst.uuid] = (src, dst)

    def finish(self, inst, src, src_dom, dst):
        self.add(inst, src, src_dom, -1)
        self.where[inst.uuid] = (dst,)

    def abort(self, inst, src, dst, dst_dom):
        self.add(inst, dst, dst_dom, -1)
        self.where[inst.uuid] = (src,)


def order(snap, targets, detour=False):
    """``(moves, left_out)`` for ``{uuid: (host, domain)}``.

    ``moves`` are dicts in execution order; ``left_out`` are
    ``{'uuid', 'to_host', 'to_domain', 'reason'}``. With ``detour``, when
    no waiting move can start (a swap: each waits for room another holds),
    one of them first goes to a host with room (preferably a spare or one
    being emptied) and on to its target later: that leg is marked
    ``detour``. An instance takes at most one detour.
    """
    ledger = Ledger(snap)
    by_uuid = {i.uuid: i for i in snap.instances}
    loc = {i.uuid: (i.host, i.domain) for i in snap.instances}
    pending = sorted(targets.items(), key=lambda kv: (
        by_uuid[kv[0]].host, -by_uuid[kv[0]].ways, kv[0]))
    moves = []
    detoured = set()
    progress = True
    while pending and progress:
        progress = False
        waiting = []
        for uuid, (host, dom_id) in pending:
            inst = by_uuid[uuid]
            if ledger.blocker(inst, host, dom_id) is None:
                moves.append(_leg(ledger, inst, loc, host, dom_id))
                progress = True
            else:
                waiting.append((uuid, (host, dom_id)))
        pending = waiting
        if pending and not progress and detour:
            progress = _detour(snap, ledger, by_uuid, loc, pending, targets,
                               detoured, moves)
    left_out = []
    for uuid, (host, dom_id) in pending:
        reason = ledger.blocker(by_uuid[uuid], host, dom_id)
        left_out.append({'uuid': uuid, 'to_host': host, 'to_domain': dom_id,
                         'reason': 'no safe order: %s even after every '
                         'move that can go first' % reason})
    return moves, left_out


def _leg(ledger, inst, loc, host, dom_id, detour=False):
    """Book one move of ``inst`` from where it is now; its record."""
    src, src_dom = loc[inst.uuid]
    ledger.start(inst, src, host, dom_id)
    ledger.finish(inst, src, src_dom, host)
    loc[inst.uuid] = (host, dom_id)
    mv = {'uuid': inst.uuid, 'name': inst.name, 'from_host': src,
          'from_domain': src_dom, 'to_host': host, 'to_domain': dom_id,
          'cores': inst.cores, 'ways': inst.ways, 'clos': inst.clos}
    if detour:
        mv['detour'] = True
    return mv


def _detour(snap, ledger, by_uuid, loc, pending, targets, detoured, moves):
    """Send one waiting instance to a host with room; whether one went."""
    final = {i.uuid: i.host for i in snap.instances}
    final.update((u, t[0]) for u, t in targets.items())
    used_after = ({h.name for h in snap.hosts if h.other_load}
                  | set(final.values()))
    for uuid, (host, _) in pending:
        if uuid in detoured:
            continue
        inst = by_uuid[uuid]
        here = loc[uuid][0]
        options = []
        for h in snap.hosts:
            if h.name in (here, host) or not h.accepts:
                continue
            for dom in h.domains:
                if ledger.blocker(inst, h.name, dom.id) is None:
                    # Spares and hosts being emptied first, then the
                    # fullest (it leaves the most room elsewhere).
                    free = dom.ways - ledger.dom[h.name, dom.id][1]
                    options.append((h.name in used_after, free, h.name,
                                    dom.id))
        if options:
            _, _, name, dom_id = min(options)
            detoured.add(uuid)
            moves.append(_leg(ledger, inst, loc, name, dom_id, detour=True))
            return True
    return False


def replay(snap, moves):
    """The first move of ``moves`` that is not safe in order, or ``None``.

    :returns: ``(index, reason)`` or ``None``.
    """
    ledger = Ledger(snap)
    by_uuid = {i.uuid: i for i in snap.instances}
    loc = {i.uuid: (i.host, i.domain) for i in snap.instances}
    for n, mv in enumerate(moves):
        inst = by_uuid.get(mv['uuid'])
        if inst is None:
            return n, 'instance %s is not in the snapshot' % mv['uuid']
        if loc[inst.uuid] != (mv['from_host'], mv['from_domain']):
            return n, ('instance %s is in domain %d of %s, the move starts '
                       'from domain %d of %s' % (
                           inst.uuid, loc[inst.uuid][1], loc[inst.uuid][0],
                           mv['from_domain'], mv['from_host']))
        why = ledger.blocker(inst, mv['to_host'], mv['to_domain'])
        if why:
            return n, why
        _leg(ledger, inst, loc, mv['to_host'], mv['to_domain'])
    return None


def needed_only(snap, moves):
    """``(moves, dropped)``: without the instances whose moves free nothing.

    An instance's moves are needed when its host (where it is now) ends up
    empty, or when the plan is no longer safe in order without them (they
    make room for another host's instances). The others are dropped: a
    live migration that frees nothing costs a migration for no gain.
    """
    dropped = []
    origin = {}
    for mv in moves:
        origin.setdefault(mv['uuid'], mv['from_host'])
    by_uuid = {i.uuid: i for i in snap.instances}
    residents = collections.defaultdict(list)
    for inst in snap.instances:
        residents[inst.host].append(inst)
    mates = mates_of(snap)
    gone = set()
    changed = True
    while changed:
        changed = False
        freed = snap.hosts_in_use() - hosts_in_use_after(snap, moves)
        # The moves touching each host, for _safe_at (which replays only
        # those). Dropping an instance that stays on a host not freed
        # frees no fewer hosts: it only leaves the host it went to.
        touching = collections.defaultdict(list)
        for mv in moves:
            touching[mv['from_host']].append(mv)
            if mv['to_host'] != mv['from_host']:
                touching[mv['to_host']].append(mv)
        for uuid in sorted({u for u, h in origin.items() if h not in freed}):
            if uuid in gone:
                continue
            host = origin[uuid]
            rest = [mv for mv in touching[host] if mv['uuid'] != uuid]
            if _safe_at(snap, rest, host, by_uuid, residents, mates):
                dropped.extend(mv for mv in moves if mv['uuid'] == uuid)
                gone.add(uuid)
                moves = [mv for mv in moves if mv['uuid'] != uuid]
                changed = True
                break
    return moves, dropped


def _safe_at(snap, moves, host, by_uuid=None, residents=None, mates=None):
    """Whether every move of ``moves`` into ``host`` can start in order.

    Enough to tell whether an instance of ``host`` may stay there (its
    moves dropped from a plan that was safe): staying only takes room on
    ``host``, so only the moves into ``host`` can be blocked by it. Only
    the moves that touch ``host`` are replayed, against the room of its
    own instances (``residents[host]``; ``by_uuid``: every instance; both
    worked out from ``snap`` when not given, for a caller asking about
    many hosts to do once).
    """
    touching = [mv for mv in moves
                if host in (mv['from_host'], mv['to_host'])]
    if not any(mv['to_host'] == host for mv in touching):
        return True
    if by_uuid is None:
        by_uuid = {i.uuid: i for i in snap.instances}
    ledger = Ledger(snap, [i for i in snap.instances if i.host == host]
                    if residents is None else residents[host], mates)
    loc = {mv['uuid']: (by_uuid[mv['uuid']].host, by_uuid[mv['uuid']].domain)
           for mv in touching}
    for mv in touching:
        inst = by_uuid[mv['uuid']]
        if (mv['to_host'] == host and ledger.blocker(
                inst, host, mv['to_domain'])):
            return False
        _leg(ledger, inst, loc, mv['to_host'], mv['to_domain'])
    return True


def hosts_in_use_after(snap, moves):
    """Hosts holding anything once ``moves`` are done."""
    where = {i.uuid: i.host for i in snap.instances}
    for mv in moves:
        where[mv['uuid']] = mv['to_host']
    return ({h.name for h in snap.hosts if h.other_load}
            | set(where.values()))
