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
"""The ``[resq_agent]`` options: discovery, inventory, enforcement,
monitoring. The agent also reads ``[placement]`` (keystoneauth options)."""

from oslo_config import cfg

from resq_common.clients import placement as placement_client
from resq_common.conf import clients
from resq_common.conf import metrics as metrics_conf

GROUP = 'resq_agent'

RESCTRL_FAKE_OPT = cfg.BoolOpt(
    'resctrl_fake',
    default=False,
    help='The resctrl root is a tree built by "python -m '
         'resq_fake.resctrl" (devstack sets this with '
         'RESQ_FAKE_RESCTRL on hosts without Intel RDT), not a mounted '
         'resctrl file system: the privileged daemon then writes there '
         'although it is not one, so the whole path runs without CAT. '
         'Nothing is isolated. Never set it on a host that should enforce '
         'partitions. The daemon honours it only from root\'s own file '
         '(resq-agent-privsep.conf), and only when every directory above '
         'the tree is root\'s alone.')

RESCTRL_ROOT_OPT = cfg.StrOpt(
    'resctrl_root',
    default='/sys/fs/resctrl',
    help='Mount point of the resctrl file system. Every resctrl '
         'path the agent reads or writes is under it; change it only to '
         'point the agent at a copied tree for testing. When it is missing '
         'the agent reports no LLC inventory and enforces nothing. The '
         'privileged daemon (resq-privsep-daemon) reads this option from '
         'root\'s own file, resq-agent-privsep.conf (callers cannot choose '
         'where it writes), and writes only to a mounted resctrl file '
         'system.')

