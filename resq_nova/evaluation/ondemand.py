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
"""On-demand NFs with varying traffic through the three local policies.

One server, simulated with the NF model of :mod:`resq_profiler.nfmodel`
(the same ground truth as the rest of the evaluation): on-demand NFs share
a lease of ways; each period every NF's offered load moves (a sine with
its own phase plus noise, so the NFs peak at different times), the model
gives each NF its latency, LLC occupancy and misses under the current
masks, and the local scheduler (:class:`resq_agent.ondemand.scheduler.
LocalScheduler`) reacts as it would on a host. Side by side for ResQ's
max-min procedure, Durner et al.'s min-max and one shared class:

* ``violation_pct``: NF-periods whose p95 latency is above the target;
* ``ways_isolated``: mean ways per period in classes of one NF;
* ``moves``: mask changes (each costs an NF part of its warm cache);
* ``escalations``: NFs the scheduler handed to the central side.

The target of an NF is its p95 latency at 90% of what it can do with an
even share of the lease (ResQ §6 sets targets at the latency of the NF
alone, this is the on-demand counterpart: what a fair share sustains).
"""

import math
import random

from resq_agent.ondemand import model
from resq_agent.ondemand import scheduler as sched_mod
from resq_profiler import catalog
from resq_profiler import nfmodel

POLICIES = sched_mod.POLICIES
MIX = ('LPM', 'MazuNAT', 'Stats', 'EndRE', 'Snort', 'Efficuts', 'IPsec',
       'Firewall')
TARGET_LOAD = 0.9


def _scenario(nfs, lease_ways, seed, mean_load, platform):
    rnd = random.Random(seed)
    fair = max(lease_ways // nfs, 1)
    out = []
    for i in range(nfs):
        spec = catalog.get(MIX[i % len(MIX)])
        m = nfmodel.NFModel(spec, platform)
        cap = m.throughput_mpps(fair)
        out.append({
            'uuid': 'nf-%02d-%s' % (i, spec.name.lower()),
            'spec': spec,
            'model': m,
            'mean_mpps': cap * mean_load * rnd.uniform(0.8, 1.1),
            'phase': rnd.uniform(0, 2 * math.pi),
            'target_us': m.latency_p95_us(TARGET_LOAD),
        })
    return out


def _partitions(lease, masks, uuids):
    """``{uuid: frozenset(ways)}`` from the scheduler's masks."""
    part = {}
    for mask, cls in masks:
        ways = frozenset(b for b in range(mask.bit_length())
                         if mask >> b & 1)
        for u in cls.members:
            part[u] = ways
    whole = frozenset(range(lease.first_way, lease.first_way + lease.ways))
    return {u: part.get(u, whole) for u in uuids}


def run_policy(policy, nfs=8, lease_ways=16, classes=8, periods=60,
               period_s=5.0, settle_s=5.0, seed=0, mean_load=0.75,
               swing=0.2, noise=0.05, high_miss_bw=1e8, platform=None):
    """Simulate one policy; returns its figures (a dict).

    ``rounds`` counts the re-plans before the scheduler first found its
    plan stable (with ``swing`` and ``noise`` 0, the rounds to converge).
    """
    platform = platform or nfmodel.Platform()
    if nfs < 1 or lease_ways < 1 or classes < 1 or periods < 1:
        raise ValueError('the on-demand simulation needs at least one NF, '
                         'way, class and period (got %d, %d, %d, %d)' % (
                             nfs, lease_ways, classes, periods))
    if lease_ways > platform.llc_ways - platform.io_ways:
        raise ValueError('a lease of %d ways does not fit the %d-way '
                         'platform beside its %d I/O ways' % (
                             lease_ways, platform.llc_ways,
                             platform.io_ways))
    lease = model.Lease(0, 0, lease_ways, classes, 1,
                        platform.way_size_bytes)
    scen = _scenario(nfs, lease_ways, seed, mean_load, platform)
    rnd = random.Random(seed + 1)
    nf_objs = [model.NF(s['uuid'], s['target_us']) for s in scen]
    sched = sched_mod.LocalScheduler(policy, settle_s=settle_s,
                                     high_miss_bw=high_miss_bw)
    decision = sched.update(lease, nf_objs, {}, 0.0)
    masks = decision.masks
    violations = moves = isolated = 0
    rounds = None
    escalated = set()
    for t in range(1, periods + 1):
        part = _partitions(lease, masks, [s['uuid'] for s in scen])
        instances = []
        for s in scen:
            load = s['mean_mpps'] * (1 + swing * math.sin(
                2 * math.pi * t / 24.0 + s['phase'])) * (
                1 + rnd.gauss(0, noise))
            instances.append(nfmodel.Instance(
                s['spec'], part[s['uuid']], offered_mpps=max(load, 0.0)))
        outcomes = nfmodel.simulate_server(instances, platform,
                                           iterations=30)
        readings = {}
        for s, o in zip(scen, outcomes):
            misses = (o.throughput_mpps * 1e6 * s['spec'].l3_refs_per_packet
                      * o.miss_ratio)
            readings[s['uuid']] = model.Reading(
                o.latency_p95_us, o.occupancy_bytes,
                misses * nfmodel.CACHE_LINE)
            if o.latency_p95_us > s['target_us']:
                violations += 1
        decision = sched.update(lease, nf_objs, readings, t * period_s)
        if rounds is None and decision.state == 'stable':
            rounds = sched.replans
        if decision.changed:
            old = dict((c.members, m) for m, c in masks)
            moves += sum(1 for m, c in decision.masks
                         if old.get(c.members) != m)
            masks = decision.masks
        isolated += sum(c.ways for _, c in masks if len(c.members) == 1)
        escalated.update(u for u, _ in decision.escalate)
    return {
        'violation_pct': round(100.0 * violations / (periods * nfs), 2),
        'ways_isolated': round(isolated / periods, 2),
        'moves': moves,
        'escalations': len(escalated),
        'classes': len(masks),
        'rounds': rounds,
    }


def evaluate(nfs=8, lease_ways=16, classes=8, periods=60, seed=0,
             policies=POLICIES, progress=None):
    """Every policy on the same scenario: the ``on_demand`` document."""
    doc = {'config': {'nfs': nfs, 'lease_ways': lease_ways,
                      'classes': classes, 'periods': periods,
                      'seed': seed, 'mix': list(MIX[:nfs])},
           'policies': {}}
    for name in policies:
        doc['policies'][name] = run_policy(name, nfs, lease_ways, classes,
                                           periods, seed=seed)
        if progress:
            progress('on-demand: %s policy simulated' % name)
    return doc


def table(doc):
    """The figures as text, one policy a line."""
    lines = ['%-8s %10s %10s %6s %6s %7s' % ('policy', 'violation%',
                                             'iso ways', 'moves', 'esc',
                                             'rounds')]
    for name, f in doc['policies'].items():
        lines.append('%-8s %10.2f %10.2f %6d %6d %7s' % (
            name, f['violation_pct'], f['ways_isolated'], f['moves'],
            f['escalations'], f['rounds']))
    return '\n'.join(lines)
