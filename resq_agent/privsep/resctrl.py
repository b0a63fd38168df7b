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
"""Privileged resctrl writes.

Each function takes the resctrl root, a group name and masks, CPU numbers or
PIDs, never a file path: it checks the root is a resctrl tree, the group is
one of ours (``resq-`` prefix) and the values are well formed, and builds
the path itself. So the privileged daemon can only ever write a schemata,
cpus_list or tasks file of a ``resq-`` group.
"""

import os

from resq_agent import privsep
from resq_agent import resctrl
from resq_profiler import exception


def _tree(root):
    return resctrl.Resctrl(root).check()


def _write(path, text):
    # resctrl files accept one write each; no temp-file dance here, the
    # kernel applies a write atomically or rejects it.
    with open(path, 'w', encoding='ascii') as f:
        f.write(text)


def _write_l3(tree, directory, masks):
    """Check ``{domain id: mask}``, write it as ``directory``'s schemata.

    Code and data get the same masks under CDP.
    """
    masks = {int(d): int(m) for d, m in masks.items()}
    info = tree.validate_masks(masks)
    if info['cdp']:
        resources = {'L3CODE': masks, 'L3DATA': masks}
    else:
        resources = {'L3': masks}
    _write(os.path.join(directory, 'schemata'),
           resctrl.format_schemata(resources))


@privsep.resctrl_pctxt.entrypoint
def create_group(root, group):
    """Create resource group ``group`` (idempotent)."""
    path = _tree(root).group_path(group)
    os.makedirs(path, exist_ok=True)
    return path


@privsep.resctrl_pctxt.entrypoint
def write_l3_masks(root, group, masks):
    """Set the group's L3 way masks: ``{domain id: int mask}``."""
    tree = _tree(root)
    _write_l3(tree, tree.group_path(group), masks)


@privsep.resctrl_pctxt.entrypoint
def assign_cpus(root, group, cpus):
    """Make the group own ``cpus`` (a list of CPU numbers)."""
    path = _tree(root).group_path(group)
    cpus = sorted({int(c) for c in cpus})
    if any(c < 0 for c in cpus):
        raise exception.ResctrlError(reason='CPU numbers must be >= 0: %s'
                                     % cpus)
    _write(os.path.join(path, 'cpus_list'),
           ','.join(str(c) for c in cpus) + '\n')


@privsep.resctrl_pctxt.entrypoint
def assign_task(root, group, pid):
    """Move process ``pid`` into the group."""
    path = _tree(root).group_path(group)
    pid = int(pid)
    if pid <= 0:
        raise exception.ResctrlError(reason='invalid PID %d' % pid)
    with open(os.path.join(path, 'tasks'), 'a', encoding='ascii') as f:
        f.write('%d\n' % pid)


@privsep.resctrl_pctxt.entrypoint
def remove_group(root, group):
    """Remove the group (idempotent); its tasks fall back to the default."""
    return _tree(root).remove_tree(group)


@privsep.resctrl_pctxt.entrypoint
def write_default_l3_masks(root, masks):
    """Set the default (root) group's L3 way masks: ``{domain id: mask}``.

    The only write to the default group: its L3 lines, nothing else (no
    CPUs, tasks or other resources), so the agent can shrink it to the ways
    no instance owns and give them back.
    """
    tree = _tree(root)
    _write_l3(tree, tree.root, masks)
