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
"""The ``resq:`` flavor extra specs: definitions and parsing. Pure.

One table (:data:`SPECS`) defines every key; Nova's API validators, the
scheduler filter and the admission command all read it, so a key cannot be
accepted by one and misread by another.
"""

import dataclasses
import re

from resq_common import profile

NAMESPACE = 'resq'
RC_LLC_WAY = 'CUSTOM_LLC_WAY'
RC_LLC_CLOS = 'CUSTOM_LLC_CLOS'
# Memory bandwidth of a cache domain's memory, in MiB/s on every host
# (resq_common.mba says why one unit and how the agent enforces it).
RC_MEM_BW = 'CUSTOM_MEM_BW_MIBPS'
# A core of a host's on-demand lease (resq_agent.ondemand): an on-demand
# flavor asks for one per vCPU, in a named request group, so Placement
# only offers cache domains whose lease has room for the instance.
RC_ONDEMAND_CORE = 'CUSTOM_RESQ_ONDEMAND_CORE'
# A dedicated core of a cache domain for reserved SLOs: the domain's cores
# less its on-demand lease's. A reserved flavor asks for one per vCPU in
# its LLC request group, so reserved instances never take the lease's
# cores (resq-admit's flavors do; hand-made flavors may).
RC_RESQ_CORE = 'CUSTOM_RESQ_CORE'
TRAIT_CAT_L3 = 'CUSTOM_CAT_L3'
# A cache domain whose kernel mounted resctrl with code and data
# prioritization (cdp): a group's code and data get masks of their own.
TRAIT_CDP = 'CUSTOM_RESQ_L3_CDP'
# A cache domain's shape (resq_common.cache_domain.platform_traits).
TRAIT_WAYS_PREFIX = 'CUSTOM_RESQ_LLC_WAYS_'
TRAIT_WAY_KIB_PREFIX = 'CUSTOM_RESQ_LLC_WAY_KIB_'
# A cache domain leasing <n> ways to on-demand NFs (the agent's lease).
TRAIT_ONDEMAND_PREFIX = 'CUSTOM_RESQ_ONDEMAND_WAYS_'
# L2 cache allocation (resq_agent.l2): a per-core property of the compute
# node's provider, not a resource class (doc/source/contributor/l2-cat.rst
# says why). A host whose kernel offers L2 CAT carries TRAIT_L2_CAT and
# TRAIT_L2_WAYS_PER_CORE_PREFIX<n> for n = 1 .. the L2 ways each dedicated
# core of every L2 domain gets (at most L2_LADDER_MAX), so a flavor asking
# for k ways per core requires <prefix>k.
TRAIT_L2_CAT = 'CUSTOM_RESQ_L2_CAT'
TRAIT_L2_WAYS_PER_CORE_PREFIX = 'CUSTOM_RESQ_L2_WAYS_PER_CORE_'
L2_LADDER_MAX = 32
RESERVED = 'reserved'
ON_DEMAND = 'on-demand'
_NUMBER = r'(?:[0-9]{1,12}(?:\.[0-9]{0,12})?|\.[0-9]{1,12})'
_RESOURCE_KEY = re.compile(r'^resources(?P<suffix>[A-Za-z0-9_-]*):'
                           r'(?P<rc>[A-Z0-9_]+)$')
_TRAIT_KEY = re.compile(r'^trait(?P<suffix>[A-Za-z0-9_-]*):'
                        r'(?P<trait>[A-Z0-9_]+)$')


class InvalidResQSpec(ValueError):
    """A ``resq:`` spec or its companions are wrong; says which and why."""


@dataclasses.dataclass(frozen=True)
class Spec:
    key: str
    kind: str          # 'enum', 'number', 'int', 'id'
    description: str
    allowed: str
    enum: tuple = ()
    minimum: float = None
    maximum: float = None


