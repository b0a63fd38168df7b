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
"""The ``[resq_optimizer]`` options: the optimal-schedule MILP."""

from oslo_config import cfg

GROUP = 'resq_optimizer'

ALL_OPTS = [
    cfg.FloatOpt('time_limit',
                 default=60.0, min=0.1,
                 help='Seconds the MILP may take, model build included. '
                      'When it runs out the best schedule found so far is '
                      'used, with its proven gap. At ResQ\'s scale (200 '
                      'terms) the optimum is proven in well under a second; '
                      'thousands of terms with individual targets take '
                      'longer.'),
    cfg.FloatOpt('mip_gap',
                 default=0.0, min=0.0, max=1.0,
                 help='Stop as soon as the schedule is proven within this '
                      'fraction of the optimum (0.01 = 1%).'),
    cfg.IntOpt('max_configurations_per_term',
               default=2000, min=10,
               help='Terms with more minimal configurations than this (very '
                    'large throughput targets) are modelled with per-term '
                    'instance counts instead; both are exact, this only '
                    'trades model size for LP strength.'),
]


def register_opts(conf):
    conf.register_opts(ALL_OPTS, group=GROUP)
