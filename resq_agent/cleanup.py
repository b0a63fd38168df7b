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
"""``resq-agent cleanup``: remove the agent's resctrl groups from a host.

With ``[resq_agent] nfvnice_bridge`` set it also removes NFVnice's
per-chain meters and flows from that bridge (the agent's cookie and meter
range only).

What the agent leaves in resctrl once it is stopped: its ``resq-`` groups
(never the profiler's ``resq-profiler*`` ones, nor anyone else's: see
:data:`resq_common.resctrl.AGENT`) and the default group's L3 masks,
shrunk to the ways no instance owned. Clean-up removes the groups (their
CPUs fall back to the default group) and gives the default group every
way again, through the agent's own privileged functions.

It refuses while ``resq-agent run`` is running on the host: the agent
would make its groups again on its next pass.

Each step that fails is one line of :func:`failures` (what failed, what
would fix it), which the command prints on standard error. When the
privileged side itself cannot be had (its daemon's socket unreachable, or
oslo.privsep's helper not starting one), the first call says why and the
steps after it are not tried.
"""

import os

from resq_common import mba
from resq_common import resctrl

PROC_ROOT = '/proc'
COMMAND = 'resq-agent'
# Where resq-privsep-daemon --context NAME listens by default
# ([resq_privsep_daemon] socket_dir).
DAEMON_SOCKET = '/run/resq-privsep/%s.sock'


def running_agents(proc_root=None):
    """PIDs of ``resq-agent run`` processes on this host (but ours)."""
    proc_root = proc_root or PROC_ROOT
    pids = []
    for name in os.listdir(proc_root):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(os.path.join(proc_root, name, 'cmdline'), 'rb') as f:
                argv = f.read().split(b'\0')
        except OSError:
            continue    # gone, or not ours to read
        args = [a.decode('utf-8', 'replace') for a in argv if a]
        # The console script, or "python .../resq-agent run".
        if args and os.path.basename(args[0]).startswith('python'):
            args = args[1:]
        if (args and os.path.basename(args[0]) == COMMAND
                and 'run' in args[1:]):
            pids.append(int(name))
    return sorted(pids)


class AgentRunning(Exception):
    pass


def plan(root):
    """What clean-up would do under the resctrl ``root``. Reads only."""
    tree = resctrl.Resctrl(root).check()
    info = tree.info()
    full = info['cbm_mask']
    with open(os.path.join(tree.root, 'schemata'), encoding='ascii') as f:
        default = resctrl.parse_schemata(f.read())
    line = default.get('L3CODE' if info['cdp'] else 'L3', {})
    restore = {d: full for d in tree.domains() if line.get(d) != full}
    # The default group's memory bandwidth limit, if the agent set one:
    # back to no limit, in the same write as its masks (all of them).
    rules = mba.read_info(tree.root)
    unlimited = {}
    if rules is not None:
        unlimited = {d: rules.max_value
                     for d, v in default.get('MB', {}).items()
                     if v != str(rules.max_value)}
        if unlimited:
            restore = {d: full for d in tree.domains()}
    return {
        'groups': [g for g in tree.owned_groups()
                   if resctrl.AGENT.owns(g)],
        'resctrl_root': tree.root,
        'kept': [g for g in tree.groups() if not resctrl.AGENT.owns(g)],
        'default_l3_masks': {str(d): '%x' % m
                             for d, m in sorted(restore.items())},
        'default_mb': {str(d): v for d, v in sorted(unlimited.items())},
    }


def plan_openflow(bridge):
    """The agent's OpenFlow meters and flows on ``bridge`` (NFVnice).

    Reads only, through the privileged side (which programs only the
    bridge of root's own configuration).
    """
    import resq_agent.privsep.openflow as priv

    if not bridge:
        return None
    flows, meters = priv.owned()
    return {'bridge': bridge, 'meters': sorted(set(flows) | set(meters))}


def openflow_unread(bridge, exc):
    """What :func:`plan_openflow` could not read: ``bridge`` and why."""
    doc = _failed({'bridge': bridge}, 'openflow', exc)
    del doc['outcome']
    return doc


NOT_TRIED = 'not tried: the privileged calls before it could not be made'


def _failed(action, context, exc):
    """``action`` failed with ``exc``; why no call works, if none can."""
    from resq_common import privsep

    action.update(outcome='failed', error=str(exc))
    if privsep.unreachable(exc):
        action['privsep_error'] = privsep_failure(context, exc)
    return action


