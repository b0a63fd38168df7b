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
"""The one client of resq-api (service type ``resq``).

``resq-admit``, the optimizer, the agent and the scheduler plugins use it
through a keystoneauth adapter built from ``[resq_api]`` (bounded
timeouts, the catalog or ``endpoint_override``). A method per operation;
one response check turning the API's error document into exceptions an
operator can act on. Profiles are cached and revalidated with the ETag the
API gives (``If-None-Match``), so a scheduler asks at most once per
``cache_seconds`` and downloads documents only when they changed.

Every ``list_*`` method returns the whole list: it follows the ``next``
link of each page (resq-api gives at most ``[api] max_limit`` items a
page) until a page has none. ``limit`` only sets the size of the pages.
"""

import threading
import time
from urllib import parse

from keystoneauth1 import exceptions as ks_exc
from oslo_log import log as logging

from resq_common.conf import clients
from resq_common import exception

LOG = logging.getLogger(__name__)

SERVICE_TYPE = 'resq'
GROUP = clients.RESQ_API
MV_BASE = '1.0'          # every resource of the first release
MV_HOST_INSTANCES = '1.1'   # host reports list the partitioned servers
MV_HOST_HEARTBEAT = '1.2'   # PUT /hosts/{hostname}/heartbeat
# resq-api has no report of the host a heartbeat names.
HOST_NOT_FOUND = 'resq.host.not_found'
# What resq-api answers a request at a microversion it does not serve (406)
# or a body field an older resq-api does not know (400).
VERSION_REFUSED = (400, 406)
DEFAULT_CACHE_SECONDS = 10


class ResQAPIError(exception.ResQException):
    msg_fmt = 'resq-api %(method)s %(url)s failed: %(reason)s'

    @property
    def status(self):
        return self.kwargs.get('status')

    @property
    def code(self):
        """The ``code`` of resq-api's error document, if it sent one."""
        return self.kwargs.get('code')

    @property
    def retry_after(self):
        """Seconds the answer's ``Retry-After`` asks to wait, or None."""
        return self.kwargs.get('retry_after')


class ResQAPIUnavailable(ResQAPIError):
    msg_fmt = ('resq-api is unreachable or did not answer within '
               '[resq_api] timeout (%(reason)s); check the [resq_api] '
               'options and that the resq-api service is running')


class NotFound(ResQAPIError):
    msg_fmt = 'resq-api %(method)s %(url)s: %(reason)s'


class HostNotReported(NotFound):
    """A heartbeat of a host resq-api has no report of."""


class Conflict(ResQAPIError):
    msg_fmt = 'resq-api %(method)s %(url)s refused: %(reason)s'


class Forbidden(ResQAPIError):
    msg_fmt = ('resq-api %(method)s %(url)s is not allowed for these '
               'credentials: %(reason)s')


def register_opts(conf, group=GROUP):
    clients.register_opts(conf, group)


