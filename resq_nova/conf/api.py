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
# oslo.config's default search (find_config_files), in its order.
SEARCH_DIRS = ('~/.resq', '~', '/etc/resq', '/etc')
NAMES = ('resq.conf', PROG + '.conf')

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
    cfg.IntOpt('max_page_bytes',
               default=8388608, min=65536,
               help='Largest page of a list, in bytes of JSON: a page ends '
                    'before the item that would take it past this size '
                    '(it always holds one item), and its "next" link '
                    'continues from there. Bounds the memory a list of '
                    'large documents (terms listing thousands of servers, '
                    'detailed profiles) takes to answer.'),
    cfg.IntOpt('max_terms_per_project',
               default=1000, min=-1,
               help='How many SLO terms one project may hold (every '
                    'status); one more is refused with 403 '
                    '(resq.over_limit) naming the project and this option. '
                    '-1: no limit. Terms an admin records for a project '
                    'count against it too. A term is a row of resq-api\'s '
                    'database: the limit bounds what one tenant can make '
                    'it store.'),
    cfg.IntOpt('max_profiles_per_project',
               default=1000, min=-1,
               help='How many private profiles one project may hold; one '
                    'more is refused with 403 (resq.over_limit). Public '
                    'profiles (an admin\'s) count against no project. '
                    '-1: no limit.'),
    cfg.IntOpt('database_connect_timeout',
               default=5, min=1, max=300,
               help='Seconds resq-api waits to connect to its database '
                    '(MySQL and PostgreSQL connect_timeout) before it '
                    'answers 503 with Retry-After. A parameter of the same '
                    'name in [database] connection wins.'),
    cfg.IntOpt('database_read_timeout',
               default=10, min=1, max=3600,
               help='Seconds a request to resq-api may wait for its '
                    'database, all its waits together, before it answers '
                    '503 with Retry-After: connecting, the handshake, each '
                    'statement, and a reconnection in the same request '
                    'share them (a server that accepts connections but '
                    'answers nothing is answered 503 after about this '
                    'long, not twice it). resq-api bounds each wait on '
                    'the client: on MySQL (PyMySQL) the socket timeouts '
                    '(read_timeout and write_timeout, lowered to what the '
                    'request has left), on PostgreSQL (psycopg2) a wait '
                    'callback of its own, as libpq has no read timeout; '
                    'PostgreSQL also ends a statement that runs longer on '
                    'the server (statement_timeout, lock waits included). '
                    'The wait for a pooled connection is [database] '
                    'pool_timeout\'s, not this. Raise it if requests that '
                    'wait for busy rows answer 503. A read_timeout '
                    '(MySQL) or statement_timeout (PostgreSQL options) of '
                    '[database] connection wins. resq-manage does not use '
                    'it.'),
]


def config_files():
    """The configuration files resq-api reads without ``--config-file``.

    ``$RESQ_API_CONFIG``'s files (comma-separated), else those oslo.config's
    default search finds for project ``resq`` and program ``resq-api``:
    ``resq.conf`` then ``resq-api.conf``, each from the first of
    ``~/.resq/``, ``~/``, ``/etc/resq/`` and ``/etc/`` that has it, as
    every OpenStack service and every resq command searches: a user's file
    is read *instead of* /etc/resq's (:func:`shadowed`).
    ``resq-manage`` reads the same files: it works on resq-api's database.
    """
    env = os.environ.get(CONFIG_ENV)
    if env:
        return env.split(',')
    return cfg.find_config_files(project='resq', prog=PROG)


def shadowed(read):
    """The files of the default search that ``read`` hides.

    oslo.config reads the first file of each name it finds, so a try-out's
    ``~/.resq/resq-api.conf`` hides ``/etc/resq/resq-api.conf`` entirely.
    resq-api warns of each such file when it starts.

    :param read: the files read.
    :returns: ``(read file, hidden file)`` pairs: a file of the same name
        in a directory :data:`SEARCH_DIRS` lists after the read one's;
        none with ``$RESQ_API_CONFIG``, which replaces the search.
    """
    if os.environ.get(CONFIG_ENV):
        return []
    dirs = [os.path.abspath(os.path.expanduser(d)) for d in SEARCH_DIRS]
    pairs = []
    for path in read:
        path = os.path.abspath(path)
        here = os.path.dirname(path)
        if os.path.basename(path) not in NAMES or here not in dirs:
            continue
        for later in dirs[dirs.index(here) + 1:]:
            other = os.path.join(later, os.path.basename(path))
            if os.path.exists(other):
                pairs.append((path, other))
    return pairs


def register_opts(conf):
    conf.register_opts(ALL_OPTS, group=GROUP)


def list_opts():
    return [(GROUP, ALL_OPTS)]
