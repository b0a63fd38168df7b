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
measured), never the ground truth, except the elastic scheme, which, like
E2, measures the running system and reacts.
"""

import functools
import math

from resq_nova.evaluation import cluster
from resq_nova import greedy
from resq_nova import milp
from resq_profiler import catalog
from resq_profiler import nfmodel

NAMES = ('agnostic', 'even_cat', 'prediction', 'elastic', 'resq_greedy',
         'resq_optimal')
# Dobrescu et al.'s predictor overestimates the drop by up to 75% on
# ResQ's hardware (ResQ §6.2, Figure 10).
PREDICTION_OVERESTIMATE = 1.75


def _solo(term):
    return term.profile.peak_mpps


def _first_fit_cores(terms, cores):
    """One instance per solo capacity, first fit on cores only."""
    placed = []
    used = []
    for term in terms:
        k = max(1, math.ceil(term.throughput_mpps / _solo(term) - 1e-9))
        for _ in range(k):
            for server, n in enumerate(used):
                if n < cores:
                    break
            else:
                server = len(used)
                used.append(0)
            used[server] += 1
            placed.append(cluster.Placed(term, server, cluster.ALL_WAYS,
                                         _solo(term)))
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


def _predicted(spec, competitors):
    """Dobrescu-style predicted throughput with shared-LLC competitors."""
    return _predicted_by_name(spec.name, tuple(sorted(c.name for c in
                                                      competitors)))


@functools.lru_cache(maxsize=65536)
def _predicted_by_name(name, competitors):
    """The prediction, memoised on the NF and its competitors' names.

    Dobrescu et al. profile each NF against synthetic competitors of
    tunable LLC pressure and read the drop off that curve at the
    competitors' solo reference rates, every competitor assumed to run
    flat out. Here the profiling run is the NF model with the competitors
    saturating; the drop is then inflated by the overestimate ResQ measured
    for this predictor on current hardware.
    """
    spec = catalog.get(name)
    solo = nfmodel.NFModel(spec).throughput_mpps(cluster.PLATFORM.llc_ways)
    if not competitors:
        return solo
    insts = [nfmodel.Instance(catalog.get(n), cluster.ALL_WAYS)
             for n in (name,) + competitors]
    shared = nfmodel.simulate_server(insts, cluster.PLATFORM, 40)[0]
    drop = 1.0 - shared.throughput_mpps / solo
    return solo * max(0.0, 1.0 - PREDICTION_OVERESTIMATE * drop)


def prediction(terms, cores, ways, **_):
    """Prediction-based first fit (ResQ §6.2 after Dobrescu et al.).

    An instance goes on the first server where the predicted throughput of
    every instance already there stays above the load it carries; another
    instance is added while the term's predicted throughput misses its
    target.
    """
    servers = []  # per server: list of [spec, assigned load]
    placed = []
    for term in terms:
        spec = catalog.get(term.profile.name)
        remaining = term.throughput_mpps
        while remaining > 1e-9:
            for idx in range(len(servers) + 1):
                if idx == len(servers):
                    servers.append([])
                members = servers[idx]
                if len(members) >= cores:
                    continue
                specs = [m[0] for m in members] + [spec]
                ok = True
                for j, (s, load) in enumerate(members):
                    rest = specs[:j] + specs[j + 1:]
                    if _predicted(s, rest) < load - 1e-9:
                        ok = False
                        break
                if not ok:
                    continue
                mine = _predicted(spec, specs[:-1])
                if mine <= 0.05 * spec.mpps:
                    continue
                load = min(remaining, mine)
                members.append([spec, load])
                placed.append(cluster.Placed(term, idx, cluster.ALL_WAYS,
                                             load))
                remaining -= load
                break
    return placed


def elastic(terms, cores, ways, rounds=30, packet_bytes=64, **_):
    """E2-like elastic scaling: measure, add an instance where short."""
    placed = _first_fit_cores(terms, cores)
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


def _greedy_schedule(terms, cores, ways):
    servers = greedy.make_cluster(max(len(terms), 1), cores, ways)
    index = {s.name: i for i, s in enumerate(servers)}
    result = []
    for term in terms:
        _, placements = greedy.admit(term, servers)
        result += [(term, p.ways, index[p.server]) for p in placements]
    return result


def resq_greedy(terms, cores, ways, packet_bytes=64, **_):
    """ResQ's online greedy with CAT and buffer sizing."""
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
