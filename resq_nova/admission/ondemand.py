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
"""On-demand SLO admission (ResQ §5.1, §2).

An on-demand term is an NF and a latency target. Admission checks two
things and sizes nothing:

* the target can be met at all: with a profile, not below the NF's p95
  latency floor (alone, the whole cache, no load) — else the tenant gets
  an error at once, as ResQ §2 says, instead of an NF that always
  violates;
* one instance fits in some host's on-demand lease: Placement has a cache
  domain with ``CUSTOM_RESQ_ONDEMAND_CORE`` free for its vCPUs.

Then it creates (or reuses) the term's flavor, ``resq.<term>.ondemand``,
and boots one server, ``<term>-1``; the host's local scheduler does the
rest. ``resq-admit --slo on-demand`` calls :func:`admit`.
"""

from oslo_log import log as logging

from resq_common.clients import placement as placement_client
from resq_common import extra_specs
from resq_nova.admission import greedy
from resq_nova.deploy import deployment
from resq_nova.deploy import flavors
from resq_nova.deploy import heat
from resq_profiler import exception
from resq_profiler import store as store_mod

LOG = logging.getLogger(__name__)

GROUP = '_OD'
LATENCY = 'latency'
LEASE = 'lease'


def flavor_name(term):
    return 'resq.%s.ondemand' % term


def flavor_specs(term, latency_p95_us, options, profile=None,
                 expected_mpps=None):
    """The extra specs of an on-demand term's flavor (validated).

    :param expected_mpps: the rate the NF is expected to be offered, kept
        as ``resq:throughput_mpps`` so later admissions can predict whether
        sharing a lease pushes it past it (:func:`sharing_warnings`).
    """
    specs = {
        'hw:cpu_policy': 'dedicated',
        'hw:mem_page_size': options.mem_page_size,
        'resq:slo': extra_specs.ON_DEMAND,
        'resq:latency_p95_us': flavors.decimal(latency_p95_us),
        'resq:term': term,
        'resources%s:%s' % (GROUP, extra_specs.RC_ONDEMAND_CORE):
            str(options.vcpus),
    }
    if profile is not None:
        specs['resq:profile'] = profile.profile_id
    if expected_mpps:
        specs['resq:throughput_mpps'] = flavors.decimal(expected_mpps)
    extra_specs.parse(specs, options.vcpus)
    return specs


def best_case(term, latency_p95_us, profile):
    """:raises greedy.AdmissionRefused: the target is below the floor."""
    if profile is None:
        return
    floor = profile.latency_floor_us
    if latency_p95_us < floor:
        raise greedy.AdmissionRefused(
            term, LATENCY,
            'p95 latency %g us is below what %s achieves even alone with '
            'the whole cache (%g us, profile %s): no allocation can meet '
            'it; raise the target' % (latency_p95_us,
                                      profile.nf['name'], floor,
                                      profile.profile_id))


def lease_candidates(placement, vcpus):
    """Placement's allocation candidates for one on-demand instance.

    Until some agent has reported a lease, Placement does not know the
    resource class and answers 400: that is "no lease anywhere", not an
    error.
    """
    try:
        return placement.allocation_candidates(
            {GROUP: {'resources': {extra_specs.RC_ONDEMAND_CORE: vcpus}}})
    except placement_client.PlacementError as exc:
        if 'No such resource class' in exc.message:
            return {}
        raise


def lease_ways(traits):
    """The ways of a lease from its provider's traits, or ``None``.

    The agent reports them as ``CUSTOM_RESQ_ONDEMAND_WAYS_<n>``.
    """
    prefix = extra_specs.TRAIT_ONDEMAND_PREFIX
    for trait in traits or ():
        if trait.startswith(prefix) and trait[len(prefix):].isdigit():
            ways = int(trait[len(prefix):])
            if ways > 0:
                return ways
    return None


