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
"""Faults on the all-in-one cloud, and the checks after them.

Used by the soak (``benchmarks/cloud_soak.py``) on a cloud of
:mod:`tests.cloud.aio`:

* faults: the broker cut (every RabbitMQ connection of the cloud's vhost
  closed, optionally again and again for a while), resq-api stopped and
  started by the devstack plugin's own functions, and
  ``resq-optimizer plan`` then ``apply`` (real live migrations), counted
  from what Nova says afterwards, not from what the optimizer printed;
  the host faults are :data:`tests.cloud.aio.HOST_ACTIONS`;
* checks: :func:`collect` reads the cloud once (Nova, Placement, resq-api,
  each host's resctrl tree and libvirtd) into plain data, and the pure
  functions :func:`partition_problems`, :func:`double_partitions` and
  :func:`leaks` judge it. They are pure so that the unit tests feed them
  made-up inventories (``tests/unit/test_cloud_soak.py``).

What "partitioned" means is what the tempest plugin's
``PartitionChecks.partition_state`` means: one ``resq-`` group on the
server's host names it, and its L3 mask in the cache domain Placement
allocated from has exactly the allocated ``CUSTOM_LLC_WAY`` ways
(contiguous, shared with neither the default group nor another group),
and holds the server's pinned CPUs, which left the default group.
"""

import configparser
import json
import os
import re
import subprocess
import time
import xml.etree.ElementTree as ET

from resq_agent import manager as agent_manager
from resq_common import cache_domain
from resq_common import cbm
from resq_common import extra_specs
from resq_tempest_plugin.common import host as host_mod

RC_LLC_WAY = extra_specs.RC_LLC_WAY
#: What issue 42 asks: partitioned again within a minute of the fault.
REPAIR_S = 60
#: How long a domain Nova left behind on a host (a start that failed and
#: was rescheduled elsewhere) may keep a partition there: the agent's
#: grace for a live migration away, one reconcile pass, and slack.
LEFTOVER_GRACE_S = agent_manager.MOVING_OUT_GRACE_S + 60
GROUP_PREFIX = host_mod.GROUP_PREFIX
CLASS_PREFIX = GROUP_PREFIX + 'cos'
_UUID = re.compile('^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-'
                   '[0-9a-f]{12}$')
#: Nova's migration states after which a migration holds nothing.
FINAL_MIGRATION_STATES = frozenset((
    'completed', 'confirmed', 'reverted', 'error', 'failed', 'cancelled',
    'done'))
#: OpenFlow meters: the cloud has no Open vSwitch and its guests no ports
#: (``networks='none'``), so there is no meter to leak.
METERS_NOT_APPLICABLE = ('not applicable: the all-in-one cloud runs no '
                         'Open vSwitch and its guests have no ports')


# -- the broker ---------------------------------------------------------------
def parse_connections(text, vhost):
    """Connection pids of ``vhost`` in ``list_connections`` output.

    ``rabbitmqctl list_connections vhost pid name``: its banner and header
    lines are skipped.
    """
    pids = []
    for line in text.splitlines():
        fields = line.split('\t')
        if (len(fields) >= 2 and fields[0] == vhost
                and fields[1].startswith('<') and fields[1].endswith('>')):
            pids.append(fields[1])
    return pids


def rabbit_connections(vhost, run=subprocess.run):
    proc = run(['rabbitmqctl', '-q', 'list_connections', 'vhost', 'pid',
                'name'], capture_output=True, text=True, check=False)
    if proc.returncode:
        raise RuntimeError('rabbitmqctl list_connections failed (exit %d): '
                           '%s' % (proc.returncode, proc.stderr.strip()))
    return parse_connections(proc.stdout, vhost)