class ResQClient:
    """resq-api over a keystoneauth adapter."""

    def __init__(self, adapter, cache_seconds=DEFAULT_CACHE_SECONDS,
                 microversion=MV_BASE):
        self._adapter = adapter
        self.microversion = microversion
        self._cache_seconds = cache_seconds
        self._lock = threading.Lock()
        self._profiles = {}          # id -> document
        self._profiles_etag = None
        self._profiles_checked = None

    @classmethod
    def from_conf(cls, conf, group=GROUP, strict=True, **kwargs):
        """:raises resq_common.conf.clients.MissingCredentials:"""
        return cls(clients.load_adapter(conf, group, SERVICE_TYPE, strict),
                   **kwargs)

    @classmethod
    def for_endpoint(cls, endpoint, headers=None,
                     timeout=clients.DEFAULT_TIMEOUT, **kwargs):
        """A client for a resq-api reached without Keystone (tests)."""
        return cls(clients.noauth_adapter(endpoint, SERVICE_TYPE, headers,
                                          timeout), **kwargs)

    def endpoint(self):
        """resq-api's URL for this client, or None when it has none.

        The adapter's ``endpoint_override``, else the ``resq`` service of
        the catalog; None when the catalog has no such service.
        """
        try:
            return self._adapter.get_endpoint()
        except ks_exc.EndpointNotFound:
            return None

    # -- the one response check -------------------------------------------
    def _call(self, method, url, body=None, ok=(200,), headers=None,
              microversion=None):
        kwargs = {'microversion': microversion or self.microversion,
                  'headers': dict({'accept': 'application/json'},
                                  **(headers or {}))}
        if body is not None:
            kwargs['json'] = body
        resp = clients.call(self._adapter, url, method, ResQAPIUnavailable,
                            **kwargs)
        if resp.status_code in ok:
            return resp
        reason = '%s %s' % (resp.status_code, _errors(resp))
        cls = {404: NotFound, 409: Conflict, 403: Forbidden}.get(
            resp.status_code, ResQAPIError)
        raise cls(method=method, url=url, reason=reason,
                  status=resp.status_code, code=_code(resp),
                  retry_after=_retry_after(resp))

    def _json(self, method, url, body=None, ok=(200,), microversion=None):
        resp = self._call(method, url, body, ok, microversion=microversion)
        return resp.json() if resp.content else None

    def _pages(self, url, key, microversion=None, **query):
        """Every item of a list: its first page and every page after.

        :param microversion: asked of every page instead of the client's.
        """
        first = self._json('GET', _with_query(url, query),
                           microversion=microversion)
        return self._rest(url, key, first, microversion)

    def _rest(self, url, key, body, microversion=None):
        """The items of page ``body`` and of the pages its links lead to.

        A ``next`` link's query (``marker``, ``limit`` and the filters) is
        asked of ``url`` itself, so the pages come from the endpoint this
        client uses even when resq-api sits behind a proxy or a path
        prefix it does not know about.

        :raises ResQAPIError: a next link leads back to a page already
            read (the list would never end).
        """
        items = list(body[key])
        seen = set()
        while True:
            query = _next_query(body)
            if query is None:
                return items
            if query in seen:
                raise ResQAPIError(
                    method='GET', url=url,
                    reason='the next link repeats the page ?%s; report '
                           'this resq-api bug' % query)
            seen.add(query)
            body = self._json('GET', '%s?%s' % (url, query),
                              microversion=microversion)
            items.extend(body[key])

    # -- profiles ------------------------------------------------------------
    def put_profile(self, document, visibility='private', generation=None):
        """Create or replace a profile; the stored record."""
        body = {'profile': document, 'visibility': visibility,
                'generation': generation}
        return self._json('PUT', '/profiles/%s' % _q(document['id']), body,
                          ok=(200, 201))

    def get_profile_record(self, profile_id):
        """One profile's record, its document under ``profile``.

        :raises NotFound: no such profile that these credentials can see.
        """
        return self._json('GET', '/profiles/%s' % _q(profile_id))

    def delete_profile(self, profile_id):
        self._call('DELETE', '/profiles/%s' % _q(profile_id), ok=(204,))

    def list_profiles(self, detail=None, limit=None):
        """Every visible profile's record (with documents if ``detail``)."""
        return self._pages('/profiles', 'profiles',
                           detail='true' if detail else None, limit=limit)

    def profile_documents(self):
        """Every visible profile's document by id, from the cache.

        Revalidated with the collection's ETag at most once per
        ``cache_seconds``; a 304 keeps the cached documents. The ETag is of
        the whole collection, so it is asked of the first page only and a
        200 is followed to the last page; a change while the pages are
        read makes the kept ETag stale, so the next revalidation reads
        them all again.
        """
        with self._lock:
            now = time.monotonic()
            if (self._profiles_checked is not None
                    and now - self._profiles_checked < self._cache_seconds):
                return dict(self._profiles)
            headers = ({'if-none-match': self._profiles_etag}
                       if self._profiles_etag else None)
            resp = self._call('GET', '/profiles?detail=true', ok=(200, 304),
                              headers=headers)
            if resp.status_code == 200:
                self._profiles = {p['id']: p['profile'] for p in self._rest(
                    '/profiles', 'profiles', resp.json())}
                self._profiles_etag = resp.headers.get('etag')
            self._profiles_checked = now
            return dict(self._profiles)

    def invalidate_profiles(self):
        with self._lock:
            self._profiles_checked = None

    # -- SLO terms ---------------------------------------------------------
    def create_term(self, values):
        return self._json('POST', '/slo_terms', values, ok=(201,))

    def get_term(self, uuid):
        return self._json('GET', '/slo_terms/%s' % _q(uuid))

    def list_terms(self, status=None, all_projects=None, limit=None):
        """Every SLO term of the project (or all), newest first."""
        return self._pages('/slo_terms', 'slo_terms', status=status,
                           all_projects=all_projects, limit=limit)

    def update_term(self, uuid, generation, **values):
        body = dict(values, generation=generation)
        return self._json('PATCH', '/slo_terms/%s' % _q(uuid), body)

    def delete_term(self, uuid):
        self._call('DELETE', '/slo_terms/%s' % _q(uuid), ok=(204,))

    # -- snapshots and plans -----------------------------------------------
    def create_snapshot(self, snapshot_id, document):
        return self._json('POST', '/snapshots',
                          {'id': snapshot_id, 'snapshot': document},
                          ok=(201,))

    def get_snapshot(self, snapshot_id):
        return self._json('GET', '/snapshots/%s' % _q(snapshot_id))

    def list_snapshots(self, limit=None):
        """Every snapshot's id and time (no documents), newest first."""
        return self._pages('/snapshots', 'snapshots', limit=limit)

    def create_plan(self, plan_id, snapshot_id, document):
        return self._json('POST', '/plans',
                          {'id': plan_id, 'snapshot_id': snapshot_id,
                           'plan': document}, ok=(201,))

    def get_plan(self, plan_id):
        return self._json('GET', '/plans/%s' % _q(plan_id))

    def list_plans(self, state=None, limit=None):
        """Every plan's record (no documents), newest first."""
        return self._pages('/plans', 'plans', state=state, limit=limit)

    def apply_plan(self, plan_id, applier, lease=None):
        """Claim the plan for this applier (for ``lease`` s if given).

        :raises Conflict: another applier holds it, or it is not
            ``proposed`` (the detail says which state).
        """
        body = {'applier': applier}
        if lease is not None:
            body['lease'] = lease
        return self._json('POST', '/plans/%s/apply' % _q(plan_id), body,
                          ok=(200, 202))

    def heartbeat_plan(self, plan_id, applier, lease):
        """Renew this applier's claim for ``lease`` seconds.

        :raises Conflict: the plan is not applying by ``applier``.
        """
        return self._json('POST', '/plans/%s/heartbeat' % _q(plan_id),
                          {'applier': applier, 'lease': lease})

    def take_over_plan(self, plan_id, applier, lease):
        """Take an applying plan whose applier's lease expired.

        :raises Conflict: its lease still holds, or it is not applying.
        """
        return self._json('POST', '/plans/%s/takeover' % _q(plan_id),
                          {'applier': applier, 'lease': lease})

    def cancel_plan(self, plan_id):
        return self._json('POST', '/plans/%s/cancel' % _q(plan_id), {},
                          ok=(200, 202))

    def set_action_state(self, plan_id, index, state, detail=None):
        return self._json('PUT', '/plans/%s/actions/%d' % (_q(plan_id),
                                                           index),
                          {'state': state, 'detail': detail or ''})

    def set_plan_result(self, plan_id, state, result):
        return self._json('PUT', '/plans/%s/result' % _q(plan_id),
                          {'state': state, 'result': result})

    # -- isolation and hosts ------------------------------------------------
    def set_isolation(self, server_uuid, status, host, detail=''):
        return self._json('PUT', '/servers/%s/isolation' % _q(server_uuid),
                          {'status': status, 'host': host,
                           'detail': detail}, ok=(200, 201))

    def get_isolation(self, server_uuid):
        try:
            return self._json('GET',
                              '/servers/%s/isolation' % _q(server_uuid))
        except NotFound:
            return None

    def list_isolation(self, status=None, host=None, limit=None):
        """Every server's isolation status (of ``status``, on ``host``)."""
        return self._pages('/isolation', 'isolation', status=status,
                           host=host, limit=limit)

    def report_host(self, hostname, report):
        """Store an agent's report of ``hostname``.

        A report with ``instances`` is sent at microversion 1.1 (or this
        client's, if later): a resq-api older than 1.1 refuses it with a
        :class:`ResQAPIError` whose ``status`` is in
        :data:`VERSION_REFUSED`; send it again without ``instances``.
        """
        version = None
        if 'instances' in report:
            version = _later(self.microversion, MV_HOST_INSTANCES)
        return self._json('PUT', '/hosts/%s' % _q(hostname), report,
                          ok=(200, 201), microversion=version)

    def heartbeat_host(self, hostname):
        """Tell resq-api the host's last report still holds (1.2).

        ``PUT /hosts/{hostname}/heartbeat`` with no body: resq-api sets
        the report's ``updated_at`` and nothing else.

        :raises HostNotReported: resq-api has no report of ``hostname``;
            send the full one (:meth:`report_host`).
        :raises ResQAPIError: a resq-api older than 1.2 refuses the
            version (406) or does not know the path (404, another code):
            send full reports instead.
        """
        try:
            self._call('PUT', '/hosts/%s/heartbeat' % _q(hostname),
                       ok=(204,), microversion=_later(
                           self.microversion, MV_HOST_HEARTBEAT))
        except NotFound as exc:
            if exc.code != HOST_NOT_FOUND:
                raise
            raise HostNotReported(exc.message, **exc.kwargs)

    def list_hosts(self, limit=None, microversion=None):
        """Every host an agent reported, by name.

        :param microversion: asked instead of this client's (1.1 shows
            the servers each report lists).
        """
        return self._pages('/hosts', 'hosts', microversion=microversion,
                           limit=limit)

    def get_host(self, hostname, microversion=None):
        """The last report of ``hostname``.

        :param microversion: asked instead of this client's (1.1 shows
            the servers the report lists).
        """
        return self._json('GET', '/hosts/%s' % _q(hostname),
                          microversion=microversion)


