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
"""The plugin's options: ``[resq]`` and ``[service_available] resq``.

The tests run on the machine of the compute hosts, as root (as
whitebox-tempest-plugin reaches its compute hosts over SSH, these read a
host's resctrl tree and ask its libvirtd directly): ``compute_hosts``
says where each Nova compute host keeps them.
"""

from oslo_config import cfg

service_option = cfg.BoolOpt(
    'resq', default=True,
    help='Whether resq-api (service type "resq" in the catalog) and the '
         'rest of resq-nova are expected to be available.')

watcher_service_option = cfg.BoolOpt(
    'watcher', default=False,
    help='Whether Watcher (service type "infra-optim" in the catalog) runs '
         'with resq-nova\'s goal and strategy installed in its decision '
         'engine; the Watcher scenario is skipped when False.')

resq_group = cfg.OptGroup(
    name='resq', title='resq-nova tempest plugin options')

ResQGroup = [
    cfg.DictOpt(
        'compute_hosts', default={},
        help='Nova compute host name -> the state directory of that fake '
             'CAT host (python -m resq_fake.host up --state DIR): its '
             'resctrl file system is served at DIR/resctrl (backing tree '
             'DIR/resctrl-backing), its libvirtd listens on '
             'DIR/run/sock/libvirt-sock. Example: '
             'aio-1:/srv/cloud/hosts/aio-1,aio-2:/srv/cloud/hosts/aio-2'),
    cfg.DictOpt(
        'agent_metrics', default={},
        help='Nova compute host name -> the URL of its resq-agent\'s '
             'Prometheus metrics, e.g. aio-1:http://127.0.0.1:9477/metrics'),
    cfg.StrOpt(
        'example_profile', default='lpm-example',
        help='A profile in resq-api the tests may admit SLO terms for.'),
    cfg.IntOpt(
        'flavor_ram_mb', default=64, min=16,
        help='RAM (MiB) of the flavors of the terms the tests admit.'),
    cfg.StrOpt(
        'optimizer_config', default='/etc/resq/resq-optimizer.conf',
        help='Configuration file the tests run "resq-optimizer '
             '--config-file <this> plan|apply" with.'),
    cfg.BoolOpt(
        'live_migration', default=True,
        help='Whether guests can live-migrate between the compute hosts; '
             'when False the migration test carries out the optimizer\'s '
             'move by a cold migration instead.'),
    cfg.StrOpt(
        'agent_restart_command',
        help='Shell command that restarts the resq-agent of one compute '
             'host and returns once it was started again; "{host}" is '
             'replaced by the Nova compute host name. Unset: the agent '
             'restart test is skipped.'),
    cfg.StrOpt(
        'host_action_command',
        help='Shell command that acts on one compute host for the fault '
             'scenarios; {action} is one of restart-agent, stop-agent, '
             'kill-agent, start-agent, restart-libvirtd and {host} the '
             'host name. '
             'Unset: those scenarios are skipped.'),
    cfg.StrOpt(
        'heat_templates_dir',
        help='Directory of the Heat templates resq-nova ships (etc/heat '
             'of its source tree); the Heat scenario launches '
             'resq-slo-term.yaml from there. Unset: that scenario is '
             'skipped.'),
    cfg.StrOpt(
        'catalog_type', default='resq',
        help='Catalog type of resq-api.'),
    cfg.StrOpt(
        'endpoint_type', default='publicURL',
        choices=['public', 'admin', 'internal', 'publicURL', 'adminURL',
                 'internalURL'],
        help='Endpoint type of resq-api.'),
    cfg.StrOpt(
        'watcher_catalog_type', default='infra-optim',
        help='Catalog type of Watcher\'s API.'),
    cfg.StrOpt(
        'orchestration_catalog_type', default='orchestration',
        help='Catalog type of Heat, which boots the admitted term\'s Heat '
             'template.'),
]
