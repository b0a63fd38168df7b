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
"""resq-nova plugins for nova-scheduler."""

import collections
import functools
import itertools
import weakref

from oslo_config import cfg

from resq_common import extra_specs
from resq_nova import conf as resq_conf

CONF = cfg.CONF


def resq_request(spec_obj):
    """The ResQ request of a RequestSpec: ResQRequest, None, or an error.

    :returns: ``(request, None)``, ``(None, None)`` for non-ResQ flavors, or
        ``(None, reason)`` when the flavor's ResQ specs are inconsistent.
    """
    flavor = spec_obj.flavor
    return _parse(tuple(sorted((flavor.extra_specs or {}).items())),
                  flavor.vcpus)


@functools.lru_cache(maxsize=1024)
def _parse(items, vcpus):
    # Filters and weighers ask once per host; the answer depends only on
    # the flavor, so parse each flavor once.
    try:
        return extra_specs.parse(dict(items), vcpus), None
    except extra_specs.InvalidResQSpec as exc:
        return None, str(exc)


NUMAState = collections.namedtuple('NUMAState', 'key pinned total')

# id(topology) -> (weak reference to the topology, NUMAState). Nova's
# HostManager keeps a host's NUMATopology object until the compute node
# reports a change, and the scheduler's own claim
# (HostState.consume_from_request) replaces it with a new object rather
# than changing it, so a topology object's identity stands for its content
# for as long as the object lives. The weak reference's callback removes
# the entry when the object is freed, before its id can be reused: the map
# holds the topologies nova-scheduler holds, one per host, however many
# hosts (a fixed cap emptied when full made every lookup miss once a fleet
# had more hosts than the cap).
_NUMA_STATES = {}
# Distinct NUMA states seen -> a small int, so per-host lookups hash and
# compare an int instead of nested tuples of frozensets. Emptied when it
# reaches _STATE_IDS_MAX: a state seen again then gets a new id, which
# costs the filter one more NUMA fit, never a wrong one.
_STATE_IDS = {}
_STATE_IDS_MAX = 16384
_NEXT_ID = itertools.count()


def _forget(key):
    """The weak reference callback that drops ``key``'s entry."""
    def callback(ref):
        entry = _NUMA_STATES.get(key)
        if entry is not None and entry[0] is ref:
            del _NUMA_STATES[key]
    return callback


def numa_states():
    """The lookup :func:`numa_state` starts with, for loops over hosts.

    ``lookup(id(topology))`` is None or ``(ref, state)``, and ``state`` is
    the topology's when ``ref() is topology``; otherwise call
    :func:`numa_state`. A thousand-host loop saves a call per host.
    """
    return _NUMA_STATES.get


def numa_state(topology):
    """What ResQ reads from a host's NUMA topology, computed once per object.

    ``key`` is an int naming the state that decides Nova's NUMA fit for a
    dedicated-CPU request (each cell's free pCPUs, free memory and pages):
    hosts in the same state get the same key, so they share one fit;
    ``pinned`` and ``total`` count dedicated pCPUs for the weigher.
    Reading oslo.versionedobjects fields is what costs in a 1,000-host
    pass, so it is done once per topology object: later calls are one
    dict lookup.
    """
    entry = _NUMA_STATES.get(id(topology))
    if entry is not None and entry[0]() is topology:
        return entry[1]
    cells = topology.cells
    key = []
    pinned = total = 0
    for c in cells:
        pcpus, used = c.pcpuset, c.pinned_cpus
        pinned += len(used)
        total += len(pcpus)
        key.append((c.id, frozenset(pcpus - used), c.memory - c.memory_usage,
                    tuple((p.size_kb, p.total, p.used)
                          for p in (c.mempages or ()))))
    key = tuple(key)
    key_id = _STATE_IDS.get(key)
    if key_id is None:
        if len(_STATE_IDS) >= _STATE_IDS_MAX:
            _STATE_IDS.clear()
        # Never reused, even after a clear: a request in flight may hold
        # fits keyed by older ids.
        key_id = _STATE_IDS[key] = next(_NEXT_ID)
    state = NUMAState(key_id, pinned, total)
    try:
        ref = weakref.ref(topology, _forget(id(topology)))
    except TypeError:
        return state        # not weakly referable: not kept
    _NUMA_STATES[id(topology)] = (ref, state)
    return state


def placement_client():
    """nova-scheduler's own Placement client (its [placement] options).

    Through :mod:`resq_nova.nova.internals`, imported on first use so that
    this package (:func:`numa_state`, :mod:`.cells`) imports without Nova.
    """
    from resq_nova.nova import internals
    return internals.placement_client()


def conf():
    """Nova's global CONF, with the [resq] options registered once.

    Inside nova-scheduler the plugins can only reach Nova's configuration.
    """
    if 'resq' not in CONF:
        resq_conf.register_opts(CONF)
    return CONF
