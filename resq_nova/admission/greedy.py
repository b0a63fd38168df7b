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
"""Greedy admission of reserved SLO terms (ResQ §5.3.1).

For one SLO term, given its NF profile:

1. The load cap: the largest load fraction whose p95 latency meets the
   term's target, less a 3% discount for the residual degradation left
   under isolation (ResQ Appendix A).
2. K instances: the target over what one instance sustains under the cap
   with the fair LLC share (usable ways / cores of a server).
3. Ways: every instance starts at the profile's smallest allocation; one
   way at a time is added round-robin until the instances together meet
   the target.
4. Placement: first-fit decreasing, largest instance first, over servers
   with a free core and enough free ways.

:func:`admit_first_fit` is that greedy as the paper states it (steps
1-4, one term at a time). :func:`admit` improves on steps 2-4 while staying
online (one term at a time, in arrival order, knowing nothing of later
terms): it also tries every minimal configuration with K or K+1 instances,
places each best fit on paper, and keeps the one that opens the fewest
servers, then takes the least of the cluster. ``resq-evaluate`` runs both
(the schemes ``resq_greedy_paper`` and ``resq_greedy``) and reports each
one's server count over the proven optimum's (``ratios`` in its JSON).

Memory bandwidth is a second dimension where a term asks for it
(:attr:`SLOTerm.mem_bw_mibps`, MiB/s per instance) and a server has a
limit (:attr:`Server.mem_bw`, ``None``: not limited): an instance goes
only where its bandwidth is free too, and a term that fits the cores and
ways but not the bandwidth is refused as ``memory_bandwidth``.

Admission is all or nothing: a refused term leaves the cluster unchanged
and says which constraint failed. Pure logic, no I/O.
"""

import collections
import dataclasses
import math

from oslo_log import log as logging

from resq_nova.admission import milp
from resq_nova.admission import packing
from resq_profiler import exception as prof_exc

LOG = logging.getLogger(__name__)

DEFAULT_DISCOUNT = 0.03

# Reasons a term can be refused, for callers that branch on them.
LATENCY = 'latency'
INSTANCES = 'instances'
CLUSTER_CAPACITY = 'cluster_capacity'
NO_ROOM = 'no_server_with_room'
PROFILE = 'profile'
# The cores and ways are there, the memory bandwidth is not.
BANDWIDTH = 'memory_bandwidth'


class AdmissionRefused(prof_exc.ResQException):
    """A term cannot be admitted; ``constraint`` names the failed one."""

    msg_fmt = 'SLO term %(term)s refused (%(constraint)s): %(reason)s'

    def __init__(self, term, constraint, reason):
        super().__init__(term=term, constraint=constraint, reason=reason)
        self.term = term
        self.constraint = constraint
        self.reason = reason


@dataclasses.dataclass(frozen=True)
class SLOTerm:
    """A reserved SLO: an NF profile, a throughput and a p95 latency."""

    name: str
    profile: object
    throughput_mpps: float
    latency_p95_us: float
    packet_bytes: int = None
    max_instances: int = None
    # Memory bandwidth (MiB/s) each instance holds from its cache domain
    # (None: the term asks for none).
    mem_bw_mibps: int = None


@dataclasses.dataclass
class Server:
    """A server's capacity for ResQ instances and what is already used."""

    name: str
    cores: int = 9
    ways: int = 18
    used_cores: int = 0
    used_ways: int = 0
    # Memory bandwidth (MiB/s) instances may hold (None: not limited).
    mem_bw: int = None
    used_mem_bw: int = 0

    @property
    def free_cores(self):
        return self.cores - self.used_cores

    @property
    def free_ways(self):
        return self.ways - self.used_ways

    @property
    def free_mem_bw(self):
        """Free bandwidth (MiB/s); ``None`` when not limited."""
        return None if self.mem_bw is None else self.mem_bw - \
            self.used_mem_bw

    def fits(self, ways, mem_bw=0):
        return (self.free_cores >= 1 and self.free_ways >= ways
                and bw_fits(self.free_mem_bw, mem_bw))


