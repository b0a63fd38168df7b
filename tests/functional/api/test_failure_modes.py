"""resq-api's failure modes: what it does when it cannot serve.

* keystone authentication without what keystonemiddleware needs: it
  refuses to start (the application factory raises, ``resq-api`` exits 2
  with one line), instead of answering every request a text/plain 500;
* its database away (a closed port, a server that accepts and never
  answers): each request is a 503 with a JSON error and ``Retry-After``
  within seconds, instead of 1 min 41 s then a 500;
* ``resq-api --port`` on a taken port: one line, exit 2, no traceback;
  ``noauth2`` beyond loopback: a warning;
* configuration files of the default search that another one hides are
  named in a warning.

The application is the real WSGI stack (``init_application``), driven
in-process through webob, on MariaDB and PostgreSQL ports of this machine;
``resq-api`` is the real console script.
"""

import json
import os
import socket
import subprocess
import sys
import threading
import time

import fixtures
from keystoneauth1 import loading as ks_loading
import requests
import webob

from resq_nova.api.db import api as db_api
from resq_nova.api import deploy
from resq_nova.api import wsgi
from resq_nova.conf import api as api_conf
from tests import base
from tests.fixtures import http_process

BIN = os.path.dirname(sys.executable)
# An answer on a loaded machine (2 cores, CI beside) within this many
# seconds is "fast"; the defaults bound it by 5 s (connect) or 10 s (read).
FAST_S = 15
URLS = {
    'mysql': 'mysql+pymysql://root@127.0.0.1:%d/resq?charset=utf8',
    'postgresql': 'postgresql+psycopg2://postgres@127.0.0.1:%d/resq',
}


def make_conf(**api):
    conf = wsgi.make_conf(config_files=[])
    for name, value in api.items():
        conf.set_override(name, value, 'api')
    return conf


def request(app, method, path, body=None):
    req = webob.Request.blank(path, method=method,
                              headers={'X-Auth-Token': 'admin'})
    if body is not None:
        req.content_type = 'application/json'
        req.body = json.dumps(body).encode()
    return req.get_response(app)


