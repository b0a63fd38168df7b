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
"""Default policy of resq-api, in code (oslopolicy-sample-generator)."""

import itertools

from resq_nova.api.policies import base
from resq_nova.api.policies import host
from resq_nova.api.policies import isolation
from resq_nova.api.policies import plan
from resq_nova.api.policies import profile
from resq_nova.api.policies import slo_term


def list_rules():
    return list(itertools.chain(
        base.list_rules(), profile.list_rules(), slo_term.list_rules(),
        plan.list_rules(), isolation.list_rules(), host.list_rules()))
