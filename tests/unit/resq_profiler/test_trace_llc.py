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
"""The trace LLC simulator against hand-computed cases."""

import shutil
import tempfile

import numpy

from resq_profiler import nfmodel
from resq_profiler.trace import build
from resq_profiler.trace import llc
from tests import base

HIT, MISS = llc.LLC_HIT, llc.LLC_MISS


def _geometry(ways=4, sets=1, l2_sets=0, l2_ways=0, io_ways=0,
              policy='lru'):
    return llc.Geometry(sets=sets, ways=ways, sets_per_slice=sets,
                        l2_sets=l2_sets, l2_ways=l2_ways, io_ways=io_ways,
                        policy=policy)


def _trace(packets, insns=10):
    """Records for ``packets``: each a list of (line, kind) then its end."""
    out = []
    for accesses in packets:
        out += [(line << 2) | kind for line, kind in accesses]
        out.append((insns << 2) | 3)
    return numpy.array(out, dtype='<u8')


class SimulatorTestBase(base.TestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        # A private cache (one build a class) keeps the tests off the
        # user's.
        cls.cache = tempfile.mkdtemp(prefix='resq-trace-test-')

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.cache, ignore_errors=True)
        super().tearDownClass()

    def setUp(self):
        super().setUp()
        why = build.missing_compiler()
        if why:
            self.skipTest('the simulator is C: %s' % why)

    def llc(self, geometry, members=1):
        return llc.LLC(geometry, members=members, directory=self.cache)


class ReplacementTest(SimulatorTestBase):

    def test_lru_evicts_the_least_recently_used_way_of_the_mask(self):
        c = self.llc(_geometry(ways=4))
        mask = llc.way_mask(0, 3)
        for line in (1, 2, 3):
            self.assertEqual(MISS, c.access(line, mask))
        self.assertEqual(HIT, c.access(1, mask))       # 2 is now LRU
        self.assertEqual(MISS, c.access(4, mask))      # evicts 2
        self.assertIsNone(c.way_of(2))
        self.assertEqual(HIT, c.access(3, mask))
        self.assertEqual(HIT, c.access(1, mask))
        self.assertEqual(MISS, c.access(2, mask))      # evicts 4 (LRU)
        self.assertIsNone(c.way_of(4))
        self.assertEqual({1, 2, 3}, {line for line in (1, 2, 3, 4)
                                     if c.way_of(line) is not None})

    def test_invalid_ways_fill_before_any_eviction(self):
        c = self.llc(_geometry(ways=4))
        mask = llc.way_mask(0, 4)
        for way, line in enumerate((10, 11, 12, 13)):
            c.access(line, mask)
            self.assertEqual(way, c.way_of(line))

    def test_random_policy_stays_in_the_mask(self):
        c = self.llc(_geometry(ways=4, policy='random'))
        c.access(999, llc.way_mask(3, 1))
        for line in range(200):
            c.access(line, llc.way_mask(0, 3))
            self.assertIn(c.way_of(line), (0, 1, 2))
        self.assertEqual(3, c.way_of(999))

    def test_unknown_policy_is_refused(self):
        self.assertRaises(ValueError, self.llc, _geometry(policy='mru'))


