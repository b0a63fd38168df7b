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
"""What the CLI shows of the cloud: ResQ hosts and servers, read only.

A ResQ host is a compute node provider with cache-domain children (the
agent creates one per L3 cache domain, named and identified as
:mod:`resq_common.cache_domain` says); its ways, classes of
service, cores and platform traits are the children's inventories, usages
and traits. A server's ways and class of service are its allocation on
such a child; its SLO is its flavor's ``resq:`` extra specs.
"""

from resq_common import cache_domain
from resq_common.clients import compute as compute_mod
from resq_common import exception
from resq_common import extra_specs

# Traits every domain has that are not about the platform.
_OWN_PREFIXES = (cache_domain.TRAIT_DOMAIN_PREFIX,
                 cache_domain.TRAIT_CORES_PREFIX)
SPEC_FIELDS = ('slo', 'profile', 'throughput_mpps', 'latency_p95_us',
               'packet_bytes', 'term', 'migratable')


class NoResQHosts(exception.ResQException):
    msg_fmt = ('Placement has no ResQ cache-domain providers (%(rc)s under a '
               'compute node); start resq-agent on the compute hosts, it '
               'reports their cache domains')


class HostNotFound(exception.ResQException):
    msg_fmt = ('no compute host %(host)r with ResQ cache domains in '
               'Placement%(why)s; "openstack resq host list" lists them')


class ServerNotFound(exception.ResQException):
    msg_fmt = ('no server %(server)r (name or ID)%(why)s; "openstack server '
               'list --all-projects" lists them')


def _amount(inventory, key):
    return int((inventory or {}).get(key, 0))


def _cores(traits):
    for trait in traits:
        if trait.startswith(cache_domain.TRAIT_CORES_PREFIX):
            value = trait[len(cache_domain.TRAIT_CORES_PREFIX):]
            if value.isdigit():
                return int(value)
    return None


def _used_of(inventories, usages, rc):
    """``"used/total"`` of a resource class, or ``"-"`` without one."""
    inv = inventories.get(rc)
    if not inv:
        return '-'
    total = _amount(inv, 'total') - _amount(inv, 'reserved')
    return '%d/%d' % (int(usages.get(rc, 0)), total)


def domain_view(dom_id, provider, inventories, usages, traits):
    """One cache domain's accounting as plain data. Pure."""
    ways = inventories.get(extra_specs.RC_LLC_WAY) or {}
    clos = inventories.get(extra_specs.RC_LLC_CLOS) or {}
    ways_used = int(usages.get(extra_specs.RC_LLC_WAY, 0))
    clos_used = int(usages.get(extra_specs.RC_LLC_CLOS, 0))
    return {
        'domain': dom_id,
        'provider': provider,
        'ways_total': _amount(ways, 'total'),
        'ways_reserved': _amount(ways, 'reserved'),
        'ways_used': ways_used,
        'ways_free': max(_amount(ways, 'total') - _amount(ways, 'reserved')
                         - ways_used, 0),
        'clos_total': _amount(clos, 'total'),
        'clos_reserved': _amount(clos, 'reserved'),
        'clos_used': clos_used,
        'clos_free': max(_amount(clos, 'total') - _amount(clos, 'reserved')
                         - clos_used, 0),
        'cores': _cores(traits),
        'resq_cores': _used_of(inventories, usages, extra_specs.RC_RESQ_CORE),
        'lease_cores': _used_of(inventories, usages,
                                extra_specs.RC_ONDEMAND_CORE),
        'traits': sorted(t for t in traits
                         if not t.startswith(_OWN_PREFIXES)),
    }


def _domains_by_root(providers):
    """``{root uuid: [(domain id, provider uuid)]}``. Pure."""
    found = {}
    for p in providers:
        root = p.get('root_provider_uuid')
        if not root or root == p['uuid']:
            continue
        dom_id = cache_domain.domain_of(root, p['uuid'])
        if dom_id is not None:
            found.setdefault(root, []).append((dom_id, p['uuid']))
    return found


