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
"""``openstack resq agent list`` and ``openstack resq agent show``.

The fleet as resq-api knows it: each host's last report (``GET /hosts``
at microversion 1.1). What a report keeps: the agent's version, the
microversion it needed (1.1 when it listed its servers, as every agent of
1.1 does; 1.0 otherwise: an older agent, or a resq-api that refused 1.1
when it was sent), when it was stored, its cache domains and servers.

``State`` is derived from the report's age: ``up`` when the agent
reported within ``--stale-after`` seconds (three of the agent's default
heartbeats, ``[resq_agent] host_report_interval = 60``), ``stale``
otherwise (the agent stopped, cannot reach resq-api, or sends changes
only: interval 0). The agents' own health (``resq-agent status``: libvirt,
Placement, resq-api, OVSDB) is not part of the report and is not shown.
"""

import datetime

from osc_lib.cli import format_columns
from osc_lib.command import command
from osc_lib import exceptions

from resq_common.clients import resq as resq_client
from resq_nova.osc import client

# Three of the agent's default heartbeats (host_report_interval).
STALE_AFTER_S = 180
UP = 'up'
STALE = 'stale'

LIST_COLUMNS = (
    ('Host', 'host'), ('Agent Version', 'agent_version'),
    ('Microversion', 'microversion'), ('Last Report', 'reported_at'),
    ('Age (s)', 'age_s'), ('State', 'state'), ('Domains', 'domains'),
    ('Servers', 'servers'))


def _parse_time(text):
    try:
        return datetime.datetime.strptime(
            text, '%Y-%m-%dT%H:%M:%SZ').replace(tzinfo=datetime.timezone.utc)
    except (TypeError, ValueError):
        return None


def view(report, now, stale_after=STALE_AFTER_S):
    """What the commands show of one host report (at 1.1). Pure.

    :param now: an aware UTC ``datetime``.
    """
    stored = _parse_time(report.get('updated_at'))
    age = None if stored is None else max(
        int((now - stored).total_seconds()), 0)
    instances = report.get('instances')
    return {
        'host': report['hostname'],
        'agent_version': report.get('agent_version'),
        'microversion': (resq_client.MV_HOST_INSTANCES
                         if instances is not None else resq_client.MV_BASE),
        'reported_at': report.get('updated_at'),
        'age_s': age,
        'state': UP if age is not None and age <= stale_after else STALE,
        'domains': len(report.get('domains') or ()),
        'servers': None if instances is None else len(instances),
        'domain_list': report.get('domains') or [],
    }


def _service(app):
    service = client.get_client(app).service
    if service is None:
        raise exceptions.CommandError(
            'this command reads the agents\' reports from resq-api; the '
            'client has none (the cloud\'s catalog has no "resq" service: '
            'set resq_endpoint_override in clouds.yaml)')
    return service


def _now():
    return datetime.datetime.now(datetime.timezone.utc)


def _add_stale_after(parser):
    parser.add_argument(
        '--stale-after', metavar='<seconds>', type=int,
        default=STALE_AFTER_S,
        help='a report older than this is "stale" (default %d: three '
             'of the agent\'s default heartbeats)' % STALE_AFTER_S)


class ListAgent(client.AuthenticatedCommand, command.Lister):
    """List the ResQ agents: each host's last report to resq-api."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        _add_stale_after(parser)
        return parser

    @client.translate_errors
    def take_action(self, parsed_args):
        reports = _service(self.app).list_hosts(
            microversion=resq_client.MV_HOST_INSTANCES)
        now = _now()
        rows = [view(r, now, parsed_args.stale_after) for r in reports]
        return ([title for title, _ in LIST_COLUMNS],
                [tuple(row[key] for _, key in LIST_COLUMNS)
                 for row in rows])


class ShowAgent(client.AuthenticatedCommand, command.ShowOne):
    """Show a host's ResQ agent as its last report to resq-api says."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('host', metavar='<host>',
                            help='compute host (hypervisor hostname)')
        _add_stale_after(parser)
        return parser

    @client.translate_errors
    def take_action(self, parsed_args):
        service = _service(self.app)
        try:
            report = service.get_host(
                parsed_args.host,
                microversion=resq_client.MV_HOST_INSTANCES)
        except resq_client.NotFound:
            raise exceptions.CommandError(
                'no agent has reported host %r to resq-api; "openstack '
                'resq agent list" lists those that have (is resq-agent '
                'running there, with [resq_api] set?)' % parsed_args.host)
        row = view(report, _now(), parsed_args.stale_after)
        data = {k: v for k, v in row.items()
                if k not in ('domains', 'domain_list')}
        data['domains'] = format_columns.ListDictColumn(row['domain_list'])
        names = sorted(data)
        return names, [data[n] for n in names]
