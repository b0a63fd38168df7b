"""The monitor's counters as the kernel's files give them."""

import os

import fixtures

from resq_agent import monitor
from tests import base


class MonitorReadTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.root = self.useFixture(fixtures.TempDir()).path

    def put(self, group, domain, name, text, mon=None):
        path = os.path.join(self.root, group)
        if mon is not None:
            path = os.path.join(path, 'mon_groups', mon)
        path = os.path.join(path, 'mon_data', 'mon_L3_%02d' % domain)
        os.makedirs(path, exist_ok=True)
        with open(os.path.join(path, name), 'w') as f:
            f.write(text)

    def test_counters_of_every_domain_as_integers(self):
        self.put('resq-cos1', 0, 'llc_occupancy', '1048576\n')
        self.put('resq-cos1', 0, 'mbm_total_bytes', ' 123 \n')
        # A recycled RMID; a file the kernel does not have.
        self.put('resq-cos1', 0, 'mbm_local_bytes', 'Unavailable\n')
        self.put('resq-cos1', 1, 'llc_occupancy', '7')
        os.makedirs(os.path.join(self.root, 'resq-cos1', 'mon_data',
                                 'other'))
        got = monitor.Monitor(self.root).read('resq-cos1')
        self.assertEqual({0: {'llc_occupancy': 1048576,
                              'mbm_total_bytes': 123},
                          1: {'llc_occupancy': 7}}, got)

    def test_a_monitoring_group_and_a_group_without_data(self):
        self.put('resq-cos2', 0, 'llc_occupancy', '42\n', mon='resq-abc')
        m = monitor.Monitor(self.root)
        self.assertEqual({0: {'llc_occupancy': 42}},
                         m.read('resq-cos2', 'resq-abc'))
        self.assertEqual({}, m.read('resq-cos3'))

    def test_read_text_is_the_whole_file(self):
        path = os.path.join(self.root, 'big')
        with open(path, 'w') as f:
            f.write('x' * 10000 + '\n')
        self.assertEqual('x' * 10000 + '\n', monitor._read_text(path))
        # Exactly one read's worth, then nothing.
        with open(path, 'w') as f:
            f.write('y' * monitor._CHUNK)
        self.assertEqual('y' * monitor._CHUNK, monitor._read_text(path))
        with open(path, 'w') as f:
            pass
        self.assertEqual('', monitor._read_text(path))
        self.assertRaises(OSError, monitor._read_text,
                          os.path.join(self.root, 'missing'))
