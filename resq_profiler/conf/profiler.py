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
"""The ``[resq_profiler]`` options."""

from oslo_config import cfg

from resq_common.conf import profiles

GROUP = 'resq_profiler'

RESCTRL_ROOT_OPT = cfg.StrOpt(
    'resctrl_root', default='/sys/fs/resctrl',
    help='Where resctrl is mounted. Tests point this at a temporary tree '
         'laid out like the kernel\'s. The privsep daemon reads it from the '
         'profiler\'s configuration files itself and writes only to a '
         'mounted resctrl file system.')

DEFAULT_LOAD_LEVELS = [round(0.1 + 0.075 * i, 3) for i in range(13)]

profile_opts = [
    cfg.StrOpt('driver',
               default='model',
               help='How measurements are taken. "model" uses the analytic '
                    'NF model (planning, tests, the evaluation); "command" '
                    'runs the real NF inside a resctrl group (see the '
                    'command_* options). Other drivers can be added through '
                    'the resq_profiler.drivers entry point group.'),
    cfg.FloatOpt('max_interpolation_error_pct',
                 default=1.0, min=0.01, max=50.0,
                 help='Largest error, in percent of the curve, the profiler '
                      'accepts for a stored curve (ResQ uses 1). It fits '
                      'each curve\'s shape model until the fit predicts new '
                      'points within half of it (noiseless testbed) or its '
                      'standard errors are within it (noisy testbed); a '
                      'curve whose model does not fit falls back to ResQ\'s '
                      'adaptive sampling, splitting intervals while the '
                      'linear interpolation error estimate exceeds it. '
                      'Lower values take more measurements.'),
    cfg.IntOpt('max_measurements_per_curve',
               default=40, min=3,
               help='Upper bound on measurements per curve, repeats '
                    'included, whatever the error. A noiseless testbed '
                    'whose curves fit the shape models needs 4-6 per '
                    'curve; at 0.5% run-to-run noise about 8-25. The '
                    'profile records the error it reached.'),
    cfg.FloatOpt('known_noise_pct', min=0.0, max=20.0,
                 help='The testbed\'s run-to-run measurement noise, as a '
                      'relative standard deviation in percent, when it is '
                      'known (for instance from a calibration of many '
                      'repeated runs on this testbed). Both curves then '
                      'plan with it as is: each measurement goes to the '
                      'grid point furthest below its share of the optimal '
                      'design for the current fit, and a curve is done once '
                      '2.5 standard errors are within '
                      'max_interpolation_error_pct (and the throughput '
                      'curve has two distinct points per parameter), which '
                      'comes within a few runs of the fewest any estimator '
                      'needs (doc: the profiler budget). Residuals noisier '
                      'than it (chi-square, 99.9%) make the profiler learn '
                      'the noise instead. Unset (or 0): the noise is learnt '
                      'from each profile\'s residuals and repeats, which '
                      'costs runs. The noise is a property of the testbed '
                      'and traffic generator, not of the NF.'),
    cfg.ListOpt('latency_load_levels',
                item_type=cfg.types.Float(min=0.001, max=1.0),
                default=DEFAULT_LOAD_LEVELS,
                help='Offered load levels, as fractions of the throughput '
                     'at the best allocation, among which the latency curve '
                     'is sampled (strictly increasing). The default is 13 '
                     'levels, as in the ResQ authors\' sweeps.'),
]

model_opts = [
    cfg.FloatOpt('model_noise_pct', default=0.0, min=0.0, max=20.0,
                 help='Standard deviation of Gaussian noise, in percent, '
                      'that the model driver adds to every measurement, to '
                      'emulate run-to-run variance. 0 gives exact values.'),
    cfg.IntOpt('model_seed', default=0,
               help='Seed of the model driver\'s noise.'),
    cfg.StrOpt('model_truth', default='nfmodel',
               choices=[('nfmodel', 'the analytic NF model the planner '
                         'uses (resq_profiler.nfmodel)'),
                        ('testbed', 'the simulated testbed the cluster '
                         'evaluation judges placements with '
                         '(resq_profiler.truth)')],
               help='What the model driver measures.'),
]