SPECS = {s.key: s for s in (
    Spec('resq:slo', 'enum',
         'ResQ SLO class: "reserved" (a dedicated, profiled LLC partition '
         'sized for the throughput target) or "on-demand" (LLC shared among '
         'on-demand NFs by the host agent, isolated when latency suffers).',
         'reserved, on-demand', enum=(RESERVED, ON_DEMAND)),
    Spec('resq:profile', 'id',
         'Id of the NF profile (resq-profiler) the SLO was sized with.',
         '1-128 letters, digits, ".", "_" or "-"'),
    Spec('resq:throughput_mpps', 'number',
         'Throughput this instance must sustain, in million packets per '
         'second.', 'a number > 0 and <= 1000', minimum=0.0,
         maximum=1000.0),
    Spec('resq:latency_p95_us', 'number',
         'Target 95th-percentile packet latency, in microseconds.',
         'a number > 0 and <= 1000000', minimum=0.0, maximum=1e6),
    Spec('resq:packet_bytes', 'int',
         'Packet size of the traffic profile the SLO assumes; sizes the DMA '
         'buffer budget (leaky DMA, ResQ section 4.3).',
         'an integer from 64 to 9216', minimum=64, maximum=9216),
    Spec('resq:migratable', 'enum',
         'Whether resq-optimizer may live-migrate instances of this flavor '
         'to repack the cloud ("false" pins them where they are; server '
         'metadata resq:migratable does the same per server).',
         'true, false', enum=('true', 'false')),
    Spec('resq:min_ways', 'int',
         'Fewest LLC ways the profile (resq:profile) needs to sustain '
         'resq:throughput_mpps on the platform it was measured on. '
         'resq-admit writes it, so the scheduler checks the flavor without '
         'the profile files; the flavor\'s CUSTOM_LLC_WAY must not be '
         'smaller.', 'an integer from 1 to 1024', minimum=1, maximum=1024),
    Spec('resq:mem_bw_mibps', 'int',
         'Memory bandwidth, in MiB/s, this instance needs from its cache '
         'domain\'s memory (reserved SLOs). Placement allocates it as '
         'CUSTOM_MEM_BW_MIBPS from the cache domain that gives the ways, '
         'so a domain is never over-committed; the host agent writes it '
         'as the group\'s MB limit. The flavor asks for the same amount '
         'in its LLC request group.',
         'an integer from 1 to 100000000', minimum=1, maximum=100_000_000),
    Spec('resq:code_ways', 'int',
         'Of the flavor\'s LLC ways, how many hold the instance\'s code '
         '(code and data prioritization, CDP); the rest hold its data. '
         'For NFs with large instruction footprints (a DPI engine). Needs '
         'a host whose kernel mounted resctrl with cdp: the flavor '
         'requires trait CUSTOM_RESQ_L3_CDP in its LLC request group.',
         'an integer from 1 to 1023, less than the flavor\'s '
         'CUSTOM_LLC_WAY', minimum=1, maximum=1023),
    Spec('resq:l2_ways_per_core', 'int',
         'L2 cache ways each of the instance\'s dedicated cores keeps to '
         'itself (L2 CAT, for cores that share an L2 in clusters). A '
         'per-core property of the host, not a Placement resource: the '
         'flavor requires trait CUSTOM_RESQ_L2_WAYS_PER_CORE_<n> of the '
         'compute node (the unnamed request group), which hosts whose '
         'cores each get at least n ways carry. Reserved SLOs only.',
         'an integer from 1 to %d' % L2_LADDER_MAX, minimum=1,
         maximum=L2_LADDER_MAX),
    Spec('resq:term', 'id',
         'Name of the SLO term this instance belongs to, to group the '
         'instances of one term.',
         '1-128 letters, digits, ".", "_" or "-"'),
)}


# Integers in extra specs: ASCII digits only (int() also takes Unicode
# digits, "_" and surrounding blanks), and few enough of them that no
# value needs more than a glance (int() refuses 4,300 digits with a bare
# ValueError).
_INT = r'[0-9]{1,9}'


