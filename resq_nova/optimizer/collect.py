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
"""The live cluster as a snapshot: Placement and Nova, read only.

* compute hosts: Nova's ``nova-compute`` services (host, zone, disabled,
  down) and hypervisors (the node name, which is the compute node's
  Placement provider);
* cache domains: the children of that provider that the agent created
  (``CUSTOM_LLC_WAY``), their ways less the reserved ones, their classes of
  service, and their cores: the ``CUSTOM_RESQ_CORES_<n>`` trait the agent
  publishes (else the node's PCPU total shared evenly), less the PCPUs
  non-ResQ instances pin on the host (Placement does not say in which
  cell, so every domain loses them: capacity that is taken is never
  offered twice);
* ResQ instances: servers whose flavor has ``resq:slo=reserved``, with the
  cache domain, ways and class of service of their allocation in
  Placement and their flavor's dedicated cores; they can move when ACTIVE
  with no task, neither flavor nor server metadata says
  ``resq:migratable=false``, and their host's compute service is up;
* ways or classes of service held in a domain by anything else (an
  in-progress migration, an instance not counted above) are taken too;
* server groups, with their policy and members.
"""

import datetime

from oslo_log import log as logging

from resq_common import cache_domain
from resq_common.clients import placement as placement_client
from resq_common import extra_specs
from resq_nova.optimizer import snapshot as snap_mod

LOG = logging.getLogger(__name__)

PCPU = 'PCPU'
PIN_KEY = 'resq:migratable'


def _false(value):
    return str(value).strip().lower() in ('false', '0', 'no', 'off')


def usable(inventory):
    """Total less reserved of one inventory record (0 without one)."""
    if not inventory:
        return 0
    return max(int(inventory['total']) - int(inventory.get('reserved', 0)),
               0)


def _cores_trait(traits):
    for t in traits:
        if t.startswith(cache_domain.TRAIT_CORES_PREFIX):
            try:
                return int(t[len(cache_domain.TRAIT_CORES_PREFIX):])
            except ValueError:
                pass
    return None


def collect(placement, compute):
    """A :class:`~resq_nova.optimizer.snapshot.Snapshot` of the cloud.

    :raises resq_common.clients.placement.PlacementError:
    :raises resq_common.clients.compute.ComputeError: either service failing or
        unreachable (the clients' timeouts bound how long that takes).
    """
    services = {s['host']: s for s in compute.list_compute_services()}
    nodes = {}
    for hyp in compute.list_hypervisors():
        service = hyp.get('service') or {}
        if service.get('host') in services:
            nodes.setdefault(service['host'], []).append(
                hyp['hypervisor_hostname'])
    servers = compute.list_all_servers()
    by_host = {}
    for server in servers:
        by_host.setdefault(server.get('OS-EXT-SRV-ATTR:host'), []).append(
            server)

    hosts = []
    instances = []
    for host_name in sorted(services):
        service = services[host_name]
        for node in nodes.get(host_name, ()):
            host, insts = _host(placement, service, node,
                                by_host.get(host_name, []))
            if host is not None:
                hosts.append(host)
                instances.extend(insts)
    groups = [snap_mod.ServerGroup(g.get('policy') or (g.get('policies')
                                                       or ['?'])[0],
                                   list(g.get('members', [])), g.get('id'))
              for g in compute.list_server_groups()]
    snap = snap_mod.Snapshot(
        hosts, instances, groups,
        source='the live cloud',
        taken_at=datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec='seconds'))
    snap_mod.check_capacity(snap)
    return snap


