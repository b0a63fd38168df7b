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
"""The tempest plugin (entry point ``tempest.test_plugins = resq-nova``)."""

import os

from oslo_config import cfg
from tempest import config
from tempest.test_discover import plugins

from resq_tempest_plugin import config as project_config


class ResQTempestPlugin(plugins.TempestPlugin):
    """resq-nova's scenario tests, with the ``[resq]`` options."""

    def load_tests(self):
        base_path = os.path.split(os.path.dirname(
            os.path.abspath(__file__)))[0]
        test_dir = os.path.join('resq_tempest_plugin', 'tests')
        return os.path.join(base_path, test_dir), base_path

    def register_opts(self, conf):
        config.register_opt_group(conf, config.service_available_group,
                                  [project_config.service_option])
        try:
            config.register_opt_group(
                conf, config.service_available_group,
                [project_config.watcher_service_option])
        except cfg.DuplicateOptError:
            pass  # watcher-tempest-plugin's own option is the one
        config.register_opt_group(conf, project_config.resq_group,
                                  project_config.ResQGroup)

    def get_opt_lists(self):
        return [(project_config.resq_group.name, project_config.ResQGroup),
                ('service_available', [project_config.service_option,
                                       project_config.watcher_service_option])]
