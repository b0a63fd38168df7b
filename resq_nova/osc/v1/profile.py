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
"""``openstack resq profile list|show|upload|delete|validate``.

Profiles live in resq-api; ``--profile-dir`` reads a local directory
instead (files are the import and export format), and ``validate`` checks
local files only.
"""

import os

from cliff import columns
from osc_lib.cli import format_columns
from osc_lib.command import command
from osc_lib import exceptions

from resq_common.clients import resq as resq_client
from resq_nova.osc import client
from resq_profiler import exception
from resq_profiler import store as store_mod

LIST_COLUMNS = ('ID', 'NF', 'Packet Bytes', 'Flows', 'Peak Mpps',
                'Min Ways', 'Driver')


def _store(app, parsed_args):
    """resq-api's profiles, or the local directory ``--profile-dir``."""
    if parsed_args.profile_dir:
        return store_mod.ProfileStore(parsed_args.profile_dir)
    return resq_client.ProfileSource(_service(app))


def _service(app):
    service = client.get_client(app).service
    if service is None:
        raise exceptions.CommandError(
            'this command needs resq-api and the client has none; give '
            '--profile-dir to read local files instead')
    return service


def load(app, parsed_args, ref):
    """Profile ``ref``: a local file, or an id in resq-api (or the dir)."""
    if os.path.sep in ref or ref.endswith('.json') or os.path.isfile(ref):
        return store_mod.load_file(ref)
    return _store(app, parsed_args).get(ref)


class CurveColumn(columns.FormattableColumn):
    """A curve's points in the order given (by ways, by load).

    osc_lib's ``ListColumn`` sorts its items as strings, which puts 10 ways
    before 2.
    """

    def human_readable(self):
        return ', '.join(str(v) for v in self._value or ())

    def machine_readable(self):
        return list(self._value or ())


def describe(prof):
    """A profile's fields as the CLI shows them, curves in order. Pure."""
    pieces, over = prof.concave_fit()
    return {
        'id': prof.profile_id,
        'nf': prof.name,
        'config_digest': prof.nf['config_digest'],
        'packet_bytes': prof.traffic['packet_bytes'],
        'flows': prof.traffic['flows'],
        'platform': format_columns.DictColumn(dict(prof.platform)),
        'driver': prof.measurement['driver'],
        'points': format_columns.DictColumn(
            dict(prof.measurement['points'])),
        'peak_mpps': round(prof.peak_mpps, 6),
        'min_ways': prof.min_ways,
        'throughput': CurveColumn(
            ['%d:%.4g' % (w, t) for w, t in sorted(prof.throughput)]),
        'latency_ways': prof.latency_ways,
        'latency': CurveColumn(
            ['%.0f%%:%.4g' % (x * 100, y) for x, y in sorted(prof.latency)]),
        'concave_fit': CurveColumn(
            ['ways %g-%g: %.4f*ways%+.4f Mpps' % (p.pivot, p.end, p.slope,
                                                  p.intercept)
             for p in sorted(pieces, key=lambda p: p.pivot)]),
        'fit_above_curve_pct': round(over, 4),
    }


def add_profile_dir(parser):
    parser.add_argument(
        '--profile-dir', metavar='<dir>',
        help='read profiles from this local directory instead of resq-api')


class ListProfile(client.AuthenticatedCommand, command.Lister):
    """List the NF profiles this project can use (public and its own)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        add_profile_dir(parser)
        return parser

    @client.translate_errors
    def take_action(self, parsed_args):
        rows = [(p.profile_id, p.name, p.traffic['packet_bytes'],
                 p.traffic['flows'], round(p.peak_mpps, 6), p.min_ways,
                 p.measurement['driver'])
                for p in _store(self.app, parsed_args).list()]
        return LIST_COLUMNS, rows


class ShowProfile(client.AuthenticatedCommand, command.ShowOne):
    """Show an NF profile: its curves and the fit the optimizer uses."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('profile', metavar='<profile>',
                            help='profile id in resq-api, or a local file')
        add_profile_dir(parser)
        return parser

    @client.translate_errors
    def take_action(self, parsed_args):
        data = describe(load(self.app, parsed_args, parsed_args.profile))
        names = sorted(data)
        return names, [data[n] for n in names]


class UploadProfile(client.AuthenticatedCommand, command.ShowOne):
    """Upload a profile document to resq-api (again: nothing changes)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('file', metavar='<file>',
                            help='profile document (JSON)')
        parser.add_argument('--public', action='store_true',
                            help='every project may use it (admin only)')
        parser.add_argument('--replace', action='store_true',
                            help='replace a stored profile of the same id '
                            'whose document differs')
        return parser

    @client.translate_errors
    def take_action(self, parsed_args):
        prof = store_mod.load_file(parsed_args.file)
        rec = upload(_service(self.app), prof.to_dict(),
                     'public' if parsed_args.public else 'private',
                     parsed_args.replace)
        rec = {k: v for k, v in rec.items() if k != 'profile'}
        names = sorted(rec)
        return names, [rec[n] for n in names]


def upload(service, document, visibility, replace=False):
    """Create the profile, or replace it at its current generation.

    :raises resq_common.clients.resq.Conflict: it exists with another
        document and ``replace`` is false.
    """
    try:
        return service.put_profile(document, visibility)
    except resq_client.Conflict:
        if not replace:
            raise
    current = service.get_profile_record(document['id'])
    return service.put_profile(document, visibility,
                               generation=current['generation'])


class DeleteProfile(client.AuthenticatedCommand, command.Command):
    """Delete a profile from resq-api (refused while a term uses it)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('profile', metavar='<profile>',
                            help='profile id')
        return parser

    @client.translate_errors
    def take_action(self, parsed_args):
        _service(self.app).delete_profile(parsed_args.profile)


class ValidateProfile(command.Lister):
    """Check profile documents; fails naming the first bad field."""

    auth_required = False

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('files', metavar='<file>', nargs='+',
                            help='profile document (JSON)')
        return parser

    @client.translate_errors
    def take_action(self, parsed_args):
        rows = []
        bad = []
        for path in parsed_args.files:
            try:
                prof = store_mod.load_file(path)
            except exception.InvalidProfile as exc:
                bad.append(str(exc))
                continue
            _, over = prof.concave_fit()
            note = ''
            if over > prof.measurement.get('tolerance_pct', 1.0):
                note = ('throughput is not concave; the fit lies up to '
                        '%.2f%% above it' % over)
            rows.append((path, prof.profile_id, 'valid', note))
        if bad:
            raise exceptions.CommandError(
                '%s (%d of %d files invalid)' % ('; '.join(bad), len(bad),
                                                 len(parsed_args.files)))
        return ('File', 'Profile', 'Result', 'Warning'), rows