def close_connections(vhost, pids, run=subprocess.run,
                      why='resq-nova soak: broker cut'):
    """Close ``pids`` (connections of ``vhost``) at once.

    ``close_all_connections --vhost`` closes them in one command (each
    ``rabbitmqctl`` starts an Erlang VM, about a second: closing forty
    connections one by one would not be a cut); where the broker has no
    such command, ``close_connection`` each. Returns how many were asked.
    """
    if not pids:
        return 0
    proc = run(['rabbitmqctl', '-q', 'close_all_connections', '--vhost',
                vhost, '--limit', str(len(pids)), why],
               capture_output=True, text=True, check=False)
    if proc.returncode:
        for pid in pids:
            run(['rabbitmqctl', '-q', 'close_connection', pid, why],
                capture_output=True, text=True, check=False)
    return len(pids)


def cut_broker(vhost, hold_s=0.0, interval=1.0, run=subprocess.run,
               clock=time.monotonic, sleep=time.sleep):
    """Close every connection of ``vhost``; for ``hold_s``, again and again.

    :returns: ``{'closed': connections closed in all, 'cuts': rounds,
        'seconds': how long the cut was held}``.
    """
    t0 = clock()
    closed = cuts = 0
    while True:
        closed += close_connections(vhost, rabbit_connections(vhost, run),
                                    run)
        cuts += 1
        if clock() - t0 >= hold_s:
            break
        sleep(interval)
    return {'closed': closed, 'cuts': cuts,
            'seconds': round(clock() - t0, 1)}


# -- resq-api -----------------------------------------------------------------
def stop_resq_api(aio, state):
    """``stop_process resq-api`` on the controller, as unstack does."""
    aio.shell(state, aio.HOSTS[0], 'source %s/devstack/lib/resq; '
              'stop_process resq-api' % aio.REPO, 'stop resq-api')


def start_resq_api(aio, state):
    """The plugin's ``start_resq`` for resq-api alone, as stack does."""
    aio.shell(state, aio.HOSTS[0], 'source %s/devstack/lib/resq; '
              'ENABLED_SERVICES=resq-api start_resq' % aio.REPO,
              'start resq-api')


def resq_client(conn):
    """resq-api through the catalog, on ``conn``'s (admin) session."""
    from keystoneauth1 import adapter

    from resq_common.clients import resq
    return resq.ResQClient(adapter.Adapter(
        session=conn.session, service_type=resq.SERVICE_TYPE,
        interface='public', region_name=conn.config.region_name))


# -- resq-optimizer -----------------------------------------------------------
def optimizer_config(state_root, default='/etc/resq/resq-optimizer.conf'):
    """The optimizer configuration the tempest plugin uses.

    ``[resq] optimizer_config`` of the cloud's tempest.conf (``aio``
    writes it; the migration scenario runs ``resq-optimizer`` with it).
    """
    cp = configparser.RawConfigParser()
    cp.read(os.path.join(state_root, 'tempest', 'etc', 'tempest.conf'))
    if cp.has_option('resq', 'optimizer_config'):
        return cp.get('resq', 'optimizer_config')
    return default


def parse_apply_output(text):
    """``{name or uuid: outcome}`` of ``resq-optimizer apply``'s lines."""
    outcomes = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0] in (
                'done', 'failed', 'skipped', 'not-run', 'cancelled') \
                and '->' in parts:
            outcomes[parts[1]] = parts[0]
    return outcomes


