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
"""Every piece of Nova that resq-nova uses and Nova does not publish.

Nova publishes a few plugin interfaces, and the plugins use them directly:

* ``nova.scheduler.filters.BaseHostFilter``, the base of out-of-tree
  scheduler filters (``[filter_scheduler] available_filters``);
* ``nova.scheduler.weights.BaseHostWeigher``, the base of out-of-tree
  weighers (``[filter_scheduler] weight_classes``);
* ``nova.api.validation.extra_specs.base.ExtraSpecValidator``, what a
  ``nova.api.extra_spec_validators`` entry point's ``register()`` returns.

Everything else the plugins need from Nova is an internal, which Nova may
change in any release. This module is the only place that imports one
(``tests/unit/resq_nova/test_nova_imports.py`` checks that), and each
wrapper says which Nova function it calls and since which Nova release that
function has the shape used here. The fields of Nova's objects that the
plugins read are listed in :data:`OBJECT_FIELDS` and
:data:`HOST_STATE_ATTRIBUTES`. ``tests/functional/test_nova_internals.py``
checks all of it against the installed Nova, in the ``functional`` (current
release) and ``nova-previous`` (previous release) tox environments, and
names the Nova symbol that changed; see ``doc/source/install/support.rst``.

This module imports Nova: import it only where Nova is installed (inside
nova-api and nova-scheduler).
"""

from nova import exception
from nova.scheduler.client import report
from nova.scheduler import utils
from nova.virt import hardware

# The Nova modules, and their names, that are public plugin interfaces; any
# other ``nova`` import outside this module fails the unit test named above.
PUBLIC_INTERFACES = {
    'nova.scheduler.filters': ('BaseHostFilter',),
    'nova.scheduler.weights': ('BaseHostWeigher',),
    'nova.api.validation.extra_specs.base': ('ExtraSpecValidator',),
}

# The oslo.versionedobjects fields the filter and the weigher read, per Nova
# object (resq_nova.nova.scheduler.numa_state and the filter).
OBJECT_FIELDS = {
    'NUMATopology': ('cells',),
    'NUMACell': ('id', 'pcpuset', 'pinned_cpus', 'memory', 'memory_usage',
                 'mempages'),
    'NUMAPagesTopology': ('size_kb', 'total', 'used'),
    'NUMATopologyLimits': ('cpu_allocation_ratio', 'ram_allocation_ratio'),
    'InstanceNUMATopology': ('cells',),
    'InstancePCIRequests': ('requests',),
    'RequestSpec': ('flavor', 'numa_topology', 'pci_requests'),
    'Flavor': ('name', 'vcpus', 'extra_specs'),
}

# The attributes of nova.scheduler.host_manager.HostState the filter and the
# weigher read. The filter also writes allocation_candidates (there since
# Nova 27): it prunes the candidates, as Nova's CandidateFilterMixin does.
HOST_STATE_ATTRIBUTES = ('uuid', 'numa_topology', 'limits', 'pci_stats',
                         'allocation_candidates', 'vcpus_used',
                         'vcpus_total')


def numa_fit(host_topology, instance_topology, limits=None,
             pci_requests=None, pci_stats=None):
    """Nova's NUMA fit of an instance onto a host, as NUMATopologyFilter.

    Calls ``nova.virt.hardware.numa_fit_instance_to_host(host_topology,
    instance_topology, provider_mapping, limits=None, pci_requests=None,
    pci_stats=None)`` with ``provider_mapping=None`` (the scheduler's
    filters run before a candidate is chosen). That signature dates from
    Nova 27 (2023.1), which added ``provider_mapping``. The fit writes
    the CPU pinning into ``instance_topology``: pass a copy.

    :returns: the fitted ``InstanceNUMATopology``, or None when it does not
        fit.
    """
    return hardware.numa_fit_instance_to_host(
        host_topology, instance_topology, provider_mapping=None,
        limits=limits, pci_requests=pci_requests, pci_stats=pci_stats)


def request_is_rebuild(spec_obj):
    """Whether a RequestSpec is a rebuild on the same host.

    Calls ``nova.scheduler.utils.request_is_rebuild(spec_obj)``, there
    since Nova 17 (Queens), as Nova's filters with ``RUN_ON_REBUILD =
    False`` do.
    """
    return utils.request_is_rebuild(spec_obj)


def weight_multiplier(host_state, aggregate_key, default):
    """A weigher's multiplier for a host: aggregate metadata or the option.

    Calls ``nova.scheduler.utils.get_weight_multiplier(host_state,
    multiplier_name, multiplier_config)``, there since Nova 19 (Stein):
    the smallest
    value of ``aggregate_key`` in the host's aggregates' metadata, else
    ``default``.
    """
    return utils.get_weight_multiplier(host_state, aggregate_key, default)


def placement_client():
    """nova-scheduler's own Placement client, built from its [placement].

    Calls ``nova.scheduler.client.report.report_client_singleton()``,
    there since Nova 26 (Zed). The plugins use the client's ``get(url,
    version=None, global_request_id=None)``, unchanged since Nova 17
    (Queens), which returns a keystoneauth response.
    """
    return report.report_client_singleton()


def validation_error(message):
    """The exception an extra-spec validator raises for a bad value.

    ``nova.exception.ValidationError(detail)``, there since Nova 17
    (Queens), which nova-api turns into HTTP 400 with ``message`` in the
    body; Nova's own validators (``ExtraSpecValidator.validate``, since
    Nova 21 (Ussuri)) raise it.
    """
    return exception.ValidationError(message)
