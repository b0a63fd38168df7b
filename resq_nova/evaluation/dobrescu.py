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
"""Dobrescu et al.'s contention predictor, the way ResQ §6.2 describes it.

1. **Sensitivity curve.** Each NF runs saturated next to synthetic
   competitors (:class:`resq_profiler.truth.Synthetic`) whose LLC
   references per second are turned up step by step; its measured
   throughput against the competitors' total reference rate is the curve.
2. **Competition.** Each NF's solo LLC reference rate is measured once
   (its solo throughput times its references per packet, as a performance
   counter reads them).
3. **Prediction.** An NF's throughput next to a set of competitors is read
   off its curve at the sum of their solo reference rates.

Every measurement is a run on the simulated testbed with measurement noise;
the predictor never reads the testbed's model. Its error against the
testbed is what :func:`figure10` reports (ResQ Figure 10: the predicted
minus the observed drop, in percentage points).
"""

import zlib

import numpy

from resq_profiler import catalog
from resq_profiler import nfmodel
from resq_profiler import truth

# Synthetic competitors share the target's server, as in Dobrescu et al.'s
# and ResQ's runs (5 competing instances).
SYNTHETIC_COMPETITORS = 5
# Competing LLC references per second the curve is measured at; the top
# is beyond eight of the catalog's most cache-hungry NFs running solo.
PRESSURE_LEVELS = (0.0, 5e6, 1e7, 2e7, 4e7, 6e7, 8e7, 1.2e8, 1.6e8,
                   2.4e8, 3.2e8, 4.8e8)


def colocation(name, competitors):
    """``(NF, sorted competitors)`` by catalog name: a predictor's memo key."""
    return (catalog.get(name).name, tuple(sorted(
        catalog.get(c).name for c in competitors)))


class Predictor:
    """Profiles NFs against synthetic competitors and predicts from it.

    :param noise_pct: measurement noise of every profiling run.
    :param packet_bytes: packet size of the traffic.
    :param seed: seed of the noise.
    """

    def __init__(self, noise_pct=0.0, packet_bytes=64, seed=0,
                 platform=nfmodel.Platform()):
        self.traffic = nfmodel.Traffic(packet_bytes)
        self.platform = platform
        self.noise_pct = noise_pct
        self.seed = seed
        self.all_ways = frozenset(range(platform.llc_ways))
        self._curves = {}
        self._refs = {}
        self._solo = {}
        self._memo = {}
        self.measurements = 0

    def _noise(self, name, what):
        return truth.Noise(self.noise_pct, zlib.crc32(
            ('dobrescu/%s/%s/%d' % (name, what, self.seed)).encode()))

    def _run(self, spec, synthetic=()):
        """One measurement: ``spec`` saturated, sharing the whole LLC."""
        self.measurements += 1
        inst = nfmodel.Instance(spec, self.all_ways, self.traffic)
        return truth.simulate_server(
            [inst], self.platform,
            synthetic=[(s, self.all_ways) for s in synthetic])[0]

    def curve(self, name):
        """``[(competing refs/s, measured Mpps)]`` of NF ``name``."""
        spec = catalog.get(name)
        if spec.name not in self._curves:
            noise = self._noise(spec.name, 'curve')
            points = []
            for level in PRESSURE_LEVELS:
                syn = [truth.Synthetic(level / SYNTHETIC_COMPETITORS)
                       ] * (SYNTHETIC_COMPETITORS if level else 0)
                points.append((level,
                               noise(self._run(spec, syn).capacity_mpps)))
            # The curve of a monotone effect: keep it non-increasing.
            for i in range(1, len(points)):
                points[i] = (points[i][0], min(points[i][1],
                                               points[i - 1][1]))
            self._curves[spec.name] = points
            self._solo[spec.name] = points[0][1]
        return self._curves[spec.name]

    def solo_mpps(self, name):
        self.curve(name)
        return self._solo[catalog.get(name).name]

    def solo_refs(self, name):
        """Measured solo LLC references per second of NF ``name``."""
        spec = catalog.get(name)
        if spec.name not in self._refs:
            noise = self._noise(spec.name, 'refs')
            self.measurements += 1
            mpps = truth.solo(spec, self.platform.llc_ways, self.traffic,
                              platform=self.platform).capacity_mpps
            self._refs[spec.name] = noise(
                mpps * 1e6 * spec.l3_refs_per_packet)
        return self._refs[spec.name]

    def predict(self, name, competitors):
        """Predicted saturation throughput (Mpps) of ``name``.

        :param competitors: names of the NFs sharing its LLC.
        """
        key = colocation(name, competitors)
        if key not in self._memo:
            pts = self.curve(key[0])
            pressure = sum(self.solo_refs(c) for c in key[1])
            xs = [p[0] for p in pts]
            ys = [p[1] for p in pts]
            self._memo[key] = float(numpy.interp(pressure, xs, ys))
        return self._memo[key]


def figure10(predictor, names=None, competitors=SYNTHETIC_COMPETITORS):
    """The predictor's error against the testbed, after ResQ Figure 10.

    Each NF runs with ``competitors`` identical instances of every catalog
    NF in turn. The error is the predicted minus the observed throughput
    drop, in percentage points of solo throughput (positive: the predictor
    overestimates the drop).

    :returns: ``{"per_nf": {nf: {"mean_pp", "max_pp"}}, "mean_pp",
        "max_abs_pp", "mean_relative_pct"}``; the relative error is the
        error divided by the observed drop, over runs whose drop is 1 point
        or more.
    """
    names = list(names or catalog.names())
    traffic = predictor.traffic
    all_ways = predictor.all_ways
    per_nf, errors, relative = {}, [], []
    for name in names:
        spec = catalog.get(name)
        solo = truth.solo(spec, predictor.platform.llc_ways, traffic,
                          platform=predictor.platform).capacity_mpps
        mine = []
        for other in catalog.names():
            insts = [nfmodel.Instance(catalog.get(n), all_ways, traffic)
                     for n in [spec.name] + [other] * competitors]
            observed = truth.simulate_server(
                insts, predictor.platform)[0].capacity_mpps
            predicted = predictor.predict(spec.name, [other] * competitors)
            obs_drop = 100.0 * (1 - observed / solo)
            pred_drop = 100.0 * (1 - predicted / predictor.solo_mpps(
                spec.name))
            mine.append(pred_drop - obs_drop)
            if obs_drop >= 1.0:
                relative.append(abs(pred_drop - obs_drop) / obs_drop * 100)
        errors += mine
        per_nf[spec.name] = {'mean_pp': round(sum(mine) / len(mine), 2),
                             'max_pp': round(max(mine, key=abs), 2)}
    return {
        'per_nf': per_nf,
        'mean_pp': round(sum(errors) / len(errors), 2),
        'max_abs_pp': round(max(abs(e) for e in errors), 2),
        'mean_relative_pct': round(sum(relative) / len(relative), 1)
        if relative else 0.0,
    }
