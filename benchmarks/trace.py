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
"""The trace-driven truth: real DPDK lookups, misses per packet by ways.

For each NF of :data:`resq_profiler.trace.model.NFS` (DPDK's rte_lpm,
rte_acl at two rule-set sizes, rte_hash and rte_ipsec_sad, traced under
Valgrind), alone in a class of 1 to 20 ways of ResQ's 45 MB, 20-way LLC
with DDIO's 2 I/O ways: LLC misses per packet (LRU), beside the project's
own testbed (:mod:`resq_profiler.truth`: ResQ Table 1's L3 references per
packet times its footprint miss ratio) at the same ways. Then the
throughput with one way relative to the whole LLC (the trace's cycle
model against the catalog's calibration), the random-replacement
sensitivity at a few ways, and the slowdowns of two mixes sharing one
class.

``--cache-dir DIR`` traces into DIR (default: the user's cache, where a
second run is a file read); the recorded run is made with an empty one,
so its ``trace_seconds`` is a cold run's: every trace made and every
simulation run.
"""

import argparse
import json
import time

from resq_profiler import catalog
from resq_profiler import nfmodel
from resq_profiler.trace import build
from resq_profiler.trace import model
from resq_profiler import truth

ALL_WAYS = tuple(range(1, 21))
POLICY_WAYS = (1, 2, 4, 8)
MIXES = (('MazuNAT', 'LPM'), ('MazuNAT', 'MazuNAT'), ('Efficuts', 'IPsec'))
MIX_WAYS = (2, 4, 8)


def _testbed(name, ways):
    """The project's testbed: Table 1's refs/packet x footprint misses."""
    spec = catalog.get(name)
    nf = truth.truth_nf(spec)
    way = nfmodel.Platform().way_size_bytes
    return {w: spec.l3_refs_per_packet * nf.miss_ratio(w * way)
            for w in ways}


def _parse(argv):
    parser = argparse.ArgumentParser(prog='benchmarks trace')
    parser.add_argument('--packets', type=int, default=model.DEFAULT_PACKETS,
                        help='packets a trace holds (default %(default)s)')
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--nfs', default=','.join(model.names()),
                        help='comma-separated NFs (default: all)')
    parser.add_argument('--ways', default=None,
                        help='comma-separated ways (default 1-20)')
    parser.add_argument('--cache-dir', default=None)
    parser.add_argument('--no-mixes', action='store_true',
                        help='skip the shared-class mixes')
    args = parser.parse_args(argv)
    args.nfs = [model.get(n).name for n in args.nfs.split(',') if n]
    args.ways = (tuple(int(w) for w in args.ways.split(','))
                 if args.ways else ALL_WAYS)
    return args


