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
"""Privileged OpenFlow calls of NFVnice.

Counters and meters go over one kept OpenFlow connection
(:mod:`resq_agent.nfvnice.ofwire`); the agent's flows, written only when a
chain is installed, through ``ovs-ofctl``.

The bridge, the meter range, the flows' priority and the mark register
come from the privileged side's own configuration (``[resq_agent]
nfvnice_bridge`` and friends), never from the caller. The caller names a
meter id (checked against the range), an entry port and a match (checked
by :func:`resq_agent.nfvnice.openflow.check_match`): so the daemon only
ever reads the bridge's port and meter statistics, and adds, changes or
deletes the agent's own meters and its own cookie's flows.
"""

import os
import subprocess

from resq_agent.conf import nfvnice as nfvnice_conf
from resq_agent.nfvnice import ofwire
from resq_agent.nfvnice import openflow
from resq_agent import privsep
from resq_common import exception

TIMEOUT = 10
OFCTL = 'ovs-ofctl'
_clients = {}


class OpenFlowError(exception.ResQException):
    msg_fmt = 'ovs-ofctl %(command)s on %(bridge)s failed: %(reason)s'


def _opts():
    conf = privsep.openflow_pctxt.config
    conf.register_opts(nfvnice_conf.OPENFLOW_OPTS, group=nfvnice_conf.GROUP)
    opts = conf[nfvnice_conf.GROUP]
    if not opts.nfvnice_bridge or not openflow.TARGET_RE.fullmatch(
            opts.nfvnice_bridge):
        raise OpenFlowError(command='-', bridge=opts.nfvnice_bridge,
                            reason='[resq_agent] nfvnice_bridge must name a '
                            'bridge or its unix: management socket')
    return opts


def _meter(opts, meter_id):
    first = opts.nfvnice_meter_base
    if (isinstance(meter_id, bool) or not isinstance(meter_id, int)
            or not first <= meter_id < first + opts.nfvnice_meter_count):
        raise OpenFlowError(command='-', bridge=opts.nfvnice_bridge,
                            reason='meter %r is outside the agent\'s range '
                            '%d..%d' % (meter_id, first, first
                                        + opts.nfvnice_meter_count - 1))
    return meter_id


def _ofctl(opts, command, *args):
    argv = [OFCTL, '-O', 'OpenFlow13', '--names', command,
            opts.nfvnice_bridge] + list(args)
    try:
        done = subprocess.run(argv, capture_output=True, text=True,
                              timeout=TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise OpenFlowError(command=command, bridge=opts.nfvnice_bridge,
                            reason=str(exc))
    if done.returncode != 0:
        raise OpenFlowError(command=command, bridge=opts.nfvnice_bridge,
                            reason=(done.stderr or done.stdout).strip())
    return done.stdout


def _target(bridge):
    """The management socket of a bridge given by name.

    ovs-ofctl's rule: ``<rundir>/<bridge>.mgmt``.
    """
    if bridge.startswith(('unix:', 'tcp:')):
        return bridge
    rundir = os.environ.get('OVS_RUNDIR', '/var/run/openvswitch')
    return 'unix:%s/%s.mgmt' % (rundir, bridge)


def _wire(opts, command, fn):
    client = _clients.get(opts.nfvnice_bridge)
    if client is None:
        client = _clients[opts.nfvnice_bridge] = ofwire.Client(
            _target(opts.nfvnice_bridge), TIMEOUT)
    try:
        return fn(client)
    except ofwire.WireError as exc:
        raise OpenFlowError(command=command, bridge=opts.nfvnice_bridge,
                            reason=str(exc))


@privsep.openflow_pctxt.entrypoint
def port_stats():
    """Every port's counters: ``{port: {counter: value or None}}``."""
    return _wire(_opts(), 'port-stats', lambda c: c.port_stats())


@privsep.openflow_pctxt.entrypoint
def meter_stats():
    """The agent's meters' counters.

    :returns: ``{meter id: (packets, bytes, dropped)}``.
    """
    opts = _opts()
    first, count = opts.nfvnice_meter_base, opts.nfvnice_meter_count
    return {m: c for m, c in
            _wire(opts, 'meter-stats', lambda c: c.meter_stats()).items()
            if first <= m < first + count}


@privsep.openflow_pctxt.entrypoint
def owned():
    """``(flow meter ids, meter ids)`` the agent has on the bridge."""
    opts = _opts()
    flows = openflow.parse_flow_meters(_ofctl(
        opts, 'dump-flows', 'cookie=%#x/%#x' % (openflow.COOKIE,
                                                openflow.COOKIE_MASK)))
    return sorted(flows), sorted(meter_stats())


@privsep.openflow_pctxt.entrypoint
def set_meters(changes):
    """Add or change the agent's meters in one batch.

    :param changes: ``[(meter id, rate kbps, burst kb, new)]``.
    :returns: ``{meter id: reason}`` of the changes the switch refused.
    """
    opts = _opts()
    mods = []
    for meter, rate, burst, new in changes:
        rate, burst = openflow.meter_band(rate, burst)
        mods.append((ofwire.METER_ADD if new else ofwire.METER_MODIFY,
                     _meter(opts, meter), rate, burst))
    return _wire(opts, 'meter-mod', lambda c: c.meter_mods(mods))


@privsep.openflow_pctxt.entrypoint
def set_chain_flow(meter_id, port, match):
    """Add or replace the agent's flow of the chain of ``meter_id``."""
    opts = _opts()
    try:
        spec = openflow.flow_spec(_meter(opts, meter_id), port, match,
                                  opts.nfvnice_flow_priority,
                                  opts.nfvnice_mark_register)
    except openflow.InvalidMatch as exc:
        raise OpenFlowError(command='add-flow', bridge=opts.nfvnice_bridge,
                            reason=str(exc))
    _delete_flow(opts, meter_id)
    _ofctl(opts, 'add-flow', spec)


def _delete_flow(opts, meter_id):
    _ofctl(opts, 'del-flows', 'cookie=%#x/-1' % (openflow.COOKIE | meter_id))


@privsep.openflow_pctxt.entrypoint
def remove_chain(meter_id):
    """Remove the agent's flow and meter ``meter_id`` (idempotent)."""
    opts = _opts()
    _meter(opts, meter_id)
    _delete_flow(opts, meter_id)
    _wire(opts, 'meter-mod', lambda c: c.meter_mods(
        [(ofwire.METER_DELETE, meter_id, 0, 0)]))
