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
"""The ResQ weigher: pack ResQ instances, first fit.

For a ResQ request a host weighs how full it would be after placing the
instance, so the fullest host that still fits wins and the number of active
servers stays small (ResQ's first-fit decreasing packing; admission boots
the largest instances first). Fullness is the mean of three shares, each
after the placement: the host's dedicated cores (pCPUs) pinned, and, in
the cache domain the scheduler would claim (the host's first allocation
candidate), the LLC ways and the classes of service used. Other requests
get the same weight everywhere, which Nova's normalisation turns into no
effect at all.

Placement's usage of the cache domains is read from the provider
summaries of the allocation candidates nova-scheduler itself got from
Placement for the request (the answer the hosts' candidates come from):
the weigher makes no request and decodes no JSON of its own
(:func:`resq_nova.nova.internals.keep_allocation_candidates`, installed
when the weigher is built). Where Nova's answer is not at hand (a Nova
whose report client the hook does not recognise, which the log says
once; a rebuild; an instance after the first of a multi-create, weighed
after Nova claimed the first in Placement), the weigher asks Placement
itself, one ``GET /allocation_candidates`` through nova-scheduler's own
Placement client, and decodes the answer's summaries; when Placement
cannot be asked, cores alone decide.

``[resq] weigher_multiplier`` scales it against Nova's weighers; a host
aggregate's ``resq_weigher_multiplier`` metadata overrides it for its hosts,
as Nova's own weighers' ``*_weight_multiplier`` keys do.
"""

import collections.abc
import json
import time

from nova.scheduler import weights
from oslo_log import log as logging

from resq_common import extra_specs
from resq_nova.nova import internals
from resq_nova.nova import scheduler

LOG = logging.getLogger(__name__)
AGGREGATE_KEY = 'resq_weigher_multiplier'
# Placement microversion of arbitrary request group suffixes.
CANDIDATES_VERSION = '1.33'
# After a failure, cores alone decide for this long before asking again.
RETRY_AFTER_S = 60


class ResQWeigher(weights.BaseHostWeigher):

    def __init__(self):
        super().__init__()
        self.conf = scheduler.conf()
        self._multiplier = self.conf.resq.weigher_multiplier
        self._placement = None
        self._placement_down_until = 0.0
        # Whether Nova's own answer for the request can be read.
        self._nova_answers = internals.keep_allocation_candidates()

    def weight_multiplier(self, host_state):
        # Nova asks once per host, right after weigh_objects; the option
        # is read once per request there. A host in no aggregate gets the
        # option, as Nova's helper gives it, without the call.
        if not host_state.aggregates:
            return self._multiplier
        return internals.weight_multiplier(host_state, AGGREGATE_KEY,
                                           self._multiplier)

    def weigh_objects(self, weighed_obj_list, weight_properties):
        """Weights of one request's hosts; zeros for non-ResQ requests.

        One flat loop with a memo per host shape (cores pinned and total,
        the claimed domain's usage): at a thousand hosts per request the
        per-host function calls are what a weigher costs.
        """
        self._multiplier = self.conf.resq.weigher_multiplier
        # Taken whatever the request, so that no answer outlives it.
        summaries = None
        if self._nova_answers:
            summaries = internals.nova_provider_summaries(weight_properties)
        request, _ = scheduler.resq_request(weight_properties)
        if request is None:
            return [0.0] * len(weighed_obj_list)
        need = max(request.vcpus, 1)
        usage = {}
        if request.ways:
            usage = (_Usage(summaries) if summaries is not None
                     else self._llc_usage(request))
        numa_state = scheduler.numa_state
        cached_state = scheduler.numa_states()
        suffix = request.group_suffix
        memo = {}
        weights_ = []
        for w in weighed_obj_list:
            hs = w.obj
            topology = hs.numa_topology
            used = total = 0
            if topology is not None:
                entry = cached_state(id(topology))
                if entry is not None and entry[0]() is topology:
                    state = entry[1]
                else:
                    state = numa_state(topology)
                used, total = state.pinned, state.total
            if not total:
                # No NUMA topology reported: count vCPUs instead.
                used, total = hs.vcpus_used, hs.vcpus_total
            domain = None
            if usage and hs.allocation_candidates:
                for rp in hs.allocation_candidates[0]['mappings'].get(
                        suffix) or ():
                    domain = usage.get(rp)
                    if domain is not None:
                        break
            key = (used, total, domain)
            weight = memo.get(key)
            if weight is None:
                weight = memo[key] = _fullness(used, total, need, request,
                                               domain)
            weights_.append(weight)
        return weights_

    def _weigh_object(self, host_state, spec_obj):
        request, _ = scheduler.resq_request(spec_obj)
        if request is None:
            return 0.0
        return self.weigh_objects([_Weighed(host_state)], spec_obj)[0]

    def _client(self):
        if self._placement is None:
            self._placement = scheduler.placement_client()
        return self._placement

    def _llc_usage(self, request):
        """Placement's usage of the cache domains that could serve it.

        Asked of Placement, when Nova's answer for the request is not at
        hand.

        :returns: ``{provider uuid: (ways used, ways capacity, classes
            used, classes capacity)}``, or ``{}`` when Placement cannot be
            asked.
        """
        if time.monotonic() < self._placement_down_until:
            return {}
        url = ('/allocation_candidates?resources%s=%s:%d,%s:1'
               '&group_policy=none' % (request.group_suffix,
                                       extra_specs.RC_LLC_WAY, request.ways,
                                       extra_specs.RC_LLC_CLOS))
        try:
            resp = self._client().get(url, version=CANDIDATES_VERSION)
            if resp.status_code != 200:
                raise ValueError('%s %s' % (resp.status_code,
                                            resp.text[:200]))
            summaries = provider_summaries(resp)
        except Exception as exc:
            LOG.warning('ResQWeigher cannot read cache-domain usage from '
                        'Placement (%s); weighing by cores only for %d s',
                        exc, RETRY_AFTER_S)
            self._placement_down_until = time.monotonic() + RETRY_AFTER_S
            return {}
        return _Usage(summaries)


