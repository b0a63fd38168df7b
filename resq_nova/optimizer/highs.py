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
"""HiGHS for the stages that solve a model (:mod:`bound`, :mod:`model`)."""

import math
import os
import sys
import tempfile
import time


class Run:
    """HiGHS on a Pyomo model, with a MIP start and a second objective.

    Pyomo writes the model as an LP file that HiGHS reads, which is much
    faster than Pyomo's in-memory HiGHS interface at tens of thousands of
    variables, and lets us give HiGHS our own first solution (that
    interface loaded the start back instead of HiGHS's solution with
    highspy 1.16).
    """

    def __init__(self, model, highspy):
        self._highspy = highspy
        with tempfile.TemporaryDirectory(prefix='resq-plan-') as tmp:
            path = os.path.join(tmp, 'plan.lp')
            _, smap_id = model.write(
                path, io_options={'symbolic_solver_labels': False})
            smap = model.solutions.symbol_map[smap_id]
            # The model lives in an instance that never runs; each run gets
            # its own (see _fresh).
            self.model = new_highs(highspy)
            self.model.readModel(path)
        self.h = None
        # HiGHS's own time limit is not checked everywhere (its dual simplex
        # at the root of a large model overran it threefold): interrupt it
        # from its callbacks at our deadline as well.
        self._deadline = None
        lp = self.model.getLp()
        self.lower = list(lp.col_lower_)
        self.cols = [smap.bySymbol.get(n) for n in lp.col_names_]
        self.col_of = {id(v): i for i, v in enumerate(self.cols)
                       if v is not None}

    def objective(self, costs, cap=None):
        """Replace the objective with ``[(var, cost)]``.

        ``cap``, ``(vars, n)``, adds the row ``sum(vars) <= n``.
        """
        n = len(self.cols)
        self.model.changeColsCost(n, list(range(n)), [0.0] * n)
        pairs = [(self.col_of[id(v)], float(c)) for v, c in costs
                 if id(v) in self.col_of]
        self.model.changeColsCost(len(pairs), [i for i, _ in pairs],
                                  [c for _, c in pairs])
        if cap is not None:
            cols = [self.col_of[id(v)] for v in cap[0]
                    if id(v) in self.col_of]
            fixed_ones = sum(1 for v in cap[0] if id(v) not in self.col_of
                             and v.value)
            self.model.addRow(-self._highspy.kHighsInf,
                              cap[1] - fixed_ones, len(cols), cols,
                              [1.0] * len(cols))

    def _watch(self, h):
        for event in (h.cbSimplexInterrupt, h.cbIpmInterrupt,
                      h.cbMipInterrupt):
            event += self._interrupt

    def _fresh(self, interruptible):
        """A new HiGHS on the model, for one run.

        The model itself lives in an instance that never runs: with
        highspy 1.16 a run after one we interrupted stopped at once, and
        our interrupt callbacks cut the LP relaxation short; each run gets
        its own instance, with the callbacks only for branch and bound.
        """
        h = new_highs(self._highspy)
        h.passModel(self.model.getLp())
        if interruptible:
            self._watch(h)
        self.h = h

    def _interrupt(self, event):
        if self._deadline is not None and time.monotonic() > self._deadline:
            event.interrupt()

    def relaxation_bound(self, time_limit):
        """The LP relaxation's optimum: a lower bound HiGHS proves."""
        self._fresh(interruptible=False)
        self.h.setOptionValue('time_limit', float(time_limit))
        self._deadline = time.monotonic() + time_limit
        self.h.setOptionValue('solve_relaxation', True)
        self.h.setOptionValue('solver', 'ipm')
        try:
            self.h.run()
            ok = (self.h.getModelStatus()
                  == self._highspy.HighsModelStatus.kOptimal)
            value = self.h.getInfo().objective_function_value
        finally:
            self.h.setOptionValue('solve_relaxation', False)
            self.h.setOptionValue('solver', 'choose')
        return value if ok else None

    def run(self, time_limit, mip_gap, start):
        """Solve from ``start`` (``{id(var): value}``).

        :returns: ``(best, bound, status, {id(var): value})``; ``best`` is
            None when HiGHS found no solution.
        """
        self._fresh(interruptible=True)
        self.h.setOptionValue('time_limit', float(time_limit))
        self._deadline = time.monotonic() + time_limit
        self.h.setOptionValue('mip_rel_gap', float(mip_gap))
        if start:
            sol = self._highspy.HighsSolution()
            # Columns the start does not name (the LP writer's constant
            # column) take their lower bound.
            sol.col_value = [float(start.get(id(v), low))
                             for v, low in zip(self.cols, self.lower)]
            sol.value_valid = True
            self.h.setSolution(sol)
        self.h.run()
        status = self.h.modelStatusToString(self.h.getModelStatus())
        info = self.h.getInfo()
        sol = self.h.getSolution()
        if not sol.value_valid or info.primal_solution_status == 0:
            return None, finite(info.mip_dual_bound), status, {}
        col_value = list(sol.col_value)     # one copy, not one per column
        values = {id(v): x for v, x in zip(self.cols, col_value)
                  if v is not None}
        return (info.objective_function_value, finite(info.mip_dual_bound),
                status, values)


def new_highs(highspy):
    """A HiGHS instance, without the banner it prints on standard output.

    HiGHS writes its copyright banner from C++ when the first instance is
    made; commands print their results on standard output.
    """
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, 'w') as null:
            os.dup2(null.fileno(), 1)
            h = highspy.Highs()
            h.setOptionValue('output_flag', False)
    finally:
        os.dup2(saved, 1)
        os.close(saved)
    return h


def finite(value):
    return value if value is not None and math.isfinite(value) else None
