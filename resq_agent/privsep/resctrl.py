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
"""Privileged resctrl writes of the agent.

Each function takes a group name and masks, CPU numbers or PIDs, never a
path or a root: the privileged side reads the root from its own
configuration (``[resq_agent] resctrl_root`` of the agent's configuration
files), and :class:`resq_common.resctrl_writer.Writer` checks it is a
resctrl mount, reaches files below it without following symbolic links and
validates every value. So the daemon can only ever write a schemata or
cpus_list file of the agent's own ``resq-`` groups (never the profiler's
``resq-profiler*`` ones: :data:`resq_common.resctrl.AGENT`), or the
default group's L3 line, and create or remove a ``resq-`` monitoring group
inside one of the agent's control groups. It moves no task: the agent
assigns CPUs, never processes, so the context has no such call.
"""

import os
import re

from resq_agent.conf import agent as agent_conf
from resq_agent import privsep
from resq_common import exception
from resq_common import resctrl
from resq_common import resctrl_writer
from resq_common import rootpath

# A mask wider than msgpack's 64 bits, as _encode writes it (1024 ways at
# most: resctrl_writer.MAX_WAYS).
_WIDE = re.compile(r'0x[0-9a-f]{1,256}')


def _root():
    conf = privsep.resctrl_pctxt.config
    conf.register_opt(agent_conf.RESCTRL_ROOT_OPT, group=agent_conf.GROUP)
    return conf[agent_conf.GROUP].resctrl_root


def _writer():
    conf = privsep.resctrl_pctxt.config
    conf.register_opt(agent_conf.RESCTRL_FAKE_OPT, group=agent_conf.GROUP)
    fake = conf[agent_conf.GROUP].resctrl_fake
    if fake and os.geteuid() == 0:
        _fake_from_root(conf)
    return resctrl_writer.Writer(_root(), require_mount=not fake,
                                 owner=resctrl.AGENT)


def _fake_from_root(conf):
    """Honour ``resctrl_fake`` only from root's own configuration.

    As root, a fake tree (no mount check) is allowed only when the daemon
    read its configuration through ``resq-privsep-daemon`` (which reads
    root's file once, through root-owned directories only), or when every
    configuration file it read, and every directory from ``/`` to it,
    belong to root and no one else can write them: the agent's user cannot
    turn the check off from a file of its own.
    """
    files = list(conf.config_file or ())
    if conf.config_dir:
        raise exception.ResctrlError(
            reason='[resq_agent] resctrl_fake is honoured only from root\'s '
            'configuration file, and this process also read --config-dir %s; '
            'start the privileged side with root\'s file alone'
            % ', '.join(conf.config_dir))
    if not files:
        raise exception.ResctrlError(
            reason='[resq_agent] resctrl_fake is set but not from a '
            'configuration file; the privileged side checks the resctrl '
            'mount unless root\'s own file says the tree is fake')
    if files == [rootpath.verified_config()]:
        return
    for path in files:
        try:
            rootpath.read_root_file(os.path.abspath(path))
        except rootpath.Refused as exc:
            raise exception.ResctrlError(
                reason='[resq_agent] resctrl_fake is honoured only from '
                'root\'s configuration: %s' % exc)


@privsep.resctrl_pctxt.entrypoint
def resctrl_root():
    """The resctrl root the privileged side writes under."""
    return _root()


@privsep.resctrl_pctxt.entrypoint
def create_group(group):
    """Create resource group ``group`` (idempotent)."""
    with _writer() as w:
        return w.create_group(group)


def _encode(masks):
    """Masks wider than 64 bits as hex strings: msgpack carries no more.

    Anything else goes as it is, for the privileged side's checks.
    """
    if not isinstance(masks, dict):
        return masks
    return {k: ('0x%x' % v if isinstance(v, int) and not isinstance(v, bool)
                and v >= 1 << 63 else v) for k, v in masks.items()}


def _decode(masks):
    """The masks :func:`_encode` sent.

    A string not of its shape stays one (and the writer refuses it).
    """
    if not isinstance(masks, dict):
        return masks
    return {k: (int(v, 16) if isinstance(v, str) and _WIDE.fullmatch(v)
                else v) for k, v in masks.items()}


def write_l3_masks(group, masks):
    """Set the group's L3 way masks: ``{domain id: int mask}``."""
    return write_l3_masks_wide(group, _encode(masks))


@privsep.resctrl_pctxt.entrypoint
def write_l3_masks_wide(group, masks):
    """:func:`write_l3_masks` on the privileged side (wide masks as hex)."""
    with _writer() as w:
        w.write_l3_masks(group, _decode(masks))


@privsep.resctrl_pctxt.entrypoint
def assign_cpus(group, cpus):
    """Make the group own ``cpus`` (a list of CPU numbers)."""
    with _writer() as w:
        w.assign_cpus(group, cpus)


@privsep.resctrl_pctxt.entrypoint
def remove_group(group):
    """Remove the group (idempotent); its tasks fall back to the default."""
    with _writer() as w:
        return w.remove_group(group)


def write_default_l3_masks(masks):
    """Set the default (root) group's L3 way masks: ``{domain id: mask}``.

    The only write to the default group: its L3 lines, nothing else (no
    CPUs, tasks or other resources), so the agent can shrink it to the ways
    no instance owns and give them back.
    """
    return write_default_l3_masks_wide(_encode(masks))


@privsep.resctrl_pctxt.entrypoint
def write_default_l3_masks_wide(masks):
    """:func:`write_default_l3_masks` on the privileged side."""
    with _writer() as w:
        w.write_default_l3_masks(_decode(masks))


@privsep.resctrl_pctxt.entrypoint
def create_mon_group(group, mon, cpus):
    """Create monitoring group ``mon`` in the agent's group ``group``.

    It counts ``cpus``, a subset of the group's CPUs (idempotent).
    """
    with _writer() as w:
        return w.create_mon_group(group, mon, cpus)


@privsep.resctrl_pctxt.entrypoint
def remove_mon_group(group, mon):
    """Remove monitoring group ``mon`` of ``group`` (idempotent)."""
    with _writer() as w:
        return w.remove_mon_group(group, mon)
