"""Trained models shared by the SLOMO tests (training takes seconds)."""

import functools

from oslo_config import cfg

from resq_profiler import conf as prof_conf
from resq_profiler import drivers
from resq_profiler import nfmodel
from resq_profiler.slomo import document
from resq_profiler.slomo import training

RUNS = training.DEFAULT_RUNS


def make_conf(truth='testbed', noise_pct=0.5):
    conf = cfg.ConfigOpts()
    prof_conf.register_opts(conf)
    conf([], project='resq', default_config_files=[],
         default_config_dirs=[])
    conf.set_override('model_truth', truth, 'resq_profiler')
    conf.set_override('model_noise_pct', noise_pct, 'resq_profiler')
    return conf


def driver(name, truth='testbed', noise_pct=0.5):
    return drivers.load('model', make_conf(truth, noise_pct), name,
                        nfmodel.Traffic())


@functools.lru_cache(maxsize=None)
def trained_doc(name, runs=RUNS):
    """A sealed model document of catalog NF ``name``.

    One training draw, a fifth of the default's time (test_training tests
    the draws).
    """
    return training.train(driver(name), '%s-64B' % name.lower(), runs=runs,
                          draws=1)


def model(name, runs=RUNS):
    return document.Model(trained_doc(name, runs))