def _host(placement, service, node, servers):
    """``(Host, [Instance])`` of one compute node.

    ``(None, [])`` when Placement has no ResQ cache domain for it.
    """
    try:
        root = placement.find_provider(node)
    except placement_client.ProviderNotFound:
        return None, []
    root_uuid = root['uuid']
    domains = []
    for provider in placement.tree(root_uuid):
        dom_id = cache_domain.domain_of(root_uuid, provider['uuid'])
        if dom_id is None:
            continue
        inv = placement.get_inventories(provider['uuid'])
        if extra_specs.RC_LLC_WAY not in inv:
            continue
        domains.append((dom_id, provider['uuid'], inv,
                        placement.get_traits(provider['uuid']),
                        placement.get_usages(provider['uuid'])))
    if not domains:
        return None, []
    root_inv = placement.get_inventories(root_uuid)
    root_use = placement.get_usages(root_uuid)
    pcpu_total = usable(root_inv.get(PCPU))
    down = service.get('state') == 'down'
    resq = []
    others = 0
    resq_pcpus = 0
    held = {}            # provider -> [ways, clos] of listed instances
    dom_of = {uuid: dom_id for dom_id, uuid, _, _, _ in domains}
    for server in servers:
        if server.get('OS-EXT-SRV-ATTR:hypervisor_hostname') not in (
                None, node):
            continue
        flavor = server.get('flavor') or {}
        specs = flavor.get('extra_specs') or {}
        if specs.get('resq:slo') != extra_specs.RESERVED:
            others += 1
            continue
        allocs = placement.get_allocations(server['id'])
        llc = [(rp, res) for rp, res in allocs.items()
               if rp in dom_of and extra_specs.RC_LLC_WAY in res]
        if len(llc) != 1:
            LOG.warning('Server %s has %d LLC allocations on %s; counting '
                        'it as load that stays', server['id'], len(llc),
                        node)
            others += 1
            continue
        rp, res = llc[0]
        ways = int(res[extra_specs.RC_LLC_WAY])
        clos = int(res.get(extra_specs.RC_LLC_CLOS, 0))
        cores = int(flavor.get('vcpus') or 0)
        resq_pcpus += int(allocs.get(root_uuid, {}).get(PCPU, cores))
        use = held.setdefault(rp, [0, 0])
        use[0] += ways
        use[1] += clos
        reason = _pinned(server, specs, down)
        resq.append(snap_mod.Instance(
            uuid=server['id'], host=service['host'], domain=dom_of[rp],
            cores=cores, ways=ways, clos=clos, migratable=reason is None,
            az=server.get('pinned_availability_zone'), reason=reason,
            name=server.get('name')))
    # PCPUs pinned by non-ResQ instances (or anything else) on this node.
    taken_cores = max(int(root_use.get(PCPU, 0)) - resq_pcpus, 0)
    doms = []
    host_clos = 0
    for dom_id, uuid, inv, traits, usage in sorted(domains):
        cores = _cores_trait(traits)
        if cores is None:
            cores = pcpu_total // len(domains)
        if extra_specs.RC_RESQ_CORE in inv:
            # Less an on-demand lease's cores: reserved SLOs never get
            # them.
            cores = min(cores, usable(inv[extra_specs.RC_RESQ_CORE]))
        ways = usable(inv.get(extra_specs.RC_LLC_WAY))
        clos = usable(inv.get(extra_specs.RC_LLC_CLOS))
        mine = held.get(uuid, [0, 0])
        other_ways = max(int(usage.get(extra_specs.RC_LLC_WAY, 0))
                         - mine[0], 0)
        other_clos = max(int(usage.get(extra_specs.RC_LLC_CLOS, 0))
                         - mine[1], 0)
        doms.append(snap_mod.Domain(
            id=dom_id, cores=max(cores - taken_cores, 0),
            ways=max(ways - other_ways, 0),
            reserved_ways=int(
                inv[extra_specs.RC_LLC_WAY].get('reserved', 0)),
            provider=uuid, clos=max(clos - other_clos, 0)))
        host_clos += max(clos - other_clos, 0)
    host = snap_mod.Host(
        name=service['host'], clos=host_clos, domains=doms,
        disabled=service.get('status') == 'disabled', down=down,
        az=service.get('zone'), other_load=others, uuid=root_uuid)
    return host, resq


def _pinned(server, specs, host_down):
    """Why the server cannot move now, or ``None``."""
    if server.get('status') != 'ACTIVE':
        return 'status %s' % server.get('status')
    task = server.get('OS-EXT-STS:task_state')
    if task:
        return 'task %s in progress' % task
    if _false(specs.get(PIN_KEY, 'true')):
        return 'its flavor says %s=false' % PIN_KEY
    if _false((server.get('metadata') or {}).get(PIN_KEY, 'true')):
        return 'its metadata says %s=false' % PIN_KEY
    if host_down:
        return 'its compute service is down'
    return None
