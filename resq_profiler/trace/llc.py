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
"""A way-partitioned, set-associative LLC with DDIO, replaying traces.

The model (its engine is ``harness/llcsim.c``, built by :mod:`.build` and
loaded with ctypes):

* **Geometry** from :class:`resq_profiler.nfmodel.Platform`, unscaled: 64 B
  lines, ``llc_ways`` ways, ``way_size_bytes / 64`` sets (36864 on ResQ's
  Xeon E5-2695 v4: 18 slices of 2048 sets). A line's set is its low
  address bits within a slice, its slice a hash of the whole address
  (Intel's slice selection is an undocumented hash of the physical
  address; a random-looking one stands for it).
* **Private L2** per core (NF), 256 KiB, 8 ways, LRU (Broadwell's); the
  traces come already filtered by a 32 KiB, 8-way L1D (the tracer's).
  An L2 hit never reaches the LLC. The LLC is inclusive, as Broadwell's
  is: a line it evicts leaves its core's L2.
* **Way partitioning** as Intel CAT does it: each class of service has a
  way mask; a lookup hits in any way of the set, a fill may only replace
  a line in a way of the filling class's mask (an invalid way first).
* **Replacement**: LRU within the mask, or random (``policy='random'``)
  to show how much the answer depends on it. Intel does not document its
  LLC policy (it is adaptive on recent parts); LRU is the textbook one.
* **DDIO**: the NIC's writes of packet data and descriptors update a line
  in place where it is cached and otherwise fill one of the I/O ways
  (the top ``io_ways`` ways, 2 of 20 by default: DDIO's 10% of the LLC,
  which ResQ leaves out of every NF's partition), and invalidate the
  core's L2 copy.
* **Sharing**: members of one class (same mask) or of different classes
  run interleaved by simulated time: the member whose clock is earliest
  runs its next packet, which advances its clock by that packet's cycles
  (:mod:`.model`'s cycle model). Each member is a separate process: its
  addresses are made distinct from the others'.
"""

import ctypes
import dataclasses

import numpy

from resq_profiler import nfmodel
from resq_profiler.trace import build

LINE = nfmodel.CACHE_LINE
SLICE_SETS = 2048          # Broadwell-EP: 2.5 MiB slices of 20 ways
L2_SETS = 512              # 256 KiB, 8 ways
L2_WAYS = 8
POLICIES = {'lru': 0, 'random': 1}

L2_HIT, LLC_HIT, LLC_MISS, DMA_UPDATE, DMA_ALLOC = range(5)


class _Params(ctypes.Structure):
    _fields_ = [('sets', ctypes.c_uint32), ('ways', ctypes.c_uint32),
                ('sets_per_slice', ctypes.c_uint32),
                ('l2_sets', ctypes.c_uint32), ('l2_ways', ctypes.c_uint32),
                ('policy', ctypes.c_uint32), ('io_mask', ctypes.c_uint32),
                ('n_members', ctypes.c_uint32), ('seed', ctypes.c_uint64),
                ('cpi', ctypes.c_double), ('t_l2', ctypes.c_double),
                ('t_llc', ctypes.c_double), ('t_mem', ctypes.c_double),
                ('warm', ctypes.c_uint64), ('measure', ctypes.c_uint64)]


_COUNTS = ('packets', 'insns', 'accesses', 'l2_hits', 'llc_hits',
           'llc_misses', 'dma_lines', 'dma_allocs', 'occupancy')


class _Member(ctypes.Structure):
    _fields_ = ([('trace', ctypes.POINTER(ctypes.c_uint64)),
                 ('len', ctypes.c_uint64), ('mask', ctypes.c_uint32),
                 ('pad', ctypes.c_uint32)]
                + [(name, ctypes.c_uint64) for name in _COUNTS]
                + [('cycles', ctypes.c_double), ('pos', ctypes.c_uint64),
                   ('done', ctypes.c_uint64), ('now', ctypes.c_double)])


_LIB = {}


def _lib(directory=None):
    path = build.simulator(directory)
    if path not in _LIB:
        lib = ctypes.CDLL(path)
        lib.rq_new.restype = ctypes.c_void_p
        lib.rq_new.argtypes = [ctypes.POINTER(_Params)]
        lib.rq_free.argtypes = [ctypes.c_void_p]
        lib.rq_access.argtypes = [ctypes.c_void_p, ctypes.c_uint32,
                                  ctypes.c_uint64, ctypes.c_uint32]
        lib.rq_dma.argtypes = [ctypes.c_void_p, ctypes.c_uint32,
                               ctypes.c_uint64]
        lib.rq_where.argtypes = [ctypes.c_void_p, ctypes.c_uint64]
        lib.rq_occupancy.restype = ctypes.c_uint64
        lib.rq_occupancy.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
        lib.rq_simulate.argtypes = [ctypes.POINTER(_Params),
                                    ctypes.POINTER(_Member)]
        _LIB[path] = lib
    return _LIB[path]


