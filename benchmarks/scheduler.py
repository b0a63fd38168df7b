"""Scheduling overhead of the ResQ filter and weigher (issues 4 and 44).

Nova's real filter and weigher handlers run over host states shaped like
two-socket NFV hosts (2 NUMA cells of 8 dedicated cores, one cache domain
provider each, one Placement allocation candidates answer with a
candidate per domain), for a reserved ResQ request, in four
configurations:

``nova``
    the baseline: Nova's default filters (``ComputeFilter``,
    ``ComputeCapabilitiesFilter``, ``ImagePropertiesFilter``,
    ``ServerGroupAntiAffinityFilter``, ``ServerGroupAffinityFilter``) and
    all of Nova's weighers (``nova.scheduler.weights.all_weighers``);
``resq``
    the same plus ``ResQFilter`` and ``ResQWeigher``, as nova-scheduler
    runs them: the weigher reads the cache domains' usage from the
    provider summaries of Nova's own allocation candidates answer for the
    request, which nova-scheduler's manager got before filtering (through
    the report client's ``get_allocation_candidates``, hooked as the
    weigher hooks it in nova-scheduler);
``resq-own-get``
    ``resq`` when Nova's answer is not at hand (the weigher's fallback:
    a Nova whose report client the hook does not recognise, a rebuild,
    the later instances of a multi-create): the weigher's own ``GET
    /allocation_candidates`` per request, whose answer it decodes;
``null``
    ``nova`` plus a filter and a weigher that do nothing: what any plugin
    pair costs in Nova's handlers (the weigher handler logs, normalises
    and multiplies per weigher and host), the floor under ``resq``.

The plugins read Placement as they do in nova-scheduler, through clients
that answer from memory: the filter's cell map (``CUSTOM_RESQ_NUMA_<n>``
traits; refreshed once a minute, so read once here) and the allocation
candidates answer (every host's compute node provider, with its traits,
and cache domain providers, as the agent publishes them: about 3 KB a
host of JSON). In ``resq``, before each pass and outside the measured
time, Nova's report client gets that answer for the request, as
nova-scheduler's manager asks for it before filtering: decoding its JSON
is Nova's cost, which Nova pays with or without ResQ, not the plugins'
(the answer is handed to the report client already parsed, to spare the
run the time). In ``resq-own-get`` the weigher asks for it itself in each
pass and decodes its provider summaries, inside the measured time. The
network round trip and Placement's own work are not in the figures (the
fallback's second request has them on top in a cloud).

Each round runs every configuration once, over the same host states, in
an order that rotates from round to round (ABCD, BCDA, ...), so load from
other processes that drifts during the run (these machines are shared)
hits each alike; ``overhead_ratio`` is the median over the rounds of
``resq / nova`` within a round, with its quartiles and extremes
(``overhead_ratio_q1``, ``_q3``, ``_iqr``, ``_min``, ``_max``) and the
ratio of the fastest rounds beside it. The clock is the thread's CPU time
(``time.thread_time``) by default: time the process waits for a core
while others run is not in it, which wall time (``--clock wall``)
counts; a busy machine still slows the CPU work itself (shared caches,
a busy sibling hyperthread), which is what the interleaving and the
median are for. This machine's CPU counters are not available (no PMU in
the VM), so instructions are not counted. Before each pass the garbage
collector runs, so that each pass starts from the same state.

At 1,000 hosts (``overhead_ratio``, ``default_ms``, ``resq_ms``, ...)
and 10,000 hosts (the same keys ending ``_10k``); ``--hosts 1000`` runs
one size, ``--rounds N`` sets the rounds per size, ``--configs
nova,resq`` leaves out the others. Needs Nova (the functional
environment has it): ``tox -e bench -- scheduler`` installs it through
nova-requirements.txt.
"""

import argparse
import datetime
import gc
import json
import statistics
import time
import uuid

from nova import config as nova_config
from nova import context as nova_context
from nova import objects
from nova.scheduler.client import report
from nova.scheduler import filters as nova_filters
from nova.scheduler import host_manager
from nova.scheduler import weights as nova_weights

from resq_common import cache_domain
from resq_common import extra_specs
from resq_nova.nova.scheduler import filters as resq_filters
from resq_nova.nova.scheduler import weights as resq_weights

