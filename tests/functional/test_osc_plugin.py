"""``openstack resq`` commands against real Nova and Placement.

The cliff commands run in-process with a stand-in for OpenStackClient's
application whose ``client_manager.resq`` is the plugin's own client
(:class:`resq_nova.osc.client.ResQClient`) on no-auth keystoneauth adapters
to the harness's in-process nova-api and Placement; their output goes
through cliff's real JSON formatter. Hosts run Nova's libvirt driver over
fakelibvirt and report their cache domains as the agent does; plans are
applied with real live migrations (see ``test_optimizer``).
"""

import importlib.metadata
import io
import json
import os
import subprocess
import sys

import fixtures
from osc_lib import exceptions
import testtools

from resq_common.clients import compute as compute_mod
from resq_common.conf import clients
from resq_common import profile as profile_mod
from resq_nova.optimizer import execute
from resq_nova.osc import client as osc_client
from resq_nova.osc.v1 import host as host_cmd
from resq_nova.osc.v1 import plan as plan_cmd
from resq_nova.osc.v1 import profile as profile_cmd
from resq_nova.osc.v1 import server as server_cmd
from resq_nova.osc.v1 import slo as slo_cmd
from resq_profiler import store as store_mod
from tests.fixtures import resq_api
from tests.functional import test_nova_admission
from tests.functional import test_optimizer
from tests.unit.resq_profiler import test_profile

COMMANDS = {
    'resq_agent_list': 'resq_nova.osc.v1.agent:ListAgent',
    'resq_agent_show': 'resq_nova.osc.v1.agent:ShowAgent',
    'resq_host_list': 'resq_nova.osc.v1.host:ListHost',
    'resq_host_show': 'resq_nova.osc.v1.host:ShowHost',
    'resq_server_show': 'resq_nova.osc.v1.server:ShowServer',
    'resq_plan_create': 'resq_nova.osc.v1.plan:CreatePlan',
    'resq_plan_show': 'resq_nova.osc.v1.plan:ShowPlan',
    'resq_plan_apply': 'resq_nova.osc.v1.plan:ApplyPlan',
    'resq_profile_list': 'resq_nova.osc.v1.profile:ListProfile',
    'resq_profile_show': 'resq_nova.osc.v1.profile:ShowProfile',
    'resq_profile_validate': 'resq_nova.osc.v1.profile:ValidateProfile',
    'resq_slo_admit': 'resq_nova.osc.v1.slo:AdmitSLO',
    'resq_plan_list': 'resq_nova.osc.v1.plan:ListPlan',
    'resq_plan_cancel': 'resq_nova.osc.v1.plan:CancelPlan',
    'resq_profile_upload': 'resq_nova.osc.v1.profile:UploadProfile',
    'resq_profile_delete': 'resq_nova.osc.v1.profile:DeleteProfile',
    'resq_slo_list': 'resq_nova.osc.v1.slo:ListSLO',
    'resq_slo_show': 'resq_nova.osc.v1.slo:ShowSLO',
    'resq_slo_release': 'resq_nova.osc.v1.slo:ReleaseSLO',
    'resq_slo_delete': 'resq_nova.osc.v1.slo:DeleteSLO',
}


class FakeClientManager:
    def __init__(self, resq):
        self.resq = resq


class FakeApp:
    """What a command uses of OpenStackClient's application."""

    def __init__(self, resq):
        self.client_manager = FakeClientManager(resq)
        self.stdout = io.StringIO()
        self.stderr = io.StringIO()


