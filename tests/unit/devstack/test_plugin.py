"""The devstack plugin, phase by phase, under a stand-in for devstack.

``fake_devstack.sh`` implements devstack's ini helpers for real and records
everything else (``setup_develop``, ``run_process``, ``sudo``, ...).
``devstack/settings`` and ``devstack/plugin.sh`` are sourced by bash as
devstack sources them; the fake resctrl tree is built by the real
``resq_fake.resctrl`` and checked with the agent's own discovery, the
example profile is made by the real ``resq-profiler``. ``resq-admit`` needs
Nova and Placement, so a stub prints a plan the real admission code made.
"""

import json
import os
import pwd
import stat
import subprocess
import sys

import fixtures
from oslo_config import cfg

from resq_agent import conf as agent_conf
from resq_agent import discovery
from resq_fake import resctrl as fake_resctrl
from resq_nova.admission import greedy
from resq_nova.admission import reserved as admission
from resq_nova.deploy import flavors
from resq_profiler import nfmodel
from resq_profiler import profiler
from resq_profiler import store as store_mod
from tests import base
from tests.unit.resq_nova.admission import test_reserved as test_admission

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
STAND_IN = os.path.join(HERE, 'fake_devstack.sh')

# What devstack's lib/nova leaves in nova.conf before plugins run.
DEVSTACK_NOVA_CONF = """[DEFAULT]
debug = True

[filter_scheduler]
enabled_filters = ComputeFilter,ComputeCapabilitiesFilter,\
ImagePropertiesFilter,ServerGroupAntiAffinityFilter,\
ServerGroupAffinityFilter,SameHostFilter,DifferentHostFilter

[notifications]
notification_format = unversioned

[oslo_messaging_notifications]
driver = messagingv2
"""
DEVSTACK_FILTERS = ['ComputeFilter', 'ComputeCapabilitiesFilter',
                    'ImagePropertiesFilter', 'ServerGroupAntiAffinityFilter',
                    'ServerGroupAffinityFilter', 'SameHostFilter',
                    'DifferentHostFilter']
ALL_SERVICES = 'rabbit,key,n-api,n-sch,n-cond,n-cpu,placement-api,' \
               'resq-agent,resq-optimizer'


def parse_ini(path):
    """``{section: {option: [values]}}`` as oslo.config reads the file."""
    sections = {}
    cfg.ConfigParser(path, sections).parse()
    return sections


