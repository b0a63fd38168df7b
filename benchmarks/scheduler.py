"""Scheduling overhead of the ResQ filter and weigher (issue 4).

Nova's real filter and weigher handlers run over 1,000 host states shaped
like two-socket NFV hosts (2 NUMA cells of 8 dedicated cores, one cache
domain provider each, one Placement allocation candidate per domain), for a
reserved ResQ request: once with Nova's default filters and all weighers,
once with the ResQ filter and weigher added. Both are measured side by side
in one run, many rounds, alternating; ``overhead_ratio`` is the median of
the per-round ratios, so load from other processes that drifts during the
run (these machines are shared) hits both sides of each ratio alike. Needs Nova
(the functional environment has it): ``tox -e bench -- scheduler`` installs
it through nova-requirements.txt.
"""

import datetime
import json
import statistics
import time
import uuid

from nova import config as nova_config
from nova import objects
from nova.scheduler import filters as nova_filters
from nova.scheduler import host_manager
from nova.scheduler import weights as nova_weights

from resq_common import cache_domain
from resq_nova.nova.scheduler import filters as resq_filters
from resq_nova.nova.scheduler import weights as resq_weights

HOSTS = 1000
ROUNDS = 31
SPECS = {'hw:cpu_policy': 'dedicated', 'resq:slo': 'reserved',
         'resources_LLC:CUSTOM_LLC_WAY': '4',
         'resources_LLC:CUSTOM_LLC_CLOS': '1', 'resq:throughput_mpps': '1.5'}


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


def _hosts():
    now = datetime.datetime.now(datetime.timezone.utc)
    hosts = []
    for i in range(HOSTS):
        hs = host_manager.HostState('host%04d' % i, 'node%04d' % i, None)
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


def _pass(filter_objs, weigher_objs, hosts, spec):
    for hs in hosts:
        hs.allocation_candidates = _candidates(hs)
    started = time.perf_counter()
    passed = list(nova_filters.HostFilterHandler().get_filtered_objects(
        filter_objs, hosts, spec, index=0))
    weighed = nova_weights.HostWeightHandler().get_weighed_objects(
        weigher_objs, passed, spec)
    return time.perf_counter() - started, len(passed), weighed


def main(argv):
    nova_config.parse_args([], configure_db=False, init_rpc=False)
    objects.register_all()
    hosts = _hosts()
    spec = _spec()
    handler = nova_filters.HostFilterHandler()
    default_names = ['ComputeFilter', 'ComputeCapabilitiesFilter',
                     'ImagePropertiesFilter', 'ServerGroupAntiAffinityFilter',
                     'ServerGroupAffinityFilter']
    classes = {c.__name__: c for c in handler.get_matching_classes(
        ['nova.scheduler.filters.all_filters'])}
    default_filters = [classes[n]() for n in default_names]
    resq = default_filters + [resq_filters.ResQFilter()]
    weighers = [cls() for cls in nova_weights.HostWeightHandler()
                .get_matching_classes(['nova.scheduler.weights.'
                                       'all_weighers'])]
    resq_weighers = weighers + [resq_weights.ResQWeigher()]
    base_t, resq_t = [], []
    for _ in range(ROUNDS):
        t, n_base, _ = _pass(default_filters, weighers, hosts, spec)
        base_t.append(t)
        t, n_resq, weighed = _pass(resq, resq_weighers, hosts, spec)
        resq_t.append(t)
    base_ms = statistics.median(base_t) * 1000
    resq_ms = statistics.median(resq_t) * 1000
    ratio = statistics.median(r / b for r, b in zip(resq_t, base_t))
    best_ratio = min(resq_t) / min(base_t)
    print('Scheduler pass over %d hosts (median of %d rounds)' % (HOSTS,
                                                                  ROUNDS))
    print('%-36s %10s %8s' % ('configuration', 'ms', 'hosts'))
    print('%-36s %10.2f %8d' % ('default filters + all weighers', base_ms,
                                n_base))
    print('%-36s %10.2f %8d' % ('+ ResQFilter + ResQWeigher', resq_ms,
                                n_resq))
    print('overhead ratio %.3f, median of per-round ratios (target <= '
          '1.10); fastest rounds %.3f' % (ratio, best_ratio))
    print(json.dumps({'benchmark': 'scheduler', 'hosts': HOSTS,
                      'rounds': ROUNDS, 'default_ms': round(base_ms, 3),
                      'resq_ms': round(resq_ms, 3),
                      'overhead_ratio': round(ratio, 4),
                      'overhead_ratio_fastest': round(best_ratio, 4),
                      'hosts_passing_resq': n_resq,
                      'target_met': ratio <= 1.10}, sort_keys=True))
    return 0
