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
"""The ``[api]`` options of resq-api."""

from oslo_config import cfg

GROUP = 'api'

ALL_OPTS = [
    cfg.StrOpt('auth_strategy',
               default='keystone', choices=[
                   ('keystone', 'tokens checked by keystonemiddleware '
                                '([keystone_authtoken])'),
                   ('noauth2', 'no Keystone, for a single-node try-out and '
                               'tests: the token "admin" is an admin, '
                               '"<user>:<project>" a member of that '
                               'project')],
               help='How requests are authenticated. Never use noauth2 on '
                    'a network others can reach.'),
    cfg.IntOpt('max_request_body_size',
               default=1048576, min=1024,
               help='Largest request body accepted, in bytes; a bigger one '
                    'is answered 413. Profile documents and plans are the '
                    'largest bodies: raise it if a plan for a very large '
                    'cloud is refused.'),
    cfg.IntOpt('max_limit',
               default=1000, min=1,
               help='Most items one page of a list returns, whatever '
                    '"limit" the client asks for; the answer\'s "links" '
                    'point to the next page.'),
]


def register_opts(conf):
    conf.register_opts(ALL_OPTS, group=GROUP)


def list_opts():
    return [(GROUP, ALL_OPTS)]