class OSCTestBase(test_optimizer.OptimizerTestBase):

    def setUp(self):
        super().setUp()
        api = self.api
        headers = {'X-Auth-User': api.auth_user,
                   'X-User-Id': api.auth_user,
                   'X-Auth-Project-Id': api.project_id,
                   'X-Roles': ','.join(api.roles)}
        # The plugin's client, built as make_client() builds it but on
        # no-auth adapters.
        self.resq = osc_client.ResQClient.from_adapters(
            clients.noauth_adapter(self.placement.fixture.endpoint,
                                   'placement', {'x-auth-token': 'admin'}),
            clients.noauth_adapter(api.base_url, 'compute', headers))
        self.resq.compute.poll_interval = 0.1
        self.profiles = self.useFixture(fixtures.TempDir()).path
        self.flags(profile_dir=self.profiles, group='resq')

    def run_cmd(self, cls, *argv):
        """Run a command with ``-f json``; its parsed output."""
        app = FakeApp(self.resq)
        cmd = cls(app, None)
        parsed = cmd.get_parser('openstack resq').parse_args(
            list(argv) + ['-f', 'json'])
        rc = cmd.run(parsed)
        self.assertEqual(0, rc)
        self.stderr_text = app.stderr.getvalue()
        return json.loads(app.stdout.getvalue())

    def fails(self, cls, *argv):
        """The one-line message of a command that fails."""
        exc = self.assertRaises(exceptions.CommandError, self.run_cmd, cls,
                                *argv)
        message = str(exc)
        self.assertNotIn('\n', message)
        return message


class HostCommandsTest(OSCTestBase):

    def setUp(self):
        super().setUp()
        self.rp1 = self.start_resq_compute('host1')[0]
        self.rps2 = self.start_resq_compute('host2', sockets=2,
                                            num_closids=7)

    def test_host_list_shows_every_cache_domain(self):
        server = self.boot('host1', ways=3, name='fw')
        rows = self.run_cmd(host_cmd.ListHost)
        self.assertEqual([('host1', 0), ('host2', 0), ('host2', 1)],
                         [(r['Host'], r['Domain']) for r in rows])
        h1 = rows[0]
        # 11 ways, 2 of them DDIO's; 4 classes of service, one the
        # default group's; the server holds 3 ways and one class.
        self.assertEqual((11, 2, 3, 6), (h1['Ways Total'],
                                         h1['Ways Reserved'],
                                         h1['Ways Used'], h1['Ways Free']))
        self.assertEqual((4, 1, 2), (h1['CLOS Total'], h1['CLOS Used'],
                                     h1['CLOS Free']))
        self.assertEqual(6, h1['Cores'])
        self.assertIn('CUSTOM_CAT_L3', h1['Traits'])
        # host2: two cells (cores 0-3 and 4-5 dedicated), 3 classes each.
        self.assertEqual([4, 2], [r['Cores'] for r in rows[1:]])
        self.assertEqual([9, 9], [r['Ways Free'] for r in rows[1:]])
        self.assertEqual([4, 4], [r['CLOS Total'] for r in rows[1:]])
        self.assertEqual(3, self.llc_usage(self.rp1), server['id'])

    def test_host_show_names_the_servers_holding_ways(self):
        server = self.boot('host1', ways=3, name='fw')
        data = self.run_cmd(host_cmd.ShowHost, 'host1')
        self.assertEqual('host1', data['host'])
        self.assertEqual(self.client.find_provider('host1')['uuid'],
                         data['provider'])
        self.assertEqual(6, data['ways_free'])
        self.assertEqual(2, data['clos_free'])
        self.assertEqual([self.rp1], [d['provider'] for d in data['domains']])
        self.assertEqual([{'server': server['id'], 'ways': 3, 'clos': 1,
                           'domain': 0}], data['instances'])

    def test_table_output_is_formatted(self):
        app = FakeApp(self.resq)
        cmd = host_cmd.ShowHost(app, None)
        cmd.run(cmd.get_parser('openstack resq host show').parse_args(
            ['host2']))
        table = app.stdout.getvalue()
        # The host's two domains share their 18 free ways; each domain is
        # shown in its cell as key='value' pairs.
        self.assertRegex(table, r'\| ways_free +\| 18 +\|')
        self.assertIn("ways_free='9'", table)

    def test_unknown_host_says_how_to_list_hosts(self):
        message = self.fails(host_cmd.ShowHost, 'no-such-host')
        self.assertIn("no compute host 'no-such-host'", message)
        self.assertIn('"openstack resq host list" lists them', message)

    def test_host_without_cache_domains_names_the_agent(self):
        self.start_compute(hostname='plain')
        message = self.fails(host_cmd.ShowHost, 'plain')
        self.assertIn('is resq-agent running there?', message)