def leases_with_room(placement, term, vcpus):
    """``[{'provider', 'root', 'free', 'ways'}]``, most free cores first.

    ``ways`` is the lease's size in ways (``None`` when its provider does
    not say).

    :raises greedy.AdmissionRefused: no lease has room for one instance.
    """
    body = lease_candidates(placement, vcpus)
    summaries = body.get('provider_summaries') or {}
    seen = {}
    for req in body.get('allocation_requests') or ():
        for rp in (req.get('mappings') or {}).get(GROUP, ()):
            s = summaries.get(rp) or {}
            res = (s.get('resources') or {}).get(
                extra_specs.RC_ONDEMAND_CORE) or {}
            seen[rp] = {'provider': rp,
                        'root': s.get('root_provider_uuid'),
                        'free': res.get('capacity', 0) - res.get('used', 0),
                        'ways': lease_ways(s.get('traits'))}
    if not seen:
        raise greedy.AdmissionRefused(
            term, LEASE,
            'no host has room in its on-demand lease for one instance of '
            '%d core(s): set [resq_agent] ondemand_ways (and '
            'ondemand_cores) on more hosts, or free lease cores' % vcpus)
    return sorted(seen.values(), key=lambda r: (-r['free'], r['provider']))


def sharing_warnings(placement, compute, store, room, profile, mpps):
    """SLOMO's warnings for sharing each lease with room (issue 15).

    On-demand NFs share their host's lease. For each host whose lease has
    room, the on-demand servers already there that carry a profile and an
    expected rate (``resq:profile``, ``resq:throughput_mpps``) and the new
    NF are predicted together with their SLOMO models
    (:func:`resq_profiler.slomo.sharing.admission_warning`): a warning
    names every NF that would fall below its rate. They are predicted
    confined to the lease's ways (its ``CUSTOM_RESQ_ONDEMAND_WAYS_<n>``
    trait), the most one shared class of the lease can have; a lease that
    does not report its ways is predicted on the whole LLC. A warning does
    not refuse the term (the host agent isolates who violates); it says
    where Nova's choice of host would hurt. Without a profile and an
    expected rate for the new NF nothing is predicted.

    :returns: warning lines, ``on <host>: ...``.
    """
    if profile is None or not mpps:
        return []
    from resq_profiler.slomo import sharing
    from resq_profiler.slomo import store as slomo_store

    models_store = slomo_store.ModelStore(store.directory)
    models = {}

    def model(pid):
        if pid not in models:
            models[pid] = models_store.get_or_isolate(pid)
        return models[pid]

    model(profile.profile_id)
    servers = None
    warnings = []
    for lease in room:
        try:
            host = placement.get_provider(lease['root'])['name']
        except (placement_client.PlacementError, KeyError, TypeError):
            continue
        if servers is None:
            servers = compute.list_all_servers()
        members, targets = [], {profile.profile_id: float(mpps)}
        for server in servers:
            if host not in (server.get('OS-EXT-SRV-ATTR:host'),
                            server.get('OS-EXT-SRV-ATTR:hypervisor_hostname')):
                continue
            specs = (server.get('flavor') or {}).get('extra_specs') or {}
            pid, rate = specs.get('resq:profile'), specs.get(
                'resq:throughput_mpps')
            if specs.get('resq:slo') != extra_specs.ON_DEMAND or not (
                    pid and rate):
                continue
            model(pid)
            members.append(pid)
            targets[pid] = max(targets.get(pid, 0.0), float(rate))
        try:
            text = sharing.admission_warning(models, members,
                                             profile.profile_id, targets,
                                             lease.get('ways'))
        except ValueError as exc:
            text = 'no SLOMO prediction for its lease: %s' % exc
        if text:
            warnings.append('on %s: %s' % (host, text))
    return warnings


