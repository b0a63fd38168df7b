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
"""``/hosts``: the agents' reports of their cache domains."""

from resq_nova.api import errors
from resq_nova.api import handlers
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


def put_host(req):
    ctx = handlers.context(req)
    ctx.can('resq:hosts:report')
    body = util.extract_json(req, schema.PUT,
                             handlers.conf(req).api.max_request_body_size)
    check_domains(body['domains'])
    rec, created = host_obj.report(ctx, req.urlvars['hostname'], body)
    return handlers.respond(rec, status=201 if created else 200)


def show_host(req):
    ctx = handlers.context(req)
    ctx.can('resq:hosts:read')
    return handlers.respond(host_obj.get(ctx, req.urlvars['hostname']))


def list_hosts(req):
    ctx = handlers.context(req)
    ctx.can('resq:hosts:read')
    params = util.query(req, schema.LIST_QUERY)
    items, links = handlers.page(
        req, params, lambda limit, marker: host_obj.get_list(
            ctx, limit=limit, marker=marker), 'hostname', 'host')
    return handlers.respond({'hosts': items, 'links': links})
