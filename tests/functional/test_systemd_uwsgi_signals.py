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
"""etc/resq/resq-api-uwsgi.ini under real uwsgi, signalled as systemd does.

etc/systemd/resq-api.service reloads with SIGHUP and stops with SIGTERM:
the first must reload the workers and keep uwsgi running, the second stop
it.
"""

import os
import signal
import subprocess
import sys
import time

import fixtures

from tests import base

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
UWSGI = os.path.join(os.path.dirname(sys.executable), 'uwsgi')
INI = os.path.join(REPO, 'etc', 'resq', 'resq-api-uwsgi.ini')


class UwsgiSignalsTest(base.TestCase):

    def setUp(self):
        super().setUp()
        if not os.path.exists(UWSGI):
            self.fail('uwsgi is not installed in %s (test-requirements: '
                      'pyuwsgi)' % os.path.dirname(UWSGI))
        self.dir = self.useFixture(fixtures.TempDir()).path
        with open(INI) as f:
            text = f.read()
        # The socket is the web server's alone (uwsgi's protocol lets a
        # peer have it load a file): 660, given to its group.
        self.assertIn('\nchmod-socket = 660\n', text)
        self.assertIn('\nchown-socket = resq:www-data\n', text)
        # The unit's RuntimeDirectory (/run/resq-api) is a temporary one;
        # this machine has no user resq to give the socket to.
        self.ini = os.path.join(self.dir, 'resq-api-uwsgi.ini')
        with open(self.ini, 'w') as f:
            f.write(text.replace('/run/resq-api/', self.dir + '/').replace(
                'chown-socket = resq:www-data\n', ''))
        self.log = os.path.join(self.dir, 'uwsgi.log')

    def _wait_for(self, what, count, proc, timeout=120):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if os.path.exists(self.log):
                with open(self.log) as f:
                    if f.read().count(what) >= count:
                        return
            self.assertIsNone(proc.poll(), 'uwsgi exited')
            time.sleep(0.5)
        self.fail('no %d x %r in the uwsgi log' % (count, what))

    def test_sighup_reloads_sigterm_stops(self):
        # A configuration resq-api can serve with (the sample's keystone
        # defaults and no database refuse to load: need-app stops uwsgi).
        conf = os.path.join(self.dir, 'resq-api.conf')
        with open(conf, 'w') as f:
            f.write('[api]\nauth_strategy = noauth2\n[database]\n'
                    'connection = sqlite:///%s\n'
                    % os.path.join(self.dir, 'resq.sqlite'))
        env = dict(os.environ, RESQ_API_CONFIG=conf)
        proc = subprocess.Popen([UWSGI, '--ini', self.ini, '--logto',
                                 self.log], env=env)
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        # lazy-apps: each of the two workers loads the application.
        self._wait_for('WSGI app 0', 2, proc)
        proc.send_signal(signal.SIGHUP)
        self._wait_for('WSGI app 0', 4, proc)
        self.assertIsNone(proc.poll())
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(0, proc.wait(timeout=60))
