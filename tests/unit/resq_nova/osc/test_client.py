"""The CLI plugin's client and the one-line errors it shows."""

import http.server
import json
import os
import socket
import subprocess
import sys
import threading

import fixtures
from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import session as ks_session
from osc_lib import exceptions
import testtools

from resq_common.clients import compute as compute_mod
from resq_common.clients import placement as placement_client
from resq_common.conf import clients
from resq_nova.osc import client
from resq_nova.osc import cloud
from resq_nova.osc import plugin
from resq_nova.osc.v1 import host as host_cmd
from resq_profiler import exception


def _closed_port():
    """A local port nothing listens on."""
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


class RefusingKeystone(http.server.BaseHTTPRequestHandler):
    """An identity service that knows no user: every token request 401."""

    def _send(self, status, doc):
        body = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        port = self.server.server_address[1]
        self._send(200, {'version': {
            'id': 'v3.14', 'status': 'stable',
            'links': [{'rel': 'self',
                       'href': 'http://127.0.0.1:%d/v3/' % port}]}})

    def do_POST(self):
        self.rfile.read(int(self.headers.get('Content-Length', 0)))
        self._send(401, {'error': {
            'code': 401, 'title': 'Unauthorized',
            'message': 'The request you have made requires '
                       'authentication.'}})

    def log_message(self, *args):
        pass


class FakeInstance:
    """What make_client() reads of OpenStackClient's ClientManager."""

    interface = 'internal'
    region_name = 'RegionTwo'

    def __init__(self, config):
        self.session = ks_session.Session()
        self._config = config

    def get_configuration(self):
        return dict(self._config)


class MakeClientTest(testtools.TestCase):

    def test_adapters_on_the_cli_session(self):
        instance = FakeInstance(
            {'placement_endpoint_override': 'http://pl.example:8778'})
        resq = plugin.make_client(instance)
        self.assertIsInstance(resq.placement,
                              placement_client.PlacementClient)
        self.assertIsInstance(resq.compute, compute_mod.ComputeClient)
        pl = resq.placement._adapter
        cp = resq.compute._adapter
        self.assertIs(instance.session, pl.session)
        self.assertIs(instance.session, cp.session)
        self.assertEqual(('placement', 'compute'),
                         (pl.service_type, cp.service_type))
        self.assertFalse(pl.raise_exc)
        self.assertFalse(cp.raise_exc)
        self.assertEqual(('internal', 'RegionTwo'),
                         (cp.interface, cp.region_name))
        self.assertEqual('http://pl.example:8778', pl.endpoint_override)
        self.assertIsNone(cp.endpoint_override)
        # resq-api from the catalog, at the first microversion by default.
        self.assertEqual('resq', resq.service._adapter.service_type)
        self.assertEqual('1.0', resq.service.microversion)

    def test_resq_api_version_option(self):
        instance = FakeInstance({})
        instance._api_version = {'resq': '1'}
        self.assertEqual('1.0', plugin.make_client(instance)
                         .service.microversion)


class CommandErrorTest(testtools.TestCase):

    def message(self, exc):
        error = client.command_error(exc)
        self.assertIsInstance(error, exceptions.CommandError)
        self.assertNotIn('\n', str(error))
        return str(error)

    def test_no_credentials(self):
        self.assertIn('pass --os-cloud with a cloud from clouds.yaml, or set '
                      'OS_AUTH_URL', self.message(ks_exc.MissingAuthPlugin()))

    def test_wrong_password(self):
        msg = self.message(ks_exc.Unauthorized('The request you have made '
                                               'requires authentication.'))
        self.assertIn('authentication failed', msg)
        self.assertIn('check the user name, password and project', msg)

    def test_placement_unreachable(self):
        msg = self.message(placement_client.PlacementUnavailable(
            reason='Connection refused\nsecond line'))
        self.assertIn('cannot reach Placement (Connection refused second '
                      'line)', msg)
        self.assertIn('placement_endpoint_override in clouds.yaml', msg)

    def test_nova_unreachable(self):
        msg = self.message(compute_mod.ComputeUnavailable(reason='timeout'))
        self.assertIn('cannot reach Nova (timeout)', msg)
        self.assertIn('compute_endpoint_override', msg)

    def test_token_refused_by_placement(self):
        msg = self.message(placement_client.PlacementError(
            method='GET', url='/resource_providers',
            reason='401 The request you have made requires authentication.'))
        self.assertIn('Placement did not accept the token', msg)
        self.assertIn('OS_AUTH_URL', msg)

    def test_not_admin(self):
        msg = self.message(compute_mod.ComputeError(
            method='GET', url='/os-services', reason='403 Policy does not '
            'allow os_compute_api:os-services:list to be performed.',
            status_code=403))
        self.assertIn('Nova denied the request', msg)
        self.assertIn('admin role', msg)

    def test_resq_errors_keep_their_message(self):
        self.assertEqual(
            "no compute host 'x' with ResQ cache domains in Placement; "
            '"openstack resq host list" lists them',
            self.message(cloud.HostNotFound(host='x', why='')))
        self.assertEqual('Profile store /p: full', self.message(
            exception.ProfileStoreError(store='/p', reason='full')))

    def test_bugs_are_not_hidden(self):
        self.assertIsNone(client.command_error(KeyError('x')))


