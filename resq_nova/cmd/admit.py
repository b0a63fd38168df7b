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
"""``resq-admit``: admit reserved SLO terms into the cluster.

With ``--slo on-demand`` the term is an NF and a latency target instead:
see :mod:`resq_nova.admission.ondemand`.

One term (``--term``, ``--profile``, targets): sizes it with the greedy,
checks the cluster has room (Placement allocation candidates), creates or
reuses its flavors (private to the admitting project) and boots its
servers largest first, or writes a Heat template that does
(``--heat-template``), or only prints the plan (``--dry-run``).

Several terms (``--slo-file``, a YAML or JSON list of terms): admits them
jointly (:mod:`resq_nova.admission.batch`), whole or not at all.

Nova is reached through the ``[nova]`` keystoneauth options, Placement
through ``[placement]``.
"""

import json
import sys

from keystoneauth1 import exceptions as ks_exc
from oslo_config import cfg

from resq_common.clients import compute as compute_mod
from resq_common.clients import placement as placement_client
from resq_common.clients import resq as resq_client
from resq_common import cmdline
from resq_common import extra_specs
from resq_nova.admission.batch import deploy as batch_deploy
from resq_nova.admission.batch import slo_file
from resq_nova.admission import greedy
from resq_nova.admission import ondemand
from resq_nova import conf as nova_conf
from resq_nova.deploy import deployment
from resq_nova.deploy import flavors
from resq_nova.deploy import heat
from resq_profiler import exception
from resq_profiler import store as store_mod

DESCRIPTION = '''Admit a reserved SLO term (an NF profile, a throughput and
a p95 latency target) into the cloud: size it with the greedy, check with
Placement that the cluster has room, create or reuse its flavors and boot
its servers largest first, or write a Heat template that does
(--heat-template), or only print the plan (--dry-run). --slo-file admits
every term of a file jointly, whole or not at all; --slo on-demand admits
one server into a host's on-demand lease. Nova and Placement are reached
with the [nova] and [placement] options of the configuration file.'''

cli_opts = [
    cfg.StrOpt('slo', default=extra_specs.RESERVED,
               choices=(extra_specs.RESERVED, extra_specs.ON_DEMAND),
               help='reserved: sized from the profile for the throughput; '
                    'on-demand: one server in a host\'s on-demand lease, '
                    'kept within --latency-p95-us by its host (--profile '
                    'optional; --throughput-mpps optional, the rate it '
                    'is expected to be offered: with SLOMO models, '
                    'admission warns where sharing a lease would push an '
                    'NF below its rate)'),
    cfg.StrOpt('term', help='name of the SLO term; names its flavors '
                            '(resq.<term>.<ways>w) and servers (<term>-<n>)'),
    cfg.StrOpt('profile', help='id of the NF profile in the profile store'),
    cfg.Opt('throughput-mpps', type=cmdline.Positive(),
            help='throughput target, Mpps'),
    cfg.Opt('latency-p95-us', type=cmdline.Positive(),
            help='p95 latency target, microseconds'),
    cfg.IntOpt('packet-bytes', min=64, max=9216,
               help='packet size of the traffic (default: the profile\'s; '
                    'must match it)'),
    cfg.IntOpt('max-instances', min=1,
               help='refuse the term if it needs more instances'),
    cfg.IntOpt('mem-bw-mibps', min=1, max=slo_file.MEM_BW_MAX,
               help='memory bandwidth (MiB/s) each instance holds from its '
                    'cache domain: admission refuses the term where the '
                    'domains lack it, and its flavors ask Placement for it '
                    '(resq:mem_bw_mibps and CUSTOM_MEM_BW_MIBPS)'),
    cfg.IntOpt('vcpus', default=1, min=1,
               help='dedicated cores per instance'),
    cfg.IntOpt('ram-mb', default=1024, min=1, help='memory per instance'),
    cfg.IntOpt('disk-gb', default=1, min=0, help='root disk per instance'),
    cfg.StrOpt('mem-page-size', default='large',
               choices=flavors.PAGE_SIZES,
               help='hw:mem_page_size of the flavors (NFs want huge pages)'),
    cfg.StrOpt('image', help='image (ID) to boot the servers from'),
    cfg.StrOpt('network', help='network UUID of the servers, or "none" or '
                               '"auto"'),
    cfg.IntOpt('boot-timeout', default=600, min=1,
               help='seconds to wait for each server to become ACTIVE'),
    cfg.StrOpt('heat-template', help='write a Heat template to this file '
                                     'instead of booting'),
    cfg.StrOpt('stack-project',
               help='with --heat-template: the project (ID) the stack will '
                    'be created in; the term\'s flavors that exist already '
                    'are private, and this project is given access to them '
                    '(flavors the template creates are shared with the '
                    'stack\'s project by the template itself)'),
    cfg.BoolOpt('dry-run', default=False,
                help='print the plan; create nothing'),
    cfg.StrOpt('format', default='text', choices=('text', 'json'),
               help='output format'),
    cfg.StrOpt('profile-dir', help='read profiles from this local '
                                   'directory instead of resq-api (an '
                                   'offline try-out)'),
    cfg.StrOpt('slo-file', help='admit every term of this YAML or JSON file '
                                'together, whole or not at all (instead of '
                                '--term, --profile and the targets)'),
    cfg.FloatOpt('batch-time-limit', default=10.0, min=0.1,
                 help='seconds the MILP may take to place an SLO file\'s '
                      'terms jointly before the greedy\'s plan is used'),
]