class NoResQProvidersTest(OSCTestBase):

    def test_cloud_without_resq_providers(self):
        self.start_compute(hostname='plain')
        message = self.fails(host_cmd.ListHost)
        self.assertIn('Placement has no ResQ cache-domain providers', message)
        self.assertIn('start resq-agent on the compute hosts', message)


class ServerShowTest(OSCTestBase):

    def setUp(self):
        super().setUp()
        self.rps = self.start_resq_compute('host1', sockets=2,
                                           num_closids=7)

    def test_by_name_and_by_id(self):
        server = self.boot('host1', ways=4, vcpus=2, name='fw-a-0')
        by_name = self.run_cmd(server_cmd.ShowServer, 'fw-a-0')
        by_id = self.run_cmd(server_cmd.ShowServer, server['id'])
        self.assertEqual(by_name, by_id)
        self.assertEqual(server['id'], by_id['id'])
        self.assertEqual('host1', by_id['host'])
        self.assertEqual('reserved', by_id['slo'])
        self.assertEqual('1.5', by_id['throughput_mpps'])
        self.assertEqual(4, by_id['ways'])
        self.assertEqual(1, by_id['classes_of_service'])
        self.assertEqual(2, by_id['vcpus'])
        (rp, _), = self.llc_of(server['id']).items()
        # start_resq_compute returns {domain id: provider uuid}.
        self.assertEqual(rp, self.rps[by_id['cache_domain']])
        self.assertEqual('host1_llc_%d' % by_id['cache_domain'],
                         by_id['cache_provider'])

    def test_server_of_another_project_by_name(self):
        project = self.api.project_id
        self.api.project_id = 'another-project'
        try:
            server = self.boot('host1', ways=2, name='tenant-fw')
        finally:
            self.api.project_id = project
        shown = self.run_cmd(server_cmd.ShowServer, 'tenant-fw')
        self.assertEqual((server['id'], 2), (shown['id'], shown['ways']))

    def test_unknown_server(self):
        message = self.fails(server_cmd.ShowServer, 'no-such-server')
        self.assertIn("no server 'no-such-server' (name or ID)", message)
        self.assertIn('openstack server list --all-projects', message)

    def test_ambiguous_name_asks_for_the_id(self):
        self.boot('host1', ways=2, name='twin')
        self.boot('host1', ways=2, name='twin')
        message = self.fails(server_cmd.ShowServer, 'twin')
        self.assertIn('2 servers have that name, give its ID', message)


class PlanCommandsTest(OSCTestBase):

    def setUp(self):
        super().setUp()
        self.rps = {h: self.start_resq_compute(h)[0]
                    for h in ('host1', 'host2', 'host3')}

    def test_create_show_apply(self):
        servers = [self.boot('host1', ways=3, name='a'),
                   self.boot('host2', ways=2, name='b'),
                   self.boot('host3', ways=2, name='c')]
        state = ['--state-dir', self.state_dir]
        plan = self.run_cmd(plan_cmd.CreatePlan, *state)
        self.assertTrue(plan['proposed'], plan['reason'])
        self.assertEqual((3, 1), (plan['hosts_used_before'],
                                  plan['hosts_used_after']))
        self.assertEqual(2, len(plan['moves']))
        self.assertTrue(os.path.exists(plan['file']))
        self.assertTrue(plan['file'].startswith(self.state_dir))
        # The optimizer's own store sees it.
        stored, _ = self.optimizer.store.load_plan(plan['id'])
        self.assertEqual(plan['moves'], [
            {k: mv[k] for k in plan_cmd.MOVE_FIELDS if k in mv}
            for mv in stored['moves']])

        shown = self.run_cmd(plan_cmd.ShowPlan, plan['id'], *state)
        self.assertEqual(plan, shown)

        applied = self.run_cmd(plan_cmd.ApplyPlan, plan['id'], *state)
        self.assertEqual(execute.APPLIED, applied['status'])
        self.assertEqual([execute.DONE] * 2,
                         [a['outcome'] for a in applied['actions']])
        self.assertIn('done', self.stderr_text)
        self.assertEqual(1, len({self.host_of(self.server(s['id']))
                                 for s in servers}))
        message = self.fails(plan_cmd.ApplyPlan, plan['id'], *state)
        self.assertIn('already applied', message)

    def test_plan_from_a_snapshot_file(self):
        self.boot('host1', ways=3, name='a')
        self.boot('host2', ways=2, name='b')
        live = self.run_cmd(plan_cmd.CreatePlan, '--state-dir',
                            self.state_dir)
        snapshot = os.path.join(self.state_dir, 'snapshots',
                                live['snapshot_id'] + '.json')
        replay = self.run_cmd(plan_cmd.CreatePlan, '--state', snapshot,
                              '--min-hosts-freed', '2', '--state-dir',
                              self.state_dir)
        self.assertFalse(replay['proposed'])
        self.assertNotEqual(live['id'], replay['id'])

    def test_unknown_plan(self):
        message = self.fails(plan_cmd.ShowPlan, 'plan-nope', '--state-dir',
                             self.state_dir)
        self.assertIn('no plan plan-nope in', message)


