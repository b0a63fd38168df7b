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
"""The profiler's runs against its error, under measurement noise.

ResQ §5.2 profiles an NF in 8-12 runs and states the profiles accurate to
about 1%. Whether both hold at once depends on the run-to-run noise of the
testbed: a noiseless run pins a point of a curve, a noisy one only narrows
it, and repeated runs to narrow it count as runs. :func:`tradeoff` profiles
every catalog NF with the model driver (``[resq_profiler] model_truth``)
at each noise level and seed, under each budget of runs per profile, and
judges the curves against the driver's noiseless truth, as
:mod:`resq_profiler.accuracy` does (``tox -e bench -- profiler``):

* the error of a profile is the worst relative error of its throughput
  curve at every allocation of 1-20 ways and of its latency curve at the
  configured load levels, against the noiseless values;
* its runs are every measurement it took, repeats included, both curves
  together (a saturating run that also reads the full-load latency counts
  once).

The result is JSON-able; a budget of ``None`` is the profiler's own
stopping rule, bounded by ``max_measurements_per_curve`` per curve only.
"""

import logging
import statistics

from oslo_config import cfg

from resq_profiler import adaptive
from resq_profiler import catalog
from resq_profiler import conf as prof_conf
from resq_profiler import nfmodel
from resq_profiler import profiler
from resq_profiler import truth

# ResQ §5.2: at most this many runs per profile ...
PAPER_RUNS = 12
# ... for at most this error, in percent.
PAPER_ERROR_PCT = 1.0
# Runs per profile to try, None being the profiler's own stopping rule.
DEFAULT_BUDGETS = (6, 9, 12, 18, None)
KINDS = ('nfmodel', 'testbed')


def key(value):
    """The JSON key of a noise level or budget: ``0.5`` -> ``"0.5"``."""
    return 'auto' if value is None else '%g' % value


def _check(noise_levels, seeds, budgets, kind, nfs):
    """Raise ValueError naming what is wrong with the arguments."""
    if kind not in KINDS:
        raise ValueError('kind must be one of %s, got %r; it names the '
                         'truth the model driver measures'
                         % (', '.join(KINDS), kind))
    if not noise_levels:
        raise ValueError('noise_levels must name at least one noise level '
                         'in percent, e.g. (0.0, 0.5, 1.0)')
    for n in noise_levels:
        if isinstance(n, bool) or not isinstance(n, (int, float)) or not (
                0.0 <= n <= 20.0):
            raise ValueError('noise levels are percentages from 0 to 20 '
                             '(the range of [resq_profiler] '
                             'model_noise_pct), got %r' % (n,))
    if not seeds or any(isinstance(s, bool) or not isinstance(s, int)
                        for s in seeds):
        raise ValueError('seeds must be a non-empty sequence of integers, '
                         'got %r' % (seeds,))
    for b in budgets:
        if b is not None and (isinstance(b, bool) or not isinstance(b, int)
                              or b < profiler.MIN_PROFILE_BUDGET):
            raise ValueError('budgets are runs per profile, integers of at '
                             'least %d (three per curve), or None for the '
                             'profiler\'s own stopping rule; got %r'
                             % (profiler.MIN_PROFILE_BUDGET, b))
    unknown = sorted(set(nfs) - set(catalog.names()))
    if unknown:
        raise ValueError('unknown NF(s) %s; the catalog has %s'
                         % (', '.join(unknown), ', '.join(catalog.names())))


def _conf(kind, noise, seed):
    conf = cfg.ConfigOpts()
    prof_conf.register_opts(conf)
    conf([], project='resq')
    group = 'resq_profiler'
    conf.set_override('model_noise_pct', noise, group=group)
    conf.set_override('model_seed', seed, group=group)
    conf.set_override('model_truth', kind, group=group)
    return conf


class _Truth:
    """The noiseless curves a profile is judged against, cached per NF."""

    def __init__(self, kind, traffic, levels):
        self.kind = kind
        self.traffic = traffic
        self.levels = levels
        self._thr = {}

    def throughput(self, name):
        if name not in self._thr:
            spec = catalog.get(name)
            if self.kind == 'testbed':
                self._thr[name] = [
                    (w, truth.solo(spec, w, self.traffic).capacity_mpps)
                    for w in range(1, 21)]
            else:
                model = nfmodel.NFModel(spec)
                self._thr[name] = [(w, model.throughput_mpps(w, self.traffic))
                                   for w in range(1, 21)]
        return self._thr[name]

    def latency(self, name, ways, peak_mpps):
        """The latency at the load levels, a fraction of ``peak_mpps``."""
        spec = catalog.get(name)
        if self.kind == 'testbed':
            return [(x, truth.solo(spec, ways, self.traffic,
                                   x * peak_mpps).latency_p95_us)
                    for x in self.levels]
        model = nfmodel.NFModel(spec)
        return [(x, model.latency_p95_us(x, self.traffic))
                for x in self.levels]


def profile_error(prof, name, judge):
    """``(runs, error %)`` of one profile against the noiseless truth."""
    m = prof.measurement['measurements']
    thr_err = adaptive.max_error_pct(list(prof.throughput),
                                     judge.throughput(name))
    lat_err = adaptive.max_error_pct(
        list(prof.latency), judge.latency(
            name, prof.latency_ways, prof.throughput_at(prof.latency_ways)))
    return m['throughput'] + m['latency'], max(thr_err, lat_err)


