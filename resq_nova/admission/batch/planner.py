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
"""Joint admission of several SLO terms on the live cluster.

Placement's view of the cluster (:func:`resq_nova.admission.reserved.cluster`:
per
cache domain its free ways, classes of service and cores; per host its
free dedicated cores, memory and disk) becomes one
:class:`resq_nova.admission.greedy.Server` per cache domain, with what is
already
used, and :func:`resq_nova.admission.greedy.admit_batch` places every term on
top of
it: the MILP first, the online greedy when the MILP finds no plan in time.
The batch is admitted whole or not at all.
"""

import collections
import dataclasses

from resq_nova.admission.batch import isolated
from resq_nova.admission import greedy
from resq_nova.admission import reserved as admission
from resq_nova.deploy import flavors


@dataclasses.dataclass(frozen=True)
class BatchPlan:
    plans: tuple        # admission.Plan per term, in file order
    method: str         # 'milp' or 'greedy'
    names: dict         # compute node provider uuid -> host name
    chains: dict        # term name -> chain name (or None)


def _refuse(refusals):
    raise greedy.BatchRefused(refusals)


def servers_of(hosts, vcpus):
    """One :class:`greedy.Server` per cache domain, with what is used.

    Every server gets the shape of the largest domain: its ways, and as
    many instances as its host's dedicated cores over its domains (in
    instances of ``vcpus`` cores) and its classes of service allow. A
    domain offers as many more instances as its free classes of service,
    its free cores and its host's room allow, and its free ways; and the
    memory bandwidth it has free (none where it offers none).

    :returns: ``([Server], {domain uuid: host uuid})``.
    """
    largest = max((d for h in hosts for d in h.domains),
                  key=lambda d: d.ways)
    owner = next(h for h in hosts if largest in h.domains)
    cores = max(owner.pcpus // max(len(owner.domains), 1) // vcpus, 1)
    if largest.clos:
        cores = min(cores, largest.clos)
    servers, host_of = [], {}
    for host in hosts:
        for dom in host.domains:
            room = [dom.free_clos, host.slots]
            if dom.free_cores is not None:
                room.append(dom.free_cores // vcpus)
            room = max(min(room + [cores]), 0)
            servers.append(greedy.Server(
                dom.uuid, cores, largest.ways, used_cores=cores - room,
                used_ways=max(largest.ways - dom.free_ways, 0),
                mem_bw=dom.free_mem_bw))
            host_of[dom.uuid] = host.uuid
    return servers, host_of


def _hosts(placement, terms, options, exclude=()):
    """Hosts of the terms' platform; refusals of terms that have none.

    Hosts whose compute node provider is in ``exclude`` are not counted.
    """
    hosts, refusals, shapes, bodies = {}, [], {}, {}
    for term in terms:
        # One request per profile: its smallest instance's groups.
        key = term.profile.profile_id
        if key not in bodies:
            bodies[key] = admission.without_roots(
                placement.allocation_candidates(
                    admission.request_groups(term.profile, options)),
                set(exclude))
        body = bodies[key]
        try:
            found = admission.of_shape(
                term, admission.cluster(body, options), options)
        except greedy.AdmissionRefused as exc:
            refusals.append(exc)
            continue
        shapes.setdefault(tuple(sorted(
            flavors.shape_traits(term.profile))), []).append(
                term.name)
        for host in found:
            known = hosts.setdefault(host.uuid, host)
            have = {d.uuid for d in known.domains}
            known.domains.extend(d for d in host.domains
                                 if d.uuid not in have)
    if len(shapes) > 1:
        refusals.extend(greedy.AdmissionRefused(
            name, admission.PLATFORM, 'the terms of one batch must be '
            'profiled on one platform; this one is %s, others are %s; '
            'admit them in separate SLO files' % (
                ' / '.join(shape), ' and '.join(
                    ' / '.join(s) for s in shapes if s != shape)))
            for shape, names in sorted(shapes.items()) for name in names)
    if refusals:
        _refuse(refusals)
    return list(hosts.values())


def _spots(admitted, hosts, host_of, vcpus, by_name=None):
    """Each term's instances, largest first, with host and domain.

    The joint plan counts each domain's room on its own; a host with
    several domains may have room (pCPUs, memory, disk) for fewer
    instances than its domains together. Then the same sizings are placed
    again first fit decreasing with every limit
    (:func:`resq_nova.admission.reserved.fit`).
    """
    order = {}
    for name, (sizing, placements) in admitted.items():
        order[name] = sorted(placements, key=lambda p: (-p.ways, p.index))
    per_host = collections.Counter(host_of[p.server] for pl in order.values()
                                   for p in pl)
    slots = {h.uuid: h.slots for h in hosts}
    if all(n <= slots[h] for h, n in per_host.items()):
        return {name: [(host_of[p.server], p.server) for p in pl]
                for name, pl in order.items()}
    everything = sorted(((p.ways, name, i) for name, pl in order.items()
                         for i, p in enumerate(pl)), reverse=True)
    joint = greedy.Sizing('batch', 1.0, tuple(w for w, _, _ in everything),
                          tuple(0.0 for _ in everything))
    bws = [greedy.bw_of((by_name or {}).get(name)) for _, name, _ in
           everything]
    try:
        spots = admission.fit(joint, hosts, vcpus, bws)
    except greedy.AdmissionRefused as exc:
        _refuse([greedy.AdmissionRefused(
            name, exc.constraint, 'the terms fit the cache domains together '
            'but not the hosts\' free dedicated cores, memory and disk: %s'
            % exc.reason) for name in admitted])
    result = {name: [None] * len(pl) for name, pl in order.items()}
    for (_, name, i), spot in zip(everything, spots):
        result[name][i] = spot
    return result


def plan(placement, terms, options, chains=None,
         discount=greedy.DEFAULT_DISCOUNT, time_limit=10.0, exclude=()):
    """Admit ``terms`` jointly on the cluster Placement sees.

    :param terms: :class:`resq_nova.admission.greedy.SLOTerm` list, profiles
        loaded.
    :param chains: ``{term name: chain name}``.
    :returns: a :class:`BatchPlan`.
    :raises resq_nova.admission.greedy.BatchRefused: naming every term that
        does not
        fit and why; nothing is planned for the others either.
    :raises resq_common.extra_specs.InvalidResQSpec: when a term's values
        cannot be written into a valid flavor.
    """
    hosts = _hosts(placement, terms, options, exclude)
    servers, host_of = servers_of(hosts, options.vcpus)
    admitted, method = greedy.admit_batch(terms, servers, discount,
                                          time_limit=time_limit,
                                          solve=(isolated.solve
                                                 if isolated.needed()
                                                 else None))
    spots = _spots(admitted, hosts, host_of, options.vcpus,
                   {t.name: t for t in terms})
    plans = []
    for term in terms:
        sizing, placements = admitted[term.name]
        pairs = sorted(zip(sizing.ways, sizing.per_instance_mpps),
                       key=lambda p: -p[0])
        sizing = greedy.Sizing(term.name, sizing.load_cap,
                               tuple(w for w, _ in pairs),
                               tuple(m for _, m in pairs))
        plans.append(admission.plan_for(term, sizing, spots[term.name],
                                        options))
    names = {}
    for the_plan in plans:
        for inst in the_plan.instances:
            if inst.host not in names:
                names[inst.host] = placement.get_provider(inst.host)['name']
    return BatchPlan(tuple(plans), method, names, dict(chains or {}))