def _count(key, value):
    """A resource amount of an extra spec, parsed strictly."""
    text = str(value).strip()
    if not text.isascii() or not re.fullmatch(_INT, text):
        raise InvalidResQSpec("extra spec '%s' must be a whole number of at "
                              "most 9 ASCII digits, got '%s'"
                              % (key, text[:40]))
    return int(text)


def check_value(key, value):
    """Validate one ``resq:`` key and value; return the parsed value.

    :raises InvalidResQSpec: naming the key and the allowed values.
    """
    spec = SPECS.get(key)
    if spec is None:
        raise InvalidResQSpec(
            "extra spec '%s' is not a resq-nova key; known keys: %s"
            % (key, ', '.join(sorted(SPECS))))
    value = str(value).strip()
    bad = InvalidResQSpec("extra spec '%s' has invalid value '%s'; allowed: "
                          "%s" % (key, value[:40], spec.allowed))
    if spec.kind == 'enum':
        if value not in spec.enum:
            raise bad
        return value
    if spec.kind == 'id':
        if not profile.ID_RE.match(value):
            raise bad
        return value
    if spec.kind == 'int':
        if not re.fullmatch(_INT, value):
            raise bad
        number = int(value)
        if not spec.minimum <= number <= spec.maximum:
            raise bad
        return number
    if not re.fullmatch(_NUMBER, value):
        raise bad
    number = float(value)
    if not spec.minimum < number <= spec.maximum:
        raise bad
    return number


@dataclasses.dataclass(frozen=True)
class ResQRequest:
    """What a flavor asks of ResQ."""

    slo: str
    profile: str = None
    throughput_mpps: float = None
    latency_p95_us: float = None
    packet_bytes: int = None
    term: str = None
    ways: int = 0
    clos: int = 0
    group_suffix: str = None
    dedicated_cpus: bool = False
    vcpus: int = 0
    required_traits: frozenset = frozenset()
    min_ways: int = None
    ondemand_cores: int = 0
    # Memory bandwidth (MiB/s) from the LLC request group's provider.
    mem_bw_mibps: int = 0
    # Of the ways, those holding code (CDP); 0: code and data share them.
    code_ways: int = 0
    # L2 ways each pinned core keeps (resq_agent.l2); 0: no L2 isolation.
    l2_ways_per_core: int = 0


def placement_names(extra_specs):
    """The traits and resource classes a flavor's extra specs name.

    Required and forbidden traits (``trait<suffix>:NAME``, whatever the
    value) and resource classes (``resources<suffix>:CLASS``), in every
    request group: what Placement must still know for Nova to schedule
    the flavor.

    :returns: ``(traits, classes)``, each a dict from the name to the keys
        that name it, sorted.
    """
    traits, classes = {}, {}
    for key in sorted(extra_specs or {}):
        t = _TRAIT_KEY.match(key)
        if t:
            traits.setdefault(t.group('trait'), []).append(key)
            continue
        r = _RESOURCE_KEY.match(key)
        if r:
            classes.setdefault(r.group('rc'), []).append(key)
    return traits, classes


