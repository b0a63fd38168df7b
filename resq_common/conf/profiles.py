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
"""The profile store's one option, ``[resq] profile_dir``.

The profiler writes the store and SLO admission reads it, so both register
this same option (resq-nova's ``[resq]`` options and resq-profiler's): a
shared ``resq.conf`` names the store once for every command.
``[resq_profiler] profile_dir`` is its deprecated name; a file that still
sets it works, with a deprecation warning.
"""

from oslo_config import cfg

GROUP = 'resq'

PROFILE_DIR_OPT = cfg.StrOpt(
    'profile_dir',
    default='/var/lib/resq/profiles',
    deprecated_opts=[cfg.DeprecatedOpt('profile_dir',
                                       group='resq_profiler')],
    help='Directory of the NF profile documents (one <profile id>.json '
         'each, and the SLOMO models beside them): the one profile store. '
         'resq-profiler and resq-plan write it; resq-admit and resq-plan '
         'read it. On a cloud, a shared or synchronised directory, set '
         'once in resq.conf. [resq_profiler] profile_dir is its deprecated '
         'name.')


def register_opts(conf):
    conf.register_opt(PROFILE_DIR_OPT, group=GROUP)
