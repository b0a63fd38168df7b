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
"""A trace-driven ground truth: DPDK's own lookup code, traced and replayed.

:mod:`resq_profiler.truth` is a formula this project wrote. This package is
a judge nobody here wrote: the harness (``harness/nf.c``) runs DPDK's
rte_lpm, rte_acl, rte_hash and rte_ipsec_sad on synthetic packet streams,
a Valgrind tool of ours (``harness/vgtool.c``) records the cache lines
they touch, and :mod:`.llc` replays the traces through a way-partitioned
LLC with DDIO. :mod:`.model` is the public API; ``doc/source/contributor/
trace-truth.rst`` says what is real and what is modelled.
"""
