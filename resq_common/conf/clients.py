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
"""Keystoneauth options of the services resq-nova calls, and adapters.

``[placement]`` (the scheduler plugins' admission, the agent's inventory),
``[nova]`` (``resq-admit``, the agent's guest metadata) and
``[resq_api]`` (every program that reads or writes the service's state:
profiles, SLO terms, plans, isolation status) take the usual
keystoneauth session, auth and adapter options, and ``request_workers``:
how many requests to that service may be under way at once, on a pool of
its own (see :func:`call`). They are listed once, in
the ``resq.clients`` namespace of oslo-config-generator, whichever program
reads them.
"""

import concurrent.futures

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading
from keystoneauth1 import session as ks_session
from oslo_config import cfg

from resq_common import deadline as deadline_mod
from resq_common import exception

PLACEMENT = 'placement'
NOVA = 'nova'
RESQ_API = 'resq_api'
# What keystoneauth raises when no answer came back from the service:
# refused, reset, TLS failure, or no answer within the timeout
# (ConnectionError covers ConnectFailure, ConnectTimeout, SSLError).
UNREACHABLE = (ks_exc.ConnectionError, ks_exc.EndpointNotFound,
               ks_exc.DiscoveryFailure, ks_exc.AuthorizationFailure)
# Seconds a request may wait for the service (connect, and between bytes of
# the answer): a service that accepts connections and never answers must
# not stop the agent's or the scheduler's work.
DEFAULT_TIMEOUT = 30
_TIMEOUT_HELP = ('Seconds one request to the service may take in all: '
                 'connecting, and its whole answer (default %d). A service '
                 'that accepts connections and never answers, or trickles '
                 'its answer, then costs at most this long; the agent keeps '
                 'enforcing the last allocations it read meanwhile.'
                 % DEFAULT_TIMEOUT)


# Requests to one service that may be under way at once, each on a worker
# thread of its own so it has a total deadline (see call()).
REMOTE_WORKERS = 8
_WORKERS_HELP = ('Requests to this service that may be under way at once, '
                 'each on a worker thread of its own (default %d). A '
                 'request still running at its timeout keeps its worker '
                 'until the connection gives up; while every worker holds '
                 'one, further requests to this service fail at once, and '
                 'requests to the other services are not affected.'
                 % REMOTE_WORKERS)


class MissingCredentials(exception.ResQException):
    msg_fmt = ('[%(group)s] %(reason)s; set auth_type and its options '
               '(auth_url, credentials) or endpoint_override so %(service)s '
               'can be reached')


def register_opts(conf, group):
    """Register keystoneauth session, auth and adapter options."""
    ks_loading.register_session_conf_options(conf, group)
    ks_loading.register_auth_conf_options(conf, group)
    ks_loading.register_adapter_conf_options(conf, group)
    conf.set_default('timeout', DEFAULT_TIMEOUT, group=group)
    conf.register_opts(_own_options(), group=group)


def _own_options():
    return [cfg.IntOpt('request_workers', default=REMOTE_WORKERS, min=1,
                       help=_WORKERS_HELP)]


def _options():
    session = ks_loading.get_session_conf_options()
    for opt in session:
        if opt.dest == 'timeout':
            opt.default = DEFAULT_TIMEOUT
            opt.help = _TIMEOUT_HELP
    return (session + _own_options()
            + ks_loading.get_auth_common_conf_options()
            + ks_loading.get_adapter_conf_options(include_deprecated=False))


def list_opts():
    return [(PLACEMENT, _options()), (NOVA, _options()),
            (RESQ_API, _options())]


def load_adapter(conf, group, service_type, strict=True):
    """A keystoneauth adapter for ``service_type`` from ``[group]``.

    Without an auth plugin only an ``endpoint_override`` (a no-auth
    service, as in tests or a standalone Placement) is accepted, unless
    ``strict`` is false: then the first request fails instead (commands
    that check their own arguments first use that).

    :raises MissingCredentials: naming the group and what it lacks.
    """
    try:
        auth = ks_loading.load_auth_from_conf_options(conf, group)
    except ks_exc.MissingRequiredOptions as exc:
        raise MissingCredentials(
            group=group, service=service_type,
            reason='lacks %s' % ', '.join(o.dest for o in exc.options))
    if strict and auth is None and not conf[group].endpoint_override:
        raise MissingCredentials(group=group, service=service_type,
                                 reason='auth_type is not set')
    # 0 or unset would mean "wait for ever".
    timeout = conf[group].timeout or DEFAULT_TIMEOUT
    session = ks_loading.load_session_from_conf_options(
        conf, group, auth=auth, timeout=timeout)
    adapter = ks_loading.load_adapter_from_conf_options(
        conf, group, session=session, service_type=service_type,
        raise_exc=False)
    # The service's pool takes its size from the first adapter loaded.
    deadline_mod.capacity(_service(adapter), conf[group].request_workers)
    return adapter


