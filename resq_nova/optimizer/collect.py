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
* memory bandwidth: a domain whose provider has a ``CUSTOM_MEM_BW_MIBPS``
  inventory (the host has MBA and the operator set how much) offers its
  total less reserved, and an instance holds what its allocation there
  says; a domain without that inventory gives none, so where any listed
  instance holds bandwidth such a domain offers 0 (Placement would refuse
  the move), and where none does it stays unlimited (a cloud without MBA
  is planned as before);
* ways, classes of service or bandwidth held in a domain by anything else
  (an in-progress migration, an instance not counted above) are taken
  too;
* server groups, with their policy and members.
"""

import collections
import datetime

from oslo_log import log as logging

from resq_common import cache_domain
from resq_common.clients import placement as placement_client
from resq_common import extra_specs
from resq_nova.optimizer import snapshot as snap_mod

LOG = logging.getLogger(__name__)

PCPU = 'PCPU'
PIN_KEY = 'resq:migratable'
CELL_KEY = 'resq_nova_cell'
PCI_ALIAS_KEY = 'pci_passthrough:alias'
PAGE_SIZE_KEY = 'hw:mem_page_size'
# Classes ResQ instances hold on the compute node that the plan counts
# per node (PCPU is counted per cache domain instead).
NODE_CLASSES_SKIPPED = (PCPU,)


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


class IncompleteSnapshot(snap_mod.SnapshotError):
    msg_fmt = ('the live cloud could not be read whole (%(reason)s); the '
               'optimizer plans from a complete snapshot only, so nothing '
               'is planned this round')


def collect(placement, compute, cell_key=CELL_KEY):
    """A :class:`~resq_nova.optimizer.snapshot.Snapshot` of the cloud.

    Every list is read page by page; a cloud that cannot be read whole (a
    Nova cell down, so its servers or services come back without their
    details) is refused rather than planned from part of it.

    :param cell_key: metadata key of the host aggregates that name each
        host's Nova cell (``[resq_optimizer] cell_aggregate_key``).
    :raises IncompleteSnapshot: part of the cloud could not be read.
    :raises resq_common.clients.placement.PlacementError:
    :raises resq_common.clients.compute.ComputeError: either service failing or
        unreachable (the clients' timeouts bound how long that takes).
    """
    services = {s['host']: s for s in compute.list_compute_services()}
    partial = sorted(h for h, s in services.items()
                     if s.get('status') == 'UNKNOWN' or 'state' not in s)
    if partial:
        raise IncompleteSnapshot(reason='Nova gave no status for the '
                                 'compute services of %s (their cell does '
                                 'not answer)' % ', '.join(partial[:5]))
    nodes = {}
    for hyp in compute.list_hypervisors():
        service = hyp.get('service') or {}
        if service.get('host') in services:
            nodes.setdefault(service['host'], []).append(
                hyp['hypervisor_hostname'])
    servers = compute.list_all_servers()
    partial = [s['id'] for s in servers
               if s.get('status') == 'UNKNOWN' or 'flavor' not in s]
    if partial:
        raise IncompleteSnapshot(reason='Nova gave only part of %d '
                                 'server(s), e.g. %s (their cell does not '
                                 'answer)' % (len(partial), partial[0]))
    by_host = {}
    for server in servers:
        by_host.setdefault(server.get('OS-EXT-SRV-ATTR:host'), []).append(
            server)
    cell_of = cells_of(compute, cell_key) if cell_key else {}

    hosts = []
    instances = []
    for host_name in sorted(services):
        service = services[host_name]
        for node in nodes.get(host_name, ()):
            host, insts = _host(placement, service, node,
                                by_host.get(host_name, []))
            if host is not None:
                host.cell = cell_of.get(host_name)
                hosts.append(host)
                instances.extend(insts)
    groups = [snap_mod.ServerGroup(g.get('policy') or (g.get('policies')
                                                       or ['?'])[0],
                                   list(g.get('members', [])), g.get('id'))
              for g in compute.list_server_groups()]
    _no_bandwidth_offered(hosts, instances)
    snap = snap_mod.Snapshot(
        hosts, instances, groups,
        source='the live cloud',
        taken_at=datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec='seconds'))
    _huge_pages_unknown(snap)
    snap_mod.check_capacity(snap)
    return snap


def cells_of(compute, key=CELL_KEY):
    """``{host: cell}`` from aggregates whose metadata has ``key``.

    :raises IncompleteSnapshot: a host in two aggregates naming different
        cells (fix the aggregates: a host is in one cell).
    """
    out = {}
    for agg in compute.list_aggregates():
        cell = (agg.get('metadata') or {}).get(key)
        if not cell:
            continue
        for host in agg.get('hosts') or ():
            if out.get(host, cell) != cell:
                raise IncompleteSnapshot(
                    reason='host %s is in aggregates naming cells %s and %s '
                    '(metadata %s); a host is in one Nova cell'
                    % (host, out[host], cell, key))
            out[host] = cell
    return out


def _no_bandwidth_offered(hosts, instances):
    """Domains without a bandwidth inventory offer none when it is held.

    A flavor that asks for ``CUSTOM_MEM_BW_MIBPS`` lands only where a
    domain has an inventory of it: a plan must not move its instance to a
    domain without one. Without any instance holding bandwidth, such
    domains stay unlimited (nothing to limit).
    """
    if not any(i.mem_bw_mibps for i in instances):
        return
    for h in hosts:
        for d in h.domains:
            if d.mem_bw_mibps is None:
                d.mem_bw_mibps = 0


def _huge_pages_unknown(snap):
    """Pin instances needing huge pages where their cell's are not known.

    Nova's NUMA fit checks a cell's huge pages on the destination; a plan
    that cannot see them might move an instance where it does not fit, so
    such instances stay, with the reason.
    """
    unknown = {}
    for h in snap.hosts:
        if h.accepts and any(d.hugepages_mb is None for d in h.domains):
            unknown.setdefault(h.cell, []).append(h.name)
    for inst in snap.instances:
        cell = snap.host(inst.host).cell
        if inst.hugepages and inst.migratable and unknown.get(cell):
            inst.migratable = False
            inst.reason = ('its flavor asks for huge pages and %s do(es) '
                           'not report its huge pages per NUMA cell (%s*): '
                           'the plan cannot check the destination'
                           % (', '.join(sorted(unknown[cell])[:3]),
                              cache_domain.TRAIT_HUGEPAGES_PREFIX))


def _host(placement, service, node, servers):
    """``(Host, [Instance])`` of one compute node.

    ``(None, [])`` when Placement has no ResQ cache domain for it.
    """
    try:
        root = placement.find_provider(node)
    except placement_client.ProviderNotFound:
        return None, []
    root_uuid = root['uuid']
    domains = _cache_domains(placement, root_uuid)
    if not domains:
        return None, []
    root_inv = placement.get_inventories(root_uuid)
    root_use = placement.get_usages(root_uuid)
    tally = _Tally(root_uuid, {uuid: dom_id
                               for dom_id, uuid, _, _, _ in domains})
    down = service.get('state') == 'down'
    for server in servers:
        if server.get('OS-EXT-SRV-ATTR:hypervisor_hostname') in (None, node):
            tally.count(placement, service, node, server, down)
    # PCPUs pinned by non-ResQ instances (or anything else) on this node.
    taken_cores = max(int(root_use.get(PCPU, 0)) - tally.pcpus, 0)
    pcpu_total = usable(root_inv.get(PCPU))
    doms = [_domain(row, tally, taken_cores, pcpu_total // len(domains))
            for row in sorted(domains)]
    host = snap_mod.Host(
        name=service['host'], clos=sum(d.clos for d in doms), domains=doms,
        disabled=service.get('status') == 'disabled', down=down,
        az=service.get('zone'), other_load=tally.others, uuid=root_uuid,
        resources=_node_caps(root_inv, root_use, tally.node))
    return host, tally.instances


def _cache_domains(placement, root_uuid):
    """``[(domain id, provider, inventory, traits, usages)]`` under a root.

    Only the providers of a ResQ cache domain with an LLC way inventory.
    """
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
    return domains


class _Tally:
    """What a node's servers hold: ResQ instances and the others' load."""

    def __init__(self, root_uuid, dom_of):
        self.root_uuid = root_uuid
        self.dom_of = dom_of
        self.instances = []
        self.others = 0
        self.pcpus = 0
        # provider -> [ways, clos, bandwidth] of listed ones
        self.held = {}
        self.node = collections.Counter()   # ResQ instances' root resources
        self.other_numa = collections.Counter()  # others' memory, by page

    def _other(self, specs, flavor):
        self.others += 1
        self.other_numa[_page_kind(specs)] += int(flavor.get('ram') or 0)

    def count(self, placement, service, node, server, down):
        flavor = server.get('flavor') or {}
        specs = flavor.get('extra_specs') or {}
        if specs.get('resq:slo') != extra_specs.RESERVED:
            self._other(specs, flavor)
            return
        allocs = placement.get_allocations(server['id'])
        llc = [(rp, res) for rp, res in allocs.items()
               if rp in self.dom_of and extra_specs.RC_LLC_WAY in res]
        if len(llc) != 1:
            LOG.warning('Server %s has %d LLC allocations on %s; counting '
                        'it as load that stays', server['id'], len(llc),
                        node)
            self._other(specs, flavor)
            return
        rp, res = llc[0]
        ways = int(res[extra_specs.RC_LLC_WAY])
        clos = int(res.get(extra_specs.RC_LLC_CLOS, 0))
        cores = int(flavor.get('vcpus') or 0)
        on_root = allocs.get(self.root_uuid, {})
        self.pcpus += int(on_root.get(PCPU, cores))
        node_res = {rc: int(n) for rc, n in on_root.items()
                    if rc not in NODE_CLASSES_SKIPPED and n}
        self.node.update(node_res)
        mem_bw = int(res.get(extra_specs.RC_MEM_BW, 0))
        use = self.held.setdefault(rp, [0, 0, 0])
        use[0] += ways
        use[1] += clos
        use[2] += mem_bw
        reason = (_pinned(server, specs, down)
                  or _unmodelled(allocs, self.root_uuid, self.dom_of, specs))
        self.instances.append(snap_mod.Instance(
            uuid=server['id'], host=service['host'], domain=self.dom_of[rp],
            cores=cores, ways=ways, clos=clos, migratable=reason is None,
            az=server.get('pinned_availability_zone'), reason=reason,
            name=server.get('name'),
            memory_mb=int(flavor.get('ram') or 0),
            hugepages=_page_kind(specs) == 'hugepages_mb',
            mem_bw_mibps=mem_bw, resources=node_res))


def _domain(row, tally, taken_cores, even_cores):
    """The :class:`~snapshot.Domain` of one cache domain's provider row.

    What the instances the snapshot does not list hold there (the others'
    ways, classes, cores, memory and memory bandwidth) is not free to the
    plan.
    """
    dom_id, uuid, inv, traits, usage = row
    cores = _cores_trait(traits)
    if cores is None:
        cores = even_cores
    if extra_specs.RC_RESQ_CORE in inv:
        # Less an on-demand lease's cores: reserved SLOs never get them.
        cores = min(cores, usable(inv[extra_specs.RC_RESQ_CORE]))
    ways = usable(inv.get(extra_specs.RC_LLC_WAY))
    clos = usable(inv.get(extra_specs.RC_LLC_CLOS))
    mine = tally.held.get(uuid, [0, 0, 0])
    other_ways = max(int(usage.get(extra_specs.RC_LLC_WAY, 0)) - mine[0], 0)
    other_clos = max(int(usage.get(extra_specs.RC_LLC_CLOS, 0)) - mine[1], 0)
    mem_bw = None
    if extra_specs.RC_MEM_BW in inv:
        # Total less reserved (the default group's) less what consumers
        # the snapshot does not list hold.
        other_bw = max(int(usage.get(extra_specs.RC_MEM_BW, 0)) - mine[2], 0)
        mem_bw = max(usable(inv[extra_specs.RC_MEM_BW]) - other_bw, 0)
    numa = {}
    for key, prefix in (('memory_mb', cache_domain.TRAIT_MEMORY_PREFIX),
                        ('hugepages_mb', cache_domain.TRAIT_HUGEPAGES_PREFIX)):
        total = _number_trait(traits, prefix)
        if total is not None:
            # Placement does not say in which cell the others' memory is:
            # every cell loses it.
            numa[key] = max(total - tally.other_numa[key], 0)
    return snap_mod.Domain(
        id=dom_id, cores=max(cores - taken_cores, 0),
        ways=max(ways - other_ways, 0),
        reserved_ways=int(inv[extra_specs.RC_LLC_WAY].get('reserved', 0)),
        provider=uuid, clos=max(clos - other_clos, 0), mem_bw_mibps=mem_bw,
        **numa)


def _node_caps(root_inv, root_use, resq_node):
    """The root's other resources left to the ResQ instances listed."""
    node_caps = {}
    for rc, inv in root_inv.items():
        if rc in NODE_CLASSES_SKIPPED:
            continue
        capacity = int((int(inv['total']) - int(inv.get('reserved', 0)))
                       * float(inv.get('allocation_ratio', 1.0)))
        others_use = max(int(root_use.get(rc, 0)) - resq_node[rc], 0)
        node_caps[rc] = max(capacity - others_use, 0)
    return node_caps


def _number_trait(traits, prefix):
    for t in traits:
        if t.startswith(prefix) and t[len(prefix):].isdigit() \
                and t[len(prefix):].isascii():
            return int(t[len(prefix):])
    return None


SMALL_PAGES = ('', 'small', 'any', '4', '4k', '4kb', '4096')


def _page_kind(specs):
    """Which memory of a NUMA cell a flavor takes: small or huge pages."""
    size = str(specs.get(PAGE_SIZE_KEY, '')).strip().lower()
    return 'memory_mb' if size in SMALL_PAGES else 'hugepages_mb'


def _unmodelled(allocs, root_uuid, dom_of, specs):
    """Why the plan cannot model what the server holds, or ``None``.

    PCI devices (a flavor alias, or devices Placement tracks) and anything
    on a provider other than the compute node and its cache domains (a
    port's bandwidth, a vGPU) are not in the plan: a move could land where
    Nova refuses it, so the server stays.
    """
    if specs.get(PCI_ALIAS_KEY):
        return ('it holds PCI devices (%s=%s), which the plan does not '
                'model' % (PCI_ALIAS_KEY, specs[PCI_ALIAS_KEY]))
    for rp, res in sorted(allocs.items()):
        if rp != root_uuid and rp not in dom_of:
            return ('it holds %s on provider %s (a device or a port\'s '
                    'bandwidth), which the plan does not model'
                    % (', '.join(sorted(res)), rp))
    return None


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
