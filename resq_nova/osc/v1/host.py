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
"""``openstack resq host list`` and ``openstack resq host show``.

``host show`` adds to each server holding ways what the host's agent last
reported to resq-api (microversion 1.1): its LLC occupancy and memory
bandwidth (CMT/MBM), and ``reported_at``, when that report was stored.
Without resq-api, a report, or a resq-api that old, it shows Placement's
view alone.
"""

import logging

from osc_lib.cli import format_columns
from osc_lib.command import command

from resq_common.clients import resq as resq_client
from resq_nova.osc import client
from resq_nova.osc import cloud

LOG = logging.getLogger(__name__)
# What the agent measures of a server, as its report names it.
MEASURED = ('llc_occupancy_bytes', 'mbm_total_bytes_per_s')

LIST_COLUMNS = (
    ('Host', 'host'), ('Domain', 'domain'), ('Ways Total', 'ways_total'),
    ('Ways Reserved', 'ways_reserved'), ('Ways Used', 'ways_used'),
    ('Ways Free', 'ways_free'), ('CLOS Total', 'clos_total'),
    ('CLOS Used', 'clos_used'), ('CLOS Free', 'clos_free'),
    ('Cores', 'cores'), ('Reserved Cores', 'resq_cores'),
    ('Lease Cores', 'lease_cores'), ('Traits', 'traits'))


class ListHost(client.AuthenticatedCommand, command.Lister):
    """List ResQ compute hosts: one row per L3 cache domain."""

    @client.translate_errors
    def take_action(self, parsed_args):
        rows = []
        for view in cloud.hosts(client.get_client(self.app).placement):
            for dom in view['domains']:
                row = dict(dom, host=view['host'],
                           traits=format_columns.ListColumn(dom['traits']))
                rows.append(tuple(row[key] for _, key in LIST_COLUMNS))
        return [title for title, _ in LIST_COLUMNS], rows


def host_report(service, host):
    """The agent's last report of ``host`` with its servers, or None.

    None without resq-api, without a report of ``host``, or from a
    resq-api older than microversion 1.1; any other failure is logged.
    """
    if service is None:
        return None
    try:
        return service.get_host(
            host, microversion=resq_client.MV_HOST_INSTANCES)
    except resq_client.NotFound:
        return None
    except resq_client.ResQAPIError as exc:
        if exc.status not in resq_client.VERSION_REFUSED:
            LOG.warning('Cannot read the report of %s from resq-api: %s; '
                        'showing Placement\'s view alone', host, exc)
        return None


def with_measurements(instances, report):
    """Placement's servers, each with what the report measured. Pure.

    A server the report does not list, or lists without a reading, gets
    None for each measurement.

    :param instances: dicts with the server's uuid under ``server``.
    :param report: a host report at microversion 1.1.
    """
    listed = {i['server_uuid'].lower(): i for i in (report or {}).get(
        'instances') or ()}
    return [dict(inst, **{key: listed.get(str(inst['server']).lower(),
                                          {}).get(key)
                          for key in MEASURED})
            for inst in instances]


class ShowHost(client.AuthenticatedCommand, command.ShowOne):
    """Show a ResQ host's cache domains and the servers holding ways."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('host', metavar='<host>',
                            help='compute host (hypervisor hostname)')
        return parser

    @client.translate_errors
    def take_action(self, parsed_args):
        resq = client.get_client(self.app)
        view = cloud.host(resq.placement, parsed_args.host)
        report = host_report(resq.service, parsed_args.host)
        doms = view['domains']
        instances = [dict(i, domain=d['domain'])
                     for d in doms for i in d['instances']]
        if report is not None and report.get('instances') is not None:
            instances = with_measurements(instances, report)
        data = {
            'host': view['host'],
            'provider': view['provider'],
            'ways_free': sum(d['ways_free'] for d in doms),
            'clos_free': sum(d['clos_free'] for d in doms),
            'domains': format_columns.ListDictColumn(
                [{k: v for k, v in d.items() if k != 'instances'}
                 for d in doms]),
            'instances': format_columns.ListDictColumn(instances),
        }
        if report is not None:
            data['reported_at'] = report.get('updated_at')
        names = sorted(data)
        return names, [data[n] for n in names]