class PartitionTest(SimulatorTestBase):

    def test_a_fill_never_evicts_outside_its_mask(self):
        c = self.llc(_geometry(ways=4), members=2)
        c.access(1000, llc.way_mask(2, 2), member=1)
        c.access(1001, llc.way_mask(2, 2), member=1)
        for line in range(50):
            self.assertEqual(MISS, c.access(line, llc.way_mask(0, 2)))
            self.assertIn(c.way_of(line), (0, 1))
        self.assertEqual(2, c.way_of(1000))
        self.assertEqual(3, c.way_of(1001))
        self.assertEqual(2, c.occupancy(member=0))
        self.assertEqual(2, c.occupancy(member=1))

    def test_a_hit_in_another_class_ways_is_a_hit(self):
        c = self.llc(_geometry(ways=4), members=2)
        c.access(7, llc.way_mask(3, 1), member=1)
        self.assertEqual(HIT, c.access(7, llc.way_mask(0, 1)))
        # The hit moves nothing into the reader's ways.
        self.assertEqual(3, c.way_of(7))

    def test_sets_are_apart(self):
        c = self.llc(_geometry(ways=1, sets=2))
        mask = llc.way_mask(0, 1)
        c.access(0, mask)
        c.access(1, mask)                      # the other set
        self.assertEqual(HIT, c.access(0, mask))
        c.access(2, mask)                      # set 0 again: evicts 0
        self.assertEqual(MISS, c.access(0, mask))

    def test_the_platform_geometry_is_resq_xeon(self):
        g = llc.Geometry.of(nfmodel.Platform())
        self.assertEqual(20, g.ways)
        self.assertEqual(45 * nfmodel.MIB // 20 // 64, g.sets)
        self.assertEqual(2048, g.sets_per_slice)
        self.assertEqual(0b11 << 18, g.io_mask)
        self.assertEqual(g.ways * g.sets * 64, nfmodel.Platform().llc_bytes)


class DDIOTest(SimulatorTestBase):

    def test_dma_fills_land_in_the_io_ways(self):
        c = self.llc(_geometry(ways=4, io_ways=1))
        for line in range(20):
            self.assertEqual(llc.DMA_ALLOC, c.dma(line))
            self.assertEqual(3, c.way_of(line))

    def test_the_core_hits_a_dma_written_line(self):
        c = self.llc(_geometry(ways=4, io_ways=1))
        c.dma(5)
        self.assertEqual(HIT, c.access(5, llc.way_mask(0, 1)))

    def test_dma_updates_a_cached_line_in_place(self):
        c = self.llc(_geometry(ways=4, io_ways=1))
        c.access(5, llc.way_mask(0, 1))
        c.access(6, llc.way_mask(3, 1))
        self.assertEqual(llc.DMA_UPDATE, c.dma(5))
        self.assertEqual(0, c.way_of(5))
        self.assertEqual(3, c.way_of(6))

    def test_dma_evicts_only_io_ways(self):
        c = self.llc(_geometry(ways=4, io_ways=2))
        core = llc.way_mask(0, 2)
        c.access(1, core)
        c.access(2, core)
        for line in range(100, 140):
            c.dma(line)
        self.assertEqual(HIT, c.access(1, core))
        self.assertEqual(HIT, c.access(2, core))


class L2Test(SimulatorTestBase):

    def test_l2_hits_do_not_reach_the_llc(self):
        c = self.llc(_geometry(ways=2, l2_sets=1, l2_ways=2))
        mask = llc.way_mask(0, 2)
        self.assertEqual(MISS, c.access(1, mask))
        self.assertEqual(llc.L2_HIT, c.access(1, mask))

    def test_inclusion_an_llc_eviction_leaves_the_l2(self):
        c = self.llc(_geometry(ways=2, l2_sets=1, l2_ways=2))
        one = llc.way_mask(0, 1)
        c.access(1, one)
        c.access(2, one)           # evicts 1 from the LLC: and the L2
        self.assertEqual(MISS, c.access(1, one))

    def test_a_dma_write_invalidates_the_core_copy(self):
        c = self.llc(_geometry(ways=2, l2_sets=1, l2_ways=2, io_ways=1))
        c.access(1, llc.way_mask(0, 1))
        c.dma(1)
        self.assertEqual(HIT, c.access(1, llc.way_mask(0, 1)))


class SharingTest(SimulatorTestBase):

    CYCLES = (1.0, 0.0, 10.0, 100.0)

    def _run(self, masks, ways=3, warm=5, measure=20):
        trace = _trace([[(1, 0), (2, 0)]])
        return llc.simulate(_geometry(ways=ways), [(trace, m) for m in masks],
                            self.CYCLES, warm, measure,
                            directory=self.cache)

    def test_alone_two_lines_fit(self):
        (solo,) = self._run([llc.way_mask(0, 3)])
        self.assertEqual(20, solo['packets'])
        self.assertEqual(0, solo['llc_misses'])
        self.assertEqual(40, solo['llc_hits'])
        self.assertEqual(20 * (10 + 2 * 10), solo['cycles'])

    def test_two_members_in_three_ways_thrash(self):
        # Equal members alternate: a0 b0 a1 b1 ... four lines in a 3-way
        # LRU class, so every access misses.
        shared = self._run([llc.way_mask(0, 3)] * 2)
        for m in shared:
            self.assertEqual(20, m['packets'])
            self.assertEqual(40, m['llc_misses'])
            self.assertEqual(20 * (10 + 2 * 100), m['cycles'])

    def test_two_members_in_four_ways_fit(self):
        shared = self._run([llc.way_mask(0, 4)] * 2, ways=4)
        self.assertEqual([0, 0], [m['llc_misses'] for m in shared])

    def test_separate_classes_do_not_interfere(self):
        a, b = self._run([llc.way_mask(0, 2), llc.way_mask(2, 2)], ways=4)
        self.assertEqual(0, a['llc_misses'])
        self.assertEqual(0, b['llc_misses'])
        self.assertEqual(2, a['occupancy'])
        self.assertEqual(2, b['occupancy'])

    def test_a_faster_member_runs_more_packets(self):
        fast = _trace([[(1, 0)]], insns=10)
        slow = _trace([[(1, 0)]], insns=40)
        a, b = llc.simulate(_geometry(ways=4),
                            [(fast, llc.way_mask(0, 2)),
                             (slow, llc.way_mask(2, 2))],
                            self.CYCLES, 0, 10, directory=self.cache)
        # Each first packet misses (110 and 140 cycles), then 20 against
        # 50 cycles a packet. The slow one is due for its 10th, last
        # packet at clock 140 + 8 * 50 = 540; the fast one runs every
        # packet due at or before that (ties go to the first member):
        # those due at 0, 110, 130, ..., 530, 23 packets.
        self.assertEqual(10, b['packets'])
        self.assertEqual(23, a['packets'])

    def test_dma_in_a_trace(self):
        t = _trace([[(7, 2), (7, 0)]])
        (m,) = llc.simulate(_geometry(ways=4, io_ways=1),
                            [(t, llc.way_mask(0, 1))], self.CYCLES, 0, 4,
                            directory=self.cache)
        self.assertEqual(4, m['dma_lines'])
        self.assertEqual(1, m['dma_allocs'])
        self.assertEqual(4, m['llc_hits'])

    def test_records_drop_what_follows_the_last_packet(self):
        t = numpy.concatenate([_trace([[(1, 0)]]),
                               numpy.array([5 << 2], dtype='<u8')])
        self.assertEqual(2, len(llc.records(t)))
        self.assertRaises(ValueError, llc.records,
                          numpy.array([4], dtype='<u8'))