def _host(placement, root, name, domains, instances=False):
    doms = []
    for dom_id, uuid in sorted(domains):
        inv = placement.get_inventories(uuid)
        if extra_specs.RC_LLC_WAY not in inv:
            continue     # a domain without CAT: the agent offers nothing
        view = domain_view(dom_id, uuid, inv, placement.get_usages(uuid),
                           placement.get_traits(uuid))
        if instances:
            view['instances'] = [
                {'server': consumer,
                 'ways': int(res.get(extra_specs.RC_LLC_WAY, 0)),
                 'clos': int(res.get(extra_specs.RC_LLC_CLOS, 0))}
                for consumer, res in sorted(
                    placement.get_provider_allocations(uuid).items())]
        doms.append(view)
    if not doms:
        return None
    return {'host': name, 'provider': root, 'domains': doms}


def hosts(placement):
    """Every ResQ host, by name.

    :raises NoResQHosts: when Placement has none.
    """
    providers = placement.list_providers()
    names = {p['uuid']: p['name'] for p in providers}
    result = []
    for root, domains in _domains_by_root(providers).items():
        view = _host(placement, root, names.get(root, root), domains)
        if view is not None:
            result.append(view)
    if not result:
        raise NoResQHosts(rc=extra_specs.RC_LLC_WAY)
    return sorted(result, key=lambda h: h['host'])


def host(placement, name):
    """One ResQ host, with the servers holding ways in each domain.

    :raises HostNotFound: no such provider, or it has no cache domains.
    """
    providers = placement.list_providers()
    roots = [p for p in providers if p['name'] == name
             and p.get('root_provider_uuid') in (None, p['uuid'])]
    if not roots:
        raise HostNotFound(host=name, why=' (Placement has no provider of '
                           'that name)')
    root = roots[0]['uuid']
    domains = _domains_by_root(providers).get(root, [])
    view = _host(placement, root, name, domains, instances=True)
    if view is None:
        raise HostNotFound(host=name, why=' (it has no cache-domain '
                           'provider: is resq-agent running there?)')
    return view


def find_server(compute, ref):
    """The server ``ref`` (an ID, or a unique name) with its flavor.

    :raises ServerNotFound: none, or more than one of that name.
    """
    try:
        return compute.get_server(ref)
    except compute_mod.ComputeError as exc:
        if exc.status_code not in (400, 404):
            raise
    pattern = '^%s$' % _regex_escape(ref)
    try:
        found = compute.list_servers(pattern, all_projects=True)
    except compute_mod.ComputeError as exc:
        if exc.status_code != 403:
            raise
        # Not an admin: the servers of the user's own project.
        found = compute.list_servers(pattern)
    named = [s for s in found if s.get('name') == ref]
    if len(named) > 1:
        raise ServerNotFound(server=ref, why=': %d servers have that name, '
                             'give its ID' % len(named))
    if not named:
        raise ServerNotFound(server=ref, why='')
    return compute.get_server(named[0]['id'])


def _regex_escape(text):
    # Nova matches names as a regular expression in the database: escape
    # its specials rather than relying on Python's re.escape dialect.
    return ''.join('\\' + c if c in '.^$*+?{}[]\\|()' else c for c in text)


def server(placement, compute, ref):
    """A server's SLO, cache domain, ways and class of service."""
    srv = find_server(compute, ref)
    flavor = srv.get('flavor') or {}
    specs = flavor.get('extra_specs') or {}
    view = {
        'id': srv['id'],
        'name': srv.get('name'),
        'status': srv.get('status'),
        'host': srv.get('OS-EXT-SRV-ATTR:host'),
        'flavor': flavor.get('original_name') or flavor.get('id'),
        'vcpus': flavor.get('vcpus'),
    }
    for field in SPEC_FIELDS:
        view[field] = specs.get('resq:' + field)
    view.update({'cache_domain': None, 'cache_provider': None, 'ways': None,
                 'classes_of_service': None})
    allocations = placement.get_allocations(srv['id'])
    for rp, resources in sorted(allocations.items()):
        if extra_specs.RC_LLC_WAY not in resources:
            continue
        provider = placement.get_provider(rp) or {}
        root = provider.get('root_provider_uuid')
        view.update({
            'cache_domain': (cache_domain.domain_of(root, rp)
                             if root else None),
            'cache_provider': provider.get('name', rp),
            'ways': int(resources[extra_specs.RC_LLC_WAY]),
            'classes_of_service': int(resources.get(
                extra_specs.RC_LLC_CLOS, 0)),
        })
    metadata = srv.get('metadata') or {}
    view['mbuf_budget'] = metadata.get('resq_mbuf_budget')
    return view
