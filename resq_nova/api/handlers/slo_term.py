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
"""``/slo_terms``: admitted SLO terms, per project."""

from resq_nova.api import errors
from resq_nova.api import handlers
from resq_nova.api.objects import exception as obj_exc
from resq_nova.api.objects import profile as profile_obj
from resq_nova.api.objects import slo_term as term_obj
from resq_nova.api.schemas import slo_term as schema
from resq_nova.api import util


def _scope(ctx):
    # Terms of other projects answer 404, as if they did not exist.
    return None if ctx.is_admin_view else ctx.project_id


def list_terms(req):
    ctx = handlers.context(req)
    ctx.can('resq:slo_terms:list')
    params = util.query(req, schema.LIST_QUERY)
    project = ctx.project_id
    if handlers.truthy(params.get('all_projects')) or 'project_id' in params:
        ctx.can('resq:slo_terms:list_all')
        project = params.get('project_id')
    items, links = handlers.page(
        req, params, lambda limit, marker: term_obj.get_list(
            ctx, project, status=params.get('status'), limit=limit,
            marker=marker), 'uuid', 'SLO term')
    return handlers.respond({'slo_terms': items, 'links': links})


def show_term(req):
    ctx = handlers.context(req)
    rec = term_obj.get(ctx, req.urlvars['uuid'], _scope(ctx))
    ctx.can('resq:slo_terms:show', {'project_id': rec['project_id']})
    return handlers.respond(rec)


def create_term(req):
    ctx = handlers.context(req)
    ctx.can('resq:slo_terms:create')
    body = util.extract_json(req, schema.POST,
                             handlers.conf(req).api.max_request_body_size)
    try:
        profile_obj.get(ctx, body['profile_id'], ctx.project_id)
    except obj_exc.ProfileNotFound:
        raise errors.BadRequest(
            'profile %s is neither public nor of project %s; upload it to '
            'your project or use a public profile'
            % (body['profile_id'], ctx.project_id),
            code='resq.slo_term.profile')
    values = dict(body, project_id=ctx.project_id)
    return handlers.respond(term_obj.create(ctx, values), status=201)


def update_term(req):
    ctx = handlers.context(req)
    uuid = req.urlvars['uuid']
    rec = term_obj.get(ctx, uuid, _scope(ctx))
    ctx.can('resq:slo_terms:update', {'project_id': rec['project_id']})
    body = util.extract_json(req, schema.PATCH,
                             handlers.conf(req).api.max_request_body_size)
    generation = body.pop('generation')
    return handlers.respond(term_obj.update(ctx, uuid, generation, body))


def delete_term(req):
    ctx = handlers.context(req)
    uuid = req.urlvars['uuid']
    rec = term_obj.get(ctx, uuid, _scope(ctx))
    ctx.can('resq:slo_terms:delete', {'project_id': rec['project_id']})
    term_obj.delete(ctx, uuid)
    return handlers.respond(status=204)