class ServiceCommandsTest(OSCTestBase):
    """The commands on resq-api: profiles, SLO terms, plans."""

    def setUp(self):
        super().setUp()
        self.resqapi = self.useFixture(resq_api.ResQAPI())
        self.as_persona('member_a')
        self.doc_file = os.path.join(self.profiles, 'fw.json')
        with open(self.doc_file, 'w') as f:
            json.dump(test_profile.make_doc(), f)
        self.pid = test_profile.make_doc()['id']

    def as_persona(self, persona):
        self.resq.service = self.resqapi.client(persona)

    def run_plain(self, cls, *argv):
        app = FakeApp(self.resq)
        cmd = cls(app, None)
        parsed = cmd.get_parser('openstack resq').parse_args(list(argv))
        self.assertEqual(0, cmd.run(parsed))

    def test_profiles(self):
        up = self.run_cmd(profile_cmd.UploadProfile, self.doc_file)
        self.assertEqual((self.pid, 0, 'private', 'p-a'), (
            up['id'], up['generation'], up['visibility'], up['project_id']))
        # Again: nothing changes.
        again = self.run_cmd(profile_cmd.UploadProfile, self.doc_file)
        self.assertEqual(0, again['generation'])
        rows = self.run_cmd(profile_cmd.ListProfile)
        self.assertEqual([self.pid], [r['ID'] for r in rows])
        shown = self.run_cmd(profile_cmd.ShowProfile, self.pid)
        self.assertEqual(20, shown['platform']['llc_ways'])
        message = self.fails(profile_cmd.UploadProfile, self.doc_file,
                             '--public')
        self.assertIn('resq:profiles:create_public', message)
        self.as_persona('member_b')
        self.assertEqual([], self.run_cmd(profile_cmd.ListProfile))
        self.as_persona('member_a')
        self.run_plain(profile_cmd.DeleteProfile, self.pid)
        self.assertEqual([], self.run_cmd(profile_cmd.ListProfile))

    def test_admit_records_the_term_then_release_and_delete(self):
        self.start_resq_compute('host1', ways=20,
                                way_size_bytes=test_nova_admission.WAY_BYTES,
                                huge_pages=True, num_closids=4)
        self.run_cmd(profile_cmd.UploadProfile, self.doc_file)
        doc = self.run_cmd(
            slo_cmd.AdmitSLO, '--term', 'fw-a', '--profile', self.pid,
            '--throughput-mpps', '4', '--latency-p95-us', '25',
            '--image', test_nova_admission.IMAGE, '--network', 'none',
            '--ram-mb', '512', '--boot-timeout', '60')
        uuid = doc['slo_term']
        rows = self.run_cmd(slo_cmd.ListSLO)
        self.assertEqual([(uuid, 'fw-a', 'requested')],
                         [(r['UUID'], r['Name'], r['Status']) for r in rows])
        shown = self.run_cmd(slo_cmd.ShowSLO, uuid)
        self.assertEqual(sorted(i['id'] for i in doc['instances']),
                         sorted(shown['servers']))
        exc = self.assertRaises(exceptions.CommandError, self.run_plain,
                                profile_cmd.DeleteProfile, self.pid)
        self.assertIn('release them', str(exc))
        self.as_persona('member_b')
        self.assertEqual([], self.run_cmd(slo_cmd.ListSLO))
        self.assertIn('no SLO term', self.fails(slo_cmd.ShowSLO, uuid))
        self.as_persona('member_a')
        released = self.run_cmd(slo_cmd.ReleaseSLO, uuid)
        self.assertEqual('released', released['status'])
        self.run_plain(profile_cmd.DeleteProfile, self.pid)
        self.run_plain(slo_cmd.DeleteSLO, uuid)
        self.assertEqual([], self.run_cmd(slo_cmd.ListSLO))

    def test_plans_in_the_service(self):
        for h in ('host1', 'host2'):
            self.start_resq_compute(h)
        self.boot('host1', ways=3, name='a')
        self.boot('host2', ways=2, name='b')
        self.as_persona('admin')
        plan = self.run_cmd(plan_cmd.CreatePlan)
        self.assertTrue(plan['proposed'], plan['reason'])
        self.assertEqual('resq-api:/plans/%s' % plan['id'], plan['file'])
        rows = self.run_cmd(plan_cmd.ListPlan)
        self.assertEqual([(plan['id'], 'proposed')],
                         [(r['ID'], r['State']) for r in rows])
        shown = self.run_cmd(plan_cmd.ShowPlan, plan['id'])
        self.assertEqual('proposed', shown['status'])
        # A member may not apply (nor even read) plans.
        self.as_persona('member_a')
        self.assertIn('resq:plans:read',
                      self.fails(plan_cmd.ApplyPlan, plan['id']))
        self.as_persona('admin')
        applied = self.run_cmd(plan_cmd.ApplyPlan, plan['id'])
        self.assertEqual(execute.APPLIED, applied['status'])
        shown = self.run_cmd(plan_cmd.ShowPlan, plan['id'])
        self.assertEqual('applied', shown['status'])
        self.assertEqual(['succeeded'], [a['outcome']
                                         for a in shown['actions']])
        # Refused before anything is claimed or moved, naming why.
        self.assertIn('refused before the first move: it was already '
                      'applied or cancelled (status applied); make a new '
                      'plan', self.fails(plan_cmd.ApplyPlan, plan['id']))
        self.assertIn('is applied',
                      self.fails(plan_cmd.CancelPlan, plan['id']))