def admit(args, placement, compute, store):
    """Check, create the flavor and boot one server; the document.

    :param args: ``term``, ``latency_p95_us``, ``profile`` (optional),
        ``vcpus``, ``ram_mb``, ``disk_gb``, ``mem_page_size``, ``image``,
        ``network``, ``boot_timeout``, ``dry_run``.
    :raises greedy.AdmissionRefused: ``latency``, ``lease`` or
        ``profile``.
    :raises deployment.BootFailed: the server did not become ACTIVE.
    """
    options = flavors.FlavorOptions(args.vcpus, args.ram_mb, args.disk_gb,
                                    args.mem_page_size)
    profile = None
    if args.profile:
        try:
            profile = store.get(args.profile)
        except exception.ResQException as exc:
            raise greedy.AdmissionRefused(args.term, greedy.PROFILE,
                                          str(exc))
    best_case(args.term, args.latency_p95_us, profile)
    expected = getattr(args, 'throughput_mpps', None)
    specs = flavor_specs(args.term, args.latency_p95_us, options, profile,
                         expected)
    if not args.dry_run:
        deployment.check_no_servers(compute, args.term)
    room = leases_with_room(placement, args.term, args.vcpus)
    name = flavor_name(args.term)
    doc = {'term': args.term, 'slo': extra_specs.ON_DEMAND,
           'latency_p95_us': args.latency_p95_us,
           'profile': profile.profile_id if profile else None,
           'flavor': {'name': name, 'extra_specs': specs},
           'leases_with_room': room,
           'warnings': sharing_warnings(placement, compute, store, room,
                                        profile, expected)}
    for warning in doc['warnings']:
        LOG.warning('On-demand SLO term %s: %s', args.term, warning)
    if args.dry_run:
        return doc
    project_id = compute.project_id()
    existing = compute.find_flavor(name)
    if existing is not None and (
            (existing.get('extra_specs') or {}) != specs
            or existing.get('vcpus') != args.vcpus):
        raise deployment.FlavorMismatch(
            name=name, term=args.term,
            diff='its extra specs or vCPUs differ from %s' % specs)
    if getattr(args, 'heat_template', None):
        found = {name: existing} if existing is not None else {}
        deployment.share_flavors(doc, compute, found,
                                 getattr(args, 'stack_project', None))
        flavor = flavors.Flavor(name, 0, args.vcpus, args.ram_mb,
                                args.disk_gb, specs)
        store_mod.atomic_write(args.heat_template, heat.dump(
            heat.ondemand_template(args.term, flavor, existing is not None,
                                   args.latency_p95_us, args.image,
                                   args.network)))
        doc['flavor']['exists'] = existing is not None
        doc['heat_template'] = args.heat_template
        return doc
    if existing is not None:
        compute.add_flavor_access(existing['id'], project_id)
        flavor_id, doc['flavor']['created'] = existing['id'], False
    else:
        # Private to the admitting project, as reserved terms' flavors.
        flavor_id = compute.create_flavor(name, args.vcpus, args.ram_mb,
                                          args.disk_gb, specs,
                                          project_id)['id']
        doc['flavor']['created'] = True
    server_name = '%s-1' % args.term
    try:
        server_id = compute.create_server(server_name, flavor_id,
                                          args.image, args.network)
        server = compute.wait_for_server(server_id, args.boot_timeout)
    except exception.ResQException as exc:
        raise deployment.BootFailed(args.term, server_name, str(exc), [])
    if server['status'] != 'ACTIVE':
        reason = (server.get('fault') or {}).get('message') or (
            'status %s after %ss' % (server['status'], args.boot_timeout))
        raise deployment.BootFailed(args.term, server_name,
                                    '%s, id %s' % (reason, server_id), [])
    doc['servers'] = [{'name': server_name, 'id': server_id,
                       'host': server.get('OS-EXT-SRV-ATTR:host')}]
    LOG.info('On-demand server %s (%s) is ACTIVE on %s', server_name,
             server_id, doc['servers'][0]['host'])
    return doc
