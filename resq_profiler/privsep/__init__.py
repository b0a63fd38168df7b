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
"""Privilege separation context of the profiler.

The profiler's only privileged work is its one resctrl group; the functions
are in :mod:`resq_profiler.privsep.resctrl`.
"""

from oslo_privsep import capabilities

from resq_common import privsep

resctrl_pctxt = privsep.PrivContext(
    'resq_profiler',
    cfg_section='resq_privsep_profiler',
    pypath=__name__ + '.resctrl_pctxt',
    capabilities=[capabilities.CAP_DAC_OVERRIDE],
)


def init(conf):
    """Make the context read ``conf`` and its config files."""
    resctrl_pctxt.use_conf(conf)
