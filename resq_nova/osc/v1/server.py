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
"""``openstack resq server show``."""

from osc_lib.command import command

from resq_nova.osc import client
from resq_nova.osc import cloud


class ShowServer(client.AuthenticatedCommand, command.ShowOne):
    """Show a server's SLO, profile, cache domain, ways and CLOS."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('server', metavar='<server>',
                            help='server (name or ID)')
        return parser

    @client.translate_errors
    def take_action(self, parsed_args):
        resq = client.get_client(self.app)
        view = cloud.server(resq.placement, resq.compute, parsed_args.server)
        names = sorted(view)
        return names, [view[n] for n in names]