def parse(extra_specs, vcpus=0):
    """A :class:`ResQRequest` from a flavor's extra specs, or ``None``.

    ``None`` means the flavor has no ``resq:`` key: not a ResQ request.

    :raises InvalidResQSpec: for bad values, or a reserved SLO without the
        isolation it needs (a ``CUSTOM_LLC_WAY`` request in one request
        group and ``hw:cpu_policy=dedicated``).
    """
    values = {}
    for key, value in (extra_specs or {}).items():
        if key.startswith(NAMESPACE + ':'):
            values[key.split(':', 1)[1]] = check_value(key, value)
    if not values:
        return None
    slo = values.get('slo')
    if slo is None:
        raise InvalidResQSpec("flavor has resq: extra specs but no "
                              "'resq:slo'; set resq:slo=reserved or "
                              "resq:slo=on-demand")
    ways, clos, suffix = 0, 0, None
    od_cores, od_suffix = 0, None
    res_cores = None
    mem_bw = None
    traits = {}
    for key, value in (extra_specs or {}).items():
        t = _TRAIT_KEY.match(key)
        if t and str(value).strip() == 'required':
            traits.setdefault(t.group('suffix'), set()).add(t.group('trait'))
        m = _RESOURCE_KEY.match(key)
        if m and m.group('rc') == RC_ONDEMAND_CORE:
            od_suffix = m.group('suffix')
            od_cores = _count(key, value)
            continue
        if m and m.group('rc') == RC_RESQ_CORE:
            res_cores = (m.group('suffix'), _count(key, value))
            continue
        if m and m.group('rc') == RC_MEM_BW:
            mem_bw = (m.group('suffix'), _count(key, value))
            continue
        if not m or m.group('rc') not in (RC_LLC_WAY, RC_LLC_CLOS):
            continue
        if suffix is not None and m.group('suffix') != suffix:
            raise InvalidResQSpec(
                'CUSTOM_LLC_WAY and CUSTOM_LLC_CLOS must be requested in one '
                'request group (one resources<suffix>: prefix), so both come '
                'from the same cache domain; found %r and %r'
                % (suffix, m.group('suffix')))
        suffix = m.group('suffix')
        amount = _count(key, value)
        if m.group('rc') == RC_LLC_WAY:
            ways = amount
        else:
            clos = amount
    dedicated = extra_specs.get('hw:cpu_policy') == 'dedicated'
    if slo == RESERVED:
        if ways <= 0:
            raise InvalidResQSpec(
                'resq:slo=reserved needs LLC ways from Placement: add '
                '"resources_LLC:%s=<ways>" (and "resources_LLC:%s=1") to '
                'the flavor' % (RC_LLC_WAY, RC_LLC_CLOS))
        if not dedicated:
            raise InvalidResQSpec(
                'resq:slo=reserved needs dedicated cores: add '
                '"hw:cpu_policy=dedicated" to the flavor')
        if suffix == '':
            raise InvalidResQSpec(
                'request %s in a named request group (e.g. '
                '"resources_LLC:%s") so it is served by one cache domain '
                'provider, not the compute node' % (RC_LLC_WAY, RC_LLC_WAY))
        if res_cores is not None and res_cores[0] != suffix:
            raise InvalidResQSpec(
                '%s must be requested in the LLC request group (%r), where '
                'the ways are, not in %r' % (RC_RESQ_CORE, suffix,
                                             res_cores[0]))
        if res_cores is not None and vcpus and res_cores[1] != vcpus:
            raise InvalidResQSpec(
                'the flavor has %d vCPUs but asks for %d %s; ask for one '
                'per vCPU' % (vcpus, res_cores[1], RC_RESQ_CORE))
        _check_reserved(values, ways, clos, suffix,
                        traits.get(suffix, set()))
        _check_bandwidth(values, mem_bw, suffix)
        _check_code_ways(values, ways, suffix, traits.get(suffix, set()))
        _check_l2(values, traits.get('', set()))
    else:
        _check_on_demand(values, ways, od_cores, od_suffix, dedicated,
                         vcpus)
        if values.get('code_ways') is not None:
            raise InvalidResQSpec(
                'resq:slo=on-demand NFs share the lease\'s ways; they cannot '
                'ask for code ways of their own: remove resq:code_ways')
        if values.get('l2_ways_per_core') is not None:
            raise InvalidResQSpec(
                'resq:slo=on-demand NFs share the lease\'s cores; they '
                'cannot ask for L2 ways of their own: remove '
                'resq:l2_ways_per_core')
        if mem_bw is not None or values.get('mem_bw_mibps') is not None:
            raise InvalidResQSpec(
                'resq:slo=on-demand NFs share the host\'s on-demand lease; '
                'they cannot ask for memory bandwidth of their own: remove '
                'resq:mem_bw_mibps and %s from the flavor' % RC_MEM_BW)
        suffix = od_suffix
    return ResQRequest(slo=slo, profile=values.get('profile'),
                       throughput_mpps=values.get('throughput_mpps'),
                       latency_p95_us=values.get('latency_p95_us'),
                       packet_bytes=values.get('packet_bytes'),
                       term=values.get('term'), ways=ways,
                       clos=clos if clos else (1 if ways else 0),
                       group_suffix=suffix, dedicated_cpus=dedicated,
                       vcpus=vcpus,
                       required_traits=frozenset(traits.get(suffix, ())),
                       min_ways=values.get('min_ways'),
                       ondemand_cores=od_cores,
                       mem_bw_mibps=mem_bw[1] if mem_bw else 0,
                       code_ways=values.get('code_ways') or 0,
                       l2_ways_per_core=values.get('l2_ways_per_core') or 0)


