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
"""Options of resq-profiler for oslo-config-generator."""

from resq_common.conf import profiles
from resq_common import privsep
from resq_profiler.conf import profiler


def list_opts():
    return ([(profiles.GROUP, [profiles.PROFILE_DIR_OPT]),
             (profiler.GROUP, profiler.ALL_OPTS)]
            + privsep.list_opts('resq_privsep_profiler'))
