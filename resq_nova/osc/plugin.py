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
"""OpenStackClient plugin module: ``openstack.cli.extension = resq``.

OpenStackClient calls :func:`make_client` the first time a command uses
``client_manager.resq``; the client talks to Placement and Nova through
keystoneauth adapters on the CLI's authenticated session, so the service
catalog (or ``placement_endpoint_override`` / ``compute_endpoint_override``
in ``clouds.yaml``) says where they are; resq-api is the catalog's
``resq`` service (or ``resq_endpoint_override``), asked at the
microversion ``--os-resq-api-version`` names.

Without Keystone (a resq-api with ``[api] auth_strategy = noauth2``),
``--os-auth-type admin_token --os-endpoint URL --os-token TOKEN`` sends
TOKEN to URL, which is resq-api's alone: there is no catalog, so Placement
and Nova are reached only where ``placement_endpoint_override`` /
``compute_endpoint_override`` (``OS_PLACEMENT_ENDPOINT_OVERRIDE``,
``OS_COMPUTE_ENDPOINT_OVERRIDE``) name them; without one, a command that
needs the service says so instead of sending its request to resq-api.
"""

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import http_basic
from keystoneauth1 import noauth
from keystoneauth1 import token_endpoint
from osc_lib import utils

from resq_nova.osc import client as client_mod

from resq_common.clients import resq as resq_client

DEFAULT_API_VERSION = '1.0'
API_NAME = 'resq'
API_VERSION_OPTION = 'os_resq_api_version'
# '1' is the major version alone: its first microversion.
API_VERSIONS = {'1': 'resq_nova.osc.client.ResQClient',
                '1.0': 'resq_nova.osc.client.ResQClient',
                '1.1': 'resq_nova.osc.client.ResQClient'}


# keystoneauth plugins with one endpoint (--os-endpoint) and no catalog.
ENDPOINT_ONLY = (token_endpoint.Token, noauth.NoAuth,
                 http_basic.HTTPBasicAuth)
NAMES = {'placement': 'Placement', 'compute': 'Nova'}


class _NoEndpoint(ks_adapter.Adapter):
    """A service without a catalog or an endpoint override: says so."""

    def request(self, url, method, **kwargs):
        kind = self.service_type
        raise ks_exc.EndpointNotFound(
            'no %(name)s endpoint: without Keystone, --os-endpoint is '
            'resq-api\'s alone; set OS_%(env)s_ENDPOINT_OVERRIDE to a '
            '%(name)s that accepts the token (with its own noauth2)' % {
                'name': NAMES.get(kind, kind), 'env': kind.upper()})


def _adapter(instance, service_type):
    # The CLI's options may name an endpoint of their own for a service.
    override = instance.get_configuration().get(
        '%s_endpoint_override' % service_type)
    cls = ks_adapter.Adapter
    if (override is None and service_type in NAMES
            and isinstance(getattr(instance, 'auth', None), ENDPOINT_ONLY)):
        cls = _NoEndpoint
    return cls(
        session=instance.session, service_type=service_type,
        interface=instance.interface, region_name=instance.region_name,
        endpoint_override=override, raise_exc=False)


def make_client(instance):
    """The ``resq`` client of an OpenStackClient ``ClientManager``."""
    version = (getattr(instance, '_api_version', None) or {}).get(
        API_NAME) or DEFAULT_API_VERSION
    if version == '1':
        version = '1.0'
    return client_mod.ResQClient.from_adapters(
        _adapter(instance, 'placement'), _adapter(instance, 'compute'),
        _adapter(instance, resq_client.SERVICE_TYPE), version)


def build_option_parser(parser):
    """Add ``--os-resq-api-version`` to the ``openstack`` parser."""
    parser.add_argument(
        '--os-resq-api-version', metavar='<resq-api-version>',
        default=utils.env('OS_RESQ_API_VERSION',
                          default=DEFAULT_API_VERSION),
        help='resq-api microversion, default=%s '
             '(Env: OS_RESQ_API_VERSION)' % DEFAULT_API_VERSION)
    return parser
