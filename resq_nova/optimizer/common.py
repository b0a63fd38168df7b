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
"""What every stage of the plan shares: the result, the fixed instances.

The stages (:mod:`bound`, :mod:`heuristic`, :mod:`model`,
:mod:`ordering`) import this module and :mod:`snapshot`, never each
other's later stages nor :mod:`planner`; see the contributor's
``optimizer-pipeline`` page.
"""

import contextlib
import dataclasses
import gc
import threading
import time


@dataclasses.dataclass
class Result:
    hosts_before: int
    hosts_after: int
    lower_bound: int
    gap_pct: float
    # uuid -> (host, domain) for the instances that move
    targets: dict
    moves_lower_bound: int
    status: str
    build_s: float
    solve_s: float
    # uuid -> reason of the instances that cannot move
    fixed: dict


def fixed_instances(snap):
    """``{uuid: reason}`` of the instances the plan must leave in place."""
    fixed = {}
    down = {h.name for h in snap.hosts if h.down}
    for inst in snap.instances:
        if not inst.migratable:
            fixed[inst.uuid] = inst.reason or 'not migratable'
        elif inst.host in down:
            fixed[inst.uuid] = ('its host %s has its compute service down'
                                % inst.host)
    for g in snap.server_groups:
        if g.policy == 'affinity':
            for m in g.members:
                fixed.setdefault(m, 'member of affinity group %s (Nova '
                                 'keeps its members on one host)'
                                 % (g.id or ','.join(g.members)))
    return fixed


@dataclasses.dataclass
class Hint:
    """What the cheap part found: the pooled bound and the heuristic plan."""
    lower: int
    targets: dict
    passes: int


def gap_pct(value, lower):
    """How far ``value`` may be above the proven ``lower``, in percent."""
    return (value - lower) / value * 100.0 if value else 0.0


def unchanged(snap, hosts_before, fixed, started, status):
    return Result(hosts_before=hosts_before, hosts_after=hosts_before,
                  lower_bound=0, gap_pct=0.0, targets={},
                  moves_lower_bound=0, status=status,
                  build_s=time.monotonic() - started, solve_s=0.0,
                  fixed=fixed)


_GC_LOCK = threading.Lock()
_GC_HELD = [0, False]       # holders, whether it was enabled before them


@contextlib.contextmanager
def no_gc():
    """The cyclic garbage collector off while the block runs.

    Reading a snapshot and planning on it build millions of small objects
    and free few; each full collection meanwhile walks every one of them
    (a third of the time of reading a snapshot of half a million
    instances). Reference counting still frees what is dropped; cycles
    wait for the collector to be back on, when the last holder (of any
    thread) leaves the block, if it was on before the first.
    """
    with _GC_LOCK:
        if not _GC_HELD[0]:
            _GC_HELD[1] = gc.isenabled()
            gc.disable()
        _GC_HELD[0] += 1
    try:
        yield
    finally:
        with _GC_LOCK:
            _GC_HELD[0] -= 1
            if not _GC_HELD[0] and _GC_HELD[1]:
                gc.enable()