def summarise(samples):
    """One point of the curve from ``[(runs, error %)]`` of profiles."""
    runs = [r for r, _ in samples]
    errs = [e for _, e in samples]
    return {'runs_median': statistics.median(runs),
            'runs_max': max(runs),
            'error_pct_median': round(statistics.median(errs), 4),
            'error_pct_max': round(max(errs), 4),
            'profiles': len(samples)}


def claim_holds(curve, runs=PAPER_RUNS, error_pct=PAPER_ERROR_PCT,
                stat='error_pct_max'):
    """Whether a point of ``curve`` meets the paper's claim.

    :param curve: ``{budget key: point}`` as :func:`summarise` makes.
    :param stat: the error of a point that must be within ``error_pct``:
        ``'error_pct_max'`` (every profile) or ``'error_pct_median'``.
    :returns: ``(holds, the first budget key that meets it or None)``: a
        budget whose median profile took at most ``runs`` runs and whose
        ``stat`` is within ``error_pct``.
    """
    for budget, point in curve.items():
        if point['runs_median'] <= runs and point[stat] <= error_pct:
            return True, budget
    return False, None


def runs_for_error(curve, error_pct=PAPER_ERROR_PCT):
    """What the error target costs: runs of the first point within it.

    :returns: the median runs of the first point of ``curve`` whose every
        profile is within ``error_pct``, or None.
    """
    for point in curve.values():
        if point['error_pct_max'] <= error_pct:
            return point['runs_median']
    return None


def tradeoff(noise_levels=(0.0, 0.5, 1.0), seeds=(0, 1, 2), budgets=None,
             kind='testbed', nfs=None):
    """Runs against error of the adaptive profiler, per noise level.

    :param noise_levels: measurement noise, in percent.
    :param seeds: noise seeds per noisy level (a noiseless level runs
        once: its seeds would repeat it).
    :param budgets: runs per profile to cap the profiler at (None in it:
        the profiler's own stopping rule); default ``DEFAULT_BUDGETS``.
    :param kind: the model driver's truth, ``'testbed'`` or ``'nfmodel'``.
    :param nfs: catalog NF names; default every one.
    :returns: a JSON-able dict: ``runs_median_by_noise`` and
        ``error_pct_by_noise`` (the profiler's own stopping rule: median
        runs per profile, worst error of any profile), ``curve`` (per
        noise level, per budget: the :func:`summarise` point),
        ``paper_claim_holds`` and ``paper_claim_budget`` (per noise level,
        from :func:`claim_holds`), ``paper_claim_holds_median_profile``
        (the same for the median profile's error), ``runs_for_paper_error``
        (per noise level, from :func:`runs_for_error`) and what was run.
    :raises ValueError: on arguments it cannot run.
    """
    budgets = DEFAULT_BUDGETS if budgets is None else tuple(budgets)
    nfs = tuple(catalog.names() if nfs is None else nfs)
    _check(noise_levels, seeds, budgets, kind, nfs)
    if None not in budgets:
        budgets += (None,)
    budgets = sorted(set(budgets), key=lambda b: (b is None, b or 0))
    out = {'kind': kind, 'nfs': list(nfs), 'seeds': list(seeds),
           'budgets': [key(b) for b in budgets],
           'paper': {'runs': PAPER_RUNS, 'error_pct': PAPER_ERROR_PCT},
           'runs_median_by_noise': {}, 'error_pct_by_noise': {},
           'curve': {}, 'paper_claim_holds': {}, 'paper_claim_budget': {},
           'paper_claim_holds_median_profile': {},
           'runs_for_paper_error': {}}
    log = logging.getLogger(profiler.__name__)
    level = log.level
    # A capped profile warns that it hit its budget: that is the point.
    log.setLevel(logging.ERROR)
    try:
        for noise in noise_levels:
            curve = _curve(kind, noise, seeds if noise else seeds[:1],
                           budgets, nfs)
            k = key(noise)
            out['curve'][k] = curve
            out['runs_median_by_noise'][k] = curve['auto']['runs_median']
            out['error_pct_by_noise'][k] = curve['auto']['error_pct_max']
            holds, at = claim_holds(curve)
            out['paper_claim_holds'][k] = holds
            out['paper_claim_budget'][k] = at
            out['paper_claim_holds_median_profile'][k] = claim_holds(
                curve, stat='error_pct_median')[0]
            out['runs_for_paper_error'][k] = runs_for_error(curve)
    finally:
        log.setLevel(level)
    return out


def _curve(kind, noise, seeds, budgets, nfs):
    """``{budget key: summarise point}`` at one noise level."""
    traffic = nfmodel.Traffic()
    curve = {}
    judge = None
    for budget in budgets:
        samples = []
        for seed in seeds:
            conf = _conf(kind, noise, seed)
            if judge is None:
                judge = _Truth(kind, traffic,
                               sorted(conf.resq_profiler.latency_load_levels))
            for name in nfs:
                prof = profiler.run(conf, name, traffic, driver_name='model',
                                    max_measurements=budget)
                samples.append(profile_error(prof, name, judge))
        curve[key(budget)] = summarise(samples)
    return curve
