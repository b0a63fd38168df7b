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
"""``/hosts``: the agents' reports of their cache domains.

From microversion 1.1 a report also lists the servers the agent
partitions (``instances``); at 1.0 a body with them is refused, as any
unknown field, and the answers leave them out.

From microversion 1.2 an agent whose report has not changed sends a
heartbeat instead (``PUT /hosts/{hostname}/heartbeat``, no body): one
UPDATE of the host's ``updated_at`` by primary key, no document parsed
or written. Before 1.2 that path is not served (404, as an unknown
path), so an agent facing an older resq-api sees 406 (for the version)
or 404 ``resq.no_route`` and sends its full report instead.
"""

import collections

from resq_nova.api import errors
from resq_nova.api import handlers
from resq_nova.api import microversion
from resq_nova.api.objects import exception as obj_exc
from resq_nova.api.objects import host as host_obj
from resq_nova.api.schemas import host as schema
from resq_nova.api import util


# A domain's count and the total it cannot exceed.
BOUNDS = (('ways_used', 'ways_total'), ('ways_leased', 'ways_total'),
          ('clos_used', 'clos_total'), ('cores_used', 'cores_total'),
          ('cores_leased', 'cores_total'))


def check_domains(domains):
    """Refuse a report whose counts contradict one another.

    Every used or leased count is at most its total (when the report gives
    both), and each domain id appears once.

    :raises resq_nova.api.errors.BadRequest: naming the domain and field.
    """
    seen = set()
    for n, domain in enumerate(domains):
        if domain['id'] in seen:
            raise errors.BadRequest(
                'domains[%d]: domain id %d is reported twice; report each '
                'cache domain once' % (n, domain['id']),
                code='resq.host.domain_id')
        seen.add(domain['id'])
        for count, total in BOUNDS:
            if count in domain and total in domain and (
                    domain[count] > domain[total]):
                raise errors.BadRequest(
                    'domains[%d] (id %d): %s %d is more than %s %d' % (
                        n, domain['id'], count, domain[count], total,
                        domain[total]), code='resq.host.%s' % count)


def _server_key(server_uuid):
    # The schema takes a UUID with or without its dashes, in either case.
    return server_uuid.replace('-', '').lower()


def check_instances(instances, domains):
    """Refuse servers that contradict the report's domains or each other.

    Each server appears once, in a cache domain the report has, and the
    servers of a domain hold at most its ``ways_used``.

    :raises resq_nova.api.errors.BadRequest: naming the entry and field.
    """
    by_id = {d['id']: d for d in domains}
    seen = {}
    ways = collections.Counter()
    for n, inst in enumerate(instances):
        key = _server_key(inst['server_uuid'])
        if key in seen:
            raise errors.BadRequest(
                'instances[%d]: server %s is reported twice (also '
                'instances[%d]); report each server once'
                % (n, inst['server_uuid'], seen[key]),
                code='resq.host.server_uuid')
        seen[key] = n
        if inst['domain'] not in by_id:
            raise errors.BadRequest(
                'instances[%d] (server %s): cache domain %d is not in the '
                'report\'s domains (%s); report that domain too or leave '
                'the server out' % (
                    n, inst['server_uuid'], inst['domain'],
                    ', '.join(str(i) for i in sorted(by_id)) or 'none'),
                code='resq.host.instance_domain')
        ways[inst['domain']] += inst['ways']
    for dom_id, held in sorted(ways.items()):
        if held > by_id[dom_id]['ways_used']:
            raise errors.BadRequest(
                'instances: the servers of cache domain %d hold %d ways, '
                'more than its ways_used %d' % (
                    dom_id, held, by_id[dom_id]['ways_used']),
                code='resq.host.instance_ways')


def _view(req, rec):
    """The record as the request's microversion shows it."""
    if not microversion.at_least(req, microversion.HOST_INSTANCES):
        rec = {k: v for k, v in rec.items() if k != 'instances'}
    return rec


def put_host(req):
    ctx = handlers.context(req)
    ctx.can('resq:hosts:report')
    with_instances = microversion.at_least(req, microversion.HOST_INSTANCES)
    body = util.extract_json(
        req, schema.PUT_V1_1 if with_instances else schema.PUT,
        handlers.conf(req).api.max_request_body_size)
    check_domains(body['domains'])
    instances = body.pop('instances', None)
    if instances is not None:
        check_instances(instances, body['domains'])
    rec, created = host_obj.report(ctx, req.urlvars['hostname'], body,
                                   instances)
    return handlers.respond(_view(req, rec), status=201 if created else 200)


def show_host(req):
    ctx = handlers.context(req)
    ctx.can('resq:hosts:read')
    return handlers.respond(_view(req, host_obj.get(
        ctx, req.urlvars['hostname'])))


def list_hosts(req):
    ctx = handlers.context(req)
    ctx.can('resq:hosts:read')
    params = util.query(req, schema.LIST_QUERY)
    items, links = handlers.page(
        req, params, lambda limit, marker: host_obj.get_list(
            ctx, limit=limit, marker=marker), 'hostname', 'host')
    return handlers.respond({'hosts': [_view(req, i) for i in items],
                             'links': links})


def heartbeat(req):
    """``PUT /hosts/{hostname}/heartbeat`` (1.2): 204, nothing read.

    :raises resq_nova.api.errors.NotFound: before 1.2 (``resq.no_route``,
        as a path an older resq-api does not serve), or no report of the
        host is stored (``resq.host.not_found``: send the full report).
    """
    if not microversion.at_least(req, microversion.HOST_HEARTBEAT):
        raise errors.NotFound(
            '%s is served from microversion %s; send OpenStack-API-Version: '
            'resq %s, or the full report (PUT /hosts/{hostname})'
            % (req.path_info, microversion.HOST_HEARTBEAT,
               microversion.HOST_HEARTBEAT), code='resq.no_route')
    ctx = handlers.context(req)
    ctx.can('resq:hosts:report')
    hostname = req.urlvars['hostname']
    try:
        host_obj.heartbeat(ctx, hostname)
    except obj_exc.HostNotFound:
        raise errors.NotFound(
            'resq-api has no report of host %s (never sent, or pruned); '
            'send the full report (PUT /hosts/%s), then heartbeats'
            % (hostname, hostname), code='resq.host.not_found')
    return handlers.respond(status=204)
