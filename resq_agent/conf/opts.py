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
"""Options of resq_agent for oslo-config-generator."""

from resq_agent.conf import agent
from resq_agent.conf import dma
from resq_agent.conf import nfvnice
from resq_agent.conf import ondemand
from resq_common import privsep


def list_opts():
    return (agent.list_opts() + dma.list_opts() + nfvnice.list_opts()
            + ondemand.list_opts()
            + privsep.list_opts('resq_privsep_resctrl', 'resq_privsep_pqos',
                                'resq_privsep_openflow', with_daemon=True))


def list_privsep_opts():
    """Root's file of the privileged daemons (resq-agent-privsep.conf).

    The daemon reads these and nothing of the agent's own files.
    """
    from resq_agent.privsep import daemon

    return [(agent.GROUP, [agent.RESCTRL_ROOT_OPT, agent.RESCTRL_FAKE_OPT]
             + list(nfvnice.OPENFLOW_OPTS)),
            (daemon.GROUP, daemon.OPTS)]
