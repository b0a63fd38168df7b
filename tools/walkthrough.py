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
"""The operator's walk-through, run for real, every output recorded.

For ``doc/source/admin/walkthrough.rst``.

Run it from the repository root with the functional test environment::

    .tox/functional/bin/python tools/walkthrough.py [OUTPUT_DIR]

(default output: ``doc/source/admin/walkthrough``). It starts Nova's
functional harness (nova-api, conductor, scheduler with the ResQ filter and
weigher, two nova-compute hosts on the libvirt driver over fakelibvirt) and
Placement in-process, builds a fake resctrl tree per host
(``resq_fake.resctrl``), and then runs every command of the
walk-through in this process through its ``main()`` (the ``openstack resq``
commands through their cliff classes), with configuration files as an
operator writes them. Each output file holds the command line as shown in
the guide, then what the command printed on standard output.

What differs from a real cloud, and is said in the guide:

* Keystone: the harness's nova-api reads the caller from ``X-Auth-*``
  headers; the clients built from the ``[nova]`` options get those headers
  added (:func:`_with_identity`). Placement runs with ``noauth2``.
* The agent reads instances from libvirt's ``test:///default`` driver,
  while Nova's computes run on fakelibvirt: the domains of the servers of
  the host whose agent enforces are defined there with the vCPU pinning
  Nova chose (:meth:`WalkthroughBase._mirror_domains`). That host's agent
  enforces; the other host's agent only reports its inventory.
* The temporary working directory is shown as :data:`SHOWN_WORKDIR`.
"""

import contextlib
import io
import os
import re
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

# Nova's harness needs eventlet's patching before anything else loads.
import tests.functional  # noqa: E402,F401,I202

import fixtures  # noqa: E402
from nova.tests.fixtures import libvirt as fakelibvirt  # noqa: E402
import yaml  # noqa: E402

from resq_agent.cmd import agent as agent_cmd  # noqa: E402
from resq_common.conf import clients  # noqa: E402
from resq_fake import resctrl as fake_resctrl  # noqa: E402
from resq_nova.cmd import admit as admit_cmd  # noqa: E402
from resq_nova.cmd import optimizer as optimizer_cmd  # noqa: E402
from resq_nova.osc import client as osc_client  # noqa: E402
from resq_nova.osc.v1 import host as host_cmd  # noqa: E402
from resq_nova.osc.v1 import server as server_cmd  # noqa: E402
from resq_profiler.cmd import profiler as profiler_cmd  # noqa: E402
from resq_profiler import store as store_mod  # noqa: E402
from tests import base  # noqa: E402
from tests.fixtures import libvirt as libvirt_fixture  # noqa: E402
from tests.functional import test_optimizer  # noqa: E402
from tests.functional import test_osc_plugin  # noqa: E402

DEFAULT_OUTPUT = os.path.join(ROOT, 'doc', 'source', 'admin', 'walkthrough')
SHOWN_WORKDIR = '/home/operator/resq'
IMAGE = '155d900f-4e14-4e4c-a73d-069cbf4541e6'   # the harness's image
HOSTS = ('host1', 'host2')
TRANSPORT_URL = 'rabbit://guest:guest@127.0.0.1:5672/'

CHAIN = [
    {'name': 'nat', 'profile': None, 'throughput_mpps': 4,
     'latency_p95_us': 25, 'chain': 'edge'},
    {'name': 'ids', 'profile': None, 'throughput_mpps': 3,
     'latency_p95_us': 25, 'chain': 'edge'},
]


def _with_identity(load_adapter):
    """``clients.load_adapter`` adding the harness's identity headers."""
    def load(conf, group, service_type, strict=True):
        adapter = load_adapter(conf, group, service_type, strict)
        if service_type == 'compute':
            adapter.additional_headers.update({
                'X-Auth-User': 'admin', 'X-User-Id': 'admin',
                'X-Auth-Project-Id': WalkthroughBase.project_id,
                'X-Roles': 'reader,member,admin'})
        return adapter
    return load


