import configparser
import json
import math
import os
import sys

import fixtures

from resq_agent.ondemand import latency
from resq_agent.ondemand.sources import jsonlines
from resq_agent.ondemand.sources import scripted
from tests import base

U1 = '11111111-1111-1111-1111-111111111111'
U2 = '22222222-2222-2222-2222-222222222222'
SETUP_CFG = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..',
                         'setup.cfg')


class SetupCfgEntryPoints(fixtures.Fixture):
    """Make setup.cfg's entry points of ``namespace`` visible to stevedore.

    The test environment holds another checkout installed in development
    mode; a distribution directory on sys.path with this tree's
    declarations lets stevedore load the plugins the way an installed
    agent does.
    """

    def __init__(self, namespace):
        super().__init__()
        self.namespace = namespace

    def _setUp(self):
        parser = configparser.ConfigParser()
        parser.read(SETUP_CFG)
        lines = parser['entry_points'][self.namespace].strip()
        tmp = self.useFixture(fixtures.TempDir()).path
        dist = os.path.join(tmp, 'resq_nova_ondemand_test-0.dist-info')
        os.mkdir(dist)
        with open(os.path.join(dist, 'METADATA'), 'w') as f:
            f.write('Metadata-Version: 2.1\nName: resq-nova-ondemand-test\n'
                    'Version: 0\n')
        with open(os.path.join(dist, 'entry_points.txt'), 'w') as f:
            f.write('[%s]\n%s\n' % (self.namespace, lines))
        self.useFixture(fixtures.EnvironmentVariable('XDG_CACHE_HOME', tmp))
        self.useFixture(fixtures.MonkeyPatch('sys.path', [tmp] + sys.path))


class Clock:
    def __init__(self, now=1000.0):
        self.now = now

    def __call__(self):
        return self.now


class CheckedTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.clock = Clock()

    def checked(self, script, **kw):
        src = scripted.ScriptedSource(script=script, clock=self.clock)
        return latency.Checked(src, kw.get('max_age', 30.0),
                               kw.get('max_samples', 5), self.clock)

    def test_good_samples_pass_and_the_latest_wins(self):
        c = self.checked({U1: [[40.0, 42.5], 41]})
        self.assertEqual(42.5, c.latest(U1).latency_us)
        self.assertEqual(41.0, c.latest(U1).latency_us)

    def test_nonsense_is_named(self):
        for bad, words in ((-3, 'not a finite, non-negative'),
                           (math.nan, 'nan'), (math.inf, 'inf')):
            c = self.checked({U1: [bad]})
            err = self.assertRaises(latency.SourceFailed, c.latest, U1)
            self.assertIn('scripted', str(err))
            self.assertIn(U1, str(err))
            self.assertIn(words, str(err))

    def test_silence_fails_once_older_than_max_age(self):
        c = self.checked({U1: [40, None]}, max_age=30)
        c.latest(U1)
        self.clock.now += 20
        self.assertEqual(40, c.latest(U1).latency_us)   # still fresh
        self.clock.now += 20
        err = self.assertRaises(latency.SourceFailed, c.latest, U1)
        self.assertIn('no sample for 40 s', str(err))
        self.assertIn('stopped', str(err))

    def test_never_reported_fails(self):
        c = self.checked({})
        self.assertRaisesRegex(latency.SourceFailed, 'no sample yet',
                               c.latest, U2)

    def test_flood_fails(self):
        c = self.checked({U1: [[40] * 6]}, max_samples=5)
        self.assertRaisesRegex(latency.SourceFailed, '6 samples.*floods',
                               c.latest, U1)

    def test_source_error_passes_through(self):
        c = self.checked({U1: ['socket closed']})
        self.assertRaisesRegex(latency.SourceFailed, 'socket closed',
                               c.latest, U1)


class JsonLinesTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.flags('resq_agent', ondemand_latency_dir=self.tmp)
        self.src = jsonlines.JsonLinesSource(self.conf)

    def append(self, uuid, *lines):
        with open(os.path.join(self.tmp, uuid + '.jsonl'), 'a') as f:
            for line in lines:
                f.write((line if isinstance(line, str) else json.dumps(line))
                        + '\n')

    def test_reads_only_new_lines(self):
        self.assertEqual([], self.src.sample(U1))     # no file yet
        self.append(U1, {'time': 1, 'latency_us': 40},
                    {'time': 2, 'latency_us': 41, 'load': 0.5})
        got = self.src.sample(U1)
        self.assertEqual([40, 41], [s.latency_us for s in got])
        self.assertEqual(0.5, got[1].load)
        self.assertEqual([], self.src.sample(U1))
        self.append(U1, {'time': 3, 'latency_us': 39})
        self.assertEqual([39], [s.latency_us for s in self.src.sample(U1)])

    def test_half_written_line_waits(self):
        with open(os.path.join(self.tmp, U1 + '.jsonl'), 'w') as f:
            f.write('{"time": 1, "latency_us": 40}\n{"time": 2, "lat')
        self.assertEqual([40], [s.latency_us for s in self.src.sample(U1)])
        with open(os.path.join(self.tmp, U1 + '.jsonl'), 'a') as f:
            f.write('ency_us": 44}\n')
        self.assertEqual([44], [s.latency_us for s in self.src.sample(U1)])

    def test_replaced_file_is_read_from_the_start(self):
        self.append(U1, {'time': 1, 'latency_us': 40},
                    {'time': 2, 'latency_us': 40})
        self.src.sample(U1)
        os.unlink(os.path.join(self.tmp, U1 + '.jsonl'))
        self.append(U1, {'time': 3, 'latency_us': 50})
        self.assertEqual([50], [s.latency_us for s in self.src.sample(U1)])

    def test_garbage_names_file_and_line(self):
        self.append(U1, {'time': 1, 'latency_us': 40}, 'not json')
        err = self.assertRaises(latency.SourceFailed, self.src.sample, U1)
        self.assertIn('%s.jsonl line 2' % U1, str(err))
        self.append(U1, {'time': 1})
        err = self.assertRaises(latency.SourceFailed, self.src.sample, U1)
        self.assertIn('line 3', str(err))
        self.assertIn('latency_us', str(err))

    def test_flood_is_skipped_and_reported(self):
        line = json.dumps({'time': 1, 'latency_us': 40})
        n = jsonlines.MAX_READ // (len(line) + 1) + 10
        self.append(U1, *([line] * n))
        self.assertRaisesRegex(latency.SourceFailed, 'floods',
                               self.src.sample, U1)
        # The backlog is gone: the next period reads fresh lines only.
        self.append(U1, {'time': 2, 'latency_us': 45})
        self.assertEqual([45], [s.latency_us for s in self.src.sample(U1)])

    def test_nan_in_the_file_is_caught_by_the_checks(self):
        self.append(U1, '{"time": 1000, "latency_us": NaN}')
        c = latency.Checked(self.src, 30, 100, lambda: 1000.0)
        self.assertRaisesRegex(latency.SourceFailed,
                               'jsonlines.*not a finite', c.latest, U1)

    def test_offered_rate_is_read_and_checked(self):
        c = latency.Checked(self.src, 30, 100, lambda: 1000.0)
        self.append(U1, {'time': 999, 'latency_us': 40, 'mpps': 1.25})
        self.assertEqual(1.25, c.latest(U1).mpps)
        self.append(U1, {'time': 1000, 'latency_us': 40, 'mpps': -1})
        self.assertRaisesRegex(latency.SourceFailed,
                               'offered rate -1 Mpps', c.latest, U1)


class LoadTest(base.TestCase):

    def test_sources_load_through_setup_cfg_entry_points(self):
        self.useFixture(SetupCfgEntryPoints(latency.NAMESPACE))
        self.flags('resq_agent', ondemand_latency_dir=self.tmp)
        c = latency.load(self.conf, lambda: 0.0)
        self.assertIsInstance(c.source, jsonlines.JsonLinesSource)
        self.assertEqual('jsonlines', c.name)
        script = self.write_json('script.json', {U1: 40})
        self.flags('resq_agent', ondemand_latency_source='scripted',
                   ondemand_latency_script=script)
        c = latency.load(self.conf, lambda: 0.0)
        self.assertIsInstance(c.source, scripted.ScriptedSource)

    def test_unknown_source_names_the_option(self):
        self.useFixture(SetupCfgEntryPoints(latency.NAMESPACE))
        self.flags('resq_agent', ondemand_latency_source='carrier-pigeon')
        err = self.assertRaises(latency.SourceFailed, latency.load,
                                self.conf, lambda: 0.0)
        self.assertIn('carrier-pigeon', str(err))
        self.assertIn('ondemand_latency_source', str(err))
