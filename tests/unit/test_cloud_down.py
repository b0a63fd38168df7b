"""``aio down --purge`` undoes the machine changes of ``up``."""

import os
import signal
import subprocess
import sys
import time

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
            'tests.cloud.aio._node_machine_paths', lambda state, node: [
                os.path.join(self.etc, 'resq-' + node),
                os.path.join(self.etc, 'sudoers-' + node)]))
        # No cloud runs: every host is down, nothing to stop.
        for name in ('_stop', 'shared_instances_down', 'drop_databases'):
            self.useFixture(fixtures.MonkeyPatch(
                'tests.cloud.aio.%s' % name, lambda *a, **k: None))
        self.useFixture(fixtures.MonkeyPatch(
            'resq_fake.host.alive', lambda pid: None))
        self.useFixture(fixtures.MonkeyPatch(
            'resq_fake.host.down', lambda paths: None))
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
        self.addCleanup(aio._layout, aio.NAME, aio.PORT_OFFSET, aio.HOSTS,
                        aio.MACHINE_PATHS)
        for var in ('RESQ_CLOUD_HOSTS', 'RESQ_CLOUD_NAME',
                    'RESQ_CLOUD_PORT_OFFSET'):
            self.useFixture(fixtures.EnvironmentVariable(var))
        # Every port free, whatever runs on this machine.
        self.taken = set()
        self.useFixture(fixtures.MonkeyPatch(
            'tests.cloud.aio._port_free', lambda port: port not in self.taken))

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

    def test_a_cloud_keeps_the_layout_it_was_made_with(self):
        self.useFixture(fixtures.EnvironmentVariable('RESQ_CLOUD_HOSTS', '4'))
        self.useFixture(fixtures.EnvironmentVariable('RESQ_CLOUD_NAME',
                                                     'two'))
        self.useFixture(fixtures.EnvironmentVariable(
            'RESQ_CLOUD_PORT_OFFSET', '21000'))
        aio.use_hosts(self.state)
        aio.record_hosts(self.state)
        for var in ('RESQ_CLOUD_HOSTS', 'RESQ_CLOUD_NAME',
                    'RESQ_CLOUD_PORT_OFFSET'):
            self.useFixture(fixtures.EnvironmentVariable(var))
        self.assertEqual(('aio-1', 'aio-2', 'aio-3', 'aio-4'),
                         aio.use_hosts(self.state))
        self.assertEqual(('two_', 'two', 'rabbit://guest:guest@127.0.0.1:'
                          '5672/two', 'http://127.0.0.1:26000/v3', 21080,
                          29774), (aio.DB_PREFIX, aio.VHOST,
                                   aio.TRANSPORT_URL, aio.KEYSTONE,
                                   aio.APACHE_PORT, aio.PORTS['nova-api']))
        self.assertEqual(list(range(30477, 30481)),
                         sorted(aio.AGENT_METRICS_PORTS.values()))
        os.unlink(self.state.path('layout.json'))
        self.assertEqual(('aio-1', 'aio-2', 'aio-3'),
                         aio.use_hosts(self.state))
        self.assertEqual(28774, aio.PORTS['nova-api'])

    def test_two_state_directories_two_names_and_offsets(self):
        other = aio.State(os.path.join(self.tmp, 'other'))
        aio.use_hosts(self.state)
        first = (aio.NAME, aio.PORT_OFFSET)
        # The first cloud's ports are taken once it runs.
        self.taken = {p for p in list(aio.PORTS.values()) + [
            aio.APACHE_PORT]}
        aio.use_hosts(other)
        second = (aio.NAME, aio.PORT_OFFSET)
        self.assertEqual(20000, first[1])
        self.assertEqual(21000, second[1])
        self.assertNotEqual(first[0], second[0])
        self.assertTrue(first[0].startswith('aio'))
        self.taken = set(range(1, 65536))
        exc = self.assertRaises(aio.CloudError, aio.use_hosts, other)
        self.assertIn('RESQ_CLOUD_PORT_OFFSET', str(exc))

    def test_the_plugin_files_stay_in_the_state_directory(self):
        aio.use_hosts(self.state)
        for node in aio.HOSTS:
            env = aio.node_env(self.state, node)
            for key in ('RESQ_CONF_DIR', 'RESQ_SUDOERS_FILE',
                        'RESQ_PRIVSEP_CONF', 'RESQ_PRIVSEP_SOCKET_DIR',
                        'DATA_DIR', 'DEST', 'AIO_RUN_DIR', 'AIO_LOG_DIR'):
                self.assertTrue(env[key].startswith(self.state.root + '/'),
                                (node, key, env[key]))
            self.assertEqual(aio.TRANSPORT_URL, env['AIO_TRANSPORT_URL'])
        self.assertEqual('127.0.0.1:%d' % aio.APACHE_PORT,
                         aio.node_env(self.state, aio.HOSTS[0])[
                             'SERVICE_HOST'])
        self.assertEqual([], aio._node_machine_paths(self.state, 'aio-1'))

    def test_a_cloud_made_before_the_layout_keeps_machine_paths(self):
        os.makedirs(self.state.root)
        with open(self.state.path('hosts.list'), 'w') as f:
            f.write('aio-1\naio-2\n')
        self.assertEqual(('aio-1', 'aio-2'), aio.use_hosts(self.state))
        self.assertEqual((8774, '/'), (aio.PORTS['nova-api'], aio.VHOST))
        self.assertIn('/etc/resq', aio._node_machine_paths(self.state,
                                                           'aio-1'))

    def test_bad_host_count_names_the_variable(self):
        for var, bad in (('RESQ_CLOUD_HOSTS', '1'),
                         ('RESQ_CLOUD_HOSTS', '9'),
                         ('RESQ_CLOUD_HOSTS', 'three'),
                         ('RESQ_CLOUD_PORT_OFFSET', '-5'),
                         ('RESQ_CLOUD_NAME', 'A b')):
            self.useFixture(fixtures.EnvironmentVariable(var, bad))
            exc = self.assertRaises(aio.CloudError, aio.use_hosts,
                                    self.state)
            self.assertIn('%s=%s' % (var, bad), str(exc))
            self.useFixture(fixtures.EnvironmentVariable(var))

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