class Devstack(fixtures.Fixture):
    """A devstack-like host: directories, nova.conf, the stand-in, bin/."""

    def __init__(self, services=ALL_SERVICES, nova_conf=DEVSTACK_NOVA_CONF,
                 **env):
        super().__init__()
        self.services = services
        self.nova_conf_text = nova_conf
        self.extra_env = env

    def _script(self, name, text):
        path = os.path.join(self.bin, name)
        with open(path, 'w') as f:
            f.write(text)
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)

    def _setUp(self):
        self.root = self.useFixture(fixtures.TempDir()).path
        d = lambda *p: os.path.join(self.root, *p)  # noqa: E731
        for sub in ('stack', 'data', 'etc/nova', 'bin', 'sudoers.d'):
            os.makedirs(d(sub))
        self.bin = d('bin')
        self.nova_conf = d('etc/nova/nova.conf')
        self.nova_cpu_conf = d('etc/nova/nova-cpu.conf')
        with open(self.nova_conf, 'w') as f:
            f.write(self.nova_conf_text)
        self.calls_file = d('calls')
        self.conf_dir = d('etc/resq')
        self.data_dir = d('data', 'resq')
        self.sudoers = d('sudoers.d', 'resq-nova')
        self.privsep_conf = d('privsep', 'resq-agent-privsep.conf')
        # The fake tree devstack builds as root under /var/lib/resq-fake.
        self.fake_dir = d('fake')
        self.resctrl_root = d('fake', 'resctrl')
        self.sysfs_root = d('fake', 'sysfs')
        self.plan_file = d('plan.json')
        self.refusal_file = d('refusal.txt')
        # The interpreter resq-nova is installed for, as devstack's venv.
        self._script('python3', '#!/bin/sh\nexec %s "$@"\n' % sys.executable)
        # The real resq-profiler; an upload to resq-api (which does not run
        # here) is recorded, and the profile stored as without it.
        self._script('resq-profiler', """#!/bin/bash
echo "resq-profiler $*" >> %(calls)s
args=()
for a in "$@"; do
    [[ $a == --upload || $a == --public ]] || args+=("$a")
done
exec %(python)s -c "import sys; from resq_profiler.cmd.profiler import main; \
sys.exit(main())" "${args[@]}"
""" % {'calls': self.calls_file, 'python': sys.executable})
        self._script('resq-manage', '#!/bin/sh\necho "resq-manage $*" >> '
                     '%s\n' % self.calls_file)
        # resq-admit needs Nova and Placement: print the prepared plan, or
        # refuse the way resq-admit does when there is no room.
        self._script('resq-admit', """#!/bin/bash
echo "resq-admit $*" >> %(calls)s
if [[ -s %(refusal)s ]]; then
    cat %(refusal)s >&2
    exit 1
fi
if [[ ! -s %(plan)s ]]; then
    echo "REFUSED (cluster_capacity): SLO term x: no room" >&2
    exit 1
fi
cat %(plan)s
""" % dict(calls=self.calls_file, plan=self.plan_file,
            refusal=self.refusal_file))
        self.env = {
            'PATH': os.environ.get('PATH', '/usr/bin:/bin'),
            'HOME': self.root,
            'LANG': 'C.UTF-8',
            'DEST': d('stack'),
            'DATA_DIR': d('data'),
            'STACK_USER': _user(),
            'NOVA_CONF': self.nova_conf,
            'NOVA_CPU_CONF': self.nova_cpu_conf,
            'RESQ_DIR': REPO,
            'RESQ_CONF_DIR': self.conf_dir,
            'RESQ_SUDOERS_FILE': self.sudoers,
            'RESQ_PRIVSEP_CONF': self.privsep_conf,
            'RESQ_PRIVSEP_SOCKET_DIR': d('run', 'resq-privsep'),
            'RESQ_RESCTRL_ROOT': self.resctrl_root,
            'RESQ_SYSFS_ROOT': self.sysfs_root,
            'RESQ_FAKE_RESCTRL': 'True',
            'KEYSTONE_SERVICE_URI': 'http://10.0.0.5/identity',
            'ADMIN_PASSWORD': 'secretadmin',
            'SERVICE_PASSWORD': 'secretservice',
            'SERVICE_PROJECT_NAME': 'service',
            'SERVICE_PROTOCOL': 'http',
            'SERVICE_HOST': '10.0.0.5',
            'SERVICE_DOMAIN_NAME': 'Default',
            'REGION_NAME': 'RegionOne',
            'ENABLED_SERVICES': self.services,
            'FAKE_DEVSTACK_CALLS': self.calls_file,
            'FAKE_DEVSTACK_BIN': self.bin,
        }
        self.env.update(self.extra_env)
        if self.env['RESQ_FAKE_RESCTRL'] != 'True':
            del self.env['RESQ_RESCTRL_ROOT'], self.env['RESQ_SYSFS_ROOT']

    def run(self, *phases, check=True):
        """Source settings, then plugin.sh once per phase, in one shell.

        :param phases: e.g. ``('stack', 'install')``.
        :returns: the completed process (stdout, stderr as text).
        """
        lines = ['set -o errexit', 'source %s' % STAND_IN,
                 'source %s/devstack/settings' % REPO]
        for phase in phases:
            lines.append('source %s/devstack/plugin.sh %s'
                         % (REPO, ' '.join(phase)))
        proc = subprocess.run(['bash', '-c', '\n'.join(lines)],
                              env=self.env, capture_output=True, text=True,
                              cwd=self.root)
        if check and proc.returncode:
            raise AssertionError('devstack phases %s failed (%d):\n%s\n%s'
                                 % (phases, proc.returncode, proc.stdout,
                                    proc.stderr))
        return proc

    def calls(self, name=None):
        if not os.path.exists(self.calls_file):
            return []
        with open(self.calls_file) as f:
            lines = f.read().splitlines()
        if name:
            return [line[len(name) + 1:] for line in lines
                    if line.startswith(name + ' ')]
        return lines

    def reset_calls(self):
        if os.path.exists(self.calls_file):
            os.unlink(self.calls_file)

    def read(self, path):
        with open(path) as f:
            return f.read()


def _user():
    return pwd.getpwuid(os.getuid()).pw_name


def _nproc():
    return int(subprocess.run(['nproc'], capture_output=True, text=True,
                              check=True).stdout)


POST_CONFIG = ('stack', 'post-config')
EXTRA = ('stack', 'extra')


class PluginTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.ds = self.useFixture(Devstack())

    def test_settings_define_the_plugin(self):
        self.ds.run()
        self.assertEqual(['resq-nova'], self.ds.calls('define_plugin'))

    def test_install_uses_setup_develop(self):
        self.ds.run(('stack', 'install'))
        self.assertEqual([REPO], self.ds.calls('setup_develop'))

    def test_nova_conf_keeps_nova_filters_and_weighers_and_adds_resq(self):
        self.ds.run(POST_CONFIG)
        nova = parse_ini(self.ds.nova_conf)
        sched = nova['filter_scheduler']
        self.assertEqual(['nova.scheduler.filters.all_filters',
                          'resq_nova.nova.scheduler.filters.ResQFilter'],
                         sched['available_filters'])
        # devstack's list lacks NUMATopologyFilter, which pinned ResQ
        # instances need: it is added next to ResQFilter.
        self.assertEqual(DEVSTACK_FILTERS + ['NUMATopologyFilter',
                                             'ResQFilter'],
                         sched['enabled_filters'][0].split(','))
        self.assertEqual(['nova.scheduler.weights.all_weighers,'
                          'resq_nova.nova.scheduler.weights.ResQWeigher'],
                         sched['weight_classes'])
        # Both: devstack's unversioned notifications stay for their
        # other consumers, and the agent gets the versioned ones.
        self.assertEqual(['both'],
                         nova['notifications']['notification_format'])
        self.assertEqual(['messagingv2'],
                         nova['oslo_messaging_notifications']['driver'])
        self.assertEqual({'profile_dir': [os.path.join(self.ds.data_dir,
                                                       'profiles')],
                          'weigher_multiplier': ['10.0'],
                          'load_discount': ['0.03']}, nova['resq'])
        # Untouched sections stay.
        self.assertEqual(['True'], nova['DEFAULT']['debug'])

    def test_post_config_twice_changes_nothing(self):
        self.ds.run(POST_CONFIG)
        first = {name: self.ds.read(os.path.join(self.ds.conf_dir, name))
                 for name in os.listdir(self.ds.conf_dir)}
        nova = self.ds.read(self.ds.nova_conf)
        self.ds.run(POST_CONFIG)
        self.assertEqual(nova, self.ds.read(self.ds.nova_conf))
        self.assertEqual(first, {
            name: self.ds.read(os.path.join(self.ds.conf_dir, name))
            for name in os.listdir(self.ds.conf_dir)})
        sched = parse_ini(self.ds.nova_conf)['filter_scheduler']
        self.assertEqual(1, sched['available_filters'].count(
            'resq_nova.nova.scheduler.filters.ResQFilter'))

    def test_nova_defaults_are_kept_when_nova_conf_sets_none(self):
        ds = self.useFixture(Devstack(nova_conf='[DEFAULT]\n'))
        ds.run(POST_CONFIG)
        sched = parse_ini(ds.nova_conf)['filter_scheduler']
        self.assertEqual(['nova.scheduler.filters.all_filters',
                          'resq_nova.nova.scheduler.filters.ResQFilter'],
                         sched['available_filters'])
        self.assertEqual('ComputeFilter,ComputeCapabilitiesFilter,'
                         'ImagePropertiesFilter,'
                         'ServerGroupAntiAffinityFilter,'
                         'ServerGroupAffinityFilter,NUMATopologyFilter,'
                         'ResQFilter',
                         sched['enabled_filters'][0])

    def test_numa_filter_is_added_once_and_kept_where_it_is(self):
        # Already enabled (anywhere in the list): left alone, not doubled.
        ds = self.useFixture(Devstack(nova_conf=(
            '[filter_scheduler]\n'
            'available_filters = my.filters.Mine\n'
            'enabled_filters = NUMATopologyFilter,ComputeFilter,Mine\n')))
        ds.run(POST_CONFIG)
        ds.run(POST_CONFIG)
        sched = parse_ini(ds.nova_conf)['filter_scheduler']
        self.assertEqual(['NUMATopologyFilter,ComputeFilter,Mine,'
                          'ResQFilter'], sched['enabled_filters'])
        # An operator's available_filters without Nova's all_filters gets
        # the NUMA filter by its path, once.
        self.assertEqual(
            ['my.filters.Mine',
             'resq_nova.nova.scheduler.filters.ResQFilter',
             'nova.scheduler.filters.numa_topology_filter.'
             'NUMATopologyFilter'], sched['available_filters'])

    def test_operator_filters_and_weighers_are_kept(self):
        ds = self.useFixture(Devstack(nova_conf=(
            '[filter_scheduler]\n'
            'available_filters = nova.scheduler.filters.all_filters\n'
            'available_filters = my.filters.Mine\n'
            'enabled_filters = ComputeFilter, Mine\n'
            'weight_classes = my.weights.Heavy\n')))
        ds.run(POST_CONFIG)
        sched = parse_ini(ds.nova_conf)['filter_scheduler']
        self.assertEqual(['nova.scheduler.filters.all_filters',
                          'my.filters.Mine',
                          'resq_nova.nova.scheduler.filters.ResQFilter'],
                         sched['available_filters'])
        self.assertEqual(['ComputeFilter,Mine,NUMATopologyFilter,'
                          'ResQFilter'],
                         sched['enabled_filters'])
        self.assertEqual(['my.weights.Heavy,'
                          'resq_nova.nova.scheduler.weights.ResQWeigher'],
                         sched['weight_classes'])

    def test_resq_configuration_files(self):
        self.ds.run(POST_CONFIG)
        self.assertEqual(
            ['resq-agent.conf', 'resq-optimizer.conf', 'resq-profiler.conf',
             'resq.conf'], sorted(os.listdir(self.ds.conf_dir)))
        sudo = self.ds.calls('sudo')
        self.assertIn('install -d -o %s -m 755 %s'
                      % (_user(), self.ds.conf_dir), sudo)
        # Root's again once its files are written (root reads nothing
        # there: its privileged daemons' file is RESQ_PRIVSEP_CONF).
        self.assertEqual(['chown root:root %s' % self.ds.conf_dir,
                          'chmod 0755 %s' % self.ds.conf_dir], sudo[-2:])
        creds = {'auth_type': ['password'],
                 'auth_url': ['http://10.0.0.5/identity'],
                 'username': ['admin'], 'password': ['secretadmin'],
                 'user_domain_name': ['Default'], 'project_name': ['admin'],
                 'project_domain_name': ['Default'],
                 'region_name': ['RegionOne']}
        rabbit = ['rabbit://stackrabbit:secret@127.0.0.1:5672/']
        for name in ('resq-agent.conf', 'resq-optimizer.conf',
                     'resq.conf'):
            conf = parse_ini(os.path.join(self.ds.conf_dir, name))
            for group in ('nova', 'placement'):
                self.assertEqual(creds, conf[group], (name, group))
        opt = parse_ini(os.path.join(self.ds.conf_dir, 'resq-optimizer.conf'))
        self.assertEqual([os.path.join(self.ds.data_dir, 'optimizer')],
                         opt['resq_optimizer']['state_dir'])
        # The optimizer scales out only when asked to.
        self.assertEqual(['off'], opt['resq_optimizer']['ondemand_scale_out'])
        self.assertNotIn('repair_isolation', opt['resq_optimizer'])
        self.assertEqual(rabbit, opt['DEFAULT']['transport_url'])
        prof = parse_ini(os.path.join(self.ds.conf_dir,
                                      'resq-profiler.conf'))
        self.assertEqual({'profile_dir': [os.path.join(self.ds.data_dir,
                                                       'profiles')]},
                         prof['resq'])
        self.assertEqual({'driver': ['model']}, prof['resq_profiler'])

    def test_agent_configuration_and_privsep(self):
        if _nproc() < 2:
            self.skipTest('needs two CPUs: one shared, one dedicated')
        self.ds.run(POST_CONFIG)
        path = os.path.join(self.ds.conf_dir, 'resq-agent.conf')
        agent = parse_ini(path)
        self.assertEqual({
            'resctrl_root': [self.ds.resctrl_root],
            'resctrl_fake': ['True'],
            'sysfs_root': [self.ds.sysfs_root],
            'state_dir': [os.path.join(self.ds.data_dir, 'agent')],
            'libvirt_uri': ['qemu:///system'],
            'ondemand_ways': ['0'],
            'ondemand_policy': ['resq'],
            'ondemand_cores': ['0'],
            'ondemand_latency_dir': [os.path.join(self.ds.data_dir,
                                                  'latency')],
            # No memory bandwidth offered unless the local.conf says.
            'memory_bandwidth_mibps': ['0'],
            'default_group_memory_bandwidth_mibps': ['0'],
            # nova.conf had none: the plugin dedicated all CPUs but CPU 0.
            'cpu_dedicated_set': ['1-%d' % (_nproc() - 1)]},
            agent['resq_agent'])
        self.assertEqual(['rabbit://stackrabbit:secret@127.0.0.1:5672/'],
                         agent['DEFAULT']['transport_url'])
        sockets = os.path.join(self.ds.root, 'run', 'resq-privsep')
        for context in ('resctrl', 'pqos', 'openflow'):
            group = agent['resq_privsep_%s' % context]
            self.assertEqual(['%s/%s.sock' % (sockets, context)],
                             group['daemon_socket'])
            self.assertNotIn('helper_command', group)
        # No sudo rule for the agent's user: the one earlier releases
        # wrote is removed.
        self.assertFalse(os.path.exists(self.ds.sudoers))
        self.assertIn('rm -f %s' % self.ds.sudoers, self.ds.calls('sudo'))
        # Root's configuration of the privileged side: root's, in a
        # root-owned directory; the fake tree is allowed there only.
        privsep = parse_ini(self.ds.privsep_conf)
        self.assertEqual({
            'resctrl_root': [self.ds.resctrl_root],
            'resctrl_fake': ['True']}, privsep['resq_agent'])
        self.assertEqual({'socket_dir': [sockets],
                          'client_user': [_user()]},
                         privsep['resq_privsep_daemon'])
        sudo = self.ds.calls('sudo')
        confdir = os.path.dirname(self.ds.privsep_conf)
        self.assertIn('install -d -o root -g root -m 0755 %s' % confdir,
                      sudo)
        # Written to a temporary file of root's beside it, then moved.
        self.assertTrue(any(c.startswith('mktemp -p %s ' % confdir)
                            for c in sudo), sudo)
        self.assertTrue(any(c.startswith('mv -T %s/.privsep.' % confdir)
                            and c.endswith(' ' + self.ds.privsep_conf)
                            for c in sudo), sudo)
        self.assertEqual([], [f for f in os.listdir(confdir)
                              if f.startswith('.privsep.')])
        self.assertEqual(0o644, stat.S_IMODE(
            os.stat(self.ds.privsep_conf).st_mode))
        # The agent's own option parser reads the file.
        conf = cfg.ConfigOpts()
        agent_conf.register_opts(conf)
        conf(['--config-file', path], project='resq')
        self.assertEqual(self.ds.resctrl_root, conf.resq_agent.resctrl_root)

    def test_privileged_daemons_started_as_root(self):
        """One daemon per context, as root, before the agent.

        The command is the one the daemon runs itself with (isolated, no
        bytecode) and reads root's file; the agent's socket options name
        the sockets those daemons listen on.
        """
        from resq_agent import privsep_boot

        self.ds.run(POST_CONFIG)
        self._plan()
        self.ds.reset_calls()
        self.ds.run(EXTRA)
        starts = self.ds.calls('run_process')
        names = [c.split()[0] for c in starts]
        self.assertEqual(['resq-privsep-resctrl', 'resq-privsep-pqos',
                          'resq-privsep-openflow', 'resq-agent'],
                         names[:4])
        python = os.path.join(self.ds.bin, 'python3')
        for context, call in zip(('resctrl', 'pqos', 'openflow'), starts):
            argv = call.split()
            # run_process NAME COMMAND "" root: the command as root.
            self.assertEqual('root', argv[-1], call)
            self.assertEqual(
                [python] + privsep_boot.command(
                    ['--context', context, '--config-file',
                     self.ds.privsep_conf, '--allow-code-owner',
                     _user()])[1:],
                argv[1:-1], call)
        self.ds.reset_calls()
        self.ds.run(('unstack',))
        self.assertEqual(['resq-agent', 'resq-privsep-resctrl',
                          'resq-privsep-pqos', 'resq-privsep-openflow'],
                         self.ds.calls('stop_process')[:4])

    def test_fake_resctrl_tree_is_what_discovery_accepts(self):
        self.ds.run(POST_CONFIG)
        root = self.ds.resctrl_root
        sysfs = self.ds.sysfs_root
        for rel in ('info/L3/cbm_mask', 'info/L3/min_cbm_bits',
                    'info/L3/num_closids', 'info/L3/shareable_bits',
                    'schemata', 'cpus_list', 'tasks',
                    'mon_data/mon_L3_00/llc_occupancy'):
            self.assertTrue(os.path.isfile(os.path.join(root, rel)), rel)
        topo = discovery.discover(root, sysfs)
        self.assertTrue(topo.resctrl_available, topo.reason)
        (dom,) = topo.domains
        self.assertEqual((20, 16, True), (dom.ways, dom.num_closids,
                                          dom.cat))
        self.assertEqual(tuple(fake_resctrl.online_cpus()), dom.cpus)
        # The fake cache has the model platform's shape: example profiles
        # (and the flavors made from them) fit it.
        platform = nfmodel.Platform()
        self.assertEqual(platform.way_size_bytes, dom.way_size_bytes)
        placement = discovery.cache_domain_of(dom, 1)
        self.assertLessEqual(
            set(flavors.shape_traits(_profile(self.conf))),
            set(placement.traits()))

    def test_real_rdt_host_keeps_the_kernel_tree(self):
        ds = self.useFixture(Devstack(RESQ_FAKE_RESCTRL='False'))
        ds.run(POST_CONFIG)
        agent = parse_ini(os.path.join(ds.conf_dir, 'resq-agent.conf'))
        self.assertEqual(['/sys/fs/resctrl'],
                         agent['resq_agent']['resctrl_root'])
        self.assertEqual(['/sys'], agent['resq_agent']['sysfs_root'])
        self.assertEqual(['False'], agent['resq_agent']['resctrl_fake'])
        self.assertFalse(os.path.exists(os.path.join(ds.data_dir,
                                                     'resctrl')))

    def test_nfvnice_on_request(self):
        chains = os.path.join(self.tmp, 'chains.json')
        ds = self.useFixture(Devstack(RESQ_NFVNICE='True',
                                      RESQ_NFVNICE_CHAINS_FILE=chains))
        ds.run(POST_CONFIG)
        path = os.path.join(ds.conf_dir, 'resq-agent.conf')
        conf = cfg.ConfigOpts()
        agent_conf.register_opts(conf)
        conf(['--config-file', path], project='resq')
        self.assertTrue(conf.resq_agent.nfvnice)
        self.assertEqual(chains, conf.resq_agent.nfvnice_chains_file)
        self.assertEqual(os.path.join(ds.data_dir, 'profiles'),
                         conf.resq_agent.nfvnice_profile_dir)

    def test_controller_without_agent(self):
        ds = self.useFixture(Devstack(
            services='rabbit,n-api,n-sch,resq-optimizer'))
        ds.run(POST_CONFIG)
        self.assertEqual(['resq-optimizer.conf', 'resq-profiler.conf',
                          'resq.conf'],
                         sorted(os.listdir(ds.conf_dir)))
        self.assertFalse(os.path.exists(ds.sudoers))

    def test_agent_follows_nova_cpu_conf_at_start(self):
        self.ds.run(POST_CONFIG)
        # nova-cpu.conf is written when nova-compute starts, with the
        # operator's local.conf settings.
        with open(self.ds.nova_cpu_conf, 'w') as f:
            f.write('[compute]\ncpu_dedicated_set = 2-3\n')
        self._plan()
        self.ds.run(EXTRA)
        agent = parse_ini(os.path.join(self.ds.conf_dir, 'resq-agent.conf'))
        self.assertEqual(['2-3'], agent['resq_agent']['cpu_dedicated_set'])

    def test_explicit_dedicated_set_goes_to_nova_and_agent(self):
        ds = self.useFixture(Devstack(RESQ_CPU_DEDICATED_SET='4-7'))
        ds.run(POST_CONFIG)
        nova = parse_ini(ds.nova_conf)
        self.assertEqual(['4-7'], nova['compute']['cpu_dedicated_set'])
        self.assertNotIn('cpu_shared_set', nova['compute'])
        agent = parse_ini(os.path.join(ds.conf_dir, 'resq-agent.conf'))
        self.assertEqual(['4-7'], agent['resq_agent']['cpu_dedicated_set'])

    def test_on_demand_lease_and_latency_dir(self):
        ds = self.useFixture(Devstack(RESQ_ONDEMAND_WAYS='4',
                                      RESQ_ONDEMAND_CORES='2',
                                      RESQ_ONDEMAND_POLICY='durner',
                                      RESQ_ONDEMAND_SCALE_OUT='notify'))
        ds.run(POST_CONFIG)
        agent = parse_ini(os.path.join(ds.conf_dir, 'resq-agent.conf'))
        self.assertEqual(['4'], agent['resq_agent']['ondemand_ways'])
        self.assertEqual(['2'], agent['resq_agent']['ondemand_cores'])
        opt = parse_ini(os.path.join(ds.conf_dir, 'resq-optimizer.conf'))
        self.assertEqual(['notify'],
                         opt['resq_optimizer']['ondemand_scale_out'])
        self.assertEqual(['durner'], agent['resq_agent']['ondemand_policy'])
        latency = os.path.join(ds.data_dir, 'latency')
        self.assertEqual([latency],
                         agent['resq_agent']['ondemand_latency_dir'])
        self.assertTrue(os.path.isdir(latency))
        # The default leases nothing.
        self.ds.run(POST_CONFIG)
        agent = parse_ini(os.path.join(self.ds.conf_dir, 'resq-agent.conf'))
        self.assertEqual(['0'], agent['resq_agent']['ondemand_ways'])

    def test_host_report_interval_only_when_set(self):
        ds = self.useFixture(Devstack(RESQ_HOST_REPORT_INTERVAL='5'))
        ds.run(POST_CONFIG)
        agent = parse_ini(os.path.join(ds.conf_dir, 'resq-agent.conf'))
        self.assertEqual(['5'], agent['resq_agent']['host_report_interval'])
        # Unset: the option keeps its default (the sample's comment).
        self.ds.run(POST_CONFIG)
        agent = parse_ini(os.path.join(self.ds.conf_dir, 'resq-agent.conf'))
        self.assertNotIn('host_report_interval', agent['resq_agent'])

    def test_optimizer_audit_interval_only_when_set(self):
        ds = self.useFixture(Devstack(RESQ_OPTIMIZER_AUDIT_INTERVAL='20'))
        ds.run(POST_CONFIG)
        opt = parse_ini(os.path.join(ds.conf_dir, 'resq-optimizer.conf'))
        self.assertEqual(['20'], opt['resq_optimizer']['audit_interval'])
        self.ds.run(POST_CONFIG)
        opt = parse_ini(os.path.join(self.ds.conf_dir,
                                     'resq-optimizer.conf'))
        self.assertNotIn('audit_interval', opt['resq_optimizer'])

    def _plan(self, ds=None):
        """The plan resq-admit prints for the default example term."""
        ds = ds or self.ds
        prof = _profile(self.conf)
        term = greedy.SLOTerm('lpm', prof, 4.0, 21.0)
        plan = admission.make_plan(term, test_admission.body(
            test_admission.node('h1', pcpu=3),
            test_admission.domain('d1', 'h1', ways=17)),
            flavors.FlavorOptions(1, 512, 1, 'any'))
        doc = plan.to_dict()
        for flavor in doc['flavors']:
            flavor['exists'] = False
        with open(ds.plan_file, 'w') as f:
            json.dump(doc, f)
        return doc

    def test_extra_starts_services_profiles_and_flavors(self):
        self.ds.run(POST_CONFIG)
        doc = self._plan()
        self.ds.reset_calls()
        self.ds.run(EXTRA)
        bin_dir = self.ds.bin
        shared = os.path.join(self.ds.conf_dir, 'resq.conf')
        agent_conf = os.path.join(self.ds.conf_dir, 'resq-agent.conf')
        opt_conf = os.path.join(self.ds.conf_dir, 'resq-optimizer.conf')
        # Each service reads the shared file, then its own (which wins).
        self.assertEqual([
            'resq-agent %s/resq-agent --config-file %s --config-file %s run'
            % (bin_dir, shared, agent_conf),
            'resq-optimizer %s/resq-optimizer --config-file %s '
            '--config-file %s run' % (bin_dir, shared, opt_conf)],
            [c for c in self.ds.calls('run_process')
             if not c.startswith('resq-privsep-')])
        # The real profiler stored the example profile.
        store = store_mod.ProfileStore(os.path.join(self.ds.data_dir,
                                                    'profiles'))
        self.assertEqual('LPM', store.get('lpm-example').name)
        (admit,) = self.ds.calls('resq-admit')
        self.assertIn('--term lpm --profile lpm-example --throughput-mpps 4 '
                      '--latency-p95-us 21', admit)
        self.assertIn('--mem-page-size any --dry-run --format json', admit)
        # One private flavor per planned flavor, with the plan's specs,
        # shared with the demo and admin projects.
        created = self.ds.calls('openstack')
        expected = []
        for flavor in doc['flavors']:
            props = ' '.join('--property %s=%s' % kv for kv in
                             sorted(flavor['extra_specs'].items()))
            expected.append('flavor create --private --vcpus 1 --ram 512 '
                            '--disk 1 %s %s' % (props, flavor['name']))
            expected.append('flavor set --project demo %s' % flavor['name'])
            expected.append('flavor set --project admin %s'
                            % flavor['name'])
        self.assertEqual(expected, created)
        # 4 Mpps of LPM at p95 <= 21 us: one instance with 3 ways.
        self.assertEqual(['resq.lpm.3w'], [f['name'] for f in doc['flavors']])

    def test_existing_flavors_are_not_created_again(self):
        self.ds.run(POST_CONFIG)
        doc = self._plan()
        for flavor in doc['flavors']:
            flavor['exists'] = True
        with open(self.ds.plan_file, 'w') as f:
            json.dump(doc, f)
        self.ds.run(EXTRA)
        self.assertEqual([], self.ds.calls('openstack'))

    def test_no_room_for_the_example_fails_with_a_reason(self):
        ds = self.useFixture(Devstack(RESQ_INVENTORY_TIMEOUT='0'))
        ds.run(POST_CONFIG)
        proc = ds.run(EXTRA, check=False)
        self.assertEqual(1, proc.returncode)
        self.assertIn('REFUSED (cluster_capacity)', proc.stderr)
        self.assertIn('no room for example SLO lpm (4 Mpps at p95 <= 21 us)'
                      ' after 0s; is resq-agent running', proc.stderr)
        self.assertEqual([], ds.calls('openstack'))

    def test_a_refusal_other_than_room_ends_the_wait_at_once(self):
        # Found on the real cloud: a profile resq-api did not have was
        # waited on for RESQ_INVENTORY_TIMEOUT as if the agents were late.
        ds = self.useFixture(Devstack(RESQ_INVENTORY_TIMEOUT='600'))
        ds.run(POST_CONFIG)
        with open(ds.refusal_file, 'w') as f:
            f.write("REFUSED (profile): SLO term lpm: no profile "
                    "'lpm-example' in resq-api\n")
        proc = ds.run(EXTRA, check=False)
        self.assertEqual(1, proc.returncode)
        self.assertEqual([], ds.calls('sleep'))
        self.assertIn("example SLO lpm refused: REFUSED (profile): SLO term "
                      "lpm: no profile 'lpm-example'", proc.stderr)
        self.assertEqual(1, len(ds.calls('resq-admit')))
        self.assertEqual([], ds.calls('openstack'))

    def test_bad_example_term_is_named(self):
        ds = self.useFixture(Devstack(RESQ_EXAMPLE_TERMS='lpm:LPM:6'))
        ds.run(POST_CONFIG)
        proc = ds.run(EXTRA, check=False)
        self.assertEqual(1, proc.returncode)
        self.assertIn("RESQ_EXAMPLE_TERMS entry 'lpm:LPM:6' is not "
                      "TERM:NF:MPPS:P95_US", proc.stderr)

    def test_resq_api_under_uwsgi_registered_and_migrated(self):
        ds = self.useFixture(Devstack(services=ALL_SERVICES + ',resq-api'))
        self._plan(ds)
        ds.run(POST_CONFIG, EXTRA)
        api = parse_ini(os.path.join(ds.conf_dir, 'resq-api.conf'))
        self.assertEqual(['mysql+pymysql://root:pw@127.0.0.1/resq?charset='
                          'utf8'], api['database']['connection'])
        self.assertEqual(['keystone'], api['api']['auth_strategy'])
        self.assertEqual(['resq'], api['keystone_authtoken']['username'])
        # resq-admit reads profiles from resq-api: the example goes there,
        # for every project, with the admin's credentials.
        self.assertEqual(['--config-file %s profile LPM --id lpm-example '
                          '--upload --public' % os.path.join(
                              ds.conf_dir, 'resq-profiler.conf')],
                         ds.calls('resq-profiler'))
        profiler = parse_ini(os.path.join(ds.conf_dir, 'resq-profiler.conf'))
        self.assertEqual(['admin'], profiler['resq_api']['username'])
        # Found on the real cloud: the service user may not apply plans
        # (resq:plans:apply is admin only); the optimizer applies them.
        optimizer = parse_ini(os.path.join(ds.conf_dir,
                                           'resq-optimizer.conf'))
        self.assertEqual(['admin'], optimizer['resq_api']['username'])
        uwsgi = parse_ini(os.path.join(ds.conf_dir, 'resq-api-uwsgi.ini'))
        self.assertEqual(['resq_nova.api.wsgi:application'],
                         uwsgi['uwsgi']['module'])
        self.assertEqual(['RESQ_API_CONFIG=%s,%s' % (
            os.path.join(ds.conf_dir, 'resq.conf'),
            os.path.join(ds.conf_dir, 'resq-api.conf'))],
            uwsgi['uwsgi']['env'])
        # Past saturation: a bounded queue, then Apache's 503 with
        # Retry-After (doc/source/admin/fleet.rst).
        self.assertEqual((['128'], ['30']), (
            uwsgi['uwsgi']['listen'], uwsgi['uwsgi']['harakiri']))
        self.assertEqual(['headers'], ds.calls('enable_apache_mod'))
        with open(os.path.join(ds.root, 'apache', 'resq-api.conf')) as f:
            self.assertEqual(
                '<Location "/resq">\n    Header always setifempty '
                'Retry-After "10" "expr=%{REQUEST_STATUS} == 503"\n'
                '</Location>\n', f.read())
        self.assertEqual(['resq'], ds.calls('recreate_database'))
        self.assertEqual(['--config-file %s db sync' % os.path.join(
            ds.conf_dir, 'resq-api.conf')], ds.calls('resq-manage'))
        self.assertEqual(['resq service'], ds.calls('create_service_user'))
        self.assertEqual(['resq resq resq-nova: NF performance SLOs'],
                         ds.calls('get_or_create_service'))
        self.assertEqual(['resq RegionOne http://10.0.0.5/resq'],
                         ds.calls('get_or_create_endpoint'))
        # The database exists and is migrated before anything starts.
        order = [c.split()[0] for c in ds.calls()]
        self.assertLess(order.index('resq-manage'), order.index('run_process'))
        starts = ds.calls('run_process')
        self.assertIn('resq-api', [c.split()[0] for c in starts])
        self.assertIn('--procname-prefix resq-api --ini %s' % os.path.join(
            ds.conf_dir, 'resq-api-uwsgi.ini'),
            [c for c in starts if c.startswith('resq-api')][0])
        # Agents reach it as the resq service user; resq-admit as the
        # admin, whose project its terms belong to, and the optimizer as
        # the admin too (applying a plan is admin only).
        conf = parse_ini(os.path.join(ds.conf_dir, 'resq-agent.conf'))
        self.assertEqual((['resq'], ['secretservice'], ['service']), (
            conf['resq_api']['username'], conf['resq_api']['password'],
            conf['resq_api']['project_name']))
        admit_conf = parse_ini(os.path.join(ds.conf_dir, 'resq.conf'))
        self.assertEqual(['admin'], admit_conf['resq_api']['username'])
        ds.reset_calls()
        ds.run(('unstack',), ('clean',))
        self.assertIn('resq-api', ds.calls('stop_process'))
        self.assertFalse(os.path.exists(ds.conf_dir))
        self.assertEqual(['%s resq-api' % os.path.join(
            ds.conf_dir, 'resq-api-uwsgi.ini')],
            ds.calls('remove_uwsgi_config'))

    def test_compute_host_starts_only_the_agent(self):
        ds = self.useFixture(Devstack(services='n-cpu,resq-agent'))
        ds.run(POST_CONFIG, EXTRA)
        self.assertEqual(['resq-privsep-resctrl', 'resq-privsep-pqos',
                          'resq-privsep-openflow', 'resq-agent'],
                         [c.split()[0] for c in ds.calls('run_process')])
        self.assertEqual([], ds.calls('resq-admit'))
        self.assertEqual([], ds.calls('openstack'))
        agent = parse_ini(os.path.join(ds.conf_dir, 'resq-agent.conf'))
        self.assertNotIn('username', agent.get('resq_api', {}))

    def test_compute_host_of_a_cloud_with_resq_api_reports_to_it(self):
        # Found on the real cloud: the second compute host's agent never
        # reported to resq-api, which runs on the controller only.
        ds = self.useFixture(Devstack(services='n-cpu,resq-agent',
                                      RESQ_API_ENABLED='True'))
        ds.run(POST_CONFIG, EXTRA)
        self.assertEqual(['resq-privsep-resctrl', 'resq-privsep-pqos',
                          'resq-privsep-openflow', 'resq-agent'],
                         [c.split()[0] for c in ds.calls('run_process')])
        agent = parse_ini(os.path.join(ds.conf_dir, 'resq-agent.conf'))
        self.assertEqual(['resq'], agent['resq_api']['username'])

    def test_unstack_stops_and_clean_removes_state(self):
        self._plan()
        self.ds.run(POST_CONFIG, EXTRA)
        self.assertTrue(os.path.isdir(self.ds.data_dir))
        self.ds.reset_calls()
        self.ds.run(('unstack',))
        self.assertEqual(['resq-agent', 'resq-privsep-resctrl',
                          'resq-privsep-pqos', 'resq-privsep-openflow',
                          'resq-optimizer', 'resq-api'],
                         self.ds.calls('stop_process'))
        self.assertTrue(os.path.isdir(self.ds.resctrl_root))
        self.ds.run(('clean',))
        self.assertFalse(os.path.exists(self.ds.data_dir))
        self.assertFalse(os.path.exists(self.ds.conf_dir))
        self.assertFalse(os.path.exists(self.ds.sudoers))
        self.assertFalse(os.path.exists(self.ds.privsep_conf))
        # The fake tree the plugin built as root goes too.
        self.assertFalse(os.path.exists(self.ds.resctrl_root))
        self.assertFalse(os.path.exists(self.ds.sysfs_root))
        # nova.conf belongs to devstack's nova and stays.
        self.assertTrue(os.path.exists(self.ds.nova_conf))


