"""The command driver end to end with a real packet-processing program.

dpdk-testpmd (Debian's dpdk package, see bindep.txt) forwards packets
between two null virtual devices without a NIC or huge pages. The profiler
runs it pinned to a core inside its resctrl group (a temporary tree laid out
like the kernel's: there is no CAT here), hands it the mbuf pool size, stops
it with SIGINT and reads the forwarding rate from its statistics.
"""

import os
import shutil

from resq_profiler import adaptive
from resq_profiler import curvefit
from resq_profiler import drivers
from resq_profiler import exception
from resq_profiler import modelfit
from resq_profiler import nfmodel
from resq_profiler import profiler
from resq_profiler import store as store_mod
from tests import base
from tests.fixtures import resctrl as resctrl_fixture

TESTPMD = ('dpdk-testpmd -l {housekeeping_cpu},{cpu} --no-huge -m 512 '
           '--no-pci --file-prefix {file_prefix} '
           '--vdev net_null0,size={packet_bytes} '
           '--vdev net_null1,size={packet_bytes} -- '
           '--forward-mode=%s --total-num-mbufs={mbufs} --stats-period 1')


class TestpmdProfilerTest(base.TestCase):

    def setUp(self):
        super().setUp()
        if not shutil.which('dpdk-testpmd'):
            self.fail('dpdk-testpmd is missing: install the Debian packages '
                      'in bindep.txt (bash tools/bootstrap.sh)')
        self.useFixture(base.PrivsepInProcess(self.conf))
        # Three ways keep the profile to three runs of testpmd.
        self.tree = self.useFixture(resctrl_fixture.ResctrlTree(ways=3))
        cpus = sorted(os.sched_getaffinity(0))
        self.flags('resq_profiler', driver='command', command_output='testpmd',
                   command=TESTPMD % 'io', command_duration_s=2.5,
                   command_ready_pattern='Port statistics',
                   resctrl_root=self.tree.root, cpu=cpus[-1],
                   housekeeping_cpu=cpus[0], mbufs=4096)
        self.flags('resq', profile_dir=os.path.join(self.tmp, 'profiles'))

    def test_throughput_curve_with_testpmd(self):
        drv = drivers.load('command', self.conf, 'testpmd-io',
                           nfmodel.Traffic(64))
        self.addCleanup(drv.close)
        seen = {}
        for ways in drv.way_range():
            mpps = drv.throughput(ways)
            seen[ways] = mpps
            # testpmd got the pool size the driver chose.
            self.assertIn('n=4096,', drv.last_output)
            self.assertEqual('L3:0=%x\n' % ((1 << ways) - 1),
                             self.tree.read('resq-profiler', 'schemata'))
            self.assertEqual('%d\n' % self.conf.resq_profiler.cpu,
                             self.tree.read('resq-profiler', 'cpus_list'))
        # Real forwarding happened at every allocation.
        for ways, mpps in seen.items():
            self.assertGreater(mpps, 0.5, ways)
        # Every run's PID went into the group's tasks before it started.
        self.assertEqual(3, len(self.tree.read('resq-profiler',
                                               'tasks').split()))
        drv.close()
        self.assertNotIn('resq-profiler', os.listdir(self.tree.root))
        self.assertIn('other-app', os.listdir(self.tree.root))

    def test_latency_needs_a_reporting_command(self):
        # (The throughput curve comes first: three runs are enough to
        # reach the latency curve.)
        self.flags('resq_profiler', max_measurements_per_curve=3)
        store = store_mod.ProfileStore(self.conf.resq.profile_dir)
        exc = self.assertRaises(exception.MeasurementError, profiler.run,
                                self.conf, 'testpmd-io', nfmodel.Traffic())
        self.assertIn('no p95 latency', str(exc))
        self.assertEqual([], store.ids())
        self.assertNotIn('resq-profiler', os.listdir(self.tree.root))

    def test_noisy_forwarding_is_slower_than_io(self):
        """testpmd's noisy mode does NF-like memory lookups per packet."""
        drv = drivers.load('command', self.conf, 'testpmd-io',
                           nfmodel.Traffic())
        self.addCleanup(drv.close)
        io_mpps = drv.throughput(3)
        self.flags('resq_profiler', command=TESTPMD % 'noisy'
                   + ' --noisy-lkup-memory=64 --noisy-lkup-num-reads=32')
        noisy = drivers.load('command', self.conf, 'testpmd-noisy',
                             nfmodel.Traffic())
        self.addCleanup(noisy.close)
        self.assertLess(noisy.throughput(3), io_mpps)

    def test_bad_mbuf_pool_is_reported(self):
        self.flags('resq_profiler', mbufs=1)
        drv = drivers.load('command', self.conf, 'testpmd-io',
                           nfmodel.Traffic())
        self.addCleanup(drv.close)
        exc = self.assertRaises(exception.MeasurementError, drv.throughput,
                                2)
        self.assertIn('dpdk-testpmd', str(exc))

    def test_throughput_sampler_learns_the_run_to_run_noise(self):
        """Real forwarding rates vary between runs: the sampler sees it."""
        drv = drivers.load('command', self.conf, 'testpmd-io',
                           nfmodel.Traffic(64))
        self.addCleanup(drv.close)
        runs = []

        def measure(ways):
            mpps = drv.throughput(int(ways))
            runs.append((ways, mpps))
            return mpps

        res = adaptive.sample(measure, drv.way_range(), 1.0,
                              shape='concave', probe=1, max_repeats=2)
        # Every run of testpmd is counted, the repeats too.
        self.assertEqual(len(runs), res.measurements)
        self.assertEqual(len(self.tree.read('resq-profiler',
                                            'tasks').split()),
                         res.measurements)
        self.assertEqual(res.measurements - len(res.points), res.repeats)
        # Two runs of the same allocation never forward exactly as many
        # packets: the probe found noise, and the sampler measured it.
        self.assertGreater(res.noise_pct, 0.0)
        self.assertGreaterEqual(res.noise_dof, 1)
        self.assertGreater(res.noise_error_pct, 0.0)
        self.assertGreaterEqual(res.reported_error_pct,
                                res.noise_error_pct)
        for ways, values in res.samples.items():
            self.assertEqual([m for w, m in runs if w == ways], values)

    def test_model_sampler_on_real_runs(self):
        """The shape-model sampler on testpmd's real, noisy rates.

        io forwarding does not depend on the cache: a flat curve, which
        the throughput model holds (no misses past the working set), with
        run-to-run noise the sampler must see and state.
        """
        drv = drivers.load('command', self.conf, 'testpmd-io',
                           nfmodel.Traffic(64))
        self.addCleanup(drv.close)
        runs = []

        def measure(ways):
            mpps = drv.throughput(int(ways))
            runs.append((ways, mpps))
            return mpps

        res = modelfit.sample(measure, drv.way_range(),
                              curvefit.SaturatingThroughput(), 1.0,
                              max_points=8, shape='concave')
        # Every run of testpmd is counted, the repeats too, and each one
        # went into the resctrl group.
        self.assertEqual(len(runs), res.measurements)
        self.assertEqual(len(self.tree.read('resq-profiler',
                                            'tasks').split()),
                         res.measurements)
        self.assertEqual(res.measurements - len(res.measured), res.repeats)
        self.assertEqual(sorted(res.measured),
                         sorted((float(w), sum(m for x, m in runs
                                               if x == w)
                                 / sum(1 for x, _ in runs if x == w),
                                 sum(1 for x, _ in runs if x == w))
                                for w in {x for x, _ in runs}))
        # Real rates differ between runs: the residuals showed noise.
        self.assertGreater(res.noise_pct, 0.0)
        self.assertGreater(res.reported_error_pct, 0.0)
        self.assertEqual([1.0, 2.0, 3.0], [x for x, _ in res.points])
        for x, y in res.points:
            self.assertGreater(y, 0.5)
