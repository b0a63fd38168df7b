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
"""The flavors SLO admission makes: names, extra specs, comparison. Pure.

One flavor per distinct way count of a term, ``resq.<term>.<ways>w``. Its
extra specs ask Placement for the ways and a class of service of one cache
domain of the profile's shape (and its memory bandwidth, where the term
asks for some: ``resq:mem_bw_mibps`` and ``CUSTOM_MEM_BW_MIBPS`` in the same
request group), dedicated cores and huge pages, and carry the SLO in the
``resq:`` keys; they are checked with
:func:`resq_common.extra_specs.parse` before anything is created.
"""

import dataclasses

from resq_common import cache_domain
from resq_common import extra_specs

LLC_GROUP = '_LLC'
PAGE_SIZES = ('large', 'small', 'any', '2MB', '1GB')


@dataclasses.dataclass(frozen=True)
class FlavorOptions:
    """What every flavor of a term gets besides the cache."""

    vcpus: int = 1
    ram_mb: int = 1024
    disk_gb: int = 1
    mem_page_size: str = 'large'


@dataclasses.dataclass(frozen=True)
class Flavor:
    name: str
    ways: int
    vcpus: int
    ram_mb: int
    disk_gb: int
    extra_specs: dict


def flavor_name(term, ways):
    return 'resq.%s.%dw' % (term, ways)


def decimal(value):
    """A decimal string Nova's validator and humans both read."""
    text = format(round(float(value), 4), 'f').rstrip('0').rstrip('.')
    return text if text not in ('', '0') else '0.0001'


def shape_traits(profile):
    """The platform traits of the cache the profile was measured on."""
    return cache_domain.platform_traits(profile.platform['llc_ways'],
                                        profile.platform['way_size_bytes'])


def flavor_specs(term, ways, share_mpps, options):
    """The extra specs of the flavor for ``ways``-way instances of a term.

    :raises extra_specs.InvalidResQSpec: when the result would not pass
        nova-api's validation or the ResQ filter (checked before anything
        is created).
    """
    prof = term.profile
    specs = {
        'resources%s:%s' % (LLC_GROUP, extra_specs.RC_LLC_WAY): str(ways),
        'resources%s:%s' % (LLC_GROUP, extra_specs.RC_LLC_CLOS): '1',
        # The cores, counted in the cache domain too: reserved instances
        # never take an on-demand lease's cores.
        'resources%s:%s' % (LLC_GROUP, extra_specs.RC_RESQ_CORE):
            str(options.vcpus),
        'trait%s:%s' % (LLC_GROUP, extra_specs.TRAIT_CAT_L3): 'required',
    }
    # Only cache domains of the profile's shape: a profile measured on
    # another platform says nothing about this one.
    for trait in shape_traits(prof):
        specs['trait%s:%s' % (LLC_GROUP, trait)] = 'required'
    specs.update({
        # Ports with resource requests add suffixed groups of their own,
        # and with more than one Placement insists on a policy; "none"
        # lets their providers be chosen independently of the LLC group's.
        'group_policy': 'none',
        'hw:cpu_policy': 'dedicated',
        'hw:mem_page_size': options.mem_page_size,
        'resq:slo': extra_specs.RESERVED,
        'resq:profile': prof.profile_id,
        'resq:throughput_mpps': decimal(share_mpps),
        'resq:latency_p95_us': decimal(term.latency_p95_us),
        'resq:packet_bytes': str(term.packet_bytes
                                 or prof.traffic['packet_bytes']),
        'resq:term': term.name,
    })
    # The ways the profile needs for the throughput, so the scheduler can
    # check the flavor without the profile file.
    need = prof.min_ways_for(share_mpps)
    specs['resq:min_ways'] = str(min(need or ways, ways))
    mem_bw = getattr(term, 'mem_bw_mibps', None)
    if mem_bw:
        # Memory bandwidth from the cache domain that gives the ways:
        # Placement allocates it, the agent writes it as the MB limit.
        specs['resq:mem_bw_mibps'] = str(mem_bw)
        specs['resources%s:%s' % (LLC_GROUP, extra_specs.RC_MEM_BW)] = \
            str(mem_bw)
    extra_specs.parse(specs, options.vcpus)
    return specs


def differences(existing, wanted):
    """How an existing Nova flavor differs from the one a plan wants.

    :param existing: Nova's flavor document (with ``extra_specs``).
    :returns: a list of human-readable differences; empty if it matches.
    """
    diff = []
    for field, key in (('vcpus', 'vcpus'), ('ram_mb', 'ram'),
                       ('disk_gb', 'disk')):
        if existing.get(key) != getattr(wanted, field):
            diff.append('%s is %s, wanted %s' % (key, existing.get(key),
                                                 getattr(wanted, field)))
    have = existing.get('extra_specs') or {}
    for key in sorted(set(have) | set(wanted.extra_specs)):
        if have.get(key) != wanted.extra_specs.get(key):
            diff.append('%s is %s, wanted %s' % (
                key, _shown(have.get(key)),
                _shown(wanted.extra_specs.get(key))))
    return diff


def _shown(value):
    return 'unset' if value is None else repr(value)
