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
"""

import os

from resq_common import resctrl

PROC_ROOT = '/proc'
COMMAND = 'resq-agent'


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
    return {
        'groups': [g for g in tree.owned_groups()
                   if resctrl.AGENT.owns(g)],
        'resctrl_root': tree.root,
        'kept': [g for g in tree.groups() if not resctrl.AGENT.owns(g)],
        'default_l3_masks': {str(d): '%x' % m
                             for d, m in sorted(restore.items())},
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


def execute_openflow(doc):
    """Remove the agent's per-chain flows and meters.

    :returns: True when every one went.
    """
    import resq_agent.privsep.openflow as priv

    ok = True
    for meter in doc['meters']:
        try:
            priv.remove_chain(meter)
            outcome = {'meter': meter, 'outcome': 'removed'}
        except Exception as exc:
            ok = False
            outcome = {'meter': meter, 'outcome': 'failed',
                       'error': str(exc)}
        doc.setdefault('actions', []).append(outcome)
    return ok


def execute(doc):
    """Remove the groups and widen the default group; record outcomes.

    :returns: True when every step succeeded.
    """
    import resq_agent.privsep.resctrl as priv

    ok = True
    actions = []
    for group in doc['groups']:
        try:
            priv.remove_group(group)
            actions.append({'group': group, 'outcome': 'removed'})
        except Exception as exc:   # each group's own outcome
            ok = False
            actions.append({'group': group, 'outcome': 'failed',
                            'error': str(exc)})
    masks = {int(d): int(m, 16)
             for d, m in doc['default_l3_masks'].items()}
    if masks and not ok:
        actions.append({'default_l3_masks': doc['default_l3_masks'],
                        'outcome': 'skipped', 'error': 'not tried: some '
                        'groups could not be removed and may hold ways'})
    elif masks:
        try:
            priv.write_default_l3_masks(masks)
            actions.append({'default_l3_masks': doc['default_l3_masks'],
                            'outcome': 'written'})
        except Exception as exc:
            ok = False
            actions.append({'default_l3_masks': doc['default_l3_masks'],
                            'outcome': 'failed', 'error': str(exc)})
    doc['actions'] = actions
    return ok


def check_not_running(proc_root=None):
    """:raises AgentRunning: naming the PIDs and what to do."""
    pids = running_agents(proc_root)
    if pids:
        raise AgentRunning(
            'resq-agent run is still running on this host (pid %s): it '
            'would make its resctrl groups again; stop it first (systemctl '
            'stop resq-agent) and run "resq-agent cleanup" again'
            % ', '.join(str(p) for p in pids))
