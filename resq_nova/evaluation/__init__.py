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
"""The cluster evaluation of ResQ §6: SLO sets, schemes, ground truth.

The modules import one another one way only, all at module top, in four
layers: a module imports from the layers below its own, and within a
layer only from a module named before it. (The unit test
``tests/unit/resq_nova/evaluation/test_imports.py`` fails on an import
inside a function, on an import of ``benchmarks`` and on a cycle.)

1. Leaves, importing no module of this package: the ground truth
   (``cluster``), the SLO sets (``slosets``), the prediction baseline
   (``dobrescu``), the studies beside §6 (``chains``, ``ondemand``,
   ``grouping``, ``durner``, ``measured``, ``papers``) and the seeds'
   spread (``seeds``). They compute and return JSON-able documents; none
   draws a figure.
2. Built on leaves: SLOMO as a predictor (``slomo``), the placement
   schemes (``schemes``), SLOMO against the baseline on held-out
   co-locations (``prediction``), and the paper's figures with the ratios
   ours are compared by (``reference``).
3. Composers: ``run`` runs the evaluation and writes its text report;
   ``figures`` draws every plot from the documents.
4. ``docfigures``, the figures the documentation quotes, from all of
   the above (and ``resq_nova.cmd.evaluate``).

Nothing here imports the repository's ``benchmarks/``: what a benchmark
and the docs share lives in this package or in ``resq_profiler``.
"""