class UnreachablePlacementTest(testtools.TestCase):
    """A command on a Placement that does not answer: one line."""

    def test_host_list(self):
        url = 'http://127.0.0.1:%d' % _closed_port()
        resq = client.ResQClient.from_adapters(
            clients.noauth_adapter(url, 'placement'),
            clients.noauth_adapter(url, 'compute'))
        app = type('App', (), {})()
        app.client_manager = type('CM', (), {'resq': resq})()
        cmd = host_cmd.ListHost(app, None)
        exc = self.assertRaises(exceptions.CommandError, cmd.take_action,
                                cmd.get_parser('x').parse_args([]))
        self.assertIn('cannot reach Placement', str(exc))
        self.assertNotIn('\n', str(exc))


class OpenStackShellTest(testtools.TestCase):
    """``openstack resq ...`` itself, with bad credentials."""

    def openstack(self, *argv, **env):
        home = self.useFixture(fixtures.TempDir()).path
        environ = {k: v for k, v in os.environ.items()
                   if not k.startswith('OS_')}
        environ.update(HOME=home, **env)
        return subprocess.run(
            [sys.executable, '-m', 'openstackclient.shell'] + list(argv),
            capture_output=True, text=True, timeout=120, env=environ)

    def test_missing_credentials(self):
        proc = self.openstack('resq', 'host', 'list')
        self.assertEqual(1, proc.returncode)
        self.assertEqual(
            'cannot authenticate: Missing value auth-url required for auth '
            'plugin password; pass --os-cloud with a cloud from clouds.yaml, '
            'or set OS_AUTH_URL, OS_USERNAME, OS_PASSWORD and '
            'OS_PROJECT_NAME', proc.stderr.strip())
        self.assertNotIn('Traceback', proc.stderr)

    def test_identity_service_unreachable(self):
        proc = self.openstack(
            'resq', 'server', 'show', 'x',
            OS_AUTH_URL='http://127.0.0.1:%d/v3' % _closed_port(),
            OS_USERNAME='admin', OS_PASSWORD='secret',
            OS_PROJECT_NAME='admin', OS_USER_DOMAIN_NAME='Default',
            OS_PROJECT_DOMAIN_NAME='Default')
        self.assertEqual(1, proc.returncode)
        last = proc.stderr.strip().splitlines()[-1]
        self.assertTrue(last.startswith('cannot reach the identity service'),
                        proc.stderr)
        self.assertIn('check OS_AUTH_URL', last)
        self.assertNotIn('Traceback', proc.stderr)

    def test_wrong_password(self):
        server = http.server.ThreadingHTTPServer(('127.0.0.1', 0),
                                                 RefusingKeystone)
        self.addCleanup(server.server_close)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        self.addCleanup(server.shutdown)
        proc = self.openstack(
            'resq', 'host', 'list',
            OS_AUTH_URL='http://127.0.0.1:%d/v3' % server.server_address[1],
            OS_USERNAME='admin', OS_PASSWORD='wrong',
            OS_PROJECT_NAME='admin', OS_USER_DOMAIN_NAME='Default',
            OS_PROJECT_DOMAIN_NAME='Default')
        self.assertEqual(1, proc.returncode)
        self.assertEqual(1, len(proc.stderr.strip().splitlines()),
                         proc.stderr)
        self.assertIn('authentication failed', proc.stderr)
        self.assertIn('check the user name, password and project',
                      proc.stderr)

    def test_profile_commands_need_no_cloud(self):
        store = self.useFixture(fixtures.TempDir()).path
        proc = self.openstack('resq', 'profile', 'list', '--profile-dir',
                              store, '-f', 'json')
        self.assertEqual(0, proc.returncode, proc.stderr)
        self.assertEqual('[]', proc.stdout.strip())

    def test_help_lists_the_commands(self):
        proc = self.openstack('--help')
        self.assertEqual(0, proc.returncode, proc.stderr)
        for command in ('resq host list', 'resq server show',
                        'resq plan apply', 'resq slo admit'):
            self.assertIn(command, proc.stdout)
