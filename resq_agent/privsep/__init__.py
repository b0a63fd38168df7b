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
"""Privilege separation contexts of resq-nova.

Only the functions in this package's modules run as root; callers write
``import resq_agent.privsep.resctrl`` so each call into root is visible.
The agent runs as an unprivileged user and calls :func:`init` with its own
``ConfigOpts`` once it has parsed it. Root starts one daemon per context
(:mod:`resq_agent.privsep.daemon`); the agent connects to it
(``[resq_privsep_*] daemon_socket``).
"""

from oslo_privsep import capabilities

from resq_common import privsep

# resctrl files are owned by root with mode 0644 and group directories are
# created with mkdir in a root-owned directory: DAC override is all the
# resctrl writes need.
resctrl_pctxt = privsep.PrivContext(
    'resq_agent',
    cfg_section='resq_privsep_resctrl',
    pypath=__name__ + '.resctrl_pctxt',
    capabilities=[capabilities.CAP_DAC_OVERRIDE],
    with_daemon=True,
)

# libpqos: its OS interface writes resctrl files (DAC override), its MSR
# interface writes /dev/cpu/*/msr (raw I/O as well).
pqos_pctxt = privsep.PrivContext(
    'resq_agent',
    cfg_section='resq_privsep_pqos',
    pypath=__name__ + '.pqos_pctxt',
    capabilities=[capabilities.CAP_DAC_OVERRIDE,
                  capabilities.CAP_SYS_RAWIO],
    with_daemon=True,
)

# ovs-ofctl to the bridge's management socket (root's, mode 0750): DAC
# override to connect to it, nothing else.
openflow_pctxt = privsep.PrivContext(
    'resq_agent',
    cfg_section='resq_privsep_openflow',
    pypath=__name__ + '.openflow_pctxt',
    capabilities=[capabilities.CAP_DAC_OVERRIDE],
    with_daemon=True,
)

CONTEXTS = (resctrl_pctxt, pqos_pctxt, openflow_pctxt)


def init(conf):
    """Make the agent's contexts read ``conf`` and its config files.

    Each privileged call waits at most ``[resq_agent] privsep_timeout``.
    """
    for ctx in CONTEXTS:
        ctx.use_conf(conf)
        ctx.timeout = conf.resq_agent.privsep_timeout
