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
"""``resq-profiler``: measure, store, check and plot NF profiles."""

import json
import os
import sys

from oslo_log import log as logging

from resq_common.clients import resq as resq_client
from resq_common import cmdline
from resq_common.conf import clients as conf_clients
from resq_profiler import catalog
from resq_profiler import conf as resq_conf
from resq_profiler import exception
from resq_profiler import nfmodel
from resq_profiler import profiler
from resq_profiler import store as store_mod
from resq_profiler import upload as upload_mod

LOG = logging.getLogger(__name__)

DESCRIPTION = '''Measure NF profiles (throughput against LLC ways, p95
latency against load) with the configured driver, keep them in the profile
store ([resq] profile_dir), check, show and plot them, push them
to resq-api, and train and check the SLOMO contention models beside
them.'''

_PACKET_BYTES = cmdline.integer(64, 9216)
_POSITIVE = cmdline.integer(1)


def _add_traffic(p):
    p.add_argument('--packet-bytes', type=_PACKET_BYTES, default=64,
                   metavar='B',
                   help='packet size of the offered traffic, 64 to 9216')
    p.add_argument('--flows', type=_POSITIVE, default=100000, metavar='N',
                   help='flows in the offered traffic')


def _add_parsers(subparsers):
    p = subparsers.add_parser(
        'profile', help='measure an NF and store its profile')
    p.add_argument('nf', help='NF name (see "resq-profiler catalog")')
    _add_traffic(p)
    p.add_argument('--nf-config', metavar='PATH',
                   help='the NF configuration file; its digest is recorded '
                        'and the profile is valid for it only')
    p.add_argument('--id', dest='profile_id',
                   help='profile id (default: derived from NF, traffic and '
                        'configuration digest)')
    p.add_argument('--plot', metavar='PNG',
                   help='also write a plot of both curves')
    p.add_argument('--upload', action='store_true',
                   help='also push the stored profile to resq-api '
                        '([resq_api] options)')
    p.add_argument('--public', action='store_true',
                   help='with --upload: every project may use it (admin)')
    p.set_defaults(func=cmd_profile)

    p = subparsers.add_parser(
        'upload', help='push stored profiles (or profile files) to resq-api '
                       '([resq_api] options); the same document again '
                       'changes nothing')
    p.add_argument('profiles', nargs='+', metavar='ID_OR_FILE',
                   help='profile id in the local store, or a file')
    vis = p.add_mutually_exclusive_group()
    vis.add_argument('--public', action='store_true',
                     help='every project may read and use them (admin)')
    vis.add_argument('--private', action='store_true',
                     help="the project's own (default for new profiles; "
                          "stored ones keep their visibility)")
    p.set_defaults(func=cmd_upload)

    p = subparsers.add_parser(
        'profile-catalog',
        help='profile every NF of the catalog with the model driver')
    _add_traffic(p)
    p.add_argument('--plot-dir', metavar='DIR',
                   help='write one PNG per profile here')
    p.set_defaults(func=cmd_profile_catalog)

    p = subparsers.add_parser(
        'validate', help='check profile documents; non-zero exit if invalid')
    p.add_argument('paths', nargs='+', metavar='PATH',
                   help='profile document')
    p.set_defaults(func=cmd_validate)

    p = subparsers.add_parser('show', help='print a profile and its fit')
    p.add_argument('profile', help='profile id in the store, or a file')
    p.add_argument('--json', action='store_true',
                   help='print the profile document as it is stored')
    p.set_defaults(func=cmd_show)

    p = subparsers.add_parser('list', help='list the stored profiles')
    p.set_defaults(func=cmd_list)

    p = subparsers.add_parser('plot', help='write a PNG of both curves')
    p.add_argument('profile', help='profile id in the store, or a file')
    p.add_argument('--output', '-o', required=True, metavar='PNG',
                   help='the PNG file to write')
    p.set_defaults(func=cmd_plot)

    p = subparsers.add_parser('catalog', help='list the NF catalog')
    p.set_defaults(func=cmd_catalog)

    p = subparsers.add_parser(
        'slomo-train',
        help="train an NF's SLOMO contention model and store it beside its "
             'profile')
    p.add_argument('profile', help='profile id in the store')
    p.add_argument('--runs', type=_POSITIVE, default=80, metavar='R',
                   help='contention runs against synthetic competitors')
    p.add_argument('--seed', type=cmdline.integer(), default=0, metavar='S',
                   help='seed of the synthetic competitors')
    p.add_argument('--draws', type=_POSITIVE, default=None, metavar='D',
                   help='training draws, each with its own synthetic '
                        'competitors, runs and fit; the model is their mean '
                        '(D x R contention runs in all; by default '
                        'resq_profiler.slomo.training.DEFAULT_DRAWS)')
    p.set_defaults(func=cmd_slomo_train)

    p = subparsers.add_parser(
        'slomo-check',
        help="check a profile's SLOMO model file; non-zero exit if refused")
    p.add_argument('profile', help='profile id in the store')
    p.set_defaults(func=cmd_slomo_check)