HOSTS = (1000, 10000)
ROUNDS = 15
TARGET = 1.05
CLOCKS = {'cpu': time.thread_time, 'wall': time.perf_counter}
SPECS = {'hw:cpu_policy': 'dedicated', 'resq:slo': 'reserved',
         'resources_LLC:CUSTOM_LLC_WAY': '4',
         'resources_LLC:CUSTOM_LLC_CLOS': '1', 'resq:throughput_mpps': '1.5'}
DEFAULT_FILTERS = ('ComputeFilter', 'ComputeCapabilitiesFilter',
                   'ImagePropertiesFilter', 'ServerGroupAntiAffinityFilter',
                   'ServerGroupAffinityFilter')
CONFIGS = ('nova', 'resq', 'resq-own-get', 'null')
LABELS = {'nova': 'nova: default filters + all weighers',
          'resq': 'resq: nova + ResQFilter + ResQWeigher',
          'resq-own-get': 'resq-own-get: resq, weigher GETs and decodes',
          'null': 'null: nova + a do-nothing filter and weigher'}
KEYS = {'nova': 'default', 'resq': 'resq', 'resq-own-get': 'resq_own_get',
        'null': 'null'}
# The traits of a compute node's provider in Placement's answer: what the
# libvirt driver reports for a Xeon host (CPU flags, image types, ...).
ROOT_TRAITS = sorted(
    ['COMPUTE_NODE', 'COMPUTE_NET_ATTACH_INTERFACE',
     'COMPUTE_NET_ATTACH_INTERFACE_WITH_TAG', 'COMPUTE_VOLUME_ATTACH',
     'COMPUTE_VOLUME_ATTACH_WITH_TAG', 'COMPUTE_VOLUME_EXTEND',
     'COMPUTE_VOLUME_MULTI_ATTACH', 'COMPUTE_DEVICE_TAGGING',
     'COMPUTE_TRUSTED_CERTS', 'COMPUTE_ACCELERATORS',
     'COMPUTE_SOCKET_PCI_NUMA_AFFINITY', 'COMPUTE_RESCUE_BFV',
     'COMPUTE_IMAGE_TYPE_AMI', 'COMPUTE_IMAGE_TYPE_ARI',
     'COMPUTE_IMAGE_TYPE_AKI', 'COMPUTE_IMAGE_TYPE_ISO',
     'COMPUTE_IMAGE_TYPE_QCOW2', 'COMPUTE_IMAGE_TYPE_RAW',
     'COMPUTE_GRAPHICS_MODEL_VGA', 'COMPUTE_GRAPHICS_MODEL_VIRTIO',
     'COMPUTE_NET_VIF_MODEL_VIRTIO', 'COMPUTE_NET_VIF_MODEL_E1000',
     'COMPUTE_STORAGE_BUS_VIRTIO', 'COMPUTE_STORAGE_BUS_SCSI',
     'COMPUTE_STORAGE_BUS_SATA', 'COMPUTE_STORAGE_BUS_USB',
     'COMPUTE_VIOMMU_MODEL_INTEL', 'COMPUTE_SECURITY_UEFI_SECURE_BOOT',
     'HW_CPU_HYPERTHREADING', 'HW_CPU_X86_AVX', 'HW_CPU_X86_AVX2',
     'HW_CPU_X86_AVX512F', 'HW_CPU_X86_AVX512CD', 'HW_CPU_X86_AVX512BW',
     'HW_CPU_X86_AVX512DQ', 'HW_CPU_X86_AVX512VL', 'HW_CPU_X86_AESNI',
     'HW_CPU_X86_BMI', 'HW_CPU_X86_BMI2', 'HW_CPU_X86_CLMUL',
     'HW_CPU_X86_F16C', 'HW_CPU_X86_FMA3', 'HW_CPU_X86_MMX',
     'HW_CPU_X86_SSE', 'HW_CPU_X86_SSE2', 'HW_CPU_X86_SSE3',
     'HW_CPU_X86_SSSE3', 'HW_CPU_X86_SSE41', 'HW_CPU_X86_SSE42',
     'HW_CPU_X86_SHA', 'HW_CPU_X86_ABM', 'HW_CPU_X86_VMX',
     'HW_CPU_X86_INTEL_VMX', 'HW_CPU_X86_MPX'])