# The options that describe one term; an SLO file describes its own.
TERM_OPTIONS = ('term', 'profile', 'throughput_mpps', 'latency_p95_us',
                'packet_bytes', 'max_instances', 'mem_bw_mibps')


def register_opts(conf):
    nova_conf.register_opts(conf)
    placement_client.register_opts(conf)
    compute_mod.register_opts(conf)
    resq_client.register_opts(conf)


def profile_source(conf, err):
    """Where profiles come from, and resq-api's client (or None).

    ``--profile-dir`` reads local files (an offline try-out, or checking
    files before uploading them); otherwise resq-api when ``[resq_api]``
    is configured; otherwise ``[resq] profile_dir``, with a warning.
    """
    if conf.profile_dir:
        return store_mod.ProfileStore(conf.profile_dir), None
    api = conf[resq_client.GROUP]
    if api.auth_type or api.endpoint_override:
        client = resq_client.ResQClient.from_conf(conf)
        return resq_client.ProfileSource(client), client
    print('WARNING: [resq_api] is not configured: profiles are read from '
          '%s on this host and the admitted term is not recorded'
          % conf.resq.profile_dir, file=err)
    return store_mod.ProfileStore(conf.resq.profile_dir), None


def record_term(client, conf, doc, err):
    """Record what was booted as an SLO term (its uuid in ``doc``).

    :returns: the exit status.
    """
    if client is None or not doc.get('servers'):
        return 0
    slo = conf.slo or extra_specs.RESERVED
    profile_id = conf.profile or doc.get('profile')
    if not profile_id:
        # An on-demand term may come without a profile; resq-api's terms
        # name one (a profile in use cannot be deleted).
        print('NOTE: the term has no profile, so it is not recorded in '
              'resq-api', file=err)
        return 0
    values = resq_client.term_record(
        doc, slo, profile_id,
        conf.throughput_mpps or doc.get('throughput_mpps') or 0.0,
        conf.latency_p95_us, conf.packet_bytes)
    values = {k: v for k, v in values.items() if v is not None}
    try:
        rec = client.create_term(values)
    except exception.ResQException as exc:
        print('ERROR: the servers are booted but the SLO term could not be '
              'recorded in resq-api: %s' % exc, file=err)
        return 1
    doc['slo_term'] = rec['uuid']
    if rec.get('status') == 'requested':
        # Recorded with a project's credentials: the admission service
        # (the service user, or an admin) admits it.
        print('NOTE: SLO term %s is recorded as requested; the service '
              'user or an admin marks it admitted' % rec['uuid'], file=err)
    return 0


