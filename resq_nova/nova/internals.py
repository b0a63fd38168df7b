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

One wrapper changes Nova rather than calling it:
:func:`keep_allocation_candidates` wraps the scheduler report client's
``get_allocation_candidates`` so that the weigher reads the provider
summaries of the answer Nova got for the request it weighs, instead of
asking Placement a second time (:func:`nova_provider_summaries`).

This module imports Nova: import it only where Nova is installed (inside
nova-api and nova-scheduler).
"""

import collections
import functools
import inspect
import threading

from nova import exception
from nova.scheduler.client import report
from nova.scheduler import utils
from nova.virt import hardware
from oslo_log import log as logging

LOG = logging.getLogger(__name__)

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


# The parameters of SchedulerReportClient.get_allocation_candidates that
# the hook wraps (through Nova's safe_connect, which keeps the signature).
ALLOCATION_CANDIDATES_PARAMETERS = ('self', 'context', 'resources')
# Marks the wrapper, so that installing it twice wraps once.
_HOOK_MARK = '_resq_keeps_answer'
# This thread's (or, under eventlet, green thread's) last answer:
# ``.answer`` is ``(context, [provider summaries, ...])``.
_ANSWERS = threading.local()
# Whether the hook could not be installed has been logged (once).
_HOOK_WARNED = []

_Answer = collections.namedtuple('_Answer', 'context summaries')


def keep_allocation_candidates():
    """Keep Nova's allocation candidates answers for the weigher; idempotent.

    Wraps ``nova.scheduler.client.report.SchedulerReportClient.
    get_allocation_candidates(self, context, resources)``, which returns
    ``(allocation_requests, provider_summaries, allocation_request_version)``
    or ``(None, None, None)`` (and None through ``safe_connect`` when
    Placement cannot be reached), as in Nova 33 (2026.1) and Nova 34
    (2026.2), the releases checked; ``nova.scheduler.manager.
    SchedulerManager.select_destinations`` calls it (twice for dedicated
    CPUs, with PCPU then VCPU, unless ``[workarounds]
    disable_fallback_pcpu_query``), then filters and weighs, in the thread
    that runs the request. The wrapper keeps the provider summaries of the
    answer in a ``threading.local`` (green-thread local under eventlet),
    with the request context Nova passed: :func:`nova_provider_summaries`
    hands them to that request's weigher. A thread holds one answer at
    most, until its weigher reads it or the thread's next request
    replaces it.

    :returns: True when the hook is in place; False, with one warning,
        when Nova has no such method or its parameters are not
        :data:`ALLOCATION_CANDIDATES_PARAMETERS` (the weigher then asks
        Placement itself).
    """
    return _install(report.SchedulerReportClient)


def _install(cls):
    """Wrap ``cls.get_allocation_candidates``; see the function above.

    ``cls`` is ``nova.scheduler.client.report.SchedulerReportClient`` in
    nova-scheduler (Nova 33 (2026.1) and 34 (2026.2) checked), a
    stand-in in the tests.
    """
    original = getattr(cls, 'get_allocation_candidates', None)
    if getattr(original, _HOOK_MARK, False):
        return True
    try:
        params = tuple(inspect.signature(original).parameters)
    except (TypeError, ValueError):
        params = None
    if params != ALLOCATION_CANDIDATES_PARAMETERS:
        if not _HOOK_WARNED:
            _HOOK_WARNED.append(True)
            LOG.warning(
                'ResQWeigher cannot read Nova\'s allocation candidates: '
                '%s.get_allocation_candidates is %s, not a method of '
                '(%s); it asks Placement for them a second time per '
                'request', cls.__name__,
                'missing' if original is None else
                'a method of (%s)' % ', '.join(params or ('?',)),
                ', '.join(ALLOCATION_CANDIDATES_PARAMETERS))
        return False

    @functools.wraps(original)
    def get_allocation_candidates(self, context, resources):
        answer = getattr(_ANSWERS, 'answer', None)
        if answer is not None and answer.context is not context:
            # Another request's, never read: not this one's.
            answer = _ANSWERS.answer = None
        result = original(self, context, resources)
        summaries = None
        if isinstance(result, tuple) and len(result) == 3:
            summaries = result[1]
        if isinstance(summaries, dict):
            if answer is None:
                _ANSWERS.answer = _Answer(context, [summaries])
            else:
                # The same request's second query (select_destinations
                # asks again with VCPU for PCPU and merges the summaries).
                answer.summaries.append(summaries)
        return result

    setattr(get_allocation_candidates, _HOOK_MARK, True)
    cls.get_allocation_candidates = get_allocation_candidates
    return True


def nova_provider_summaries(spec_obj):
    """The provider summaries Nova got for this request, once, or None.

    What the hook of :func:`keep_allocation_candidates` kept in this
    thread, if Nova asked Placement with the context ``spec_obj`` carries:
    oslo.versionedobjects keeps the context an object was built or
    deserialised with in ``_context``, oslo.messaging's dispatcher
    deserialises the RequestSpec of
    ``nova.scheduler.manager.SchedulerManager.select_destinations`` with
    the context it passes the method, and the method passes that context
    on to Placement (Nova 33 (2026.1) and 34 (2026.2) checked:
    ``tests/functional/test_nova_scheduler.py``).

    The answer is forgotten once read, whoever asks: an instance after
    the first of a multi-create is weighed after Nova claimed the first
    in Placement, which Nova's answer does not show, and a rebuild (no
    Placement query) or a later request in the same thread is another
    context. So the answer read is always the one Nova got for this
    request, before any claim of it, or None.

    :returns: Nova's summaries, ``{provider uuid: {'resources': {rc:
        {'capacity', 'used'}}, 'traits', ...}}``, merged as
        ``select_destinations`` merges its two answers for dedicated CPUs
        (the second one's over the first's), or None.
    """
    answer = getattr(_ANSWERS, 'answer', None)
    if answer is None:
        return None
    _ANSWERS.answer = None
    if answer.context is None or (
            answer.context is not getattr(spec_obj, '_context', None)):
        return None
    summaries = answer.summaries
    if len(summaries) == 1:
        return summaries[0]
    merged = {}
    for one in summaries:
        merged.update(one)
    return merged