# The cache domains as an agent publishes them (resq_common.cache_domain):
# 11 ways of 2 MiB (a Xeon Gold's), 8 dedicated cores, a NUMA cell each.
DOMAINS = tuple(cache_domain.CacheDomain(
    domain_id=d, ways=11, way_size_bytes=2 << 20, cores=8,
    numa_cells=(d,), memory_mb=65536, hugepages_mb=0) for d in (0, 1))


def _numa():
    cells = []
    for cell in range(2):
        cpus = set(range(cell * 8, cell * 8 + 8))
        cells.append(objects.NUMACell(
            id=cell, cpuset=set(), pcpuset=cpus, memory=65536,
            memory_usage=0, pinned_cpus=set(list(cpus)[:cell * 2]),
            siblings=[{c} for c in cpus], mempages=[],
            network_metadata=objects.NetworkMetadata(physnets=set(),
                                                     tunneled=False),
            socket=cell))
    return objects.NUMATopology(cells=cells)


def _hosts(count):
    now = datetime.datetime.now(datetime.timezone.utc)
    hosts = []
    for i in range(count):
        hs = host_manager.HostState('host%05d' % i, 'node%05d' % i, None)
        hs.uuid = str(uuid.uuid4())
        hs.service = {'disabled': False, 'last_seen_up': now,
                      'created_at': now, 'forced_down': False,
                      'binary': 'nova-compute', 'host': hs.host}
        hs.numa_topology = _numa()
        hs.limits = {}
        hs.vcpus_total, hs.vcpus_used = 16, i % 8
        hs.free_ram_mb = hs.total_usable_ram_mb = 131072
        hs.free_disk_mb = hs.total_usable_disk_gb = 1000
        hs.stats = {}
        hs.cpu_info = '{}'
        hs.hypervisor_type = 'QEMU'
        hs.hypervisor_version = 8000000
        hs.supported_instances = [('x86_64', 'kvm', 'hvm')]
        hs.aggregates = []
        hs.instances = {}
        hs.num_io_ops = 0
        hs.num_instances = i % 8
        hs.metrics = None
        hs.pci_stats = None
        hs.cpu_allocation_ratio = 1.0
        hs.ram_allocation_ratio = 1.0
        hs.disk_allocation_ratio = 1.0
        hs.disk_mb_used = 0
        hs.failed_builds = 0
        hosts.append(hs)
    return hosts


def _candidates(hs):
    return [{'allocations': {}, 'mappings': {
        '': [hs.uuid], '_LLC': [cache_domain.provider_uuid(hs.uuid, d)]}}
        for d in (0, 1)]


def _spec():
    flavor = objects.Flavor(name='nf', flavorid='nf', vcpus=2,
                            memory_mb=1024, root_gb=10, ephemeral_gb=0,
                            swap=0, extra_specs=dict(SPECS))
    numa = objects.InstanceNUMATopology(cells=[objects.InstanceNUMACell(
        id=0, cpuset=set(), pcpuset={0, 1}, memory=1024,
        cpu_policy='dedicated')])
    return objects.RequestSpec(
        flavor=flavor, numa_topology=numa, num_instances=1,
        image=objects.ImageMeta.from_dict({'properties': {}}),
        instance_group=None, scheduler_hints={}, ignore_hosts=None,
        force_hosts=None, force_nodes=None, requested_destination=None,
        pci_requests=objects.InstancePCIRequests(requests=[]),
        is_bfv=False, project_id='p', user_id='u',
        instance_uuid=str(uuid.uuid4()))


class _Response:
    """A keystoneauth (requests) response: a UTF-8 JSON body."""

    status_code = 200
    encoding = 'utf-8'

    def __init__(self, text):
        self.text = text

    def json(self):
        return json.loads(self.text)


class _Parsed:
    """A response whose body is already parsed (Nova's own answer)."""

    status_code = 200
    text = None

    def __init__(self, value):
        self.value = value

    def json(self):
        return self.value


