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
"""Watcher's API (catalog type ``infra-optim``) for the tests.

Only what the Watcher scenario uses: audit templates, audits, action
plans (start one) and their actions, at Watcher's v1 API.
"""

from urllib import parse

from oslo_serialization import jsonutils as json
from tempest.lib.common import rest_client
from tempest.lib import exceptions as lib_exc


class WatcherClient(rest_client.RestClient):
    """Audit templates, audits, action plans and actions."""

    def _url(self, path, params=None):
        url = 'v1/%s' % path
        if params:
            url = '%s?%s' % (url, parse.urlencode(params))
        return url

    def _get(self, path, params=None):
        resp, body = self.get(self._url(path, params))
        self.expected_success(200, resp.status)
        return rest_client.ResponseBody(resp, json.loads(body))

    def _create(self, path, doc):
        resp, body = self.post(self._url(path), json.dumps(doc))
        self.expected_success(201, resp.status)
        return rest_client.ResponseBody(resp, json.loads(body))

    def _delete(self, path):
        resp, body = self.delete(self._url(path))
        self.expected_success(204, resp.status)
        return rest_client.ResponseBody(resp, body)

    def create_audit_template(self, name, goal, strategy=None):
        doc = {'name': name, 'goal': goal}
        if strategy:
            doc['strategy'] = strategy
        return self._create('audit_templates', doc)

    def delete_audit_template(self, uuid):
        return self._delete('audit_templates/%s' % uuid)

    def create_audit(self, template_uuid, parameters=None,
                     audit_type='ONESHOT'):
        doc = {'audit_template_uuid': template_uuid,
               'audit_type': audit_type}
        if parameters:
            doc['parameters'] = parameters
        return self._create('audits', doc)

    def show_audit(self, uuid):
        return self._get('audits/%s' % uuid)

    def delete_audit(self, uuid):
        return self._delete('audits/%s' % uuid)

    def list_action_plans(self, audit_uuid):
        return self._get('action_plans/detail',
                         {'audit_uuid': audit_uuid})['action_plans']

    def show_action_plan(self, uuid):
        return self._get('action_plans/%s' % uuid)

    def start_action_plan(self, uuid):
        """What ``openstack optimize actionplan start`` asks for."""
        patch = [{'op': 'replace', 'path': '/state', 'value': 'PENDING'}]
        resp, body = self.patch(self._url('action_plans/%s' % uuid),
                                json.dumps(patch))
        self.expected_success(200, resp.status)
        return rest_client.ResponseBody(resp, json.loads(body))

    def delete_action_plan(self, uuid):
        return self._delete('action_plans/%s' % uuid)

    def list_actions(self, action_plan_uuid):
        return self._get('actions/detail', {
            'action_plan_uuid': action_plan_uuid})['actions']

    def delete_quietly(self, kind, uuid):
        """Clean-up: ``kind`` (audit, action_plan, ...) unless gone."""
        try:
            getattr(self, 'delete_%s' % kind)(uuid)
        except lib_exc.NotFound:
            pass