ALL_OPTS = [
    RESCTRL_ROOT_OPT,
    RESCTRL_FAKE_OPT,
    cfg.StrOpt('sysfs_root',
               default='/sys',
               help='Root of sysfs, where the agent reads the CPU cache '
                    'topology (devices/system/cpu/cpu*/cache/index*). '
                    'Change it only for testing.'),
    cfg.StrOpt('libvirt_uri',
               default='qemu:///system',
               help='libvirt connection URI of the hypervisor Nova uses on '
                    'this host (the same as nova.conf [libvirt] '
                    'connection_uri).'),
    metrics_conf.listen_opt(9477),
    cfg.IntOpt('libvirt_timeout',
               default=20, min=1,
               help='Seconds one call to libvirt (connecting included) may '
                    'take. A libvirtd that accepts connections and never '
                    'answers then costs the agent this long once: until '
                    'the hung call returns, further libvirt calls fail at '
                    'once, the agent keeps the partitions it enforces, '
                    'and resq-agent status names libvirt as hung.'),
    cfg.IntOpt('libvirt_retry_interval',
               default=10, min=1,
               help='Seconds between attempts to subscribe to libvirt\'s '
                    'domain events while libvirt is down (at start, or '
                    'after libvirtd restarted). When the subscription comes '
                    'back the agent reconciles at once, as events may have '
                    'been missed.'),
    cfg.IntOpt('event_queue_size',
               default=1024, min=16,
               help='Instance events (Nova notifications, libvirt domain '
                    'events) the agent queues for its one worker. Past '
                    'this many the events are dropped, counted '
                    '(events_dropped in resq-agent status) and replaced by '
                    'a full reconcile, so a flood costs neither memory nor '
                    'threads.'),
    cfg.IntOpt('privsep_timeout',
               default=30, min=1,
               help='Seconds one privileged call (one resctrl write, one '
                    'libpqos call) may take before the agent gives up on '
                    'it. Only that write fails; the other instances of the '
                    'pass are still written, and the next reconcile retries '
                    'it.'),
    cfg.StrOpt('hypervisor_hostname',
               help='Name of this host\'s compute node resource provider '
                    'in Placement (Nova\'s hypervisor hostname). Default: '
                    'libvirt\'s host name, or the fully qualified domain '
                    'name when libvirt is unreachable.'),
    cfg.StrOpt('backend',
               default='resctrl',
               choices=[('resctrl', 'write the resctrl file system through '
                         'oslo.privsep (default, needs Linux 4.10+)'),
                        ('pqos', 'Intel\'s libpqos through the pqos Python '
                         'wrapper (needs libpqos.so.5); falls back to '
                         'resctrl when the library cannot be loaded')],
               help='How cache partitions are enforced.'),
    cfg.StrOpt('pqos_interface',
               default='OS',
               choices=[('OS', 'libpqos on the kernel\'s resctrl file '
                         'system; resctrl must be mounted'),
                        ('MSR', 'libpqos writes the CAT model-specific '
                         'registers itself; resctrl must not be mounted. '
                         'Refused at start: the agent discovers the cache '
                         'through resctrl, so it could never enforce')],
               help='The libpqos interface used when backend = pqos.'),
    cfg.StrOpt('state_dir',
               default='/var/lib/resq-agent',
               help='Directory of the agent\'s own state. With backend = '
                    'pqos it holds pqos-classes.json, which class of '
                    'service each instance was given (libpqos numbers '
                    'classes and cannot name them), so a restarted agent '
                    'finds its classes again. Must survive reboots and be '
                    'writable by the agent.'),
    cfg.StrOpt('cpu_dedicated_set',
               help='The host CPUs Nova pins instances to: the same value '
                    'as nova.conf [compute] cpu_dedicated_set (a list such '
                    'as 0-5,8). Each cache domain reports how many of them '
                    'it holds (trait CUSTOM_RESQ_CORES_<n>), which the '
                    'optimizer plans with. Unset: every CPU of the '
                    'domain.'),
    cfg.IntOpt('default_group_ways',
               default=1, min=0,
               help='Ways kept for the default resctrl group (the host, '
                    'non-ResQ instances) beyond the I/O ways, reserved in '
                    'Placement so no instance can take them. The default '
                    'group always keeps at least min_cbm_bits ways.'),
    cfg.IntOpt('memory_bandwidth_mibps',
               default=0, min=0, max=2 ** 32 - 1,
               help='Memory bandwidth (MiB/s) of each cache domain that '
                    'instances may share, offered to Placement as '
                    'CUSTOM_MEM_BW_MIBPS on the domain\'s provider where the '
                    'kernel offers memory bandwidth allocation (info/MB). '
                    'No kernel file says it: measure what the memory of '
                    'the domain\'s NUMA cell sustains (Intel MLC, STREAM) '
                    'and set somewhat less. With percentage MBA (no '
                    'mba_MBps mount option) it also turns an instance\'s '
                    'MiB/s into its percentage. 0: no bandwidth is offered, '
                    'and flavors that ask for some are not scheduled here.'),
    cfg.IntOpt('default_group_memory_bandwidth_mibps',
               default=0, min=0, max=2 ** 32 - 1,
               help='Memory bandwidth (MiB/s) of each cache domain kept '
                    'for the default resctrl group (the host, instances '
                    'without a ResQ partition): reserved in Placement and '
                    'written as the default group\'s MB limit. 0: none is '
                    'reserved and the default group is not limited; an '
                    'instance\'s bandwidth is then a limit that keeps it to '
                    'its share, not a guarantee against the default '
                    'group.'),
    cfg.BoolOpt('default_group_io_ways',
                default=False,
                help='Let the default resctrl group (the host and non-ResQ '
                     'instances) allocate into the I/O (DDIO) ways. Off, as '
                     'in ResQ: no core allocates into the ways DDIO writes '
                     'packets into, so nothing but DMA evicts them. Turn it '
                     'on only when the host needs those ways for itself '
                     'more than the NFs need their packets to stay in the '
                     'cache.'),
    cfg.IntOpt('ddio_ways',
               default=2, min=0,
               help='Ways DDIO writes incoming packets into, used when the '
                    'platform does not report them (info/L3/shareable_bits '
                    'is 0). They are the highest ways of the cache; no '
                    'instance gets them and they are reserved in '
                    'Placement. Intel Xeons use 2 by default.'),
    cfg.FloatOpt('monitor_min_interval_s',
                 default=0.5, min=0.0,
                 help='Bandwidth is the difference of two resctrl byte '
                      'counters over time; readings closer together than '
                      'this reuse the previous rate.'),
    cfg.IntOpt('host_report_interval',
               mutable=True,
               default=60, min=0,
               help='Seconds between heartbeats of this host to resq-api '
                    'when its report did not change (PUT '
                    '/hosts/<hostname>/heartbeat, no body: the stored '
                    'report\'s updated_at shows an agent that stopped). '
                    'Each wait is this +-10% at random, the first a random '
                    'part of it, so a fleet\'s heartbeats spread. A changed '
                    'report is sent in full (PUT /hosts/<hostname>) after '
                    'the enforcement pass that changed it; occupancy and '
                    'bandwidth alone every 10 intervals. A resq-api older '
                    'than microversion 1.2 gets the full report instead of '
                    'each heartbeat. When resq-api answers 503, 429 or '
                    'another 5xx, or does not answer, the agent waits '
                    'longer: the interval, doubled at each further failure '
                    'up to 10 intervals, at least the Retry-After it gave. '
                    '0 sends changes only. Needs [resq_api].'),
]


def register_opts(conf):
    conf.register_opts(ALL_OPTS, group=GROUP)
    placement_client.register_opts(conf)
    # [resq_api]: where the agent reports isolation status.
    clients.register_opts(conf, clients.RESQ_API)


def list_opts():
    # [placement] is listed once for every program, in resq.clients.
    return [(GROUP, ALL_OPTS)]
