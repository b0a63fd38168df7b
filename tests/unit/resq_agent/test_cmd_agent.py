import contextlib
import io
import json
import os

import fixtures

from resq_agent.cmd import agent
from resq_agent import pqos
from tests import base
from tests.fixtures import hung as hung_fixture
from tests.fixtures import libvirt as libvirt_fixture
from tests.fixtures import resctrl as resctrl_fixture
from tests.fixtures import sysfs as sysfs_fixture

A = 'dddddddd-0000-0000-0000-00000000000a'


class AgentCommandTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(base.PrivsepInProcess(self.conf))
        self.sysfs = self.useFixture(sysfs_fixture.SysfsTree(
            domains={0: (0, 1, 2, 3), 1: (4, 5, 6, 7)}, size='16896K',
            ways=11))
        self.tree = self.useFixture(resctrl_fixture.ResctrlTree(
            ways=11, domains=(0, 1), min_cbm_bits=2, shareable_bits=0x600))
        self.conf_file = os.path.join(self.tmp, 'agent.conf')
        with open(self.conf_file, 'w') as f:
            f.write('[resq_agent]\nresctrl_root = %s\nsysfs_root = %s\n'
                    'libvirt_uri = %s\nhypervisor_hostname = cn1\n'
                    '[placement]\nendpoint_override = '
                    'http://127.0.0.1:9/placement\n' % (
                        self.tree.root, self.sysfs.root,
                        libvirt_fixture.URI))

    def run_main(self, *args):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = agent.main(['--config-file', self.conf_file] + list(args))
        return rc, out.getvalue(), err.getvalue()

    def test_inspect_shape(self):
        rc, out, err = self.run_main('inspect')
        self.assertEqual(0, rc, err)
        doc = json.loads(out)
        self.assertEqual([0, 1], [d['id'] for d in doc['cache_domains']])
        dom = doc['cache_domains'][1]
        self.assertEqual([4, 5, 6, 7], dom['cpus'])
        self.assertEqual(11, dom['ways'])
        self.assertEqual(16896 * 1024 // 11, dom['way_size_bytes'])
        self.assertEqual(2, dom['min_cbm_bits'])
        # The tree's foreign group holds one of the 16.
        self.assertEqual(15, dom['num_closids'])
        self.assertEqual(2, dom['io_ways'])
        self.assertFalse(dom['cdp'])
        self.assertEqual({'total': 11, 'reserved': 4}, {
            k: dom['inventory']['CUSTOM_LLC_WAY'][k]
            for k in ('total', 'reserved')})

    def test_inspect_root_option_and_no_resctrl(self):
        cdp = self.useFixture(resctrl_fixture.ResctrlTree(cdp=True,
                                                          ways=20))
        rc, out, _ = self.run_main('inspect', '--root', cdp.root,
                                   '--sysfs-root', self.sysfs.root)
        self.assertTrue(json.loads(out)['cache_domains'][0]['cdp'])
        rc, out, _ = self.run_main('inspect', '--root',
                                   os.path.join(self.tmp, 'missing'))
        self.assertEqual(0, rc)
        doc = json.loads(out)
        self.assertFalse(doc['resctrl_available'])
        self.assertEqual({}, doc['cache_domains'][0]['inventory'])

    def test_reconcile_and_status_without_placement(self):
        doms = self.useFixture(libvirt_fixture.NovaDomains())
        doms.add(A, (5, 6), ways=3, packet_bytes=1518)
        rc, out, err = self.run_main('reconcile')
        # Enforced from the flavor, but Placement failed: exit 1, saying so.
        self.assertEqual(1, rc, err)
        summary = json.loads(out)
        self.assertEqual(1, summary['instances'])
        errors = [ln for ln in err.splitlines() if ln.startswith('ERROR')]
        self.assertEqual(['ERROR: %s; the partitions were enforced from '
                          'what the agent knew (the last answers, the '
                          'flavors)' % summary['placement_error']], errors)
        # The first shared class of service holds it.
        self.assertEqual('5,6\n', self.tree.read('resq-cos1', 'cpus_list'))
        rc, out, err = self.run_main('status')
        self.assertEqual(0, rc, err)
        doc = json.loads(out)
        inst = doc['instances'][0]
        self.assertEqual((A, 1, 3, [5, 6], 1518), (
            inst['uuid'], inst['domain_id'], inst['ways'], inst['cpus'],
            inst['packet_bytes']))
        self.assertEqual(1, inst['clos'])
        self.assertFalse(doc['placement_reachable'])

    def test_reconcile_against_a_placement_that_never_answers(self):
        hung = self.useFixture(hung_fixture.HungService())
        with open(self.conf_file, 'a') as f:
            f.write('[placement]\nendpoint_override = %s\ntimeout = 1\n'
                    % hung.endpoint)
        doms = self.useFixture(libvirt_fixture.NovaDomains())
        doms.add(A, (5, 6), ways=3)
        rc, out, err = self.run_main('reconcile')
        self.assertEqual(1, rc, err)
        self.assertTrue(hung.requested.is_set())
        summary = json.loads(out)
        self.assertIn('timed out', summary['placement_error'])
        # Enforced from what is known (here the flavor) meanwhile.
        self.assertEqual(1, summary['instances'])
        self.assertNotIn('Traceback', err)
        # One log line, and the command's one ERROR line.
        lines = [ln for ln in err.splitlines() if 'Placement' in ln
                 and not ln.startswith('ERROR')]
        self.assertEqual(1, len(lines), err)
        self.assertIn('did not answer within [placement] timeout', lines[0])
        errors = [ln for ln in err.splitlines() if ln.startswith('ERROR')]
        self.assertEqual(1, len(errors), err)
        self.assertIn('did not answer within [placement] timeout',
                      errors[0])

    def test_reconcile_exit_status_says_what_failed(self):
        summaries = {
            'libvirt': {'error': 'libvirt: Failed to connect socket'},
            'placement': {'instances': 0, 'errors': [], 'refused': [],
                          'placement_error': 'Placement is unreachable'},
            'inventory': {'instances': 0, 'errors': [], 'refused': [],
                          'inventory_error': 'Placement PUT /x failed: 409'},
            'writes': {'instances': 2, 'refused': [], 'errors': [
                'write resq-cos1: resctrl at /r is not writable',
                'monitoring group resq-cos1/resq-a: no RMID left']},
        }
        expected = {
            'libvirt': ['ERROR: libvirt: Failed to connect socket; nothing '
                        'was changed: check that libvirtd runs and '
                        '[resq_agent] libvirt_uri'],
            'placement': ['ERROR: Placement is unreachable; the partitions '
                          'were enforced from what the agent knew (the last '
                          'answers, the flavors)'],
            'inventory': ['ERROR: the cache inventory was not reported: '
                          'Placement PUT /x failed: 409'],
            'writes': ['ERROR: enforcement: write resq-cos1: resctrl at /r '
                       'is not writable; the next reconcile retries',
                       'ERROR: enforcement: monitoring group resq-cos1/'
                       'resq-a: no RMID left; the next reconcile retries'],
        }
        for kind, summary in summaries.items():
            self.useFixture(fixtures.MonkeyPatch(
                'resq_agent.cmd.agent._manager',
                lambda conf, s=summary: FakeManager(s)))
            rc, out, err = self.run_main('reconcile')
            self.assertEqual(1, rc, kind)
            self.assertEqual(summary, json.loads(out))
            self.assertEqual(expected[kind], [
                ln for ln in err.splitlines() if ln.startswith('ERROR')])
        # Instances refused a partition: the agent's decision, exit 0.
        refused = {'instances': 0, 'errors': [], 'refused': [
            {'uuid': A, 'reason': 'it has no pinned CPUs'}]}
        self.useFixture(fixtures.MonkeyPatch(
            'resq_agent.cmd.agent._manager',
            lambda conf: FakeManager(refused)))
        rc, out, err = self.run_main('reconcile')
        self.assertEqual(0, rc, err)
        self.assertNotIn('ERROR', err)


class FakeManager:
    def __init__(self, summary):
        self.summary = summary

    def reconcile(self):
        return dict(self.summary)


class PqosBackendTest(base.TestCase):

    def test_pqos_over_msr_is_refused_clearly(self):
        tree = self.useFixture(resctrl_fixture.ResctrlTree())
        self.flags('resq_agent', backend='pqos', pqos_interface='MSR',
                   resctrl_root=tree.root)
        exc = self.assertRaises(pqos.UnsupportedBackend, pqos.load_backend,
                                self.conf)
        self.assertIn('pqos_interface = MSR cannot enforce anything',
                      str(exc))
        self.assertIn('set pqos_interface = OS', str(exc))
        # The command says so in one line and exits non-zero.
        conf_file = os.path.join(self.tmp, 'msr.conf')
        with open(conf_file, 'w') as f:
            f.write('[resq_agent]\nbackend = pqos\npqos_interface = MSR\n'
                    'resctrl_root = %s\nhypervisor_hostname = cn1\n'
                    'libvirt_uri = %s\n[placement]\nendpoint_override = '
                    'http://127.0.0.1:9/\n'
                    % (tree.root, libvirt_fixture.URI))
        err = io.StringIO()
        out = contextlib.redirect_stdout(io.StringIO())
        with out, contextlib.redirect_stderr(err):
            rc = agent.main(['--config-file', conf_file, 'reconcile'])
        self.assertEqual(1, rc)
        lines = [ln for ln in err.getvalue().splitlines()
                 if ln.startswith('ERROR')]
        self.assertEqual(1, len(lines), err.getvalue())
        self.assertIn('pqos_interface = MSR cannot enforce', lines[0])
        self.assertNotIn('Traceback', err.getvalue())

    def test_missing_library_names_the_fallback(self):
        logs = self.useFixture(fixtures.FakeLogger())
        tree = self.useFixture(resctrl_fixture.ResctrlTree())
        self.flags('resq_agent', backend='pqos', resctrl_root=tree.root)
        backend = pqos.load_backend(self.conf)
        self.assertEqual('resctrl', backend.name)
        # The real wrapper (test-requirements) fails to load libpqos.so.5
        # on Debian; without the wrapper the message says to install it.
        self.assertIn('Falling back to the resctrl backend', logs.output)
        self.assertTrue('cannot load libpqos.so.5' in logs.output
                        or 'pqos Python package is not installed'
                        in logs.output, logs.output)

    def test_resctrl_by_default(self):
        self.assertEqual('resctrl', pqos.load_backend(self.conf).name)
