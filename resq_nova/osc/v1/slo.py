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
"""``openstack resq slo admit``: what ``resq-admit`` does, on the CLI's
credentials (the same :func:`resq_nova.cmd.admit.admit`)."""

from osc_lib.cli import format_columns
from osc_lib.command import command
from osc_lib import exceptions
from oslo_utils import uuidutils

from resq_common.clients import resq as resq_client
from resq_nova.admission.batch import deploy as batch_deploy
from resq_nova.admission import greedy
from resq_nova.cmd import admit
from resq_nova.deploy import deployment
from resq_nova.deploy import flavors
from resq_nova.osc import client
from resq_nova.osc import config
from resq_profiler import store as store_mod


def _stack_fields(doc, data):
    """A Heat template's file, flavor sharing and warnings, if any."""
    for key in ('heat_template', 'stack_project'):
        if doc.get(key):
            data[key] = doc[key]
    if doc.get('stack_project'):
        data['flavors_shared'] = ', '.join(doc.get('flavors_shared') or ())
    if doc.get('warnings'):
        data['warnings'] = format_columns.ListColumn(doc['warnings'])


def admission_view(doc):
    """The admission document as the CLI shows it. Pure."""
    created = set(doc.get('flavors_created') or ())
    flavor_rows = [{'name': f['name'], 'ways': f['ways'],
                    'state': ('created' if f['name'] in created
                              else 'exists' if f.get('exists')
                              else 'to create')}
                   for f in doc['flavors']]
    booted = {s['name']: s for s in doc.get('servers') or ()}
    instances = []
    for inst in doc['instances']:
        row = {'name': inst['name'], 'ways': inst['ways'],
               'mpps': inst['mpps'], 'predicted_host': inst['host']}
        server = booted.get(inst['name'])
        if server:
            row.update(id=server['id'], host=server['host'])
        instances.append(row)
    data = {
        'term': doc['term'],
        'profile': doc['profile'],
        'throughput_mpps': doc['throughput_mpps'],
        'latency_p95_us': doc['latency_p95_us'],
        'load_cap': doc['load_cap'],
        'capacity_mpps': doc['capacity_mpps'],
        'flavors': format_columns.ListDictColumn(flavor_rows),
        'instances': format_columns.ListDictColumn(instances),
    }
    if doc.get('slo_term'):
        data['slo_term'] = doc['slo_term']
    if doc.get('mem_bw_mibps'):
        # Memory bandwidth each instance holds (shown only where asked).
        data['mem_bw_mibps'] = doc['mem_bw_mibps']
    _stack_fields(doc, data)
    names = sorted(data)
    return names, [data[n] for n in names]


def batch_view(doc):
    """An SLO file's admission document as the CLI shows it. Pure."""
    terms, instances = [], []
    for term in doc['terms']:
        created = set(term.get('flavors_created') or ())
        terms.append({
            'term': term['term'], 'chain': term.get('chain'),
            'profile': term['profile'],
            'throughput_mpps': term['throughput_mpps'],
            'latency_p95_us': term['latency_p95_us'],
            'capacity_mpps': term['capacity_mpps'],
            **({'mem_bw_mibps': term['mem_bw_mibps']}
               if term.get('mem_bw_mibps') else {}),
            'flavors': ', '.join(
                '%s (%s)' % (f['name'], 'created' if f['name'] in created
                             else 'exists' if f.get('exists')
                             else 'to create')
                for f in term['flavors'])})
        booted = {s['name']: s for s in term.get('servers') or ()}
        for inst in term['instances']:
            row = {'term': term['term'], 'name': inst['name'],
                   'ways': inst['ways'], 'mpps': inst['mpps'],
                   'predicted_host': inst['host']}
            server = booted.get(inst['name'])
            if server:
                row.update(id=server['id'], host=server['host'],
                           status=server.get('status', 'ACTIVE'))
                if server.get('error'):
                    row['error'] = server['error']
            instances.append(row)
    data = {'slo_file': doc['slo_file'], 'method': doc['method'],
            'terms': format_columns.ListDictColumn(terms),
            'instances': format_columns.ListDictColumn(instances)}
    _stack_fields(doc, data)
    names = sorted(data)
    return names, [data[n] for n in names]


