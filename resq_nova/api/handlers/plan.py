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
"""``/snapshots`` and ``/plans``: the optimizer's records."""

from resq_nova.api import errors
from resq_nova.api import handlers
from resq_nova.api.objects import plan as plan_obj
from resq_nova.api.schemas import plan as schema
from resq_nova.api import util


def _body(req, body_schema):
    return util.extract_json(req, body_schema,
                             handlers.conf(req).api.max_request_body_size)


def create_snapshot(req):
    ctx = handlers.context(req)
    ctx.can('resq:plans:create')
    body = _body(req, schema.SNAPSHOT_POST)
    return handlers.respond(plan_obj.create_snapshot(ctx, body['id'],
                                                     body['snapshot']),
                            status=201)


def list_snapshots(req):
    ctx = handlers.context(req)
    ctx.can('resq:plans:read')
    params = util.query(req, schema.SNAPSHOT_LIST_QUERY)
    items, links = handlers.page(
        req, params, lambda limit, marker: plan_obj.list_snapshots(
            ctx, limit=limit, marker=marker), 'id', 'snapshot')
    return handlers.respond({'snapshots': items, 'links': links})


def show_snapshot(req):
    ctx = handlers.context(req)
    ctx.can('resq:plans:read')
    return handlers.respond(plan_obj.get_snapshot(ctx, req.urlvars['id']))


def delete_snapshot(req):
    ctx = handlers.context(req)
    ctx.can('resq:plans:create')
    plan_obj.delete_snapshot(ctx, req.urlvars['id'])
    return handlers.respond(status=204)


def create_plan(req):
    ctx = handlers.context(req)
    ctx.can('resq:plans:create')
    body = _body(req, schema.PLAN_POST)
    if body.get('snapshot_id') is None:
        raise errors.BadRequest(
            'a plan names the snapshot it was made from: store the '
            'snapshot (POST /snapshots) and give its id as snapshot_id',
            code='resq.plan.snapshot')
    return handlers.respond(plan_obj.create(ctx, body['id'],
                                            body.get('snapshot_id'),
                                            body['plan']), status=201)


def list_plans(req):
    ctx = handlers.context(req)
    ctx.can('resq:plans:read')
    params = util.query(req, schema.LIST_QUERY)
    items, links = handlers.page(
        req, params, lambda limit, marker: plan_obj.get_list(
            ctx, state=params.get('state'), limit=limit, marker=marker),
        'id', 'plan')
    return handlers.respond({'plans': items, 'links': links})


def show_plan(req):
    ctx = handlers.context(req)
    ctx.can('resq:plans:read')
    return handlers.respond(plan_obj.get(ctx, req.urlvars['plan_id']))


def apply_plan(req):
    ctx = handlers.context(req)
    ctx.can('resq:plans:apply')
    body = _body(req, schema.APPLY)
    return handlers.respond(plan_obj.claim(ctx, req.urlvars['plan_id'],
                                           body['applier'],
                                           body.get('lease')), status=202)


def _lease(req, renew):
    """``renew(ctx, plan id, applier, lease)`` for an applier's lease."""
    ctx = handlers.context(req)
    ctx.can('resq:plans:apply')
    body = _body(req, schema.HEARTBEAT)
    return handlers.respond(renew(ctx, req.urlvars['plan_id'],
                                  body['applier'], body['lease']))


def heartbeat(req):
    return _lease(req, plan_obj.heartbeat)


def take_over(req):
    return _lease(req, plan_obj.take_over)


def cancel_plan(req):
    ctx = handlers.context(req)
    ctx.can('resq:plans:cancel')
    if req.content_length:
        _body(req, schema.CANCEL)
    return handlers.respond(plan_obj.cancel(ctx, req.urlvars['plan_id']),
                            status=202)


def put_action(req):
    ctx = handlers.context(req)
    ctx.can('resq:plans:apply')
    body = _body(req, schema.ACTION_PUT)
    return handlers.respond(plan_obj.set_action_state(
        ctx, req.urlvars['plan_id'], int(req.urlvars['index']),
        body['state'], body.get('detail')))


def put_result(req):
    ctx = handlers.context(req)
    ctx.can('resq:plans:apply')
    body = _body(req, schema.RESULT_PUT)
    return handlers.respond(plan_obj.set_result(
        ctx, req.urlvars['plan_id'], body['state'], body.get('result')))
