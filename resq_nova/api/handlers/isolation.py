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
"""``/servers/{uuid}/isolation`` and ``/isolation``: the agents' findings."""

from resq_nova.api import handlers
from resq_nova.api.objects import isolation as isolation_obj
from resq_nova.api.schemas import isolation as schema
from resq_nova.api import util


def put_isolation(req):
    ctx = handlers.context(req)
    ctx.can('resq:isolation:update')
    body = util.extract_json(req, schema.PUT,
                             handlers.conf(req).api.max_request_body_size)
    rec, created = isolation_obj.set_status(ctx, req.urlvars['server_uuid'],
                                            body)
    return handlers.respond(rec, status=201 if created else 200)


def show_isolation(req):
    ctx = handlers.context(req)
    ctx.can('resq:isolation:read')
    return handlers.respond(isolation_obj.get(ctx,
                                              req.urlvars['server_uuid']))


def list_isolation(req):
    ctx = handlers.context(req)
    ctx.can('resq:isolation:read')
    params = util.query(req, schema.LIST_QUERY)
    items, links = handlers.page(
        req, params, lambda limit, marker: isolation_obj.get_list(
            ctx, status=params.get('status'), host=params.get('host'),
            limit=limit, marker=marker),
        'server_uuid', 'server with an isolation status')
    return handlers.respond({'isolation': items, 'links': links})