class RunAsModuleTest(base.TestCase):
    """``python -m tests.cloud.aio`` runs the module others import."""

    def test_main_is_the_imported_modules(self):
        import runpy
        import sys
        called = []
        self.useFixture(fixtures.MonkeyPatch(
            'tests.cloud.aio.main', lambda: called.append('imported') or 0))
        self.useFixture(fixtures.MonkeyPatch('sys.argv', ['aio', 'up']))
        exc = self.assertRaises(SystemExit, runpy.run_module,
                                'tests.cloud.aio', run_name='__main__')
        self.assertEqual(0, exc.code)
        # Not a second copy: tests.cloud.watcher and the benchmarks read
        # the layout (name, ports) from the module sys.modules holds.
        self.assertEqual(['imported'], called)
        self.assertIs(aio, sys.modules['tests.cloud.aio'])


class NeighbourTest(base.TestCase):
    """check's neighbour: /etc/resq and port 8774 left as they were."""

    def setUp(self):
        super().setUp()
        self.state = aio.State(os.path.join(self.tmp, 'state'))
        os.makedirs(self.state.path('logs'))
        self.dir = os.path.join(self.tmp, 'etc-resq')
        self.useFixture(fixtures.MonkeyPatch(
            'tests.cloud.aio.NEIGHBOUR_CONF_DIR', self.dir))
        # Something answers on the port already: no resq-api is started.
        self.useFixture(fixtures.MonkeyPatch(
            'tests.cloud.aio._answers', lambda port: 200))
        self.useFixture(fixtures.MonkeyPatch('os.chown',
                                             lambda *a: None))

    def test_untouched_is_no_problem_and_stop_removes_what_it_made(self):
        n = aio.Neighbour(self.state)
        n.start()
        self.assertTrue(os.path.isdir(self.dir))
        self.assertEqual([], n.problems())
        n.stop()
        self.assertFalse(os.path.exists(self.dir))

    def test_a_changed_file_is_named(self):
        os.makedirs(self.dir)
        with open(os.path.join(self.dir, 'resq.conf'), 'w') as f:
            f.write('[DEFAULT]\n')
        n = aio.Neighbour(self.state)
        n.start()
        with open(os.path.join(self.dir, 'resq.conf'), 'a') as f:
            f.write('debug = true\n')
        self.assertEqual(['the cloud changed %s' % self.dir], n.problems())
        n.stop()
        # Not made by the check: left where it was.
        self.assertTrue(os.path.exists(os.path.join(self.dir, 'resq.conf')))

    def test_another_running_checks_neighbour_is_not_compared(self):
        os.makedirs(self.dir)
        with open(os.path.join(self.dir, aio.NEIGHBOUR_MARK), 'w') as f:
            f.write('%d\n' % os.getppid())
        n = aio.Neighbour(self.state)
        n.start()
        # The other check ends and removes its neighbour.
        import shutil
        shutil.rmtree(self.dir)
        self.assertEqual([], n.problems())


