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
"""The ``[api]`` options of resq-api, and the files it reads them from."""

import os

from oslo_config import cfg

GROUP = 'api'
# oslo.config's program name of resq-api: its own file is resq-api.conf.
PROG = 'resq-api'
# Comma-separated configuration files, instead of the search.
CONFIG_ENV = 'RESQ_API_CONFIG'
# config_files() in words.
SEARCHED = ('$%s, else resq.conf and %s.conf in ~/.resq/, ~/, '
            '/etc/resq/, /etc/' % (CONFIG_ENV, PROG))

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


def config_files():
    """The configuration files resq-api reads without ``--config-file``.

    ``$RESQ_API_CONFIG``'s files (comma-separated), else those oslo.config's
    default search finds for project ``resq`` and program ``resq-api``:
    ``resq.conf`` then ``resq-api.conf``, each from the first of
    ``~/.resq/``, ``~/``, ``/etc/resq/`` and ``/etc/`` that has it.
    ``resq-manage`` reads the same files: it works on resq-api's database.
    """
    env = os.environ.get(CONFIG_ENV)
    if env:
        return env.split(',')
    return cfg.find_config_files(project='resq', prog=PROG)


def register_opts(conf):
    conf.register_opts(ALL_OPTS, group=GROUP)


def list_opts():
    return [(GROUP, ALL_OPTS)]
