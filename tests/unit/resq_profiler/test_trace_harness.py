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
"""The NF harness built with gcc against DPDK and traced under Valgrind.

Small runs: a few thousand flows, small tables, a few hundred packets.
"""

import os
import shutil
import tempfile

import numpy

from resq_profiler import exception
from resq_profiler.trace import build
from resq_profiler.trace import llc
from resq_profiler.trace import model
from tests import base

PACKETS = 400
FLOWS = 2000
# Small tables: the full LPM table takes half a minute to build.
SIZES = {'LPM': 20000, 'Efficuts': 2000, 'Firewall': 250, 'MazuNAT': 1,
         'IPsec': 256}


class HarnessTest(base.TestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.why = build.missing()
        cls.cache = tempfile.mkdtemp(prefix='resq-trace-harness-')
        cls.traces = {}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.cache, ignore_errors=True)
        super().tearDownClass()

    def setUp(self):
        super().setUp()
        if self.why:
            self.skipTest('cannot build and trace the DPDK harness here: %s'
                          % self.why)

    def _trace(self, name, seed=0):
        key = (name, seed)
        if key not in self.traces:
            self.traces[key] = llc.records(model.trace(
                name, packets=PACKETS, seed=seed, flows=FLOWS,
                cache_dir=self.cache, size=SIZES[name]))
        return self.traces[key]

    def test_every_nf_has_a_trace_of_its_packets(self):
        for name in model.names():
            a = self._trace(name)
            kinds = numpy.bincount((a & 3).astype(int), minlength=4)
            # One record per packet; after each packet the NIC writes a
            # frame and a descriptor (the last packet's follow the trace).
            self.assertEqual(PACKETS, kinds[3], name)
            self.assertEqual(2 * (PACKETS - 1), kinds[2], name)
            self.assertGreater(kinds[0], PACKETS, name)
            self.assertGreater(kinds[1], 0, name)
            insns = (a[(a & 3) == 3] >> 2).astype(float)
            self.assertGreater(insns.mean(), 50, name)
            self.assertLess(insns.mean(), 20000, name)

    def test_the_same_seed_gives_the_same_trace(self):
        first = self._trace('MazuNAT')
        path = model.trace('MazuNAT', packets=PACKETS, seed=0, flows=FLOWS,
                           cache_dir=self.cache, size=SIZES['MazuNAT'])
        self.assertTrue(path.endswith('.trace'))
        # Cached: the very same file, not a second run.
        self.assertEqual(len(first), len(llc.records(path)))
        other = self._trace('MazuNAT', seed=1)
        self.assertFalse(len(first) == len(other)
                         and (first == other).all())
        # Traced again from scratch (another cache, so other paths in the
        # harness's arguments and environment, and DPDK's generator seeded
        # anew): the same records, bit for bit.
        fresh = tempfile.mkdtemp(prefix='resq-trace-harness-')
        self.addCleanup(shutil.rmtree, fresh, ignore_errors=True)
        # The same builds (they are keyed by their sources), not the trace.
        shutil.copy2(build.harness(self.cache), fresh)
        vglib = build.tool(self.cache)
        shutil.copytree(vglib, os.path.join(fresh, os.path.basename(vglib)),
                        symlinks=True)
        again = llc.records(model.trace(
            'MazuNAT', packets=PACKETS, seed=0, flows=FLOWS,
            cache_dir=fresh, size=SIZES['MazuNAT']))
        self.assertEqual(len(first), len(again))
        self.assertTrue((first == again).all(), 'the traces differ')

    def test_lpm_misses_fall_as_ways_grow(self):
        a = self._trace('LPM')
        # A small LLC (512 sets: 32 KiB a way) that the ~2300 lines of a
        # few hundred packets overflow at one way and fit at eight; no L2,
        # no DDIO.
        g = llc.Geometry(sets=512, ways=8, sets_per_slice=512, l2_sets=0,
                         l2_ways=0, io_ways=0)
        misses = []
        for ways in (1, 2, 4, 8):
            (m,) = llc.simulate(g, [(a, llc.way_mask(0, ways))],
                                model.cycle_model(), PACKETS, PACKETS,
                                directory=self.cache)
            misses.append(m['llc_misses'] / m['packets'])
        for fewer, more in zip(misses, misses[1:]):
            self.assertGreaterEqual(fewer, more)
        self.assertGreater(misses[0], 2 * misses[-1])

    def test_an_unknown_nf_is_refused(self):
        self.assertRaises(exception.UnknownNF, model.trace, 'Nope',
                          cache_dir=self.cache)
