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
"""Watcher in the all-in-one cloud (:mod:`tests.cloud.aio`), when installed.

python-watcher (cloud-requirements.txt) brings watcher-api, run under
uwsgi on port 9322 plus the cloud's offset (catalog type ``infra-optim``),
watcher-decision-engine and watcher-applier, on the cloud's MariaDB
(database ``<name>_watcher``) and RabbitMQ vhost. resq-nova is installed in the
same environment, so its goal, strategy and planner entry points are
Watcher's; ``watcher-sync`` registers them. The compute model is Watcher's
Nova API collector, rebuilt every :data:`MODEL_PERIOD` seconds (the cloud's
Nova sends no notifications). ``aio down`` stops the services with the
others (their pid files).
"""

import os
import time

from tests.cloud import aio


def url():
    """watcher-api's URL: port 9322 plus the cloud's port offset."""
    return 'http://127.0.0.1:%d' % aio.WATCHER_PORT


# Seconds between two rebuilds of Watcher's compute model: a server booted
# just before an audit is in the model at most this long after.
MODEL_PERIOD = 10


def available():
    """Whether python-watcher is installed beside the cloud's services."""
    return all(os.access(os.path.join(aio.BIN, cmd), os.X_OK)
               for cmd in ('watcher-api', 'watcher-decision-engine',
                           'watcher-applier', 'watcher-db-manage',
                           'watcher-sync'))


def conf(state):
    """watcher.conf: database, bus, Keystone, Nova's and Placement's."""
    interface = {'region_name': 'RegionOne', 'valid_interfaces': 'public'}
    clients_auth = aio.keystoneauth('watcher')
    del clients_auth['region_name']
    aio.write_conf(state.etc('watcher'), {
        'DEFAULT': {'transport_url': aio.TRANSPORT_URL},
        'database': {'connection': aio.db_url('watcher')},
        'keystone_authtoken': aio.authtoken('watcher'),
        'watcher_clients_auth': clients_auth,
        # Watcher's own clients (compute model, applier's migrations).
        # 2.96: servers with their pinned availability zone.
        'nova': dict(interface, api_version='2.96',
                     migration_max_retries=120, migration_interval=2),
        'placement': dict(interface),
        # What resq-nova's strategy reads for its Nova and Placement.
        'nova_client': {'endpoint_type': 'publicURL',
                        'region_name': 'RegionOne'},
        'placement_client': {'interface': 'public',
                             'region_name': 'RegionOne'},
        # No Cinder here: the compute model only.
        'collector': {'collector_plugins': 'compute'},
        'watcher_cluster_data_model_collectors.compute': {
            'period': MODEL_PERIOD},
        # Instances with their flavor's extra specs: resq-nova's strategy
        # tells ResQ instances (resq:slo) by them.
        'compute_model': {'enable_extended_attributes': 'True'},
        'oslo_concurrency': {'lock_path': state.path('watcher', 'lock')},
        'oslo_messaging_notifications': {'driver': 'noop'},
    })
    os.makedirs(state.path('watcher', 'lock'), exist_ok=True)
    return state.etc('watcher')


def keystone(conn):
    """The ``watcher`` service user and the ``infra-optim`` entry."""
    ident = conn.identity
    default = ident.find_domain('Default')
    service = ident.find_project('service', domain_id=default.id)
    user = ident.find_user('watcher', domain_id=default.id) or \
        ident.create_user(name='watcher', domain_id=default.id,
                          password=aio.SERVICE_PASSWORD)
    for role in ('admin', 'service'):
        ident.assign_project_role_to_user(service, user,
                                          ident.find_role(role))
    svc = ident.find_service('watcher') or ident.create_service(
        name='watcher', type='infra-optim')
    for iface in ('public', 'internal'):
        if not list(ident.endpoints(service_id=svc.id, interface=iface)):
            ident.create_endpoint(service_id=svc.id, interface=iface,
                                  url=url(), region_id='RegionOne')


def up(state, conn):
    """Watcher's services, its goals and strategies (resq-nova's too)."""
    started = time.monotonic()
    path = conf(state)
    run_with_conf = [os.path.join(aio.BIN, 'watcher-db-manage'),
                     '--config-file', path, 'upgrade']
    aio.run(run_with_conf, 'watcher-db-manage upgrade')
    keystone(conn)
    aio.run([os.path.join(aio.BIN, 'watcher-sync'), '--config-file', path],
            'watcher-sync')
    ini = state.path('etc', 'watcher', 'watcher-api-uwsgi.ini')
    with open(ini, 'w') as f:
        f.write('\n'.join([
            '[uwsgi]', 'http-socket = 127.0.0.1:%d' % aio.WATCHER_PORT,
            'module = watcher.wsgi.api:application',
            'pyargv = --config-file %s' % path, 'master = true',
            'processes = 1', 'threads = 2', 'enable-threads = true',
            'lazy-apps = true', 'die-on-term = true',
            'exit-on-reload = false', 'buffer-size = 65535',
            'add-header = Connection: close',
            'procname-prefix = watcher-api-']) + '\n')
    aio.spawn(state, 'watcher-api', [os.path.join(aio.BIN, 'uwsgi'),
                                     '--ini', ini])
    for name in ('watcher-decision-engine', 'watcher-applier'):
        aio.spawn(state, name, [os.path.join(aio.BIN, name),
                                '--config-file', path])
    aio.wait_http(url() + '/', 'watcher-api', state, 'watcher-api')
    aio.say('Watcher: api on port %d, decision engine, applier (%.0f s)'
            % (aio.WATCHER_PORT, time.monotonic() - started))
