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
"""Report a host's cache domains to Placement (the agent's inventory).

Idempotent: running it again changes nothing; it survives Nova's own
periodic updates of the compute node provider (it writes the child
providers it owns and, on the compute node's provider, only the traits
it owns) and retries generation conflicts.

The compute node's traits: Nova's resource tracker starts each update
from the traits Placement held when its cache was last refreshed, adds and
removes only those its virt driver owns (capability and CPU feature
traits, ``COMPUTE_NODE``, ``COMPUTE_STATUS_DISABLED``) and writes the set
back at the generation it read; a trait set by another service since makes
that write fail with a generation conflict, after which Nova reads the
provider again. So traits the agent sets there stay
(``doc/source/contributor/l2-cat.rst``).
"""

from oslo_log import log as logging

from resq_agent import l2
from resq_common import cache_domain

LOG = logging.getLogger(__name__)


def report(client, hypervisor_hostname, domains, compute_traits=None,
           owns=None):
    """Make Placement hold one provider per domain of ``domains``.

    :param domains: list of :class:`resq_common.cache_domain.
        CacheDomain`; domains no longer present lose their inventory.
    :param compute_traits: the traits the agent publishes on the compute
        node's provider (the L2 ladder); None leaves its traits alone.
    :param owns: ``owns(trait)``: whether a trait of the compute node is
        one the agent publishes (those not in ``compute_traits`` are
        removed); every other trait (Nova's, an operator's) is kept.
    :returns: ``{domain id: provider uuid}``.
    """
    compute = client.find_provider(hypervisor_hostname)
    root = compute['uuid']
    if compute_traits is not None:
        client.update_owned_traits(root, owns or l2.owns_trait,
                                   compute_traits)
    result = {}
    for dom in domains:
        uuid = cache_domain.provider_uuid(root, dom.domain_id)
        client.ensure_provider(uuid, cache_domain.provider_name(
            hypervisor_hostname, dom.domain_id), parent_uuid=root)
        client.set_traits(uuid, dom.traits())
        client.set_inventories(uuid, dom.inventory())
        result[dom.domain_id] = uuid
    for provider in client.tree(root):
        domain_id = cache_domain.domain_of(root, provider['uuid'])
        if domain_id is None or domain_id in result:
            continue
        LOG.warning('Cache domain %d of %s is gone; clearing its '
                    'inventory', domain_id, hypervisor_hostname)
        client.set_inventories(provider['uuid'], {})
    return result