class AdmitSLO(client.AuthenticatedCommand, command.ShowOne):
    """Admit reserved SLO terms: size them, check room, boot their servers.

    One term from the options, or every term of an SLO file
    (``--slo-file``) jointly, whole or not at all.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        defaults = config.service_conf()
        add = parser.add_argument
        add('--term', metavar='<name>',
            help='name of the SLO term; names its flavors '
            '(resq.<term>.<ways>w) and servers (<term>-<n>)')
        add('--profile', metavar='<profile-id>',
            help='id of the NF profile in the profile store')
        add('--throughput-mpps', metavar='<mpps>', type=float,
            help='throughput target, Mpps')
        add('--latency-p95-us', metavar='<us>', type=float,
            help='p95 latency target, microseconds')
        add('--packet-bytes', metavar='<bytes>', type=int,
            help="packet size of the traffic (default: the profile's; "
            "must match it)")
        add('--max-instances', metavar='<n>', type=int,
            help='refuse the term if it needs more instances')
        add('--mem-bw-mibps', metavar='<mibps>', type=int,
            help='memory bandwidth (MiB/s) each instance holds from its '
            'cache domain; its flavors ask Placement for it')
        add('--vcpus', metavar='<n>', type=int, default=1,
            help='dedicated cores per instance (default: 1)')
        add('--ram-mb', metavar='<mb>', type=int, default=1024,
            help='memory per instance (default: 1024)')
        add('--disk-gb', metavar='<gb>', type=int, default=1,
            help='root disk per instance (default: 1)')
        add('--mem-page-size', metavar='<size>', default='large',
            choices=flavors.PAGE_SIZES,
            help='hw:mem_page_size of the flavors (default: large)')
        add('--image', metavar='<image-id>',
            help='image (ID) to boot the servers from')
        add('--network', metavar='<network>',
            help='network UUID of the servers, or "none" or "auto"')
        add('--boot-timeout', metavar='<seconds>', type=int, default=600,
            help='seconds to wait for each server to become ACTIVE')
        add('--heat-template', metavar='<file>',
            help='write a Heat template to this file instead of booting')
        add('--stack-project', metavar='<project-id>',
            help="with --heat-template: the project the stack will be "
            "created in; the term's existing (private) flavors are shared "
            "with it")
        add('--dry-run', action='store_true',
            help='show the plan; create nothing')
        add('--load-discount', metavar='<fraction>', type=float,
            default=defaults.resq.load_discount,
            help='fraction taken off every instance\'s load cap (default: '
            '[resq] load_discount, %s)' % defaults.resq.load_discount)
        add('--slo-file', metavar='<file>',
            help='admit every term of this YAML or JSON file together, '
            'whole or not at all (instead of --term, --profile and the '
            'targets)')
        add('--batch-time-limit', metavar='<seconds>', type=float,
            default=10.0,
            help="seconds the MILP may take to place an SLO file's terms "
            "jointly before the greedy's plan is used (default: 10)")
        config.add_profile_dir(parser)
        return parser

    def _check(self, parsed_args):
        missing = admit.missing_options(parsed_args)
        if missing:
            raise exceptions.CommandError(
                'openstack resq slo admit needs %s' % ', '.join(missing))
        conflicting = admit.conflicting_options(parsed_args)
        if conflicting:
            raise exceptions.CommandError(
                '%s describe one term; with --slo-file every term comes '
                'from the file: drop them or --slo-file'
                % ', '.join(conflicting))
        wrong = (admit.stack_project_error(parsed_args)
                 or admit.bandwidth_error(parsed_args))
        if wrong:
            raise exceptions.CommandError(wrong)
        if parsed_args.batch_time_limit <= 0:
            raise exceptions.CommandError(
                '--batch-time-limit must be a positive number of seconds')
        for name in ('vcpus', 'ram_mb', 'boot_timeout', 'max_instances',
                     'mem_bw_mibps'):
            value = getattr(parsed_args, name)
            if value is not None and value < 1:
                raise exceptions.CommandError(
                    '--%s must be at least 1' % name.replace('_', '-'))
        if not 0.0 <= parsed_args.load_discount <= 0.5:
            raise exceptions.CommandError(
                '--load-discount must be between 0 and 0.5')
        if parsed_args.disk_gb < 0:
            raise exceptions.CommandError('--disk-gb must not be negative')

    @client.translate_errors
    def take_action(self, parsed_args):
        self._check(parsed_args)
        resq = client.get_client(self.app)
        service = None if parsed_args.profile_dir else resq.service
        if service is None:
            store = store_mod.ProfileStore(config.profile_dir(parsed_args))
        else:
            store = resq_client.ProfileSource(service)
        if parsed_args.slo_file:
            return self._admit_file(parsed_args, resq, store)
        try:
            doc = admit.admit(parsed_args, resq.placement, resq.compute,
                              store, parsed_args.load_discount)
        except greedy.AdmissionRefused as exc:
            raise exceptions.CommandError(
                'REFUSED (%s): SLO term %s: %s' % (exc.constraint, exc.term,
                                                   exc.reason))
        except deployment.BootFailed as exc:
            raise exceptions.CommandError(str(exc))
        if service is not None and doc.get('servers'):
            rec = service.create_term(_term_values(parsed_args, doc))
            doc['slo_term'] = rec['uuid']
        return admission_view(doc)

    def _admit_file(self, parsed_args, resq, store):
        try:
            doc = admit.admit_file(parsed_args, resq.placement,
                                   resq.compute, store,
                                   parsed_args.load_discount)
        except greedy.BatchRefused as exc:
            raise exceptions.CommandError('\n'.join(
                admit.refusal_lines(parsed_args.slo_file, exc)))
        except batch_deploy.BatchFailed as exc:
            # The true outcome of every action, then the failure.
            for line in _outcome_lines(exc.doc):
                self.app.stderr.write(line + '\n')
            raise exceptions.CommandError(str(exc))
        return batch_view(doc)


def _term_values(parsed_args, doc):
    values = resq_client.term_record(
        doc, getattr(parsed_args, 'slo', None) or 'reserved',
        parsed_args.profile,
        parsed_args.throughput_mpps, parsed_args.latency_p95_us,
        parsed_args.packet_bytes)
    return {k: v for k, v in values.items() if v is not None}


TERM_COLUMNS = ('uuid', 'name', 'project_id', 'profile_id', 'slo',
                'throughput_mpps', 'latency_p95_us', 'packet_bytes',
                'status', 'flavors', 'servers', 'generation', 'created_at',
                'updated_at')


def term_view(rec):
    data = dict(rec, flavors=format_columns.ListColumn(rec['flavors']),
                servers=format_columns.ListColumn(rec['servers']))
    return TERM_COLUMNS, [data.get(c) for c in TERM_COLUMNS]


def _service(app):
    service = client.get_client(app).service
    if service is None:
        raise exceptions.CommandError('this command needs resq-api; the '
                                      'client has none')
    return service


def find_term(service, ref):
    """The SLO term ``ref`` names: its UUID, or its name.

    As :func:`osc_lib.utils.find_resource` finds a resource: a UUID is
    asked for (``GET /slo_terms/{uuid}``); a name (or a UUID resq-api
    does not know) is looked for among the project's terms, and exactly
    one must have it.

    :raises osc_lib.exceptions.CommandError: no term, or several, have it.
    """
    if uuidutils.is_uuid_like(ref):
        try:
            return service.get_term(ref)
        except resq_client.NotFound:
            pass
    named = sorted(t['uuid'] for t in service.list_terms()
                   if t.get('name') == ref)
    if len(named) == 1:
        return service.get_term(named[0])
    if not named:
        raise exceptions.CommandError(
            'no SLO term with the name or UUID %r in this project; '
            '"openstack resq slo list" lists them' % ref)
    raise exceptions.CommandError(
        '%d SLO terms are named %r (%s); give the UUID of one'
        % (len(named), ref, ', '.join(named)))


class ListSLO(client.AuthenticatedCommand, command.Lister):
    """List SLO terms: the project's, or every project's."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--all-projects', action='store_true',
                            help='every project\'s terms (admin)')
        parser.add_argument('--status', metavar='<status>',
                            choices=('requested', 'admitted', 'degraded',
                                     'violated', 'released'),
                            help='only terms with this status')
        return parser

    @client.translate_errors
    def take_action(self, parsed_args):
        terms = _service(self.app).list_terms(
            status=parsed_args.status,
            all_projects='true' if parsed_args.all_projects else None)
        columns = ('UUID', 'Name', 'Project', 'Profile', 'SLO', 'Mpps',
                   'p95 us', 'Status', 'Servers')
        return columns, [(t['uuid'], t['name'], t['project_id'],
                          t['profile_id'], t['slo'], t['throughput_mpps'],
                          t['latency_p95_us'], t['status'],
                          len(t['servers'])) for t in terms]


