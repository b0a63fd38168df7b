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
"""etc/systemd: the units start commands that exist with files that do."""

import configparser
import os
import shlex
import shutil
import subprocess

import fixtures

from tests import base

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
UNITS = os.path.join(REPO, 'etc', 'systemd')
SERVICES = ('resq-agent.service', 'resq-optimizer.service',
            'resq-api.service')
PRIVSEP = ('resq-privsep-resctrl.service', 'resq-privsep-pqos.service',
           'resq-privsep-openflow.service')
MOUNT = 'sys-fs-resctrl.mount'
FSTAB = 'resctrl  /sys/fs/resctrl  resctrl  defaults  0  0'


def _ini(path):
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str
    parser.read(path)
    return parser


def _console_scripts():
    setup = _ini(os.path.join(REPO, 'setup.cfg'))
    lines = setup['entry_points']['console_scripts'].strip().splitlines()
    return {line.split('=')[0].strip() for line in lines if line.strip()}


def _config_files(argv):
    return [argv[i + 1] for i, arg in enumerate(argv)
            if arg == '--config-file']


class UnitFilesTest(base.TestCase):

    def test_every_unit_is_here(self):
        self.assertEqual(sorted(SERVICES + PRIVSEP + (MOUNT,)),
                         sorted(os.listdir(UNITS)))

    def test_privileged_daemons(self):
        from oslo_privsep import capabilities

        from resq_agent.privsep import daemon
        from resq_agent import privsep_boot

        names = {v: k for k, v in vars(capabilities).items()
                 if k.startswith('CAP_') and isinstance(v, int)}
        for context, spec in daemon.CONTEXTS.items():
            name = 'resq-privsep-%s.service' % context
            svc = _ini(os.path.join(UNITS, name))['Service']
            self.assertEqual('root', svc['User'], name)
            self.assertEqual('yes', svc['NoNewPrivileges'], name)
            self.assertEqual('strict', svc['ProtectSystem'], name)
            self.assertEqual('0022', svc['UMask'], name)
            # The context's capabilities, and what start-up needs before
            # the daemon drops it (bounding set, securebits, socket owner).
            self.assertEqual(
                sorted({names[c] for c in spec.capabilities}
                       | {'CAP_SETPCAP', 'CAP_CHOWN'}),
                sorted(svc['CapabilityBoundingSet'].split()), name)
            argv = shlex.split(svc['ExecStart'])
            self.assertEqual(
                ['/usr/bin/python3'] + privsep_boot.command(
                    ['--context', context, '--config-file',
                     privsep_boot.CONFIG_FILE])[1:], argv, name)
        agent = _ini(os.path.join(UNITS, 'resq-agent.service'))
        self.assertEqual('yes', agent['Service']['NoNewPrivileges'])
        self.assertIn('resq-privsep-resctrl.service',
                      agent['Unit']['Wants'].split())

    def test_services(self):
        scripts = _console_scripts()
        for name in SERVICES:
            unit = _ini(os.path.join(UNITS, name))
            svc = unit['Service']
            self.assertEqual('on-failure', svc['Restart'], name)
            self.assertEqual('resq', svc['User'], name)
            self.assertEqual('/bin/kill -HUP $MAINPID', svc['ExecReload'],
                             name)
            self.assertIn('WantedBy', unit['Install'], name)
            argv = shlex.split(svc['ExecStart'])
            binary = os.path.basename(argv[0])
            if name == 'resq-api.service':
                self._check_api(unit, argv)
                continue
            self.assertEqual(name[:-len('.service')], binary)
            self.assertIn(binary, scripts, name)
            self.assertEqual('run', argv[-1], name)
            # The name scheme: the shared file, then the command's own;
            # each has a sample, etc/resq/<name>.conf.sample.
            configs = _config_files(argv)
            self.assertEqual(['/etc/resq/resq.conf',
                              '/etc/resq/%s.conf' % binary], configs)
            for config in configs:
                self.assertTrue(os.path.exists(os.path.join(
                    REPO, 'etc', 'resq',
                    os.path.basename(config) + '.sample')), config)

    def _check_api(self, unit, argv):
        svc = unit['Service']
        self.assertEqual('uwsgi', os.path.basename(argv[0]))
        self.assertEqual('SIGTERM', svc['KillSignal'])
        self.assertEqual('RESQ_API_CONFIG=/etc/resq/resq.conf,'
                         '/etc/resq/resq-api.conf', svc['Environment'])
        for name in ('resq.conf.sample', 'resq-api.conf.sample'):
            self.assertTrue(os.path.exists(os.path.join(
                REPO, 'etc', 'resq', name)), name)
        ini = argv[argv.index('--ini') + 1]
        self.assertEqual('/etc/resq/resq-api-uwsgi.ini', ini)
        uwsgi = _ini(os.path.join(REPO, 'etc', 'resq',
                                  os.path.basename(ini)))['uwsgi']
        # The module devstack's plugin runs (RESQ_API_UWSGI), importable.
        module, attr = uwsgi['module'].split(':')
        self.assertEqual('resq_nova.api.wsgi:application', uwsgi['module'])
        mod = __import__(module, fromlist=[attr])
        self.assertTrue(callable(getattr(mod, attr)))
        self.assertEqual('true', uwsgi['lazy-apps'])
        # SIGTERM stops uwsgi (gracefully) instead of reloading it.
        self.assertEqual('true', uwsgi['die-on-term'])
        self.assertEqual('unix_signal:15 gracefully_kill_them_all',
                         uwsgi['hook-master-start'])

    def test_agent_needs_resctrl(self):
        unit = _ini(os.path.join(UNITS, 'resq-agent.service'))
        self.assertIn(MOUNT, unit['Unit']['Requires'].split())
        self.assertIn(MOUNT, unit['Unit']['After'].split())

    def test_mount(self):
        mount = _ini(os.path.join(UNITS, MOUNT))['Mount']
        self.assertEqual('resctrl', mount['What'])
        self.assertEqual('/sys/fs/resctrl', mount['Where'])
        self.assertEqual('resctrl', mount['Type'])
        # systemd names a mount unit after its mount point.
        self.assertEqual(MOUNT, mount['Where'][1:].replace('/', '-')
                         + '.mount')

    def test_fstab_line_in_the_docs(self):
        for path in (os.path.join(UNITS, MOUNT), os.path.join(
                REPO, 'doc', 'source', 'admin', 'deployment.rst')):
            with open(path) as f:
                self.assertIn(FSTAB, f.read(), path)

    def test_systemd_analyze_verify(self):
        tool = shutil.which('systemd-analyze')
        if tool is None:
            self.skipTest('systemd-analyze is not installed; the units '
                          'are only parsed')
        # The commands are installed elsewhere here: verify checks each
        # ExecStart is executable, so each points at a stub of its name.
        tmp = self.useFixture(fixtures.TempDir()).path
        bindir = os.path.join(tmp, 'bin')
        os.mkdir(bindir)
        paths = []
        for name in SERVICES + PRIVSEP + (MOUNT,):
            with open(os.path.join(UNITS, name)) as f:
                text = f.read()
            for binary in ('resq-agent', 'resq-optimizer', 'uwsgi'):
                stub = os.path.join(bindir, binary)
                with open(stub, 'w') as f:
                    f.write('#!/bin/sh\n')
                os.chmod(stub, 0o755)
                text = text.replace('/usr/bin/%s ' % binary, stub + ' ')
            paths.append(os.path.join(tmp, name))
            with open(paths[-1], 'w') as f:
                f.write(text)
        out = subprocess.run([tool, 'verify'] + paths, capture_output=True,
                             text=True, timeout=60, cwd=tmp)
        self.assertEqual(0, out.returncode, out.stdout + out.stderr)
        self.assertEqual('', out.stderr.strip())
