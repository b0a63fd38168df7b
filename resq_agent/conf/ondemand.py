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
"""The ``[resq_agent]`` options of on-demand SLOs (the lease and the local
scheduler)."""

from oslo_config import cfg

GROUP = 'resq_agent'

ALL_OPTS = [
    cfg.IntOpt('ondemand_ways',
               default=0, min=0,
               help='Ways of each cache domain leased to on-demand NFs '
                    '(flavors with resq:slo=on-demand). They are taken out '
                    'of the CUSTOM_LLC_WAY inventory offered to reserved '
                    'SLOs (reported as reserved), so no reserved instance '
                    'is ever placed on them, and the domain reports '
                    'CUSTOM_RESQ_ONDEMAND_CORE for on-demand flavors. 0 '
                    '(the default): the host takes no on-demand NFs and '
                    'nothing changes. The lease must hold at least '
                    'min_cbm_bits ways to be usable.'),
    cfg.IntOpt('ondemand_cores',
               default=0, min=0,
               help='How many pinned cores on-demand NFs may hold in each '
                    'cache domain with a lease: reported to Placement as '
                    'CUSTOM_RESQ_ONDEMAND_CORE, which on-demand flavors ask '
                    'for (one per vCPU), so no more on-demand NFs land on '
                    'a domain than its lease is meant for. 0: every '
                    'dedicated core of the domain. Nova still pins the '
                    'cores (PCPU); this only caps the on-demand ones.'),
    cfg.BoolOpt('ondemand_lend_spare',
                default=True,
                help='Lend the reserved ways no reserved instance uses to '
                     'the on-demand lease, and take them back as reserved '
                     'instances arrive (the local scheduler then starts '
                     'over in the smaller lease). Off: the lease is exactly '
                     'ondemand_ways.'),
    cfg.IntOpt('ondemand_classes',
               default=4, min=1,
               help='Classes of service the local scheduler may use for '
                    'on-demand NFs in each cache domain. Each is a resctrl '
                    'group, a host-wide class, so a host with n cache '
                    'domains keeps n times this many out of the '
                    'platform\'s num_closids, which reserved instances '
                    'need too. When more NFs need a class of their own, '
                    'they are grouped (min-cost flow).'),
    cfg.StrOpt('ondemand_policy',
               default='resq',
               choices=[('resq', 'ResQ §5.3.2: one shared class, then on '
                         'violations the max-min fair split, isolating '
                         'violators that miss a lot'),
                        ('durner', 'Durner et al.: profile-free, each '
                         'period one more way for the busiest NF, keeping '
                         'the allocation with the lowest maximum load'),
                        ('shared', 'one class over the whole lease; never '
                         'split (a baseline)')],
               help='How the local scheduler splits the lease among '
                    'on-demand NFs.'),
    cfg.FloatOpt('ondemand_settle_s',
                 default=10.0, min=0.0,
                 help='Seconds after any change of the on-demand masks '
                      'before readings are believed again: the cache '
                      'refills and the latency follows (Durner et al. '
                      'measured 4 s of transient; ResQ waits "a period of '
                      'time").'),
    cfg.FloatOpt('ondemand_high_miss_mbps',
                 default=100.0, min=0.0,
                 help='Memory bandwidth (MB/s, from MBM) from which a '
                      'violating on-demand NF counts as missing a lot, and '
                      'so is isolated instead of shared.'),
    cfg.StrOpt('ondemand_latency_source',
               default='jsonlines',
               help='The latency source plugin (entry point namespace '
                    'resq_agent.latency_sources): "jsonlines" reads what '
                    'each NF appends to <ondemand_latency_dir>/<instance '
                    'uuid>.jsonl; "scripted" replays '
                    'ondemand_latency_script (tests only).'),
    cfg.StrOpt('ondemand_latency_dir',
               default='/var/lib/resq-agent/latency',
               help='Directory of the jsonlines latency source: one file '
                    '<instance uuid>.jsonl per on-demand NF, each line '
                    '{"time": <unix s>, "latency_us": <µs>}.'),
    cfg.StrOpt('ondemand_slomo_dir',
               help='Directory of SLOMO models (<profile id>.slomo, as '
                    '"resq-profiler slomo-train" stores them beside the '
                    'profiles). When set, a violating on-demand NF that '
                    'misses little but that its model predicts cannot carry '
                    'its offered rate (the "mpps" its latency source '
                    'reports) next to the other sharers gets a class of its '
                    'own instead of the shared one. Unset: ResQ\'s rule '
                    'alone.'),
    cfg.StrOpt('ondemand_profile_dir',
               help='Directory of the NF profiles resq-profiler writes '
                    '(<profile id>.json; the same as [resq] profile_dir, '
                    'e.g. a shared or synced directory). When an on-demand '
                    'NF\'s flavor names a profile (resq:profile) found '
                    'there, its throughput-vs-ways curve shapes the NF\'s '
                    'miss-ratio curve, which prices the classes the local '
                    'scheduler groups NFs into. Unset: ondemand_slomo_dir '
                    '(the models sit beside their profiles), and with '
                    'neither set every curve is fitted to the NF\'s CMT/MBM '
                    'readings under the allocations it has had.'),
    cfg.StrOpt('ondemand_latency_script',
               help='JSON script of the scripted latency source (tests and '
                    'devstack hosts without NFs).'),
    cfg.FloatOpt('ondemand_latency_max_age_s',
                 default=30.0, min=0.1,
                 help='An NF whose latency source reported nothing for '
                      'this long counts as failed: the local scheduler '
                      'keeps its masks and logs which source stopped.'),
    cfg.IntOpt('ondemand_latency_max_samples',
               default=1000, min=1,
               help='More samples than this from one NF in one period is a '
                    'flood: the source counts as failed for the period.'),
    cfg.StrOpt('optimizer_topic',
               default='resq_optimizer',
               help='RPC topic of resq-optimizer ([resq_optimizer] '
                    'rpc_topic there), where the agent escalates on-demand '
                    'NFs the host cannot keep within their target.'),
]


def register_opts(conf):
    conf.register_opts(ALL_OPTS, group=GROUP)


def list_opts():
    return [(GROUP, ALL_OPTS)]
