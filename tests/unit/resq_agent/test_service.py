import socket

from resq_agent import rpc
from resq_agent import service
from tests import base


class BrokerProbeTest(base.TestCase):

    def setUp(self):
        super().setUp()
        rpc.register_opts(self.conf)

    def test_hosts_from_transport_url(self):
        self.conf.set_override(
            'transport_url',
            'rabbit://guest:guest@10.0.0.1:5673,guest:guest@10.0.0.2/')
        self.assertEqual([('10.0.0.1', 5673), ('10.0.0.2', 5672)],
                         service.broker_hosts(self.conf))
        self.assertEqual([('h', 1)], service.broker_hosts(
            self.conf, 'rabbit://u:p@h:1/'))

    def test_refused_port_gives_a_reason(self):
        sock = socket.socket()
        sock.bind(('127.0.0.1', 0))
        port = sock.getsockname()[1]
        sock.close()
        ok, reason = service.broker_reachable([('127.0.0.1', port)], 1)
        self.assertFalse(ok)
        self.assertIn('127.0.0.1:%d' % port, reason)

    def test_listening_port_is_reachable(self):
        sock = socket.socket()
        sock.bind(('127.0.0.1', 0))
        sock.listen(1)
        self.addCleanup(sock.close)
        self.assertEqual((True, None), service.broker_reachable(
            [('127.0.0.1', sock.getsockname()[1])], 1))

    def test_compute_host(self):
        self.assertEqual(socket.gethostname(), service.compute_host(self.conf))
        self.flags('resq_agent', compute_host='cmp7')
        self.assertEqual('cmp7', service.compute_host(self.conf))
