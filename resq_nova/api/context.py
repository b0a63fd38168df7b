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

# The target project of what no project owns: no project id is this text
# (Keystone's are hex, and HTTP headers cannot carry a NUL).
NO_PROJECT = '\x00none'


@enginefacade.transaction_context_provider
class RequestContext(context.RequestContext):

    def __init__(self, *args, **kwargs):
        self.config = kwargs.pop('config', None)
        super().__init__(*args, **kwargs)

    def can(self, action, target=None):
        """Authorize ``action`` on ``target`` or raise 403.

        :raises resq_nova.api.errors.Forbidden: naming the rule.
        """
        self._scoped()
        target = dict(target or {})
        target.setdefault('project_id', self.project_id)
        if target['project_id'] is None:
            # Owned by no project (a public profile): oslo.policy would
            # compare the text "None" with the caller's project id.
            target['project_id'] = NO_PROJECT
        if not policy.authorize(self, action, target):
            raise errors.Forbidden(
                'policy does not allow %s for these credentials (project '
                '%s, roles %s); ask an administrator for the role the rule '
                'needs' % (action, self.project_id,
                           ','.join(self.roles) or 'none'),
                code='resq.policy')

    def _scoped(self):
        """403 unless the token is scoped to a project.

        Every rule of resq-api names a project (``scope_types`` project);
        a domain- or system-scoped token has none, and oslo.policy would
        compare ``project_id:%(project_id)s`` as the text "None".

        :raises resq_nova.api.errors.Forbidden: naming what to ask for.
        """
        if not self.project_id:
            raise errors.Forbidden(
                'resq-api serves tokens scoped to a project, and this one '
                'is not; ask Keystone for a project-scoped token (openstack '
                '--os-project-name ...)', code='resq.policy.scope')

    @property
    def is_admin_view(self):
        self._scoped()
        return policy.authorize(self, 'resq:admin_view',
                                {'project_id': self.project_id})