def main(argv):
    args = _parse(argv)
    why = build.missing()
    if why:
        print('benchmarks trace: cannot trace here: %s' % why)
        return 1
    start = time.monotonic()
    kw = {'packets': args.packets, 'seed': args.seed,
          'cache_dir': args.cache_dir}
    tracing = 0.0
    for name in args.nfs:
        t = time.monotonic()
        print('... tracing %s: %s' % (name, model.get(name).what),
              flush=True)
        model.trace(name, **kw)
        tracing += time.monotonic() - t
    misses, cycles, refs, insns, occupancy = {}, {}, {}, {}, {}
    for name in args.nfs:
        print('... simulating %s at %d way counts' % (name, len(args.ways)),
              flush=True)
        rows = {w: model.solo(name, w, **kw) for w in args.ways}
        misses[name] = {str(w): round(r['llc_misses_per_packet'], 4)
                        for w, r in rows.items()}
        cycles[name] = {str(w): round(r['cycles_per_packet'], 1)
                        for w, r in rows.items()}
        last = rows[max(args.ways)]
        refs[name] = round(last['llc_refs_per_packet'], 3)
        insns[name] = round(last['instructions_per_packet'], 1)
        occupancy[name] = round(last['occupancy_mb'], 2)
    testbed = {name: {str(w): round(v, 4) for w, v in _testbed(
        name, args.ways).items()} for name in args.nfs}

    print()
    print('LLC misses per packet, each NF alone in ways 0..w-1 of a 45 MB, '
          '20-way LLC (2.25 MB a way; DDIO in ways 18-19), LRU, %d packets '
          'of the catalog\'s 100k flows; "tb" is the project\'s testbed '
          '(resq_profiler.truth) at the same ways' % args.packets)
    head = '%-9s %-5s' % ('NF', '')
    print(head + ''.join('%7d' % w for w in args.ways))
    for name in args.nfs:
        print('%-9s %-5s' % (name, 'trace') + ''.join(
            '%7.3f' % misses[name][str(w)] for w in args.ways))
        print('%-9s %-5s' % ('', 'tb') + ''.join(
            '%7.3f' % testbed[name][str(w)] for w in args.ways))
    print()
    print('%-9s %11s %11s %9s %9s %11s %11s' % (
        'NF', 'LLC refs/p', 'Table1 refs', 'insns/p', 'LLC MB',
        'thr 1w/all', 'catalog'))
    relative = {}
    for name in args.nfs:
        one, full = min(args.ways), max(args.ways)
        relative[name] = round(cycles[name][str(full)]
                               / cycles[name][str(one)], 4)
        spec = catalog.get(name)
        print('%-9s %11.2f %11.2f %9.0f %9.2f %11.3f %11.3f' % (
            name, refs[name], spec.l3_refs_per_packet, insns[name],
            occupancy[name], relative[name],
            spec.relative_throughput_one_way))

    policy = {}
    ways = [w for w in POLICY_WAYS if w in args.ways]
    if ways:
        print()
        print('Replacement sensitivity: misses per packet, LRU / random')
        for name in args.nfs:
            policy[name] = {str(w): round(model.misses_per_packet(
                name, w, policy='random', **kw), 4) for w in ways}
            print('%-9s ' % name + '  '.join(
                '%d ways %.3f/%.3f' % (w, misses[name][str(w)],
                                       policy[name][str(w)]) for w in ways))

    mixes = {}
    if not args.no_mixes:
        print()
        print('Two NFs sharing one class (each on its own core): slowdown '
              'of cycles per packet against alone in the same ways')
        for mix in MIXES:
            if not set(mix) <= set(args.nfs):
                continue
            key = '+'.join(model.member_names(mix))
            mixes[key] = {}
            for w in MIX_WAYS:
                slow = model.shared_slowdown(list(mix), w, **kw)
                mixes[key][str(w)] = {k: round(v, 4)
                                      for k, v in slow.items()}
                print('%-22s %2d ways: %s' % (key, w, ', '.join(
                    '%s x%.3f' % kv for kv in slow.items())))

    seconds = time.monotonic() - start
    # For the docs' tables (``figures-rows-table``): one row an NF.
    rows = [dict({'nf': n}, **{'w%d' % w: misses[n][str(w)]
                               for w in args.ways}) for n in args.nfs]
    testbed_rows = [dict({'nf': n}, **{'w%d' % w: testbed[n][str(w)]
                                       for w in args.ways})
                    for n in args.nfs]
    print()
    print('trace benchmark: %.1f s (tracing %.1f s)' % (seconds, tracing))
    figures = {
        'benchmark': 'trace',
        'trace_nfs': args.nfs,
        'trace_what': {n: model.get(n).what for n in args.nfs},
        'trace_seconds': round(seconds, 1),
        'tracing_seconds': round(tracing, 1),
        'trace_packets': args.packets,
        'trace_flows': nfmodel.Traffic().flows,
        'ways': list(args.ways),
        'misses_per_packet': misses,
        'rows': rows,
        'testbed_rows': testbed_rows,
        'testbed_misses_per_packet': testbed,
        'cycles_per_packet': cycles,
        'llc_refs_per_packet': refs,
        'instructions_per_packet': insns,
        'occupancy_mb': occupancy,
        'relative_throughput_one_way': relative,
        # The catalog's figures for the same NFs (ResQ Table 1 and this
        # project's calibration), for the docs to set beside.
        'catalog': {n: {
            'relative_throughput_one_way':
                catalog.get(n).relative_throughput_one_way,
            'l3_refs_per_packet': catalog.get(n).l3_refs_per_packet,
            'working_set_mb': catalog.get(n).working_set_mb,
            'sensitivity': catalog.get(n).sensitivity} for n in args.nfs},
        'random_misses_per_packet': policy,
        'shared_slowdown': mixes,
        'cycle_model': dict(zip(('cpi', 't_l2', 't_llc', 't_mem'),
                                model.cycle_model())),
    }
    print(json.dumps(figures, sort_keys=True))
    return 0
