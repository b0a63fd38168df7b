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
"""SLOMO's contention predictor for the cluster evaluation.

Each NF is profiled the SLOMO way (:mod:`resq_profiler.slomo.training`)
through the model driver on the simulated testbed, with the evaluation's
measurement noise: its contentiousness, and a sensitivity model trained
against synthetic competitors. The prediction of an NF's throughput next
to a set of catalog NFs reads their measured contentiousness, composes it
with the size of the class they share (the whole LLC unless told) and
asks the NF's model. It answers the same questions as
:class:`resq_nova.evaluation.dobrescu.Predictor`, so the ``slomo`` scheme
places with the ``prediction`` scheme's logic, and
:func:`resq_nova.evaluation.dobrescu.figure10` judges both.
"""

from oslo_config import cfg

from resq_nova.evaluation import dobrescu
from resq_profiler import catalog
from resq_profiler import conf as prof_conf
from resq_profiler import drivers
from resq_profiler import nfmodel
from resq_profiler.slomo import document
from resq_profiler.slomo import training


class Predictor:
    """SLOMO models of catalog NFs, trained on first use.

    :param noise_pct: measurement noise of every profiling run.
    :param packet_bytes: packet size of the traffic.
    :param seed: seed of the noise and of the training plan.
    :param runs: contention runs per NF.
    :param draws: training draws per NF (see
        :func:`resq_profiler.slomo.training.train`); the model is their
        mean. ``training.DEFAULT_DRAWS`` by default, what ``resq-profiler
        slomo-train`` trains and what ``tox -e bench -- seeds`` judges over
        seeds, so the evaluation's figures are those of the same models;
        one draw is the model of before draws (issue 45: its error depends
        on the draw).
    """

    def __init__(self, noise_pct=0.0, packet_bytes=64, seed=0,
                 runs=training.DEFAULT_RUNS, draws=training.DEFAULT_DRAWS):
        self.traffic = nfmodel.Traffic(packet_bytes)
        self.platform = nfmodel.Platform()
        self.all_ways = frozenset(range(self.platform.llc_ways))
        self.noise_pct = noise_pct
        self.seed = seed
        self.runs = runs
        self.draws = draws
        self.conf = cfg.ConfigOpts()
        prof_conf.register_opts(self.conf)
        self.conf([], project='resq', default_config_files=[],
                  default_config_dirs=[])
        group = 'resq_profiler'
        self.conf.set_override('model_truth', 'testbed', group)
        self.conf.set_override('model_noise_pct', noise_pct, group)
        self.conf.set_override('model_seed', seed, group)
        self._models = {}
        self._memo = {}
        self.measurements = 0

    def model(self, name):
        """The :class:`resq_profiler.slomo.document.Model` of ``name``."""
        spec = catalog.get(name)
        if spec.name not in self._models:
            driver = self.driver(spec.name)
            try:
                doc = training.train(driver, 'eval-%s' % spec.name,
                                     runs=self.runs, seed=self.seed,
                                     draws=self.draws)
            finally:
                self.measurements += driver.calls
                driver.close()
            self._models[spec.name] = document.Model(doc)
        return self._models[spec.name]

    def driver(self, name):
        """A model driver measuring NF ``name`` on the testbed."""
        return drivers.load('model', self.conf, catalog.get(name).name,
                            self.traffic)

    def solo_mpps(self, name):
        return self.model(name).solo_mpps

    def predict(self, name, competitors, ways=None):
        """Predicted saturation throughput (Mpps) of ``name``.

        :param competitors: names of the NFs sharing its cache class.
        :param ways: ways of that class; ``None`` is the whole LLC (the
            evaluation's schemes share all of it).
        """
        key = dobrescu.colocation(name, competitors)
        if ways is not None and ways >= self.platform.llc_ways:
            ways = None
        if (key, ways) not in self._memo:
            mine = self.model(key[0])
            self._memo[key, ways] = mine.predict_mpps(
                [self.model(c).contentiousness for c in key[1]], ways)
        return self._memo[key, ways]
