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
"""``openstack resq profile list|show|validate``: the NF profile store."""

import os

from osc_lib.cli import format_columns
from osc_lib.command import command
from osc_lib import exceptions

from resq_nova.osc import client
from resq_nova.osc import config
from resq_profiler import exception
from resq_profiler import store as store_mod

LIST_COLUMNS = ('ID', 'NF', 'Packet Bytes', 'Flows', 'Peak Mpps',
                'Min Ways', 'Driver')


def _store(parsed_args):
    return store_mod.ProfileStore(config.profile_dir(parsed_args))


def load(parsed_args, ref):
    """Profile ``ref``: an id in the store, or a file."""
    if os.path.sep in ref or ref.endswith('.json') or os.path.isfile(ref):
        return store_mod.load_file(ref)
    return _store(parsed_args).get(ref)


def describe(prof):
    """A profile's fields as the CLI shows them. Pure."""
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
        'throughput': format_columns.ListColumn(
            ['%d:%.4g' % (w, t) for w, t in prof.throughput]),
        'latency_ways': prof.latency_ways,
        'latency': format_columns.ListColumn(
            ['%.0f%%:%.4g' % (x * 100, y) for x, y in prof.latency]),
        'concave_fit': format_columns.ListColumn(
            ['ways %g-%g: %.4f*ways%+.4f Mpps' % (p.pivot, p.end, p.slope,
                                                  p.intercept)
             for p in pieces]),
        'fit_above_curve_pct': round(over, 4),
    }


class ListProfile(command.Lister):
    """List the NF profiles in the profile store."""

    auth_required = False

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        config.add_profile_dir(parser)
        return parser

    @client.translate_errors
    def take_action(self, parsed_args):
        rows = [(p.profile_id, p.name, p.traffic['packet_bytes'],
                 p.traffic['flows'], round(p.peak_mpps, 6), p.min_ways,
                 p.measurement['driver'])
                for p in _store(parsed_args).list()]
        return LIST_COLUMNS, rows


class ShowProfile(command.ShowOne):
    """Show an NF profile: its curves and the fit the optimizer uses."""

    auth_required = False

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('profile', metavar='<profile>',
                            help='profile id in the store, or a file')
        config.add_profile_dir(parser)
        return parser

    @client.translate_errors
    def take_action(self, parsed_args):
        data = describe(load(parsed_args, parsed_args.profile))
        names = sorted(data)
        return names, [data[n] for n in names]


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