class ProfileSource:
    """Profiles from resq-api, read as :class:`ProfileStore` is read.

    ``get`` and ``exists`` ask for the one profile (``GET
    /profiles/{id}``), whatever page of the list it would be on, and keep
    each document read, so an admission reads each document once; ``ids``
    and ``list`` read every page of the list.
    """

    def __init__(self, client):
        self.client = client
        self.directory = 'resq-api'
        self._documents = {}

    def _document(self, profile_id):
        """The profile's document, or None when it is not visible."""
        if profile_id not in self._documents:
            try:
                rec = self.client.get_profile_record(profile_id)
            except NotFound:
                return None
            self._documents[profile_id] = rec['profile']
        return self._documents[profile_id]

    def get(self, profile_id):
        from resq_common import exception as profiler_exc
        from resq_common import profile as profile_mod

        doc = self._document(profile_id)
        if doc is None:
            raise profiler_exc.ResQException(
                'no profile %r in resq-api that this project can use; list '
                'them with "openstack resq profile list" or upload it with '
                '"resq-profiler upload"' % profile_id)
        return profile_mod.Profile.from_dict(doc, source='resq-api profile '
                                             '%s' % profile_id)

    def exists(self, profile_id):
        return self._document(profile_id) is not None

    def ids(self):
        return sorted(p['id'] for p in self.client.list_profiles())

    def list(self):
        from resq_common import profile as profile_mod

        docs = self.client.profile_documents()
        self._documents.update(docs)
        return [profile_mod.Profile.from_dict(
            docs[pid], source='resq-api profile %s' % pid)
            for pid in sorted(docs)]


