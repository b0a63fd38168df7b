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
        resp.body = json.dumps(body).encode('utf-8')
    for key, value in (headers or {}).items():
        resp.headers[key] = value
    return resp


def truthy(value):
    return str(value).lower() in ('1', 'true')
