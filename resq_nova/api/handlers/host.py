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

from resq_nova.api import handlers
from resq_nova.api.objects import host as host_obj
from resq_nova.api.schemas import host as schema
from resq_nova.api import util


def put_host(req):
    ctx = handlers.context(req)
    ctx.can('resq:hosts:report')
    body = util.extract_json(req, schema.PUT,
                             handlers.conf(req).api.max_request_body_size)
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
