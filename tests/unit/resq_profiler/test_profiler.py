import os
import sys
import textwrap
import types

import fixtures

from resq_profiler import catalog
from resq_profiler import drivers
from resq_profiler import exception
from resq_profiler import nfmodel
from resq_profiler import profiler
from resq_profiler import store as store_mod
from tests import base
from tests.fixtures import resctrl as resctrl_fixture

# A stand-in NF for the command driver's unit tests: it checks that it runs
# inside the profiler's resctrl group (its PID is in "tasks" before it
# starts), reads its way mask from "schemata" and reports a throughput that
# grows concavely with it and a latency that grows with the offered load.
FAKE_NF = textwrap.dedent('''\
    import os, sys
    root, group, load = sys.argv[1], sys.argv[2], float(sys.argv[3])
    d = os.path.join(root, group)
    tasks = open(os.path.join(d, 'tasks')).read().split()
    if str(os.getpid()) not in tasks:
        print('not in group'); sys.exit(3)
    line = open(os.path.join(d, 'schemata')).read().split(':')[1]
    ways = bin(int(line.split('=')[1], 16)).count('1')
    print('throughput_mpps=%.6f' % (4.0 - 3.0 / ways))
    print('latency_p95_us: %.4f' % (10.0 + 5.0 / (1.05 - load)))
''')


class ModelProfilerTest(base.TestCase):

    def test_every_catalog_nf_profiles_within_budget(self):
        for name in catalog.names():
            prof = profiler.run(self.conf, name, nfmodel.Traffic())
            m = prof.measurement
            self.assertLessEqual(m['points']['throughput'], 12, name)
            self.assertLessEqual(m['points']['latency'], 12, name)
            self.assertLessEqual(m['max_interpolation_error_pct'], 1.0)
            self.assertEqual(prof.peak_mpps,
                             prof.throughput_at(prof.latency_ways))
            self.assertAlmostEqual(catalog.get(name).mpps, prof.peak_mpps,
                                   places=6)
            self.assertEqual('model', m['driver'])

    def test_profile_depends_on_config_and_traffic(self):
        a = profiler.run(self.conf, 'Stats', nfmodel.Traffic(),
                         config_text='rules-a')
        b = profiler.run(self.conf, 'Stats', nfmodel.Traffic(),
                         config_text='rules-b')
        c = profiler.run(self.conf, 'Stats', nfmodel.Traffic(1518, 1000))
        self.assertNotEqual(a.profile_id, b.profile_id)
        self.assertNotEqual(a.nf['config_digest'], b.nf['config_digest'])
        self.assertEqual({'packet_bytes': 1518, 'flows': 1000}, c.traffic)

    def test_noise_is_seeded(self):
        self.flags('resq_profiler', model_noise_pct=0.5, model_seed=7)
        a = profiler.run(self.conf, 'LPM', nfmodel.Traffic())
        b = profiler.run(self.conf, 'LPM', nfmodel.Traffic())
        self.assertEqual(a.throughput, b.throughput)

    def test_progress_reports_every_measurement(self):
        seen = []
        prof = profiler.run(self.conf, 'IPsec', nfmodel.Traffic(),
                            progress=lambda *a: seen.append(a))
        m = prof.measurement
        self.assertEqual(m['measurements']['throughput']
                         + m['measurements']['latency'], len(seen))
        self.assertEqual({'throughput', 'latency'}, {s[0] for s in seen})

    def _counting_driver(self):
        made = []
        real = drivers.load

        def load(*args):
            drv = real(*args)
            made.append(drv)
            return drv
        self.useFixture(fixtures.MockPatch(
            'resq_profiler.drivers.load', side_effect=load))
        return made

    def test_one_run_gives_both_curves_their_full_load_point(self):
        made = self._counting_driver()
        prof = profiler.run(self.conf, 'Stats', nfmodel.Traffic())
        m = prof.measurement
        # The saturating runs at the best allocation gave the latency at
        # full load: the latency curve has that point without measuring it.
        self.assertGreaterEqual(m['measurements']['shared'], 1)
        self.assertEqual(1.0, prof.latency[-1][0])
        model = nfmodel.NFModel(catalog.get('Stats'))
        self.assertAlmostEqual(model.latency_p95_us(1.0, nfmodel.Traffic()),
                               prof.latency[-1][1])
        self.assertEqual(m['points']['latency'] - 1,
                         m['measurements']['latency'])
        # Every run of the NF is counted once.
        self.assertEqual(made[0].calls, m['measurements']['throughput']
                         + m['measurements']['latency'])
        # The model fits every point exactly: nothing to repeat.
        self.assertEqual(0, m['measurements']['repeats'])
        self.assertEqual(0.0, m['noise_pct'])

    def test_noisy_profile_repeats_and_says_so(self):
        made = self._counting_driver()
        self.flags('resq_profiler', model_noise_pct=0.5)
        prof = profiler.run(self.conf, 'LPM', nfmodel.Traffic())
        m = prof.measurement
        total = m['measurements']['throughput'] + m['measurements']['latency']
        self.assertEqual(made[0].calls, total)
        self.assertGreater(m['measurements']['repeats'], 0)
        # Under noise the profile's peak is not the NF's capacity, at
        # which the saturating runs read their latency: the full-load
        # point is measured at the peak instead of shared. Each kept point
        # was measured once, plus the repeats.
        self.assertEqual(0, m['measurements']['shared'])
        self.assertIn(1.0, [x for x, _, _ in m['fit']['latency']['measured']])
        self.assertEqual(total, sum(m['points'].values())
                         + m['measurements']['repeats'])
        self.assertGreater(m['noise_pct'], 0.1)

    def test_profile_budget_caps_both_curves_together(self):
        made = self._counting_driver()
        self.flags('resq_profiler', model_noise_pct=0.5)
        prof = profiler.run(self.conf, 'LPM', nfmodel.Traffic(),
                            max_measurements=9)
        m = prof.measurement
        total = m['measurements']['throughput'] + m['measurements']['latency']
        self.assertEqual(9, total)
        self.assertEqual(made[0].calls, total)
        self.assertGreaterEqual(m['measurements']['latency'], 3)
        self.assertTrue(m['budget_exhausted'])

    def test_profile_budget_below_two_curves_is_refused(self):
        err = self.assertRaises(ValueError, profiler.run, self.conf, 'LPM',
                                nfmodel.Traffic(), max_measurements=5)
        self.assertIn('at least 6', str(err))

    def test_full_load_run_is_shared_only_at_the_stored_peak(self):
        def curve(noise, mpps):
            return types.SimpleNamespace(
                noise_pct=noise, measured=[(8.0, 3.0, 1), (9.0, mpps, 1)])

        self.assertTrue(profiler._peak_is_measured(curve(0.0, 3.5), 9, 3.5))
        # A model that misses the measured point moves the peak off the
        # load the saturating runs offered ...
        self.assertFalse(profiler._peak_is_measured(curve(0.0, 3.51), 9,
                                                    3.5))
        # ... and so does noise, whatever the fit.
        self.assertFalse(profiler._peak_is_measured(curve(0.5, 3.5), 9, 3.5))
        self.assertFalse(profiler._peak_is_measured(curve(0.0, 3.5), 7, 3.5))

    def test_budget_cut_profile_states_its_error(self):
        self.flags('resq_profiler', max_measurements_per_curve=3)
        prof = profiler.run(self.conf, 'Stats', nfmodel.Traffic())
        m = prof.measurement
        self.assertTrue(m['budget_exhausted'])
        self.assertGreater(m['max_interpolation_error_pct'],
                           m['tolerance_pct'])

    def test_unknown_nf_and_driver(self):
        self.assertRaises(exception.UnknownNF, profiler.run, self.conf,
                          'Nope', nfmodel.Traffic())
        exc = self.assertRaises(exception.MeasurementError, profiler.run,
                                self.conf, 'LPM', nfmodel.Traffic(),
                                driver_name='magic')
        self.assertIn('command, model', str(exc))


class CommandDriverTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(base.PrivsepInProcess(self.conf))
        self.tree = self.useFixture(resctrl_fixture.ResctrlTree(ways=8))
        script = os.path.join(self.tmp, 'fake_nf.py')
        with open(script, 'w') as f:
            f.write(FAKE_NF)
        self.flags('resq_profiler', driver='command',
                   resctrl_root=self.tree.root, cpu=0,
                   command_duration_s=20,
                   command='%s %s %s resq-profiler {load_fraction}'
                           % (sys.executable, script, self.tree.root))

    def test_profiles_inside_the_resctrl_group(self):
        prof = profiler.run(self.conf, 'fake', nfmodel.Traffic())
        thr = dict(prof.throughput)
        self.assertEqual(1.0, thr[1])
        self.assertAlmostEqual(4.0 - 3.0 / 8, thr[8])
        self.assertEqual(8, prof.latency_ways)
        self.assertEqual('command', prof.measurement['driver'])
        self.assertAlmostEqual(10.0 + 5.0 / 0.95, prof.latency_at(0.1),
                               places=3)
        # The saturating runs at 8 ways printed the latency at full load
        # too: the latency curve took it from them instead of running the
        # NF again at load 1.0.
        m = prof.measurement
        self.assertGreaterEqual(m['measurements']['shared'], 1)
        self.assertAlmostEqual(10.0 + 5.0 / 0.05, prof.latency_at(1.0),
                               places=3)
        self.assertEqual(m['points']['latency'] - 1,
                         m['measurements']['latency'])
        # The fake NF is deterministic: one probe repeat, no noise.
        self.assertEqual(0.0, m['noise_pct'])
        self.assertEqual(1, m['measurements']['repeats'])
        # The group is gone afterwards; foreign groups are untouched.
        self.assertEqual(['other-app'], sorted(
            n for n in os.listdir(self.tree.root)
            if n not in ('info', 'mon_data', 'mon_groups', 'schemata',
                         'tasks', 'cpus_list')))

    def test_masks_are_contiguous_from_way_zero(self):
        drv = drivers.load('command', self.conf, 'fake', nfmodel.Traffic())
        self.addCleanup(drv.close)
        drv.throughput(3)
        self.assertEqual('L3:0=7\n', self.tree.read('resq-profiler',
                                                    'schemata'))
        self.assertEqual('0\n', self.tree.read('resq-profiler', 'cpus_list'))
        self.assertEqual(list(range(1, 9)), drv.way_range())

    def test_mbufs_sized_for_ddio(self):
        drv = drivers.load('command', self.conf, 'fake',
                           nfmodel.Traffic(1518))
        self.addCleanup(drv.close)
        self.assertEqual(2 * drv.way_size // 1600, drv.mbufs())
        self.flags('resq_profiler', mbufs=4096)
        self.assertEqual(4096, drv.mbufs())

    def _fails(self, command, *expected):
        self.flags('resq_profiler', command=command)
        st = store_mod.ProfileStore(os.path.join(self.tmp, 'store'))
        exc = self.assertRaises(exception.ResQException, profiler.run,
                                self.conf, 'fake', nfmodel.Traffic())
        for text in expected:
            self.assertIn(text, str(exc))
        self.assertEqual([], st.ids())
        self.assertNotIn('resq-profiler', os.listdir(self.tree.root))
        return exc

    def test_command_that_fails(self):
        self._fails('%s -c "print(\'boom\'); raise SystemExit(4)"'
                    % sys.executable, 'exited with status 4', 'boom')

    def test_command_that_prints_nothing_parseable(self):
        self._fails('%s -c "print(\'hello\')"' % sys.executable,
                    'nothing parseable', 'hello')

    def test_command_without_latency(self):
        self._fails('%s -c "print(\'throughput_mpps=2\')"' % sys.executable,
                    'no p95 latency')

    def test_missing_program_and_placeholder(self):
        self._fails('/nonexistent/nf', 'cannot start /nonexistent/nf')
        self._fails('echo {bogus}', 'unknown placeholder')

    def test_bad_resctrl_root(self):
        self.flags('resq_profiler', resctrl_root=os.path.join(self.tmp, 'x'))
        exc = self.assertRaises(exception.ResctrlError, profiler.run,
                                self.conf, 'fake', nfmodel.Traffic())
        self.assertIn('does not exist', str(exc))

    def test_ready_pattern(self):
        self.flags('resq_profiler', command_ready_pattern='^throughput')
        prof = profiler.run(self.conf, 'fake', nfmodel.Traffic())
        self.assertEqual(8, prof.max_ways)
        self.flags('resq_profiler', command_ready_pattern='never-printed',
                   command_grace_s=1.0)
        self._fails(self.conf.resq_profiler.command,
                    "nothing matching command_ready_pattern 'never-printed'")
        self.flags('resq_profiler', command_ready_pattern='(')
        self._fails(self.conf.resq_profiler.command,
                    'not a regular expression')

    def test_command_that_ignores_sigint_is_killed(self):
        # Ready only once SIGINT is ignored: on a loaded machine the
        # interpreter may still be starting when the measurement ends.
        # The grace also bounds the wait for "ready": an interpreter
        # starting on a loaded machine has taken more than 0.5 s.
        self.flags('resq_profiler', command_duration_s=0.5,
                   command_grace_s=3, command_ready_pattern='^ready')
        self._fails('%s -c "import signal, time; signal.signal('
                    'signal.SIGINT, signal.SIG_IGN); print(\'ready\', '
                    'flush=True); time.sleep(30)"'
                    % sys.executable, 'did not exit after SIGINT')

    def test_no_command(self):
        self.flags('resq_profiler', command=None)
        exc = self.assertRaises(exception.MeasurementError, profiler.run,
                                self.conf, 'fake', nfmodel.Traffic())
        self.assertIn('[resq_profiler] command', str(exc))


class ParserTest(base.TestCase):

    def test_testpmd(self):
        from resq_profiler.drivers import command
        block = ('Port statistics ====\n  Rx-pps: %d\n  Tx-pps: %d\n'
                 '  Tx-pps: %d\n')
        text = (block % (0, 0, 0) + block % (9, 1000000, 1000000)
                + block % (9, 2000000, 2000000)
                + block % (9, 3000000, 3000000))
        self.assertEqual((5.0, None), command.parse_testpmd(text))
        self.assertEqual((None, None), command.parse_testpmd('nothing'))

    def test_keyvalue(self):
        from resq_profiler.drivers import command
        self.assertEqual((1.5, 20.0), command.parse_keyvalue(
            'x\nthroughput_mpps = 1.5\nlatency_p95_us: 20\n'))
