"""Adaptive profiler against an exhaustive sweep, for every catalog NF.

For each NF (model driver), the number of measurements per curve and the
worst interpolation error of the adaptive profile against an exhaustive
sweep: 1-20 ways for throughput, the 13 configured load levels for latency
(as in the ResQ authors' code). Target (issue 2): at most 12 measurements
per curve, at most 1% error.
"""

import json

from oslo_config import cfg

from resq_profiler import adaptive
from resq_profiler import catalog
from resq_profiler import conf as prof_conf
from resq_profiler import nfmodel
from resq_profiler import profiler


def run(noise_pct=0.0):
    conf = cfg.ConfigOpts()
    prof_conf.register_opts(conf)
    conf([], project='resq')
    conf.set_override('model_noise_pct', noise_pct, group='resq_profiler')
    rows = []
    traffic = nfmodel.Traffic()
    for name in catalog.names():
        prof = profiler.run(conf, name, traffic, driver_name='model')
        model = nfmodel.NFModel(catalog.get(name))
        sweep_thr = [(w, model.throughput_mpps(w, traffic))
                     for w in range(1, 21)]
        sweep_lat = [(x, model.latency_p95_us(x, traffic))
                     for x in conf.resq_profiler.latency_load_levels]
        rows.append({
            'nf': name,
            'sensitivity': catalog.get(name).sensitivity,
            'throughput_points': prof.measurement['points']['throughput'],
            'latency_points': prof.measurement['points']['latency'],
            'throughput_error_pct': adaptive.max_error_pct(
                list(prof.throughput), sweep_thr),
            'latency_error_pct': adaptive.max_error_pct(
                list(prof.latency), sweep_lat),
            'exhaustive_points': len(sweep_thr) + len(sweep_lat),
        })
    return rows


def main(argv):
    rows = run()
    print('Adaptive profiler vs exhaustive sweep (model driver, 64 B, '
          '100k flows, tolerance 1%)')
    print('%-9s %-11s %10s %9s %10s %9s' % (
        'NF', 'class', 'thr pts', 'thr err%', 'lat pts', 'lat err%'))
    for r in rows:
        print('%-9s %-11s %10d %9.3f %10d %9.3f' % (
            r['nf'], r['sensitivity'], r['throughput_points'],
            r['throughput_error_pct'], r['latency_points'],
            r['latency_error_pct']))
    max_pts = max(max(r['throughput_points'], r['latency_points'])
                  for r in rows)
    max_err = max(max(r['throughput_error_pct'], r['latency_error_pct'])
                  for r in rows)
    adaptive_total = sum(r['throughput_points'] + r['latency_points']
                         for r in rows)
    exhaustive_total = sum(r['exhaustive_points'] for r in rows)
    print('worst: %d measurements per curve, %.3f%% error; %d measurements '
          'in all against %d for the sweep (target: <= 12 per curve, '
          '<= 1%%)' % (max_pts, max_err, adaptive_total, exhaustive_total))
    figures = {
        'benchmark': 'profiler',
        'max_measurements_per_curve': max_pts,
        'max_interpolation_error_pct': round(max_err, 4),
        'total_measurements': adaptive_total,
        'exhaustive_measurements': exhaustive_total,
        'target_met': max_pts <= 12 and max_err <= 1.0,
        'per_nf': {r['nf']: {
            'throughput_points': r['throughput_points'],
            'latency_points': r['latency_points'],
            'throughput_error_pct': round(r['throughput_error_pct'], 4),
            'latency_error_pct': round(r['latency_error_pct'], 4)}
            for r in rows},
    }
    print(json.dumps(figures, sort_keys=True))
    return 0
