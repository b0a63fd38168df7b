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

from oslotest import base

from resq_nova.evaluation import papers


class HeadlinesTest(base.BaseTestCase):

    def test_each_paper_beside_this_run(self):
        doc = {
            'predictor': {'max_abs_pp': 12.0},
            'slomo_predictor': {'max_abs_pp': 4.0},
            'chains': {'pair': {'default': {'throughput_mpps': 2.0},
                                'nfvnice': {'throughput_mpps': 2.2}}},
            'chains_at_period': {'pair': {
                'period_us': 100000,
                'backpressure_gain_pct': {'nfvnice_vs_rate_cost': -8.04,
                                          'nfvnice_vs_default': 3.5}}},
            'grouping': {'netcontainer_violation_pct': {'a': 3.0},
                         'roundrobin_violation_pct': {'a': 9.0}},
            'durner': {'gain_pts': {'mean': 6.2, 'max': 22.6},
                       'config': {'seeds': 200}},
        }
        rows = {r[0]: r[3] for r in papers.headlines(doc)}
        self.assertIn('3.0x lower', rows[papers.SLOMO[0]])
        self.assertIn('pair +10.0%', rows[papers.NFVNICE[0]])
        self.assertIn('at the agent\'s 100 ms loop, shares and '
                      'backpressure against rate-cost shares alone / '
                      'against the default scheduler: pair -8.0% / +3.5%',
                      rows[papers.NFVNICE[0]])
        self.assertIn('a 3.00% vs 9.00%', rows[papers.NETCONTAINER[0]])
        self.assertIn('6.2 points on average, 22.6 at most, over 200',
                      rows[papers.DURNER[0]])
        text = '\n'.join(papers.table(doc))
        self.assertIn('up to 20 points', text)

    def test_what_was_not_run_says_so(self):
        rows = papers.headlines({})
        self.assertEqual(4, len(rows))
        for _, _, _, ours in rows:
            self.assertIn('not measured', ours)