class ShowSLO(client.AuthenticatedCommand, command.ShowOne):
    """Show an admitted SLO term."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('term', metavar='<term>',
                            help='SLO term (name or UUID)')
        return parser

    @client.translate_errors
    def take_action(self, parsed_args):
        return term_view(find_term(_service(self.app), parsed_args.term))


class ReleaseSLO(client.AuthenticatedCommand, command.ShowOne):
    """Mark an SLO term released (its profile may then be deleted)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('term', metavar='<term>',
                            help='SLO term (name or UUID)')
        return parser

    @client.translate_errors
    def take_action(self, parsed_args):
        service = _service(self.app)
        rec = find_term(service, parsed_args.term)
        return term_view(service.update_term(rec['uuid'], rec['generation'],
                                             status='released'))


class DeleteSLO(client.AuthenticatedCommand, command.Command):
    """Delete an SLO term's record (its servers and flavors stay)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('term', metavar='<term>',
                            help='SLO term (name or UUID)')
        return parser

    @client.translate_errors
    def take_action(self, parsed_args):
        service = _service(self.app)
        service.delete_term(find_term(service, parsed_args.term)['uuid'])


def _outcome_lines(doc):
    """One line per flavor and server of a batch that failed part way."""
    lines = []
    for term in doc['terms']:
        for name in term.get('flavors_created') or ():
            lines.append('flavor %s: created' % name)
        for server in term.get('servers') or ():
            line = 'server %s: %s' % (server['name'], server['status'])
            if server.get('id'):
                line += ' (%s)' % server['id']
            if server.get('host'):
                line += ' on %s' % server['host']
            if server.get('error'):
                line += ': %s' % server['error']
            lines.append(line)
    return lines
