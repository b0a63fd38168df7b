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
"""``/profiles``: NF profile documents."""

from resq_common import profile as profile_mod
from resq_nova.api import errors
from resq_nova.api import handlers
from resq_nova.api.objects import profile as profile_obj
from resq_nova.api.schemas import profile as schema
from resq_nova.api import util
from resq_profiler import exception as profiler_exc


def _scope(ctx):
    # None: every profile (admin, service); else the project's and public.
    return None if ctx.is_admin_view else ctx.project_id


def list_profiles(req):
    ctx = handlers.context(req)
    ctx.can('resq:profiles:list')
    params = util.query(req, schema.LIST_QUERY)
    scope = _scope(ctx)
    tag = '"%s"' % profile_obj.etag(ctx, scope)
    if util.etag_matches(req, tag):
        return handlers.respond(status=304, headers={'ETag': tag})
    detail = handlers.truthy(params.get('detail'))
    items, links = handlers.page(
        req, params, lambda limit, marker, max_bytes: profile_obj.get_list(
            ctx, scope, detail=detail, limit=limit, marker=marker,
            max_bytes=max_bytes), 'id', 'profile', sized=True)
    return handlers.respond({'profiles': items, 'links': links},
                            headers={'ETag': tag})


def show_profile(req):
    ctx = handlers.context(req)
    ctx.can('resq:profiles:show')
    rec = profile_obj.get(ctx, req.urlvars['profile_id'], _scope(ctx))
    tag = profile_obj.record_etag(rec)
    if util.etag_matches(req, tag):
        return handlers.respond(status=304, headers={'ETag': tag})
    return handlers.respond(rec, headers={'ETag': tag})


def put_profile(req):
    ctx = handlers.context(req)
    profile_id = req.urlvars['profile_id']
    # Who may upload no profile at all is refused before its body is
    # parsed (a body of a megabyte costs seconds to check).
    ctx.can('resq:profiles:create')
    body = util.extract_json(req, schema.PUT,
                             handlers.conf(req).api.max_request_body_size)
    visibility = body.get('visibility', 'private')
    ctx.can('resq:profiles:create_public' if visibility == 'public'
            else 'resq:profiles:create')
    document = body['profile']
    try:
        profile_mod.Profile.from_dict(document, source='profile')
    except profiler_exc.ResQException as exc:
        raise errors.BadRequest('%s; fix the document (resq-profiler '
                                'validate checks it locally)' % exc,
                                code='resq.profile.invalid')
    if document.get('id') != profile_id:
        raise errors.BadRequest(
            'the document\'s id %r differs from the URL\'s %r; PUT it to '
            '/profiles/%s' % (document.get('id'), profile_id,
                              document.get('id')),
            code='resq.profile.id_mismatch')
    # The owner of a new profile; a replaced one keeps its owner.
    owner = None if visibility == 'public' else ctx.project_id
    if body.get('generation') is not None:
        # Replacing: the caller must see (and own) the profile.
        current = profile_obj.get(ctx, profile_id, _scope(ctx))
        if not ctx.is_admin_view and current['project_id'] != ctx.project_id:
            raise errors.Forbidden('profile %s is not your project\'s; only '
                                   'its owner or an admin replaces it'
                                   % profile_id, code='resq.policy')
    rec, created = profile_obj.create_or_replace(
        ctx, profile_id, document, visibility, owner, body.get('generation'),
        scope=_scope(ctx),
        limit=handlers.conf(req).api.max_profiles_per_project)
    return handlers.respond(rec, status=201 if created else 200,
                            headers={'ETag': profile_obj.record_etag(rec)})


def delete_profile(req):
    ctx = handlers.context(req)
    profile_id = req.urlvars['profile_id']
    rec = profile_obj.get(ctx, profile_id, _scope(ctx))
    # A public profile belongs to every project: only an admin deletes
    # it, whichever project published it.
    owner = rec['project_id'] if rec['visibility'] == 'private' else None
    ctx.can('resq:profiles:delete', {'project_id': owner})
    profile_obj.delete(ctx, profile_id, _scope(ctx))
    return handlers.respond(status=204)