def _store(conf):
    return store_mod.ProfileStore(conf.resq.profile_dir)


def _load(conf, ref):
    if os.path.sep in ref or ref.endswith('.json') or os.path.isfile(ref):
        return store_mod.load_file(ref)
    return _store(conf).get(ref)


def _progress(curve, x, y, count):
    unit = 'ways' if curve == 'throughput' else 'load'
    value = 'Mpps' if curve == 'throughput' else 'us p95'
    shown = ('%d' % x) if curve == 'throughput' else ('%.0f%%' % (x * 100))
    print('  [%s %2d] %s %s -> %.4g %s' % (
        curve, count, unit, shown, y, value), flush=True)


def _profile_one(conf, nf, traffic, config_text='', profile_id=None,
                 plot=None, quiet=False):
    spec = catalog.CATALOG.get(nf)
    print('Profiling %s (%d B packets, %d flows) with the %s driver' % (
        nf, traffic.packet_bytes, traffic.flows, conf.resq_profiler.driver),
        flush=True)
    prof = profiler.run(conf, nf, traffic, config_text=config_text,
                        progress=None if quiet else _progress,
                        profile_id=profile_id,
                        description=spec.description if spec else None)
    path = _store(conf).put(prof)
    m = prof.measurement
    runs = m['measurements']
    fit = m.get('fit', {})
    kinds = '/'.join(fit.get(c, {}).get('model', 'linear')
                     for c in ('throughput', 'latency'))
    print('  stored %s (%d + %d measurements, %d repeated, %d + %d points '
          'measured, curves %s, noise %.2f%%, max interpolation error '
          '%.2f%%) in %s' % (
              prof.profile_id, runs['throughput'], runs['latency'],
              runs['repeats'], m['points']['throughput'],
              m['points']['latency'], kinds, m['noise_pct'],
              m['max_interpolation_error_pct'], path),
          flush=True)
    if plot:
        from resq_profiler import plot as plot_mod
        plot_mod.write_profile_png(prof, plot)
        print('  plot written to %s' % plot)
    return prof


def cmd_profile(conf):
    args = conf.command
    nf = args.nf
    if conf.resq_profiler.driver == 'model':
        nf = catalog.get(nf).name
    config_text = ''
    if args.nf_config:
        try:
            with open(args.nf_config, encoding='utf-8') as f:
                config_text = f.read()
        except OSError as exc:
            raise exception.MeasurementError(
                reason='cannot read NF configuration %s: %s'
                % (args.nf_config, exc.strerror))
    prof = _profile_one(conf, nf, _traffic(args), config_text,
                        args.profile_id, args.plot)
    if args.upload:
        _upload(conf, _api(conf), prof,
                upload_mod.PUBLIC if args.public else None)
    return 0


def _api(conf):
    """resq-api's client from ``[resq_api]``.

    :raises resq_common.conf.clients.MissingCredentials: naming what
        ``[resq_api]`` lacks.
    """
    return resq_client.ResQClient.from_conf(conf)


def _upload(conf, api, prof, visibility):
    record, what = upload_mod.upload(api, prof, visibility)
    print('%s %s in resq-api (%s, generation %s)' % (
        what, record['id'], record.get('visibility'),
        record.get('generation')), flush=True)
    return what


