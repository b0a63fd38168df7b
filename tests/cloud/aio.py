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
"""An all-in-one OpenStack cloud with resq-nova, from released packages.

``python -m tests.cloud.aio up --state DIR`` brings it up on this machine
(as root), ``down --state DIR`` stops it (``--purge``: also its databases
and state); both are idempotent and print progress. ``tox -e cloud`` runs
both around the tempest plugin.

* Keystone, Glance, Placement, nova-api, neutron-server and heat-api run
  under uwsgi, each on its own port of 127.0.0.1; nova-conductor,
  nova-scheduler (ResQ's filter and weigher on) and heat-engine as
  processes; all on the MariaDB and RabbitMQ that run here.
* Compute hosts ``aio-1``, ``aio-2``, ... (three unless
  ``RESQ_CLOUD_HOSTS`` says otherwise) are fake CAT hosts
  (:mod:`resq_fake.host`): each a libvirtd with real KVM (or QEMU)
  guests in private mount and UTS namespaces, where /sys/fs/resctrl is the
  project's fake kernel through FUSE. nova-compute (libvirt driver) and
  resq-agent of a host run in its namespaces. The first two keep CPU 0
  for unpinned guests and dedicate the others; the rest dedicate every
  CPU, so that one cache domain holds two pinned ResQ guests.
* resq-nova is configured and started by the devstack plugin's own
  functions (devstack/), on devstack's functions acting for real
  (tests/cloud/devstack.sh): resq-api under uwsgi behind Apache and
  keystonemiddleware, resq-agent as the unprivileged ``stack`` user with
  the plugin's privileged daemons (resq-privsep-daemon, started as root,
  one per context), resq-optimizer.
* Watcher's api, decision engine and applier, where python-watcher is
  installed (:mod:`tests.cloud.watcher`).

It writes ``DIR/cloud.json`` (endpoints, credentials, hosts) and a tempest
workspace ``DIR/tempest`` configured for the cloud and the resq-nova
tempest plugin.
"""

import argparse
import configparser
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

from resq_fake import host as fake_host
from tests.cloud import sharedfs
from tests.cloud import watcher

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
VENV = sys.prefix
#: The compute hosts (:func:`use_hosts` sets them, and everything below
#: that depends on the cloud's name and port offset).
HOSTS = ('aio-1', 'aio-2', 'aio-3')
DEFAULT_HOSTS = 3
MAX_HOSTS = 8
#: Hosts with a shared CPU for unpinned guests; the rest are all pinned.
MIXED_HOSTS = 2
#: Hosts whose fake kernel has memory bandwidth allocation (the software
#: controller, mba_MBps), with the bandwidth their agent offers Placement
#: (MiB/s per cache domain) and the default group's part of it.
MBA_HOSTS = ('aio-2',)
MBA_MIBPS = 20000
MBA_DEFAULT_GROUP_MIBPS = 2000
#: The cloud's name: its databases' prefix and RabbitMQ vhost.
NAME = 'aio'
DEFAULT_NAME = 'aio'
#: Added to every port the cloud listens on, so that it runs beside
#: services (or another cloud) on the standard ports.
PORT_OFFSET = 20000
DEFAULT_PORT_OFFSET = 20000
#: Whether the plugin's files are in /etc and /run (clouds made before
#: the cloud kept them in its state directory), not in the state directory.
MACHINE_PATHS = False
ADMIN_PASSWORD = 'secret-admin'
SERVICE_PASSWORD = 'secret-service'
STACK_USER = 'stack'
# Written by up when missing (devstack's rule), removed by down --purge.
STACK_SUDOERS = '/etc/sudoers.d/50_stack_sh'
STANDARD_PORTS = {'keystone': 5000, 'glance': 9292, 'placement': 8778,
                  'nova-api': 8774, 'neutron': 9696, 'heat-api': 8004}
# resq-api is behind Apache, as devstack's write_uwsgi_config puts it.
STANDARD_APACHE_PORT = 80
STANDARD_WATCHER_PORT = 9322
STANDARD_AGENT_METRICS_PORT = 9477
RABBIT = 'rabbit://guest:guest@127.0.0.1:5672/'


def _layout(name, offset, hosts, machine_paths=False):
    """Set the module's names, ports and URLs for one cloud."""
    global NAME, PORT_OFFSET, HOSTS, MACHINE_PATHS, DB_PREFIX, VHOST
    global TRANSPORT_URL, PORTS, APACHE_PORT, WATCHER_PORT, KEYSTONE
    global AGENT_METRICS_PORTS
    NAME, PORT_OFFSET, HOSTS = name, offset, tuple(hosts)
    MACHINE_PATHS = machine_paths
    DB_PREFIX = name + '_'
    # The cloud's own vhost: its services' queues and exchanges (nova's
    # compute.aio-1, ...) apart from another cloud's of the same names.
    VHOST = '/' if machine_paths else name
    TRANSPORT_URL = RABBIT + ('' if VHOST == '/' else VHOST)
    PORTS = {k: v + offset for k, v in STANDARD_PORTS.items()}
    APACHE_PORT = STANDARD_APACHE_PORT + offset
    WATCHER_PORT = STANDARD_WATCHER_PORT + offset
    KEYSTONE = 'http://127.0.0.1:%d/v3' % PORTS['keystone']
    AGENT_METRICS_PORTS = {h: STANDARD_AGENT_METRICS_PORT + offset + i
                           for i, h in enumerate(HOSTS)}


_layout(DEFAULT_NAME, DEFAULT_PORT_OFFSET,
        ['%s-%d' % (DEFAULT_NAME, i + 1) for i in range(DEFAULT_HOSTS)])
DATABASES = ('keystone', 'glance', 'placement', 'nova_api', 'nova',
             'nova_cell0', 'neutron', 'heat', 'watcher')
WSGI = {
    'keystone': ('keystone.wsgi.api:application',
                 'OS_KEYSTONE_CONFIG_DIR', 'keystone'),
    'glance': ('glance.wsgi.api:application', 'OS_GLANCE_CONFIG_DIR',
               'glance'),
    'placement': ('placement.wsgi.api:application',
                  'OS_PLACEMENT_CONFIG_DIR', 'placement'),
    'nova-api': ('nova.wsgi.osapi_compute:application', 'OS_NOVA_CONFIG_DIR',
                 'nova'),
    'neutron': ('neutron.wsgi.api:application', 'OS_NEUTRON_CONFIG_DIR',
                'neutron'),
    'heat-api': ('heat.wsgi.api:application', None, 'heat'),
}
_T0 = time.monotonic()


class CloudError(Exception):
    """The cloud cannot come up; the message says what and where to look."""


def _env_int(name, default, low, high, what):
    raw = os.environ.get(name, str(default))
    try:
        value = int(raw)
    except ValueError:
        value = None
    if value is None or not low <= value <= high:
        raise CloudError('%s=%s: give %s, a whole number from %d to %d'
                         % (name, raw, what, low, high))
    return value


def use_hosts(state):
    """Set the cloud's name, port offset and hosts for ``state``.

    A cloud made before keeps what it was made with (``DIR/layout.json``,
    written by ``up``); a new one takes ``RESQ_CLOUD_NAME`` (default
    :func:`default_name`), ``RESQ_CLOUD_PORT_OFFSET`` (default
    :func:`free_offset`) and ``RESQ_CLOUD_HOSTS`` (default 3).

    :returns: the host names.
    """
    recorded = state.path('layout.json')
    legacy = state.path('hosts.list')
    if os.path.exists(recorded):
        with open(recorded) as f:
            doc = json.load(f)
        _layout(doc['name'], doc['port_offset'], doc['hosts'])
    elif os.path.exists(legacy):
        # Made before the layout was recorded: standard ports, /etc paths.
        with open(legacy) as f:
            _layout('aio', 0, f.read().split(), machine_paths=True)
    else:
        name = os.environ.get('RESQ_CLOUD_NAME') or default_name(state)
        if not re.fullmatch('[a-z][a-z0-9]{0,11}', name):
            raise CloudError('RESQ_CLOUD_NAME=%s: give 1 to 12 lower-case '
                             'letters and digits, starting with a letter '
                             '(it names databases and a RabbitMQ vhost)'
                             % name)
        count = _env_int('RESQ_CLOUD_HOSTS', DEFAULT_HOSTS, MIXED_HOSTS,
                         MAX_HOSTS, 'the number of compute hosts')
        if os.environ.get('RESQ_CLOUD_PORT_OFFSET'):
            offset = _env_int('RESQ_CLOUD_PORT_OFFSET', 0, 0, MAX_OFFSET,
                              'the number added to every port')
        else:
            offset = free_offset(count)
        _layout(name, offset, ['aio-%d' % (i + 1) for i in range(count)])
    return HOSTS


MAX_OFFSET = 23000


def default_name(state):
    """``aio`` and four hex digits of the state directory's path.

    Two clouds in two directories never share databases or a vhost, and
    the databases of a cloud whose directory is gone are found again by
    the next cloud in that directory (which drops them).
    """
    digest = hashlib.sha1(state.root.encode()).hexdigest()
    return 'aio' + digest[:4]


