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
"""NFVnice on the compute host: rate-cost CPU shares and backpressure.

Two mechanisms after NFVnice (SIGCOMM 2017), run by the agent every
``[resq_agent] nfvnice_interval`` seconds (:mod:`.controller`):

* :mod:`.shares`: NFs that share cores get CPU shares proportional to their
  arrival rate times their per-packet cost, applied through libvirt's
  scheduler parameters. Instances of reserved flavors
  (``resq:slo=reserved``) own their cores and are left alone.
* :mod:`.backpressure`: when an NF of a chain (:mod:`.chains`) keeps
  dropping packets, the chain is marked and its input cut at the chain's
  entry port with Open vSwitch ingress policing, so upstream NFs do not
  spend cycles on packets the bottleneck drops anyway; the policer goes
  when the bottleneck clears.

Rates and drops come from Open vSwitch interface statistics
(:mod:`.rates`).
"""
