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
"""SLO admission against a real cluster: the plan. Pure.

Turns an SLO term and Placement's view of the cluster into a plan: the
greedy's K instances and their ways (ResQ §5.3.1), a first-fit-decreasing
check that the cache domains and compute nodes have room for them, and the
flavors that carry the SLO to Nova (:mod:`resq_nova.deploy.flavors`). Talking
to
Placement and Nova is :mod:`resq_nova.deploy.deployment`'s job.

The cluster is read from one ``GET /allocation_candidates`` for the
smallest instance the profile allows (:func:`request_groups`): every
compute node that could host at least one instance, with the capacity and
usage of its cache-domain providers and of its own ``PCPU``, memory and
disk. The profile's platform traits are checked here rather than sent to
Placement, so a cluster without a cache of the profile's shape is refused
as ``platform`` with the shapes it does have, instead of as "no host".

A term whose instances hold memory bandwidth (``mem_bw_mibps``) needs it
free in the cache domain that gives the ways: each domain's free
``CUSTOM_MEM_BW_MIBPS`` (none where the domain has no inventory of it) is
read from the same answer, the fit keeps it, and a term that fits the ways
and cores but not the bandwidth is refused as ``memory_bandwidth``.
"""

import dataclasses

from resq_common import cache_domain
from resq_common import extra_specs
from resq_nova.admission import greedy
from resq_nova.deploy import flavors

PLATFORM = 'platform'


@dataclasses.dataclass(frozen=True)
class Instance:
    name: str
    ways: int
    mpps: float
    flavor: str
    host: str      # compute node provider UUID (predicted)
    domain: str    # cache-domain provider UUID (predicted)


@dataclasses.dataclass
class Domain:
    uuid: str
    free_ways: int
    free_clos: int
    ways: int
    traits: frozenset
    # Dedicated cores of the domain's NUMA cell not held by ResQ instances
    # there (at least one core each), from the agent's CUSTOM_RESQ_CORES_<n>
    # trait; None when the agent does not report it. An upper bound: a
    # non-ResQ pinned instance in the cell is not seen (Placement keeps
    # PCPU per host), and the scheduler's filter still checks the cell.
    free_cores: int = None
    # Classes of service for instances (capacity), None when unknown.
    clos: int = None
    # Free memory bandwidth (MiB/s): 0 where the domain offers none.
    free_mem_bw: int = 0


@dataclasses.dataclass
class Host:
    uuid: str
    slots: int     # instances its free PCPU, memory and disk allow
    pcpus: int     # PCPU capacity
    domains: list


@dataclasses.dataclass(frozen=True)
class Plan:
    term: greedy.SLOTerm
    sizing: greedy.Sizing
    flavors: tuple      # largest first
    instances: tuple    # largest first: the boot order
    # Hosts disabled as freed by a plan whose room the term needs (the
    # caller enables them before booting).
    enable: tuple = ()

    def to_dict(self, host_names=None):
        names = host_names or {}
        doc = {
            'term': self.term.name,
            'profile': self.term.profile.profile_id,
            'throughput_mpps': self.term.throughput_mpps,
            'latency_p95_us': self.term.latency_p95_us,
            'load_cap': round(self.sizing.load_cap, 6),
            'capacity_mpps': round(self.sizing.aggregate_mpps, 6),
            'flavors': [dataclasses.asdict(f) for f in self.flavors],
            'instances': [dict(dataclasses.asdict(i),
                               host=names.get(i.host, i.host),
                               mpps=round(i.mpps, 6))
                          for i in self.instances],
        }
        if greedy.bw_of(self.term):
            # MiB/s of memory bandwidth each instance holds.
            doc['mem_bw_mibps'] = greedy.bw_of(self.term)
        return doc


def server_name(term, index):
    return '%s-%d' % (term, index)