def _port_free(port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(('127.0.0.1', port))
        except OSError:
            return False
    return True


def free_offset(hosts):
    """The first offset (20000, 21000, ...) whose ports are all free."""
    for offset in range(DEFAULT_PORT_OFFSET, MAX_OFFSET + 1, 1000):
        ports = [p + offset for p in STANDARD_PORTS.values()] + [
            STANDARD_APACHE_PORT + offset, STANDARD_WATCHER_PORT + offset,
            8000 + offset] + [STANDARD_AGENT_METRICS_PORT + offset + i
                              for i in range(hosts)]
        if all(_port_free(p) for p in ports):
            return offset
    raise CloudError('no port offset from %d to %d has all the cloud\'s '
                     'ports free on 127.0.0.1; set RESQ_CLOUD_PORT_OFFSET'
                     % (DEFAULT_PORT_OFFSET, MAX_OFFSET))


def record_hosts(state):
    """``DIR/layout.json``: what ``down`` and later runs act on."""
    os.makedirs(state.root, exist_ok=True)
    tmp = state.path('layout.json.tmp')
    with open(tmp, 'w') as f:
        json.dump({'name': NAME, 'port_offset': PORT_OFFSET,
                   'hosts': list(HOSTS)}, f, indent=2)
    os.replace(tmp, state.path('layout.json'))


def node_paths(state, node):
    """Where the plugin keeps ``node``'s files.

    Its configuration, root's file and sockets of its privileged daemons,
    and the sudoers file the plugin removes (earlier releases wrote one).
    """
    if MACHINE_PATHS:
        return {'conf': '/etc/resq' if node == HOSTS[0]
                else '/etc/resq-%s' % node,
                'sudoers': '/etc/sudoers.d/resq-nova-%s' % node,
                'privsep_conf': '/etc/resq-privsep-%s/resq-agent-privsep.conf'
                % node,
                'privsep_run': '/run/resq-privsep-%s' % node}
    return {'conf': state.path('etc', 'resq-%s' % node),
            'sudoers': state.path('etc', 'sudoers-resq-nova-%s' % node),
            'privsep_conf': state.path('privsep', node,
                                       'resq-agent-privsep.conf'),
            'privsep_run': state.path('run', 'privsep-%s' % node)}


def all_pinned(node):
    """Whether ``node`` dedicates every CPU (no unpinned guests there)."""
    return HOSTS.index(node) >= MIXED_HOSTS


def say(msg):
    print('[aio +%4.0fs] %s' % (time.monotonic() - _T0, msg), flush=True)


class State:
    """Where the cloud keeps what it owns."""

    def __init__(self, root):
        self.root = os.path.abspath(root)

    def path(self, *parts):
        return os.path.join(self.root, *parts)

    def etc(self, service, name=None):
        return self.path('etc', service, name or service + '.conf')

    def host(self, name):
        return fake_host.Paths(self.path('hosts', name))

    def pid(self, name):
        return self.path('run', name + '.pid')

    def log(self, name):
        return self.path('logs', name + '.log')


def run(argv, what=None, env=None, check=True, **kw):
    """Run ``argv``; a failure is a :class:`CloudError` with its output."""
    proc = subprocess.run(argv, capture_output=True, text=True,
                          env=env, **kw)
    if check and proc.returncode:
        raise CloudError('%s failed (exit %d): %s\n%s' % (
            what or ' '.join(argv), proc.returncode, proc.stdout[-2000:],
            proc.stderr[-4000:]))
    return proc


def mysql(sql):
    run(['mysql', '-uroot', '-h127.0.0.1', '-e', sql], 'mysql: ' + sql)


def db_url(name):
    return 'mysql+pymysql://root@127.0.0.1/%s%s?charset=utf8' % (
        DB_PREFIX, name)


def write_conf(path, sections):
    """An ini file from ``{section: {option: value}}`` (atomic)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    cp = configparser.RawConfigParser()
    cp.optionxform = str
    for section, options in sections.items():
        if section != 'DEFAULT':
            cp.add_section(section)
        for key, value in options.items():
            cp.set(section, key, str(value))
    tmp = path + '.tmp'
    with open(tmp, 'w') as f:
        cp.write(f)
    os.replace(tmp, path)


def authtoken(user):
    return {'www_authenticate_uri': KEYSTONE, 'auth_url': KEYSTONE,
            'auth_type': 'password', 'username': user,
            'password': SERVICE_PASSWORD, 'user_domain_name': 'Default',
            'project_name': 'service', 'project_domain_name': 'Default',
            'service_token_roles_required': 'True'}


def keystoneauth(user='nova'):
    auth = authtoken(user)
    del auth['www_authenticate_uri'], auth['service_token_roles_required']
    auth['region_name'] = 'RegionOne'
    return auth


def spawn(state, name, argv, env=None):
    """Start a service unless it runs; its output goes to its log."""
    if fake_host.alive(state.pid(name)):
        return
    os.makedirs(state.path('run'), exist_ok=True)
    os.makedirs(state.path('logs'), exist_ok=True)
    full_env = dict(os.environ, **(env or {}))
    with open(state.log(name), 'a') as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=log,
                                stdin=subprocess.DEVNULL, env=full_env,
                                start_new_session=True)
    with open(state.pid(name), 'w') as f:
        f.write('%d\n' % proc.pid)
    say('started %s (pid %d)' % (name, proc.pid))


def wait_http(url, what, state, name, seconds=120, ok=(200, 300, 401)):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5) as resp:
                if resp.status in ok or resp.status < 400:
                    return
        except urllib.error.HTTPError as exc:
            if exc.code in ok:
                return
        except OSError:
            pass
        if name and not fake_host.alive(state.pid(name)):
            raise CloudError('%s exited; see %s' % (what, state.log(name)))
        time.sleep(0.5)
    raise CloudError('%s did not answer at %s in %d s; see %s' % (
        what, url, seconds, state.log(name) if name else 'its log'))


def uwsgi(state, name, extra=()):
    """A service under uwsgi on its port of 127.0.0.1."""
    module, env_var, conf_dir = WSGI[name]
    ini = state.path('etc', conf_dir, name + '-uwsgi.ini')
    lines = ['[uwsgi]', 'http-socket = 127.0.0.1:%d' % PORTS[name],
             'module = %s' % module, 'master = true', 'processes = 1',
             'threads = 2', 'enable-threads = true', 'lazy-apps = true',
             'die-on-term = true', 'exit-on-reload = false',
             'buffer-size = 65535', 'add-header = Connection: close',
             'procname-prefix = %s-' % name]
    if env_var:
        lines.append('env = %s=%s' % (env_var, state.path('etc', conf_dir)))
    lines.extend(extra)
    os.makedirs(os.path.dirname(ini), exist_ok=True)
    with open(ini, 'w') as f:
        f.write('\n'.join(lines) + '\n')
    spawn(state, name, [os.path.join(BIN, 'uwsgi'), '--ini', ini])


def preflight():
    """What this machine must have, as one error naming what is missing."""
    if os.geteuid() != 0:
        raise CloudError('run as root: the compute hosts mount file systems '
                         'in namespaces of their own')
    missing = [p for p in (os.path.join(BIN, 'uwsgi'),
                           os.path.join(BIN, 'nova-compute'),
                           '/usr/sbin/apache2', '/usr/bin/sudo',
                           '/usr/bin/mysql')
               if not os.access(p, os.X_OK)]
    if missing:
        raise CloudError('missing: %s (tox -e cloud installs the Python '
                         'side, tools/bootstrap.sh the Debian packages of '
                         'bindep.txt\'s "cloud" profile)' % ', '.join(missing))
    accel = fake_host.preflight()
    if accel != 'kvm':
        say('WARNING: /dev/kvm does not open: guests run on QEMU (TCG), '
            'slower, and libvirt refuses cachetune on them')
    if run(['mysql', '-uroot', '-h127.0.0.1', '-e', 'SELECT 1'],
           check=False).returncode:
        raise CloudError('MariaDB does not answer on 127.0.0.1:3306 as root '
                         '(start it: start-stop-daemon --start --oknodo '
                         '--background --exec /usr/sbin/mariadbd)')
    return accel


def stack_user(state):
    """devstack's STACK_USER: it runs the plugin and resq-nova's services.

    As devstack sets it up: passwordless sudo. Where the interpreter or
    this checkout lies under a directory only root may enter
    (``/root/.pyenv``), others may pass through it (not list or read it).
    """
    if run(['getent', 'passwd', STACK_USER], check=False).returncode:
        run(['useradd', '--create-home', '--shell', '/bin/bash',
             STACK_USER], 'useradd ' + STACK_USER)
        say('created user %s' % STACK_USER)
    if not os.path.exists(STACK_SUDOERS):
        with open(STACK_SUDOERS + '.tmp', 'w') as f:
            f.write('%s ALL=(root) NOPASSWD:ALL\n' % STACK_USER)
        os.chmod(STACK_SUDOERS + '.tmp', 0o440)
        os.replace(STACK_SUDOERS + '.tmp', STACK_SUDOERS)
        # down --purge removes it only when this cloud wrote it.
        with open(state.path('stack-sudoers-written'), 'w') as f:
            f.write(STACK_SUDOERS + '\n')
    for path, test in ((os.path.realpath(sys.executable), '-x'),
                       (os.path.join(BIN, 'python3'), '-x'),
                       (os.path.join(REPO, 'devstack', 'plugin.sh'), '-r')):
        probe = as_stack(['bash', '-c', 'test %s "$0"' % test, path])
        if run(probe, check=False).returncode:
            for parent in _parents(path):
                mode = os.stat(parent).st_mode
                if not mode & 0o001:
                    os.chmod(parent, mode | 0o001)
                    say('WARNING: made %s passable (o+x) so that %s can '
                        'reach %s' % (parent, STACK_USER, path))
            run(probe, '%s reaching %s' % (STACK_USER, path))


def as_stack(argv):
    """``argv`` as STACK_USER (with its groups), environment kept."""
    return ['setpriv', '--reuid=' + STACK_USER, '--regid=' + STACK_USER,
            '--init-groups'] + list(argv)


def _parents(path):
    parents = []
    path = os.path.dirname(path)
    while path != '/':
        parents.append(path)
        path = os.path.dirname(path)
    return reversed(parents)


def host_names():
    """The compute hosts' names resolve (to 127.0.0.1), as on a cloud."""
    with open('/etc/hosts') as f:
        known = {name for line in f if not line.startswith('#')
                 for name in line.split()[1:]}
    missing = [h for h in HOSTS if h not in known]
    if missing:
        # A line each: libvirt takes getaddrinfo's canonical name, the
        # first of the line, as the host's name (so Nova's node name).
        with open('/etc/hosts', 'a') as f:
            for name in missing:
                f.write('127.0.0.1 %s  # resq-nova all-in-one cloud\n'
                        % name)
        say('/etc/hosts: %s at 127.0.0.1' % ', '.join(missing))


def shared_instances(state):
    """The instances path both hosts share (:mod:`tests.cloud.sharedfs`).

    Mounted before the hosts' namespaces are made, which copy it.
    """
    mnt = state.path('nova', 'instances')
    if sharedfs.is_shared_mount(mnt):
        return
    run([sys.executable, '-m', 'tests.cloud.sharedfs', mnt, '--backing',
         state.path('nova', 'instances-backing')],
        'shared instances path', cwd=REPO)
    say('instances path %s: shared (fuse.%s)' % (mnt, sharedfs.SUBTYPE))


def shared_instances_down(state):
    mnt = state.path('nova', 'instances')
    if sharedfs.is_shared_mount(mnt):
        run(['fusermount3', '-u', mnt], 'unmount %s' % mnt, check=False)


def hosts_up(state, accel):
    """The fake CAT hosts, each with its own libvirtd and host name."""
    host_names()
    shared_instances(state)
    for name in HOSTS:
        paths = state.host(name)
        run([sys.executable, '-m', 'resq_fake.host', 'up', '--state',
             paths.state, '--hostname', name, '--sock-group', STACK_USER,
             '--cpus', '0-%d' % (os.cpu_count() - 1)]
            + (['--mba', 'mbps'] if name in MBA_HOSTS else []),
            'fake host %s' % name, cwd=REPO)
        # The agent's user reaches the FUSE tree and libvirtd's socket.
        os.chmod(paths.state, 0o755)
        say('compute host %s: libvirtd on %s (%s)' % (name, paths.uri,
                                                      accel))


def rabbitmqctl(*args, check=True):
    return run(['rabbitmqctl', '-q'] + list(args), 'rabbitmqctl ' +
               ' '.join(args), check=check)


def drop_databases():
    mysql('; '.join('DROP DATABASE IF EXISTS %s%s' % (DB_PREFIX, db)
                    for db in DATABASES + ('resq',)))
    if VHOST != '/':
        rabbitmqctl('delete_vhost', VHOST, check=False)


def databases(state):
    """The cloud's databases, new with a new state directory.

    Databases left by a cloud whose state directory is gone (another
    clone, a state removed by hand) are dropped first: their service
    records would name hosts whose identity files are lost, and
    nova-compute refuses to start on such a host.
    """
    marker = state.path('done', 'databases')
    if not os.path.exists(marker):
        drop_databases()
    mysql('; '.join('CREATE DATABASE IF NOT EXISTS %s%s CHARACTER SET '
                    'utf8mb4' % (DB_PREFIX, db) for db in DATABASES))
    if VHOST != '/':
        vhosts = rabbitmqctl('list_vhosts', 'name').stdout.split()
        if VHOST not in vhosts:
            rabbitmqctl('add_vhost', VHOST)
        rabbitmqctl('set_permissions', '-p', VHOST, 'guest', '.*', '.*',
                    '.*')
    os.makedirs(state.path('done'), exist_ok=True)
    with open(marker, 'w'):
        pass


def keystone(state):
    conf = state.etc('keystone')
    if not os.path.exists(conf):
        write_conf(conf, {
            'DEFAULT': {},
            'database': {'connection': db_url('keystone')},
            'token': {'provider': 'fernet'},
            'fernet_tokens': {'key_repository': state.path(
                'etc', 'keystone', 'fernet-keys')},
            'credential': {'key_repository': state.path(
                'etc', 'keystone', 'credential-keys')},
        })
    manage = [os.path.join(BIN, 'keystone-manage'), '--config-file', conf]
    if not os.path.isdir(state.path('etc', 'keystone', 'fernet-keys')):
        run(manage + ['db_sync'], 'keystone-manage db_sync')
        for cmd in ('fernet_setup', 'credential_setup'):
            run(manage + [cmd, '--keystone-user', 'root',
                          '--keystone-group', 'root'], cmd)
        run(manage + ['bootstrap', '--bootstrap-password', ADMIN_PASSWORD,
                      '--bootstrap-region-id', 'RegionOne',
                      '--bootstrap-admin-url', KEYSTONE,
                      '--bootstrap-public-url', KEYSTONE,
                      '--bootstrap-internal-url', KEYSTONE],
            'keystone-manage bootstrap')
    uwsgi(state, 'keystone')
    wait_http(KEYSTONE, 'Keystone', state, 'keystone')


def admin_env():
    return {'OS_AUTH_URL': KEYSTONE, 'OS_USERNAME': 'admin',
            'OS_PASSWORD': ADMIN_PASSWORD, 'OS_PROJECT_NAME': 'admin',
            'OS_USER_DOMAIN_NAME': 'Default',
            'OS_PROJECT_DOMAIN_NAME': 'Default',
            'OS_REGION_NAME': 'RegionOne', 'OS_IDENTITY_API_VERSION': '3'}


def connection():
    import openstack
    env = admin_env()
    return openstack.connect(
        auth_url=env['OS_AUTH_URL'], username='admin',
        password=ADMIN_PASSWORD, project_name='admin',
        user_domain_name='Default', project_domain_name='Default',
        region_name='RegionOne')


def services():
    """``{user: (service name, type, URL)}`` of the catalog."""
    url = 'http://127.0.0.1:%d'
    return {
        'glance': ('glance', 'image', url % PORTS['glance']),
        'placement': ('placement', 'placement', url % PORTS['placement']),
        'nova': ('nova', 'compute', url % PORTS['nova-api'] + '/v2.1'),
        'neutron': ('neutron', 'network', url % PORTS['neutron']),
        'heat': ('heat', 'orchestration',
                 url % PORTS['heat-api'] + '/v1/$(project_id)s'),
    }


def _get_or_create(finder, creator, name, **kw):
    found = finder(name, ignore_missing=True, **{
        k: v for k, v in kw.items() if k == 'domain_id'})
    return found or creator(name=name, **kw)


def keystone_resources(conn):
    """Service project and users, catalog, the demo project, Heat's domain."""
    ident = conn.identity
    default = ident.find_domain('Default')
    service = _get_or_create(ident.find_project, ident.create_project,
                             'service', domain_id=default.id)
    demo = _get_or_create(ident.find_project, ident.create_project, 'demo',
                          domain_id=default.id)
    roles = {r: _get_or_create(ident.find_role, ident.create_role, r)
             for r in ('admin', 'member', 'reader', 'service',
                       'heat_stack_owner', 'heat_stack_user')}
    for user, (name, stype, url) in services().items():
        u = _get_or_create(ident.find_user, ident.create_user, user,
                           domain_id=default.id, password=SERVICE_PASSWORD)
        for role in ('admin', 'service'):
            ident.assign_project_role_to_user(service, u, roles[role])
        svc = ident.find_service(name) or ident.create_service(
            name=name, type=stype)
        for iface in ('public', 'internal'):
            if not list(ident.endpoints(service_id=svc.id,
                                        interface=iface)):
                ident.create_endpoint(service_id=svc.id, interface=iface,
                                      url=url, region_id='RegionOne')
    u = _get_or_create(ident.find_user, ident.create_user, 'demo',
                       domain_id=default.id, password=ADMIN_PASSWORD)
    ident.assign_project_role_to_user(demo, u, roles['member'])
    admin = ident.find_user('admin')
    ident.assign_project_role_to_user(demo, admin, roles['admin'])
    heat_domain = _get_or_create(ident.find_domain, ident.create_domain,
                                 'heat')
    du = _get_or_create(ident.find_user, ident.create_user,
                        'heat_domain_admin', domain_id=heat_domain.id,
                        password=SERVICE_PASSWORD)
    ident.assign_domain_role_to_user(heat_domain, du, roles['admin'])
    say('Keystone: service users, catalog, project demo, domain heat')


def placement(state):
    write_conf(state.etc('placement'), {
        'DEFAULT': {},
        'placement_database': {'connection': db_url('placement')},
        'api': {'auth_strategy': 'keystone'},
        'keystone_authtoken': authtoken('placement'),
    })
    run([os.path.join(BIN, 'placement-manage'), '--config-file',
         state.etc('placement'), 'db', 'sync'], 'placement-manage db sync')
    uwsgi(state, 'placement')


def glance(state):
    etc = os.path.join(VENV, 'etc', 'glance')
    write_conf(state.etc('glance', 'glance-api.conf'), {
        'DEFAULT': {'enabled_backends': 'file:file',
                    'workers': 1},
        'database': {'connection': db_url('glance')},
        'glance_store': {'default_backend': 'file'},
        'file': {'filesystem_store_datadir': state.path('glance', 'images')},
        'os_glance_staging_store': {
            'filesystem_store_datadir': state.path('glance', 'staging')},
        'os_glance_tasks_store': {
            'filesystem_store_datadir': state.path('glance', 'tasks')},
        'keystone_authtoken': authtoken('glance'),
        'paste_deploy': {'flavor': 'keystone', 'config_file': os.path.join(
            etc, 'glance-api-paste.ini')},
        'oslo_concurrency': {'lock_path': state.path('glance', 'lock')},
    })
    for sub in ('images', 'staging', 'tasks', 'lock'):
        os.makedirs(state.path('glance', sub), exist_ok=True)
    run([os.path.join(BIN, 'glance-manage'), '--config-file',
         state.etc('glance', 'glance-api.conf'), 'db_sync'],
        'glance-manage db_sync')
    uwsgi(state, 'glance')


def neutron(state):
    write_conf(state.etc('neutron'), {
        'DEFAULT': {'core_plugin': 'ml2',
                    # The port API reads models of these plugins' tables
                    # (port forwardings) even where guests have no ports.
                    'service_plugins': 'router,port_forwarding',
                    'auth_strategy': 'keystone',
                    'transport_url': TRANSPORT_URL,
                    'api_workers': 1, 'rpc_workers': 0,
                    'notify_nova_on_port_status_changes': 'False',
                    'notify_nova_on_port_data_changes': 'False',
                    'api_paste_config': os.path.join(
                        VENV, 'etc', 'neutron', 'api-paste.ini')},
        'database': {'connection': db_url('neutron')},
        'keystone_authtoken': authtoken('neutron'),
        'oslo_concurrency': {'lock_path': state.path('neutron', 'lock')},
    })
    write_conf(state.etc('neutron', 'ml2_conf.ini'), {
        'ml2': {'type_drivers': 'flat', 'tenant_network_types': '',
                'mechanism_drivers': '', 'extension_drivers': ''},
    })
    os.makedirs(state.path('neutron', 'lock'), exist_ok=True)
    run([os.path.join(BIN, 'neutron-db-manage'), '--config-file',
         state.etc('neutron'), '--config-file',
         state.etc('neutron', 'ml2_conf.ini'), 'upgrade', 'heads'],
        'neutron-db-manage upgrade heads')
    uwsgi(state, 'neutron', ['env = OS_NEUTRON_CONFIG_FILES=neutron.conf;'
                             'ml2_conf.ini'])


def heat(state):
    conf = state.etc('heat')
    write_conf(conf, {
        'DEFAULT': {'transport_url': TRANSPORT_URL,
                    'num_engine_workers': 1,
                    'stack_user_domain_name': 'heat',
                    'stack_domain_admin': 'heat_domain_admin',
                    'stack_domain_admin_password': SERVICE_PASSWORD,
                    # heat-api-cfn's port (8000), which this cloud does
                    # not run.
                    'heat_metadata_server_url':
                        'http://127.0.0.1:%d' % (8000 + PORT_OFFSET),
                    'heat_waitcondition_server_url':
                        'http://127.0.0.1:%d/v1/waitcondition' % (
                            8000 + PORT_OFFSET),
                    'region_name_for_services': 'RegionOne'},
        'database': {'connection': db_url('heat')},
        'keystone_authtoken': authtoken('heat'),
        'trustee': {'auth_type': 'password', 'auth_url': KEYSTONE,
                    'username': 'heat', 'password': SERVICE_PASSWORD,
                    'user_domain_name': 'Default'},
        'clients_keystone': {'auth_uri': KEYSTONE.rsplit('/', 1)[0]},
        'paste_deploy': {'api_paste_config': os.path.join(
            VENV, 'etc', 'heat', 'api-paste.ini')},
        'heat_api': {'workers': 1},
        'oslo_concurrency': {'lock_path': state.path('heat', 'lock')},
    })
    os.makedirs(state.path('heat', 'lock'), exist_ok=True)
    run([os.path.join(BIN, 'heat-manage'), '--config-file', conf,
         'db_sync'], 'heat-manage db_sync')
    uwsgi(state, 'heat-api', ['pyargv = --config-file %s' % conf])
    spawn(state, 'heat-engine', [os.path.join(BIN, 'heat-engine'),
                                 '--config-file', conf])


def privsep_sections():
    """nova-compute's privsep contexts: privsep-helper itself.

    nova-compute runs as root here; devstack's default is sudo and
    rootwrap, which sudo's secure_path would not find in a virtual
    environment.
    """
    helper = {'helper_command': os.path.join(BIN, 'privsep-helper')}
    return {section: dict(helper) for section in (
        'nova_sys_admin', 'vif_plug_ovs_privileged',
        'vif_plug_linux_bridge_privileged', 'privsep_osbrick')}


def host_cpus(node):
    """``[compute]`` of ``node``'s nova-cpu.conf.

    A mixed host keeps CPU 0 for unpinned guests; the devstack plugin
    dedicates the rest. An all-pinned host dedicates every CPU and has no
    shared set (an empty value overrides nova.conf's).
    """
    if all_pinned(node):
        return {'cpu_dedicated_set': '0-%d' % (os.cpu_count() - 1),
                'cpu_shared_set': ''}
    return {'cpu_shared_set': '0'}


def nova_conf(state, accel):
    """nova.conf, and each compute host's own file.

    The host's file is devstack's nova-cpu.conf: its name, libvirtd and
    state. Written once: the devstack plugin edits them after.
    """
    if os.path.exists(state.etc('nova')):
        return
    write_conf(state.etc('nova'), dict(privsep_sections(), **{
        'DEFAULT': {'transport_url': TRANSPORT_URL,
                    'state_path': state.path('nova'),
                    # One path for both hosts: shared storage to Nova,
                    # so migrations need no ssh between "hosts".
                    'instances_path': state.path('nova', 'instances'),
                    'compute_driver': 'libvirt.LibvirtDriver',
                    'my_ip': '127.0.0.1', 'shutdown_timeout': 0,
                    'osapi_compute_workers': 1,
                    # A libvirt domain whose instance Nova deleted
                    # (a delete while libvirtd restarted, a local delete
                    # while nova-compute was down) is destroyed by
                    # nova-compute's periodic task within 20 s and
                    # logged ("... marked as DELETED but still present on
                    # host"), not after Nova's default half hour; the soak
                    # counts those lines (reaped_domains). See
                    # doc/source/admin/troubleshooting.rst.
                    'running_deleted_instance_action': 'reap',
                    'running_deleted_instance_poll_interval': 20,
                    'running_deleted_instance_timeout': 0},
        'api': {'auth_strategy': 'keystone'},
        'wsgi': {'api_paste_config': os.path.join(
            VENV, 'etc', 'nova', 'api-paste.ini')},
        'api_database': {'connection': db_url('nova_api')},
        'database': {'connection': db_url('nova')},
        'keystone_authtoken': authtoken('nova'),
        'placement': keystoneauth('placement'),
        'neutron': keystoneauth('neutron'),
        'service_user': dict(keystoneauth('nova'),
                             send_service_user_token='True'),
        'glance': {'region_name': 'RegionOne'},
        'conductor': {'workers': 1},
        'scheduler': {'workers': 1},
        'vnc': {'enabled': 'False'},
        # Both hosts are this machine's CPUs; libvirt's CPU comparison on
        # a nested (virtual) CPU refuses even that ("Unacceptable CPU
        # info"), which stops every live migration.
        'workarounds': {'skip_cpu_compare_on_dest': 'True'},
        'oslo_concurrency': {'lock_path': state.path('nova', 'lock')},
        # Live migration: the source libvirtd reaches the other host's
        # daemon by its socket (%s: the destination's host name), QEMU's
        # stream goes to that name, which /etc/hosts maps to 127.0.0.1.
        'libvirt': {'virt_type': accel, 'cpu_mode': 'none',
                    'live_migration_uri': 'qemu+unix:///system?socket=%s' %
                    os.path.join(state.path('hosts'), '%s', 'run', 'sock',
                                 'libvirt-sock')},
        'compute': {'cpu_shared_set': '0'},
    }))
    for name in HOSTS:
        write_conf(state.etc('nova', 'nova-cpu-%s.conf' % name), {
            # Its own state (Nova keeps the node's uuid in compute_id
            # there); the instances path stays the shared one.
            'DEFAULT': {'host': name, 'state_path': state.path('nova', name),
                        # A guest that came by live migration is counted
                        # by its migration record until this periodic
                        # task: deleted before it, its pinned CPUs stay
                        # taken for the NUMA filter (60 s by default).
                        'update_resources_interval': 10},
            'libvirt': {'connection_uri': state.host(name).uri},
            'compute': host_cpus(name),
        })
    for sub in ('instances', 'lock'):
        os.makedirs(state.path('nova', sub), exist_ok=True)
    # nova-api's WSGI application reads the first of its files
    # (api-paste.ini, nova.conf) as its paste pipeline.
    shutil.copy(os.path.join(VENV, 'etc', 'nova', 'api-paste.ini'),
                state.etc('nova', 'api-paste.ini'))


def nova_db(state):
    manage = [os.path.join(BIN, 'nova-manage'), '--config-file',
              state.etc('nova')]
    run(manage + ['api_db', 'sync'], 'nova-manage api_db sync')
    run(manage + ['cell_v2', 'map_cell0', '--database_connection',
                  db_url('nova_cell0')], 'nova-manage cell_v2 map_cell0')
    cells = run(manage + ['cell_v2', 'list_cells']).stdout
    if ' cell1 ' not in cells:
        run(manage + ['cell_v2', 'create_cell', '--name', 'cell1'],
            'nova-manage cell_v2 create_cell')
    run(manage + ['db', 'sync'], 'nova-manage db sync')


def nova_services(state):
    conf = state.etc('nova')
    uwsgi(state, 'nova-api')
    for name in ('nova-conductor', 'nova-scheduler'):
        spawn(state, name, [os.path.join(BIN, name), '--config-file', conf])
    for host in HOSTS:
        os.makedirs(state.path('nova', host), exist_ok=True)
        spawn(state, 'nova-compute-%s' % host,
              fake_host.enter_argv(state.host(host)) + [
                  os.path.join(BIN, 'nova-compute'), '--config-file', conf,
                  '--config-file',
                  state.etc('nova', 'nova-cpu-%s.conf' % host)])


def node_env(state, node):
    """devstack's variables on ``node`` (aio-1: the controller too)."""
    controller = node == HOSTS[0]
    services = ['n-cpu', 'resq-agent']
    if controller:
        services += ['key', 'g-api', 'placement-api', 'n-api', 'n-cond',
                     'n-sch', 'q-svc', 'h-api', 'h-eng', 'resq-api',
                     'resq-optimizer']
    where = node_paths(state, node)
    paths = state.host(node)
    env = dict(admin_env(), **{
        'PATH': '%s:/usr/sbin:/usr/bin:/sbin:/bin' % BIN,
        'HOME': os.path.expanduser('~' + STACK_USER), 'USER': STACK_USER,
        'LANG': 'C.UTF-8',
        'RESQ_DIR': REPO, 'DEST': state.path('dest'),
        'DATA_DIR': state.path('data', node), 'STACK_USER': STACK_USER,
        'ENABLED_SERVICES': ','.join(services),
        'KEYSTONE_SERVICE_URI': KEYSTONE.rsplit('/', 1)[0],
        'ADMIN_PASSWORD': ADMIN_PASSWORD,
        'SERVICE_PASSWORD': SERVICE_PASSWORD,
        'SERVICE_DOMAIN_NAME': 'Default', 'SERVICE_PROJECT_NAME': 'service',
        'REGION_NAME': 'RegionOne', 'SERVICE_PROTOCOL': 'http',
        # The plugin names resq-api's endpoint $SERVICE_HOST$RESQ_API_PATH:
        # Apache listens on the cloud's port, not 80.
        'SERVICE_HOST': '127.0.0.1' if APACHE_PORT == 80
        else '127.0.0.1:%d' % APACHE_PORT, 'MEMCACHE_SERVERS': '',
        'SSL_BUNDLE_FILE': '', 'API_WORKERS': '1',
        'NOVA_CONF': state.etc('nova'),
        'NOVA_CPU_CONF': state.etc('nova', 'nova-cpu-%s.conf' % node),
        'LIBVIRT_URI': paths.uri,
        'RESQ_CONF_DIR': where['conf'],
        'RESQ_SUDOERS_FILE': where['sudoers'],
        # Each node's privileged daemons: root's file and sockets apart.
        'RESQ_PRIVSEP_CONF': where['privsep_conf'],
        'RESQ_PRIVSEP_SOCKET_DIR': where['privsep_run'],
        'RESQ_FLAVOR_RAM_MB': '64', 'RESQ_FLAVOR_DISK_GB': '1',
        # resq-api runs on the controller; the agents report to it.
        'RESQ_API_ENABLED': 'True',
        # Occupancy alone reaches the host report within 10 heartbeats:
        # 50 s here, not the default's 10 minutes (test_agent waits).
        'RESQ_HOST_REPORT_INTERVAL': '5',
        # A deleted server's abandoned migration releases its ways within
        # 20 s (the soak's checks wait 60 s for leaks to go).
        'RESQ_OPTIMIZER_AUDIT_INTERVAL': '20',
        'RESQ_MEMORY_BANDWIDTH_MIBPS': str(
            MBA_MIBPS if node in MBA_HOSTS else 0),
        'RESQ_DEFAULT_GROUP_MEMORY_BANDWIDTH_MIBPS': str(
            MBA_DEFAULT_GROUP_MIBPS if node in MBA_HOSTS else 0),
        'FAKE_DEVSTACK_CALLS': state.path('logs', node, 'devstack.calls'),
        'FAKE_DEVSTACK_BIN': BIN,
        'AIO_RUN_DIR': state.path('run', node),
        'AIO_LOG_DIR': state.path('logs', node),
        'AIO_APACHE_SITES': state.path('apache', 'sites'),
        'AIO_UWSGI_SOCKET_DIR': state.path('uwsgi'),
        'AIO_BIN': BIN, 'AIO_DB_PREFIX': DB_PREFIX,
        'AIO_TRANSPORT_URL': TRANSPORT_URL,
        'AIO_PATH': '%s:/usr/sbin:/usr/bin:/sbin:/bin' % BIN,
    })
    return env


def devstack(state, node, *phase):
    """The plugin's ``plugin.sh PHASE...`` on ``node``, once.

    As devstack sources it: settings, then plugin.sh with the phase as
    arguments. A ``stack`` phase that ran is not run again (``up`` on a
    running cloud changes nothing); ``unstack`` forgets ``stack extra``
    (the services), ``clean`` every phase.
    """
    marker = state.path('done', '%s-%s' % (node, '-'.join(phase)))
    if phase[0] == 'stack' and os.path.exists(marker):
        return
    shell(state, node, 'source %s/devstack/plugin.sh %s' % (
        REPO, ' '.join(phase)), 'plugin.sh ' + ' '.join(phase))
    os.makedirs(state.path('done'), exist_ok=True)
    if phase[0] == 'stack':
        with open(marker, 'w'):
            pass
    forget = {'unstack': ('stack-extra',),
              'clean': ('stack-install', 'stack-post-config', 'stack-extra')}
    for name in forget.get(phase[0], ()):
        path = state.path('done', '%s-%s' % (node, name))
        if os.path.exists(path):
            os.unlink(path)


def shell(state, node, script, what):
    """``script`` after devstack's functions and the plugin's settings.

    As root in ``node``'s namespaces (what it sees of resctrl).
    """
    script = ('set -e; source %(fake)s; source %(acting)s; '
              'source %(repo)s/devstack/settings; %(script)s' % {
                  'fake': os.path.join(REPO, 'tests', 'unit', 'devstack',
                                       'fake_devstack.sh'),
                  'acting': os.path.join(REPO, 'tests', 'cloud',
                                         'devstack.sh'),
                  'repo': REPO, 'script': script})
    env = node_env(state, node)
    stack_dirs(state, node)
    argv = fake_host.enter_argv(
        state.host(node), node_pids(state, node).values()) + as_stack(
        ['bash', '-c', script])
    with open(state.log('devstack-%s' % node), 'a') as log:
        log.write('=== %s\n' % what)
        log.flush()
        rc = subprocess.run(argv, env=env, stdout=log, stderr=log,
                            stdin=subprocess.DEVNULL).returncode
    if rc:
        raise CloudError('devstack: %s failed on %s (exit %d); see %s' % (
            what, node, rc, state.log('devstack-%s' % node)))
    say('devstack: %s on %s' % (what, node))


def stack_dirs(state, node):
    """What devstack's user writes on ``node``: its own.

    Nova's files too: devstack writes them as that user.
    """
    for path in (state.path('logs', node), state.path('run', node),
                 state.path('data', node), state.path('apache', 'sites'),
                 state.path('uwsgi'), state.path('etc', 'nova')):
        os.makedirs(path, exist_ok=True)
        run(['chown', '-R', '%s:%s' % (STACK_USER, STACK_USER), path])


def iniset(path, section, option, value):
    """devstack's iniset (the stand-in's ini editor, devstack semantics)."""
    run(['bash', '-c', 'source %s; iniset "$@"' % os.path.join(
        REPO, 'tests', 'unit', 'devstack', 'fake_devstack.sh'), 'iniset',
        path, section, option, value], 'iniset %s' % path,
        env=dict(os.environ, FAKE_DEVSTACK_CALLS='/dev/null'))


def agent_conf(state, node):
    return os.path.join(node_paths(state, node)['conf'], 'resq-agent.conf')


def agent_settings(state):
    """What agents on one machine need apart: a metrics port each."""
    for node in HOSTS:
        iniset(agent_conf(state, node), 'resq_agent', 'metrics_listen',
               '127.0.0.1:%d' % AGENT_METRICS_PORTS[node])


APACHE_CONF = """ServerRoot "%(root)s"
ServerName 127.0.0.1
PidFile "%(root)s/httpd.pid"
Listen 127.0.0.1:%(port)d
LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so
LoadModule authz_core_module /usr/lib/apache2/modules/mod_authz_core.so
LoadModule proxy_module /usr/lib/apache2/modules/mod_proxy.so
LoadModule proxy_uwsgi_module /usr/lib/apache2/modules/mod_proxy_uwsgi.so
User www-data
Group www-data
ErrorLog "%(logs)s/apache-error.log"
LogFormat "%%h %%t \\"%%r\\" %%>s %%b %%D" aio
CustomLog "%(logs)s/apache-access.log" aio
IncludeOptional "%(root)s/sites/*.conf"
"""


def apache(state):
    """devstack's Apache: the proxies write_uwsgi_config wrote."""
    root = state.path('apache')
    os.makedirs(os.path.join(root, 'sites'), exist_ok=True)
    conf = os.path.join(root, 'httpd.conf')
    with open(conf, 'w') as f:
        f.write(APACHE_CONF % {'root': root, 'port': APACHE_PORT,
                               'logs': state.path('logs')})
    running = fake_host.alive(os.path.join(root, 'httpd.pid'))
    action = 'graceful' if running else 'start'
    run(['/usr/sbin/apache2', '-f', conf, '-k', action], 'apache2 ' + action,
        env=dict(os.environ, APACHE_RUN_DIR=root, APACHE_LOCK_DIR=root,
                 APACHE_LOG_DIR=state.path('logs')))
    say('Apache: %s on port %d' % (action, APACHE_PORT))


def wait_computes(state, conn, seconds=180):
    """Both nova-compute services up, their nodes mapped to cell1."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        up = {s.host for s in conn.compute.services()
              if s.binary == 'nova-compute' and s.state == 'up'}
        if up >= set(HOSTS):
            break
        for host in HOSTS:
            log = state.log('nova-compute-%s' % host)
            with open(log, errors='replace') as f:
                # nova-compute may hang on after its last words.
                critical = [line for line in f if ' CRITICAL ' in line]
            pid_file = state.pid('nova-compute-%s' % host)
            if critical or not fake_host.alive(pid_file):
                raise CloudError('nova-compute on %s failed: %s (see %s)' % (
                    host, critical[-1].strip() if critical else 'exited',
                    log))
        time.sleep(1)
    else:
        raise CloudError('nova-compute did not come up on %s in %d s; see '
                         '%s' % (', '.join(HOSTS), seconds,
                                 state.path('logs')))
    run([os.path.join(BIN, 'nova-manage'), '--config-file', state.etc('nova'),
         'cell_v2', 'discover_hosts'], 'nova-manage cell_v2 discover_hosts')
    say('nova-compute up on %s' % ', '.join(HOSTS))


def image(state, conn):
    """A 4 MiB raw image: guests with no OS, enough for the hypervisor."""
    found = conn.image.find_image('resq-empty')
    if found:
        return found.id
    path = state.path('empty.raw')
    with open(path, 'wb') as f:
        f.truncate(4 * 1024 * 1024)
    img = conn.image.create_image(
        name='resq-empty', filename=path, disk_format='raw',
        container_format='bare', visibility='public', wait=True)
    say('Glance: image resq-empty %s' % img.id)
    return img.id


def tempest_workspace(state, image_id):
    """tempest init, and tempest.conf for this cloud and the plugin."""
    ws = state.path('tempest')
    # What "tempest init" lays out, without registering a workspace name in
    # the user's ~/.tempest (a second cloud would clash with it).
    import tempest
    top = os.path.dirname(os.path.abspath(tempest.__file__))
    for sub in ('etc', 'logs'):
        os.makedirs(os.path.join(ws, sub), exist_ok=True)
    with open(os.path.join(ws, '.stestr.conf'), 'w') as f:
        f.write('[DEFAULT]\ntest_path=%s\ntop_dir=%s\n'
                'group_regex=([^\\.]*\\.)*\n' % (
                    os.path.join(top, 'test_discover'), top))
    hosts = ','.join('%s:%s' % (h, state.host(h).state) for h in HOSTS)
    metrics = ','.join('%s:http://127.0.0.1:%d/metrics' % (
        h, AGENT_METRICS_PORTS[h]) for h in HOSTS)
    write_conf(os.path.join(ws, 'etc', 'tempest.conf'), {
        'DEFAULT': {'log_dir': os.path.join(ws, 'logs'),
                    'log_file': 'tempest.log'},
        'auth': {'admin_username': 'admin', 'admin_password': ADMIN_PASSWORD,
                 'admin_project_name': 'admin',
                 'admin_domain_name': 'Default',
                 'use_dynamic_credentials': 'True'},
        'identity': {'uri_v3': KEYSTONE, 'auth_version': 'v3',
                     'region': 'RegionOne'},
        'identity-feature-enabled': {'api_v2': 'False'},
        'compute': {'image_ref': image_id, 'image_ref_alt': image_id,
                    'min_compute_nodes': len(HOSTS),
                    'build_timeout': 120},
        'compute-feature-enabled': {'live_migration': 'True',
                                    'resize': 'True', 'shelve': 'True',
                                    'console_output': 'False',
                                    'vnc_console': 'False'},
        'network': {'shared_physical_network': 'False'},
        'network-feature-enabled': {'ipv6': 'False'},
        'validation': {'run_validation': 'False'},
        'service_available': {'nova': 'True', 'glance': 'True',
                              'neutron': 'True', 'heat': 'True',
                              'cinder': 'False', 'swift': 'False',
                              'resq': 'True',
                              'watcher': str(watcher.available())},
        'heat_plugin': {},
        'resq': {'compute_hosts': hosts, 'agent_metrics': metrics,
                 'example_profile': 'lpm-example', 'flavor_ram_mb': 64,
                 'optimizer_config': os.path.join(node_paths(
                     state, HOSTS[0])['conf'], 'resq-optimizer.conf'),
                 # The optimizer's plan is applied by live migration:
                 # libvirt takes the instances path for shared storage.
                 'live_migration': 'True',
                 'agent_restart_command': 'cd %s && %s -m tests.cloud.aio '
                 'restart-agent --state %s --host {host}' % (
                     REPO, sys.executable, state.root),
                 'host_action_command': 'cd %s && %s -m tests.cloud.aio '
                 '{action} --state %s --host {host}' % (
                     REPO, sys.executable, state.root),
                 'heat_templates_dir': os.path.join(REPO, 'etc', 'heat')},
    })
    return ws


def cloud_json(state, image_id, accel):
    doc = {'venv': VENV, 'state': state.root, 'accel': accel,
           'auth': admin_env(), 'image': image_id,
           'tempest_workspace': state.path('tempest'),
           'hosts': {h: {'state': state.host(h).state,
                         'libvirt_uri': state.host(h).uri,
                         'agent_conf': agent_conf(state, h),
                         'agent_metrics': 'http://127.0.0.1:%d/metrics'
                         % AGENT_METRICS_PORTS[h]} for h in HOSTS},
           'endpoints': dict({k: 'http://127.0.0.1:%d' % v
                              for k, v in PORTS.items()},
                             resq='http://127.0.0.1:%d/resq' % APACHE_PORT)}
    tmp = state.path('cloud.json.tmp')
    with open(tmp, 'w') as f:
        json.dump(doc, f, indent=2, sort_keys=True)
    os.replace(tmp, state.path('cloud.json'))


#: The clouds of ``DIR/clouds.yaml``: the admin, and a member of ``demo``.
CLOUD_ADMIN = 'resq-aio'
CLOUD_MEMBER = 'resq-aio-demo'


def clouds_yaml(state):
    """``DIR/clouds.yaml`` for the openstack client and openstacksdk."""
    import yaml

    def cloud(user, project):
        return {'auth': {'auth_url': KEYSTONE, 'username': user,
                         'password': ADMIN_PASSWORD,
                         'project_name': project,
                         'user_domain_name': 'Default',
                         'project_domain_name': 'Default'},
                'region_name': 'RegionOne', 'identity_api_version': 3}

    doc = {'clouds': {CLOUD_ADMIN: cloud('admin', 'admin'),
                      CLOUD_MEMBER: cloud('demo', 'demo')}}
    tmp = state.path('clouds.yaml.tmp')
    with open(tmp, 'w') as f:
        yaml.safe_dump(doc, f, default_flow_style=False)
    os.chmod(tmp, 0o600)
    os.replace(tmp, state.path('clouds.yaml'))


def client_check(state):
    """The documented client route works, and quietly.

    ``openstack --os-cloud resq-aio resource provider list`` on
    ``DIR/clouds.yaml`` (osc-placement): every host's cache-domain provider
    is listed and nothing is printed on standard error (a client plugin
    that fails to load prints there on every command).
    """
    env = dict(os.environ, OS_CLIENT_CONFIG_FILE=state.path('clouds.yaml'))
    for key in [k for k in env if k.startswith('OS_') and k not in (
            'OS_CLIENT_CONFIG_FILE',)]:
        del env[key]
    proc = run([os.path.join(BIN, 'openstack'), '--os-cloud', CLOUD_ADMIN,
                'resource', 'provider', 'list', '-f', 'value', '-c', 'name'],
               'openstack resource provider list', env=env)
    names = set(proc.stdout.split())
    missing = [h for h in HOSTS if '%s_llc_0' % h not in names]
    if missing or proc.stderr.strip():
        raise CloudError('the openstack client on %s: %s%s' % (
            state.path('clouds.yaml'),
            'no cache-domain provider of %s; ' % ', '.join(missing)
            if missing else '',
            'it printed on standard error: %s' % proc.stderr.strip()[:2000]
            if proc.stderr.strip() else ''))
    say('openstack client: %d providers, nothing on standard error'
        % len(names))


def up(state):
    accel = preflight()
    record_hosts(state)
    say('cloud %s in %s: ports are the standard ones + %d, hosts %s' % (
        NAME, state.root, PORT_OFFSET, ', '.join(HOSTS)))
    stack_user(state)
    hosts_up(state, accel)
    databases(state)
    keystone(state)
    conn = connection()
    keystone_resources(conn)
    placement(state)
    glance(state)
    neutron(state)
    heat(state)
    for name, port in PORTS.items():
        if name not in ('keystone', 'nova-api'):
            wait_http('http://127.0.0.1:%d/' % port, name, state, name)
    say('Placement, Glance, Neutron, Heat answer')
    # neutron-server's port queries name a relationship SQLAlchemy adds
    # only once the mappers are configured, which its first other query
    # does: without one, Nova's port lookups (every delete) get 500s.
    list(connection().network.networks())
    nova_conf(state, accel)
    nova_db(state)
    for node in HOSTS:
        devstack(state, node, 'stack', 'install')
        devstack(state, node, 'stack', 'post-config')
    agent_settings(state)
    apache(state)
    nova_services(state)
    wait_http('http://127.0.0.1:%d/' % PORTS['nova-api'], 'nova-api', state,
              'nova-api')
    conn = connection()  # a token whose catalog has every service
    wait_computes(state, conn)
    for node in HOSTS:
        devstack(state, node, 'stack', 'extra')
    if watcher.available():
        watcher.up(state, conn)
    image_id = image(state, conn)
    tempest_workspace(state, image_id)
    cloud_json(state, image_id, accel)
    clouds_yaml(state)
    client_check(state)
    say('the cloud %s is up: %s (ports: the standard ones + %d)' % (
        NAME, state.path('cloud.json'), PORT_OFFSET))
    say('for the openstack client of the cloud environment (OS_CLOUD=%s '
        'for a member of project demo):' % CLOUD_MEMBER)
    print('export PATH=%s:$PATH OS_CLIENT_CONFIG_FILE=%s OS_CLOUD=%s' % (
        BIN, state.path('clouds.yaml'), CLOUD_ADMIN), flush=True)


def _stop(pid_file, seconds=5):
    _stop_all([pid_file], seconds)


def _signal_group(pid, sig):
    try:
        os.killpg(pid, sig)
    except OSError:
        try:
            os.kill(pid, sig)
        except OSError:
            pass


def _stop_all(pid_files, seconds=10):
    """Stop the processes of ``pid_files`` together.

    SIGTERM to every process group at once, SIGKILL to what is left after
    ``seconds``; then the pid files are removed.
    """
    running = {}
    for pid_file in pid_files:
        pid = fake_host.alive(pid_file)
        if pid:
            running[pid_file] = pid
            _signal_group(pid, signal.SIGTERM)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(
            fake_host.alive(f) for f in running):
        time.sleep(0.1)
    for pid_file, pid in running.items():
        if fake_host.alive(pid_file):
            say('%s did not stop on SIGTERM in %d s: SIGKILL' % (
                os.path.basename(pid_file)[:-4], seconds))
            _signal_group(pid, signal.SIGKILL)
    for pid_file in pid_files:
        if os.path.exists(pid_file):
            os.unlink(pid_file)


def stop_agent(state, host):
    """Stop ``host``'s resq-agent as devstack's unstack would."""
    shell(state, host, 'source %s/devstack/lib/resq; '
          'stop_process resq-agent' % REPO, 'stop resq-agent')


def start_agent(state, host):
    """Start ``host``'s resq-agent as devstack's stack would."""
    shell(state, host, 'source %s/devstack/lib/resq; '
          'ENABLED_SERVICES=resq-agent start_resq' % REPO,
          'start resq-agent')


def _descendants(pid):
    children = {}
    for entry in os.listdir('/proc'):
        if entry.isdigit():
            try:
                with open('/proc/%s/stat' % entry) as f:
                    ppid = int(f.read().rsplit(')', 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


def kill_agent(state, host):
    """SIGKILL ``host``'s resq-agent: no clean-up of its own runs."""
    pid_file = state.path('run', host, 'resq-agent.pid')
    pid = fake_host.alive(pid_file)
    if not pid:
        raise CloudError('the resq-agent of %s does not run (%s)'
                         % (host, pid_file))
    victims = _descendants(pid) or [pid]
    for victim in victims:
        try:
            os.kill(victim, signal.SIGKILL)
        except OSError:
            pass
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and (
            fake_host.alive(pid_file)
            or any(os.path.exists('/proc/%d' % v) for v in victims)):
        time.sleep(0.1)
    say('resq-agent of %s killed (pids %s)' % (
        host, ', '.join(map(str, victims))))


def restart_agent(state, host):
    """Stop and start ``host``'s resq-agent as devstack would."""
    stop_agent(state, host)
    start_agent(state, host)


def restart_libvirtd(state, host):
    """Restart ``host``'s libvirtd; its guests and nova-compute run on."""
    holder = fake_host.alive(state.pid('nova-compute-%s' % host))
    pid = fake_host.restart_libvirtd(state.host(host),
                                     [holder] if holder else [])
    say('libvirtd of %s restarted (pid %d)' % (host, pid))


#: ``python -m tests.cloud.aio ACTION --state DIR --host HOST``: faults and
#: repairs the tempest plugin's fault scenarios inject on one host.
HOST_ACTIONS = {'restart-agent': restart_agent, 'stop-agent': stop_agent,
                'start-agent': start_agent, 'kill-agent': kill_agent,
                'restart-libvirtd': restart_libvirtd}


def _node_machine_paths(state, node):
    """What the plugin wrote outside the state directory for ``node``."""
    if not MACHINE_PATHS:
        return []
    where = node_paths(state, node)
    return [where['conf'], where['sudoers'],
            os.path.dirname(where['privsep_conf']), where['privsep_run']]


def _pid_files(run_dir):
    return [os.path.join(run_dir, name)
            for name in sorted(os.listdir(run_dir))
            if name.endswith('.pid')] if os.path.isdir(run_dir) else []


def node_pids(state, node):
    """``{pid file: pid}`` of what devstack runs on ``node``, alive."""
    found = {}
    for pid_file in _pid_files(state.path('run', node)):
        pid = fake_host.alive(pid_file)
        if pid:
            found[pid_file] = pid
    return found


def _ancestors():
    pids, pid = {os.getpid()}, os.getpid()
    while pid > 1:
        try:
            with open('/proc/%d/stat' % pid) as f:
                pid = int(f.read().rsplit(')', 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            break
        pids.add(pid)
    return pids


def leftovers(root):
    """``{pid: command line}`` of processes naming ``root``, not ours.

    Whatever the cloud started names its state directory: the services'
    and agents' configuration files, the privileged daemons' files, the
    shared instances path's FUSE process. The caller and its ancestors
    are left out.
    """
    root = os.path.abspath(root).encode() + b'/'
    mine = _ancestors()
    found = {}
    for entry in os.listdir('/proc'):
        if not entry.isdigit() or int(entry) in mine:
            continue
        try:
            with open('/proc/%s/cmdline' % entry, 'rb') as f:
                argv = f.read().split(b'\0')
        except OSError:
            continue
        if any(a.startswith(root) or (b'=' + root) in a for a in argv):
            found[int(entry)] = b' '.join(argv).decode(
                'utf-8', 'replace').strip()[:200]
    return found


def _sweep(state):
    """Stop what ``down`` left of the cloud, saying what it was.

    What is on its way out (the shared instances path's FUSE process
    after its unmount) is given a few seconds first.
    """
    deadline = time.monotonic() + 5
    found = leftovers(state.root)
    while found and time.monotonic() < deadline:
        time.sleep(0.2)
        found = leftovers(state.root)
    if not found:
        return {}
    for pid, cmd in sorted(found.items()):
        say('still running after the cloud went down: pid %d: %s; '
            'stopping it' % (pid, cmd))
        _signal_group(pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(map(_running, found)):
        time.sleep(0.1)
    for pid in found:
        if _running(pid):
            _signal_group(pid, signal.SIGKILL)
    return found


def _running(pid):
    """Whether ``pid`` runs (a zombie waiting for its parent does not)."""
    try:
        with open('/proc/%d/stat' % pid) as f:
            return f.read().rsplit(')', 1)[1].split()[0] != 'Z'
    except (OSError, IndexError):
        return False


def down(state, purge=False):
    """Stop the cloud; with ``purge`` remove its databases and files.

    Each host's plugin ``unstack`` runs in its namespaces, entered
    through libvirtd or, when libvirtd has died, through a process still
    in them (nova-compute, the agent, a guest); a host whose namespaces
    are gone, or whose unstack failed, has its processes stopped from
    their pid files. What still names the state directory afterwards is
    stopped and named.
    """
    say('taking cloud %s in %s down%s' % (
        NAME, state.root, ' and purging it' if purge else ''))
    for node in HOSTS:
        paths = state.host(node)
        inside = fake_host.alive(paths.pid) or fake_host.inside_pid(
            paths, node_pids(state, node).values())
        if inside:
            try:
                devstack(state, node, 'unstack')
                if purge:
                    devstack(state, node, 'clean')
                continue
            except CloudError as exc:
                say('%s; stopping its processes from their pid files'
                    % exc)
        if purge:
            # The plugin's clean needs its host up; do its part here.
            for path in _node_machine_paths(state, node):
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path, ignore_errors=True)
                elif os.path.lexists(path):
                    os.unlink(path)
    pid_files = _pid_files(state.path('run'))
    for node in HOSTS:
        pid_files += _pid_files(state.path('run', node))
    _stop_all(pid_files + [state.path('apache', 'httpd.pid')])
    for node in HOSTS:
        fake_host.down(state.host(node))
    shared_instances_down(state)
    _sweep(state)
    say('services, guests and hosts stopped')
    if purge:
        drop_databases()
        if os.path.exists(state.path('stack-sudoers-written')):
            try:
                os.unlink(STACK_SUDOERS)
            except FileNotFoundError:
                pass
        shutil.rmtree(state.root, ignore_errors=True)
        say('databases%s and %s removed' % (
            ', vhost %s' % VHOST if VHOST != '/' else '', state.root))


# Scenarios the check does not run yet, each with what is wrong: a check
# that runs them fails, and issue 29 stays open until this is empty.
NOT_YET = {}


def tempest(state, regex='resq_tempest_plugin', concurrency=1,
            exclude=None):
    """The tempest plugin's tests on the cloud.

    :returns: tempest's exit status and its counts (``{'passed': n,
        'failed': n, 'skipped': n}``).
    """
    ws = state.path('tempest')
    proc = subprocess.run(
        [os.path.join(BIN, 'tempest'), 'run', '--regex', regex,
         '--concurrency', str(concurrency)]
        + (['--exclude-regex', exclude] if exclude else []), cwd=ws,
        text=True,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    sys.stdout.write(proc.stdout)
    counts = {}
    for key in ('Passed', 'Failed', 'Skipped'):
        found = [line for line in proc.stdout.splitlines()
                 if line.startswith(' - %s: ' % key)]
        counts[key.lower()] = int(found[-1].split()[-1]) if found else 0
    return proc.returncode, counts


#: Where another resq-api keeps its files, on the port Nova's API has
#: by default: the cloud must come up beside them and change neither.
NEIGHBOUR_CONF_DIR = '/etc/resq'
NEIGHBOUR_PORT = 8774
#: In a /etc/resq a check made: the pid of the check that removes it.
NEIGHBOUR_MARK = '.resq-cloud-check'


def _tree_digest(top):
    """Names, owners, modes and contents under ``top`` (None: absent)."""
    if not os.path.lexists(top):
        return None
    found = {}
    for dirpath, dirnames, filenames in os.walk(top):
        for name in sorted(dirnames + filenames):
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            content = None
            if os.path.isfile(path) and not os.path.islink(path):
                with open(path, 'rb') as f:
                    content = f.read()
            found[os.path.relpath(path, top)] = (
                st.st_uid, st.st_mode, content)
    st = os.lstat(top)
    found['.'] = (st.st_uid, st.st_mode, None)
    return found


def _answers(port):
    try:
        with urllib.request.urlopen('http://127.0.0.1:%d/' % port,
                                    timeout=5) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return None


class Neighbour:
    """Another resq-api on this machine, beside the cloud.

    On ``127.0.0.1:8774`` (nova-api's standard port) with its files in
    ``/etc/resq`` (owned by ``nobody``, mode 0700). Either is made only
    where the machine has none: an existing ``/etc/resq`` is left as it
    is and only compared, a taken port is already a neighbour.
    """

    def __init__(self, state):
        self.state = state
        self.proc = None
        self.made_dir = False

    def _another_checks(self):
        """Whether /etc/resq is the neighbour of another check now running.

        That check removes it when it ends: not a change of this cloud's.
        """
        try:
            with open(os.path.join(NEIGHBOUR_CONF_DIR, NEIGHBOUR_MARK)) as f:
                pid = int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            return False
        return pid != os.getpid() and os.path.exists('/proc/%d' % pid)

    def start(self):
        nobody = 65534
        self.shared = False
        if not os.path.lexists(NEIGHBOUR_CONF_DIR):
            os.makedirs(NEIGHBOUR_CONF_DIR, mode=0o700)
            self.made_dir = True
            home = NEIGHBOUR_CONF_DIR
            with open(os.path.join(home, NEIGHBOUR_MARK), 'w') as f:
                f.write('%d\n' % os.getpid())
        else:
            self.shared = self._another_checks()
            home = self.state.path('neighbour')
            os.makedirs(home, exist_ok=True)
        if _answers(NEIGHBOUR_PORT) is None:
            conf = os.path.join(home, 'resq-api.conf')
            write_conf(conf, {
                'api': {'auth_strategy': 'noauth2'},
                'database': {'connection': 'sqlite:///%s' % os.path.join(
                    home, 'neighbour.sqlite')}})
            run([os.path.join(BIN, 'resq-manage'), '--config-file', conf,
                 'db', 'sync'], 'the neighbour resq-api\'s db sync')
            log = open(self.state.log('neighbour-resq-api'), 'a')
            self.proc = subprocess.Popen(
                [os.path.join(BIN, 'resq-api'), '--config-file', conf,
                 '--port', str(NEIGHBOUR_PORT)],
                stdout=log, stderr=log, start_new_session=True)
            log.close()
            deadline = time.monotonic() + 30
            while _answers(NEIGHBOUR_PORT) is None:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise CloudError('the neighbour resq-api did not start '
                                     'on port %d; see %s' % (
                                         NEIGHBOUR_PORT, self.state.log(
                                             'neighbour-resq-api')))
                time.sleep(0.2)
        if self.made_dir:
            for dirpath, _dirs, files in os.walk(NEIGHBOUR_CONF_DIR):
                for name in [dirpath] + [os.path.join(dirpath, f)
                                         for f in files]:
                    os.chown(name, nobody, nobody)
        self.before = _tree_digest(NEIGHBOUR_CONF_DIR)
        self.port_before = _answers(NEIGHBOUR_PORT)
        say('beside the cloud: %s (%s) and port %d (%s)' % (
            NEIGHBOUR_CONF_DIR, 'made for the check' if self.made_dir
            else 'the machine\'s own', NEIGHBOUR_PORT,
            'a resq-api started for the check' if self.proc
            else 'answers %s' % self.port_before))

    def problems(self):
        found = []
        if self.shared:
            say('%s is another running check\'s neighbour: not compared'
                % NEIGHBOUR_CONF_DIR)
        elif _tree_digest(NEIGHBOUR_CONF_DIR) != self.before:
            found.append('the cloud changed %s' % NEIGHBOUR_CONF_DIR)
        if not self.shared and self.port_before is not None and _answers(
                NEIGHBOUR_PORT) is None:
            found.append('what answered on port %d no longer does'
                         % NEIGHBOUR_PORT)
        if self.proc is not None and self.proc.poll() is not None:
            found.append('the neighbour resq-api exited (%d)'
                         % self.proc.returncode)
        return found

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        if self.made_dir:
            shutil.rmtree(NEIGHBOUR_CONF_DIR, ignore_errors=True)


def check(state, keep=False):
    """Up, the tempest plugin, down: what ``tox -e cloud`` runs.

    Beside another resq-api (:class:`Neighbour`), which the cloud must
    leave as it found it. A skipped scenario fails the check (it is not a
    pass).
    """
    started = time.monotonic()
    neighbour = Neighbour(state)
    try:
        os.makedirs(state.path('logs'), exist_ok=True)
        neighbour.start()
        up(state)
        say('set-up took %.0f s' % (time.monotonic() - started))
        for name, why in sorted(NOT_YET.items()):
            say('NOT RUN (known to fail; not a pass): %s: %s' % (name, why))
        rc, counts = tempest(state, exclude='|'.join(sorted(NOT_YET)))
        beside = neighbour.problems()
    finally:
        if not keep:
            down(state)
        neighbour.stop()
    if beside:
        raise CloudError('; '.join(beside))
    if rc == 0 and counts['passed'] == 0:
        raise CloudError('tempest ran no resq test')
    if rc == 0 and counts['skipped']:
        raise CloudError('%d resq scenario(s) were skipped; a skipped '
                         'scenario is not a pass (see the reasons above)'
                         % counts['skipped'])
    return rc


def _parser():
    p = argparse.ArgumentParser(prog='python -m tests.cloud.aio',
                                description=__doc__.split('\n')[0])
    sub = p.add_subparsers(dest='command', required=True)
    for name in ('up', 'down', 'check') + tuple(sorted(HOST_ACTIONS)):
        cmd = sub.add_parser(name)
        cmd.add_argument('--state', required=True,
                         help='the cloud\'s own directory')
        if name == 'down':
            cmd.add_argument('--purge', action='store_true',
                             help='also drop its databases and remove '
                                  'the state directory')
        if name == 'check':
            cmd.add_argument('--keep', action='store_true',
                             help='leave the cloud up afterwards')
        if name in HOST_ACTIONS:
            cmd.add_argument('--host', required=True,
                             help='a compute host of the cloud (aio-N)')
    return p


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0].startswith('-') and argv[0] not in ('-h', '--help'):
        # tox -e cloud -- --keep: options of the default command, check.
        argv.insert(0, 'check')
    args = _parser().parse_args(argv)
    state = State(args.state)
    try:
        use_hosts(state)
        if args.command == 'up':
            up(state)
        elif args.command == 'down':
            down(state, args.purge)
        elif args.command == 'check':
            return check(state, args.keep)
        else:
            if args.host not in HOSTS:
                raise CloudError('--host %s: the cloud\'s hosts are %s' % (
                    args.host, ', '.join(HOSTS)))
            HOST_ACTIONS[args.command](state, args.host)
    except (CloudError, fake_host.HostError) as exc:
        print('ERROR: %s' % exc, file=sys.stderr)
        return 2
    return 0


if __name__ == '__main__':
    # Run as the module tests.cloud.watcher and the benchmarks import, not
    # as a second copy named __main__: the cloud's layout (name, ports)
    # lives in that module's globals, and its CloudError is the one main
    # catches.
    from tests.cloud import aio as _aio
    sys.exit(_aio.main())