class DeadLibvirtdTest(base.TestCase):
    """A host whose libvirtd died is still taken down in full."""

    def setUp(self):
        super().setUp()
        self.state = aio.State(os.path.join(self.tmp, 'state'))
        os.makedirs(self.state.root)
        for name in ('shared_instances_down', 'drop_databases'):
            self.useFixture(fixtures.MonkeyPatch(
                'tests.cloud.aio.%s' % name, lambda *a, **k: None))
        self.useFixture(fixtures.MonkeyPatch(
            'resq_fake.host.down', lambda paths: None))
        self.ran = []

    def _process(self, *where):
        """A process naming the state directory, not this test's child.

        Started by a shell that exits at once, so that it is no zombie of
        ours once stopped; returns its pid when its command line shows.
        """
        run = self.state.path('run', *where)
        os.makedirs(run, exist_ok=True)
        conf = self.state.path('etc', 'resq', 'resq.conf')
        out = subprocess.run(
            ['sh', '-c', '"$0" -c "import time; time.sleep(60)" "$1" '
             '</dev/null >/dev/null 2>&1 & echo $!', sys.executable, conf],
            capture_output=True, text=True, check=True).stdout
        pid = int(out)
        self.addCleanup(self._kill, pid)
        for _ in range(100):
            with open('/proc/%d/cmdline' % pid, 'rb') as f:
                if conf.encode() in f.read():
                    break
            time.sleep(0.05)
        return pid, run

    @staticmethod
    def _kill(pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass

    def _gone(self, pid):
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and aio._running(pid):
            time.sleep(0.05)
        return not aio._running(pid)

    def test_the_agent_of_a_host_without_libvirtd_is_stopped(self):
        # libvirtd is dead and no process of the host is in another mount
        # namespace: unstack cannot run; the pid file still stops it.
        self.useFixture(fixtures.MonkeyPatch(
            'tests.cloud.aio.devstack',
            lambda *a: self.fail('unstack with no way into the host')))
        node = aio.HOSTS[-1]
        pid, run = self._process(node)
        with open(os.path.join(run, 'resq-agent.pid'), 'w') as f:
            f.write('%d\n' % pid)
        aio.down(self.state)
        self.assertTrue(self._gone(pid))
        self.assertFalse(os.path.exists(os.path.join(run, 'resq-agent.pid')))

    def test_unstack_enters_through_a_process_of_the_host(self):
        node = aio.HOSTS[0]
        self.useFixture(fixtures.MonkeyPatch(
            'resq_fake.host.inside_pid',
            lambda paths, holders: 4242 if paths.state == self.state.host(
                node).state else None))
        self.useFixture(fixtures.MonkeyPatch(
            'tests.cloud.aio.devstack',
            lambda state, n, *phase: self.ran.append((n,) + phase)))
        aio.down(self.state)
        self.assertEqual([(node, 'unstack')], self.ran)

    def test_a_failed_unstack_falls_back_to_the_pid_files(self):
        node = aio.HOSTS[0]
        self.useFixture(fixtures.MonkeyPatch(
            'resq_fake.host.inside_pid', lambda paths, holders: 4242))

        def fail(state, n, *phase):
            raise aio.CloudError('devstack: unstack failed on %s' % n)
        self.useFixture(fixtures.MonkeyPatch('tests.cloud.aio.devstack',
                                             fail))
        pid, run = self._process(node)
        with open(os.path.join(run, 'nova-compute.pid'), 'w') as f:
            f.write('%d\n' % pid)
        aio.down(self.state)
        self.assertTrue(self._gone(pid))

    def test_what_names_the_state_directory_is_swept_and_named(self):
        # No pid file names it (a privileged daemon the agent started).
        self.useFixture(fixtures.MonkeyPatch(
            'tests.cloud.aio.devstack', lambda *a: None))
        pid, _ = self._process()
        said = []
        self.useFixture(fixtures.MonkeyPatch('tests.cloud.aio.say',
                                             said.append))
        self.assertIn(pid, aio.leftovers(self.state.root))
        aio.down(self.state)
        self.assertTrue(self._gone(pid))
        self.assertTrue(any('pid %d' % pid in s for s in said), said)
        self.assertEqual({}, aio.leftovers(self.state.root))

    def test_the_caller_is_not_a_leftover(self):
        # This test process's own command line does not name the root,
        # but its ancestors' might: none of them is ever swept.
        self.assertNotIn(os.getpid(), aio.leftovers('/'))
        self.assertNotIn(os.getppid(), aio.leftovers('/'))
