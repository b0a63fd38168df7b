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
"""Defaults the CLI shares with the services: their option defaults.

The commands that work on local state (profiles, optimizer plans) take
their directories from options of their own; without them they use the
defaults of ``[resq] profile_dir`` and ``[resq_optimizer] state_dir``, the
places the services use on a controller.
"""

import os

from oslo_config import cfg

from resq_nova import conf as nova_conf


def service_conf(state_dir=None):
    """A ``ConfigOpts`` with resq-nova's options at their defaults.

    :param state_dir: overrides ``[resq_optimizer] state_dir``.
    """
    conf = cfg.ConfigOpts()
    nova_conf.register_opts(conf)
    conf([], project='resq', default_config_files=[])
    if state_dir:
        conf.set_override('state_dir', os.path.abspath(state_dir),
                          'resq_optimizer')
    return conf


def add_profile_dir(parser):
    parser.add_argument(
        '--profile-dir', metavar='<dir>',
        help='profile store (default: [resq] profile_dir, %s)'
        % service_conf().resq.profile_dir)


def profile_dir(parsed_args):
    return parsed_args.profile_dir or service_conf().resq.profile_dir


def add_state_dir(parser):
    parser.add_argument(
        '--state-dir', metavar='<dir>',
        help='optimizer state: plans and snapshots (default: '
        '[resq_optimizer] state_dir, %s)'
        % service_conf().resq_optimizer.state_dir)
