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
"""The placement schemes ResQ §6 compares, each a function of an SLO set.

Every scheme returns a list of :class:`~resq_nova.evaluation.cluster.Placed`
instances on servers numbered from 0. They see profiles (what the profiler
measured from the testbed), or for the prediction baseline what its own
profiling runs measured, never the ground truth, except the elastic scheme,
which, like E2, measures the running system and reacts.
"""

import math

from resq_nova.admission import greedy
from resq_nova.admission import milp
from resq_nova.evaluation import cluster
from resq_nova.evaluation import dobrescu
from resq_nova.evaluation import slomo as slomo_mod
from resq_profiler import catalog
from resq_profiler import exception
from resq_profiler import nfmodel

NAMES = ('agnostic', 'even_cat', 'prediction', 'slomo', 'elastic',
         'resq_greedy_paper', 'resq_greedy', 'resq_optimal')

# What each scheme is called in figures and text. ``resq_greedy`` is
# resq-nova's improved greedy (its key is kept for older documents);
# ``resq_greedy_paper`` is ResQ's greedy as §5.3.1 states it.
LABELS = {
    'agnostic': 'Contention-agnostic', 'even_cat': 'Even CAT split',
    'prediction': 'Prediction-based', 'slomo': 'SLOMO prediction',
    'elastic': 'E2-like elastic',
    'resq_greedy_paper': 'ResQ greedy (paper)',
    'resq_greedy': 'resq-nova greedy', 'resq_optimal': 'ResQ optimal',
}


def _solo(term):
    return term.profile.peak_mpps


def _solo_load_cap(term):
    """The load one instance may carry alone within the latency target.

    What a contention-agnostic operator reads off the NF's solo run
    (ResQ §6.1 measures each NF's solo throughput and latency first).
    """
    try:
        return max(term.profile.max_load_for_latency(term.latency_p95_us),
                   0.05)
    except exception.TargetUnreachable:
        return 0.05


def _first_fit_cores(terms, cores, latency_aware=True):
    """One instance per solo capacity, first fit on cores only.

    :param latency_aware: size with the solo latency curve too (the
        load one instance carries within the latency target alone);
        otherwise by solo throughput only, as E2 scales.
    """
    placed = []
    used = []
    for term in terms:
        per = _solo(term) * (_solo_load_cap(term) if latency_aware else 1.0)
        k = max(1, math.ceil(term.throughput_mpps / per - 1e-9))
        for _ in range(k):
            for server, n in enumerate(used):
                if n < cores:
                    break
            else:
                server = len(used)
                used.append(0)
            used[server] += 1
            placed.append(cluster.Placed(term, server, cluster.ALL_WAYS,
                                         per))
    return placed


def agnostic(terms, cores, ways, **_):
    """Contention-agnostic first fit: the whole LLC shared, solo sizing."""
    return _first_fit_cores(terms, cores)


def even_cat(terms, cores, ways, **_):
    """The same placement with the usable LLC split evenly by CAT."""
    placed = _first_fit_cores(terms, cores)
    by_server = {}
    for p in placed:
        by_server.setdefault(p.server, []).append(p)
    for members in by_server.values():
        share = ways // len(members)
        for p, part in zip(members, cluster.contiguous_partitions(
                [share] * len(members))):
            p.partition = part
    return placed


def prediction(terms, cores, ways, packet_bytes=64, predictor=None, **_):
    """Prediction-based first fit (ResQ §6.2 after Dobrescu et al.).

    An instance goes on the first server where the predicted throughput of
    every instance already there stays above the load it carries; another
    instance is added while the term's predicted throughput misses its
    target. Predictions come from :class:`dobrescu.Predictor`, which
    profiles each NF against synthetic competitors; latency is not
    predicted (nor was it by the original).

    :param predictor: a :class:`dobrescu.Predictor` (a noiseless one is
        made when missing).
    """
    if predictor is None:
        predictor = dobrescu.Predictor(packet_bytes=packet_bytes)
    return _predicted_first_fit(terms, cores, predictor)


def slomo(terms, cores, ways, packet_bytes=64, slomo_predictor=None, **_):
    """The prediction scheme's first fit with SLOMO's predictor.

    :param slomo_predictor: a :class:`slomo_mod.Predictor` (a noiseless
        one is made when missing).
    """
    if slomo_predictor is None:
        slomo_predictor = slomo_mod.Predictor(packet_bytes=packet_bytes)
    return _predicted_first_fit(terms, cores, slomo_predictor)


def _predicted_first_fit(terms, cores, predictor):
    """First fit on predicted throughput (see :func:`prediction`)."""
    servers = []  # per server: list of [nf name, assigned load, Placed]
    placed = []
    for term in terms:
        name = catalog.get(term.profile.name).name
        solo = predictor.solo_mpps(name)
        remaining = term.throughput_mpps
        while remaining > 1e-9:
            for idx in range(len(servers) + 1):
                if idx == len(servers):
                    servers.append([])
                members = servers[idx]
                if len(members) >= cores:
                    continue
                names = [m[0] for m in members] + [name]
                ok = True
                for j, (other, load, _) in enumerate(members):
                    rest = names[:j] + names[j + 1:]
                    if predictor.predict(other, rest) < load - 1e-9:
                        ok = False
                        break
                if not ok:
                    continue
                mine = predictor.predict(name, names[:-1])
                if mine <= 0.05 * solo:
                    continue
                load = min(remaining, mine)
                p = cluster.Placed(term, idx, cluster.ALL_WAYS, load)
                members.append([name, load, p])
                placed.append(p)
                remaining -= load
                break
    # What the predictor says each instance can carry where it ended up.
    for members in servers:
        names = [m[0] for m in members]
        for j, (name, _, p) in enumerate(members):
            p.predicted_mpps = predictor.predict(name,
                                                 names[:j] + names[j + 1:])
    return placed


