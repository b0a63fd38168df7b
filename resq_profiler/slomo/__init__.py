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
"""Contention prediction after SLOMO (Manousis et al., SIGCOMM 2020).

ResQ isolates NFs with CAT; where NFs share one cache class (on-demand and
best-effort instances) the question is how much they slow each other.
SLOMO answers it with two measured things:

* **contentiousness** of each NF, the pressure it puts on the memory
  subsystem, read from performance counters (:mod:`.metrics`), composed
  over a set of competitors by summing;
* **sensitivity** of each NF, a gradient-boosting regression from the
  competitors' composed contentiousness and the size of the class of
  service they share to the NF's throughput, trained from runs against
  synthetic competitors of varying pressure and packet I/O, confined to
  classes of a few ways up to the whole LLC (:mod:`.training`,
  :mod:`.ensemble`).

:mod:`.accuracy` measures the predictions inside classes against the
simulated testbed.

The fitted model is stored beside the NF's profile as a versioned,
validated JSON document (:mod:`.document`, :mod:`.store`); an NF without a
valid model gets no prediction and is treated as needing its own partition
(:mod:`.sharing`). See ``doc/source/admin/slomo.rst``.
"""
