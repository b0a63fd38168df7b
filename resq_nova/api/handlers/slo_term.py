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
"""``/slo_terms``: SLO terms, per project.

A project records its term as ``requested`` and may release it; only the
admission service (``resq:slo_terms:admit``: the service user or an
admin) records or moves a term to ``admitted``, ``degraded`` or
``violated``, records one for another project, or changes the servers or
flavors of a term no longer ``requested``.
"""

from resq_nova.api import errors
from resq_nova.api import handlers
from resq_nova.api.objects import exception as obj_exc
from resq_nova.api.objects import profile as profile_obj
from resq_nova.api.objects import slo_term as term_obj
from resq_nova.api import policy
from resq_nova.api.schemas import slo_term as schema
from resq_nova.api import util


def _scope(ctx):
    # Terms of other projects answer 404, as if they did not exist.
    return None if ctx.is_admin_view else ctx.project_id


def _must_admit(ctx, what):
    """403 unless the caller is the admission service.

    :raises resq_nova.api.errors.Forbidden: naming the rule.
    """
    if not policy.authorize(ctx, 'resq:slo_terms:admit',
                            {'project_id': ctx.project_id}):
        raise errors.Forbidden(
            'only the admission service %s (policy resq:slo_terms:admit); '
            'a project records its term as requested and the admission '
            'admits it' % what, code='resq.slo_term.admit')


def _term_project(ctx, body):
    """The project the new term is for: the caller's unless admitting."""
    project = body.pop('project_id', None)
    if project is None or project == ctx.project_id:
        return ctx.project_id
    _must_admit(ctx, 'records a term for another project')
    return project


def list_terms(req):
    ctx = handlers.context(req)
    ctx.can('resq:slo_terms:list')
    params = util.query(req, schema.LIST_QUERY)
    project = ctx.project_id
    if handlers.truthy(params.get('all_projects')) or 'project_id' in params:
        ctx.can('resq:slo_terms:list_all')
        project = params.get('project_id')
    items, links = handlers.page(
        req, params, lambda limit, marker, max_bytes: term_obj.get_list(
            ctx, project, status=params.get('status'), limit=limit,
            marker=marker, max_bytes=max_bytes), 'uuid', 'SLO term',
        sized=True)
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
    project = _term_project(ctx, body)
    status = body.get('status')
    if status not in (None, term_obj.REQUESTED):
        _must_admit(ctx, 'records a term as %s' % status)
    try:
        profile_obj.get(ctx, body['profile_id'], project)
    except obj_exc.ProfileNotFound:
        raise errors.BadRequest(
            'profile %s is neither public nor of project %s; upload it to '
            'your project or use a public profile'
            % (body['profile_id'], project),
            code='resq.slo_term.profile')
    if status is None and policy.authorize(ctx, 'resq:slo_terms:admit',
                                           {'project_id': ctx.project_id}):
        status = term_obj.ADMITTED
    values = dict(body, project_id=project, status=status)
    return handlers.respond(term_obj.create(
        ctx, values, limit=handlers.conf(req).api.max_terms_per_project),
        status=201)


def update_term(req):
    ctx = handlers.context(req)
    uuid = req.urlvars['uuid']
    # Who may change no term, not even its own project's, is refused
    # before its body is read; the body is read before the term, so that
    # nothing read from the database waits on a client that sends slowly.
    ctx.can('resq:slo_terms:update')
    body = util.extract_json(req, schema.PATCH,
                             handlers.conf(req).api.max_request_body_size)
    rec = term_obj.get(ctx, uuid, _scope(ctx))
    ctx.can('resq:slo_terms:update', {'project_id': rec['project_id']})
    generation = body.pop('generation')
    status = body.get('status', rec['status'])
    if status not in (rec['status'], term_obj.RELEASED):
        _must_admit(ctx, 'moves a term to %s' % status)
    # What was admitted is what the admission checked: a project that
    # could swap the servers or flavors would hold a reservation for
    # servers nobody admitted. The writer checks it on the row it writes.
    admission = policy.authorize(ctx, 'resq:slo_terms:admit',
                                 {'project_id': ctx.project_id})
    return handlers.respond(term_obj.update(ctx, uuid, generation, body,
                                            admission=admission))


def delete_term(req):
    ctx = handlers.context(req)
    uuid = req.urlvars['uuid']
    rec = term_obj.get(ctx, uuid, _scope(ctx))
    ctx.can('resq:slo_terms:delete', {'project_id': rec['project_id']})
    term_obj.delete(ctx, uuid)
    return handlers.respond(status=204)