class WalkthroughBase(test_optimizer.OptimizerTestBase):
    """Nova, Placement and the resq commands; :meth:`walk` records them."""

    project_id = None

    def setUp(self):
        super().setUp()
        WalkthroughBase.project_id = self.api.project_id
        self.useFixture(base.PrivsepInProcess(self.conf))
        self.useFixture(fixtures.MonkeyPatch(
            'resq_common.conf.clients.load_adapter',
            _with_identity(clients.load_adapter)))
        self.work = self.useFixture(fixtures.TempDir()).path
        self.domains = self.useFixture(libvirt_fixture.NovaDomains())
        self.outputs = {}

    # -- running commands -------------------------------------------------
    def _shown(self, text):
        return text.replace(self.work, SHOWN_WORKDIR)

    def record(self, name, shown, func, *args, status=0):
        """Run ``func(*args)``; keep ``$ shown`` and its standard output.

        :param status: the exit status expected; when it is not 0, standard
            error is kept as well (where commands explain a refusal).
        """
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = func(*args)
        text = out.getvalue()
        if (rc or 0) != status:
            raise RuntimeError('%s exited %s, not %s: %s %s' % (
                shown, rc, status, text, err.getvalue()))
        if status:
            text += err.getvalue()
        self.outputs[name] = self._shown('$ %s\n%s' % (shown, text))
        return text

    def osc(self, name, shown, cls, *argv):
        """An ``openstack resq`` command through its cliff class."""
        api = self.api
        resq = osc_client.ResQClient.from_adapters(
            clients.noauth_adapter(self.placement.fixture.endpoint,
                                   'placement', {'x-auth-token': 'admin'}),
            clients.noauth_adapter(api.base_url, 'compute', {
                'X-Auth-User': api.auth_user, 'X-User-Id': api.auth_user,
                'X-Auth-Project-Id': api.project_id,
                'X-Roles': ','.join(api.roles)}))
        app = test_osc_plugin.FakeApp(resq)
        cmd = cls(app, None)
        parsed = cmd.get_parser('openstack resq').parse_args(
            list(argv) + ['-f', 'table'])

        def run():
            rc = cmd.run(parsed)
            sys.stdout.write(app.stdout.getvalue())
            return rc
        return self.record(name, shown, run)

    def write(self, path, text):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w') as f:
            f.write(text)
        return path

    # -- the cloud ----------------------------------------------------------
    def _start_host(self, hostname):
        """One socket of 8 cores (0-5 dedicated), 8 + 8 GiB of memory.

        8 GiB in 4 KiB pages and 8 GiB in 2 MiB pages, which the fake trees
        tell the agent too.
        """
        mempages = {0: fakelibvirt.create_mempages(
            [(4, 2 * 1024 * 1024), (2048, 4096)])}
        info = fakelibvirt.HostInfo(cpu_nodes=1, cpu_sockets=1, cpu_cores=8,
                                    cpu_threads=1,
                                    kB_mem=16 * 1024 * 1024,
                                    mempages=mempages)
        self.start_compute(hostname=hostname, host_info=info)

    def _conf_files(self):
        placement = ('[placement]\nauth_type = admin_token\nendpoint = %s\n'
                     'token = admin\n' % self.placement.fixture.endpoint)
        self.resq_conf = self.write(os.path.join(self.work, 'resq.conf'), (
            '[DEFAULT]\ntransport_url = %s\n'
            '[resq]\nprofile_dir = %s/profiles\n'
            '[resq_optimizer]\nstate_dir = %s/optimizer\ntime_limit = 20\n'
            '[nova]\nauth_type = admin_token\nendpoint = %s\n'
            'token = admin\n%s') % (
                TRANSPORT_URL, self.work, self.work,
                self.api.base_url, placement))
        self.agent_conf = {}
        for host in HOSTS:
            root = os.path.join(self.work, host)
            self.agent_conf[host] = self.write(
                os.path.join(self.work, 'agent-%s.conf' % host), (
                    '[resq_agent]\nresctrl_root = %s/resctrl\n'
                    'sysfs_root = %s/sys\nresctrl_fake = True\n'
                    'libvirt_uri = %s\nhypervisor_hostname = %s\n'
                    'cpu_dedicated_set = 0-5\nstate_dir = %s/state\n'
                    '%s') % (root, root, libvirt_fixture.URI, host, root,
                             placement))

    def _mirror_domains(self, host):
        """Define the host's servers in test:///default.

        Pinned as Nova pinned them (fakelibvirt's domain XML), with their
        flavor's specs.
        """
        conn = self.computes[host].driver._host.get_connection()
        for server in self.api.get_servers():
            server = self.api.get_server(server['id'])
            if server['OS-EXT-SRV-ATTR:host'] != host:
                continue
            xml = conn.lookupByUUIDString(server['id']).XMLDesc(0)
            cpus = [int(c) for c in re.findall(
                r'<vcpupin vcpu=["\']\d+["\'] cpuset=["\'](\d+)["\']',
                xml)]
            if not cpus:
                raise RuntimeError('server %s has no pinned vCPUs in its '
                                   'domain XML: %s' % (server['id'], xml))
            specs = server['flavor']['extra_specs']
            self.domains.add(
                server['id'], cpus,
                ways=int(specs['resources_LLC:CUSTOM_LLC_WAY']),
                packet_bytes=int(specs['resq:packet_bytes']),
                name=server['OS-EXT-SRV-ATTR:instance_name'],
                flavor=server['flavor']['original_name'])

    # -- the walk-through ---------------------------------------------------
    def walk(self):
        """Every step; ``{file name: text}`` (also in ``self.outputs``)."""
        for host in HOSTS:
            self._start_host(host)
        self._conf_files()
        profile_id = self._profile()
        self._agents()
        self._admit(profile_id)
        self._enforce()
        self._optimize()
        self._ondemand(profile_id)
        return self.outputs

    # The walk's steps, in order; each records what the guide shows.
    CONF = '--config-file resq.conf'
    ADMIT = ['--image', IMAGE, '--network', 'none']

    def _profile(self):
        """1. Profile the NF; its profile's id."""
        conf = self.CONF
        self.record('01-profile.txt',
                    'resq-profiler %s profile lpm' % conf,
                    profiler_cmd.main,
                    ['--config-file', self.resq_conf, 'profile', 'lpm'])
        store = store_mod.ProfileStore(os.path.join(self.work, 'profiles'))
        profile_id = store.ids()[0]
        self.record('02-profile-list.txt', 'resq-profiler %s list' % conf,
                    profiler_cmd.main,
                    ['--config-file', self.resq_conf, 'list'])
        return profile_id

    def _agents(self):
        """2. The agents.

        A fake resctrl tree per host, what the agent finds, and the
        inventory it reports to Placement.
        """
        for host in HOSTS:
            root = os.path.join(self.work, host)
            argv = ['--resctrl-root', root + '/resctrl', '--sysfs-root',
                    root + '/sys', '--cpus', '0-7', '--memory-mb', '8192',
                    '--hugepages-mb', '8192']
            self.record('03-fake-resctrl-%s.txt' % host,
                        'python -m resq_fake.resctrl %s'
                        % ' '.join(argv), fake_resctrl.main, argv)
        self.record('04-agent-inspect.txt',
                    'resq-agent --config-file agent-host1.conf inspect',
                    agent_cmd.main,
                    ['--config-file', self.agent_conf['host1'], 'inspect'])
        for host in HOSTS:
            self.record('05-agent-reconcile-%s.txt' % host,
                        'resq-agent --config-file agent-%s.conf reconcile'
                        % host, agent_cmd.main,
                        ['--config-file', self.agent_conf[host],
                         'reconcile'])
        self.osc('06-host-list.txt', 'openstack resq host list',
                 host_cmd.ListHost)

    def _admit(self, profile_id):
        """3. Admit SLOs: one term, then a two-term chain from a file."""
        conf, admit = self.CONF, self.ADMIT
        self.record('07-admit.txt',
                    'resq-admit %s --term fw --profile %s '
                    '--throughput-mpps 10 --latency-p95-us 25 --image %s '
                    '--network none' % (conf, profile_id, IMAGE),
                    admit_cmd.main,
                    ['--config-file', self.resq_conf, '--term', 'fw',
                     '--profile', profile_id, '--throughput-mpps', '10',
                     '--latency-p95-us', '25'] + admit)
        chain = [dict(t, profile=profile_id) for t in CHAIN]
        path = self.write(os.path.join(self.work, 'edge-chain.yaml'),
                          yaml.safe_dump(chain, sort_keys=False))
        with open(path) as f:
            self.outputs['08-edge-chain.yaml'] = f.read()
        self.record('09-admit-chain-dry-run.txt',
                    'resq-admit %s --slo-file edge-chain.yaml --dry-run'
                    % conf, admit_cmd.main,
                    ['--config-file', self.resq_conf, '--slo-file', path,
                     '--dry-run'])
        self.record('10-admit-chain.txt',
                    'resq-admit %s --slo-file edge-chain.yaml --image %s '
                    '--network none' % (conf, IMAGE), admit_cmd.main,
                    ['--config-file', self.resq_conf, '--slo-file',
                     path] + admit)
        # A chain the cluster cannot take: refused whole.
        big = [dict(t, name=t['name'] + '-big', profile=profile_id,
                    throughput_mpps=40) for t in CHAIN]
        path = self.write(os.path.join(self.work, 'big-chain.yaml'),
                          yaml.safe_dump(big, sort_keys=False))
        self.record('10a-admit-chain-refused.txt',
                    'resq-admit %s --slo-file big-chain.yaml --image %s '
                    '--network none' % (conf, IMAGE), admit_cmd.main,
                    ['--config-file', self.resq_conf, '--slo-file',
                     path] + admit, status=1)
        self.osc('11-server-show.txt', 'openstack resq server show fw-0',
                 server_cmd.ShowServer, 'fw-0')
        self.osc('12-host-list-after.txt', 'openstack resq host list',
                 host_cmd.ListHost)

    def _enforce(self):
        """4. Enforcement by the agent of the host holding most servers."""
        hosts = [self.api.get_server(s['id'])['OS-EXT-SRV-ATTR:host']
                 for s in self.api.get_servers()]
        busy = max(HOSTS, key=lambda h: (hosts.count(h), h == HOSTS[0]))
        self._mirror_domains(busy)
        agent = ['--config-file', self.agent_conf[busy]]
        shown = 'resq-agent --config-file agent-%s.conf' % busy
        self.record('13-agent-reconcile.txt', shown + ' reconcile',
                    agent_cmd.main, agent + ['reconcile'])
        self.record('14-agent-status.txt', shown + ' status',
                    agent_cmd.main, agent + ['status'])
        # The first class of service: a group serving one instance in
        # each cache domain (which instances: status says, by "clos").
        group = os.path.join(self.work, busy, 'resctrl', 'resq-cos1')
        if os.path.isdir(group):
            with open(os.path.join(group, 'schemata')) as f:
                self.outputs['15-schemata.txt'] = self._shown(
                    '$ cat %s/schemata\n%s' % (group, f.read()))
        self.busy = busy

    def _optimize(self):
        """5. The optimizer's plan and its execution.

        One more instance, booted by hand on the other host through Nova's
        API (another user's), leaves two hosts in use: the plan frees one
        with a live migration.
        """
        conf = self.CONF
        other = [h for h in HOSTS if h != self.busy][0]
        flavor = [f for f in self.api.api_get(
            '/flavors/detail?is_public=None').body['flavors']
            if f['name'] == 'resq.ids.1w'][0]
        self._create_server(name='lb-0', flavor_id=flavor['id'],
                            networks='none', host=other)
        self.osc('16-host-list-two-hosts.txt', 'openstack resq host list',
                 host_cmd.ListHost)
        text = self.record('17-optimizer-plan.txt',
                           'resq-optimizer %s plan' % conf,
                           optimizer_cmd.main,
                           ['--config-file', self.resq_conf, 'plan'])
        plan_id = re.search(r'^plan:\s+(\S+)', text, re.M).group(1)
        self.record('18-optimizer-apply.txt',
                    'resq-optimizer %s apply %s' % (conf, plan_id),
                    optimizer_cmd.main,
                    ['--config-file', self.resq_conf, 'apply', plan_id])
        self.osc('19-host-list-after-plan.txt', 'openstack resq host list',
                 host_cmd.ListHost)

    def _ondemand(self, profile_id):
        """6. On-demand SLOs.

        The freed host leases cores and ways to its local scheduler; an
        on-demand term boots into the lease.
        """
        conf, admit = self.CONF, self.ADMIT
        used = {self.api.get_server(s['id'])['OS-EXT-SRV-ATTR:host']
                for s in self.api.get_servers()}
        free = [h for h in HOSTS if h not in used][0]
        # test:///default holds the enforcing host's servers (step 4): the
        # freed host's agent must not take them for its own.
        for uuid in list(self.domains.uuids):
            self.domains.remove(uuid)
        self.domains.uuids.clear()
        lease = ('[resq_agent]\nondemand_ways = 4\nondemand_cores = 2\n'
                 'ondemand_latency_source = jsonlines\n'
                 'ondemand_latency_dir = %s/latency\n'
                 % os.path.join(self.work, free))
        self.outputs['20-lease-conf.txt'] = self._shown(lease)
        with open(self.agent_conf[free]) as f:
            text = f.read()
        conf_path = self.write(os.path.join(
            self.work, 'agent-%s-lease.conf' % free), text + lease)
        self.record('21-agent-reconcile-lease.txt',
                    'resq-agent --config-file agent-%s.conf reconcile'
                    % free, agent_cmd.main,
                    ['--config-file', conf_path, 'reconcile'])
        self.osc('22-host-list-lease.txt', 'openstack resq host list',
                 host_cmd.ListHost)
        self.record('23-admit-ondemand.txt',
                    'resq-admit %s --slo on-demand --term od-fw --profile %s '
                    '--latency-p95-us 60 --image %s --network none'
                    % (conf, profile_id, IMAGE), admit_cmd.main,
                    ['--config-file', self.resq_conf, '--slo', 'on-demand',
                     '--term', 'od-fw', '--profile', profile_id,
                     '--latency-p95-us', '60'] + admit)
        self.osc('24-host-list-ondemand.txt', 'openstack resq host list',
                 host_cmd.ListHost)


def write_outputs(outputs, directory):
    os.makedirs(directory, exist_ok=True)
    for name in os.listdir(directory):
        if name not in outputs:
            os.unlink(os.path.join(directory, name))
    for name, text in sorted(outputs.items()):
        with open(os.path.join(directory, name), 'w') as f:
            f.write(text)


class Walkthrough(WalkthroughBase):
    output = DEFAULT_OUTPUT

    def test_walk(self):
        write_outputs(self.walk(), self.output)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv:
        Walkthrough.output = os.path.abspath(argv[0])
    result = unittest.TextTestRunner(verbosity=1, stream=sys.stderr).run(
        unittest.defaultTestLoader.loadTestsFromName('test_walk',
                                                     Walkthrough))
    if result.wasSuccessful():
        print('Walk-through written to %s' % Walkthrough.output)
        return 0
    return 1


if __name__ == '__main__':
    sys.exit(main())
