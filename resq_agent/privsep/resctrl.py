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
default group's L3 and MB lines, and create or remove a ``resq-``
monitoring group inside one of the agent's control groups. It moves no
task: the agent assigns CPUs, never processes, so the context has no such
call.
"""

import os
import re

import msgpack

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


def _mb(mb):
    """The writer's MB argument: none at all when there is no MB line."""
    return () if mb is None else (mb,)


def _code(code):
    """The writer's code masks argument: none when code and data share."""
    return {} if code is None else {'code': _decode(code)}


def write_l3_masks(group, masks, *, mb=None):
    """Set the group's L3 way masks: ``{domain id: int mask}``.

    :param mb: ``{domain id: MB value}`` in the tree's units
        (:func:`resq_common.mba.schemata_value`), written in the same
        ``write(2)``; None: no MB line.
    """
    if mb is None:
        return write_l3_masks_wide(group, _encode(masks))
    return write_l3_masks_wide(group, _encode(masks), mb=mb)


@privsep.resctrl_pctxt.entrypoint
def write_l3_masks_wide(group, masks, *, mb=None):
    """:func:`write_l3_masks` on the privileged side (wide masks as hex)."""
    with _writer() as w:
        w.write_l3_masks(group, _decode(masks), *_mb(mb))


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


def write_default_l3_masks(masks, *, mb=None):
    """Set the default (root) group's L3 way masks: ``{domain id: mask}``.

    The only write to the default group: its L3 lines and, with ``mb``,
    its MB line, nothing else (no CPUs, tasks or other resources), so the
    agent can shrink it to the ways no instance owns and give them back.
    """
    if mb is None:
        return write_default_l3_masks_wide(_encode(masks))
    return write_default_l3_masks_wide(_encode(masks), mb=mb)


@privsep.resctrl_pctxt.entrypoint
def write_default_l3_masks_wide(masks, *, mb=None):
    """:func:`write_default_l3_masks` on the privileged side."""
    with _writer() as w:
        w.write_default_l3_masks(_decode(masks), *_mb(mb))


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


# A batch: each operation is ``[kind, chain, *arguments]``, the arguments
# those of the single call of that name above: their counts, and the call.
# ``default`` and ``schemata`` take MB values after the masks where the
# host has MBA (an agent that sends none is understood as before);
# ``schemata`` then takes code masks (code and data prioritization).
_OPS = {
    'remove': ((1,), lambda w, group: w.remove_group(group)),
    'remove_mon': ((2,), lambda w, group, mon: w.remove_mon_group(group,
                                                                  mon)),
    'default': ((1, 2), lambda w, masks, mb=None: w.write_default_l3_masks(
        _decode(masks), *_mb(mb))),
    'create': ((1,), lambda w, group: w.create_group(group)),
    'cpus': ((2,), lambda w, group, cpus: w.assign_cpus(group, cpus)),
    'schemata': ((2, 3, 4), lambda w, group, masks, mb=None, code=None:
                 w.write_l3_masks(group, _decode(masks), *_mb(mb),
                                  **_code(code))),
    'mon': ((3,), lambda w, group, mon, cpus: w.create_mon_group(
        group, mon, cpus)),
}
# Where each kind's masks are in an operation (wide ones go as hex).
_MASKS_AT = {'default': 2, 'schemata': 3}
# A failed monitoring group costs only itself: the partition stands.
_ENDS_NO_CHAIN = frozenset(['mon'])
#: Most operations in one batch (a 64 KiB message holds them well).
MAX_OPS = 512
#: Bytes of operations :func:`run_ops` puts in one batch, under the
#: daemon's 64 KiB message limit.
BATCH_BYTES = 48 * 1024
# Exceptions a failed operation comes back as, by name; any other is
# reported by its name and message as a ResctrlError.
_ERRORS = {cls.__name__: cls for cls in (
    exception.ResctrlError, exception.InvalidCpuList,
    exception.MonitoringUnavailable, exception.RmidsExhausted)}