def bw_fits(free, need):
    """Whether ``need`` MiB/s fit in ``free`` (``None``: not limited)."""
    return not need or free is None or free >= need


def bw_of(term):
    """MiB/s each instance of ``term`` holds (0 without a demand)."""
    return getattr(term, 'mem_bw_mibps', None) or 0


@dataclasses.dataclass(frozen=True)
class Sizing:
    """How many instances a term needs and the ways of each."""

    term: str
    load_cap: float
    ways: tuple
    per_instance_mpps: tuple

    @property
    def instances(self):
        return len(self.ways)

    @property
    def aggregate_mpps(self):
        return sum(self.per_instance_mpps)


@dataclasses.dataclass(frozen=True)
class Placement:
    term: str
    index: int
    server: str
    ways: int
    mpps: float


def size(term, cores_per_server, ways_per_server,
         discount=DEFAULT_DISCOUNT):
    """Steps 1-3: the load cap, K and the ways of each instance.

    :raises AdmissionRefused: for a latency target below the profile's
        floor, a packet size the profile was not measured with, or more
        instances than the term allows.
    """
    prof = term.profile
    if term.throughput_mpps <= 0 or term.latency_p95_us <= 0:
        raise AdmissionRefused(
            term.name, PROFILE, 'throughput and latency targets must be '
            'positive (got %s Mpps, %s us)' % (
                term.throughput_mpps, term.latency_p95_us))
    if (term.packet_bytes is not None
            and term.packet_bytes != prof.traffic['packet_bytes']):
        raise AdmissionRefused(
            term.name, PROFILE, 'profile %s was measured with %d B packets, '
            'the term asks for %d B; profile the NF with this traffic'
            % (prof.profile_id, prof.traffic['packet_bytes'],
               term.packet_bytes))
    try:
        max_load = prof.max_load_for_latency(term.latency_p95_us)
    except prof_exc.TargetUnreachable as exc:
        raise AdmissionRefused(term.name, LATENCY, str(exc))
    cap = max_load * (1.0 - discount)
    max_ways = min(prof.max_ways, ways_per_server)
    # The fair share is the usable ways over the cores. The paper and the
    # evaluation use 18 usable ways of a 20-way cache (2 for DDIO); the
    # deployed default also keeps [resq_agent] default_group_ways = 1 for
    # the default group, so a 20-way domain offers 17 in Placement and
    # resq-admit sizes with 17 // cores.
    fair = max(min(ways_per_server // max(cores_per_server, 1), max_ways),
               prof.min_ways)
    per_fair = prof.throughput_at(fair) * cap
    k = max(1, math.ceil(term.throughput_mpps / per_fair - 1e-9))
    if term.max_instances is not None and k > term.max_instances:
        raise AdmissionRefused(
            term.name, INSTANCES, 'needs %d instances (%.3f Mpps each at '
            'the fair share of %d ways and %.0f%% load for the latency '
            'target) but at most %d are allowed' % (
                k, per_fair, fair, cap * 100, term.max_instances))
    ways = [min(prof.min_ways, max_ways)] * k

    def aggregate():
        return sum(prof.throughput_at(w) * cap for w in ways)

    i = 0
    while aggregate() < term.throughput_mpps - 1e-9:
        if all(w >= max_ways for w in ways):
            # Cannot happen with K from the fair share, unless the profile
            # is not monotone; one more instance restores progress.
            ways.append(min(prof.min_ways, max_ways))
            continue
        if ways[i % len(ways)] < max_ways:
            ways[i % len(ways)] += 1
        i += 1
    ways.sort(reverse=True)
    return Sizing(term.name, cap, tuple(ways),
                  tuple(prof.throughput_at(w) * cap for w in ways))


def place(sizing, servers, mem_bw=0):
    """Step 4: first-fit decreasing; all instances or none.

    :param servers: list of :class:`Server`, in fill order; updated only
        when every instance fits.
    :param mem_bw: MiB/s of memory bandwidth each instance holds.
    :raises AdmissionRefused: when the cluster lacks cores or ways in
        total, or no server has room for some instance; ``memory_bandwidth``
        when the cores and ways are there but the bandwidth is not.
    """
    need_cores = sizing.instances
    need_ways = sum(sizing.ways)
    free_cores = sum(s.free_cores for s in servers)
    free_ways = sum(s.free_ways for s in servers)
    if need_cores > free_cores or need_ways > free_ways:
        raise AdmissionRefused(
            sizing.term, CLUSTER_CAPACITY, 'needs %d cores and %d ways; the '
            'cluster has %d cores and %d ways free across %d servers; add '
            'servers or lower the throughput target' % (
                need_cores, need_ways, free_cores, free_ways, len(servers)))
    if mem_bw and all(s.free_mem_bw is not None for s in servers):
        free_bw = sum(max(s.free_mem_bw, 0) for s in servers)
        if need_cores * mem_bw > free_bw:
            raise AdmissionRefused(
                sizing.term, BANDWIDTH, 'fits the cores and ways, but needs '
                '%d MiB/s of memory bandwidth (%d instances of %d MiB/s); '
                'the cluster has %d MiB/s free across %d servers; add '
                'servers with memory bandwidth or lower the term\'s '
                'mem_bw_mibps' % (need_cores * mem_bw, need_cores, mem_bw,
                                  free_bw, len(servers)))
    # Tentative use per server index; the servers change only at the end.
    taken = {}

    def free(i):
        cores, ways, bw = taken.get(i, (0, 0, 0))
        server = servers[i]
        free_bw = server.free_mem_bw
        return (server.free_cores - cores, server.free_ways - ways,
                None if free_bw is None else free_bw - bw)

    placements = []
    for index, (ways, mpps) in enumerate(zip(sizing.ways,
                                             sizing.per_instance_mpps)):
        for i, server in enumerate(servers):
            f_cores, f_ways, f_bw = free(i)
            if f_cores >= 1 and f_ways >= ways and bw_fits(f_bw, mem_bw):
                cores, used, bw = taken.get(i, (0, 0, 0))
                taken[i] = (cores + 1, used + ways, bw + mem_bw)
                placements.append(Placement(sizing.term, index, server.name,
                                            ways, mpps))
                break
        else:
            room = [(free(i)[1], s.name) for i, s in enumerate(servers)
                    if free(i)[0] >= 1]
            most, where = max(room) if room else (0, 'no server')
            if most >= ways:
                # (Only a bandwidth can have stopped it.)
                bws = [free(i)[2] for i in range(len(servers))
                       if free(i)[0] >= 1 and free(i)[1] >= ways]
                raise AdmissionRefused(
                    sizing.term, BANDWIDTH, 'instance %d needs a core, %d '
                    'ways and %d MiB/s of memory bandwidth; servers have '
                    'the core and the ways free, but the most memory '
                    'bandwidth any of them has free is %d MiB/s; add '
                    'servers with memory bandwidth or lower the term\'s '
                    'mem_bw_mibps' % (index, ways, mem_bw,
                                      max(b for b in bws if b is not None)))
            raise AdmissionRefused(
                sizing.term, NO_ROOM, 'instance %d needs a core and %d ways; '
                'no server has both free (the most ways with a free core is '
                '%d on %s); fragmentation: the background optimizer can '
                'repack, or add servers' % (index, ways, most, where))
    for i, (cores, ways, bw) in taken.items():
        servers[i].used_cores += cores
        servers[i].used_ways += ways
        servers[i].used_mem_bw += bw
    return placements


def admit_first_fit(term, servers, discount=DEFAULT_DISCOUNT):
    """ResQ's greedy as the paper states it (§5.3.1): size, then place.

    :func:`size`, then :func:`place`: K instances from the fair LLC
    share, ways added round-robin from the profile's smallest allocation
    until the target is met, then the instances, largest first, each on
    the first server (in list order) with a free core and enough free
    ways. Online: one term, in arrival
    order; ``servers`` change only on success. The load cap carries the
    3% discount of the paper's MILP (Appendix A), as every ResQ scheme
    here does, so that both greedies and the optimum share capacities.

    :returns: ``(sizing, placements)``.
    :raises AdmissionRefused: as :func:`size` and :func:`place`.
    """
    shape = servers[0] if servers else Server('none')
    sizing = size(term, shape.cores, shape.ways, discount)
    return sizing, place(sizing, servers, bw_of(term))


_SIZINGS_MEMO = collections.OrderedDict()
_SIZINGS_MEMO_SIZE = 1024


def sizings(term, cores_per_server, ways_per_server,
            discount=DEFAULT_DISCOUNT, extra_instances=1, limit=400):
    """The sizings worth trying for ``term`` (memoised).

    Terms that differ only by name (the SLO sets repeat targets, and a
    tenant admits the same term again) share one enumeration: the answer
    depends on the profile object and the term's numbers, and it is
    recomputed for a different profile object even under the same id.
    """
    key = (id(term.profile), term.throughput_mpps, term.latency_p95_us,
           term.packet_bytes, term.max_instances, cores_per_server,
           ways_per_server, discount, extra_instances, limit)
    hit = _SIZINGS_MEMO.get(key)
    if hit is not None and hit[0] is term.profile:
        _SIZINGS_MEMO.move_to_end(key)
        return [dataclasses.replace(s, term=term.name) for s in hit[1]]
    result = _sizings(term, cores_per_server, ways_per_server, discount,
                      extra_instances, limit)
    _SIZINGS_MEMO[key] = (term.profile, tuple(result))
    if len(_SIZINGS_MEMO) > _SIZINGS_MEMO_SIZE:
        _SIZINGS_MEMO.popitem(last=False)
    return list(result)


def _sizings(term, cores_per_server, ways_per_server, discount,
             extra_instances, limit):
    """:func:`sizings`, computed.

    :func:`size`'s (fair share, round-robin ways), and every minimal
    configuration (multiset of ways whose capped throughputs meet the
    target, none removable) with at most ``extra_instances`` more
    instances than the fewest possible: K or K+1 instances, small or large
    partitions, so the term can fit what the cluster has free.

    :raises AdmissionRefused: as :func:`size`.
    """
    base = size(term, cores_per_server, ways_per_server, discount)
    prof = term.profile
    max_ways = min(prof.max_ways, ways_per_server)
    capacity = {w: prof.throughput_at(w) * base.load_cap
                for w in range(prof.min_ways, max_ways + 1)}
    try:
        configs = packing.configurations(capacity, term.throughput_mpps,
                                         limit)
    except packing.TooManyConfigurations:
        return [base]
    if not configs:
        return [base]
    fewest = min(len(c) for c in configs)
    result = [base]
    for config in sorted(configs, key=lambda c: (len(c), sum(c), c)):
        if len(config) > fewest + extra_instances:
            continue
        if term.max_instances is not None and \
                len(config) > term.max_instances:
            continue
        config = tuple(sorted(config, reverse=True))
        if config != base.ways:
            result.append(Sizing(term.name, base.load_cap, config,
                                 tuple(capacity[w] for w in config)))
    return result


def _split(servers):
    """Indexes of the servers in use and of the empty ones, in order."""
    in_use, empty = [], []
    for i, server in enumerate(servers):
        (in_use if server.used_cores else empty).append(i)
    return in_use, empty


def _best_fit(sizing, servers, split=None, mem_bw=0):
    """Where best fit would put the instances, without changing anything.

    Each instance, largest first, goes to the server already in use that
    it leaves with the least free cores and ways (each as a fraction of
    the server's), ties to the lowest index, else to the first empty
    server it fits. Only the servers in use are scanned (a cluster sized
    for the worst case is mostly empty servers): ``split`` is
    :func:`_split`'s answer for ``servers``, computed once per term. Each
    instance holds ``mem_bw`` MiB/s of its server's memory bandwidth too.

    :returns: ``(servers opened, [server index per instance])`` or None.
    """
    in_use, empty = split if split is not None else _split(servers)
    taken = {}
    opened = 0
    where = []

    def bw_ok(i):
        free = servers[i].free_mem_bw
        return bw_fits(None if free is None
                       else free - taken.get(i, (0, 0, 0))[2], mem_bw)

    for ways in sizing.ways:
        best = None
        # Empty servers this sizing already opened count as in use.
        scan = in_use
        if opened:
            scan = sorted(in_use + [i for i in taken
                                    if not servers[i].used_cores])
        for i in scan:
            server = servers[i]
            cores_t, ways_t, _ = taken.get(i, (0, 0, 0))
            if (server.free_cores - cores_t < 1
                    or server.free_ways - ways_t < ways
                    or (mem_bw and not bw_ok(i))):
                continue
            left = ((server.free_ways - ways_t - ways) / max(server.ways, 1)
                    + (server.free_cores - cores_t - 1)
                    / max(server.cores, 1))
            if best is None or left < best[0]:
                best = (left, i)
        if best is not None:
            i = best[1]
        else:
            i = next((j for j in empty if j not in taken
                      and servers[j].fits(ways, mem_bw)), None)
            if i is None:
                return None
            opened += 1
        cores_t, ways_t, bw_t = taken.get(i, (0, 0, 0))
        taken[i] = (cores_t + 1, ways_t + ways, bw_t + mem_bw)
        where.append(i)
    return opened, where


def prices(servers):
    """What a core and a way cost now: their scarcity on the open servers.

    Each resource is priced by the square of how much of it the servers in
    use already hold (used over total), normalised so the two prices sum
    to 2 (the square sharpens the preference; on the evaluation's sets it
    packs as well as or better than the plain share): when the terms so
    far filled the cores faster than the ways, a term that can trade a
    core for ways (one instance of 4 ways rather than two of 1) should,
    and the other way round. Equal before anything is placed.
    """
    used_c = total_c = used_w = total_w = 0
    for s in servers:
        if s.used_cores or s.used_ways:
            used_c += s.used_cores
            total_c += s.cores
            used_w += s.used_ways
            total_w += s.ways
    u_c = used_c / total_c if total_c else 0.0
    u_w = used_w / total_w if total_w else 0.0
    if u_c + u_w <= 0:
        return 1.0, 1.0
    c, w = u_c * u_c, u_w * u_w
    return 2 * c / (c + w), 2 * w / (c + w)


def admit(term, servers, discount=DEFAULT_DISCOUNT):
    """Size and place one term, online; ``servers`` change only on success.

    Better than ResQ's greedy (:func:`size` then first fit): every sizing
    of :func:`sizings` is placed best fit on paper, and the one that opens
    the fewest empty servers wins, then the one that takes the least of
    the cluster (cores and ways, each as a fraction of a server, priced
    by their scarcity on the servers in use: :func:`prices`), then the
    one with fewer instances. The term
    still knows nothing of later terms. When nothing fits, the refusal is
    :func:`place`'s for :func:`size`'s sizing, with its explanation.

    :returns: ``(sizing, placements)``.
    """
    shape = servers[0] if servers else Server('none')
    options = sizings(term, shape.cores, shape.ways, discount)
    core_price, way_price = prices(servers)
    split = _split(servers)
    mem_bw = bw_of(term)
    best = None
    for sizing in options:
        plan = _best_fit(sizing, servers, split, mem_bw)
        if plan is None:
            continue
        opened, where = plan
        cost = (opened, core_price * sizing.instances / max(shape.cores, 1)
                + way_price * sum(sizing.ways) / max(shape.ways, 1),
                sizing.instances)
        if best is None or cost < best[0]:
            best = (cost, sizing, where)
    if best is None:
        return options[0], place(options[0], servers, mem_bw)
    _, sizing, where = best
    placements = []
    for index, (ways, mpps, i) in enumerate(zip(
            sizing.ways, sizing.per_instance_mpps, where)):
        servers[i].used_cores += 1
        servers[i].used_ways += ways
        servers[i].used_mem_bw += mem_bw
        placements.append(Placement(sizing.term, index, servers[i].name,
                                    ways, mpps))
    return sizing, placements


def make_cluster(count, cores=9, ways=18, prefix='server'):
    """``count`` empty servers named ``<prefix>-000`` and up."""
    if count <= 0:
        raise ValueError('a cluster needs at least one server, got %d'
                         % count)
    if cores <= 0 or ways <= 0:
        raise ValueError('servers need cores and ways (got %d cores, %d '
                         'ways)' % (cores, ways))
    return [Server('%s-%03d' % (prefix, i), cores, ways)
            for i in range(count)]


class BatchRefused(prof_exc.ResQException):
    """Terms admitted together that cannot all be admitted."""

    msg_fmt = ('SLO terms %(terms)s refused together (a batch is admitted '
               'whole or not at all): %(reasons)s')

    def __init__(self, refusals):
        super().__init__(terms=', '.join(r.term for r in refusals),
                         reasons='; '.join('%s (%s): %s' % (
                             r.term, r.constraint, r.reason)
                             for r in refusals))
        self.refusals = refusals


def admit_batch(terms, servers, discount=DEFAULT_DISCOUNT, time_limit=10.0,
                mip_gap=0.0, solve=None):
    """Admit terms that arrive together (a chain, a stack), jointly.

    The configuration/pattern MILP (:mod:`resq_nova.admission.milp`) places
    them on
    top of what the servers already hold, opening the fewest empty
    servers, then taking the least of the cluster; the online greedy's
    plan for the same terms is kept instead when the MILP finds no plan in
    ``time_limit`` or a worse one (it cannot be better than optimal, but
    the greedy may tie it with less taken). All or nothing: on a refusal
    the servers are unchanged.

    :param solve: what solves the MILP (default
        :func:`resq_nova.admission.milp.solve`;
        :mod:`resq_nova.admission.batch.isolated` runs
        it in a child process).
    :returns: ``({term name: (sizing, placements)}, how)``, ``how`` being
        ``'milp'`` or ``'greedy'``.
    :raises BatchRefused: naming every term that does not fit and why.
    """
    shape = servers[0] if servers else Server('none')
    refusals = []
    bases = {}
    for term in terms:
        try:
            bases[term.name] = size(term, shape.cores, shape.ways, discount)
        except AdmissionRefused as exc:
            refusals.append(exc)
    if refusals:
        raise BatchRefused(refusals)
    by_name = {t.name: t for t in terms}
    in_use = [s for s in servers if s.used_cores]
    empty = [s for s in servers if not s.used_cores]
    result = _solve_batch(terms, bases, shape, in_use, empty,
                          solve or milp.solve, time_limit, mip_gap)
    if result is not None:
        over = milp.bandwidth_over(
            result.assignment, {t.name: bw_of(t) for t in terms},
            [s.free_mem_bw for s in in_use + empty])
        if over:
            # (The MILP keeps the bandwidth of all the servers together;
            # this plan over-commits some: the greedy's is used.)
            LOG.info('The joint plan over-commits the memory bandwidth of '
                     '%s; the greedy plans the batch', ', '.join(
                         '%s (%d MiB/s of %d)' % ((in_use + empty)[i].name,
                                                  held, free)
                         for i, (held, free) in over.items()))
            result = None
    # The greedy on a copy as well: the joint plan is kept only when it is
    # at least as good (servers opened, then cluster taken).
    trial = [dataclasses.replace(s) for s in servers]
    greedy_out = {}
    for term in terms:
        try:
            greedy_out[term.name] = admit(term, trial, discount)
        except AdmissionRefused as exc:
            refusals.append(exc)

    core_price, way_price = prices(servers)

    def cost(opened, ways):
        """Servers opened, then the cluster taken.

        A core per instance and its ways, priced by their scarcity as
        :func:`admit` prices them.
        """
        return (opened, sum(core_price / shape.cores
                            + way_price * w / shape.ways for w in ways))

    greedy_cost = None
    if not refusals:
        greedy_cost = cost(
            sum(1 for s, c in zip(servers, trial)
                if c.used_cores and not s.used_cores),
            [p.ways for _, pl in greedy_out.values() for p in pl])
    if result is not None and all(
            by_name[n].max_instances is None
            or len(cfg) <= by_name[n].max_instances
            for n, cfg in result.configs.items()) and (
            greedy_cost is None or cost(result.servers, [
                w for _, w, _ in result.assignment]) <= greedy_cost):
        return _apply_plan(result, in_use + empty, bases, by_name), 'milp'
    # The greedy's plan: the batch is admitted whole or not at all.
    if refusals:
        raise BatchRefused(refusals)
    for real, copy in zip(servers, trial):
        real.used_cores, real.used_ways = copy.used_cores, copy.used_ways
        real.used_mem_bw = copy.used_mem_bw
    return greedy_out, 'greedy'


def _solve_batch(terms, bases, shape, in_use, empty, solve, time_limit,
                 mip_gap):
    """:func:`admit_batch`'s joint plan, or None when there is none.

    The configuration/pattern MILP on each term's capacity curve (its
    sizing's load cap), on top of the free cores and ways of the servers
    in use, opening at most the empty ones.
    """
    curves = {}

    def capacity_of(key):
        return curves[key]

    entries = []
    for term in terms:
        prof = term.profile
        cap = bases[term.name].load_cap
        # (Terms of one group hold the same bandwidth.)
        key = '%s/%.9f/%d' % (prof.profile_id, cap, bw_of(term))
        curves[key] = {w: prof.throughput_at(w) * cap for w in range(
            prof.min_ways, min(prof.max_ways, shape.ways) + 1)}
        entries.append((term.name, term.throughput_mpps, key))
    try:
        return solve(
            milp.groups_from_terms(entries, capacity_of), shape.cores,
            shape.ways, time_limit=time_limit, mip_gap=mip_gap,
            max_servers=len(empty), existing=[
                (s.free_cores, s.free_ways) for s in in_use],
            **_bandwidth_args(terms, in_use, empty))
    except (ValueError, milp.SolverUnavailable):
        return None       # no plan in time (or no solver): the greedy


def _bandwidth_args(terms, in_use, empty):
    """The MILP's bandwidth arguments; none when no term holds any.

    New servers offer the least any empty one does.
    """
    mem_bw = {t.name: bw_of(t) for t in terms if bw_of(t)}
    if not mem_bw:
        return {}
    offers = [s.free_mem_bw for s in empty]
    return {'mem_bw': mem_bw,
            'server_mem_bw': (None if not offers or None in offers
                              else min(offers)),
            'existing_mem_bw': [s.free_mem_bw for s in in_use]}


def _apply_plan(result, targets, bases, by_name):
    """Take the MILP's plan on ``targets`` (servers in use, then empty).

    :returns: ``{term name: (sizing, placements)}``.
    """
    admitted = {}
    counters = {}
    for name, ways, index in result.assignment:
        server = targets[index]
        server.used_cores += 1
        server.used_ways += ways
        server.used_mem_bw += bw_of(by_name[name])
        i = counters.get(name, 0)
        counters[name] = i + 1
        cap = bases[name].load_cap
        mpps = by_name[name].profile.throughput_at(ways) * cap
        admitted.setdefault(name, []).append(
            Placement(name, i, server.name, ways, mpps))
    out = {}
    for name, placements in admitted.items():
        ways = tuple(p.ways for p in placements)
        out[name] = (Sizing(name, bases[name].load_cap, ways,
                            tuple(p.mpps for p in placements)),
                     placements)
    return out