def count_applied(moves, apply_rc, plan_state, where):
    """Migrations a plan's apply really carried out.

    :param moves: the plan's moves (``uuid``, ``to_host``).
    :param apply_rc: ``resq-optimizer apply``'s exit status.
    :param plan_state: the plan's state in resq-api afterwards.
    :param where: ``{uuid: (status, host)}`` of the moved servers in Nova
        afterwards (a server absent: deleted).
    :returns: ``(applied, moved, problems)``: ``applied`` counts the moves
        of a plan that was applied (exit 0 and state ``applied``) and whose
        server Nova shows ACTIVE on the move's destination; a failed apply
        counts none as applied, however many servers it moved (``moved``
        counts those); ``problems`` says what was wrong.
    """
    moved, problems = 0, []
    for move in moves:
        status, host = where.get(move['uuid'], (None, None))
        if status == 'ACTIVE' and host == move['to_host']:
            moved += 1
        else:
            problems.append('server %s is %s on %s, not ACTIVE on %s' % (
                move['uuid'], status or 'gone', host, move['to_host']))
    ok = apply_rc == 0 and plan_state == 'applied'
    if not ok:
        problems.insert(0, 'apply exited %s, plan state %s' % (
            apply_rc, plan_state))
    return (moved if ok and not problems else 0), moved, problems


def optimizer_round(command, config, conn, workdir, timeout,
                    run=subprocess.run):
    """``resq-optimizer plan`` then ``apply``; then ``enable-freed``.

    As the tempest migration scenario runs them: a plan that frees one
    host, applied by live migration; the hosts it disabled as freed are
    enabled again, so that the soak keeps its hosts.

    :returns: ``{'outcome': 'applied' | 'not-proposed' | 'failed',
        'plan', 'moves', 'migrations' (counted by :func:`count_applied`),
        'moved', 'problems'}``.
    """
    base = [command, '--config-file', config]
    out = os.path.join(workdir, 'plan-%d.json' % int(time.time() * 1000))
    result = {'outcome': 'failed', 'plan': None, 'moves': 0,
              'migrations': 0, 'moved': 0, 'problems': []}
    proc = run(base + ['plan', '--min-hosts-freed', '1', '--json', out],
               capture_output=True, text=True, check=False)
    if proc.returncode:
        result['problems'].append('plan exited %d: %s' % (
            proc.returncode, (proc.stderr or proc.stdout).strip()[-1000:]))
        return result
    with open(out) as f:
        plan = json.load(f)
    result['plan'] = plan.get('id')
    if not plan.get('proposed'):
        result.update(outcome='not-proposed',
                      problems=['not proposed: %s' % plan.get('reason')])
        return result
    moves = plan.get('moves') or []
    result['moves'] = len(moves)
    proc = run(base + ['apply', plan['id'], '--timeout', str(timeout)],
               capture_output=True, text=True, check=False)
    try:
        state = resq_client(conn).get_plan(plan['id']).get('state')
    except Exception as exc:  # resq-api's answer is part of the outcome
        state = 'unknown (%s)' % exc
    where = {}
    for move in moves:
        try:
            server = conn.compute.get_server(move['uuid'])
            where[move['uuid']] = (server.status, server.compute_host)
        except Exception:
            pass
    applied, moved, problems = count_applied(moves, proc.returncode, state,
                                             where)
    if proc.returncode:
        problems.append('apply: %s' % (proc.stdout + proc.stderr)
                        .strip()[-1500:])
    result.update(outcome='applied' if applied == len(moves) and not
                  problems else 'failed', migrations=applied, moved=moved,
                  problems=problems)
    freed = run(base + ['enable-freed'], capture_output=True, text=True,
                check=False)
    if freed.returncode:
        result['problems'].append('enable-freed exited %d: %s' % (
            freed.returncode, freed.stdout.strip()[-500:]))
    return result


# -- reading the cloud --------------------------------------------------------
def specs_ways(specs):
    """The ways flavor extra specs ask Placement for (all groups)."""
    total = 0
    for key, value in (specs or {}).items():
        if key.startswith('resources') and key.endswith(':' + RC_LLC_WAY):
            try:
                total += int(value)
            except ValueError:
                pass
    return total


def is_resq(specs):
    """Whether a flavor's extra specs make a ResQ server."""
    return bool(specs) and (any(k.startswith('resq:') for k in specs)
                            or specs_ways(specs) > 0)


