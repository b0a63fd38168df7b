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

from resq_nova.evaluation import figures
from resq_nova.evaluation import grouping


def _doc():
    policies = ('netcontainer', 'netcontainer-cmt', 'anchor-pairwise',
                'roundrobin', 'random', 'heaviest', 'isolated')
    return {'config': {'seeds': [0, 1, 2]}, 'scenarios': {
        name: {'nfs': n, 'classes': k, 'policies': {
            p: {'violation_pct': float(i + j), 'capacity_loss_pct': 0.0,
                'per_seed': []} for j, p in enumerate(policies)}}
        for i, (name, n, k) in enumerate(grouping.SCENARIOS)}}


class GroupingFigureTest(base.BaseTestCase):

    def test_one_colour_per_policy_none_a_schemes(self):
        fig = figures.grouping(_doc())
        ax = fig.axes[0]
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        self.assertEqual(7, len(labels))
        colours = {}
        for container, label in zip(ax.containers, labels):
            got = {tuple(p.get_facecolor()) for p in container.patches}
            self.assertEqual(1, len(got), label)
            colours[label] = got.pop()
        self.assertEqual(7, len(set(colours.values())))
        from matplotlib import colors
        schemes = {colors.to_rgba(c)
                   for c in figures.SCHEME_COLOURS.values()}
        self.assertEqual(set(), set(colours.values()) & schemes)
        # One bar per scenario in each policy's group.
        self.assertEqual(len(grouping.SCENARIOS),
                         len(ax.containers[0].patches))
        self.assertIn('Grouping on-demand NFs', fig._suptitle.get_text())