def missing_options(args):
    """The options an admission still needs, as ``--option`` names.

    :param args: the command's options (oslo.config or argparse), by
        attribute: ``term``, ``profile``, ``throughput_mpps``, ...
    """
    slo_file = getattr(args, 'slo_file', None)
    need = [] if slo_file else ['term', 'profile', 'throughput_mpps',
                                'latency_p95_us']
    if getattr(args, 'slo', None) == extra_specs.ON_DEMAND:
        need = ['term', 'latency_p95_us']
    if not args.dry_run:
        need.append('image')
        if not args.heat_template:
            need.append('network')
    return ['--' + n.replace('_', '-') for n in need
            if getattr(args, n) is None]


def stack_project_error(args):
    """Why ``--stack-project`` cannot be used here, or None."""
    if getattr(args, 'stack_project', None) and not args.heat_template:
        return ('--stack-project is for --heat-template: servers resq-admit '
                'boots itself are in its own project (of its [nova] '
                'credentials); drop it or add --heat-template')
    return None


def bandwidth_error(args):
    """Why ``--mem-bw-mibps`` cannot be used here, or None."""
    if (getattr(args, 'mem_bw_mibps', None)
            and getattr(args, 'slo', None) == extra_specs.ON_DEMAND):
        return ('--mem-bw-mibps is for reserved terms: on-demand NFs share '
                'their host\'s lease and hold no memory bandwidth of their '
                'own; drop it or admit a reserved term')
    return None


def conflicting_options(args):
    """The one-term options given together with ``--slo-file``."""
    if not getattr(args, 'slo_file', None):
        return []
    return ['--' + n.replace('_', '-') for n in TERM_OPTIONS
            if getattr(args, n) is not None]


def admit_file(args, placement, compute, store, load_discount):
    """Admit every term of ``args.slo_file`` jointly, or none.

    ``resq-admit --slo-file`` and ``openstack resq slo admit --slo-file``
    both call this.

    :returns: the batch document (see
        :func:`resq_nova.admission.batch.deploy.admit`).
    :raises resq_nova.admission.batch.slo_file.InvalidSLOFile: naming the term
        and
        field.
    :raises resq_nova.admission.greedy.BatchRefused: naming every term that
        does not
        fit; nothing was created.
    :raises resq_nova.admission.batch.deploy.BatchFailed: with ``doc`` set to
        what
        was done.
    """
    specs = slo_file.load(args.slo_file)
    return batch_deploy.admit(args.slo_file, specs, args, placement, compute,
                              store, load_discount,
                              getattr(args, 'batch_time_limit', 10.0))


def admit(args, placement, compute, store, load_discount):
    """Size, check and deploy one SLO term; the document of what was done.

    ``resq-admit`` and ``openstack resq slo admit`` both call this.

    :param args: the command's options by attribute (see
        :data:`cli_opts`; names with underscores).
    :param store: the :class:`resq_profiler.store.ProfileStore` to read.
    :returns: the plan (``term``, ``flavors``, ``instances``...) with
        ``flavors_created`` and ``servers`` when it booted, or
        ``heat_template`` when it wrote one.
    :raises resq_nova.admission.greedy.AdmissionRefused: the cluster cannot
        take it.
    :raises resq_nova.deploy.deployment.BootFailed: with ``doc`` set to what
        was
        done before the failure.
    :raises resq_profiler.exception.ResQException: bad profile, flavor
        mismatch, services failing.
    """
    options = flavors.FlavorOptions(args.vcpus, args.ram_mb, args.disk_gb,
                                    args.mem_page_size)
    term = deployment.load_term(
        store, args.term, args.profile, args.throughput_mpps,
        args.latency_p95_us, args.packet_bytes, args.max_instances,
        getattr(args, 'mem_bw_mibps', None))
    if not args.dry_run:
        # Before the capacity check: the term's own servers would make
        # it fail for the wrong reason.
        deployment.check_no_servers(compute, term.name)
    gate = deployment.HostGate.from_compute(compute)
    plan, names = deployment.plan(placement, term, options, load_discount,
                                  gate)
    doc = plan.to_dict(names)
    if plan.enable:
        doc['hosts_to_enable'] = plan.enable
    found = deployment.existing_flavors(compute, plan)
    for flavor in doc['flavors']:
        flavor['exists'] = flavor['name'] in found
    if plan.enable and not args.dry_run:
        # Before anything is created: a host that stays disabled takes
        # nothing, so the term would not fit.
        doc['hosts_enabled'] = gate.enable(compute, plan.enable)
    if args.dry_run:
        pass
    elif args.heat_template:
        deployment.share_flavors(doc, compute, found,
                                 getattr(args, 'stack_project', None))
        store_mod.atomic_write(args.heat_template, heat.dump(
            heat.template(plan, found, args.image, args.network)))
        doc['heat_template'] = args.heat_template
    else:
        ids, created = deployment.ensure_flavors(compute, plan, found)
        doc['flavors_created'] = created
        try:
            doc['servers'] = deployment.boot(compute, plan, ids, args.image,
                                             args.network, args.boot_timeout)
        except deployment.BootFailed as exc:
            doc['servers'] = exc.booted
            exc.doc = doc
            raise
    return doc


