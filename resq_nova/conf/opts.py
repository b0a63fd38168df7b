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
"""Options of resq_nova for oslo-config-generator."""

from resq_nova.conf import optimizer
from resq_nova.conf import resq


def list_api_opts():
    """resq-api's own options: [api] and [database]."""
    from resq_nova.api.db import api as db_api
    from resq_nova.conf import api

    return api.list_opts() + db_api.list_opts()


def list_opts():
    return [(resq.GROUP, resq.ALL_OPTS),
            (optimizer.GROUP, optimizer.ALL_OPTS),
            (optimizer.EVALUATION_GROUP, optimizer.EVALUATION_OPTS)]
