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
"""Microversions of resq-api: ``OpenStack-API-Version: resq <x.y>``.

The history (each new version adds; the oldest stays served):

* 1.0 -- profiles, SLO terms, snapshots and plans, isolation status,
  hosts.
* 1.1 -- a host report carries the servers the agent partitions
  (``instances``: server, cache domain, ways, LLC occupancy and memory
  bandwidth): ``PUT /hosts/{hostname}`` takes them, ``GET /hosts`` and
  ``GET /hosts/{hostname}`` show them. At 1.0 a report with them is
  refused (400) and the answers do not show them.
* 1.2 -- ``PUT /hosts/{hostname}/heartbeat``: the agent's report still
  holds (204, only ``updated_at`` is set; 404 ``resq.host.not_found``
  when no report is stored). Before 1.2 the path is not served (404).

A handler serves what a later version adds only when
:func:`at_least` says the request asked for that version.
"""

import microversion_parse

from resq_nova.api import errors

SERVICE_TYPE = 'resq'
HEADER = 'OpenStack-API-Version'
VERSIONS = ('1.0', '1.1', '1.2')
MIN_VERSION = microversion_parse.Version(1, 0)
MAX_VERSION = microversion_parse.Version(*map(int, VERSIONS[-1].split('.')))
# The first version of each addition.
HOST_INSTANCES = microversion_parse.Version(1, 1)
HOST_HEARTBEAT = microversion_parse.Version(1, 2)


def _range():
    return '%s to %s' % (VERSIONS[0], VERSIONS[-1])


def extract(headers):
    """The version a request asks for (the minimum when it asks none).

    :raises resq_nova.api.errors.BadRequest: a malformed version.
    :raises resq_nova.api.errors.NotAcceptable: one outside the range.
    """
    asked = microversion_parse.get_version(
        headers, service_type=SERVICE_TYPE)
    if asked is None:
        return MIN_VERSION
    if asked == 'latest':
        return MAX_VERSION
    try:
        version = microversion_parse.parse_version_string(asked)
    except (TypeError, ValueError):
        raise errors.BadRequest(
            'OpenStack-API-Version "resq %s" is not a version: send '
            '"resq <major>.<minor>", one of %s' % (asked, _range()),
            code='resq.microversion.malformed')
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise errors.NotAcceptable(
            'resq-api does not serve version %s; it serves %s'
            % (asked, _range()), code='resq.microversion.unsupported')
    return version


def requested(req):
    """The version ``req`` asked for (set by the API before its handler)."""
    return req.environ.get('resq.version') or MIN_VERSION


def at_least(req, version):
    """Whether ``req`` asked for ``version`` or a later one."""
    return requested(req) >= version


def headers(version):
    return {HEADER: '%s %s' % (SERVICE_TYPE, version),
            'Vary': HEADER}
