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
"""``openstack resq plan``: one store for create, list, show and apply.

Plans are made from a snapshot file (``plan create --state``), which needs
no Placement or Nova: with resq-api (in-process, :class:`tests.fixtures.
resq_api.ResQAPI`) they go there, where ``list`` and ``show`` read;
without it every command uses the same local directory. The default
``[resq_optimizer] state_dir`` is a temporary directory here.
"""

import io
import json
import os
import subprocess
import sys

import fixtures
from osc_lib import exceptions

from resq_nova.osc import client as osc_client
from resq_nova.osc import config
from resq_nova.osc.v1 import plan as plan_cmd
from tests import base
from tests.fixtures import resq_api
from tests.unit.resq_nova.optimizer import base as obase

A = 'aaaaaaaa-0000-4000-8000-00000000000a'
B = 'bbbbbbbb-0000-4000-8000-00000000000b'


class FakeClientManager:
    def __init__(self, resq):
        self._resq = resq

    @property
    def resq(self):
        if self._resq is None:
            raise AssertionError('the command asked for the cloud')
        return self._resq


class FakeApp:
    """What a command uses of OpenStackClient's application.

    :param auth: what the command line named (``app.cloud.config``'s
        ``auth``), or None for an application without it.
    """

    def __init__(self, resq, auth=None):
        self.client_manager = FakeClientManager(resq)
        self.stdout = io.StringIO()
        self.stderr = io.StringIO()
        if auth is not None:
            self.cloud = type('Cloud', (), {'config': {'auth': auth}})()


class PlanStoreTestBase(base.TestCase):

    def setUp(self):
        super().setUp()
        self.default_dir = os.path.join(self.tmp, 'optimizer')
        real = config.service_conf

        def service_conf(state_dir=None):
            return real(state_dir or self.default_dir)

        self.useFixture(fixtures.MonkeyPatch(
            'resq_nova.osc.config.service_conf', service_conf))
        self.snapshot = os.path.join(self.tmp, 'snap.json')
        with open(self.snapshot, 'w') as f:
            json.dump(obase.snapshot(
                [obase.host('h1'), obase.host('h2')],
                [obase.inst(A, 'h1', name='fw-0'),
                 obase.inst(B, 'h2')]), f)

    def run_cmd(self, app, cls, *argv):
        cmd = cls(app, None)
        parsed = cmd.get_parser('openstack resq plan').parse_args(
            list(argv) + ['-f', 'json'])
        self.assertEqual(0, cmd.run(parsed))
        return json.loads(app.stdout.getvalue())

    def fails(self, app, cls, *argv):
        exc = self.assertRaises(exceptions.CommandError, self.run_cmd, app,
                                cls, *argv)
        message = str(exc)
        self.assertNotIn('\n', message)
        return message


class PlansInResQAPITest(PlanStoreTestBase):

    def setUp(self):
        super().setUp()
        self.api = self.useFixture(resq_api.ResQAPI())
        self.resq = osc_client.ResQClient(None, None,
                                          self.api.client('admin'))

    def app(self):
        return FakeApp(self.resq)

    def test_a_plan_from_a_snapshot_file_is_where_list_and_show_look(self):
        plan = self.run_cmd(self.app(), plan_cmd.CreatePlan, '--state',
                            self.snapshot)
        self.assertTrue(plan['proposed'], plan['reason'])
        self.assertEqual('resq-api:/plans/%s' % plan['id'], plan['file'])
        rows = self.run_cmd(self.app(), plan_cmd.ListPlan)
        self.assertEqual([(plan['id'], 'proposed')],
                         [(r['ID'], r['State']) for r in rows])
        shown = self.run_cmd(self.app(), plan_cmd.ShowPlan, plan['id'])
        self.assertEqual((plan['id'], 'proposed', plan['moves']),
                         (shown['id'], shown['status'], shown['moves']))
        # Nothing went to the local directory.
        self.assertFalse(os.path.exists(self.default_dir))

    def test_unknown_plan_is_one_line_naming_resq_api(self):
        for cls in (plan_cmd.ShowPlan, plan_cmd.ApplyPlan):
            message = self.fails(self.app(), cls, 'plan-nope')
            self.assertEqual(
                'no plan plan-nope in resq-api at http://resq-api.test; '
                '"openstack resq plan list" lists the plans there', message)

    def test_state_dir_keeps_them_in_files(self):
        state_dir = os.path.join(self.tmp, 'mine')
        plan = self.run_cmd(self.app(), plan_cmd.CreatePlan, '--state',
                            self.snapshot, '--state-dir', state_dir)
        self.assertEqual(os.path.join(state_dir, 'plans',
                                      plan['id'] + '.json'), plan['file'])
        self.assertEqual([], self.run_cmd(self.app(), plan_cmd.ListPlan))
        rows = self.run_cmd(self.app(), plan_cmd.ListPlan, '--state-dir',
                            state_dir)
        self.assertEqual([plan['id']], [r['ID'] for r in rows])
        # A plan file is shown wherever the store is.
        shown = self.run_cmd(self.app(), plan_cmd.ShowPlan, plan['file'])
        self.assertEqual(plan['id'], shown['id'])


