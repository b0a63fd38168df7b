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
"""What every resq-nova console script does first."""

import sys

from oslo_config import cfg
from oslo_log import log as logging


def parse_config(argv, prog, register, cli_opts=()):
    """A fresh ``ConfigOpts`` with logging, the groups and CLI options.

    :param register: functions ``conf -> None`` registering option groups.
    """
    conf = cfg.ConfigOpts()
    logging.register_options(conf)
    for fn in register:
        fn(conf)
    conf.register_cli_opts(list(cli_opts))
    conf(sys.argv[1:] if argv is None else argv, project='resq', prog=prog)
    logging.setup(conf, prog)
    return conf