class _Placement:
    """Placement's answers to the plugins' GETs, from memory.

    The cell map's traits and providers (cell ``n`` is cache domain
    ``n`` on every host), and one ``GET /allocation_candidates`` for the
    weigher, as Placement 1.33 answers it: a request per cache domain and
    the summaries of every provider in the candidates' trees (compute
    nodes and cache domains), with varied usage.
    """

    def __init__(self, hosts):
        self.answers = {}
        prefix = cache_domain.TRAIT_NUMA_PREFIX
        self.answers['/traits?name=startswith:%s' % prefix] = {
            'traits': ['%s%d' % (prefix, d) for d in (0, 1)]}
        for d in (0, 1):
            self.answers['/resource_providers?required=%s%d' % (prefix, d)] = {
                'resource_providers': [
                    {'uuid': cache_domain.provider_uuid(hs.uuid, d),
                     'parent_provider_uuid': hs.uuid} for hs in hosts]}
        requests, summaries = [], {}
        for i, hs in enumerate(hosts):
            summaries[hs.uuid] = {
                'resources': {
                    'VCPU': {'capacity': 4, 'used': 0},
                    'PCPU': {'capacity': 16, 'used': i % 8},
                    'MEMORY_MB': {'capacity': 131072, 'used': 0},
                    'DISK_GB': {'capacity': 1000, 'used': 0}},
                'traits': ROOT_TRAITS,
                'parent_provider_uuid': None,
                'root_provider_uuid': hs.uuid}
            for domain in DOMAINS:
                d = domain.domain_id
                rp = cache_domain.provider_uuid(hs.uuid, d)
                requests.append({
                    'allocations': {rp: {'resources': {
                        extra_specs.RC_LLC_WAY: 4,
                        extra_specs.RC_LLC_CLOS: 1}}},
                    'mappings': {'_LLC': [rp]}})
                used = {extra_specs.RC_LLC_WAY: (i + d) % 3 * 2,
                        extra_specs.RC_LLC_CLOS: (i + d) % 3}
                summaries[rp] = {
                    'resources': {
                        rc: {'capacity': int((inv['total'] - inv['reserved'])
                                             * inv['allocation_ratio']),
                             'used': used.get(rc, 0)}
                        for rc, inv in domain.inventory().items()},
                    'traits': domain.traits(),
                    'parent_provider_uuid': hs.uuid,
                    'root_provider_uuid': hs.uuid}
        self.answer = {'allocation_requests': requests,
                       'provider_summaries': summaries}
        self.candidates = json.dumps(self.answer)

    def get(self, url, version=None, **kwargs):
        if url.startswith('/allocation_candidates?'):
            return _Response(self.candidates)
        return _Response(json.dumps(self.answers[url]))


class _Counted:
    """A Placement client that counts the weigher's own GETs."""

    def __init__(self, placement):
        self.placement = placement
        self.candidates_gets = 0

    def get(self, url, version=None, **kwargs):
        if url.startswith('/allocation_candidates?'):
            self.candidates_gets += 1
        return self.placement.get(url, version=version, **kwargs)


class _Resources:
    """The ResourceRequest Nova's manager passes the report client."""

    def to_querystring(self):
        return ('resources=PCPU:2,MEMORY_MB:1024,DISK_GB:10'
                '&resources_LLC=%s:4,%s:1' % (extra_specs.RC_LLC_WAY,
                                              extra_specs.RC_LLC_CLOS))


class _NovaAsks:
    """nova-scheduler's manager asking Placement before it filters.

    Calls Nova's ``SchedulerReportClient.get_allocation_candidates``
    (with the weigher's hook), on a client whose ``get`` answers from
    memory already parsed, in a new request context that the request
    spec carries, as select_destinations gets it over RPC.
    """

    def __init__(self, placement):
        self.client = object.__new__(report.SchedulerReportClient)
        answer = placement.answer
        self.client.get = lambda url, **kwargs: _Parsed(answer)

    def __call__(self, spec):
        ctx = nova_context.RequestContext('user', 'project', is_admin=False)
        spec._context = ctx
        res = report.SchedulerReportClient.get_allocation_candidates(
            self.client, ctx, _Resources())
        assert res[1] is not None