def _check_on_demand(values, ways, cores, suffix, dedicated, vcpus):
    """An on-demand flavor: a latency target, pinned cores from a lease."""
    if ways:
        raise InvalidResQSpec(
            'resq:slo=on-demand takes its LLC ways from the host\'s '
            'on-demand lease, not from Placement: remove %s from the '
            'flavor' % RC_LLC_WAY)
    if values.get('latency_p95_us') is None:
        raise InvalidResQSpec(
            'resq:slo=on-demand needs the latency target the host agent '
            'watches: add "resq:latency_p95_us=<microseconds>"')
    if not dedicated:
        raise InvalidResQSpec(
            'resq:slo=on-demand needs dedicated cores: add '
            '"hw:cpu_policy=dedicated" to the flavor')
    if not cores or not suffix:
        raise InvalidResQSpec(
            'resq:slo=on-demand needs room in a host\'s on-demand lease: '
            'add "resources_OD:%s=%s" (one per vCPU, in a named request '
            'group)' % (RC_ONDEMAND_CORE, vcpus or '<vCPUs>'))
    if vcpus and cores != vcpus:
        raise InvalidResQSpec(
            'the flavor has %d vCPUs but asks for %d %s; ask for one per '
            'vCPU' % (vcpus, cores, RC_ONDEMAND_CORE))


def _check_bandwidth(values, mem_bw, suffix):
    """Memory bandwidth comes from the cache domain that gives the ways.

    ``resq:mem_bw_mibps`` says what the NF needs; Placement allocates the
    flavor's ``CUSTOM_MEM_BW_MIBPS``: both must be there and agree.
    """
    wanted = values.get('mem_bw_mibps')
    group = 'resources%s' % suffix
    if mem_bw is None:
        if wanted is not None:
            raise InvalidResQSpec(
                'resq:mem_bw_mibps=%d needs the bandwidth from Placement: '
                'add "%s:%s=%d" to the flavor' % (wanted, group, RC_MEM_BW,
                                                  wanted))
        return
    where, amount = mem_bw
    if where != suffix:
        raise InvalidResQSpec(
            '%s must be requested in the LLC request group (%r), so the '
            'cache domain that gives the ways gives the bandwidth; found '
            'it in %r' % (RC_MEM_BW, suffix, where))
    if amount < 1:
        raise InvalidResQSpec(
            '%s:%s must be at least 1 MiB/s, or be removed' % (
                group, RC_MEM_BW))
    if wanted is not None and wanted != amount:
        raise InvalidResQSpec(
            'resq:mem_bw_mibps is %d but the flavor asks Placement for %d '
            '(%s:%s); make them equal' % (wanted, amount, group, RC_MEM_BW))


def _check_code_ways(values, ways, suffix, traits):
    """Code ways are some of the ways, on a domain with CDP."""
    code = values.get('code_ways')
    if code is None:
        return
    if code >= ways:
        raise InvalidResQSpec(
            'resq:code_ways=%d must leave ways for data: the flavor asks '
            'for %d LLC ways in all (%s); give fewer code ways or more ways'
            % (code, ways, 'resources%s:%s' % (suffix, RC_LLC_WAY)))
    if TRAIT_CDP not in traits:
        raise InvalidResQSpec(
            'resq:code_ways needs a cache domain with code and data '
            'prioritization: add "trait%s:%s=required" to the flavor, so '
            'Placement only offers such domains' % (suffix, TRAIT_CDP))