def _pinned(xml_text):
    cpus = set()
    xml = ET.fromstring(xml_text)
    for pin in xml.findall('./cputune/vcpupin'):
        cpus |= host_mod.parse_cpu_list(pin.get('cpuset', ''))
    return sorted(cpus)


def libvirt_domains(uri):
    """``{uuid: {'active', 'pinned'}}`` of every domain of a libvirtd."""
    import libvirt

    libvirt.registerErrorHandler(lambda ctx, err: None, None)
    conn = libvirt.openReadOnly(uri)
    try:
        found = {}
        for dom in conn.listAllDomains(0):
            try:
                found[dom.UUIDString()] = {
                    'active': bool(dom.isActive()),
                    'pinned': _pinned(dom.XMLDesc(0))}
            except libvirt.libvirtError:
                continue  # gone while listed
        return found
    finally:
        conn.close()


def host_tree(host, attempts=5):
    """A host's ``resq-`` groups and default group, read once whole.

    The agent writes while we read: a group that vanishes between the
    listing and its files makes the read start again.
    """
    for attempt in range(attempts):
        try:
            groups = {}
            for group in host.groups():
                groups[group] = {
                    'l3': host.l3_masks(group),
                    'cpus': sorted(host.cpus(group)),
                    'mons': {m: sorted(host.cpus(group, 'mon_groups', m))
                             for m in host.mon_groups(group)}}
            return {'groups': groups,
                    'default': {'l3': host.l3_masks(),
                                'cpus': sorted(host.cpus())}}
        except (FileNotFoundError, NotADirectoryError):
            if attempt == attempts - 1:
                raise
            time.sleep(0.2)


def collect(conn, hosts, flavor_specs=None, plans=True):
    """The cloud as plain data, for the pure checks below.

    :param hosts: ``{name: {'state': dir, 'libvirt_uri': uri}}`` (the
        ``hosts`` of ``DIR/cloud.json``).
    :param flavor_specs: ``{flavor name: extra specs}``, for servers whose
        embedded flavor has none.
    """
    flavor_specs = flavor_specs or {}
    servers = {}
    for s in conn.compute.servers(all_projects=True):
        flavor = s.flavor or {}
        specs = flavor.get('extra_specs')
        if specs is None:
            specs = flavor_specs.get(flavor.get('original_name'), {})
        servers[s.id] = {'name': s.name, 'status': s.status,
                         'task_state': s.task_state,
                         'host': s.compute_host,
                         'node': s.hypervisor_hostname,
                         'flavor': flavor.get('original_name'),
                         'specs': dict(specs)}
    pl = conn.placement
    providers = {}
    for rp in pl.get('/resource_providers', microversion='1.14').json()[
            'resource_providers']:
        providers[rp['uuid']] = {'name': rp['name'],
                                 'parent': rp.get('parent_provider_uuid'),
                                 'root': rp.get('root_provider_uuid')}
    allocations = {}
    for rp in providers:
        resp = pl.get('/resource_providers/%s/allocations' % rp,
                      microversion='1.14')
        if resp.status_code == 404:
            continue  # removed while listed
        for consumer, alloc in resp.json()['allocations'].items():
            allocations.setdefault(consumer, {})[rp] = alloc['resources']
    compute_nodes = {h.id: h.name for h in conn.compute.hypervisors()}
    listed = [m for m in conn.compute.migrations() if m.uuid]
    migrations = {m.uuid: m.status for m in listed}
    migration_servers = {m.uuid: m.server_id for m in listed}
    trees = {}
    for name, where in hosts.items():
        host = host_mod.ComputeHost(name, where['state'])
        tree = host_tree(host)
        tree['domains'] = libvirt_domains(where.get('libvirt_uri')
                                          or host.libvirt_uri)
        trees[name] = tree
    applying = None
    if plans:
        try:
            applying = [p.get('id') or p.get('uuid') for p in
                        resq_client(conn).list_plans(state='applying')]
        except Exception:
            applying = None  # resq-api does not answer: unknown, not none
    return {'servers': servers, 'providers': providers,
            'allocations': allocations, 'compute_nodes': compute_nodes,
            'migrations': migrations,
            'migration_servers': migration_servers, 'hosts': trees,
            'plans_applying': applying, 'at': time.time()}