class _NullFilter(nova_filters.BaseHostFilter):
    """Keeps every host; what a filter costs in Nova's handler."""

    def filter_all(self, filter_obj_list, spec_obj):
        return filter_obj_list

    def host_passes(self, host_state, spec_obj):
        return True


class _NullWeigher(nova_weights.BaseHostWeigher):
    """Weighs every host alike; what a weigher costs in Nova's handler."""

    def weight_multiplier(self, host_state):
        return 1.0

    def weigh_objects(self, weighed_obj_list, weight_properties):
        return [0.0] * len(weighed_obj_list)

    def _weigh_object(self, host_state, weight_properties):
        return 0.0


class _Probe:
    """When the added filter and weigher were entered, in this pass.

    They run last (Nova runs its filters and weighers in the order
    configured), so from the added filter's ``filter_all`` to the end of
    the filter handler, and from the added weigher's ``weigh_objects`` to
    the end of the weigher handler, the time is theirs: their own work
    and what Nova's handlers do for each filter and weigher (list copies,
    debug dicts, normalisation, a multiplier per host), with only Nova's
    final sort of the weighed hosts besides, which counts against them.
    Their share of a pass is measured within that pass, so load that
    changes from one pass to the next does not move it.
    """

    def __init__(self, clock, filter_obj, weigher_obj):
        self.clock = clock
        self.entered = {}
        self._wrap(filter_obj, 'filter_all', 'filter')
        self._wrap(weigher_obj, 'weigh_objects', 'weigher')

    def _wrap(self, obj, method, name):
        call = getattr(obj, method)
        entered = self.entered
        clock = self.clock

        def wrapper(*args, **kwargs):
            if name not in entered:
                entered[name] = clock()
            return call(*args, **kwargs)

        setattr(obj, method, wrapper)


def configurations(placement, clock):
    """``{name: (filters, weighers, probe, before the pass)}`` of CONFIGS.

    :param placement: the :class:`_Placement` of the plugins' reads and
        of Nova's answer.
    :param clock: the clock of the :class:`_Probe` of the added plugins
        (None for ``nova``).
    """
    handler = nova_filters.HostFilterHandler()
    classes = {c.__name__: c for c in handler.get_matching_classes(
        ['nova.scheduler.filters.all_filters'])}
    default_filters = [classes[n]() for n in DEFAULT_FILTERS]
    weighers = [cls() for cls in nova_weights.HostWeightHandler()
                .get_matching_classes(['nova.scheduler.weights.'
                                       'all_weighers'])]

    def added(filter_obj, weigher_obj, before=None):
        return (default_filters + [filter_obj], weighers + [weigher_obj],
                _Probe(clock, filter_obj, weigher_obj), before)

    def resq(before):
        resq_filter = resq_filters.ResQFilter()
        resq_filter.cells._client_factory = lambda: placement
        resq_weigher = resq_weights.ResQWeigher()
        resq_weigher._placement = _Counted(placement)
        assert resq_weigher._nova_answers, 'Nova\'s answer is not read'
        return added(resq_filter, resq_weigher, before)

    return {
        'nova': (default_filters, weighers, None, None),
        # Nova's manager asks Placement; the weigher reads that answer.
        'resq': resq(_NovaAsks(placement)),
        # Nothing of Nova's at hand: the weigher asks Placement itself.
        'resq-own-get': resq(None),
        'null': added(_NullFilter(), _NullWeigher()),
    }


def one_pass(filter_objs, weigher_objs, probe, before, hosts, spec, clock):
    """One scheduling pass.

    Outside the measured time: ``before(spec)`` if given (Nova asking
    Placement for the request), the allocation candidates are laid anew
    (the ResQ filter prunes them, as Nova's scheduler lays them for each
    request), each host's service is seen up now (ComputeFilter takes a
    service last seen more than ``service_down_time``, 60 s, ago for
    down, and a run outlasts that), and the garbage collector runs.

    :returns: ``(seconds on clock, seconds of it the added plugins took
        (None without a probe), hosts passed, weighed hosts)``.
    """
    if before is not None:
        before(spec)
    now = datetime.datetime.now(datetime.timezone.utc)
    for hs in hosts:
        hs.allocation_candidates = _candidates(hs)
        hs.service['last_seen_up'] = now
    gc.collect()
    if probe is not None:
        probe.entered.clear()
    started = clock()
    passed = list(nova_filters.HostFilterHandler().get_filtered_objects(
        filter_objs, hosts, spec, index=0))
    filtered = clock()
    weighed = nova_weights.HostWeightHandler().get_weighed_objects(
        weigher_objs, passed, spec)
    ended = clock()
    added = None
    if probe is not None:
        added = 0.0
        if 'filter' in probe.entered:
            added += filtered - probe.entered['filter']
        if 'weigher' in probe.entered:
            added += ended - probe.entered['weigher']
    return ended - started, added, len(passed), weighed