def _profile(conf):
    """The example profile: LPM with the model driver, as devstack makes."""
    return profiler.run(conf, 'LPM', nfmodel.Traffic(64, 100000),
                        profile_id='lpm-example')


class StandInTest(base.TestCase):
    """The stand-in's ini helpers behave as devstack's inc/ini-config."""

    def sh(self, script):
        path = os.path.join(self.tmp, 'x.conf')
        proc = subprocess.run(
            ['bash', '-c', 'source %s\nf=%s\n%s' % (STAND_IN, path, script)],
            env={'PATH': os.environ.get('PATH', '/usr/bin:/bin'),
                 'FAKE_DEVSTACK_CALLS': os.path.join(self.tmp, 'calls')},
            capture_output=True, text=True, check=True)
        text = open(path).read() if os.path.exists(path) else None
        return proc.stdout, text

    def test_iniset_creates_replaces_and_inserts_after_the_header(self):
        out, text = self.sh(
            'iniset $f DEFAULT debug True\n'
            'iniset $f a x 1\n'
            'iniset $f DEFAULT debug False\n'
            'iniset $f DEFAULT verbose "two  words"\n'
            'iniget $f DEFAULT debug\n'
            'echo "[$(iniget $f nosuch x)]"')
        self.assertEqual('False\n[]\n', out)
        self.assertEqual('\n[DEFAULT]\nverbose = two words\n'
                         'debug = False\n\n[a]\nx = 1\n', text)

    def test_iniadd_appends_and_keeps_duplicates(self):
        out, text = self.sh(
            'iniset $f s k v0\n'
            'iniadd $f s m one two\n'
            'iniadd $f s m one\n'
            'iniget_multiline $f s m\n'
            'inicomment $f s k')
        self.assertEqual('one two one\n', out)
        self.assertEqual('\n[s]\nm = one\nm = two\nm = one\n#k = v0\n',
                         text)