# -- judging it (pure) --------------------------------------------------------
def _root(providers, rp):
    seen = set()
    while rp in providers and rp not in seen:
        seen.add(rp)
        info = providers[rp]
        if info.get('root'):
            return info['root']
        if not info.get('parent'):
            return rp
        rp = info['parent']
    return rp


def group_claims(inv):
    """``{server uuid: [(host, group, monitoring group or None)]}``.

    Every ``resq-<uuid>`` control group and every ``resq-<uuid>``
    monitoring group of a ``resq-`` class, on every host.
    """
    claims = {}
    for host, tree in sorted(inv['hosts'].items()):
        for group, info in sorted(tree['groups'].items()):
            tail = group[len(GROUP_PREFIX):]
            if _UUID.match(tail):
                claims.setdefault(tail, []).append((host, group, None))
            for mon in sorted(info.get('mons', {})):
                tail = mon[len(GROUP_PREFIX):]
                if mon.startswith(GROUP_PREFIX) and _UUID.match(tail):
                    claims.setdefault(tail, []).append((host, group, mon))
    return claims


def settled_resq_servers(inv, skip=()):
    """ResQ servers that run and that nothing is changing.

    ACTIVE, no task, on a host, not among ``skip`` (servers the soak is
    acting on).
    """
    return {sid: s for sid, s in inv['servers'].items()
            if s['status'] == 'ACTIVE' and not s.get('task_state')
            and s.get('host') and sid not in skip and is_resq(s['specs'])}


def server_problems(inv, sid, claims=None):
    """What is wrong with one server's partition ([] if nothing)."""
    s = inv['servers'][sid]
    claims = group_claims(inv) if claims is None else claims
    llc = {rp: res[RC_LLC_WAY] for rp, res in
           inv['allocations'].get(sid, {}).items() if RC_LLC_WAY in res}
    if len(llc) != 1:
        return ['Placement holds %d %s allocations for it' % (
            len(llc), RC_LLC_WAY)]
    [(rp, ways)] = llc.items()
    problems = []
    root = next((i for i, n in inv['compute_nodes'].items()
                 if n == s.get('node')), None)
    provider = inv['providers'].get(rp, {})
    if root is None or provider.get('parent') != root:
        problems.append('its ways are on provider %s, not a cache domain '
                        'of compute node %s' % (rp, s.get('node')))
    domain = cache_domain.domain_of(root, rp) if root else None
    wanted = specs_ways(s['specs'])
    if wanted != ways:
        problems.append('its flavor asks for %d ways, Placement allocated '
                        '%d' % (wanted, ways))
    tree = inv['hosts'].get(s['host'])
    if tree is None:
        return problems + ['its host %s is not read' % s['host']]
    mine = [(g, m) for h, g, m in claims.get(sid, ()) if h == s['host']]
    if not mine:
        return problems + ['no resq- group of %s names it' % s['host']]
    if len(mine) > 1:
        problems.append('%d groups of %s name it: %s' % (
            len(mine), s['host'], mine))
    if domain is None:
        return problems
    group, mon = mine[0]
    info = tree['groups'][group]
    mask = info['l3'].get(domain)
    if mask is None:
        return problems + ['group %s has no L3 mask for domain %s' % (
            group, domain)]
    if cbm.bits(mask) != ways:
        problems.append('group %s\'s mask %x has %d ways, Placement '
                        'allocated %d' % (group, mask, cbm.bits(mask),
                                          ways))
    if not cbm.is_contiguous(mask):
        problems.append('mask %x of %s is not contiguous' % (mask, group))
    if mask & tree['default']['l3'].get(domain, 0):
        problems.append('mask %x of %s shares ways with the default group'
                        % (mask, group))
    for other, theirs in sorted(tree['groups'].items()):
        if other != group and theirs['l3'].get(domain, 0) & mask:
            problems.append('mask %x of %s overlaps %s\'s' % (
                mask, group, other))
    pinned = set(tree['domains'].get(sid, {}).get('pinned') or ())
    if not pinned:
        problems.append('its libvirt domain on %s pins no CPU' % s['host'])
    elif not pinned <= set(info['cpus']):
        problems.append('group %s holds CPUs %s, not all of the pinned %s'
                        % (group, info['cpus'], sorted(pinned)))
    if pinned & set(tree['default']['cpus']):
        problems.append('pinned CPUs %s are still in the default group' %
                        sorted(pinned & set(tree['default']['cpus'])))
    if mon is not None and pinned and set(info['mons'][mon]) != pinned:
        problems.append('monitoring group %s/%s holds CPUs %s, pinned are '
                        '%s' % (group, mon, info['mons'][mon],
                                sorted(pinned)))
    return problems