def run(conf, placement, compute, out=None, err=None):
    """Admit the term the options describe; returns the exit status."""
    out = out or sys.stdout
    err = err or sys.stderr
    missing = missing_options(conf)
    if missing:
        print('ERROR: resq-admit needs %s' % ', '.join(missing),
              file=err)
        return 1
    conflicting = conflicting_options(conf)
    if conflicting:
        print('ERROR: %s describe one term; with --slo-file every term '
              'comes from the file: drop them or --slo-file'
              % ', '.join(conflicting), file=err)
        return 1
    wrong = stack_project_error(conf) or bandwidth_error(conf)
    if wrong:
        print('ERROR: %s' % wrong, file=err)
        return 1
    try:
        store, client = profile_source(conf, err)
    except CLIENT_ERRORS as exc:
        print(error_line(exc), file=err)
        return 1
    if conf.slo_file:
        return _run_file(conf, placement, compute, store, out, err)
    try:
        if conf.slo == extra_specs.ON_DEMAND:
            doc = ondemand.admit(conf, placement, compute, store)
        else:
            doc = admit(conf, placement, compute, store,
                        conf.resq.load_discount)
    except greedy.AdmissionRefused as exc:
        _refused(conf, exc, out, err)
        return 1
    except deployment.BootFailed as exc:
        _show(conf, exc.doc, out)
        print('ERROR: %s' % exc, file=err)
        return 1
    except CLIENT_ERRORS as exc:
        print(error_line(exc), file=err)
        return 1
    rc = 0
    if not (conf.dry_run or conf.heat_template):
        rc = record_term(client, conf, doc, err)
    _show(conf, doc, out)
    return rc


# What an admission can end in besides a refusal or a failed boot.
CLIENT_ERRORS = (exception.ResQException, extra_specs.InvalidResQSpec,
                 ks_exc.ClientException)


def error_line(exc):
    """The one line ``resq-admit`` prints for one of CLIENT_ERRORS."""
    if isinstance(exc, ks_exc.ClientException):
        # Raised before any request is sent: no auth plugin or endpoint.
        return ('ERROR: cannot talk to Nova or Placement (%s); set the '
                'keystoneauth options of [nova] and [placement] (auth_type, '
                'auth_url, credentials, or endpoint_override)' % exc)
    return 'ERROR: %s' % exc


def _run_file(conf, placement, compute, store, out, err):
    try:
        doc = admit_file(conf, placement, compute, store,
                         conf.resq.load_discount)
    except greedy.BatchRefused as exc:
        if conf.format == 'json':
            print(json.dumps({'slo_file': conf.slo_file, 'refused': [
                {'term': r.term, 'constraint': r.constraint,
                 'reason': r.reason} for r in exc.refusals]}, indent=2),
                file=out)
        for line in refusal_lines(conf.slo_file, exc):
            print(line, file=err)
        return 1
    except batch_deploy.BatchFailed as exc:
        _show_file(conf, exc.doc, out)
        print('ERROR: %s' % exc, file=err)
        return 1
    except CLIENT_ERRORS as exc:
        print(error_line(exc), file=err)
        return 1
    _show_file(conf, doc, out)
    return 0


def refusal_lines(path, exc):
    """A refused SLO file: the lines an operator reads.

    One per term that does not fit, then one saying nothing was created.
    """
    lines = ['REFUSED (%s): SLO term %s: %s' % (r.constraint, r.term,
                                                r.reason)
             for r in exc.refusals]
    lines.append('Nothing was created: the terms of %s are admitted whole '
                 'or not at all' % path)
    return lines