class SilentServer:
    """Accepts TCP connections and never answers (a hung database)."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(('127.0.0.1', 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.held = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)

    def close(self):
        self.sock.close()
        for conn in self.held:
            conn.close()


class DatabaseAwayTest(base.TestCase):
    """The real ``resq-api`` process, its database away.

    A process of its own, as in production: this test process runs on
    eventlet (tests/functional/__init__.py), under which psycopg2 connects
    asynchronously and libpq's ``connect_timeout`` does not apply.
    """

    def serve(self, url, **api):
        path = os.path.join(self.tmp, 'resq-api.conf')
        with open(path, 'w') as f:
            f.write('[api]\nauth_strategy = noauth2\n%s[database]\n'
                    'connection = %s\n' % (''.join(
                        '%s = %s\n' % item for item in api.items()), url))
        port = http_process.free_port()
        # The versions document needs no database: ready when it answers.
        return http_process.serve(
            self, [os.path.join(BIN, 'resq-api'), '--config-file', path,
                   '--port', str(port)], 'http://127.0.0.1:%d' % port,
            os.path.join(self.tmp, 'resq-api-%d.log' % port),
            'resq-api-log-%d' % port,
            'resq-api did not answer within 120 s')

    def assert_503_fast(self, url, method='GET', path='/profiles',
                        body=None):
        started = time.monotonic()
        resp = requests.request(
            method, url + path, timeout=120,
            headers={'X-Auth-Token': 'admin',
                     'Content-Type': 'application/json'},
            data=None if body is None else json.dumps(body))
        took = time.monotonic() - started
        self.assertEqual(503, resp.status_code, resp.text)
        self.assertLess(took, FAST_S)
        self.assertEqual('application/json', resp.headers['Content-Type'])
        self.assertEqual('10', resp.headers['Retry-After'])
        error = resp.json()['errors'][0]
        self.assertEqual((503, 'resq.database_unavailable'),
                         (error['status'], error['code']))
        self.assertIn('cannot reach its database', error['detail'])
        self.assertEqual(resp.headers['X-OpenStack-Request-Id'],
                         error['request_id'])
        # The caller learns nothing of the database's address.
        self.assertNotIn('127.0.0.1', resp.text)
        return took

    def silent_port(self):
        server = SilentServer()
        self.addCleanup(server.close)
        return server.port

    def test_closed_port_mysql_each_request_is_a_fast_503(self):
        url = self.serve(URLS['mysql'] % http_process.free_port())
        # Each request, not only the first (no failure is cached, and no
        # retry loop runs per request).
        for _ in range(3):
            self.assert_503_fast(url)
        self.assert_503_fast(url, 'PUT', '/hosts/h1', {'domains': []})

    def test_closed_port_postgresql_is_a_fast_503(self):
        url = self.serve(URLS['postgresql'] % http_process.free_port())
        for _ in range(2):
            self.assert_503_fast(url)

    def test_mysql_server_that_never_answers_is_a_503_within_bounds(self):
        url = self.serve(URLS['mysql'] % self.silent_port())
        # [api] database_read_timeout (10 s) bounds the handshake.
        self.assertGreater(self.assert_503_fast(url), 5)

    def test_postgresql_server_that_never_answers_is_a_503_within_bounds(
            self):
        url = self.serve(URLS['postgresql'] % self.silent_port())
        # libpq's connect_timeout ([api] database_connect_timeout, 5 s)
        # bounds the whole handshake.
        self.assertGreater(self.assert_503_fast(url), 3)

    def test_the_timeout_is_an_option_and_the_urls_own_wins(self):
        port = self.silent_port()
        url = self.serve(URLS['mysql'] % port, database_read_timeout=1)
        self.assertLess(self.assert_503_fast(url), 5)
        url = self.serve(URLS['mysql'] % port + '&read_timeout=3',
                         database_read_timeout=1)
        self.assertGreaterEqual(self.assert_503_fast(url), 3)


class KeystoneRequiredTest(base.TestCase):
    """``auth_strategy = keystone`` (the default) needs an auth plugin."""

    def setUp(self):
        super().setUp()
        self.addCleanup(db_api.reset)

    def build(self, **authtoken):
        conf = make_conf()
        conf.set_override('connection', 'sqlite://', 'database')
        # The plugin's own options, as a file's are once it loads.
        conf.register_opts(ks_loading.get_auth_plugin_conf_options(
            'password'), group='keystone_authtoken')
        for name, value in authtoken.items():
            conf.set_override(name, value, 'keystone_authtoken')
        return lambda: wsgi.init_application(conf)

    def test_no_keystone_authtoken_is_refused_naming_the_options(self):
        exc = self.assertRaises(deploy.AuthNotConfigured, self.build())
        self.assertIn('[api] auth_strategy = keystone needs '
                      '[keystone_authtoken] auth_type and auth_url',
                      str(exc))
        self.assertIn('auth_strategy = noauth2', str(exc))
        # www_authenticate_uri alone is not enough either.
        self.assertRaises(deploy.AuthNotConfigured, self.build(
            www_authenticate_uri='http://keystone.test/identity'))

    def test_a_plugin_without_its_required_option_is_refused(self):
        exc = self.assertRaises(deploy.AuthNotConfigured,
                                self.build(auth_type='password'))
        self.assertIn('needs [keystone_authtoken] auth_url,', str(exc))
        exc = self.assertRaises(deploy.AuthNotConfigured,
                                self.build(auth_type='pasword'))
        self.assertIn("auth_type naming a keystoneauth plugin ('pasword' "
                      "is none)", str(exc))

    def test_auth_type_and_auth_url_are_enough_to_start(self):
        app = self.build(auth_type='password',
                         auth_url='http://127.0.0.1:9/identity')()
        resp = webob.Request.blank('/').get_response(app)
        self.assertEqual(200, resp.status_int)

    def test_resq_api_exits_with_one_line(self):
        path = os.path.join(self.tmp, 'resq-api.conf')
        with open(path, 'w') as f:
            f.write('[database]\nconnection = sqlite:///%s/r.sqlite\n'
                    % self.tmp)
        proc = subprocess.run(
            [os.path.join(BIN, 'resq-api'), '--config-file', path, '--port',
             str(http_process.free_port())], capture_output=True, text=True,
            timeout=120)
        self.assertEqual(2, proc.returncode, proc.stderr)
        lines = [line for line in proc.stderr.splitlines()
                 if line.startswith('resq-api: ')]
        self.assertEqual(1, len(lines), proc.stderr)
        self.assertIn('[keystone_authtoken] auth_type and auth_url, which '
                      'the configuration (%s) lacks' % path, lines[0])
        self.assertNotIn('Traceback', proc.stderr)


class CommandLineTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.conf_path = os.path.join(self.tmp, 'resq-api.conf')
        with open(self.conf_path, 'w') as f:
            f.write('[api]\nauth_strategy = noauth2\n[database]\n'
                    'connection = sqlite:///%s/r.sqlite\n' % self.tmp)

    def test_a_taken_port_is_one_line_and_exit_2(self):
        taken = socket.socket()
        self.addCleanup(taken.close)
        taken.bind(('127.0.0.1', 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        proc = subprocess.run(
            [os.path.join(BIN, 'resq-api'), '--config-file', self.conf_path,
             '--port', str(port)], capture_output=True, text=True,
            timeout=120)
        self.assertEqual(2, proc.returncode, proc.stderr)
        self.assertNotIn('Traceback', proc.stderr)
        self.assertIn('resq-api: cannot listen on 127.0.0.1 port %d: Address '
                      'already in use; another process listens there' % port,
                      proc.stderr)

    def serve(self, host):
        port = http_process.free_port()
        log = os.path.join(self.tmp, 'resq-api-%s.log' % host)
        http_process.serve(
            self, [os.path.join(BIN, 'resq-api'), '--config-file',
                   self.conf_path, '--host', host, '--port', str(port)],
            'http://127.0.0.1:%d/' % port, log, 'resq-api-log',
            'resq-api did not answer within 120 s')
        with open(log) as f:
            return f.read()

    def test_noauth2_beyond_loopback_warns(self):
        out = self.serve('0.0.0.0')
        self.assertIn('resq-api: WARNING: [api] auth_strategy = noauth2 on '
                      '0.0.0.0: anyone who can reach port', out)

    def test_an_idle_connection_holds_no_other_client(self):
        port = http_process.free_port()
        http_process.serve(
            self, [os.path.join(BIN, 'resq-api'), '--config-file',
                   self.conf_path, '--port', str(port)],
            'http://127.0.0.1:%d/' % port,
            os.path.join(self.tmp, 'idle.log'), 'resq-api-log',
            'resq-api did not answer within 120 s')
        idle = socket.create_connection(('127.0.0.1', port))
        self.addCleanup(idle.close)
        idle.sendall(b'GET /profiles HTTP/1.1\r\nHost: x\r\n')
        # Its headers never end; another client is served meanwhile, and
        # a noauth2 refusal names its request.
        resp = requests.get('http://127.0.0.1:%d/profiles' % port,
                            timeout=20)
        self.assertEqual(401, resp.status_code)
        error = resp.json()['errors'][0]
        self.assertEqual('Unauthorized', error['title'])
        self.assertEqual(resp.headers['X-OpenStack-Request-Id'],
                         error['request_id'])

    def test_noauth2_on_loopback_does_not_warn_of_the_network(self):
        self.assertNotIn('WARNING: [api] auth_strategy = noauth2 on',
                         self.serve('127.0.0.1'))


class ConfigSearchTest(base.TestCase):
    """The default search: a user's file hides /etc/resq's, loudly."""

    def setUp(self):
        super().setUp()
        self.addCleanup(db_api.reset)
        self.home = os.path.join(self.tmp, 'home')
        self.etc = os.path.join(self.tmp, 'etc-resq')
        os.makedirs(os.path.join(self.home, '.resq'))
        os.makedirs(self.etc)
        self.useFixture(fixtures.EnvironmentVariable('HOME', self.home))
        self.useFixture(fixtures.EnvironmentVariable(api_conf.CONFIG_ENV))
        # /etc/resq of this machine is not the test's: a directory of its
        # own stands for it.
        self.useFixture(fixtures.MockPatchObject(
            api_conf, 'SEARCH_DIRS', ('~/.resq', '~', self.etc)))
        self.user_conf = os.path.join(self.home, '.resq', 'resq-api.conf')
        self.etc_conf = os.path.join(self.etc, 'resq-api.conf')
        for path, strategy in ((self.user_conf, 'noauth2'),
                               (self.etc_conf, 'keystone')):
            with open(path, 'w') as f:
                f.write('[api]\nauth_strategy = %s\n[database]\n'
                        'connection = sqlite://\n' % strategy)

    def test_the_users_file_is_read_and_etc_resq_is_named_as_hidden(self):
        # oslo.log's setup replaces the root logger's handlers.
        logs = self.useFixture(fixtures.FakeLogger(name='resq_nova.api.wsgi',
                                                   level='WARNING'))
        self.assertEqual([self.user_conf], api_conf.config_files())
        self.assertEqual([(self.user_conf, self.etc_conf)],
                         api_conf.shadowed([self.user_conf]))
        conf = wsgi.make_conf()
        self.assertEqual('noauth2', conf.api.auth_strategy)
        wsgi.init_application(conf)
        self.assertIn('%s is not read: %s is' % (self.etc_conf,
                                                 self.user_conf),
                      logs.output)

    def test_resq_api_config_replaces_the_search_without_a_warning(self):
        self.useFixture(fixtures.EnvironmentVariable(
            api_conf.CONFIG_ENV, self.etc_conf))
        self.assertEqual([self.etc_conf], api_conf.config_files())
        self.assertEqual([], api_conf.shadowed([self.etc_conf]))
        self.assertEqual('keystone', wsgi.make_conf().api.auth_strategy)

    def test_a_file_alone_is_named_as_hidden_by_nothing(self):
        os.unlink(self.user_conf)
        logs = self.useFixture(fixtures.FakeLogger(name='resq_nova.api.wsgi',
                                                   level='WARNING'))
        self.assertEqual([], api_conf.shadowed([self.etc_conf]))
        conf = wsgi.make_conf(config_files=[self.etc_conf])
        conf.set_override('auth_strategy', 'noauth2', 'api')
        wsgi.init_application(conf)
        self.assertNotIn('is not read', logs.output)