def way_mask(first, count):
    """The contiguous mask of ``count`` ways from way ``first``."""
    if count < 1 or first < 0:
        raise ValueError('a mask needs at least one way from way 0 up')
    return ((1 << count) - 1) << first


@dataclasses.dataclass(frozen=True)
class Geometry:
    """The simulated hierarchy: the LLC's shape, L2, policy and DDIO."""

    sets: int
    ways: int
    sets_per_slice: int
    l2_sets: int = L2_SETS
    l2_ways: int = L2_WAYS
    policy: str = 'lru'
    io_ways: int = 2
    seed: int = 0

    @classmethod
    def of(cls, platform=None, **kw):
        """The platform's LLC (defaults: ResQ's Xeon), unscaled."""
        platform = platform or nfmodel.Platform()
        sets = platform.way_size_bytes // LINE
        per_slice = SLICE_SETS if sets % SLICE_SETS == 0 else sets
        kw.setdefault('io_ways', platform.io_ways)
        return cls(sets=sets, ways=platform.llc_ways,
                   sets_per_slice=per_slice, **kw)

    @property
    def io_mask(self):
        """DDIO's ways: the top ``io_ways`` (0 without DDIO)."""
        if not self.io_ways:
            return 0
        return way_mask(self.ways - self.io_ways, self.io_ways)

    def as_dict(self):
        return dataclasses.asdict(self)

    def _params(self, n_members=1, cycles=(0.0, 0.0, 0.0, 0.0), warm=0,
                measure=0):
        if self.policy not in POLICIES:
            raise ValueError('policy %r: one of %s' % (
                self.policy, ', '.join(sorted(POLICIES))))
        return _Params(self.sets, self.ways, self.sets_per_slice,
                       self.l2_sets, self.l2_ways, POLICIES[self.policy],
                       self.io_mask, n_members, self.seed, *cycles,
                       warm, measure)


class LLC:
    """One simulated hierarchy, driven access by access.

    For tests and small cases; :func:`simulate` replays whole traces in C.
    """

    def __init__(self, geometry, members=1, directory=None):
        self.geometry = geometry
        self._lib = _lib(directory)
        self._params = geometry._params(n_members=members)
        self._sim = self._lib.rq_new(ctypes.byref(self._params))
        if not self._sim:
            raise ValueError('bad geometry %r' % (geometry,))

    def __del__(self):
        sim, self._sim = getattr(self, '_sim', None), None
        if sim:
            self._lib.rq_free(sim)

    def access(self, line, mask, member=0):
        """A core's access: L2_HIT, LLC_HIT or LLC_MISS."""
        return self._lib.rq_access(self._sim, member, line, mask)

    def dma(self, line, member=0):
        """The NIC writes ``line``: DMA_UPDATE or DMA_ALLOC."""
        return self._lib.rq_dma(self._sim, member, line)

    def way_of(self, line):
        """The way holding ``line``, or None."""
        w = self._lib.rq_where(self._sim, line)
        return None if w < 0 else w

    def occupancy(self, member=0):
        return self._lib.rq_occupancy(self._sim, member)


def records(path_or_array):
    """A trace as a uint64 array that ends with a packet record."""
    if isinstance(path_or_array, numpy.ndarray):
        a = path_or_array.astype('<u8', copy=False)
    else:
        a = numpy.fromfile(path_or_array, dtype='<u8')
    ends = numpy.flatnonzero((a & 3) == 3)
    if not len(ends):
        raise ValueError('the trace has no packet')
    return numpy.ascontiguousarray(a[:ends[-1] + 1])


def simulate(geometry, members, cycles, warm, measure, directory=None):
    """Replay traces through one hierarchy.

    :param members: ``[(trace, way_mask), ...]``: a trace (array or path,
        see :func:`records`) and the way mask of the member's class.
    :param cycles: ``(cpi, l2_hit, llc_hit, llc_miss)`` in core cycles.
    :param warm: packets every member runs before counting starts.
    :param measure: packets every member is counted for (a fast member
        runs more in the same time; traces loop).
    :returns: per member, a dict of counts over its measured packets:
        ``packets, insns, accesses, l2_hits, llc_hits, llc_misses,
        dma_lines, dma_allocs, cycles`` and ``occupancy`` (LLC lines held
        at the end).
    """
    lib = _lib(directory)
    arrays = [records(t) for t, _ in members]
    params = geometry._params(n_members=len(members), cycles=tuple(
        float(c) for c in cycles), warm=warm, measure=measure)
    structs = (_Member * len(members))()
    for s, a, (_, mask) in zip(structs, arrays, members):
        s.trace = a.ctypes.data_as(ctypes.POINTER(ctypes.c_uint64))
        s.len = len(a)
        s.mask = mask
    if lib.rq_simulate(ctypes.byref(params), structs):
        raise ValueError('the simulator refused its arguments')
    out = []
    for s in structs:
        doc = {name: int(getattr(s, name)) for name in _COUNTS}
        doc['cycles'] = float(s.cycles)
        out.append(doc)
    return out