def spread(values):
    """``{median, min, max, q1, q3, iqr}`` of ``values``."""
    values = sorted(values)
    if len(values) >= 2:
        q1, _, q3 = statistics.quantiles(values, n=4, method='inclusive')
    else:
        q1 = q3 = values[0]
    return {'median': statistics.median(values), 'min': values[0],
            'max': values[-1], 'q1': q1, 'q3': q3, 'iqr': q3 - q1}


def measure(count, rounds, clock, configs=CONFIGS):
    """Interleaved rounds over ``count`` hosts.

    :returns: ``{config: {'times': [seconds per round], 'added':
        [seconds of the added plugins per round], 'passed': hosts passed,
        'best': [host names, best first]}}``.
    """
    hosts = _hosts(count)
    spec = _spec()
    setups = configurations(_Placement(hosts), clock)
    runs = {c: {'times': [], 'added': []} for c in configs}
    # One pass of each, unmeasured: imports, the cell map's first read,
    # the NUMA states of the host states (kept while their topology
    # objects are, as nova-scheduler's HostManager keeps them).
    for c in configs:
        one_pass(*setups[c], hosts, spec, clock)
    for r in range(rounds):
        # ABCD, BCDA, CDAB, ...: no configuration always runs first.
        order = configs[r % len(configs):] + configs[:r % len(configs)]
        for c in order:
            t, added, n, weighed = one_pass(*setups[c], hosts, spec, clock)
            runs[c]['times'].append(t)
            runs[c]['added'].append(added)
            runs[c]['passed'] = n
            runs[c]['best'] = [w.obj.host for w in weighed[:5]]
    if 'resq' in configs:
        # The weigher read Nova's answer in every resq pass.
        gets = setups['resq'][1][-1]._placement.candidates_gets
        assert gets == 0, 'resq\'s weigher asked Placement %d times' % gets
    return runs


def ratios(runs, config):
    """Per round: ``(config / nova, config / (config less the plugins))``.

    The second is the pass against itself less the added plugins' time
    (:class:`_Probe`).
    """
    between = [t / b for t, b in zip(runs[config]['times'],
                                     runs['nova']['times'])]
    within = [t / (t - a) for t, a in zip(runs[config]['times'],
                                          runs[config]['added'])]
    return between, within


NAMES = {'resq': 'overhead_ratio', 'resq-own-get': 'overhead_ratio_own_get',
         'null': 'null_ratio'}


def figures(runs, suffix=''):
    """The JSON figures of one size; ``suffix`` ends each key."""
    out = {}
    for c in CONFIGS:
        if c not in runs:
            continue
        out['%s_ms%s' % (KEYS[c], suffix)] = round(
            statistics.median(runs[c]['times']) * 1000, 3)
        if c == 'nova':
            continue
        out['%s_added_ms%s' % (KEYS[c], suffix)] = round(
            statistics.median(runs[c]['added']) * 1000, 3)
        between, within = ratios(runs, c)
        for name, values in ((NAMES[c], between),
                             (NAMES[c] + '_inpass', within)):
            stats = spread(values)
            out[name + suffix] = round(stats['median'], 4)
            for k in ('min', 'max', 'q1', 'q3', 'iqr'):
                out['%s_%s%s' % (name, k, suffix)] = round(stats[k], 4)
        out['%s_fastest%s' % (NAMES[c], suffix)] = round(
            min(runs[c]['times']) / min(runs['nova']['times']), 4)
    out['hosts_passing_resq' + suffix] = runs['resq']['passed']
    return out


