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

from oslo_config import cfg

from resq_nova import conf as resq_conf
from resq_nova import extra_specs

CONF = cfg.CONF


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


def conf():
    """Nova's global CONF, with the [resq] options registered once.

    Inside nova-scheduler the plugins can only reach Nova's configuration.
    """
    if 'resq' not in CONF:
        resq_conf.register_opts(CONF)
    return CONF
