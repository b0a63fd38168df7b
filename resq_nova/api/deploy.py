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
"""The WSGI stack of resq-api.

Outermost first: request id, HTTP proxy headers to WSGI, CORS, the
versions document without a token, authentication (keystonemiddleware's
``auth_token``, or ``noauth2`` for try-outs), then the API itself: the
microversion, the route, the context, the handler, and every error as the
OpenStack error document (a bug is a 500 that names the request id, never
a traceback).
"""

from keystonemiddleware import auth_token
from oslo_db import exception as db_exc
from oslo_log import log as logging
from oslo_middleware import cors
from oslo_middleware import http_proxy_to_wsgi
from oslo_middleware import request_id
import webob
import webob.dec

from resq_nova.api import context
from resq_nova.api.db import api as db_api
from resq_nova.api import errors
from resq_nova.api import handler
from resq_nova.api import microversion
from resq_nova.api.objects import exception as obj_exc
from resq_nova.api import policy
from resq_nova.api import validation
from resq_nova.conf import api as api_conf

LOG = logging.getLogger(__name__)
# The collections a POST creates in -> the field naming what it created.
CREATED_KEYS = {'/snapshots': 'id', '/plans': 'id', '/slo_terms': 'uuid'}


def register_opts(conf):
    api_conf.register_opts(conf)
    db_api.register_opts(conf)


class ResQAPI:
    """The API behind the middleware."""

    def __init__(self, conf):
        self.conf = conf
        self.dispatcher = handler.Dispatcher()

    @webob.dec.wsgify
    def __call__(self, req):
        rid = req.environ.get(request_id.ENV_REQUEST_ID)
        version = None
        try:
            version = microversion.extract(req.headers)
            func = validation.check_request(req, self.dispatcher)
            req.environ['resq.conf'] = self.conf
            req.environ['resq.version'] = version
            req.environ['resq.context'] = context.RequestContext.from_environ(
                req.environ, config=self.conf)
            resp = func(req)
        except (errors.APIError, obj_exc.ObjectError,
                db_exc.DBDuplicateEntry) as exc:
            resp = errors.to_response(exc, rid)
        except Exception:
            LOG.exception('%s %s failed unexpectedly', req.method, req.path)
            resp = errors.response(
                500, 'resq-api failed unexpectedly; its log has the details '
                'under request id %s' % rid, 'resq.internal', rid)
        if resp.status_int == 201 and 'Location' not in resp.headers:
            url = validation.location(req, resp, CREATED_KEYS)
            if url:
                resp.headers['Location'] = url
        for key, value in microversion.headers(
                version or microversion.MIN_VERSION).items():
            resp.headers[key] = value
        return resp


class NoAuth:
    """``noauth2``: the token names the caller; never on a shared network.

    ``admin`` is an admin of project ``admin``; ``<user>:<project>`` is a
    member (and reader) of ``<project>``; ``<user>:<project>:<roles>``
    takes the comma-separated roles.
    """

    def __init__(self, app):
        self.app = app

    @webob.dec.wsgify
    def __call__(self, req):
        token = req.headers.get('X-Auth-Token')
        if not token:
            return errors.response(
                401, 'send X-Auth-Token (noauth2: "admin" or '
                '"<user>:<project>")', 'resq.unauthenticated')
        if token == 'admin':
            user, project, roles = 'admin', 'admin', 'admin,member,reader'
        else:
            user, _, rest = token.partition(':')
            project, _, roles = rest.partition(':')
            project = project or user
            roles = roles or 'member,reader'
        req.headers['X-User-Id'] = user
        req.headers['X-Project-Id'] = project
        req.headers['X-Roles'] = roles
        req.headers['X-Identity-Status'] = 'Confirmed'
        return req.get_response(self.app)


class PublicPaths:
    """Serve the versions document without authentication."""

    def __init__(self, public, authed):
        self.public = public
        self.authed = authed

    def __call__(self, environ, start_response):
        path = environ.get('PATH_INFO', '/').rstrip('/') or '/'
        app = self.public if path in handler.PUBLIC_PATHS else self.authed
        return app(environ, start_response)


def deploy(conf):
    """The whole stack for ``conf`` (the database configured already)."""
    policy.init(conf)
    api = ResQAPI(conf)
    if conf.api.auth_strategy == 'noauth2':
        authed = NoAuth(api)
    else:
        authed = auth_token.AuthProtocol(api, {'oslo_config_config': conf})
    app = PublicPaths(api, authed)
    app = cors.CORS(app, conf)
    app = http_proxy_to_wsgi.HTTPProxyToWSGI(app, conf)
    return request_id.RequestId(app)
