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
"""Privileged resctrl writes of the profiler.

As the agent's (:mod:`resq_agent.privsep.resctrl`): a group name and
values, never a path; the root is ``[resq_profiler] resctrl_root`` of the
profiler's own configuration files, checked and walked without following
symbolic links by :class:`resq_common.resctrl_writer.Writer`.
"""

from resq_common import resctrl
from resq_common import resctrl_writer
from resq_profiler.conf import profiler as profiler_conf
from resq_profiler import privsep


def _writer():
    conf = privsep.resctrl_pctxt.config
    conf.register_opt(profiler_conf.RESCTRL_ROOT_OPT,
                      group=profiler_conf.GROUP)
    return resctrl_writer.Writer(conf[profiler_conf.GROUP].resctrl_root,
                                 owner=resctrl.PROFILER)


@privsep.resctrl_pctxt.entrypoint
def create_group(group):
    """Create resource group ``group`` (idempotent)."""
    with _writer() as w:
        return w.create_group(group)


@privsep.resctrl_pctxt.entrypoint
def write_l3_masks(group, masks):
    """Set the group's L3 way masks: ``{domain id: int mask}``."""
    with _writer() as w:
        w.write_l3_masks(group, masks)


@privsep.resctrl_pctxt.entrypoint
def assign_cpus(group, cpus):
    """Make the group own ``cpus`` (a list of CPU numbers)."""
    with _writer() as w:
        w.assign_cpus(group, cpus)


@privsep.resctrl_pctxt.entrypoint
def assign_task(group, pid):
    """Move process ``pid`` into the group."""
    with _writer() as w:
        w.assign_task(group, pid)


@privsep.resctrl_pctxt.entrypoint
def remove_group(group):
    """Remove the group (idempotent)."""
    with _writer() as w:
        return w.remove_group(group)
