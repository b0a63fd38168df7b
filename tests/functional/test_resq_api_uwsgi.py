"""resq-api under real uwsgi, configured by the devstack plugin.

The plugin's ``stack post-config`` writes resq-api.conf and the uwsgi
file (through the stand-in's ``write_uwsgi_config``, which writes what
devstack's does); the database is a throw-away MariaDB one, migrated by
the real ``resq-manage db sync``; uwsgi starts with the command line the
plugin hands ``run_process``, plus an HTTP address (devstack puts Apache
in front of its socket). Requests then go to real worker processes, as
a deployment's do. Before the module had an ``application`` attribute of
its own, uwsgi loaded no application and answered every request 500.
"""

import configparser
import json
import os
import shlex
import subprocess
import sys

import requests

from tests import base
from tests.fixtures import database
from tests.fixtures import http_process
from tests.unit.devstack import test_plugin
from tests.unit.resq_profiler import test_profile

UWSGI = os.path.join(os.path.dirname(sys.executable), 'uwsgi')


def _set(path, section, **options):
    parser = configparser.RawConfigParser(strict=False)
    parser.optionxform = str
    parser.read(path)
    if not parser.has_section(section):
        parser.add_section(section)
    for key, value in options.items():
        parser.set(section, key, value)
    with open(path, 'w') as f:
        parser.write(f)


class UwsgiTest(base.TestCase):

    def setUp(self):
        super().setUp()
        if not os.path.exists(UWSGI):
            self.fail('uwsgi is not installed in %s (test-requirements: '
                      'pyuwsgi)' % os.path.dirname(UWSGI))
        self.ds = self.useFixture(test_plugin.Devstack(
            services=test_plugin.ALL_SERVICES + ',resq-api',
            KEYSTONE_SERVICE_URI='http://127.0.0.1:9/identity',
            SERVICE_HOST='127.0.0.1',
            FAKE_UWSGI_SOCKET_DIR=self.tmp))
        self.ds.run(test_plugin.POST_CONFIG)
        self.api_conf = os.path.join(self.ds.conf_dir, 'resq-api.conf')
        self.uwsgi_ini = os.path.join(self.ds.conf_dir,
                                      'resq-api-uwsgi.ini')
        db = self.useFixture(database.Database('mysql', self.skipTest))
        _set(self.api_conf, 'database', connection=db.url)
        subprocess.run(
            [os.path.join(os.path.dirname(sys.executable), 'resq-manage'),
             '--config-file', self.api_conf, 'db', 'sync'],
            check=True, capture_output=True)

    def start(self):
        """uwsgi as the plugin's ``run_process`` starts it; its URL."""
        [command] = [c.split(' ', 1)[1] for c in self.ds.calls('run_process')
                     if c.startswith('resq-api ')] or [None]
        if command is None:
            # "stack extra" starts it; post-config only wrote the files.
            command = '%s --procname-prefix resq-api --ini %s' % (
                UWSGI, self.uwsgi_ini)
        argv = shlex.split(command)
        argv[0] = UWSGI
        port = http_process.free_port()
        # Ready once a worker has loaded the application (importing it
        # takes seconds on a busy machine; uwsgi's HTTP router accepts
        # before that).
        return http_process.serve(
            self, argv + ['--http', '127.0.0.1:%d' % port],
            'http://127.0.0.1:%d' % port,
            os.path.join(self.tmp, 'uwsgi.log'), 'uwsgi-log',
            'uwsgi served no application in 120 s', cwd=self.tmp,
            poll_s=0.5)

    def test_the_plugins_uwsgi_file_names_a_real_application(self):
        ini = configparser.RawConfigParser(strict=False)
        ini.read(self.uwsgi_ini)
        self.assertEqual('resq_nova.api.wsgi:application',
                         ini['uwsgi']['module'])
        # As devstack writes it: behind Apache, on a socket of its own.
        self.assertEqual(os.path.join(self.tmp, 'resq-api.socket'),
                         ini['uwsgi']['socket'])
        url = self.start()
        resp = requests.get(url + '/', timeout=30)
        self.assertEqual(200, resp.status_code, resp.text)
        self.assertEqual('CURRENT', resp.json()['versions'][0]['status'])
        # keystonemiddleware is in front of everything else.
        resp = requests.get(url + '/profiles', timeout=30)
        self.assertEqual(401, resp.status_code, resp.text)

    def test_keystone_auth_without_a_plugin_stops_uwsgi(self):
        """No text/plain 500s: uwsgi exits, its log says why in one line.

        The worker builds the application when it imports the module, and
        the plugin's need-app makes a worker without one stop uwsgi.
        """
        parser = configparser.RawConfigParser(strict=False)
        parser.optionxform = str
        parser.read(self.api_conf)
        parser.remove_option('keystone_authtoken', 'auth_type')
        with open(self.api_conf, 'w') as f:
            parser.write(f)
        ini = configparser.RawConfigParser(strict=False)
        ini.read(self.uwsgi_ini)
        self.assertEqual('true', ini['uwsgi']['need-app'])
        proc = subprocess.run(
            [UWSGI, '--ini', self.uwsgi_ini, '--http',
             '127.0.0.1:%d' % http_process.free_port()],
            capture_output=True, text=True, timeout=180, cwd=self.tmp)
        self.assertNotEqual(0, proc.returncode, proc.stderr)
        self.assertIn('resq-api: [api] auth_strategy = keystone needs '
                      '[keystone_authtoken] auth_type and auth_url, which '
                      'the configuration (', proc.stderr)
        # That line, not oslo.log's CRITICAL record of each worker.
        self.assertNotIn('Traceback', proc.stderr)
        self.assertNotIn('Unhandled error', proc.stderr)

    def test_workers_share_the_database(self):
        _set(self.api_conf, 'api', auth_strategy='noauth2')
        url = self.start()
        headers = {'X-Auth-Token': 'admin',
                   'Content-Type': 'application/json'}
        doc = test_profile.make_doc()
        doc['id'] = 'fw-uwsgi'
        resp = requests.put(url + '/profiles/fw-uwsgi', headers=headers,
                            data=json.dumps({'profile': doc}), timeout=30)
        self.assertEqual(201, resp.status_code, resp.text)
        # Connection: close, so each request may land on either worker.
        for _ in range(6):
            resp = requests.get(url + '/profiles/fw-uwsgi', headers=headers,
                                timeout=30)
            self.assertEqual(200, resp.status_code, resp.text)
            self.assertEqual('fw-uwsgi', resp.json()['profile']['id'])

    def test_bad_input_is_a_400_from_a_real_worker(self):
        """What once answered 500 or dropped the connection: 400s.

        A path that is not UTF-8 raised out of the application, and the
        worker dropped the connection instead of answering.
        """
        _set(self.api_conf, 'api', auth_strategy='noauth2')
        url = self.start()
        headers = {'X-Auth-Token': 'admin',
                   'Content-Type': 'application/json'}
        for method, path, data in (
                ('GET', '/profiles/%FF%FE', None),
                ('GET', '/profiles/fw%00-1', None),
                ('GET', '/profiles/' + 'a' * 300, None),
                ('PUT', '/profiles/fw-1',
                 '{"profile": %s1%s}' % ('[' * 50000, ']' * 50000))):
            resp = requests.request(method, url + path, headers=headers,
                                    data=data, timeout=30)
            self.assertEqual(400, resp.status_code, resp.text)
            self.assertEqual(400, resp.json()['errors'][0]['status'])
        resp = requests.get(url + '/profiles', headers=headers, timeout=30)
        self.assertEqual(200, resp.status_code, resp.text)