def cmd_upload(conf):
    args = conf.command
    visibility = (upload_mod.PUBLIC if args.public else
                  upload_mod.PRIVATE if args.private else None)
    # Every document is read and checked before anything is sent.
    profiles = [_load(conf, ref) for ref in args.profiles]
    api = _api(conf)
    for prof in profiles:
        _upload(conf, api, prof, visibility)
    return 0


def _traffic(args):
    # --packet-bytes and --flows are checked as they are parsed.
    return nfmodel.Traffic(args.packet_bytes, args.flows)


def cmd_profile_catalog(conf):
    args = conf.command
    traffic = _traffic(args)
    conf.set_override('driver', 'model', group='resq_profiler')
    names = catalog.names()
    for i, nf in enumerate(names, 1):
        print('(%d/%d) ' % (i, len(names)), end='')
        plot = None
        if args.plot_dir:
            os.makedirs(args.plot_dir, exist_ok=True)
            plot = os.path.join(args.plot_dir, '%s.png' % nf.lower())
        _profile_one(conf, nf, traffic, plot=plot, quiet=True)
    return 0


def cmd_validate(conf):
    bad = 0
    for path in conf.command.paths:
        try:
            prof = store_mod.load_file(path)
        except exception.InvalidProfile as exc:
            print('INVALID %s' % exc, file=sys.stderr)
            bad += 1
            continue
        _, over = prof.concave_fit()
        note = ''
        if over > prof.measurement.get('tolerance_pct', 1.0):
            note = (' (warning: throughput is not concave; the fit lies up '
                    'to %.2f%% above it)' % over)
        print('OK %s: %s%s' % (path, prof.profile_id, note))
    return 1 if bad else 0


def _describe(prof):
    pieces, over = prof.concave_fit()
    lines = [
        'Profile %s' % prof.profile_id,
        '  NF %s, config %s' % (prof.name, prof.nf['config_digest'][:19]),
        '  traffic %d B packets, %d flows' % (
            prof.traffic['packet_bytes'], prof.traffic['flows']),
        '  platform %s, %d ways of %d bytes' % (
            prof.platform['cpu_model'], prof.platform['llc_ways'],
            prof.platform['way_size_bytes']),
        '  measured by %s: %s points measured%s' % (
            prof.measurement['driver'], prof.measurement['points'],
            _runs(prof.measurement)),
        '  curves: %s' % _curves(prof.measurement),
        '  throughput (ways -> Mpps): ' + ', '.join(
            '%d:%.3f' % (w, t) for w, t in prof.throughput),
        '  p95 latency at %d ways (load -> us): ' % prof.latency_ways
        + ', '.join('%.0f%%:%.1f' % (x * 100, y) for x, y in prof.latency),
        '  concave fit (%d pieces, at most %.2f%% above the curve):'
        % (len(pieces), over),
    ]
    for p in pieces:
        lines.append('    ways %g-%g: %.4f * ways + %.4f Mpps'
                     % (p.pivot, p.end, p.slope, p.intercept))
    return '\n'.join(lines)


def cmd_show(conf):
    prof = _load(conf, conf.command.profile)
    if conf.command.json:
        print(prof.to_json(), end='')
    else:
        print(_describe(prof))
    return 0


def cmd_list(conf):
    profiles = _store(conf).list()
    if not profiles:
        print('No profiles in %s' % conf.resq.profile_dir)
    for prof in profiles:
        print('%-40s %-9s %5d B %7d flows  peak %.3f Mpps  %s' % (
            prof.profile_id, prof.name, prof.traffic['packet_bytes'],
            prof.traffic['flows'], prof.peak_mpps,
            prof.measurement['driver']))
    return 0


def cmd_plot(conf):
    from resq_profiler import plot as plot_mod
    prof = _load(conf, conf.command.profile)
    plot_mod.write_profile_png(prof, conf.command.output)
    print('plot written to %s' % conf.command.output)
    return 0


def cmd_catalog(conf):
    rows = [{'name': s.name, 'sensitivity': s.sensitivity,
             'solo_mpps': s.mpps, 'description': s.description}
            for s in sorted(catalog.CATALOG.values(), key=lambda s: s.name)]
    for r in rows:
        print('%-9s %-11s %6.3f Mpps  %s' % (r['name'], r['sensitivity'],
                                             r['solo_mpps'],
                                             r['description']))
    return 0