def noauth_adapter(endpoint, service_type, headers=None,
                   timeout=DEFAULT_TIMEOUT):
    """An adapter for a service without Keystone (tests, standalone)."""
    return ks_adapter.Adapter(
        ks_session.Session(auth=None, timeout=timeout),
        endpoint_override=endpoint,
        service_type=service_type, additional_headers=dict(headers or {}),
        raise_exc=False)


# Remote calls run on a few threads of their own so each one has a total
# deadline: keystoneauth's timeout applies to each read, and a service that
# trickles a byte now and then would hold the caller (and its locks) for
# good. A call past its deadline leaves its thread to finish on its own.
# Each service has its pool (deadline.capacity), bounded by its
# request_workers: a hung service costs at most that many threads, and
# none of another service's.
def _service(adapter):
    """The service ``adapter`` calls: its pool and its outcomes."""
    return getattr(adapter, 'service_type', None) or 'remote'


def total_deadline(adapter):
    """Seconds one request to ``adapter``'s service may take in all."""
    session = getattr(adapter, 'session', None)
    return (getattr(adapter, 'timeout', None)
            or getattr(session, 'timeout', None) or DEFAULT_TIMEOUT)


def call(adapter, url, method, unreachable, **kwargs):
    """``adapter.request`` with a total deadline, on its service's pool.

    :raises unreachable: no whole answer within the deadline, keystone
        could not reach the service, or every worker of the service's pool
        still holds a call that did not answer in time (then the request
        is not sent).
    """
    deadline = total_deadline(adapter)
    service = _service(adapter)
    seen = deadline_mod.outcomes(service)
    capacity = deadline_mod.capacity(service, REMOTE_WORKERS)
    try:
        future = capacity.submit(adapter.request, url, method, **kwargs)
    except deadline_mod.Saturated as exc:
        raise unreachable(method=method, url=url, reason=exc)
    try:
        resp = future.result(timeout=float(deadline))
    except concurrent.futures.TimeoutError:
        # Still queued behind other calls: dropped; running: it keeps its
        # worker, of this service's pool only, until its socket gives up.
        capacity.abandon(future)
        seen.record(deadline_mod.HUNG, 'no complete answer to %s %s within '
                    '%gs' % (method, url, deadline))
        raise unreachable(method=method, url=url, reason='timed out: no '
                          'complete answer within %gs (a total deadline, '
                          'not per read)' % deadline)
    except UNREACHABLE as exc:
        # keystoneauth's own (per-read) timeout can fire a moment before
        # the total deadline: no answer in time either way, a hang.
        seen.record(deadline_mod.HUNG if isinstance(
            exc, ks_exc.ConnectTimeout) else deadline_mod.FAILED,
            '%s %s: %s' % (method, url, exc))
        raise unreachable(method=method, url=url, reason=exc)
    if resp.status_code >= 500:
        seen.record(deadline_mod.FAILED, '%s %s: HTTP %d' % (
            method, url, resp.status_code))
    else:
        seen.record(deadline_mod.OK)
    return resp


def request(adapter, method, url, microversion, body=None,
            unreachable=None):
    """Send one JSON request; the response, whatever its status.

    The whole request (connect, send, every byte of the answer) has the
    adapter's timeout as its deadline.

    :param unreachable: exception class raised, with ``method``, ``url``
        and ``reason``, when the service could not be reached or did not
        answer in time.
    """
    kwargs = {'microversion': microversion,
              'headers': {'accept': 'application/json'}}
    if body is not None:
        kwargs['json'] = body
    return call(adapter, url, method, unreachable, **kwargs)
