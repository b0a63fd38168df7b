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
"""``openstack resq`` against a resq-api without Keystone, as documented.

doc/source/cli/index.rst ("Try it without Keystone"): resq-api.conf with
``[api] auth_strategy = noauth2`` and a SQLite database, the schema from
the real ``resq-manage db sync``, the real ``resq-api`` console script
serving it (no ``--config-file``: the default search finds
``~/.resq/resq-api.conf``), and the real ``openstack`` console script with
``--os-auth-type admin_token --os-endpoint URL --os-token TOKEN``.
"""

import json
import os
import subprocess
import sys

import fixtures

from tests import base
from tests.fixtures import http_process
from tests.unit.resq_profiler import test_profile

BIN = os.path.dirname(sys.executable)


class NoKeystoneTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.home = self.useFixture(fixtures.TempDir()).path
        confdir = os.path.join(self.home, '.resq')
        os.mkdir(confdir)
        with open(os.path.join(confdir, 'resq-api.conf'), 'w') as f:
            f.write('[api]\nauth_strategy = noauth2\n\n[database]\n'
                    'connection = sqlite:///%s\n'
                    % os.path.join(self.home, 'resq.sqlite'))
        # Neither the developer's clouds.yaml nor OS_* of the shell.
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith('OS_')}
        self.env.update(HOME=self.home, OS_CLIENT_CONFIG_FILE=os.path.join(
            self.home, 'clouds.yaml'))
        self.env.pop('RESQ_API_CONFIG', None)
        # resq-manage reads resq-api's files: it finds the same one.
        sync = subprocess.run([os.path.join(BIN, 'resq-manage'), 'db',
                               'sync'], env=self.env, check=True,
                              capture_output=True, cwd=self.home, text=True)
        self.assertIn('database sqlite:///%s at revision' % os.path.join(
            self.home, 'resq.sqlite'), sync.stdout)
        self.url = self._start()

    def _start(self):
        port = http_process.free_port()
        return http_process.serve(
            self, [os.path.join(BIN, 'resq-api'), '--port', str(port)],
            'http://127.0.0.1:%d' % port,
            os.path.join(self.home, 'resq-api.log'), 'resq-api-log',
            'resq-api did not answer within 120 s', env=self.env,
            cwd=self.home)

    def openstack(self, *args, token='admin', env=None):
        """``openstack`` as the docs run it; (status, stdout, stderr)."""
        argv = [os.path.join(BIN, 'openstack'), '--os-auth-type',
                'admin_token', '--os-endpoint', self.url]
        if token is not None:
            argv += ['--os-token', token]
        proc = subprocess.run(argv + list(args), env=dict(self.env,
                                                          **(env or {})),
                              capture_output=True, text=True, cwd=self.home)
        # Other OpenStackClient plugins of the environment may complain
        # while they load; only the command's own lines count.
        stderr = [line for line in proc.stderr.splitlines()
                  if not line.startswith('Could not load ')]
        return proc.returncode, proc.stdout, stderr

    def _profile_file(self, profile_id):
        doc = test_profile.make_doc()
        doc['id'] = profile_id
        path = os.path.join(self.home, profile_id + '.json')
        with open(path, 'w') as f:
            json.dump(doc, f)
        return path

    def test_profiles_and_terms_without_keystone(self):
        status, out, err = self.openstack(
            'resq', 'profile', 'upload', '--public', '-f', 'json',
            self._profile_file('lpm-try'))
        self.assertEqual((0, []), (status, err), out)
        self.assertEqual('public', json.loads(out)['visibility'])
        status, out, err = self.openstack('resq', 'profile', 'list',
                                          '-f', 'json')
        self.assertEqual((0, []), (status, err))
        self.assertEqual(['lpm-try'], [p['ID'] for p in json.loads(out)])
        status, out, err = self.openstack('resq', 'profile', 'show',
                                          'lpm-try', '-f', 'json')
        self.assertEqual((0, []), (status, err))
        shown = json.loads(out)
        self.assertEqual(('lpm-try', 'LPM'), (shown['id'], shown['nf']))
        status, out, err = self.openstack('resq', 'slo', 'list',
                                          '-f', 'json')
        self.assertEqual((0, [], []), (status, err, json.loads(out)))
        # The page's term through the API (its curl), then the CLI.
        import requests

        resp = requests.post(self.url + '/slo_terms', headers={
            'X-Auth-Token': 'admin', 'Content-Type': 'application/json'},
            data=json.dumps({
                'name': 'lpm-try', 'profile_id': 'lpm-try',
                'slo': 'reserved', 'throughput_mpps': 4.0,
                'latency_p95_us': 21.0, 'packet_bytes': 64,
                'flavors': [], 'servers': []}), timeout=30)
        self.assertEqual(201, resp.status_code, resp.text)
        status, out, err = self.openstack('resq', 'slo', 'show', 'lpm-try',
                                          '-f', 'json')
        self.assertEqual((0, []), (status, err), out)
        self.assertEqual('lpm-try', json.loads(out)['name'])
        for verb in ('release', 'delete'):
            status, out, err = self.openstack('resq', 'slo', verb,
                                              'lpm-try')
            self.assertEqual((0, []), (status, err), (verb, out))
        status, out, err = self.openstack('resq', 'slo', 'list',
                                          '-f', 'json')
        self.assertEqual((0, [], []), (status, err, json.loads(out)))

    def test_the_token_names_the_caller(self):
        # A private profile of project "admin" ...
        status, out, err = self.openstack(
            'resq', 'profile', 'upload', self._profile_file('lpm-admin'))
        self.assertEqual((0, []), (status, err), out)
        # ... is not one project "demo"'s member can use.
        status, out, err = self.openstack('resq', 'profile', 'list',
                                          '-f', 'json', token='demo:demo')
        self.assertEqual((0, [], []), (status, err, json.loads(out)))
        status, out, err = self.openstack('resq', 'profile', 'show',
                                          'lpm-admin', token='demo:demo')
        self.assertEqual(1, status)
        self.assertEqual(1, len(err), err)
        self.assertIn("no profile 'lpm-admin'", err[0])

    def test_errors_are_one_line(self):
        # No such profile.
        status, out, err = self.openstack('resq', 'profile', 'show', 'nope')
        self.assertEqual((1, ''), (status, out))
        self.assertEqual(1, len(err), err)
        self.assertIn("no profile 'nope' in resq-api", err[0])
        # Hosts are Placement's: --os-endpoint is resq-api's alone.
        status, out, err = self.openstack('resq', 'host', 'list')
        self.assertEqual((1, ''), (status, out))
        self.assertEqual(1, len(err), err)
        self.assertIn('no Placement endpoint', err[0])
        self.assertIn('OS_PLACEMENT_ENDPOINT_OVERRIDE', err[0])
        # No token: what to give.
        status, out, err = self.openstack('resq', 'profile', 'list',
                                          token=None)
        self.assertEqual(1, status)
        self.assertEqual(1, len(err), err)
        self.assertIn('--os-auth-type admin_token is missing an argument',
                      err[0])
        self.assertIn('--os-token TOKEN', err[0])

    def test_placement_override_is_used(self):
        # Where Placement is named, host commands go there, not to
        # resq-api: here a port nothing listens on.
        status, out, err = self.openstack(
            'resq', 'host', 'list', env={
                'OS_PLACEMENT_ENDPOINT_OVERRIDE':
                    'http://127.0.0.1:%d' % http_process.free_port()})
        self.assertEqual(1, status)
        self.assertEqual(1, len(err), err)
        self.assertIn('cannot reach Placement', err[0])
        self.assertNotIn('no Placement endpoint', err[0])