def privsep_failure(context, exc):
    """One line: the context's privileged side cannot be had, and the fix.

    :param context: ``resctrl`` or ``openflow``.
    """
    from resq_common import privsep

    section = 'resq_privsep_%s' % context
    if isinstance(exc, privsep.DaemonUnreachable):
        # Its message names the daemon, its unit and the client user.
        why = str(exc)
    else:
        why = ('its privileged daemon could not be started (%s); start it '
               'as root (systemctl start resq-privsep-%s) and set '
               '[%s] daemon_socket = %s in the agent\'s configuration, or '
               'run "resq-agent cleanup" as root'
               % (exc, context, section, DAEMON_SOCKET % context))
    return ' '.join(('the %s context of resq-agent cannot make privileged '
                     'calls: %s' % (context, why)).split())


def execute_openflow(doc):
    """Remove the agent's per-chain flows and meters.

    :returns: True when every one went.
    """
    import resq_agent.privsep.openflow as priv

    ok = True
    down = False
    for meter in doc['meters']:
        if down:
            outcome = {'meter': meter, 'outcome': 'skipped',
                       'error': NOT_TRIED}
        else:
            try:
                priv.remove_chain(meter)
                outcome = {'meter': meter, 'outcome': 'removed'}
            except Exception as exc:
                ok = False
                outcome = _failed({'meter': meter}, 'openflow', exc)
                down = 'privsep_error' in outcome
        doc.setdefault('actions', []).append(outcome)
    return ok


def execute(doc):
    """Remove the groups and widen the default group; record outcomes.

    :returns: True when every step succeeded.
    """
    import resq_agent.privsep.resctrl as priv

    ok = True
    down = False
    actions = []
    for group in doc['groups']:
        if down:
            actions.append({'group': group, 'outcome': 'skipped',
                            'error': NOT_TRIED})
            continue
        try:
            priv.remove_group(group)
            actions.append({'group': group, 'outcome': 'removed'})
        except Exception as exc:   # each group's own outcome
            ok = False
            actions.append(_failed({'group': group}, 'resctrl', exc))
            down = 'privsep_error' in actions[-1]
    masks = {int(d): int(m, 16)
             for d, m in doc['default_l3_masks'].items()}
    if masks and not ok:
        actions.append({'default_l3_masks': doc['default_l3_masks'],
                        'outcome': 'skipped', 'error': 'not tried: some '
                        'groups could not be removed and may hold ways'})
    elif masks:
        mb = {int(d): v for d, v in doc.get('default_mb', {}).items()}
        try:
            priv.write_default_l3_masks(masks, mb=mb or None)
            actions.append({'default_l3_masks': doc['default_l3_masks'],
                            'outcome': 'written'})
        except Exception as exc:
            ok = False
            actions.append(_failed(
                {'default_l3_masks': doc['default_l3_masks']}, 'resctrl',
                exc))
    doc['actions'] = actions
    return ok


def failures(doc):
    """What failed, a line each: what, and what would fix it.

    A privileged side that cannot be had is one line saying why and how
    to fix it; the steps after it are skipped, not failed.
    """
    lines = []
    again = 'run "resq-agent cleanup" again once that is fixed'
    openflow = doc.get('openflow') or {}
    if openflow.get('privsep_error'):
        lines.append(openflow['privsep_error'])
    elif openflow.get('error'):
        lines.append('the NFVnice flows and meters of bridge %s cannot be '
                     'read: %s' % (openflow.get('bridge'), openflow['error']))
    for action in (doc.get('actions') or []) + (openflow.get('actions')
                                                or []):
        if action.get('outcome') != 'failed':
            continue
        if action.get('privsep_error'):
            lines.append(action['privsep_error'])
            continue
        if 'group' in action:
            what = 'resctrl group %s was not removed' % action['group']
        elif 'meter' in action:
            what = 'meter %s of bridge %s was not removed' % (
                action['meter'], openflow.get('bridge'))
        else:
            what = 'the default group\'s L3 masks were not written'
        lines.append('%s: %s; %s' % (what, action.get('error'), again))
    return [' '.join(line.split()) for line in lines]


def check_not_running(proc_root=None):
    """:raises AgentRunning: naming the PIDs and what to do."""
    pids = running_agents(proc_root)
    if pids:
        raise AgentRunning(
            'resq-agent run is still running on this host (pid %s): it '
            'would make its resctrl groups again; stop it first (systemctl '
            'stop resq-agent) and run "resq-agent cleanup" again'
            % ', '.join(str(p) for p in pids))
