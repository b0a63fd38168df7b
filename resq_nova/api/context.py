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
"""The request context of resq-api: who asks, and the database session."""

from oslo_context import context
from oslo_db.sqlalchemy import enginefacade

from resq_nova.api import errors
from resq_nova.api import policy


@enginefacade.transaction_context_provider
class RequestContext(context.RequestContext):

    def __init__(self, *args, **kwargs):
        self.config = kwargs.pop('config', None)
        super().__init__(*args, **kwargs)

    def can(self, action, target=None):
        """Authorize ``action`` on ``target`` or raise 403.

        :raises resq_nova.api.errors.Forbidden: naming the rule.
        """
        target = dict(target or {})
        target.setdefault('project_id', self.project_id)
        if not policy.authorize(self, action, target):
            raise errors.Forbidden(
                'policy does not allow %s for these credentials (project '
                '%s, roles %s); ask an administrator for the role the rule '
                'needs' % (action, self.project_id,
                           ','.join(self.roles) or 'none'),
                code='resq.policy')

    @property
    def is_admin_view(self):
        return policy.authorize(self, 'resq:admin_view',
                                {'project_id': self.project_id})
