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
"""The ``[resq]`` options, read by resq-nova code in Nova's processes and by
the resq-nova commands."""

from oslo_config import cfg

from resq_common.conf import profiles

GROUP = 'resq'

ALL_OPTS = [
    profiles.PROFILE_DIR_OPT,
    cfg.FloatOpt('load_discount',
                 default=0.03, min=0.0, max=0.5,
                 help='Fraction taken off the latency-derived load cap of '
                      'every instance, to absorb the small degradation that '
                      'remains under isolation (ResQ uses 3%). Raise it if '
                      'monitoring shows SLO terms missing their throughput '
                      'by a few percent.'),
    cfg.IntOpt('server_cores',
               default=9, min=1,
               help='Dedicated cores per server available to ResQ '
                    'instances, for planning (resq-plan). Nova-driven '
                    'admission reads the real figure from Placement.'),
    cfg.IntOpt('server_ways',
               default=18, min=1,
               help='LLC ways per server available to ResQ instances '
                    '(excluding the ways DDIO uses), for planning.'),
    cfg.FloatOpt('weigher_multiplier',
                 default=10.0,
                 help='Multiplier of the ResQ weigher, which prefers the '
                      'host whose cores are fullest after placing a ResQ '
                      'instance (first-fit packing). Nova normalises every '
                      'weigher to 0..1 before multiplying, so 10 makes '
                      'packing dominate the default weighers (multipliers '
                      'of 1); negative values spread instead. It has no '
                      'effect on requests without resq: extra specs.'),
    cfg.IntOpt('cell_map_refresh_s',
               default=60, min=1,
               help='Seconds the scheduler filter keeps the map of NUMA '
                    'cells to cache-domain providers it reads from '
                    'Placement (the agents\' CUSTOM_RESQ_NUMA_<cell> '
                    'traits) before reading it again. A host whose agent '
                    'has not published the traits yet is taken as having '
                    'cache domain N serve NUMA cell N.'),
]


def register_opts(conf):
    conf.register_opts(ALL_OPTS, group=GROUP)
