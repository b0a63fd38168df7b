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
"""resq-nova plugins for nova-scheduler."""

import functools

from resq_nova import extra_specs
from resq_nova.placement import cache_domain


def resq_request(spec_obj):
    """The ResQ request of a RequestSpec: ResQRequest, None, or an error.

    :returns: ``(request, None)``, ``(None, None)`` for non-ResQ flavors, or
        ``(None, reason)`` when the flavor's ResQ specs are inconsistent.
    """
    flavor = spec_obj.flavor
    return _parse(tuple(sorted((flavor.extra_specs or {}).items())),
                  flavor.vcpus)


@functools.lru_cache(maxsize=1024)
def _parse(items, vcpus):
    # Filters and weighers ask once per host; the answer depends only on
    # the flavor, so parse each flavor once.
    try:
        return extra_specs.parse(dict(items), vcpus), None
    except extra_specs.InvalidResQSpec as exc:
        return None, str(exc)


@functools.lru_cache(maxsize=65536)
def domain_uuids(compute_rp_uuid):
    """``{provider uuid: domain id}`` of a compute node's cache domains."""
    return {cache_domain.provider_uuid(compute_rp_uuid, d): d
            for d in range(cache_domain.MAX_DOMAINS)}