def _suffix(count):
    """The key suffix of a host count: none at 1,000, ``_10k``..."""
    if count == 1000:
        return ''
    if count % 1000 == 0:
        return '_%dk' % (count // 1000)
    return '_%d' % count


def _table(count, rounds, clock, runs, fig, suffix):
    print('Scheduler pass over %d hosts, %d interleaved rounds, %s time'
          % (count, rounds, clock))
    print('%-48s %9s %7s %7s %13s %7s %13s' % (
        'configuration', 'median ms', 'min ms', '/nova', 'IQR', 'inpass',
        'IQR'))
    for c in CONFIGS:
        if c not in runs:
            continue
        ms = [t * 1000 for t in runs[c]['times']]
        cols = ['', '', '', '']
        if c != 'nova':
            cols = []
            for values in ratios(runs, c):
                r = spread(values)
                cols += ['%.3f' % r['median'],
                         '%.3f-%.3f' % (r['q1'], r['q3'])]
        print('%-48s %9.2f %7.2f %7s %13s %7s %13s' % (
            (LABELS[c], statistics.median(ms), min(ms)) + tuple(cols)))
    print('/nova: the pass against the nova pass of its round; inpass: '
          'the pass against itself less the added plugins\' time')
    print('overhead_ratio%s %.3f (target <= %.2f), overhead_ratio_inpass%s '
          '%.3f; the plugins took %.2f ms of a pass' % (
              suffix, fig['overhead_ratio' + suffix], TARGET, suffix,
              fig['overhead_ratio_inpass' + suffix],
              fig['resq_added_ms' + suffix]))
    print()


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog='python -m benchmarks scheduler',
        description='Scheduling overhead of the ResQ filter and weigher.')
    parser.add_argument('--rounds', type=int, default=ROUNDS,
                        help='interleaved rounds per host count '
                        '(default %(default)s)')
    parser.add_argument('--hosts', default=','.join(map(str, HOSTS)),
                        help='comma-separated host counts (default '
                        '%(default)s)')
    parser.add_argument('--clock', choices=sorted(CLOCKS), default='cpu',
                        help='cpu: the thread\'s CPU time; wall: '
                        'time.perf_counter (default %(default)s)')
    parser.add_argument('--configs', default=','.join(CONFIGS),
                        help='comma-separated configurations to run, '
                        'nova and resq always among them (default '
                        '%(default)s)')
    args = parser.parse_args(argv)
    args.configs = set(args.configs.split(',')) | {'nova', 'resq'}
    if not args.configs <= set(CONFIGS):
        parser.error('--configs takes %s' % ', '.join(CONFIGS))
    if args.rounds < 1:
        parser.error('--rounds must be at least 1')
    try:
        args.hosts = [int(h) for h in args.hosts.split(',')]
    except ValueError:
        parser.error('--hosts takes comma-separated integers')
    return args


def main(argv):
    args = parse_args(argv)
    nova_config.parse_args([], configure_db=False, init_rpc=False)
    objects.register_all()
    configs = tuple(c for c in CONFIGS if c in args.configs)
    result = {'benchmark': 'scheduler', 'clock': args.clock,
              'rounds': args.rounds, 'hosts': args.hosts,
              'configurations': list(configs),
              'baseline': 'Nova\'s default filters (%s) and all of Nova\'s '
              'weighers' % ', '.join(DEFAULT_FILTERS), 'target': TARGET}
    met = True
    for count in args.hosts:
        runs = measure(count, args.rounds, CLOCKS[args.clock], configs)
        # Nova's answer and the weigher's own GET weigh alike.
        if 'resq-own-get' in runs and (
                runs['resq']['best'] != runs['resq-own-get']['best']):
            print('resq and resq-own-get chose different hosts: %s, %s'
                  % (runs['resq']['best'], runs['resq-own-get']['best']))
            return 1
        suffix = _suffix(count)
        fig = figures(runs, suffix)
        _table(count, args.rounds, args.clock, runs, fig, suffix)
        result.update(fig)
        met = met and fig['overhead_ratio' + suffix] <= TARGET
    result['target_met'] = met
    print(json.dumps(result, sort_keys=True))
    return 0