def cmd_slomo_train(conf):
    from resq_profiler import drivers
    from resq_profiler.slomo import store as slomo_store
    from resq_profiler.slomo import training

    args = conf.command
    prof = _store(conf).get(args.profile)
    name = conf.resq_profiler.driver
    if name == 'model':
        # Contention needs the simulated testbed; the analytic model has
        # none.
        conf.set_override('model_truth', 'testbed', group='resq_profiler')
    traffic = nfmodel.Traffic(prof.traffic['packet_bytes'],
                              prof.traffic['flows'])
    driver = drivers.load(name, conf, prof.name, traffic)
    try:
        if driver.platform() != prof.platform:
            raise exception.MeasurementError(
                reason='profile %s was measured on %s, this driver measures '
                '%s; train where the profile was measured'
                % (prof.profile_id, prof.platform, driver.platform()))
        draws = args.draws or training.DEFAULT_DRAWS
        print('Training the SLOMO model of %s (%s driver, %d draws of %d '
              'contention runs)' % (prof.profile_id, name, draws, args.runs),
              flush=True)
        doc = training.train(driver, prof.profile_id, runs=args.runs,
                             seed=args.seed, draws=draws,
                             progress=lambda msg: print('  ' + msg,
                                                        flush=True))
    finally:
        driver.close()
    path = slomo_store.ModelStore(conf.resq.profile_dir).put(doc)
    print('  stored in %s (%d runs, fit error %.2f%%)' % (
        path, doc['training']['runs'],
        doc['training']['fit_mean_error_pct']))
    return 0


def cmd_slomo_check(conf):
    from resq_profiler.slomo import document
    from resq_profiler.slomo import store as slomo_store

    prof = _store(conf).get(conf.command.profile)
    try:
        model = slomo_store.ModelStore(conf.resq.profile_dir).get(
            prof.profile_id, prof.platform)
    except document.InvalidModel as exc:
        print('REFUSED %s' % exc, file=sys.stderr)
        return 1
    t = model.doc['training']
    print('OK %s: %s, trained with the %s driver (%d runs, %s) on %s' % (
        model.source, model.name, t['driver'], t['runs'],
        t.get('library', '?'), model.platform['cpu_model']))
    return 0


def main(argv=None):
    conf = cmdline.parse(argv, 'resq-profiler', DESCRIPTION,
                         (resq_conf.register_opts, resq_client.register_opts),
                         commands=_add_parsers)
    if conf.resq_profiler.driver == 'command':
        # Only the command driver runs anything as root; the others need
        # no privsep (whose daemon module imports eventlet).
        from resq_profiler import privsep

        privsep.init(conf)
    try:
        return conf.command.func(conf)
    except conf_clients.MissingCredentials as exc:
        print('ERROR: %s (resq-api keeps the profiles; "resq-profiler '
              'upload" and "profile --upload" need [resq_api] in the '
              'configuration file)' % exc, file=sys.stderr)
        return 1
    except exception.ResQException as exc:
        print('ERROR: %s' % exc, file=sys.stderr)
        return 1
    except (json.JSONDecodeError, ValueError) as exc:
        print('ERROR: %s' % exc, file=sys.stderr)
        return 1


def _runs(measurement):
    """The measurement runs of a profile, for profiles that record them."""
    runs = measurement.get('measurements')
    if not runs:
        return ''
    return ', %d + %d measurements (%d repeated), noise %.2f%%' % (
        runs['throughput'], runs['latency'], runs['repeats'],
        measurement.get('noise_pct', 0.0))


if __name__ == '__main__':
    sys.exit(main())


def _curves(measurement):
    """How the stored curves came about (``measurement.fit``)."""
    fit = measurement.get('fit')
    if not fit:
        return 'measured points, interpolated linearly'
    out = []
    for curve in ('throughput', 'latency'):
        doc = fit.get(curve, {})
        if doc.get('derived_points'):
            out.append('%s fitted (%s model)' % (curve, doc['model']))
        else:
            out.append('%s measured, interpolated linearly%s' % (
                curve, ' (%s)' % doc['fallback'] if doc.get('fallback')
                else ''))
    return '; '.join(out)