def _check_ops(ops):
    if not isinstance(ops, (list, tuple)) or len(ops) > MAX_OPS:
        raise exception.ResctrlError(
            reason='a batch of resctrl writes is a list of at most %d '
            'operations' % MAX_OPS)
    for op in ops:
        if (not isinstance(op, (list, tuple)) or len(op) < 2
                or op[0] not in _OPS or len(op) - 2 not in _OPS[op[0]][0]
                or not (op[1] is None or isinstance(op[1], str))):
            raise exception.ResctrlError(
                reason='refused resctrl batch operation %.80r: an '
                'operation is [kind, chain, arguments...] with kind one '
                'of %s' % (op, ', '.join(sorted(_OPS))))


def _outcome(exc):
    if isinstance(exc, exception.ResQException):
        return [type(exc).__name__, exc.message, None]
    if isinstance(exc, OSError):
        return ['OSError', exc.strerror or str(exc), exc.errno]
    return [type(exc).__name__, str(exc), None]


@privsep.resctrl_pctxt.entrypoint
def apply_ops(ops):
    """A reconcile's writes in their order, through one writer.

    One call instead of one per write: the reconcile's latency does not
    grow with the boundary. Each operation is checked as its single call
    checks it. An operation whose ``chain`` (a group name, or None for
    none) has failed is skipped: a group whose creation failed gets no
    masks. The whole batch is refused, before any write, when one
    operation is not of the known kinds and arities.

    :returns: one entry per operation: None when done, ``'skipped'``, or
        ``[error class name, message, errno]``.
    """
    _check_ops(ops)
    out = []
    failed = set()
    with _writer() as w:
        for kind, chain, *args in ops:
            if chain is not None and chain in failed:
                out.append('skipped')
                continue
            try:
                _OPS[kind][1](w, *args)
                out.append(None)
            except Exception as exc:
                out.append(_outcome(exc))
                if chain is not None and kind not in _ENDS_NO_CHAIN:
                    failed.add(chain)
    return out


def _rebuild(entry):
    name, message, err = entry
    if name == 'OSError':
        return OSError(err, message)
    cls = _ERRORS.get(name)
    if cls is not None:
        return cls(reason=message)
    return exception.ResctrlError(reason='%s: %s' % (name, message))


def _wire(op):
    op = list(op)
    at = _MASKS_AT.get(op[0])
    if at is not None and len(op) > at:
        op[at] = _encode(op[at])
    if op[0] == 'schemata' and len(op) > 5:
        op[5] = _encode(op[5])      # the code masks
    return op


def _batches(ops):
    batch, size = [], 0
    for op in ops:
        n = len(msgpack.packb(op, use_bin_type=True))
        if batch and (size + n > BATCH_BYTES or len(batch) >= MAX_OPS):
            yield batch
            batch, size = [], 0
        batch.append(op)
        size += n
    if batch:
        yield batch


def run_ops(ops):
    """Run ``ops`` (see :func:`apply_ops`) in as few calls as fit.

    :returns: one entry per operation: None when done, ``'skipped'`` when
        its chain failed earlier, or the exception it failed with (a call
        that fails as a whole, a daemon that died, fails each of its
        operations with that exception).
    """
    out = []
    failed = set()
    for batch in _batches([_wire(op) for op in ops]):
        keep = [op[1] is None or op[1] not in failed for op in batch]
        sent = [op for op, k in zip(batch, keep) if k]
        try:
            results = list(apply_ops(sent)) if sent else []
            if len(results) != len(sent):
                raise exception.ResctrlError(
                    reason='the privileged side answered %d outcomes for '
                    '%d operations' % (len(results), len(sent)))
        except Exception as exc:
            results = [exc] * len(sent)
        answers = iter(results)
        for op, k in zip(batch, keep):
            res = next(answers) if k else 'skipped'
            if isinstance(res, (list, tuple)):
                res = _rebuild(res)
            out.append(res)
            if (isinstance(res, Exception) and op[1] is not None
                    and op[0] not in _ENDS_NO_CHAIN):
                failed.add(op[1])
    return out
