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
"""The background optimizer (ResQ §5.3.2, Appendix A) on a live cloud.

* :mod:`.snapshot`: the cluster state as a document (read, validated,
  written), so every run can be replayed and audited;
* :mod:`.collect`: that state read from Placement and Nova;
* :mod:`.model`: the plan MILP (fewest hosts in use, then fewest moves);
* :mod:`.ordering`: the moves in an order that never over-commits;
* :mod:`.planner`: snapshot to plan document;
* :mod:`.execute`: a plan carried out by Nova live migrations;
* :mod:`.store`: plans and snapshots on disk, and the one-optimizer lock;
* :mod:`.service`: ``resq-optimizer run``.
"""
