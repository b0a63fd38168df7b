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
"""The trace-driven truth's public API.

:func:`misses_per_packet`, :func:`cycles_per_packet` (one NF alone in a
class of ``ways`` ways) and :func:`shared_slowdown` (several NFs in one
class) trace DPDK's lookup code in the harness (once per NF, seed, packet
count and harness source) and replay the traces through :mod:`.llc`.
Traces and results are cached on disk (:func:`.build.cache_dir`), keyed
by the sources' hashes and every parameter, so a repeated call is a file
read.

**What runs.** For each NF of :data:`NFS`, ``harness/nf.c`` builds its
table with DPDK's library, draws the catalog's 100k flows and runs
``packets`` 64 B packets through a modelled NIC ring and the lookup; the
trace covers only those packets (table building, warm-up and the traffic
generator are left out). The simulator replays each trace twice: the
first pass warms the cache, the second is counted (a trace loops, so
the second pass finds the lines the first left, as a steady state would).

**Cycle model** (per packet)::

    cycles = instructions * CPI + L2 hits * T_L2 + LLC hits * T_LLC
             + LLC misses * T_MEM

The instructions are the NF's own (the tracer counts them); CPI is the
cost of an instruction whose data is in L1, a stated choice of 0.5 (IPC
2; ResQ Table 1's IPCs, memory stalls included, range 0.59-3.31 with a
median of 1.61). The
latencies are unloaded ones measured on a Broadwell-EP Xeon (E5-2699 v4,
the same die as ResQ's E5-2695 v4) with LMBench: L2 12-15 cycles, L3
38-51 cycles, DRAM about 95 ns (AnandTech, "Sizing Up Servers: Intel's
Skylake-SP Xeon versus AMD's EPYC 7000", 2017, memory subsystem latency);
T_MEM is 95 ns at the platform's clock. Every miss is paid in full: no
memory-level parallelism, no prefetching, no queueing at the memory
controller.
"""

import dataclasses
import hashlib
import json
import os
import subprocess
import time

from resq_profiler import exception
from resq_profiler import nfmodel
from resq_profiler.trace import build
from resq_profiler.trace import llc

CPI = 0.5
T_L2 = 12.0
T_LLC = 45.0
T_MEM_NS = 95.0

# Packets a trace holds: 5 per flow at the catalog's 100k flows, so that
# 99% of the flows appear in it.
DEFAULT_PACKETS = 500000
EAL_MEMORY_MB = 768


@dataclasses.dataclass(frozen=True)
class TracedNF:
    """One NF the harness runs: its catalog name, mode and table size."""

    name: str
    mode: str
    size: int
    what: str


NFS = {nf.name: nf for nf in (
    TracedNF('LPM', 'lpm', 200000,
             'rte_lpm (DIR-24-8), 200k prefixes shaped like a BGP table'),
    TracedNF('Efficuts', 'acl', 32000,
             'rte_acl 5-tuple classifier, 32k ClassBench-like rules'),
    TracedNF('Firewall', 'acl', 250,
             'rte_acl 5-tuple classifier, 250 rules'),
    TracedNF('MazuNAT', 'hash', 1,
             'rte_hash 5-tuple flow table (a flow each) and 128 B of NAT '
             'state a flow'),
    TracedNF('IPsec', 'sad', 4096,
             'rte_ipsec_sad (SPI, DIP, SIP), 4096 SAs, 128 B of state an '
             'SA'),
)}


def get(name):
    """The traced NF called ``name`` (case-insensitive)."""
    for key, nf in NFS.items():
        if key.lower() == str(name).lower():
            return nf
    raise exception.UnknownNF(name=name, known=', '.join(sorted(NFS)))


def names():
    return list(NFS)


def _key(doc):
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()
                          ).hexdigest()