command_opts = [
    cfg.StrOpt('command',
               help='Command line of the NF for the command driver. '
                    'Placeholders: {cpu} (the core it is pinned to), '
                    '{housekeeping_cpu}, {mbufs} (the DMA buffer pool '
                    'ResQ sizes), {duration_s}, {load_mpps} (0 means '
                    'saturate), {load_fraction}, {packet_bytes}, {flows}, '
                    '{ways}, {file_prefix} (unique per run, for DPDK). '
                    'Example: dpdk-testpmd -l {housekeeping_cpu},{cpu} '
                    '--no-huge -m 512 --no-pci --file-prefix {file_prefix} '
                    '--vdev net_null0 --vdev net_null1 -- '
                    '--forward-mode=io --total-num-mbufs={mbufs} '
                    '--stats-period 1'),
    cfg.StrOpt('command_output',
               default='keyvalue', choices=[
                   ('keyvalue', 'lines "throughput_mpps=<x>" and '
                                '"latency_p95_us=<y>" (":" also accepted)'),
                   ('testpmd', 'dpdk-testpmd\'s periodic port statistics '
                               '(throughput only)')],
               help='How the command driver reads a measurement from the '
                    'command\'s output.'),
    cfg.FloatOpt('command_duration_s', default=5.0, min=0.5,
                 help='How long each measurement runs, from the moment the '
                      'output matches command_ready_pattern (or from the '
                      'start without one). Then the command gets SIGINT; '
                      'commands may also exit on their own earlier.'),
    cfg.StrOpt('command_ready_pattern',
               help='Regular expression that marks the end of the NF\'s '
                    'start-up in its output; the measurement window starts '
                    'at the first matching line. For dpdk-testpmd with '
                    '--stats-period, "Port statistics" (forwarding has '
                    'begun). Unset: the window starts with the process.'),
    cfg.FloatOpt('command_grace_s', default=10.0, min=0.5,
                 help='How long to wait for the command to become ready '
                      '(command_ready_pattern), and to print its statistics '
                      'and exit after SIGINT, before it is killed and the '
                      'measurement fails.'),
    cfg.IntOpt('cpu', default=1, min=0,
               help='The core the NF is pinned to; the resctrl group gets '
                    'this CPU and the NF\'s process.'),
    cfg.IntOpt('housekeeping_cpu', default=0, min=0,
               help='A second core for the NF\'s control thread (DPDK\'s '
                    'main lcore), passed as {housekeeping_cpu}.'),
    cfg.IntOpt('cache_domain', default=0, min=0,
               help='L3 cache domain (resctrl domain id) of the profiling '
                    'core.'),
    cfg.IntOpt('mbufs', min=0, default=0,
               help='Size of the NF\'s packet buffer pool, passed as '
                    '{mbufs}. 0 sizes it as ResQ does: as many buffers of '
                    'the profiled packet size as fit in the I/O (DDIO) '
                    'ways.'),
    cfg.IntOpt('io_ways', default=2, min=0,
               help='LLC ways DDIO uses on the profiling host, for sizing '
                    'mbufs when mbufs is 0.'),
    RESCTRL_ROOT_OPT,
    cfg.StrOpt('resctrl_group', default='resq-profiler',
               help='Name of the resctrl group the profiler creates for the '
                    'NF (must start with "resq-profiler", a name resq-agent '
                    'leaves alone when both run on one host); removed when '
                    'profiling ends.'),
]

# SLOMO's contention runs on a real host (doc/source/admin/slomo.rst).
contention_opts = [
    cfg.StrOpt('contention_command',
               help='Command line of one SLOMO contention run on this host: '
                    'it runs the NF (when asked) and the synthetic '
                    'competitors the run spec lists, each on its core, '
                    'for the measurement window, writes "perf stat -x, -A" '
                    'counts to {perf_out} and resctrl mon_data snapshots '
                    'of monitoring groups cpu<N> to {mon_out}, and prints '
                    'the NF\'s throughput as [resq_profiler] '
                    'command_output says. Placeholders: {spec} (JSON run '
                    'spec), {perf_out}, {mon_out}, {cpus}, {cpu}, '
                    '{competitor_cpus}, {with_nf}, {ways}, {duration_s}, '
                    '{packet_bytes}, {flows}, {mbufs}, {group_dir}. Unset: '
                    'this host cannot train SLOMO models.'),
    cfg.ListOpt('contention_cpus', item_type=cfg.types.Integer(min=0),
                default=[],
                help='Cores for the synthetic competitors of contention '
                     'runs, one each (SLOMO trains with up to 8); they '
                     'share the profiling core\'s cache domain.'),
]

ALL_OPTS = profile_opts + model_opts + command_opts + contention_opts


def register_opts(conf):
    conf.register_opts(ALL_OPTS, group=GROUP)
    # The store the profiler writes: [resq] profile_dir, the option SLO
    # admission reads ([resq_profiler] profile_dir is its deprecated name).
    profiles.register_opts(conf)
