"""libvirt, OVSDB and Placement that accept connections and never answer.

Real sockets: libvirt's remote driver and python-ovs connect to a unix
socket that takes the connection and sends nothing, Placement is a TCP
listener that does the same. Each costs its deadline once; status and
enforcement never wait for them, and the status names the one that hangs.
"""

import contextlib
import io
import json
import os
import threading

from resq_agent.cmd import agent
from resq_agent import ovs
from resq_agent import virt
from resq_common import deadline
from tests.fixtures import hung as hung_fixture
from tests.fixtures import libvirt as libvirt_fixture
from tests.unit.resq_agent import test_manager

A = test_manager.A


def hung_libvirt(test):
    sock = test.useFixture(hung_fixture.HungUnixSocket(
        os.path.join(test.tmp, 'libvirt.sock')))
    return sock, 'qemu+unix:///system?socket=%s' % sock.path


class HungLibvirtTest(test_manager.ManagerTestBase):

    def test_connect_costs_the_deadline_once(self):
        sock, uri = hung_libvirt(self)
        hyp = virt.Hypervisor(uri, timeout=1)
        exc = self.assertRaises(deadline.DependencyHung, hyp.instances)
        self.assertTrue(sock.connected.is_set())
        self.assertIn('libvirt did not answer within 1s', str(exc))
        # The hung connect still holds the worker: the next call is
        # refused at once instead of waiting another deadline.
        exc = self.assertRaises(deadline.DependencyHung, hyp.instance, A)
        self.assertIn('hung since', str(exc))
        self.assertEqual('hung', deadline.health()['libvirt']['state'])

    def test_status_answers_while_a_reconcile_waits_for_libvirt(self):
        sock, uri = hung_libvirt(self)
        mgr = self.make()
        mgr.hypervisor = virt.Hypervisor(uri, timeout=3)
        result = {}
        worker = threading.Thread(
            target=lambda: result.update(mgr.reconcile()), daemon=True)
        worker.start()
        self.assertTrue(sock.connected.wait(10))
        status = {}
        asker = threading.Thread(target=lambda: status.update(mgr.status()),
                                 daemon=True)
        asker.start()
        asker.join(10)
        # The status came back while the reconcile still waited.
        self.assertEqual('resctrl', status.get('backend'))
        worker.join(30)
        self.assertIn('libvirt', result['error'])
        self.assertEqual('hung',
                         mgr.status()['dependencies']['libvirt']['state'])

    def test_libvirt_definitions_are_checked_outside_the_state_lock(self):
        self.doms.add(A, (1,), ways=2)
        mgr = self.make()
        answered = []
        real = mgr.hypervisor.drop_cachetune

        def drop_cachetune(uuid):
            # Another thread asks for the status during the libvirt call.
            asker = threading.Thread(
                target=lambda: answered.append(mgr.status()), daemon=True)
            asker.start()
            asker.join(10)
            return real(uuid)

        mgr.hypervisor.drop_cachetune = drop_cachetune
        mgr.reconcile()
        self.assertEqual(1, len(answered))
        self.assertIn(A, self.masks())


class HungOvsdbTest(test_manager.ManagerTestBase):

    def test_first_connection_is_bounded(self):
        sock = self.useFixture(hung_fixture.HungUnixSocket(
            os.path.join(self.tmp, 'db.sock')))
        ports = ovs.OvsPorts('unix:%s' % sock.path, timeout=1)
        exc = self.assertRaises(ovs.OvsUnavailable, ports.nic_ports)
        self.assertTrue(sock.connected.is_set())
        self.assertIn('ovsdb did not answer within 1s', str(exc))
        exc = self.assertRaises(ovs.OvsUnavailable, ports.rings)
        self.assertIn('hung since', str(exc))
        self.assertEqual('hung', deadline.health()['ovsdb']['state'])


class StatusCommandTest(test_manager.ManagerTestBase):

    def test_status_names_each_hung_dependency(self):
        _, uri = hung_libvirt(self)
        db = self.useFixture(hung_fixture.HungUnixSocket(
            os.path.join(self.tmp, 'db.sock')))
        placement = self.useFixture(hung_fixture.HungService())
        conf_file = os.path.join(self.tmp, 'agent.conf')
        with open(conf_file, 'w') as f:
            f.write('[resq_agent]\nresctrl_root = %s\nsysfs_root = %s\n'
                    'libvirt_uri = %s\nlibvirt_timeout = 2\n'
                    'hypervisor_hostname = cn1\n'
                    'ovsdb_connection = unix:%s\novsdb_timeout = 2\n'
                    '[placement]\nendpoint_override = %s\ntimeout = 2\n'
                    % (self.tree.root, self.sysfs.root, uri, db.path,
                       placement.endpoint))
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = agent.main(['--config-file', conf_file, 'status'])
        self.assertEqual(0, rc, err.getvalue())
        doc = json.loads(out.getvalue())
        deps = doc['dependencies']
        self.assertEqual({'libvirt': 'hung', 'ovsdb': 'hung',
                          'placement': 'hung'},
                         {name: deps[name]['state'] for name in
                          ('libvirt', 'ovsdb', 'placement')})
        self.assertTrue(placement.requested.is_set())
        self.assertTrue(db.connected.is_set())
        self.assertIn('no complete answer', deps['placement']['detail'])
        self.assertNotIn('Traceback', err.getvalue())

    def test_status_of_healthy_dependencies(self):
        conf_file = os.path.join(self.tmp, 'agent.conf')
        with open(conf_file, 'w') as f:
            f.write('[resq_agent]\nresctrl_root = %s\nsysfs_root = %s\n'
                    'libvirt_uri = %s\nhypervisor_hostname = cn1\n'
                    'ovsdb_connection = unix:%s/absent.sock\n'
                    '[placement]\nendpoint_override = '
                    'http://127.0.0.1:9/placement\n'
                    % (self.tree.root, self.sysfs.root, libvirt_fixture.URI,
                       self.tmp))
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(
                io.StringIO()):
            self.assertEqual(0, agent.main(['--config-file', conf_file,
                                            'status']))
        deps = json.loads(out.getvalue())['dependencies']
        self.assertEqual('ok', deps['libvirt']['state'])
        # Nothing listens there: refused at once, not hung.
        self.assertEqual('failed', deps['placement']['state'])
        self.assertIn('GET /', deps['placement']['detail'])
        self.assertEqual('failed', deps['ovsdb']['state'])
        # Not configured, not asked.
        self.assertNotIn('resq-api', deps)