def _show_file(conf, doc, out):
    if conf.format == 'json':
        print(json.dumps(doc, indent=2, sort_keys=True), file=out)
        return
    print('SLO file %s: %d terms placed together (%s plan)' % (
        doc['slo_file'], len(doc['terms']), doc['method']), file=out)
    for term in doc['terms']:
        _show(conf, term, out)
    _show_stack(doc, out)


def _refused(conf, exc, out, err):
    if conf.format == 'json':
        print(json.dumps({'term': exc.term, 'refused': exc.constraint,
                          'reason': exc.reason}, indent=2), file=out)
    print('REFUSED (%s): SLO term %s: %s' % (exc.constraint, exc.term,
                                             exc.reason), file=err)


def _show(conf, doc, out):
    if conf.format == 'json':
        print(json.dumps(doc, indent=2, sort_keys=True), file=out)
        return
    if doc.get('slo') == extra_specs.ON_DEMAND:
        print('On-demand SLO term %s: p95 <= %s us; %d lease(s) with room'
              % (doc['term'], doc['latency_p95_us'],
                 len(doc['leases_with_room'])), file=out)
        print('  flavor %s' % doc['flavor']['name'], file=out)
        for server in doc.get('servers', ()):
            print('  server %s ACTIVE on %s (%s)' % (
                server['name'], server['host'], server['id']), file=out)
        _show_stack(doc, out)
        return
    print('SLO term %s%s: %s Mpps at p95 <= %s us with profile %s' % (
        doc['term'], ' (chain %s)' % doc['chain'] if doc.get('chain') else '',
        doc['throughput_mpps'], doc['latency_p95_us'], doc['profile']),
        file=out)
    print('  %d instances, load cap %.1f%%, capacity %.3f Mpps%s' % (
        len(doc['instances']), doc['load_cap'] * 100, doc['capacity_mpps'],
        ', %d MiB/s of memory bandwidth each' % doc['mem_bw_mibps']
        if doc.get('mem_bw_mibps') else ''), file=out)
    for flavor in doc['flavors']:
        state = ('created' if flavor['name'] in doc.get('flavors_created', ())
                 else 'exists' if flavor['exists'] else 'to create')
        print('  flavor %-28s %2d ways  %s' % (flavor['name'], flavor['ways'],
                                               state), file=out)
    booted = {s['name']: s for s in doc.get('servers', ())}
    for inst in doc['instances']:
        server = booted.get(inst['name'])
        if server is None:
            where = 'predicted host %s' % inst['host']
        elif server.get('status', 'ACTIVE') == 'ACTIVE':
            where = 'ACTIVE on %s (%s)' % (server['host'], server['id'])
        elif server.get('error'):
            where = '%s (%s): %s' % (server['status'], server['id'],
                                     server['error'])
        else:
            where = server['status']
        print('  server %-20s %2d ways %8.3f Mpps  %s' % (
            inst['name'], inst['ways'], inst['mpps'], where), file=out)
    _show_stack(doc, out)


def _show_stack(doc, out):
    if doc.get('slo_term'):
        print('  recorded in resq-api as SLO term %s' % doc['slo_term'],
              file=out)
    if doc.get('flavors_shared'):
        print('  project %s has access to flavor(s) %s' % (
            doc['stack_project'], ', '.join(doc['flavors_shared'])),
            file=out)
    for warning in doc.get('warnings', ()):
        print('  WARNING %s' % warning, file=out)
    if doc.get('heat_template'):
        print('Heat template written to %s' % doc['heat_template'], file=out)


def main(argv=None):
    conf = cmdline.parse(argv, 'resq-admit', DESCRIPTION, (register_opts,),
                         cli_opts)
    # Not strict: run() names missing arguments before it needs a service,
    # and says which options to set if it gets that far without them.
    return run(conf,
               placement_client.PlacementClient.from_conf(conf,
                                                          strict=False),
               compute_mod.ComputeClient.from_conf(conf, strict=False))


if __name__ == '__main__':
    sys.exit(main())