def elastic(terms, cores, ways, rounds=30, packet_bytes=64, **_):
    """E2-like elastic scaling: measure, add an instance where short.

    E2 scales on throughput: it starts from solo throughput and knows no
    latency targets.
    """
    placed = _first_fit_cores(terms, cores, latency_aware=False)
    for _ in range(rounds):
        outcome = cluster.ground_truth(placed, packet_bytes)
        short = [t for t in terms
                 if outcome[t.name].delivered_mpps
                 < t.throughput_mpps * 0.99]
        if not short:
            break
        load = {}
        for p in placed:
            load[p.server] = load.get(p.server, 0) + 1
        for term in short:
            server = next((s for s in sorted(load) if load[s] < cores),
                          max(load) + 1)
            load[server] = load.get(server, 0) + 1
            placed.append(cluster.Placed(term, server, cluster.ALL_WAYS,
                                         _solo(term)))
    return placed


def _resq_placed(term_instances, packet_bytes):
    """CAT partitions and sized DMA buffers for ``(term, ways, server)``."""
    by_server = {}
    for term, ways, server in term_instances:
        by_server.setdefault(server, []).append((term, ways))
    placed = []
    for server, members in sorted(by_server.items()):
        parts = cluster.contiguous_partitions([w for _, w in members])
        buffers = nfmodel.sized_buffers(cluster.PLATFORM, packet_bytes,
                                        len(members))
        for (term, w), part in zip(members, parts):
            cap = term.profile.throughput_at(w) * _load_cap(term)
            placed.append(cluster.Placed(term, server, part, cap, buffers))
    return placed


def _load_cap(term, discount=greedy.DEFAULT_DISCOUNT):
    return term.profile.max_load_for_latency(term.latency_p95_us) * (
        1 - discount)


def _schedule(terms, admit, server_count, cores, ways):
    """Each term admitted by ``admit`` on ``server_count`` empty servers."""
    servers = greedy.make_cluster(max(server_count, 1), cores, ways)
    index = {s.name: i for i, s in enumerate(servers)}
    result = []
    for term in terms:
        _, placements = admit(term, servers)
        result += [(term, p.ways, index[p.server]) for p in placements]
    return result


def _greedy_schedule(terms, cores, ways):
    return _schedule(terms, greedy.admit, len(terms), cores, ways)


def _paper_greedy_schedule(terms, cores, ways):
    """ResQ §5.3.1's greedy, term by term in arrival order.

    The cluster has a server per instance the terms' sizings ask for, so
    that first fit always finds room: what it opens is what it needs.
    """
    count = sum(greedy.size(t, cores, ways).instances for t in terms)
    return _schedule(terms, greedy.admit_first_fit, count, cores, ways)


def resq_greedy_paper(terms, cores, ways, packet_bytes=64, **_):
    """ResQ's greedy as the paper states it, with CAT and buffer sizing.

    §5.3.1: K instances from the fair LLC share, ways round-robin until
    the target is met, first-fit decreasing over the servers
    (:func:`resq_nova.admission.greedy.admit_first_fit`).
    """
    return _resq_placed(_paper_greedy_schedule(terms, cores, ways),
                        packet_bytes)


def resq_greedy(terms, cores, ways, packet_bytes=64, **_):
    """resq-nova's online greedy with CAT and buffer sizing.

    :func:`resq_nova.admission.greedy.admit`: the paper's sizing and every
    minimal configuration with K or K+1 instances, each placed best fit on
    paper; the one that opens the fewest servers wins, then the one taking
    the least of the cluster. The scheme keeps its historical key
    (``resq_greedy``) so that JSON documents stay comparable; it is
    labelled "resq-nova greedy".
    """
    return _resq_placed(_greedy_schedule(terms, cores, ways), packet_bytes)


def resq_optimal(terms, cores, ways, packet_bytes=64, time_limit=60.0,
                 mip_gap=0.0, config_limit=2000, stats=None, **_):
    """ResQ's optimal schedule (the MILP), warm-started from the greedy."""
    greedy_sched = _greedy_schedule(terms, cores, ways)
    configs, servers = {}, {}
    for term, w, server in greedy_sched:
        configs.setdefault(term.name, []).append(w)
        servers.setdefault(server, []).append(w)
    by_name = {t.name: t for t in terms}
    keys = {}

    def capacity_of(key):
        term = keys[key]
        cap = _load_cap(term)
        top = min(term.profile.max_ways, ways)
        return {w: term.profile.throughput_at(w) * cap
                for w in range(term.profile.min_ways, top + 1)}

    rows = []
    for t in terms:
        key = '%s/%g' % (t.profile.profile_id, t.latency_p95_us)
        keys[key] = t
        rows.append((t.name, t.throughput_mpps, key))
    groups = milp.groups_from_terms(rows, capacity_of)
    result = milp.solve(groups, cores, ways, time_limit=time_limit,
                        mip_gap=mip_gap, config_limit=config_limit,
                        warm_start=(configs, list(servers.values())))
    if stats is not None:
        stats.update(gap_pct=result.gap_pct, lower_bound=result.lower_bound,
                     greedy_servers=len(servers),
                     milp_servers=result.servers, status=result.status,
                     solve_s=round(result.build_s + result.solve_s, 3),
                     solver_only_s=round(result.solve_s, 3))
    return _resq_placed([(by_name[n], w, s) for n, w, s in result.assignment],
                        packet_bytes)


SCHEMES = {name: globals()[name] for name in NAMES}
