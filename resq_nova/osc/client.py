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
"""The ``resq`` client of the CLI, and the one-line errors it shows.

:class:`ResQClient` holds resq-nova's own Placement and compute clients on
keystoneauth adapters (``raise_exc=False``: the clients check each
response themselves). :func:`command_error` turns whatever those raise into
an :class:`osc_lib.exceptions.CommandError` with one line that says what is
missing and how to fix it; :func:`translate_errors` applies it to a
command's ``take_action``.
"""

import functools

from keystoneauth1 import exceptions as ks_exc
from openstack import exceptions as sdk_exc
from osc_lib import exceptions

from resq_common.clients import compute as compute_mod
from resq_common.clients import placement as placement_client
from resq_common.clients import resq as resq_client
from resq_common import exception
from resq_common import extra_specs

CREDENTIALS = ('pass --os-cloud with a cloud from clouds.yaml, or set '
               'OS_AUTH_URL, OS_USERNAME, OS_PASSWORD and OS_PROJECT_NAME')
# keystoneauth's plugins that take an endpoint instead of Keystone.
ENDPOINT_AUTH_TYPES = ('admin_token', 'token_endpoint', 'none', 'noauth',
                       'http_basic')
NO_KEYSTONE = ('without Keystone, give resq-api\'s address and a token: '
               '--os-auth-type admin_token --os-endpoint URL --os-token '
               'TOKEN (resq-api with noauth2: "admin", or '
               '"<user>:<project>")')


class ResQClient:
    """What ``openstack resq`` commands talk to: Placement, Nova, resq-api."""

    def __init__(self, placement, compute, service=None):
        self.placement = placement
        self.compute = compute
        self.service = service

    @classmethod
    def from_adapters(cls, placement_adapter, compute_adapter,
                      resq_adapter=None, microversion=resq_client.MV_BASE):
        service = None
        if resq_adapter is not None:
            service = resq_client.ResQClient(resq_adapter,
                                             microversion=microversion)
        return cls(placement_client.PlacementClient(placement_adapter),
                   compute_mod.ComputeClient(compute_adapter), service)


class AuthenticatedCommand:
    """Mixin: authenticate inside the command, so failures read well.

    OpenStackClient authenticates before a command with ``auth_required``
    runs and prints keystoneauth's own error; these commands set it to
    false and authenticate when they first need the cloud
    (:func:`get_client`), where :func:`translate_errors` can say how to fix
    the credentials.
    """

    auth_required = False


def _authenticate(app):
    manager = app.client_manager
    cloud_config = getattr(app, 'cloud_config', None)
    if cloud_config is None or getattr(manager, '_auth_setup_completed',
                                       True):
        return
    # What osc-lib's shell does for a command that requires auth.
    cloud = cloud_config.get_one(cloud=app.options.cloud,
                                 argparse=app.options, validate=True)
    app.cloud = manager._cli_options = cloud
    manager._auth_required = True
    manager.setup_auth()
    manager.session.auth.auth_ref = manager.auth_ref


def get_client(app):
    """The ``resq`` client of ``app``'s client manager, authenticated.

    :raises osc_lib.exceptions.CommandError: naming what is missing.
    """
    try:
        _authenticate(app)
    except (exceptions.CommandError, exceptions.AuthorizationFailure,
            sdk_exc.ConfigException) as exc:
        raise exceptions.CommandError(
            'cannot authenticate: %s; %s' % (exc, CREDENTIALS))
    except (ks_exc.ConnectFailure, ks_exc.ConnectTimeout,
            ks_exc.DiscoveryFailure) as exc:
        raise exceptions.CommandError(' '.join((
            'cannot reach the identity service (%s); check OS_AUTH_URL or '
            'the auth_url of your cloud in clouds.yaml' % exc).split()))
    except TypeError as exc:
        # keystoneauth builds an endpoint plugin without its arguments.
        auth_type = getattr(getattr(app, 'options', None), 'auth_type', None)
        if auth_type not in ENDPOINT_AUTH_TYPES:
            raise
        raise exceptions.CommandError(
            '--os-auth-type %s is missing an argument (%s); %s'
            % (auth_type, exc, NO_KEYSTONE))
    return app.client_manager.resq


def _status(exc):
    """The HTTP status at the start of a client error's reason, or None."""
    reason = str(exc.kwargs.get('reason', ''))
    head = reason.split(' ', 1)[0]
    return int(head) if head.isdigit() else None


def _message(exc):
    if isinstance(exc, ks_exc.MissingAuthPlugin):
        return 'no credentials to reach the cloud; %s' % CREDENTIALS
    if isinstance(exc, ks_exc.Unauthorized):
        return ('authentication failed (%s); check the user name, password '
                'and project: %s' % (exc, CREDENTIALS))
    if isinstance(exc, placement_client.PlacementUnavailable):
        return ('cannot reach Placement (%s); check that the service '
                'catalog of your cloud has a "placement" endpoint (or set '
                'placement_endpoint_override in clouds.yaml) and that '
                'placement-api is running' % exc.kwargs.get('reason'))
    if isinstance(exc, compute_mod.ComputeUnavailable):
        return ('cannot reach Nova (%s); check that the service catalog of '
                'your cloud has a "compute" endpoint (or set '
                'compute_endpoint_override in clouds.yaml) and that nova-api '
                'is running' % exc.kwargs.get('reason'))
    if isinstance(exc, resq_client.ResQAPIUnavailable):
        return ('cannot reach resq-api (%s); check that the service catalog '
                'of your cloud has a "resq" endpoint (or set '
                'resq_endpoint_override in clouds.yaml) and that resq-api is '
                'running' % exc.kwargs.get('reason'))
    if isinstance(exc, resq_client.ResQAPIError):
        return str(exc)
    if isinstance(exc, (placement_client.PlacementError,
                        compute_mod.ComputeError)):
        service = ('Placement' if isinstance(
            exc, placement_client.PlacementError) else 'Nova')
        status = _status(exc)
        if status == 401:
            return ('%s did not accept the token (%s); check the '
                    'credentials: %s' % (service, exc, CREDENTIALS))
        if status == 403:
            return ('%s denied the request (%s); the resq commands read '
                    'every provider and server: use a project where your '
                    'user has the admin role' % (service, exc))
        return str(exc)
    if isinstance(exc, (exception.ResQException,
                        extra_specs.InvalidResQSpec)):
        return str(exc)
    if isinstance(exc, ks_exc.ClientException):
        return 'cannot talk to the cloud (%s); %s' % (exc, CREDENTIALS)
    return None


def command_error(exc):
    """A one-line ``CommandError`` for ``exc``, or None if it is a bug."""
    message = _message(exc)
    if message is None:
        return None
    return exceptions.CommandError(' '.join(message.split()))


def translate_errors(take_action):
    """Decorate ``take_action`` so known failures become one line."""

    @functools.wraps(take_action)
    def wrapper(self, parsed_args):
        try:
            return take_action(self, parsed_args)
        except exceptions.CommandError:
            raise
        except Exception as exc:
            error = command_error(exc)
            if error is None:
                raise
            raise error from None
    return wrapper
