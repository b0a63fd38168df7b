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
"""Options of the agent's I/O side: DMA buffer sizing (Open vSwitch DPDK
queues, guest mbuf budget) and messaging, in ``[resq_agent]``; the
keystoneauth options the agent uses to reach Nova's compute API, in
``[nova]``."""

from oslo_config import cfg

from resq_common.conf import clients

GROUP = 'resq_agent'

DMA_OPTS = [
    cfg.BoolOpt('dma_sizing',
                default=True,
                help='Bound in-flight DMA buffers so packet I/O fits in the '
                     'LLC ways DDIO writes into (ResQ\'s leaky-DMA fix): '
                     'size the RX/TX rings of Open vSwitch\'s physical DPDK '
                     'ports and publish a guest mbuf budget per ResQ '
                     'instance. Disable it when another tool owns queue '
                     'sizes.'),
    cfg.IntOpt('dma_packet_bytes',
               default=1518, min=64, max=9216,
               help='Packet size the buffer budget assumes when a flavor '
                    'has no resq:packet_bytes, and always for the physical '
                    'ports (whose traffic mixes every instance). The '
                    'default, an Ethernet MTU frame, is ResQ\'s '
                    'conservative choice; use the largest frame your '
                    'network carries (e.g. 9018 with jumbo frames).'),
    cfg.FloatOpt('dma_ovs_share',
                 default=0.5, min=0.0, max=1.0,
                 help='Fraction of each cache domain\'s DDIO share given to '
                      'Open vSwitch\'s physical DPDK port rings; the rest is '
                      'split evenly among the domain\'s ResQ instances as '
                      'their guest mbuf budget. Use 0 when instances own '
                      'their NICs (SR-IOV, PCI passthrough) and OVS is not '
                      'used for them, 1 to size only OVS and publish no '
                      'guest budget.'),
    cfg.IntOpt('dma_min_descriptors',
               default=64, min=1, max=4096,
               help='Smallest RX/TX ring (descriptors) the agent sets on a '
                    'DPDK port even when DDIO\'s share would call for less '
                    '(rounded down to a power of two). Rings this small '
                    'drop bursts; the agent logs a warning whenever the '
                    'floor overrides the budget.'),
    cfg.IntOpt('dma_min_guest_buffers',
               default=256, min=1,
               help='Smallest guest mbuf budget published, even when '
                    'DDIO\'s share would call for less (logged as a '
                    'warning).'),
    cfg.StrOpt('ovsdb_connection',
               default='unix:/var/run/openvswitch/db.sock',
               help='OVSDB server of the local Open vSwitch, in ovsdbapp '
                    'form (unix:PATH, tcp:IP:PORT). Set it empty on hosts '
                    'without Open vSwitch DPDK; the agent then sizes no '
                    'port rings.'),
    cfg.IntOpt('ovsdb_timeout',
               default=10, min=1,
               help='Seconds one OVSDB operation may take in all, the '
                    'first connection included, before the agent gives up '
                    'and retries at the next reconcile. An ovsdb-server '
                    'that never answers costs this long once; until the '
                    'hung call returns, OVSDB calls fail at once and '
                    'resq-agent status names ovsdb as hung.'),
    cfg.BoolOpt('publish_guest_budget',
                default=True,
                help='Write each ResQ instance\'s mbuf budget into its Nova '
                     'server metadata (keys resq_mbuf_budget and '
                     'resq_packet_bytes), where the guest reads it from the '
                     'metadata service or config drive. Needs the [nova] '
                     'credentials.'),
]

MESSAGING_OPTS = [
    cfg.StrOpt('compute_host',
               help='Nova\'s name of this compute host ([DEFAULT] host in '
                    'nova.conf). The agent acts on Nova notifications whose '
                    'instance is on this host (or on node '
                    'hypervisor_hostname) and listens for RPC on it. '
                    'Default: this machine\'s host name.'),
    cfg.StrOpt('rpc_topic',
               default='resq-agent',
               help='RPC topic the agents listen on; each agent takes the '
                    'server name compute_host under it.'),
    cfg.StrOpt('rpc_version_cap',
               help='Highest agent RPC API version clients send (e.g. '
                    '"1.0"); set it to the oldest agent\'s version during '
                    'rolling upgrades.'),
    cfg.BoolOpt('listen_nova_notifications',
                default=True,
                help='React to Nova versioned notifications (instance '
                     'create, delete, power, migration) at once instead of '
                     'waiting for the periodic reconcile. Needs nova.conf '
                     '[notifications] notification_format = both (versioned '
                     'alone turns off the unversioned notifications other '
                     'consumers read) and [oslo_messaging_notifications] '
                     'driver = messagingv2.'),
    cfg.StrOpt('nova_control_exchange',
               default='nova',
               help='Exchange Nova publishes its notifications on '
                    '(nova.conf [DEFAULT] control_exchange).'),
    cfg.StrOpt('nova_notification_topic',
               default='versioned_notifications',
               help='Topic of Nova\'s versioned notifications '
                    '(nova.conf [notifications] versioned_notifications_'
                    'topics).'),
    cfg.ListOpt('notification_topics',
                default=['resq_notifications'],
                help='Topics the agent sends its own status and monitoring '
                     'notifications to (resq.agent.status, '
                     'resq.instance.monitor).'),
    cfg.IntOpt('reconcile_interval',
               mutable=True,
               default=60, min=0,
               help='Seconds between full reconciles (the backstop when an '
                    'event is missed). 0 disables the periodic pass.'),
    cfg.IntOpt('status_notification_interval',
               mutable=True,
               default=60, min=0,
               help='Seconds between monitoring notifications (LLC '
                    'occupancy and memory bandwidth per instance). 0 '
                    'disables them.'),
    cfg.IntOpt('messaging_retry_interval',
               mutable=True,
               default=10, min=1,
               help='Seconds between attempts to start the RPC server and '
                    'notification listener while RabbitMQ is unreachable. '
                    'Enforcement continues meanwhile.'),
]

ALL_OPTS = DMA_OPTS + MESSAGING_OPTS


def register_opts(conf):
    conf.register_opts(ALL_OPTS, group=GROUP)
    clients.register_opts(conf, clients.NOVA)


def list_opts():
    # [nova] is listed once for every program, in resq.clients.
    return [(GROUP, ALL_OPTS)]