def request_groups(profile, options):
    """Placement request groups of the smallest instance of ``profile``."""
    root = {'PCPU': options.vcpus, 'MEMORY_MB': options.ram_mb}
    if options.disk_gb:
        root['DISK_GB'] = options.disk_gb
    llc = {'resources': {extra_specs.RC_LLC_WAY: profile.min_ways,
                         extra_specs.RC_LLC_CLOS: 1},
           'required': [extra_specs.TRAIT_CAT_L3]}
    return {'': {'resources': root}, flavors.LLC_GROUP: llc}


def without_roots(body, roots):
    """An allocation-candidates ``body`` without the trees of ``roots``."""
    if not roots:
        return body
    summaries = body.get('provider_summaries') or {}
    keep = {u: v for u, v in summaries.items()
            if (v.get('root_provider_uuid') or u) not in roots}
    return dict(body, provider_summaries=keep)


def _free(summary, rc):
    res = summary['resources'].get(rc)
    return (res['capacity'] - res['used']) if res else 0


def cluster(candidates, options):
    """Hosts and their cache domains from an allocation-candidates body."""
    summaries = candidates.get('provider_summaries', {})
    hosts = {}
    for uuid, summary in sorted(summaries.items()):
        if extra_specs.RC_LLC_WAY not in summary['resources']:
            continue
        traits = frozenset(summary.get('traits', ()))
        if extra_specs.TRAIT_CAT_L3 not in traits:
            continue
        root_uuid = summary.get('root_provider_uuid') or uuid
        root = summaries.get(root_uuid)
        if root is None:
            continue
        host = hosts.get(root_uuid)
        if host is None:
            slots = [_free(root, 'PCPU') // options.vcpus,
                     _free(root, 'MEMORY_MB') // options.ram_mb]
            if options.disk_gb:
                slots.append(_free(root, 'DISK_GB') // options.disk_gb)
            host = hosts[root_uuid] = Host(
                root_uuid, max(min(slots), 0),
                root['resources'].get('PCPU', {}).get('capacity', 0), [])
        cores = None
        for trait in traits:
            if trait.startswith(cache_domain.TRAIT_CORES_PREFIX):
                cores = int(trait[len(cache_domain.TRAIT_CORES_PREFIX):])
        clos = summary['resources'].get(extra_specs.RC_LLC_CLOS) or {}
        free_cores = None if cores is None else max(
            cores - clos.get('used', 0), 0)
        if extra_specs.RC_RESQ_CORE in summary['resources']:
            # Counted by Placement, less an on-demand lease's cores.
            free_cores = _free(summary, extra_specs.RC_RESQ_CORE)
        host.domains.append(Domain(
            uuid, _free(summary, extra_specs.RC_LLC_WAY),
            _free(summary, extra_specs.RC_LLC_CLOS),
            summary['resources'][extra_specs.RC_LLC_WAY]['capacity'],
            traits, free_cores, clos.get('capacity'),
            max(_free(summary, extra_specs.RC_MEM_BW), 0)))
    return list(hosts.values())


def of_shape(term, hosts, options):
    """Only the domains of the profile's platform; refuse if there are none.

    :raises greedy.AdmissionRefused: ``platform`` or ``cluster_capacity``.
    """
    wanted = flavors.shape_traits(term.profile)
    if not hosts:
        raise greedy.AdmissionRefused(
            term.name, greedy.CLUSTER_CAPACITY, 'no compute node has room '
            'for even the smallest instance (%d ways, %d dedicated cores); '
            'the agent must report cache domains (resq-agent) and hosts need '
            'free ways and pCPUs' % (term.profile.min_ways, options.vcpus))
    result, seen = [], set()
    for host in hosts:
        domains = [d for d in host.domains if d.traits.issuperset(wanted)]
        seen.update(_shape_of(d) for d in host.domains)
        if domains:
            result.append(Host(host.uuid, host.slots, host.pcpus, domains))
    if greedy.bw_of(term) and not any(d.free_mem_bw for h in result
                                      for d in h.domains):
        raise greedy.AdmissionRefused(
            term.name, greedy.BANDWIDTH, 'its instances need %d MiB/s of '
            'memory bandwidth each and no cache domain with room offers any '
            '(%s): the hosts need MBA and [resq_agent] '
            'memory_bandwidth_mibps, or admit the term without '
            'mem_bw_mibps' % (greedy.bw_of(term), extra_specs.RC_MEM_BW))
    if not result:
        raise greedy.AdmissionRefused(
            term.name, PLATFORM, 'profile %s was measured on a %s cache; the '
            'cache domains with room have %s; profile the NF on this '
            'platform' % (term.profile.profile_id, ' / '.join(wanted),
                          ', '.join(sorted(seen))))
    return result


def _shape_of(dom):
    shape = sorted(t for t in dom.traits
                   if t.startswith((cache_domain.TRAIT_WAYS_PREFIX,
                                    cache_domain.TRAIT_WAY_KIB_PREFIX)))
    return ' / '.join(shape) or 'no platform traits'


def fit(sizing, hosts, vcpus=1, mem_bw=0):
    """First-fit decreasing over hosts and their cache domains.

    Each instance needs a host slot (its dedicated cores, memory, disk)
    and, in one of that host's domains, its ways, a class of service,
    (where the agent reports the cell's cores) its ``vcpus`` cores and
    its ``mem_bw`` MiB/s of memory bandwidth (one figure for every
    instance, or a list of one per instance): on a two-socket host the
    cores must be free in the socket of the ways. Hosts are tried
    fullest first, as the ResQ weigher packs. The hosts are not changed.

    :returns: ``[(host uuid, domain uuid)]`` per instance of ``sizing``.
    :raises greedy.AdmissionRefused: ``cluster_capacity`` or
        ``no_server_with_room``, as :func:`resq_nova.admission.greedy.place`;
        ``memory_bandwidth`` when the ways and cores are there but the
        bandwidth is not.
    """
    slots = sum(h.slots for h in hosts)
    ways = sum(d.free_ways for h in hosts for d in h.domains
               if d.free_clos > 0)
    if sizing.instances > slots or sum(sizing.ways) > ways:
        raise greedy.AdmissionRefused(
            sizing.term, greedy.CLUSTER_CAPACITY, 'needs %d instances and %d '
            'ways; the cluster has room for %d instances and %d free ways '
            'across %d hosts; add hosts or lower the throughput target' % (
                sizing.instances, sum(sizing.ways), slots, ways,
                len(hosts)))
    bws = (list(mem_bw) if isinstance(mem_bw, (list, tuple))
           else [mem_bw or 0] * sizing.instances)
    free_bw = sum(d.free_mem_bw for h in hosts for d in h.domains
                  if d.free_clos > 0)
    if sum(bws) > free_bw:
        raise greedy.AdmissionRefused(
            sizing.term, greedy.BANDWIDTH, 'fits the ways and cores, but '
            'needs %d MiB/s of memory bandwidth (%d instances, %d MiB/s '
            'the largest); the cache domains have %d MiB/s free together; '
            'add hosts with memory bandwidth or lower the term\'s '
            'mem_bw_mibps' % (sum(bws), sizing.instances, max(bws),
                              free_bw))
    order = sorted(hosts, key=lambda h: (h.slots, h.uuid))
    used_slots = {h.uuid: 0 for h in order}
    used = {d.uuid: [0, 0, 0, 0] for h in order for d in h.domains}

    def cores_ok(dom):
        return (dom.free_cores is None
                or dom.free_cores - used[dom.uuid][2] >= vcpus)

    def bw_ok(dom, need_bw):
        return not need_bw or dom.free_mem_bw - used[dom.uuid][3] >= need_bw

    result = []
    for index, need in enumerate(sizing.ways):
        need_bw = bws[index]
        spot = None
        for host in order:
            if used_slots[host.uuid] >= host.slots:
                continue
            for dom in sorted(host.domains, key=lambda d: (d.free_ways,
                                                           d.uuid)):
                w, c, _, _ = used[dom.uuid]
                if (dom.free_ways - w >= need and dom.free_clos - c >= 1
                        and cores_ok(dom) and bw_ok(dom, need_bw)):
                    spot = (host, dom)
                    break
            if spot:
                break
        if spot is None:
            most = max((d.free_ways - used[d.uuid][0] for h in order
                        for d in h.domains
                        if used_slots[h.uuid] < h.slots
                        and d.free_clos > used[d.uuid][1]
                        and cores_ok(d)), default=0)
            if most >= need:
                # (Only the bandwidth can have stopped it.)
                bw_most = max(d.free_mem_bw - used[d.uuid][3]
                              for h in order for d in h.domains
                              if used_slots[h.uuid] < h.slots
                              and d.free_clos > used[d.uuid][1]
                              and cores_ok(d)
                              and d.free_ways - used[d.uuid][0] >= need)
                raise greedy.AdmissionRefused(
                    sizing.term, greedy.BANDWIDTH, 'instance %d needs %d '
                    'ways, %d dedicated cores and %d MiB/s of memory '
                    'bandwidth in one cache domain; domains have the ways '
                    'and cores free, but the most memory bandwidth any of '
                    'them has free is %d MiB/s; add hosts with memory '
                    'bandwidth or lower the term\'s mem_bw_mibps'
                    % (index, need, vcpus, need_bw, bw_most))
            raise greedy.AdmissionRefused(
                sizing.term, greedy.NO_ROOM, 'instance %d needs %d ways and '
                '%d dedicated cores in one cache domain (its socket); the '
                'most ways any domain with free cores has free is %d; the '
                'background optimizer can repack, or add hosts'
                % (index, need, vcpus, most))
        host, dom = spot
        used_slots[host.uuid] += 1
        used[dom.uuid][0] += need
        used[dom.uuid][1] += 1
        used[dom.uuid][2] += vcpus
        used[dom.uuid][3] += need_bw
        result.append((host.uuid, dom.uuid))
    return result


def make_plan(term, candidates, options, discount=greedy.DEFAULT_DISCOUNT):
    """Size, check and name everything for one SLO term.

    :param candidates: Placement's allocation-candidates body for
        :func:`request_groups`.
    :raises greedy.AdmissionRefused: naming the failed constraint.
    :raises extra_specs.InvalidResQSpec: when the term's values cannot be
        written into a valid flavor (e.g. a term name with spaces).
    """
    hosts = of_shape(term, cluster(candidates, options), options)
    largest = max((d for h in hosts for d in h.domains),
                  key=lambda d: d.ways)
    owner = next(h for h in hosts if largest in h.domains)
    cores = max(owner.pcpus // max(len(owner.domains), 1), 1)
    sizing = greedy.size(term, cores, largest.ways, discount)
    return plan_for(term, sizing, fit(sizing, hosts, options.vcpus,
                                      greedy.bw_of(term)), options)


def plan_for(term, sizing, spots, options):
    """The plan of a sized term whose instances have their places.

    :param spots: ``[(host uuid, domain uuid)]`` per instance of
        ``sizing``, largest first.
    :raises extra_specs.InvalidResQSpec: as :func:`make_plan`.
    """
    shares = [term.throughput_mpps * m / sizing.aggregate_mpps
              for m in sizing.per_instance_mpps]
    made = {}
    instances = []
    for index, (ways, share) in enumerate(zip(sizing.ways, shares)):
        name = flavors.flavor_name(term.name, ways)
        if name not in made:
            made[name] = flavors.Flavor(
                name, ways, options.vcpus, options.ram_mb, options.disk_gb,
                flavors.flavor_specs(term, ways, share, options))
        instances.append(Instance(server_name(term.name, index), ways, share,
                                  name, *spots[index]))
    return Plan(term, sizing, tuple(made.values()), tuple(instances))
