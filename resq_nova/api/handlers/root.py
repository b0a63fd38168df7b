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
"""``GET /``: the versions document (no authentication)."""

from resq_nova.api import handlers
from resq_nova.api import microversion


def home(req):
    return handlers.respond({'versions': [{
        'id': 'v%s' % microversion.VERSIONS[0],
        'min_version': microversion.VERSIONS[0],
        'max_version': microversion.VERSIONS[-1],
        'status': 'CURRENT',
        'links': [{'rel': 'self', 'href': req.application_url + '/'}],
    }]})
