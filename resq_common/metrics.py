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
"""Prometheus ``/metrics`` for resq-agent and resq-optimizer.

Both expose their figures with ``prometheus_client`` on the address an
option names (``[resq_agent] metrics_listen``, ``[resq_optimizer]
metrics_listen``; empty, the default, serves nothing). Metric names follow
Prometheus' naming guide: the ``resq_`` prefix, base units (bytes,
seconds), ``_total`` for counters. Label values come from bounded sets
only: cache domains, dependencies, outcomes, and Nova server UUIDs of the
instances running on the host (no more than its classes of service);
the per-server label is ``server_uuid``, as ``instance`` is the label
Prometheus gives the scrape target.

What both share is here: the listen option's parser, the HTTP server
and the dependency metrics of :mod:`resq_common.deadline`.
"""

import socket

from oslo_log import log as logging
import prometheus_client
from prometheus_client import core

from resq_common import deadline
from resq_common import exception

LOG = logging.getLogger(__name__)


class InvalidListen(exception.ResQException):
    msg_fmt = ('metrics_listen %(value)r is not HOST:PORT (%(reason)s); '
               'set it like 127.0.0.1:9477, [::1]:9477, or leave it empty')


def parse_listen(value):
    """``(host, port)`` of ``HOST:PORT``, IPv6 in brackets.

    :raises InvalidListen: naming what is wrong.
    """
    host, sep, port = value.strip().rpartition(':')
    if not sep or not host:
        raise InvalidListen(value=value, reason='no host or no port')
    if host.startswith('['):
        if not host.endswith(']'):
            raise InvalidListen(value=value, reason='unclosed "["')
        host = host[1:-1]
    # Port 0: any free port (tests); the server says which.
    if not (port.isascii() and port.isdigit()) or not 0 <= int(port) < 65536:
        raise InvalidListen(value=value,
                            reason='the port must be 0 to 65535')
    return host, int(port)


class CannotListen(exception.ResQException):
    msg_fmt = ('metrics_listen %(value)r cannot be listened on: '
               '%(reason)s; pick a free port of an address of this host, '
               'or leave it empty')


def check_listen(value):
    """Parse ``value`` and bind it once, closing it at once.

    For a service whose worker process serves the metrics: its parent
    checks the address before forking, so a malformed or taken one stops
    the service with one line instead of failing in every worker.

    :raises InvalidListen: a malformed address.
    :raises CannotListen: the address cannot be bound (in use, not of this
        host).
    """
    host, port = parse_listen(value)
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                    flags=socket.AI_PASSIVE)[0][0]
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            # As the HTTP server binds (http.server allows reuse).
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, port))
    except OSError as exc:
        raise CannotListen(value=value, reason=exc.strerror or exc)


def serve(listen, collector):
    """Serve ``collector`` on ``listen``; the server, or None when off.

    :param collector: a ``prometheus_client`` collector (``collect()``
        yielding metric families); it gets a registry of its own, so
        nothing else of the process is exposed by accident.
    :raises InvalidListen: a malformed address.
    :raises OSError: the address cannot be bound.
    """
    if not listen:
        return None
    host, port = parse_listen(listen)
    registry = prometheus_client.CollectorRegistry()
    registry.register(collector)
    started = prometheus_client.start_http_server(port, addr=host,
                                                  registry=registry)
    # (server, thread) since prometheus_client 0.20.
    server = started[0] if started else None
    LOG.info('Serving Prometheus metrics on http://%s/metrics', listen)
    return server


def render(collector):
    """The text exposition of one collector (tests, benchmarks)."""
    registry = prometheus_client.CollectorRegistry()
    registry.register(collector)
    return prometheus_client.generate_latest(registry).decode()


def gauge(name, doc, labels=()):
    return core.GaugeMetricFamily(name, doc, labels=list(labels))


def counter(name, doc, labels=()):
    # prometheus_client adds the _total suffix to counter samples.
    return core.CounterMetricFamily(name, doc, labels=list(labels))


def dependency_families():
    """Each remote dependency: up (1/0) and failed calls, ever."""
    up = gauge('resq_dependency_up', 'Whether the last call to the '
               'dependency answered (1) or failed or hung (0).',
               ['dependency'])
    hung = gauge('resq_dependency_hung', 'Whether a call to the '
                 'dependency hangs now (1) or not (0).', ['dependency'])
    failures = counter('resq_remote_call_failures', 'Calls to the '
                       'dependency that failed or did not answer in time.',
                       ['dependency'])
    for name, health in deadline.health().items():
        if health['state'] is None:
            continue
        up.add_metric([name], 1 if health['state'] == deadline.OK else 0)
        hung.add_metric([name], 1 if health['state'] == deadline.HUNG
                        else 0)
        failures.add_metric([name], health['failures'])
    return [up, hung, failures]
