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

from unittest import mock

from oslotest import base

from resq_agent.ondemand import model
from resq_nova.evaluation import durner
from resq_nova.evaluation import figures

MIB = 1024 * 1024


class TestVNF(base.BaseTestCase):

    def test_more_cache_lowers_the_load(self):
        v = durner.VNF('a', 1.01, 20 * MIB, 4000.0)
        loads = [v.load(mb * MIB) for mb in (0, 2, 8, 16, 20)]
        self.assertEqual(sorted(loads, reverse=True), loads)
        self.assertGreater(loads[0], loads[-1])
        # The whole working set cached: only hits.
        self.assertAlmostEqual(
            4000.0 * durner.LINES * durner.HIT_NS * 1e-9, loads[-1])


class TestScenario(base.BaseTestCase):

    def test_paper_ranges_and_calibration(self):
        for seed in range(5):
            group = durner.scenario(seed)
            self.assertEqual(durner.VNFS, len(group))
            way = durner.LLC_MB * MIB / durner.LLC_WAYS
            lease = model.Lease(0, 0, durner.LLC_WAYS, durner.LLC_WAYS, 1,
                                int(way))
            now = durner.loads(group, model.shared(lease, group), way)
            for v in group:
                self.assertIn(v.alpha, durner.ALPHAS)
                self.assertGreaterEqual(v.ws, 1 * MIB)
                self.assertLessEqual(v.ws, 30 * MIB)
                self.assertGreaterEqual(now[v.uuid][0], 0.40)
                self.assertLessEqual(now[v.uuid][0], 0.90)

    def test_seeds_differ_and_repeat(self):
        a = [v.ws for v in durner.scenario(1)]
        self.assertEqual(a, [v.ws for v in durner.scenario(1)])
        self.assertNotEqual(a, [v.ws for v in durner.scenario(2)])
        self.assertNotEqual(a, [v.ws for v in durner.scenario(1, base=7)])

    def test_no_calibration_is_an_error(self):
        # A load that no rate moves (a model fault): never in range.
        with mock.patch.object(durner.VNF, 'load', return_value=0.1):
            self.assertRaisesRegex(RuntimeError, 'no calibrated Durner',
                                   durner.scenario, 0, attempts=2)


class TestRun(base.BaseTestCase):

    def test_gain_is_shared_minus_scheduled(self):
        r = durner.run(3)
        self.assertAlmostEqual(
            r['max_util_shared_pct'] - r['max_util_scheduled_pct'],
            r['gain_pts'], places=1)
        # The best allocation the loop remembers is never worse than the
        # start (the shared LLC is its first candidate).
        self.assertGreaterEqual(r['gain_pts'], 0.0)
        self.assertGreater(r['steps'], 0)

    def test_scheduler_finds_gain_on_diverse_loads(self):
        doc = durner.evaluate(seeds=30)
        self.assertGreater(doc['gain_pts']['mean'], 0.0)
        self.assertGreater(doc['gain_pts']['max'], doc['gain_pts']['mean'])
        self.assertEqual(30, len(doc['runs']))
        # Fig. 7's finding: more spread between the busiest core and the
        # mean gives more gain.
        self.assertGreater(doc['slope'], 0.0)
        text = '\n'.join(durner.table(doc))
        self.assertIn('paper: up to 20', text)

    def test_bad_arguments(self):
        self.assertRaisesRegex(ValueError, 'at least one seed',
                               durner.evaluate, seeds=0)
        self.assertRaisesRegex(ValueError, 'two VNFs', durner.evaluate,
                               seeds=3, vnfs=1)

    def test_figure(self):
        doc = durner.evaluate(seeds=5)
        fig = figures.durner(doc)
        self.assertEqual(2, len(fig.axes))
        self.assertIn('own objective', fig._suptitle.get_text())
