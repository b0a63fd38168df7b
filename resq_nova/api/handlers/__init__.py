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
"""Handlers of resq-api: one module per resource, one function per route."""

import json

import webob

from resq_nova.api import errors
from resq_nova.api.objects import exception as obj_exc
from resq_nova.api import util


def context(req):
    return req.environ['resq.context']


def conf(req):
    return req.environ['resq.conf']


def respond(body=None, status=200, headers=None):
    """A JSON response (an empty body for 204 and 304)."""
    resp = webob.Response(status=status)
    if body is not None:
        resp.content_type = 'application/json'
        resp.charset = 'utf-8'
        # UTF-8 as sent: an escaped character is 6 or 12 bytes (a page of
        # non-ASCII names came out more than twice its size).
        resp.body = json.dumps(body, ensure_ascii=False).encode('utf-8')
    for key, value in (headers or {}).items():
        resp.headers[key] = value
    return resp


def truthy(value):
    return str(value).lower() in ('1', 'true')


def page(req, params, fetch, key, what, sized=False):
    """One page of a list, and its ``links``; ``next`` when more remain.

    ``fetch(limit, marker)`` returns the items after ``marker`` (the
    ``key`` of the previous page's last item), at most ``limit`` of them,
    raising the objects' NotFound when ``marker`` names no item the caller
    can see. A page holds at most ``limit`` items (``[api] max_limit``)
    and ends before the item that would take its JSON past ``[api]
    max_page_bytes`` (it holds one item at least); items are fetched in
    batches sized by what the page has left, so a list of large documents
    never loads much more than one page. One item more than the page is
    fetched, so ``next`` is given exactly when another page has items.
    ``sized``: ``fetch`` also takes ``max_bytes`` and returns only the
    items (one at least) whose stored documents fit it, never reading the
    others (a short answer then does not mean the list has ended).

    :returns: ``(items, links)``.
    :raises resq_nova.api.errors.BadRequest: ``marker`` names no item.
    """
    api = conf(req).api
    limit = util.limit(params, api.max_limit)
    marker = params.get('marker')
    try:
        items, full = _fill(fetch, limit, marker, api.max_page_bytes, key,
                            sized)
    except obj_exc.NotFound:
        if marker is None:
            raise
        raise errors.BadRequest(
            'marker %s is not a %s that you can see (it may have been '
            'deleted); list again without marker, or take the marker from '
            'the next link of the page before' % (marker, what),
            code='resq.query.marker')
    if not full:
        return items, util.page_links(req, limit)
    return items, util.page_links(req, limit, items[-1][key])


# The first batch of a page: small lists take one query.
_FIRST_BATCH = 101


def _fill(fetch, limit, marker, budget, key, sized):
    """Items of one page; ``full``: another page has items."""
    items = []
    used = 0
    batch = min(limit + 1, _FIRST_BATCH)
    while True:
        extra = {'max_bytes': max(budget - used, 0)} if sized else {}
        try:
            got = fetch(batch, marker, **extra)
        except obj_exc.NotFound:
            if not items:
                raise
            # The page's last item went away meanwhile: the page ends.
            return items, True
        for item in got:
            size = len(json.dumps(item, ensure_ascii=False).encode(
                'utf-8')) + 1
            if len(items) == limit or (items and used + size > budget):
                return items, True
            items.append(item)
            used += size
        if not got or (len(got) < batch and not sized):
            return items, False
        marker = items[-1][key]
        # As many as the page's bytes and items leave room for, by the
        # mean size so far (one more, to learn whether a next page has
        # items).
        mean = max(1, used // len(items))
        batch = max(1, min(limit + 1 - len(items),
                           (budget - used) // mean + 1))
