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
"""The route map of resq-api and the dispatcher that serves it.

``ROUTE_DECLARATIONS`` is the whole API in one place: a path (with
``{name}`` variables) and, per method, the handler function.
"""

import routes

from resq_nova.api import errors
from resq_nova.api.handlers import host
from resq_nova.api.handlers import isolation
from resq_nova.api.handlers import plan
from resq_nova.api.handlers import profile
from resq_nova.api.handlers import root
from resq_nova.api.handlers import slo_term

ROUTE_DECLARATIONS = {
    '/': {'GET': root.home},
    '/profiles': {'GET': profile.list_profiles},
    '/profiles/{profile_id}': {'GET': profile.show_profile,
                               'PUT': profile.put_profile,
                               'DELETE': profile.delete_profile},
    '/slo_terms': {'GET': slo_term.list_terms,
                   'POST': slo_term.create_term},
    '/slo_terms/{uuid}': {'GET': slo_term.show_term,
                          'PATCH': slo_term.update_term,
                          'DELETE': slo_term.delete_term},
    '/snapshots': {'GET': plan.list_snapshots,
                   'POST': plan.create_snapshot},
    '/snapshots/{id}': {'GET': plan.show_snapshot,
                        'DELETE': plan.delete_snapshot},
    '/plans': {'GET': plan.list_plans, 'POST': plan.create_plan},
    '/plans/{plan_id}': {'GET': plan.show_plan},
    '/plans/{plan_id}/apply': {'POST': plan.apply_plan},
    '/plans/{plan_id}/heartbeat': {'POST': plan.heartbeat},
    '/plans/{plan_id}/takeover': {'POST': plan.take_over},
    '/plans/{plan_id}/cancel': {'POST': plan.cancel_plan},
    '/plans/{plan_id}/actions/{index}': {'PUT': plan.put_action},
    '/plans/{plan_id}/result': {'PUT': plan.put_result},
    '/servers/{server_uuid}/isolation': {
        'GET': isolation.show_isolation, 'PUT': isolation.put_isolation},
    '/isolation': {'GET': isolation.list_isolation},
    '/hosts': {'GET': host.list_hosts},
    '/hosts/{hostname}': {'GET': host.show_host, 'PUT': host.put_host},
    '/hosts/{hostname}/heartbeat': {'PUT': host.heartbeat},
}
# Paths answered without a token.
PUBLIC_PATHS = ('/',)


def make_map(declarations):
    mapper = routes.Mapper()
    for path in declarations:
        requirements = {'index': r'[0-9]{1,6}'} if '{index}' in path else {}
        mapper.connect(path, _route=path, requirements=requirements)
    return mapper


class Dispatcher:
    """Find the handler of a request: 404 or 405 with a clear detail."""

    def __init__(self, declarations=None):
        self.declarations = declarations or ROUTE_DECLARATIONS
        self.mapper = make_map(self.declarations)

    def find(self, req):
        match = self.mapper.match(req.path_info.rstrip('/') or '/')
        if match is None:
            raise errors.NotFound('%s is not a resource of resq-api; see the '
                                  'API reference for the paths it serves'
                                  % req.path_info, code='resq.no_route')
        methods = self.declarations[match.pop('_route')]
        handler = methods.get(req.method)
        if handler is None:
            allowed = ', '.join(sorted(methods))
            raise errors.MethodNotAllowed(
                '%s does not take %s; it takes %s' % (
                    req.path_info, req.method, allowed),
                headers={'Allow': allowed})
        req.urlvars = match
        return handler