def _domain_usage(summary):
    """What the weigher reads of a provider summary, or None.

    ``(ways used, ways capacity, classes used, classes capacity)``; None
    for a provider without LLC ways.
    """
    res = summary.get('resources') or {}
    ways = res.get(extra_specs.RC_LLC_WAY)
    if not ways:
        return None
    clos = res.get(extra_specs.RC_LLC_CLOS) or {}
    return (ways['used'], ways['capacity'], clos.get('used', 0),
            clos.get('capacity', 0))


class _Usage(collections.abc.Mapping):
    """The usage of the cache domains in Placement's provider summaries.

    ``{provider uuid: (ways used, ways capacity, classes used, classes
    capacity)}`` of the providers with LLC ways, read from a summary when
    it is asked for: a thousand hosts ask for a thousand of the answer's
    three thousand summaries (compute nodes and cache domains), rather
    than each being read up front.
    """

    __slots__ = ('_summaries', '_any')

    def __init__(self, summaries):
        self._summaries = summaries
        self._any = None

    def get(self, rp, default=None):
        summary = self._summaries.get(rp)
        if summary is None:
            return default
        usage = _domain_usage(summary)
        return default if usage is None else usage

    def __getitem__(self, rp):
        usage = self.get(rp)
        if usage is None:
            raise KeyError(rp)
        return usage

    def __iter__(self):
        return (rp for rp, s in self._summaries.items()
                if _domain_usage(s) is not None)

    def __len__(self):
        return sum(1 for _ in self)

    def __bool__(self):
        if self._any is None:
            self._any = any(True for _ in self)
        return self._any


_SUMMARIES_KEY = '"provider_summaries"'
_DECODER = json.JSONDecoder()
_WHITESPACE = ' \t\n\r'


def provider_summaries(resp):
    """The ``provider_summaries`` of an allocation candidates answer.

    The weigher reads nothing else of the answer, which is megabytes at a
    thousand hosts: decode the summaries' object alone, from the last
    ``"provider_summaries"`` key of the body (no trait, resource class or
    UUID in the answer can spell it; Placement writes the key after the
    allocation requests). Fall back to decoding the whole body when that
    does not give an object that ends the answer, or when the response
    has no charset (a requests response would guess one from the whole
    body for its ``text``; Placement's ``application/json`` is UTF-8).
    """
    if getattr(resp, 'encoding', '') is None:
        return resp.json()['provider_summaries']
    text = getattr(resp, 'text', None)
    if isinstance(text, str):
        at = text.rfind(_SUMMARIES_KEY)
        if at >= 0:
            at = _skip(text, at + len(_SUMMARIES_KEY))
            if text.startswith(':', at):
                try:
                    value, end = _DECODER.raw_decode(
                        text, _skip(text, at + 1))
                except ValueError:
                    value = None
                if isinstance(value, dict) and text[end:].strip() == '}':
                    return value
    return resp.json()['provider_summaries']


def _skip(text, at):
    """The first index from ``at`` on that is not JSON whitespace."""
    while at < len(text) and text[at] in _WHITESPACE:
        at += 1
    return at


def _share(used, need, total):
    return min((used + need) / total, 1.0) if total else None


def _fullness(used, total, need, request, domain):
    """How full the host would be after placing the instance, 0..1.

    :param domain: ``(ways used, ways capacity, classes used, classes
        capacity)`` of the cache domain the scheduler would claim, or None.
    """
    shares = [_share(used, need, total)]
    if domain is not None:
        ways_used, ways_cap, clos_used, clos_cap = domain
        shares.append(_share(ways_used, request.ways, ways_cap))
        shares.append(_share(clos_used, 1, clos_cap))
    shares = [s for s in shares if s is not None]
    return sum(shares) / len(shares) if shares else 0.0


class _Weighed:
    def __init__(self, obj):
        self.obj = obj
