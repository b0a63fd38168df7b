"""The command driver's SLOMO contention runs, on recorded outputs."""

import os
import sys

from resq_profiler import drivers
from resq_profiler.drivers import command
from resq_profiler.drivers import counters
from resq_profiler import exception
from resq_profiler import nfmodel
from resq_profiler.slomo import training
from resq_profiler import truth
from tests import base
from tests.fixtures import resctrl as resctrl_fixture

FIXTURES = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir,
                        'fixtures', 'slomo_contention')
FAKE = os.path.join(FIXTURES, 'fake_contention.py')
SECONDS = 5.0


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as f:
        return f.read()


class CounterParsersTest(base.TestCase):

    def test_recorded_outputs(self):
        perf = counters.parse_perf(fixture('perf_stat.csv'))
        self.assertEqual({0, 1, 2}, set(perf))
        self.assertEqual(60211538, perf[0]['LLC-loads'])
        seconds, mon = counters.parse_mon_data(fixture('mon_data.txt'))
        self.assertAlmostEqual(SECONDS, seconds)
        occ, bw = mon[1]
        self.assertEqual((21626880 + 23199744) / 2, occ)
        self.assertAlmostEqual((63510036480 - 1302003712) / SECONDS, bw)
        (nf, heavy) = counters.readings(fixture('perf_stat.csv'),
                                        fixture('mon_data.txt'),
                                        {0: 2.5e8}, [0, 1])
        self.assertAlmostEqual((60211538 + 20512330) / SECONDS,
                               nf.llc_refs_per_s)
        self.assertAlmostEqual((3011220 + 402110) / SECONDS,
                               nf.llc_misses_per_s)
        self.assertEqual(2.5e8, nf.io_bytes_per_s)
        self.assertEqual(0.0, heavy.io_bytes_per_s)
        self.assertGreater(heavy.mem_bw_bytes_per_s, nf.mem_bw_bytes_per_s)

    def test_generic_cache_events(self):
        text = ('CPU3,1000,,cache-references,1,100.00,,\n'
                'CPU3,10,,cache-misses,1,100.00,,\n')
        mon = ('# resq-contention mon_data start 10\n'
               'cpu3/mon_data/mon_L3_00/llc_occupancy:64\n'
               'cpu3/mon_data/mon_L3_00/mbm_total_bytes:0\n'
               'cpu3/mon_data/mon_L3_01/llc_occupancy:64\n'
               'cpu3/mon_data/mon_L3_01/mbm_total_bytes:0\n'
               '# resq-contention mon_data end 12\n'
               'cpu3/mon_data/mon_L3_00/llc_occupancy:64\n'
               'cpu3/mon_data/mon_L3_00/mbm_total_bytes:640\n'
               'cpu3/mon_data/mon_L3_01/llc_occupancy:64\n'
               'cpu3/mon_data/mon_L3_01/mbm_total_bytes:0\n')
        (c,) = counters.readings(text, mon, {}, [3])
        self.assertEqual(truth.Counters(500.0, 5.0, 128.0, 320.0, 0.0), c)

    def test_bad_outputs_are_named(self):
        perf, mon = fixture('perf_stat.csv'), fixture('mon_data.txt')
        cases = [
            (perf.replace('60211538', '<not counted>'), mon,
             'LLC-loads on CPU 0 was <not counted>'),
            ('# nothing\n', mon, 'no per-CPU counts'),
            (perf.replace('LLC-stores', 'other'), mon,
             'has none of the events LLC-loads+LLC-stores'),
            (perf, mon.replace(':18022400', ':Unavailable'),
             "cpu0 llc_occupancy reads 'Unavailable'"),
            (perf, mon.split('# resq-contention mon_data end')[0],
             'mon_data end <time>'),
            (perf, mon.replace('1764079336.250', '1764079331.250'),
             'not after the start'),
            (perf, mon.replace(':1170210816', ':1'),
             'mbm_total_bytes went down'),
        ]
        for p, m, want in cases:
            exc = self.assertRaises(exception.MeasurementError,
                                    counters.readings, p, m, {}, [0, 1])
            self.assertIn(want, str(exc))
        exc = self.assertRaises(exception.MeasurementError,
                                counters.readings, perf, mon, {}, [7])
        self.assertIn('no counts for CPU 7', str(exc))


class CommandContentionTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(base.PrivsepInProcess(self.conf))
        self.tree = self.useFixture(resctrl_fixture.ResctrlTree(ways=8))
        command.register_opts(self.conf)
        self.flags('resq_profiler', driver='command',
                   resctrl_root=self.tree.root, cpu=0,
                   command_duration_s=20, command='unused',
                   contention_command='%s %s {spec}' % (sys.executable,
                                                        FAKE),
                   contention_cpus=[1, 2])
        self.driver = drivers.load('command', self.conf, 'fake',
                                   nfmodel.Traffic())
        self.addCleanup(self.driver.close)
        self.hog = truth.Synthetic(1e8, 32 * 2 ** 20, 'hog')
        self.nic = truth.Synthetic(2e6, 2 ** 20, 'nic', packet_mpps=2.0,
                                   packet_bytes=1518, dma_buffers=4096)

    def test_nf_next_to_two_competitors_in_four_ways(self):
        mpps, nf, (hog, nic) = self.driver.contention_run(
            [self.hog, self.nic], ways=4)
        self.assertAlmostEqual((4.0 - 3.0 / 4) / 1.2, mpps, places=5)
        self.assertEqual('L3:0=f\n', self.tree.read('resq-profiler',
                                                    'schemata'))
        self.assertIn('cores 0,1,2', self.driver.last_output)
        self.assertAlmostEqual((60211538 + 20512330) / SECONDS,
                               nf.llc_refs_per_s)
        self.assertAlmostEqual(mpps * 1e6 * 64, nf.io_bytes_per_s)
        self.assertAlmostEqual((402334811 + 98112040) / SECONDS,
                               hog.llc_refs_per_s)
        self.assertEqual(0.0, hog.io_bytes_per_s)
        # The competitor's ordered packet rate, or what the command says.
        self.assertEqual(2e6 * 1518, nic.io_bytes_per_s)
        self.flags('resq_profiler', contention_command='%s %s {spec} %s' % (
            sys.executable, FAKE, 'cpu2.io_bytes_per_s=1234.5'))
        _, _, (_, nic) = self.driver.contention_run([self.hog, self.nic],
                                                    ways=4)
        self.assertEqual(1234.5, nic.io_bytes_per_s)

    def test_competitors_alone_and_whole_llc(self):
        mpps, nf, read = self.driver.contention_run([self.hog],
                                                    with_nf=False)
        self.assertIsNone(mpps)
        self.assertIsNone(nf)
        self.assertEqual(1, len(read))
        self.assertEqual('L3:0=ff\n', self.tree.read('resq-profiler',
                                                     'schemata'))
        self.assertIn('cores 1,', self.driver.last_output)

    def test_trains_a_model_through_the_command_driver(self):
        self.flags('resq_profiler', contention_cpus=list(range(1, 9)))
        doc = training.train(self.driver, 'fake-64B', runs=12,
                             palette_size=4, draws=2)
        self.assertEqual('command', doc['training']['driver'])
        self.assertEqual([1, 2, 3, 5, 6, 8], doc['training']['class_ways'])
        # Two draws of 12 runs and the solo row each.
        self.assertEqual(26, doc['training']['runs'])
        self.assertEqual(2, doc['training']['draws'])
        self.assertAlmostEqual(4.0 - 3.0 / 8, doc['solo_mpps'], places=5)

    def test_bad_setups(self):
        cases = [
            ({'contention_command': None}, 'contention_command set'),
            ({'contention_cpus': [1]}, 'needs as many [resq_profiler] '
                                       'contention_cpus, 1 given'),
            ({'contention_cpus': [0, 1]}, 'must not include the profiling'),
            ({'contention_command': 'x {nope}'}, 'unknown placeholder'),
            ({'contention_command': '%s -c pass' % sys.executable},
             'without writing {perf_out}'),
        ]
        for flags, want in cases:
            self.flags('resq_profiler', **flags)
            exc = self.assertRaises(exception.MeasurementError,
                                    self.driver.contention_run,
                                    [self.hog, self.nic], ways=4)
            self.assertIn(want, str(exc))
            self.flags('resq_profiler', contention_command='%s %s {spec}' % (
                sys.executable, FAKE), contention_cpus=[1, 2])
        exc = self.assertRaises(exception.MeasurementError,
                                self.driver.contention_run, [], ways=9)
        self.assertIn('1 to 8 ways', str(exc))
