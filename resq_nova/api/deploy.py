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

Outermost first: request id, the request log line, HTTP proxy headers to
WSGI, CORS, the versions document without a token, authentication
(keystonemiddleware's ``auth_token``, or ``noauth2`` for try-outs), then
the API itself: the microversion, the route, the context, the handler, and
every error (the middleware's own too, :class:`JsonErrors`) as the
OpenStack error document (a database that is away is a
503 with ``Retry-After``; a bug is a 500 that names the request id, never
a traceback).

:func:`deploy` refuses (:class:`AuthNotConfigured`) to build a stack
whose ``auth_token`` could not check a single token.
"""

import json
import re

from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading
from keystonemiddleware import auth_token
from keystonemiddleware import opts as ks_opts
from oslo_db import exception as db_exc
from oslo_log import log as logging
from oslo_middleware import cors
from oslo_middleware import http_proxy_to_wsgi
from oslo_middleware import request_id
import webob
import webob.dec

from resq_common import exception
from resq_nova.api import context
from resq_nova.api.db import api as db_api
from resq_nova.api import errors
from resq_nova.api import handler
from resq_nova.api import microversion
from resq_nova.api.objects import exception as obj_exc
from resq_nova.api import policy
from resq_nova.api import requestlog
from resq_nova.api import validation
from resq_nova.conf import api as api_conf

LOG = logging.getLogger(__name__)
# The collections a POST creates in -> the field naming what it created.
CREATED_KEYS = {'/snapshots': 'id', '/plans': 'id', '/slo_terms': 'uuid'}
# Retry-After of a 503 for a database that is away, in seconds.
RETRY_AFTER_S = 10
AUTH_GROUP = 'keystone_authtoken'


class AuthNotConfigured(exception.ResQException):
    """``auth_strategy = keystone`` without what auth_token needs."""

    msg_fmt = ('[api] auth_strategy = keystone needs %(missing)s, which '
               '%(where)s lacks: keystonemiddleware checks every token with '
               'Keystone through them (without them every request would be '
               'a 500). Set them as for any OpenStack service (auth_type = '
               'password, auth_url = Keystone\'s URL, and resq-api\'s '
               'service user: username, password, user_domain_name, '
               'project_name, project_domain_name), or [api] auth_strategy '
               '= noauth2 for a try-out on a machine nobody else reaches')


def register_opts(conf):
    api_conf.register_opts(conf)
    db_api.register_opts(conf)
    for group, opts in ks_opts.list_auth_token_opts():
        conf.register_opts(opts, group=group)


def check_keystone(conf):
    """What keystonemiddleware needs to check a token, else a clear error.

    ``auth_token`` validates each token with Keystone through the
    keystoneauth plugin ``[keystone_authtoken] auth_type`` names (its
    options in that section, or in the one ``auth_section`` names). With
    no plugin it cannot reach Keystone, and a plugin without a required
    option (``password``: ``auth_url``) fails at its first use; either
    way every request was a text/plain 500. ``www_authenticate_uri`` is
    not needed (auth_token takes Keystone's endpoint from the catalog).

    :raises AuthNotConfigured: naming the options and the files read.
    """
    section = conf[AUTH_GROUP].auth_section or AUTH_GROUP
    try:
        plugin = ks_loading.load_auth_from_conf_options(conf, AUTH_GROUP)
    except ks_exc.MissingRequiredOptions as exc:
        missing = ['[%s] %s' % (section, opt.dest) for opt in exc.options]
        raise AuthNotConfigured(missing=' and '.join(missing),
                                where=_where(conf))
    except ks_exc.NoMatchingPlugin as exc:
        raise AuthNotConfigured(
            missing='[%s] auth_type naming a keystoneauth plugin (%r is '
                    'none)' % (section, exc.name), where=_where(conf))
    if plugin is None:
        raise AuthNotConfigured(
            missing='[%s] auth_type and auth_url' % section,
            where=_where(conf))


def _where(conf):
    files = list(getattr(conf, 'config_file', None) or ())
    if files:
        return 'the configuration (%s)' % ', '.join(files)
    return 'the configuration (no file was read; resq-api\'s: %s)' % (
        api_conf.SEARCHED)


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
            # The request's database waits, all together, have [api]
            # database_read_timeout (db_api's docstring).
            with db_api.request_budget():
                resp = func(req)
        except (errors.APIError, obj_exc.ObjectError,
                db_exc.DBDuplicateEntry) as exc:
            resp = errors.to_response(exc, rid)
        except Exception as exc:
            if db_api.unavailable(exc):
                resp = _database_unavailable(req, exc, rid)
            else:
                LOG.exception('%s %s failed unexpectedly', req.method,
                              req.path)
                resp = errors.response(
                    500, 'resq-api failed unexpectedly; its log has the '
                    'details under request id %s' % rid, 'resq.internal',
                    rid)
        if resp.status_int == 201 and 'Location' not in resp.headers:
            url = validation.location(req, resp, CREATED_KEYS)
            if url:
                resp.headers['Location'] = url
        for key, value in microversion.headers(
                version or microversion.MIN_VERSION).items():
            resp.headers[key] = value
        return resp


def _database_unavailable(req, exc, rid):
    # The cause (host, driver's words) goes to the log, not to the caller.
    LOG.error('%s %s: resq-api\'s database is unavailable, answered 503: '
              '%s', req.method, req.path, ' '.join(str(exc).split()))
    return errors.response(
        503, 'resq-api cannot reach its database; retry in %d seconds (the '
        'operator finds why in resq-api\'s log under request id %s)'
        % (RETRY_AFTER_S, rid), 'resq.database_unavailable', rid,
        headers={'Retry-After': str(RETRY_AFTER_S)})


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
                '"<user>:<project>")', 'resq.unauthenticated',
                req.environ.get(request_id.ENV_REQUEST_ID))
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


class JsonErrors:
    """Every error answer as resq-api's error document.

    What resq-api writes already is one; what the middleware before it
    writes (keystonemiddleware's 401 and 503, webob's own) becomes one,
    keeping its status, its headers (``WWW-Authenticate``) and its message
    as the ``detail``.
    """

    CODES = {401: 'resq.unauthenticated', 403: 'resq.forbidden',
             404: 'resq.not_found', 405: 'resq.method_not_allowed',
             413: 'resq.too_large', 503: 'resq.unavailable'}
    HINTS = {401: 'send a valid X-Auth-Token (openstack token issue)',
             503: 'retry later; the log of resq-api says what it waits '
                  'for'}

    def __init__(self, app):
        self.app = app

    @webob.dec.wsgify
    def __call__(self, req):
        resp = req.get_response(self.app)
        if resp.status_int < 400 or _error_document(resp):
            return resp
        status = resp.status_int
        detail = _message(resp) or errors.TITLES.get(status, 'Error')
        hint = self.HINTS.get(status)
        if hint and hint not in detail:
            detail = '%s; %s' % (detail.rstrip('. '), hint)
        keep = {k: v for k, v in resp.headers.items()
                if k.lower() not in ('content-type', 'content-length')}
        return errors.response(
            status, detail, self.CODES.get(status, 'resq.error'),
            req.environ.get(request_id.ENV_REQUEST_ID), keep)


def _error_document(resp):
    if resp.content_type != 'application/json':
        return False
    try:
        body = json.loads(resp.body)
    except ValueError:
        return False
    return isinstance(body, dict) and isinstance(body.get('errors'), list)


def _message(resp):
    """The message of another component's error answer, on one line."""
    text = resp.body.decode('utf-8', 'replace')
    try:
        body = json.loads(text)
    except ValueError:
        body = None
    if isinstance(body, dict):
        inner = body.get('error', body)
        if isinstance(inner, dict):
            text = str(inner.get('message') or inner.get('title') or '')
    text = re.sub(r'<[^>]*>', ' ', text)
    return ' '.join(text.split())[:500]


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
    """The whole stack for ``conf`` (the database configured already).

    :raises AuthNotConfigured: keystone authentication without what it
        needs (:func:`check_keystone`).
    """
    if conf.api.auth_strategy == 'keystone':
        check_keystone(conf)
    policy.init(conf)
    api = ResQAPI(conf)
    if conf.api.auth_strategy == 'noauth2':
        LOG.warning('[api] auth_strategy = noauth2: every caller is who its '
                    'token says (the token "admin" is an admin); never '
                    'serve it where others can reach it')
        authed = NoAuth(api)
    else:
        authed = auth_token.AuthProtocol(api, {'oslo_config_config': conf})
    app = JsonErrors(PublicPaths(api, authed))
    app = cors.CORS(app, conf)
    app = http_proxy_to_wsgi.HTTPProxyToWSGI(app, conf)
    return request_id.RequestId(requestlog.RequestLog(app))
