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

# Read by the privileged side too (resq_agent.privsep.openflow), from
# root's own configuration: which bridge it may program, and where.
OPENFLOW_OPTS = [
    cfg.StrOpt('nfvnice_bridge',
               help='The Open vSwitch bridge (e.g. br-int), or its '
                    'OpenFlow management socket (unix:/path/br.mgmt), '
                    'NFVnice reads and programs over OpenFlow through '
                    'ovs-ofctl: fresh port counters every pass (not the '
                    'database\'s statistics, which ovs-vswitchd refreshes '
                    'every 5 s), and one meter and flow per chain with a '
                    '"match" in the chains file, so backpressure '
                    'throttles that chain only. The bridge must speak '
                    'OpenFlow 1.3. Unset: counters from the database and '
                    'backpressure by entry-port policers.'),
    cfg.IntOpt('nfvnice_meter_base',
               default=0xE000, min=1, max=0xFFFF0000,
               help='First OpenFlow meter id the agent may use; it owns '
                    'nfvnice_meter_count ids from there and no other.'),
    cfg.IntOpt('nfvnice_meter_count',
               default=1024, min=1, max=65536,
               help='How many meter ids the agent owns (one per chain).'),
    cfg.IntOpt('nfvnice_flow_priority',
               default=65000, min=1, max=65535,
               help='Priority of the agent\'s per-chain flows in table 0: '
                    'above every flow of the pipeline that handles the '
                    'chains\' packets at their entry port.'),
    cfg.IntOpt('nfvnice_mark_register',
               default=15, min=0, max=15,
               help='Register whose bit 0 marks a packet the agent\'s '
                    'chain flow has metered, before it is resubmitted to '
                    'table 0; pick one the pipeline leaves at 0 in table '
                    '0.'),
]

NFVNICE_OPTS = [
    cfg.BoolOpt('nfvnice',
                default=False,
                help='Run NFVnice\'s mechanisms every nfvnice_interval '
                     'seconds: rate-cost proportional CPU shares for the '
                     'on-demand and best-effort instances that share cores, '
                     'and backpressure (ingress policing at the chain\'s '
                     'entry) for the chains of nfvnice_chains_file. Rates '
                     'come from Open vSwitch interface statistics, or from '
                     'OpenFlow counters with nfvnice_bridge; '
                     'ovsdb_connection must be set either way (it maps '
                     'ports to instances).'),
    cfg.FloatOpt('nfvnice_interval',
                 mutable=True,
                 default=2.0, min=0.01,
                 help='Seconds between NFVnice passes (rates measured, '
                      'shares and meters updated). With nfvnice_bridge '
                      'the counters are fresh every pass and the fastest '
                      'period is what a pass costs (the agent reports it: '
                      'resq-agent nfvnice, and admin/nfvnice.html gives '
                      'the measured figure). Without it ovs-vswitchd '
                      'refreshes interface statistics every 5 s '
                      '(other_config:stats-update-interval), and a '
                      'shorter interval only sees the same counters '
                      'again.'),
    cfg.BoolOpt('nfvnice_measure_costs',
                default=True,
                help='Measure each NF\'s cost per packet as the guest CPU '
                     'time libvirt reports over the packets OVS delivered '
                     'to it, in passes where the NF drops packets (then it '
                     'was busy all the time, so its CPU time is packet '
                     'work; a poll-mode NF burns its core whatever its '
                     'load). The measurement is smoothed and wins over '
                     'profile costs; a chains-file cycles_per_packet wins '
                     'over both.'),
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
                default=False,
                help='With nfvnice on and a chains file: throttle a chain '
                     'at its entry (its own meter with nfvnice_bridge and '
                     'a "match", else the entry port\'s policer) while one '
                     'of its NFs drops packets, instead of letting '
                     'upstream NFs process packets that are dropped later. '
                     'Off by default: at the period an agent can hold it '
                     'saves CPU on steady overload but loses throughput '
                     'when load changes faster than the period (see '
                     'admin/nfvnice.html).'),
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
    conf.register_opts(NFVNICE_OPTS + OPENFLOW_OPTS, group=GROUP)


def list_opts():
    return [(GROUP, NFVNICE_OPTS + OPENFLOW_OPTS)]
