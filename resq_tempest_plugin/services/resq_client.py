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
"""resq-api (catalog type ``resq``) for the tests: a tempest RestClient.

Only what the tests read or clean up: profiles, SLO terms, host reports,
the optimizer's plans and servers' isolation status. Every request asks
for microversion ``resq 1.0`` (``OpenStack-API-Version``) but a host
report's, which asks 1.1 (its partitioned servers).
"""

from urllib import parse

from oslo_serialization import jsonutils as json
from tempest.lib.common import rest_client

MICROVERSION_HEADER = 'OpenStack-API-Version'


class ResQClient(rest_client.RestClient):
    """The resources of resq-api the scenario tests look at."""

    microversion = '1.0'

    def get_headers(self, accept_type=None, send_type=None):
        headers = super().get_headers(accept_type, send_type)
        headers[MICROVERSION_HEADER] = 'resq %s' % self.microversion
        return headers

    def _at(self, version, call, *args):
        previous, self.microversion = self.microversion, version
        try:
            return call(*args)
        finally:
            self.microversion = previous

    def _show(self, url, params=None):
        if params:
            url = '%s?%s' % (url, parse.urlencode(params))
        resp, body = self.get(url)
        self.expected_success(200, resp.status)
        return rest_client.ResponseBody(resp, json.loads(body))

    def _quote(self, value):
        return parse.quote(str(value), safe='')

    def show_profile(self, profile_id):
        """The profile record; its document is under ``profile``."""
        return self._show('profiles/%s' % self._quote(profile_id))

    def list_terms(self, **params):
        """``{'slo_terms': [...], 'links': [...]}`` (one page)."""
        return self._show('slo_terms', params)

    def show_term(self, uuid):
        return self._show('slo_terms/%s' % self._quote(uuid))

    def delete_term(self, uuid):
        resp, body = self.delete('slo_terms/%s' % self._quote(uuid))
        self.expected_success(204, resp.status)
        return rest_client.ResponseBody(resp, body)

    def show_host(self, hostname):
        """The agent's last report of ``hostname``: domains and servers."""
        return self._at('1.1', self._show,
                        'hosts/%s' % self._quote(hostname))

    def list_hosts(self, **params):
        return self._show('hosts', params)

    def show_plan(self, plan_id):
        return self._show('plans/%s' % self._quote(plan_id))

    def show_isolation(self, server_uuid):
        return self._show('servers/%s/isolation' % self._quote(server_uuid))
