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
"""The ``model`` driver: measurements from a model instead of hardware.

For planning, tests and the cluster evaluation. ``[resq_profiler]
model_truth`` picks what it measures: the analytic NF model
(``nfmodel``) or the simulated testbed the cluster evaluation judges
placements with (``testbed``, :mod:`resq_profiler.truth`), where each
measurement is one run of the NF alone on a server with its CAT partition
and sized buffers. ``[resq_profiler] model_noise_pct`` adds seeded Gaussian
noise to emulate run-to-run variance of a real testbed.
"""

import zlib

from resq_profiler import catalog
from resq_profiler import drivers
from resq_profiler import exception
from resq_profiler import nfmodel
from resq_profiler import truth


class ModelDriver(drivers.Driver):
    name = 'model'

    def __init__(self, conf, nf, traffic):
        super().__init__(conf, nf, traffic)
        self.spec = catalog.get(nf)
        self.model = nfmodel.NFModel(self.spec)
        group = conf.resq_profiler
        self.noise_pct = group.model_noise_pct
        self.truth = group.model_truth
        seed = zlib.crc32(('%s/%s' % (self.spec.name, group.model_seed))
                          .encode())
        self._noisy = truth.Noise(self.noise_pct, seed)
        self.calls = 0

    def platform(self):
        return self.model.platform.as_dict()

    def throughput(self, ways):
        self.calls += 1
        if self.truth == 'testbed':
            value = truth.solo(self.spec, ways, self.traffic).capacity_mpps
        else:
            value = self.model.throughput_mpps(ways, self.traffic)
        return self._noisy(value)

    def saturate(self, ways):
        # One run, two readings, each with its own noise.
        self.calls += 1
        if self.truth == 'testbed':
            cap = truth.solo(self.spec, ways, self.traffic).capacity_mpps
            return (self._noisy(cap), self._noisy(truth.solo(
                self.spec, ways, self.traffic, cap).latency_p95_us))
        return (self._noisy(self.model.throughput_mpps(ways, self.traffic)),
                self._noisy(self.model.latency_p95_us(1.0, self.traffic)))

    def latency(self, ways, load_fraction, peak_mpps):
        self.calls += 1
        if self.truth == 'testbed':
            value = truth.solo(self.spec, ways, self.traffic,
                               load_fraction * peak_mpps).latency_p95_us
        else:
            value = self.model.latency_p95_us(load_fraction, self.traffic)
        return self._noisy(value)

    # DMA buffers of the NF in contention runs; None: the ResQ-sized budget
    # that fits DDIO (the SLOMO accuracy's I/O-heavy mixes leave them
    # unsized).
    dma_buffers = None

    def contention_run(self, competitors, with_nf=True, ways=None):
        ways = self.check_class_ways(ways)
        if self.truth != 'testbed':
            raise exception.MeasurementError(
                reason='runs next to competitors need the simulated testbed;'
                ' set [resq_profiler] model_truth = testbed (the analytic '
                'model has no contention)')
        self.calls += 1
        platform = self.model.platform
        part = frozenset(range(ways))
        insts = []
        if with_nf:
            insts = [nfmodel.Instance(self.spec, part, self.traffic,
                                      dma_buffers=self.dma_buffers)]
        outs, nf_counters, syn_counters = truth.run_server(
            insts, platform, [(c, part) for c in competitors])
        syn_counters = [c.noisy(self._noisy) for c in syn_counters]
        if not with_nf:
            return None, None, syn_counters
        return (self._noisy(outs[0].capacity_mpps),
                nf_counters[0].noisy(self._noisy), syn_counters)
