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
"""Errors of resq-api as the OpenStack error document.

``{"errors": [{"status", "title", "code", "detail", "request_id"}]}``;
``detail`` says what is wrong and what would fix it.
"""

import json

from oslo_db import exception as db_exc
import webob

from resq_nova.api.objects import exception as obj_exc

TITLES = {400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden',
          404: 'Not Found',
          405: 'Method Not Allowed', 406: 'Not Acceptable',
          409: 'Conflict', 413: 'Request Entity Too Large',
          415: 'Unsupported Media Type', 500: 'Internal Server Error',
          503: 'Service Unavailable'}


class APIError(Exception):
    status = 500
    code = 'resq.error'

    def __init__(self, detail, code=None, headers=None):
        super().__init__(detail)
        self.detail = detail
        self.code = code or self.code
        self.headers = headers or {}


class BadRequest(APIError):
    status = 400
    code = 'resq.bad_request'


class Forbidden(APIError):
    status = 403
    code = 'resq.forbidden'


class NotFound(APIError):
    status = 404
    code = 'resq.not_found'


class MethodNotAllowed(APIError):
    status = 405
    code = 'resq.method_not_allowed'


class NotAcceptable(APIError):
    status = 406
    code = 'resq.microversion'


class Conflict(APIError):
    status = 409
    code = 'resq.conflict'


class TooLarge(APIError):
    status = 413
    code = 'resq.too_large'


class UnsupportedMediaType(APIError):
    status = 415
    code = 'resq.content_type'


def from_object_error(exc):
    """An objects-layer exception as the API error of its status."""
    cls = {400: BadRequest, 403: Forbidden, 404: NotFound,
           409: Conflict}.get(exc.status, APIError)
    return cls(str(exc), code=exc.code)


def from_duplicate(exc):
    """A row the database refused as a duplicate, as a 409.

    The objects check before they insert, and a writer that lost the race
    runs again and answers from its check; this is for a duplicate that
    is left (``exc.columns`` names the unique key when the driver says).
    """
    key = ', '.join(exc.columns or ()) or 'key'
    return Conflict('a record with the same %s already exists; read it '
                    'and replace it, or choose another %s' % (key, key),
                    code='resq.duplicate')


def response(status, detail, code, request_id=None, headers=None):
    body = {'errors': [{'status': status,
                        'title': TITLES.get(status, 'Error'),
                        'code': code, 'detail': detail,
                        'request_id': request_id}]}
    resp = webob.Response(status=status, content_type='application/json',
                          charset='utf-8',
                          body=json.dumps(body).encode('utf-8'))
    for key, value in (headers or {}).items():
        resp.headers[key] = value
    return resp


def to_response(exc, request_id=None):
    if isinstance(exc, obj_exc.ObjectError):
        exc = from_object_error(exc)
    elif isinstance(exc, db_exc.DBDuplicateEntry):
        exc = from_duplicate(exc)
    return response(exc.status, exc.detail, exc.code, request_id,
                    exc.headers)