class ProfileCommandsTest(OSCTestBase):

    def setUp(self):
        super().setUp()
        self.prof = profile_mod.Profile.from_dict(test_profile.make_doc())
        store_mod.ProfileStore(self.profiles).put(self.prof)

    def test_list_show_validate(self):
        rows = self.run_cmd(profile_cmd.ListProfile, '--profile-dir',
                            self.profiles)
        self.assertEqual([self.prof.profile_id], [r['ID'] for r in rows])
        self.assertEqual('LPM', rows[0]['NF'])
        shown = self.run_cmd(profile_cmd.ShowProfile, self.prof.profile_id,
                             '--profile-dir', self.profiles)
        self.assertEqual(self.prof.min_ways, shown['min_ways'])
        self.assertEqual(20, shown['platform']['llc_ways'])
        path = os.path.join(self.profiles, self.prof.profile_id + '.json')
        rows = self.run_cmd(profile_cmd.ValidateProfile, path)
        self.assertEqual([[path, self.prof.profile_id, 'valid']],
                         [[r['File'], r['Profile'], r['Result']]
                          for r in rows])

    def test_invalid_profile_names_the_field(self):
        doc = test_profile.make_doc()
        doc['throughput'] = []
        bad = os.path.join(self.profiles, 'bad.json')
        with open(bad, 'w') as f:
            json.dump(doc, f)
        message = self.fails(profile_cmd.ValidateProfile, bad)
        self.assertIn('Invalid profile %s' % bad, message)
        self.assertIn('throughput', message)

    def test_unknown_profile(self):
        message = self.fails(profile_cmd.ShowProfile, 'no-such',
                             '--profile-dir', self.profiles)
        self.assertIn("No profile 'no-such'", message)


