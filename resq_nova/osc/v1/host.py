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
"""``openstack resq host list`` and ``openstack resq host show``."""

from osc_lib.cli import format_columns
from osc_lib.command import command

from resq_nova.osc import client
from resq_nova.osc import cloud

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


class ShowHost(client.AuthenticatedCommand, command.ShowOne):
    """Show a ResQ host's cache domains and the servers holding ways."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('host', metavar='<host>',
                            help='compute host (hypervisor hostname)')
        return parser

    @client.translate_errors
    def take_action(self, parsed_args):
        view = cloud.host(client.get_client(self.app).placement,
                          parsed_args.host)
        doms = view['domains']
        data = {
            'host': view['host'],
            'provider': view['provider'],
            'ways_free': sum(d['ways_free'] for d in doms),
            'clos_free': sum(d['clos_free'] for d in doms),
            'domains': format_columns.ListDictColumn(
                [{k: v for k, v in d.items() if k != 'instances'}
                 for d in doms]),
            'instances': format_columns.ListDictColumn(
                [dict(i, domain=d['domain'])
                 for d in doms for i in d['instances']]),
        }
        names = sorted(data)
        return names, [data[n] for n in names]