def partition_problems(inv, skip=()):
    """``{server uuid: [problems]}`` of settled, unpartitioned servers."""
    claims = group_claims(inv)
    found = {}
    for sid in sorted(settled_resq_servers(inv, skip)):
        problems = server_problems(inv, sid, claims)
        if problems:
            found[sid] = problems
    return found


def double_partitions(inv, skip=(), young=()):
    """``{server uuid: claims}`` of servers more than one group names.

    ``young``: ``(host, uuid)`` of domains Nova left behind that the
    agent may still partition (:func:`nova_leftovers`); their groups are
    not counted.
    """
    found = {}
    for sid, where in group_claims(inv).items():
        where = [w for w in where if (w[0], sid) not in young]
        if len(where) > 1 and sid not in skip:
            found[sid] = where
    return found


def nova_leftovers(inv, skip=()):
    """``{(host, uuid)}``: domains of a server Nova places elsewhere.

    A start that failed while the host's libvirtd restarted (its clean-up
    could not destroy the domain) and that Nova rescheduled to another
    host leaves a running domain that no Nova record names on this host;
    nova-compute never destroys it (its periodic task reaps domains of
    deleted instances only). It is Nova's leak, not the agent's: the
    agent must leave it unpartitioned (after its grace for a live
    migration away), and the soak counts and names it apart.
    """
    servers = inv['servers']
    found = set()
    for host, tree in inv['hosts'].items():
        for uuid in tree.get('domains', {}):
            s = servers.get(uuid)
            if (s is not None and uuid not in skip and s.get('host')
                    and s['host'] != host):
                found.add((host, uuid))
    return found