class AdmitCommandTest(OSCTestBase):

    def setUp(self):
        super().setUp()
        store_mod.ProfileStore(self.profiles).put(
            profile_mod.Profile.from_dict(test_profile.make_doc()))

    def start_host(self, hostname):
        return self.start_resq_compute(
            hostname, ways=20, way_size_bytes=test_nova_admission.WAY_BYTES,
            huge_pages=True)[0]

    def admit(self, *args):
        return self.run_cmd(
            slo_cmd.AdmitSLO, '--term', 'fw-a', '--profile',
            test_nova_admission.PROFILE_ID, '--throughput-mpps', '10',
            '--latency-p95-us', '25', '--ram-mb', '512', '--image',
            test_nova_admission.IMAGE, '--network', 'none',
            '--profile-dir', self.profiles, '--boot-timeout', '60', *args)

    def test_admit_boots_the_term(self):
        rp = self.start_host('host1')
        dry = self.admit('--dry-run')
        self.assertEqual([2, 2, 1], [i['ways'] for i in dry['instances']])
        self.assertEqual(['to create'] * 2,
                         [f['state'] for f in dry['flavors']])
        self.assertEqual([], self.api.get_servers())
        doc = self.admit()
        self.assertEqual(['fw-a-0', 'fw-a-1', 'fw-a-2'],
                         [i['name'] for i in doc['instances']])
        self.assertEqual({'host1'}, {i['host'] for i in doc['instances']})
        self.assertEqual(['created'] * 2,
                         [f['state'] for f in doc['flavors']])
        self.assertEqual(5, self.llc_usage(rp))
        shown = self.run_cmd(server_cmd.ShowServer, 'fw-a-0')
        self.assertEqual((test_nova_admission.PROFILE_ID, 'fw-a', 2),
                         (shown['profile'], shown['term'], shown['ways']))

    def test_refused_and_missing_options(self):
        self.start_host('host1')
        self._create_server(flavor_id=self.resq_flavor(ways=16),
                            networks='none')
        message = self.fails(slo_cmd.AdmitSLO, '--term', 'fw-a')
        self.assertEqual('openstack resq slo admit needs --profile, '
                         '--throughput-mpps, --latency-p95-us, --image, '
                         '--network', message)
        message = self.assertRaises(exceptions.CommandError, self.admit)
        self.assertIn('REFUSED (cluster_capacity): SLO term fw-a',
                      str(message))
        self.assertIn('2 free ways', str(message))


