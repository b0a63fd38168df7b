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
"""resq-optimizer's Prometheus metrics (see :mod:`resq_common.metrics`).

Plans by outcome since the service started, hosts freed and moves made by
applied plans, the last round's hosts, bound, gap and solve time, and
each remote dependency (Placement, Nova, resq-api).
"""

from resq_common import metrics

OUTCOMES = ('proposed', 'not_proposed', 'applied', 'failed')


class OptimizerCollector:
    """A ``prometheus_client`` collector over an :class:`Optimizer`."""

    def __init__(self, optimizer):
        self.optimizer = optimizer

    def describe(self):
        return []

    def collect(self):
        figures = dict(self.optimizer.figures)
        plans = metrics.counter('resq_optimizer_plans', 'Plans made '
                                '(proposed or not, as min_hosts_freed '
                                'decides) and applied or failed.',
                                ['outcome'])
        for outcome in OUTCOMES:
            plans.add_metric([outcome], figures.get(outcome, 0))
        freed = metrics.counter('resq_optimizer_hosts_freed', 'Hosts '
                                'emptied by applied plans.')
        freed.add_metric([], figures.get('hosts_freed', 0))
        moves = metrics.counter('resq_optimizer_moves_done', 'Live '
                                'migrations of applied or failed plans '
                                'that completed.')
        moves.add_metric([], figures.get('moves_done', 0))
        orphans = metrics.counter(
            'resq_optimizer_migration_allocations', 'Migration consumers '
            'holding LLC ways that audits found: released (their server '
            'was deleted), kept (Nova lists the migration, or release is '
            'off) or failed (Placement refused the release).', ['outcome'])
        for outcome in ('released', 'kept', 'failed'):
            orphans.add_metric([outcome],
                               figures.get('migrations_' + outcome, 0))
        yield from (plans, freed, moves, orphans)
        yield from self._last_round()
        yield from metrics.dependency_families()

    def _last_round(self):
        plan = self.optimizer.last_plan
        if plan is None:
            return []
        solver = plan.get('solver', {})
        out = []
        for name, doc, value in (
                ('resq_optimizer_last_solve_seconds', 'Seconds the last '
                 'round spent building and solving its plan.',
                 solver.get('seconds')),
                ('resq_optimizer_last_hosts_used', 'Hosts the last plan '
                 'leaves in use.', plan.get('hosts_used_after')),
                ('resq_optimizer_last_hosts_lower_bound', 'The proven '
                 'lower bound on hosts in use.', plan.get('lower_bound')),
                ('resq_optimizer_last_gap_ratio', 'Gap between the last '
                 'plan and the bound (0.05 is 5%).',
                 None if plan.get('gap_pct') is None
                 else plan['gap_pct'] / 100.0),
                ('resq_optimizer_last_moves', 'Moves the last plan '
                 'proposes.', len(plan.get('moves', ())))):
            if value is None:
                continue
            family = metrics.gauge(name, doc)
            family.add_metric([], value)
            out.append(family)
        return out
