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
"""Options of NFVnice on the agent (rate-cost CPU shares, backpressure and
traffic policing), in ``[resq_agent]``."""

from oslo_config import cfg

GROUP = 'resq_agent'

NFVNICE_OPTS = [
    cfg.BoolOpt('nfvnice',
                default=False,
                help='Run NFVnice\'s mechanisms every nfvnice_interval '
                     'seconds: rate-cost proportional CPU shares for the '
                     'on-demand and best-effort instances that share cores, '
                     'and backpressure (ingress policing at the chain\'s '
                     'entry) for the chains of nfvnice_chains_file. Rates '
                     'come from Open vSwitch interface statistics, so '
                     'ovsdb_connection must be set.'),
    cfg.FloatOpt('nfvnice_interval',
                 mutable=True,
                 default=2.0, min=0.5,
                 help='Seconds between NFVnice passes (rates measured, '
                      'shares and policers updated). ovs-vswitchd '
                      'refreshes interface statistics every 5 s by default '
                      '(other_config:stats-update-interval); a shorter '
                      'interval than that only sees the same counters '
                      'again, which count as no change.'),
    cfg.StrOpt('nfvnice_chains_file',
               help='JSON file naming the service chains (name, entry '
                    'port, instances in order with an optional '
                    'cycles_per_packet each). Read again when it changes. '
                    'Unset: no backpressure, and CPU shares take costs '
                    'from the profiles only (nfvnice_profile_dir).'),
    cfg.StrOpt('nfvnice_profile_dir',
               help='Directory of the NF profiles resq-profiler writes (the '
                    'same as [resq] profile_dir, e.g. a shared or synced '
                    'directory). An instance whose flavor names a profile '
                    '(resq:profile) costs cpu_ghz x 1000 / its peak Mpps '
                    'cycles per packet, unless the chains file gives its '
                    'cycles_per_packet. Unset: costs come from the chains '
                    'file only.'),
    cfg.FloatOpt('nfvnice_cpu_ghz',
                 default=2.6, min=0.1,
                 help='Core clock (GHz) that converts a profile\'s '
                      'throughput into cycles per packet. It matters only '
                      'where profile costs meet chains-file costs in one '
                      'group of NFs; set it to the hosts\' nominal '
                      'frequency.'),
    cfg.BoolOpt('cpu_shares',
                default=True,
                help='With nfvnice on: set the CPU weight (libvirt '
                     'cpu_shares) of instances that share cores in '
                     'proportion to arrival rate x cost per packet. '
                     'Instances of flavors with resq:slo=reserved are '
                     'never changed.'),
    cfg.IntOpt('cpu_shares_min',
               default=64, min=2, max=262144,
               help='Smallest share given, e.g. to an NF that receives '
                    'nothing: it still runs. Within libvirt\'s range '
                    '2..262144 (cgroup v2 hosts take at most 10000).'),
    cfg.IntOpt('cpu_shares_max',
               default=10000, min=2, max=262144,
               help='Largest share given. The mean share of a group of '
                    'NFs sharing cores is 1024, the kernel\'s default, so '
                    'it must be at least 1024; 10000 is cgroup v2\'s '
                    'largest weight.'),
    cfg.FloatOpt('cpu_shares_hysteresis',
                 default=0.1, min=0.0, max=1.0,
                 help='Relative change of an instance\'s share (0.1 = '
                      '10%) below which the agent leaves it as it is, so '
                      'that rates that wobble do not rewrite shares every '
                      'pass.'),
    cfg.BoolOpt('backpressure',
                default=True,
                help='With nfvnice on and a chains file: police a chain\'s '
                     'entry port while one of its NFs drops packets, '
                     'instead of letting upstream NFs process packets that '
                     'are dropped later.'),
    cfg.FloatOpt('backpressure_high_drop_ratio',
                 default=0.01, min=0.0, max=1.0,
                 help='Fraction of its arriving packets an NF must drop for '
                      'its chain to be marked and policed (or policed '
                      'harder).'),
    cfg.FloatOpt('backpressure_low_drop_ratio',
                 default=0.001, min=0.0, max=1.0,
                 help='Drop fraction at or below which a marked chain\'s '
                      'NFs count as clear; must be below '
                      'backpressure_high_drop_ratio.'),
    cfg.IntOpt('backpressure_clear_passes',
               default=3, min=1,
               help='Consecutive clear passes before a chain\'s policer is '
                    'raised by policing_release_step (and removed once it '
                    'reaches the rate the chain had when it was marked).'),
    cfg.FloatOpt('policing_margin',
                 default=0.05, min=0.0, max=0.5,
                 help='Headroom below the bottleneck\'s measured capacity '
                      'the policer leaves, so the bottleneck\'s queue '
                      'drains.'),
    cfg.FloatOpt('policing_release_step',
                 default=0.25, min=0.01, max=10.0,
                 help='Relative increase of a policer\'s rate after each '
                      'backpressure_clear_passes clear passes.'),
    cfg.IntOpt('policing_min_kbps',
               default=1000, min=1,
               help='Lowest rate (kbit/s) a policer is set to; a chain '
                    'keeps at least this much input.'),
    cfg.FloatOpt('policing_burst_ratio',
                 default=0.1, min=0.0, max=10.0,
                 help='Policer burst (ingress_policing_burst, kbit) as a '
                      'fraction of its rate, at least 72 kbit (one 9000-byte '
                      'frame).'),
]


def register_opts(conf):
    conf.register_opts(NFVNICE_OPTS, group=GROUP)


def list_opts():
    return [(GROUP, NFVNICE_OPTS)]