class AdmitFileCommandTest(OSCTestBase):
    """``openstack resq slo admit --slo-file``: the chain whole or not."""

    def setUp(self):
        super().setUp()
        store_mod.ProfileStore(self.profiles).put(
            profile_mod.Profile.from_dict(test_profile.make_doc()))

    start_host = AdmitCommandTest.start_host

    def chain(self, mpps):
        path = os.path.join(self.profiles, '..', 'chain-%s.yaml' % mpps)
        with open(path, 'w') as f:
            f.write(test_nova_admission.CHAIN % {
                'p': test_nova_admission.PROFILE_ID, 'mpps': mpps})
        return path

    def admit_file(self, path, *args):
        return self.run_cmd(
            slo_cmd.AdmitSLO, '--slo-file', path, '--ram-mb', '512',
            '--image', test_nova_admission.IMAGE, '--network', 'none',
            '--profile-dir', self.profiles, '--boot-timeout', '60', *args)

    def test_admit_a_chain_or_nothing(self):
        rps = [self.start_host(h) for h in ('host1', 'host2')]
        # 3 x 12 Mpps needs 9 classes of service; the hosts have 6.
        exc = self.assertRaises(exceptions.CommandError, self.admit_file,
                                self.chain(12))
        lines = str(exc).splitlines()
        self.assertTrue(all(line.startswith('REFUSED (')
                            for line in lines[:-1]), lines)
        self.assertIn('SLO term ids:', str(exc))
        self.assertTrue(lines[-1].startswith('Nothing was created'))
        self.assertEqual([], self.api.get_servers())
        doc = self.admit_file(self.chain(8))
        self.assertEqual(['fw', 'nat', 'ids'],
                         [t['term'] for t in doc['terms']])
        self.assertEqual({'edge'}, {t['chain'] for t in doc['terms']})
        self.assertEqual(6, len(doc['instances']))
        self.assertEqual({'ACTIVE'}, {i['status'] for i in doc['instances']})
        self.assertEqual(sum(i['ways'] for i in doc['instances']),
                         sum(self.llc_usage(rp) for rp in rps))
        message = self.fails(slo_cmd.AdmitSLO, '--slo-file',
                             self.chain(8), '--term', 'x', '--dry-run')
        self.assertIn('--term describe one term; with --slo-file', message)

    def test_boot_failure_shows_every_outcome(self):
        self.start_host('host1')
        self.start_host('host2')
        real = compute_mod.ComputeClient.create_server

        def create_server(client, name, *args, **kwargs):
            if name == 'nat-1':     # failure injection: Nova refuses one
                raise compute_mod.ComputeError(
                    method='POST', url='/servers', reason='500 injected')
            return real(client, name, *args, **kwargs)

        self.useFixture(fixtures.MockPatchObject(
            compute_mod.ComputeClient, 'create_server', create_server))
        app = FakeApp(self.resq)
        cmd = slo_cmd.AdmitSLO(app, None)
        parsed = cmd.get_parser('openstack resq').parse_args([
            '--slo-file', self.chain(8), '--ram-mb', '512', '--image',
            test_nova_admission.IMAGE, '--network', 'none', '--profile-dir',
            self.profiles, '--boot-timeout', '60', '-f', 'json'])
        exc = self.assertRaises(exceptions.CommandError, cmd.run, parsed)
        self.assertIn('deploying it failed at server nat-1', str(exc))
        lines = app.stderr.getvalue().splitlines()
        status = {line.split()[1].rstrip(':'): line.split()[2].rstrip(':')
                  for line in lines if line.startswith('server ')}
        self.assertEqual({'fw-0': 'ACTIVE', 'fw-1': 'ACTIVE',
                          'nat-0': 'ACTIVE', 'nat-1': 'FAILED',
                          'ids-0': 'NOT', 'ids-1': 'NOT'}, status)
        self.assertIn('500 injected', app.stderr.getvalue())
        self.assertEqual(['fw-0', 'fw-1', 'nat-0'],
                         sorted(s['name'] for s in self.api.get_servers()))


class EntryPointsTest(testtools.TestCase):
    """The packaging metadata registers the plugin and its commands."""

    def test_commands_are_registered(self):
        eps = importlib.metadata.entry_points(group='openstack.resq.v1')
        self.assertEqual(COMMANDS, {ep.name: ep.value for ep in eps})
        for ep in eps:
            self.assertTrue(hasattr(ep.load(), 'take_action'), ep.name)
        plugin, = [ep for ep in importlib.metadata.entry_points(
            group='openstack.cli.extension') if ep.name == 'resq']
        module = plugin.load()
        self.assertEqual('resq', module.API_NAME)
        self.assertTrue(callable(module.make_client))

    def test_openstack_lists_the_commands(self):
        out = subprocess.run(
            [sys.executable, '-m', 'openstackclient.shell', 'command',
             'list', '--group', 'resq', '-f', 'json'],
            capture_output=True, text=True, check=True, timeout=120,
            env=dict(os.environ, HOME=self.useFixture(
                fixtures.TempDir()).path)).stdout
        groups = {g['Command Group']: g['Commands'] for g in json.loads(out)}
        self.assertEqual(sorted(k.replace('_', ' ')
                                for k in COMMANDS),
                         sorted(groups['openstack.resq.v1']))
