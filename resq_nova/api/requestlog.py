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
"""One INFO line per request, as Placement's ``requestlog`` writes.

``<address> "<METHOD> <path?query>" status: <code> len: <bytes>
microversion: <version> time: <seconds> request_id: <id>``, logged when
the answer is started (its body is not awaited). It sits inside
``request_id``'s middleware, so every answer -- the 401s of
authentication, the 503s of a database that is away -- has its line and
its request id. It also starts each request's logging context afresh
(the request id alone), so that nothing is logged under the identity of
the worker's previous caller.
"""

import time
import urllib.parse

from oslo_context import context
from oslo_log import log as logging
from oslo_middleware import request_id


LOG = logging.getLogger(__name__)
FORMAT = ('%(address)s "%(method)s %(uri)s" status: %(status)s len: '
          '%(length)s microversion: %(microversion)s time: %(time).3f '
          'request_id: %(request_id)s')


class RequestLog:
    """WSGI middleware writing :data:`FORMAT` for every request."""

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        started = time.monotonic()
        # oslo.context keeps the last request's context in the thread (the
        # worker's next request would log under its user, project and
        # request id until its own is made): this request's id, nobody's
        # identity, until authentication says who asks.
        context.RequestContext(
            request_id=environ.get(request_id.ENV_REQUEST_ID),
            overwrite=True)

        def logging_start_response(status, headers, exc_info=None):
            values = dict(headers)
            LOG.info(FORMAT, {
                'address': environ.get('REMOTE_ADDR', '-'),
                'method': _method(environ),
                'uri': _uri(environ),
                'status': status.split(None, 1)[0],
                'length': values.get('Content-Length', '-'),
                'microversion': _microversion(values),
                'time': time.monotonic() - started,
                'request_id': environ.get(request_id.ENV_REQUEST_ID, '-')})
            return start_response(status, headers, exc_info)

        return self.app(environ, logging_start_response)


# An HTTP method is a token (RFC 9110): letters, digits and a few marks.
_TOKEN = frozenset('!#$%&\'*+-.^_`|~0123456789'
                   'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz')


def _method(environ):
    """The request's method as logged: a token as it is, else escaped.

    uwsgi's http-socket ends the method at a space only, so a client can
    send quotes, tabs or terminal escapes there: each character that is no
    token character is written as ``\\xNN``, so the line cannot be forged.
    """
    method = environ.get('REQUEST_METHOD') or '-'
    if all(ch in _TOKEN for ch in method):
        return method
    return ''.join(ch if ch in _TOKEN else '\\x%02x' % ord(ch)
                   if ord(ch) < 256 else '\\u%04x' % ord(ch)
                   for ch in method[:64])


# What stays as it is in a logged path; the rest is percent-encoded.
_PATH_SAFE = "/:@!$&'()*+,;=-._~"
# In the query string, which WSGI hands over still encoded, '%' too.
_QUERY_SAFE = _PATH_SAFE + '%?'


def _uri(environ):
    """The request's path and query, percent-encoded as on the wire.

    SCRIPT_NAME is where uwsgi or Apache mounts the API. WSGI hands the
    path decoded (latin-1 text of its bytes): encoded again, a quote, a
    space or a control character in it cannot end the logged request and
    forge the fields after it (status, request id), nor a line.
    """
    path = environ.get('SCRIPT_NAME', '') + environ.get('PATH_INFO', '')
    uri = urllib.parse.quote(path.encode('latin-1', 'replace'),
                             safe=_PATH_SAFE)
    if environ.get('QUERY_STRING'):
        uri += '?' + urllib.parse.quote(
            environ['QUERY_STRING'].encode('latin-1', 'replace'),
            safe=_QUERY_SAFE)
    return uri


def _microversion(headers):
    # 'resq 1.1' -> '1.1'; '-' when the answer names none (a 401).
    value = headers.get('OpenStack-API-Version', '')
    return value.split(None, 1)[1] if ' ' in value else '-'
