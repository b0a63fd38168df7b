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
"""Heat's stacks, as much as launching an admitted term's template needs.

Tempest itself no longer ships an orchestration client (it moved to
heat-tempest-plugin, which the tests do not require).
"""

import time

from oslo_serialization import jsonutils as json
from tempest.lib.common import rest_client
from tempest.lib import exceptions as lib_exc


class StackFailed(lib_exc.TempestException):
    message = 'Stack %(stack)s reached %(status)s: %(reason)s'


class OrchestrationClient(rest_client.RestClient):
    """Create, show and delete Heat stacks."""

    def create_stack(self, name, template, parameters=None,
                     timeout_mins=None):
        """Create a stack; ``{'stack': {'id', 'links'}}``."""
        body = {'stack_name': name, 'template': template,
                'parameters': parameters or {}, 'disable_rollback': True}
        if timeout_mins:
            body['timeout_mins'] = timeout_mins
        resp, body = self.post('stacks', json.dumps(body))
        self.expected_success(201, resp.status)
        return rest_client.ResponseBody(resp, json.loads(body))

    def show_stack(self, identifier):
        """``identifier`` is ``<name>/<id>``."""
        resp, body = self.get('stacks/%s' % identifier)
        self.expected_success(200, resp.status)
        return rest_client.ResponseBody(resp, json.loads(body))

    def delete_stack(self, identifier):
        resp, body = self.delete('stacks/%s' % identifier)
        self.expected_success(204, resp.status)
        return rest_client.ResponseBody(resp, body)

    def wait_for_stack_status(self, identifier, status):
        """Wait for ``status``; the stack. A ``*_FAILED`` status raises."""
        deadline = time.monotonic() + self.build_timeout
        while True:
            stack = self.show_stack(identifier)['stack']
            if stack['stack_status'] == status:
                return stack
            if stack['stack_status'].endswith('_FAILED'):
                raise StackFailed(stack=identifier,
                                  status=stack['stack_status'],
                                  reason=stack.get('stack_status_reason'))
            if time.monotonic() > deadline:
                raise lib_exc.TimeoutException(
                    'stack %s is %s, not %s, after %d s: %s' % (
                        identifier, stack['stack_status'], status,
                        self.build_timeout, stack.get('stack_status_reason')))
            time.sleep(self.build_interval)

    def is_resource_deleted(self, identifier):
        try:
            stack = self.show_stack(identifier)['stack']
        except lib_exc.NotFound:
            return True
        if stack['stack_status'] == 'DELETE_FAILED':
            raise StackFailed(stack=identifier, status='DELETE_FAILED',
                              reason=stack.get('stack_status_reason'))
        return stack['stack_status'] == 'DELETE_COMPLETE'

    @property
    def resource_type(self):
        return 'stack'