def _cpu():
    try:
        return min(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return 0


def trace(nf_name, packets=DEFAULT_PACKETS, seed=0, flows=None,
          cache_dir=None, size=None):
    """The path of ``nf_name``'s trace, traced now if not cached.

    ``flows`` defaults to the catalog's traffic (100k flows), ``size``
    (prefixes, rules or SAs) to the NF's in :data:`NFS`; tests make both
    small.

    :raises resq_profiler.trace.build.BuildError: when the machine lacks
        gcc, Valgrind or DPDK, or the harness fails.
    """
    nf = get(nf_name)
    flows = int(flows or nfmodel.Traffic().flows)
    size = int(size or nf.size)
    directory = build.cache_dir(cache_dir)
    params = {'harness': build.source_hash('nf.c'),
              'tool': build.source_hash('vgtool.c'), 'mode': nf.mode,
              'size': size, 'flows': flows, 'packets': int(packets),
              'seed': int(seed)}
    path = os.path.join(directory, '%s-%s.trace' % (
        nf.name, _key(params)[:20]))
    if os.path.exists(path):
        return path
    binary = build.harness(directory)
    vglib = build.tool(directory)
    tmp = '%s.%d.tmp' % (path, os.getpid())
    cmd = ['valgrind', '-q', '--tool=' + build.TOOL, '--out=' + tmp,
           binary, '-l', str(_cpu()), '--no-huge', '--no-pci',
           '-m', str(EAL_MEMORY_MB), '--no-telemetry', '--log-level=error',
           '--file-prefix=resqtrace%d' % os.getpid(), '--', nf.mode,
           str(flows), str(int(packets)), str(int(seed)), str(size)]
    env = dict(os.environ, VALGRIND_LIB=vglib)
    start = time.monotonic()
    try:
        out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    except OSError as exc:
        raise build.BuildError('valgrind: %s' % exc)
    try:
        if out.returncode:
            raise build.BuildError('the %s harness failed (%d): %s' % (
                nf.name, out.returncode, out.stderr[-2000:]))
        with open(path + '.json', 'w') as f:
            json.dump(dict(params, nf=nf.name, command=cmd[2:],
                           seconds=round(time.monotonic() - start, 2),
                           output=out.stdout + out.stderr), f, indent=1)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def cycle_model(platform=None):
    """``(CPI, T_L2, T_LLC, T_MEM)`` in core cycles on ``platform``."""
    platform = platform or nfmodel.Platform()
    return (CPI, T_L2, T_LLC, T_MEM_NS * platform.cpu_ghz)


def _simulate(nf_names, seeds, masks, packets, cache_dir, platform,
              policy):
    geometry = llc.Geometry.of(platform, policy=policy)
    paths = [trace(n, packets, s, cache_dir=cache_dir)
             for n, s in zip(nf_names, seeds)]
    cycles = cycle_model(platform)
    directory = build.cache_dir(cache_dir)
    key = _key({'traces': [os.path.basename(p) for p in paths],
                'masks': list(masks), 'geometry': geometry.as_dict(),
                'cycles': cycles, 'packets': int(packets),
                'simulator': build.source_hash('llcsim.c')})
    path = os.path.join(directory, 'sim-%s.json' % key[:24])
    if os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    out = llc.simulate(geometry, list(zip(paths, masks)), cycles,
                       warm=int(packets), measure=int(packets),
                       directory=directory)
    for doc in out:
        n = max(doc['packets'], 1)
        doc['llc_misses_per_packet'] = doc['llc_misses'] / n
        doc['llc_refs_per_packet'] = (doc['llc_hits']
                                      + doc['llc_misses']) / n
        doc['cycles_per_packet'] = doc['cycles'] / n
        doc['instructions_per_packet'] = doc['insns'] / n
        doc['occupancy_mb'] = doc['occupancy'] * llc.LINE / nfmodel.MIB
    tmp = '%s.%d.tmp' % (path, os.getpid())
    with open(tmp, 'w') as f:
        json.dump(out, f)
    os.replace(tmp, path)
    return out


def _check_ways(ways, platform):
    platform = platform or nfmodel.Platform()
    if not 1 <= int(ways) <= platform.llc_ways:
        raise ValueError('ways must be 1-%d, got %r' % (platform.llc_ways,
                                                        ways))
    return int(ways)


def solo(nf_name, ways, packets=DEFAULT_PACKETS, seed=0, cache_dir=None,
         platform=None, policy='lru'):
    """``nf_name`` alone in a class of ways ``0 .. ways-1``.

    :returns: the simulator's counts (:func:`.llc.simulate`) with
        ``llc_misses_per_packet``, ``llc_refs_per_packet``,
        ``cycles_per_packet``, ``instructions_per_packet`` and
        ``occupancy_mb``.
    """
    ways = _check_ways(ways, platform)
    return _simulate([get(nf_name).name], [seed],
                     [llc.way_mask(0, ways)], packets, cache_dir, platform,
                     policy)[0]


def misses_per_packet(nf_name, ways, packets=DEFAULT_PACKETS, seed=0,
                      cache_dir=None, platform=None, policy='lru'):
    """LLC misses per packet of ``nf_name`` alone with ``ways`` ways."""
    return solo(nf_name, ways, packets, seed, cache_dir, platform,
                policy)['llc_misses_per_packet']


def cycles_per_packet(nf_name, ways, packets=DEFAULT_PACKETS, seed=0,
                      cache_dir=None, platform=None, policy='lru'):
    """Core cycles per packet of ``nf_name`` alone with ``ways`` ways.

    From the module's cycle model (see the module's docstring).
    """
    return solo(nf_name, ways, packets, seed, cache_dir, platform,
                policy)['cycles_per_packet']


def member_names(members):
    """Keys for a mix: the NF's name, ``#2``, ``#3`` ... on repeats."""
    seen, out = {}, []
    for m in members:
        name = get(m).name
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1
                   else '%s#%d' % (name, seen[name]))
    return out


def _seeds(members, seed):
    seen, out = {}, []
    for m in members:
        name = get(m).name
        out.append(seed + seen.get(name, 0))
        seen[name] = seen.get(name, 0) + 1
    return out


def shared(members, ways, seed=0, packets=DEFAULT_PACKETS, cache_dir=None,
           platform=None, policy='lru'):
    """The members of a mix sharing one class of ways ``0 .. ways-1``.

    Each member runs on its own core. The first instance of an NF runs
    its trace of ``seed``, a second one ``seed + 1`` (its own table and
    flows), and so on. Returns ``{member: counts}`` as :func:`solo`
    does.
    """
    ways = _check_ways(ways, platform)
    if not members:
        raise ValueError('a mix needs at least one member')
    keys = member_names(members)
    out = _simulate([get(m).name for m in members], _seeds(members, seed),
                    [llc.way_mask(0, ways)] * len(members), packets,
                    cache_dir, platform, policy)
    return dict(zip(keys, out))


def shared_slowdown(members, ways, seed=0, packets=DEFAULT_PACKETS,
                    cache_dir=None, platform=None, policy='lru'):
    """``{member: slowdown}`` of a mix sharing one class of ``ways`` ways.

    A member's slowdown is its cycles per packet in the mix over its
    cycles per packet alone in the same class (1.0: no slowdown).
    """
    mix = shared(members, ways, seed, packets, cache_dir, platform, policy)
    out = {}
    seeds = _seeds(members, seed)
    for i, (key, doc) in enumerate(mix.items()):
        alone = solo(members[i], ways, packets, seeds[i], cache_dir,
                     platform, policy)
        out[key] = doc['cycles_per_packet'] / alone['cycles_per_packet']
    return out
