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
queues, guest mbuf budget) and messaging. Registered in ``[resq_agent]``
too, or in groups of their own where noted."""

from oslo_config import cfg

GROUP = 'resq_agent'

ALL_OPTS = [
]


def register_opts(conf):
    conf.register_opts(ALL_OPTS, group=GROUP)


def list_opts():
    return [(GROUP, ALL_OPTS)] if ALL_OPTS else []
