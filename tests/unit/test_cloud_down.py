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
        self.assertEqual(2 * len(aio.HOSTS) + 1, len(os.listdir(self.etc)))
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


class HostsTest(base.TestCase):
    """How many compute hosts, and what each dedicates."""

    def setUp(self):
        super().setUp()
        self.state = aio.State(os.path.join(self.tmp, 'state'))
        # use_hosts sets module globals: put them back afterwards.
        for name in ('HOSTS', 'AGENT_METRICS_PORTS'):
            self.useFixture(fixtures.MonkeyPatch(
                'tests.cloud.aio.%s' % name, getattr(aio, name)))
        self.useFixture(fixtures.EnvironmentVariable('RESQ_CLOUD_HOSTS'))

    def test_default_is_two_mixed_hosts_and_one_all_pinned(self):
        self.assertEqual(('aio-1', 'aio-2', 'aio-3'), aio.use_hosts(
            self.state))
        self.assertEqual([False, False, True],
                         [aio.all_pinned(h) for h in aio.HOSTS])
        self.assertEqual({'cpu_shared_set': '0'}, aio.host_cpus('aio-1'))
        self.assertEqual({'cpu_dedicated_set': '0-%d' % (
            os.cpu_count() - 1), 'cpu_shared_set': ''},
            aio.host_cpus('aio-3'))
        self.assertEqual(3, len(set(aio.AGENT_METRICS_PORTS.values())))

    def test_a_cloud_keeps_the_hosts_it_was_made_with(self):
        self.useFixture(fixtures.EnvironmentVariable('RESQ_CLOUD_HOSTS', '4'))
        aio.use_hosts(self.state)
        aio.record_hosts(self.state)
        self.useFixture(fixtures.EnvironmentVariable('RESQ_CLOUD_HOSTS', '2'))
        self.assertEqual(4, len(aio.use_hosts(self.state)))
        os.unlink(self.state.path('hosts.list'))
        self.assertEqual(('aio-1', 'aio-2'), aio.use_hosts(self.state))

    def test_bad_host_count_names_the_variable(self):
        for bad in ('1', '9', 'three'):
            self.useFixture(fixtures.EnvironmentVariable('RESQ_CLOUD_HOSTS',
                                                         bad))
            exc = self.assertRaises(aio.CloudError, aio.use_hosts,
                                    self.state)
            self.assertIn('RESQ_CLOUD_HOSTS=%s' % bad, str(exc))

    def test_options_alone_mean_check(self):
        seen = {}
        self.useFixture(fixtures.MonkeyPatch(
            'tests.cloud.aio.check',
            lambda state, keep=False: seen.update(keep=keep) or 0))
        self.assertEqual(0, aio.main(['--keep', '--state', self.state.root]))
        self.assertEqual({'keep': True}, seen)

    def test_host_action_refuses_an_unknown_host(self):
        called = []
        self.useFixture(fixtures.MonkeyPatch(
            'tests.cloud.aio.HOST_ACTIONS',
            {'kill-agent': lambda state, host: called.append(host)}))
        self.assertEqual(2, aio.main(['kill-agent', '--state',
                                      self.state.root, '--host', 'aio-7']))
        self.assertEqual([], called)
        self.assertEqual(0, aio.main(['kill-agent', '--state',
                                      self.state.root, '--host', 'aio-3']))
        self.assertEqual(['aio-3'], called)
