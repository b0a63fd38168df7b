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
"""Several SLO terms admitted together (an SLO file, a service chain).

:mod:`~resq_nova.admission.batch.slo_file` reads and checks the file,
:mod:`~resq_nova.admission.batch.planner` admits its terms jointly with
:func:`resq_nova.admission.greedy.admit_batch` on top of what Placement says
the
cluster already holds, and :mod:`~resq_nova.admission.batch.deploy` creates the
flavors and servers of every term, or none when one term does not fit.
"""