def leaks(inv, skip=(), young=()):
    """What is left of servers that are gone (or was never anyone's).

    ``skip``: servers being created, moved or deleted right now.
    ``young``: ``(host, uuid)`` of domains Nova left behind whose group
    the agent may still hold (:data:`LEFTOVER_GRACE_S`).

    :returns: ``{'groups', 'allocations', 'domains', 'providers': [text],
        'plans_applying': [plan ids] or None (resq-api did not answer)}``.
        Domains Nova left behind (:func:`nova_leftovers`) are not among
        ``domains``; a group still naming one once it is no longer young
        is among ``groups``.
    """
    servers = inv['servers']
    skip = set(skip)
    on_host = {}
    for sid, s in servers.items():
        if s.get('host'):
            on_host.setdefault(s['host'], set()).add(sid)
    found = {'groups': [], 'allocations': [], 'domains': [],
             'providers': [], 'plans_applying': inv.get('plans_applying')}
    for host, tree in sorted(inv['hosts'].items()):
        here = on_host.get(host, set()) | skip | {
            uuid for h, uuid in young if h == host}
        for group, info in sorted(tree['groups'].items()):
            tail = group[len(GROUP_PREFIX):]
            if group.startswith(CLASS_PREFIX) and tail[3:].isdigit():
                for mon in sorted(info.get('mons', {})):
                    uuid = mon[len(GROUP_PREFIX):]
                    if _UUID.match(uuid) and uuid not in here:
                        found['groups'].append(
                            '%s: %s/mon_groups/%s names no server on %s'
                            % (host, group, mon, host))
                if not info.get('mons') and not info.get('cpus'):
                    found['groups'].append('%s: class %s has no member'
                                           % (host, group))
            elif _UUID.match(tail) and tail not in here:
                found['groups'].append('%s: %s names no server on %s' % (
                    host, group, host))
        for uuid in sorted(tree.get('domains', {})):
            if uuid not in here and not servers.get(uuid, {}).get('host'):
                found['domains'].append('%s: libvirt domain %s is no server '
                                        'of %s' % (host, uuid, host))
    nodes = inv['compute_nodes']
    for consumer, by_rp in sorted(inv['allocations'].items()):
        if consumer in skip:
            continue
        if consumer in servers:
            s = servers[consumer]
            mine = next((i for i, n in nodes.items() if n == s.get('node')),
                        None)
            if mine is None:
                continue
            others = sorted({_root(inv['providers'], rp) for rp in by_rp}
                            - {mine})
            if others:
                found['allocations'].append(
                    'server %s on %s also holds allocations under %s' % (
                        consumer, s.get('node'),
                        ', '.join(nodes.get(o, o) for o in others)))
            continue
        status = inv['migrations'].get(consumer)
        if status is not None and status not in FINAL_MIGRATION_STATES:
            continue  # a migration under way holds its source
        if inv.get('migration_servers', {}).get(consumer) in skip:
            # A migration of a server being acted on, or in ERROR: Nova's
            # to settle while the server exists (the optimizer's audit
            # keeps it too); judged once the server is deleted.
            continue
        found['allocations'].append('consumer %s (%s) holds %s' % (
            consumer, 'migration %s' % status if status else 'no server',
            sorted(by_rp)))
    for rp, info in sorted(inv['providers'].items()):
        if _root(inv['providers'], rp) not in nodes:
            found['providers'].append('provider %s (%s) is of no compute '
                                      'node' % (rp, info.get('name')))
    return found


#: nova-compute's line when its periodic task
#: ``_cleanup_running_deleted_instances`` (``[DEFAULT]
#: running_deleted_instance_action = reap``) destroys a domain whose
#: instance Nova has deleted.
REAPED = 'which is marked as DELETED but still present on host'
_LOG_LINE = re.compile(
    r'^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(\.\d+)? .*?'
    r'\[instance: ([0-9a-f-]{36})\] .*?'
    r"Destroying instance with name label '([^']*)' " + re.escape(REAPED))


def reaped_domains(lines, since=None):
    """Domains nova-compute reaped, from its log lines.

    :param since: seconds since the epoch (local time, as the log's
        stamps); older lines are left out.
    :returns: ``[{'at': seconds since the epoch, 'uuid', 'name'}]``.
    """
    found = []
    for line in lines:
        m = _LOG_LINE.match(line)
        if not m:
            continue
        at = time.mktime(time.strptime(m.group(1), '%Y-%m-%d %H:%M:%S')) \
            + float(m.group(2) or 0)
        if since is not None and at < since:
            continue
        found.append({'at': at, 'uuid': m.group(3), 'name': m.group(4)})
    return found


def leak_counts(found):
    """``{kind: count}`` of :func:`leaks` (plans: None when unknown)."""
    plans = found.get('plans_applying')
    return {'groups': len(found['groups']),
            'allocations': len(found['allocations']),
            'domains': len(found['domains']),
            'providers': len(found['providers']),
            'plans_applying': None if plans is None else len(plans)}