def term_record(doc, slo, profile_id, throughput_mpps=None,
                latency_p95_us=None, packet_bytes=None):
    """The SLO term record of an admission's document (what was booted)."""
    flavors = doc.get('flavors') or ([doc['flavor']] if doc.get('flavor')
                                     else [])
    return {
        'name': doc.get('term', {}).get('name') if isinstance(
            doc.get('term'), dict) else doc.get('term'),
        'profile_id': profile_id, 'slo': slo,
        'throughput_mpps': throughput_mpps,
        'latency_p95_us': latency_p95_us, 'packet_bytes': packet_bytes,
        'flavors': [f['name'] for f in flavors],
        'servers': [s['id'] for s in doc.get('servers') or ()],
    }


def _q(value):
    return parse.quote(str(value), safe='')


def _later(*versions):
    """The latest of microversions given as ``"<major>.<minor>"``."""
    return max(versions, key=lambda v: tuple(int(p) for p in v.split('.')))


def _next_query(body):
    """The query string of the page's ``next`` link, or None at the end."""
    for link in body.get('links') or ():
        if link.get('rel') == 'next':
            return parse.urlsplit(link['href']).query or None
    return None


def _with_query(url, query):
    query = {k: v for k, v in (query or {}).items() if v is not None}
    return '%s?%s' % (url, parse.urlencode(query)) if query else url


def _code(resp):
    """The code of the first error of resq-api's error document."""
    try:
        return (resp.json().get('errors') or [{}])[0].get('code')
    except (ValueError, AttributeError, IndexError):
        return None


def _retry_after(resp):
    """``Retry-After`` in seconds (a number; an HTTP date is ignored)."""
    value = resp.headers.get('Retry-After') if resp.headers else None
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        return None
    return seconds if seconds >= 0 else None


def _errors(resp):
    try:
        return '; '.join(
            '%s: %s' % (e.get('title', ''), e.get('detail', ''))
            for e in resp.json().get('errors', [])) or resp.text
    except ValueError:
        return resp.text