def l2_trait(ways_per_core):
    """The compute node trait a flavor asking ``ways_per_core`` needs."""
    return '%s%d' % (TRAIT_L2_WAYS_PER_CORE_PREFIX, ways_per_core)


def _check_l2(values, traits):
    """L2 ways per core need a host whose cores each get that many.

    The compute node's provider carries the trait (the unnamed request
    group): L2 ways are a property of the cores Nova pins, which no
    request group of a cache domain can choose.
    """
    wanted = values.get('l2_ways_per_core')
    if wanted is None:
        return
    trait = l2_trait(wanted)
    if trait not in traits:
        raise InvalidResQSpec(
            'resq:l2_ways_per_core=%d needs a host whose cores each get '
            'that many L2 ways: add "trait:%s=required" to the flavor (the '
            'unnamed request group, the compute node\'s: L2 ways belong '
            'to the cores, not to a cache domain provider)'
            % (wanted, trait))


def _trait_number(traits, prefix):
    for trait in traits:
        if trait.startswith(prefix) and trait[len(prefix):].isdigit():
            return int(trait[len(prefix):])
    return None


def _check_reserved(values, ways, clos, suffix, traits):
    """A reserved flavor must carry everything the scheduler checks.

    The scheduler has no profile files: the flavor itself says which cache
    shape its profile was measured on (required traits) and how many ways
    the profile needs for its throughput (``resq:min_ways``).
    """
    group = 'resources%s' % suffix
    if clos != 1:
        raise InvalidResQSpec(
            'resq:slo=reserved needs exactly one class of service with its '
            'ways, from the same cache domain: set "%s:%s=1" (the flavor '
            'has %s)' % (group, RC_LLC_CLOS, clos or 'none'))
    profile_id = values.get('profile')
    min_ways = values.get('min_ways')
    if profile_id is None:
        if min_ways is not None and ways < min_ways:
            raise InvalidResQSpec(
                'the flavor asks for %d LLC ways but resq:min_ways is %d; '
                'set %s:%s to at least %d'
                % (ways, min_ways, group, RC_LLC_WAY, min_ways))
        return
    shape_ways = _trait_number(traits, TRAIT_WAYS_PREFIX)
    if shape_ways is None or _trait_number(
            traits, TRAIT_WAY_KIB_PREFIX) is None:
        raise InvalidResQSpec(
            'resq:profile=%s needs the cache shape it was measured on: '
            'require "trait%s:%s<ways>" and "trait%s:%s<KiB>" in the LLC '
            'request group (resq-admit writes them; "resq-profiler show %s" '
            'prints the platform), so Placement only hands out ways of such '
            'a cache' % (profile_id, suffix, TRAIT_WAYS_PREFIX, suffix,
                         TRAIT_WAY_KIB_PREFIX, profile_id))
    if values.get('throughput_mpps') is not None and min_ways is None:
        raise InvalidResQSpec(
            'resq:profile=%s with resq:throughput_mpps needs resq:min_ways, '
            'the ways the profile needs for that throughput, so the '
            'scheduler can check the flavor without the profile file; '
            'create the flavor with resq-admit or add resq:min_ways'
            % profile_id)
    if min_ways is not None and ways < min_ways:
        mpps = values.get('throughput_mpps')
        raise InvalidResQSpec(
            'the flavor asks for %d LLC ways but profile %s needs %d%s '
            '(resq:min_ways); set %s:%s to at least %d or lower '
            'resq:throughput_mpps' % (
                ways, profile_id, min_ways,
                ' for %g Mpps' % mpps if mpps is not None else '', group,
                RC_LLC_WAY, min_ways))
    if min_ways is not None and min_ways > shape_ways:
        raise InvalidResQSpec(
            'resq:min_ways=%d is more than the %d ways of the cache the '
            'flavor requires (%s%d)' % (min_ways, shape_ways,
                                        TRAIT_WAYS_PREFIX, shape_ways))
