"""``aio down --purge`` undoes the machine changes of ``up``."""

import os

import fixtures

from tests import base
from tests.cloud import aio


class PurgeTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.state = aio.State(os.path.join(self.tmp, 'state'))
        os.makedirs(self.state.root)
        self.etc = os.path.join(self.tmp, 'etc')
        os.makedirs(self.etc)
        self.sudoers = os.path.join(self.etc, '50_stack_sh')
        self.useFixture(fixtures.MonkeyPatch(
            'tests.cloud.aio.STACK_SUDOERS', self.sudoers))
        self.useFixture(fixtures.MonkeyPatch(
            'tests.cloud.aio._node_machine_paths', lambda node: [
                os.path.join(self.etc, 'resq-' + node),
                os.path.join(self.etc, 'sudoers-' + node)]))
        # No cloud runs: every host is down, nothing to stop.
        for name in ('_stop', 'shared_instances_down', 'drop_databases'):
            self.useFixture(fixtures.MonkeyPatch(
                'tests.cloud.aio.%s' % name, lambda *a, **k: None))
        self.useFixture(fixtures.MonkeyPatch(
            'resq_agent.fake_host.alive', lambda pid: None))
        self.useFixture(fixtures.MonkeyPatch(
            'resq_agent.fake_host.down', lambda paths: None))
        self.useFixture(fixtures.MonkeyPatch(
            'tests.cloud.aio.devstack', self._no_devstack))

    def _no_devstack(self, *args):
        self.fail('the plugin ran on a host that is down: %r' % (args,))

    def _lay_out(self):
        for node in aio.HOSTS:
            os.makedirs(os.path.join(self.etc, 'resq-' + node, 'sub'))
            with open(os.path.join(self.etc, 'sudoers-' + node), 'w') as f:
                f.write('x\n')
        with open(self.sudoers, 'w') as f:
            f.write('stack ALL=(root) NOPASSWD:ALL\n')

    def test_purge_after_the_hosts_stopped_removes_what_up_wrote(self):
        self._lay_out()
        with open(self.state.path('stack-sudoers-written'), 'w') as f:
            f.write(self.sudoers)
        aio.down(self.state, purge=True)
        self.assertEqual([], os.listdir(self.etc))
        self.assertFalse(os.path.exists(self.state.root))

    def test_a_sudoers_rule_up_did_not_write_stays(self):
        self._lay_out()
        aio.down(self.state, purge=True)
        self.assertEqual(['50_stack_sh'], os.listdir(self.etc))

    def test_down_without_purge_touches_no_machine_path(self):
        self._lay_out()
        aio.down(self.state)
        self.assertEqual(5, len(os.listdir(self.etc)))
        self.assertTrue(os.path.exists(self.state.root))


class CloudsYamlTest(base.TestCase):
    """``up`` writes a clouds.yaml openstacksdk reads."""

    def test_both_clouds_load(self):
        from openstack.config import loader
        state = aio.State(os.path.join(self.tmp, 'state'))
        os.makedirs(state.root)
        aio.clouds_yaml(state)
        path = state.path('clouds.yaml')
        self.assertEqual(0o600, os.stat(path).st_mode & 0o777)
        cfg = loader.OpenStackConfig(config_files=[path],
                                     vendor_files=[])
        admin = cfg.get_one(cloud=aio.CLOUD_ADMIN)
        self.assertEqual(('admin', 'admin', aio.KEYSTONE),
                         (admin.auth['username'],
                          admin.auth['project_name'],
                          admin.auth['auth_url']))
        member = cfg.get_one(cloud=aio.CLOUD_MEMBER)
        self.assertEqual(('demo', 'demo'), (member.auth['username'],
                                            member.auth['project_name']))
        self.assertEqual('RegionOne', member.region_name)
