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
"""What an installed release promises: --version everywhere, no libvirt
on API and scheduler hosts.

The console scripts are read from setup.cfg (the installed metadata of a
development checkout may be older than it).
"""

import configparser
import importlib
import io
import os
import subprocess
import sys
from unittest import mock

import fixtures

from tests import base

ROOT = os.path.join(os.path.dirname(__file__), '..', '..')
# What API, scheduler and optimizer hosts import (the Nova- and
# Watcher-side plugins need Nova or Watcher, which this venv lacks; the
# functional venv imports them with the same check).
NO_LIBVIRT = ('resq_nova.api.wsgi', 'resq_nova.cmd.api',
              'resq_nova.cmd.manage',
              'resq_nova.cmd.status', 'resq_nova.cmd.optimizer',
              'resq_nova.cmd.plan', 'resq_nova.cmd.admit',
              'resq_nova.osc.plugin', 'resq_nova.osc.v1.agent',
              'resq_nova.osc.v1.host', 'resq_nova.osc.v1.slo',
              'resq_profiler.cmd.profiler', 'resq_agent.cmd.agent')


def setup_cfg():
    parser = configparser.ConfigParser()
    parser.read(os.path.join(ROOT, 'setup.cfg'))
    return parser


def console_scripts():
    text = setup_cfg()['entry_points']['console_scripts']
    return dict(line.replace(' ', '').split('=', 1)
                for line in text.strip().splitlines())


def requirement_names(text):
    return [line.split('>')[0].split('=')[0].split('[')[0].strip().lower()
            for line in text.splitlines()
            if line.strip() and not line.startswith('#')]


class VersionTest(base.TestCase):

    def test_every_console_script_prints_the_version(self):
        scripts = console_scripts()
        self.assertIn('resq-status', scripts)
        from resq_common import cmdline

        for name, target in sorted(scripts.items()):
            module, func = target.split(':')
            main = getattr(importlib.import_module(module), func)
            out = io.StringIO()
            with mock.patch('sys.stdout', out):
                exc = self.assertRaises(SystemExit, main, ['--version'])
            self.assertEqual(0, exc.code, name)
            self.assertEqual('%s %s\n' % (name, cmdline.version()),
                             out.getvalue())


class ExtrasTest(base.TestCase):

    def test_libvirt_is_the_agent_extra(self):
        with open(os.path.join(ROOT, 'requirements.txt')) as f:
            self.assertNotIn('libvirt-python', requirement_names(f.read()))
        extras = setup_cfg()['extras']
        self.assertEqual(['libvirt-python'],
                         requirement_names(extras['agent']))
        self.assertEqual(['python-openstackclient'],
                         requirement_names(extras['cli']))

    def run_without_libvirt(self, code):
        return subprocess.run(
            [sys.executable, '-c', 'import sys; sys.modules["libvirt"] = '
             'None\n' + code], capture_output=True, text=True, timeout=120,
            cwd=ROOT)

    def test_api_and_scheduler_side_import_without_libvirt(self):
        proc = self.run_without_libvirt('\n'.join(
            'import %s' % m for m in NO_LIBVIRT))
        self.assertEqual(0, proc.returncode, proc.stderr)

    def test_the_agent_without_libvirt_says_what_to_install(self):
        conf = os.path.join(self.useFixture(
            fixtures.TempDir()).path, 'resq-agent.conf')
        with open(conf, 'w') as f:
            f.write('[DEFAULT]\n')
        proc = self.run_without_libvirt(
            'from resq_agent.cmd import agent\n'
            'sys.exit(agent.main(["--config-file", %r, "reconcile"]))'
            % conf)
        self.assertEqual(1, proc.returncode, proc.stderr)
        self.assertIn('ERROR: libvirt-python is not installed: install '
                      'resq-nova with its agent extra (pip install '
                      '"resq-nova[agent]"', proc.stderr)
        self.assertNotIn('Traceback', proc.stderr)