class PlansWithoutResQAPITest(PlanStoreTestBase):
    """No resq-api: every command on the default state directory."""

    def check_one_store(self, app):
        plan = self.run_cmd(app(), plan_cmd.CreatePlan, '--state',
                            self.snapshot)
        path = os.path.join(self.default_dir, 'plans', plan['id'] + '.json')
        self.assertEqual(path, plan['file'])
        rows = self.run_cmd(app(), plan_cmd.ListPlan)
        self.assertEqual([(plan['id'], 'proposed', plan['created_at'])],
                         [(r['ID'], r['State'], r['Created']) for r in rows])
        self.assertEqual([], self.run_cmd(app(), plan_cmd.ListPlan,
                                          '--state', 'applied'))
        shown = self.run_cmd(app(), plan_cmd.ShowPlan, plan['id'])
        self.assertEqual((plan['id'], path), (shown['id'], shown['file']))
        message = self.fails(app(), plan_cmd.ShowPlan, 'plan-nope')
        self.assertEqual(
            'no plan plan-nope in %s/plans (nor a file of that name); '
            '"openstack resq plan list" lists the plans there'
            % self.default_dir, message)
        self.assertIn('plan cancel needs resq-api', self.fails(
            app(), plan_cmd.CancelPlan, plan['id']))

    def test_no_cloud_on_the_command_line(self):
        # The cloud is never asked for (FakeClientManager would fail).
        self.check_one_store(lambda: FakeApp(None, auth={}))

    def test_a_cloud_without_resq_api(self):
        resq = osc_client.ResQClient(None, None, None)
        self.check_one_store(lambda: FakeApp(resq))

    def test_listing_creates_nothing(self):
        app = FakeApp(None, auth={})
        self.assertEqual([], self.run_cmd(app, plan_cmd.ListPlan))
        self.assertFalse(os.path.exists(self.default_dir))


class OpenStackShellTest(base.TestCase):
    """``openstack resq plan ...`` itself: which store it picks."""

    def openstack(self, *argv, **env):
        environ = {k: v for k, v in os.environ.items()
                   if not k.startswith('OS_')}
        environ.update(HOME=self.tmp, **env)
        return subprocess.run(
            [sys.executable, '-m', 'openstackclient.shell'] + list(argv),
            capture_output=True, text=True, timeout=120, env=environ)

    def test_without_a_cloud_the_local_store(self):
        proc = self.openstack('resq', 'plan', 'show', 'plan-nope')
        self.assertEqual(1, proc.returncode)
        self.assertEqual(
            'no plan plan-nope in %s/plans (nor a file of that name); '
            '"openstack resq plan list" lists the plans there' %
            config.service_conf().resq_optimizer.state_dir,
            proc.stderr.strip())

    def test_an_endpoint_without_keystone_is_resq_api(self):
        # Nothing listens there: the command went to resq-api.
        proc = self.openstack('resq', 'plan', 'list',
                              OS_AUTH_TYPE='admin_token',
                              OS_ENDPOINT='http://127.0.0.1:9',
                              OS_TOKEN='admin')
        self.assertEqual(1, proc.returncode)
        self.assertIn('cannot reach resq-api', proc.stderr)
        self.assertEqual(1, len(proc.stderr.strip().splitlines()),
                         proc.stderr)
