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
"""The few Nova compute API calls SLO admission makes.

A keystoneauth adapter and plain JSON, like the Placement client: flavors
(list, create with extra specs and project access, delete) and servers
(create, show). Every call uses compute API microversion 2.86, so nova-api
validates the ``resq:`` extra specs (HTTP 400 naming the key) and
``networks: none`` is accepted.

Flavors made for an admitted SLO term are private: ``is_public`` false and
access for the admitting project only (``addTenantAccess``), so no other
project can see them or boot reserved capacity with them.
"""

import time
from urllib import parse

from keystoneauth1 import exceptions as ks_exc

from resq_common.conf import clients
from resq_common import exception

MICROVERSION = '2.86'    # extra-spec validation; networks "none" is 2.37
METADATA_MICROVERSION = '2.1'   # server metadata is in the base v2.1 API
# Pinned availability zone in server details (2.96); flavor extra specs
# (2.47), server group "policy" (2.64), migration filters (2.59) and event
# details (2.84) are older.
OPTIMIZER_MICROVERSION = '2.96'
# A requested destination (hypervisor_hostname) in server create that still
# passes the scheduler (admins only).
REQUESTED_HOST_MICROVERSION = '2.74'
# Live migration to a named host that still passes the scheduler (2.30+;
# "force" is gone from 2.68, so the scheduler cannot be bypassed).
LIVE_MIGRATION_MICROVERSION = '2.68'
GROUP = clients.NOVA
# The disabled_reason resq-optimizer gives a compute service it disabled
# because a plan freed the host ([resq_optimizer] disable_freed_hosts);
# only services disabled with it are enabled again by resq-nova.
FREED_REASON = 'resq-optimizer: freed by plan '


class ComputeError(exception.ResQException):
    msg_fmt = 'Nova %(method)s %(url)s failed: %(reason)s'

    def __init__(self, message=None, status_code=None, **kwargs):
        super().__init__(message, **kwargs)
        self.status_code = status_code


class ComputeUnavailable(ComputeError):
    msg_fmt = ('Nova is unreachable (%(reason)s); check the [nova] options '
               'and that nova-api is running')


def register_opts(conf, group=GROUP):
    clients.register_opts(conf, group)


class ComputeClient:
    """Nova's compute API over a keystoneauth adapter."""

    def __init__(self, adapter, poll_interval=1.0):
        self._adapter = adapter
        self.poll_interval = poll_interval

    @classmethod
    def from_conf(cls, conf, group=GROUP, strict=True):
        """:raises resq_common.conf.clients.MissingCredentials:"""
        return cls(clients.load_adapter(conf, group, 'compute', strict))

    @classmethod
    def for_endpoint(cls, endpoint, headers=None, poll_interval=1.0):
        """A client for a compute endpoint without Keystone (tests).

        :param headers: identity headers the endpoint's no-auth middleware
            reads (e.g. ``X-Auth-Project-Id``).
        """
        return cls(clients.noauth_adapter(endpoint, 'compute', headers),
                   poll_interval=poll_interval)

    def project_id(self):
        """The project the client acts for: the one that admits terms.

        From the Keystone token, or for a client without Keystone from the
        ``X-Auth-Project-Id`` header its endpoint reads.

        :raises ComputeError: when neither says.
        """
        try:
            project = self._adapter.get_project_id()
        except ks_exc.MissingAuthPlugin:
            project = None
        if not project:
            headers = self._adapter.additional_headers or {}
            project = headers.get('X-Auth-Project-Id')
        if not project:
            raise ComputeError(
                'cannot tell which project admits the term (the credentials '
                'are not scoped to a project); set project_name or '
                'project_id in the credentials')
        return project

    def identity(self):
        """``{'user_id', 'project_id'}`` the client acts as; None unknown.

        From the Keystone token, or for a client without Keystone from the
        identity headers its endpoint reads. For logs and notifications:
        it never raises for a missing or unreachable Keystone.
        """
        ids = {'user_id': None, 'project_id': None}
        try:
            ids['user_id'] = self._adapter.get_user_id()
            ids['project_id'] = self._adapter.get_project_id()
        except ks_exc.ClientException:
            pass
        headers = self._adapter.additional_headers or {}
        ids['user_id'] = ids['user_id'] or headers.get('X-User-Id')
        ids['project_id'] = (ids['project_id']
                             or headers.get('X-Auth-Project-Id'))
        return ids

    def _call(self, method, url, body=None, ok=(200,),
              microversion=MICROVERSION):
        resp = clients.request(self._adapter, method, url, microversion,
                               body, ComputeUnavailable)
        if resp.status_code in ok:
            return resp.json() if resp.content else None
        raise ComputeError(method=method, url=url, reason='%s %s' % (
            resp.status_code, _fault(resp)), status_code=resp.status_code)

    # -- flavors -------------------------------------------------------------
    def find_flavor(self, name):
        """The flavor called ``name`` with its extra specs, or ``None``."""
        flavors = self._call('GET', '/flavors/detail?is_public=None')
        for flavor in flavors['flavors']:
            if flavor['name'] == name:
                return flavor
        return None

    def create_flavor(self, name, vcpus, ram_mb, disk_gb, extra_specs,
                      project_id):
        """Create a private flavor for one project, or leave nothing.

        The flavor is not public and ``project_id`` gets access to it, as
        ``openstack flavor create --private --project`` does. Nova
        validates the extra specs; when it refuses them, or the access,
        the flavor just created is deleted again.
        """
        flavor = self._call('POST', '/flavors', {'flavor': {
            'name': name, 'vcpus': vcpus, 'ram': ram_mb, 'disk': disk_gb,
            'os-flavor-access:is_public': False}})['flavor']
        try:
            specs = self._call('POST', '/flavors/%s/os-extra_specs'
                               % flavor['id'],
                               {'extra_specs': extra_specs})['extra_specs']
            self.add_flavor_access(flavor['id'], project_id)
        except exception.ResQException:
            self.delete_flavor(flavor['id'])
            raise
        flavor['extra_specs'] = specs
        return flavor

    def flavor_access(self, flavor_id):
        """The projects with access to a private flavor."""
        return sorted(a['tenant_id'] for a in self._call(
            'GET', '/flavors/%s/os-flavor-access' % flavor_id)[
                'flavor_access'])

    def add_flavor_access(self, flavor_id, project_id):
        """Give ``project_id`` access to a private flavor; idempotent."""
        if project_id in self.flavor_access(flavor_id):
            return False
        self._call('POST', '/flavors/%s/action' % flavor_id,
                   {'addTenantAccess': {'tenant': project_id}})
        return True

    def delete_flavor(self, flavor_id):
        self._call('DELETE', '/flavors/%s' % flavor_id, ok=(202, 204))

    # -- servers -------------------------------------------------------------
    def list_servers(self, name_regex, all_projects=False):
        """Servers (id and name) whose name matches ``name_regex``.

        :param all_projects: of every project (an admin's view).
        """
        url = '/servers?name=%s' % parse.quote(name_regex, safe='')
        if all_projects:
            url += '&all_tenants=1'
        return self._call('GET', url)['servers']

    def create_server(self, name, flavor_id, image, network, host=None,
                      metadata=None, key_name=None, security_groups=None):
        """Ask for one server; returns its id.

        :param network: a network UUID, a list of them (one port on each,
            in order), or ``none``/``auto``.
        :param host: the hypervisor (compute node) it should go to, as
            Placement names its provider; the scheduler still checks it
            (its filters, ResQ's included), Nova just does not consider
            other nodes. Admins only.
        :param metadata: server metadata (string values).
        :param key_name: a keypair of the requesting user.
        :param security_groups: security group names for its ports.
        """
        if network in ('none', 'auto'):
            networks = network
        elif isinstance(network, (list, tuple)):
            networks = [{'uuid': net} for net in network]
        else:
            networks = [{'uuid': network}]
        body = {'server': {'name': name, 'flavorRef': flavor_id,
                           'imageRef': image, 'networks': networks}}
        if metadata:
            body['server']['metadata'] = metadata
        if key_name:
            body['server']['key_name'] = key_name
        if security_groups:
            body['server']['security_groups'] = [
                {'name': group} for group in security_groups]
        microversion = MICROVERSION
        if host:
            body['server']['hypervisor_hostname'] = host
            microversion = REQUESTED_HOST_MICROVERSION
        return self._call('POST', '/servers', body, ok=(202,),
                          microversion=microversion)['server']['id']

    def list_servers_detail(self, name_regex):
        """The project's servers whose name matches ``name_regex``.

        Full documents: status, host (admins), metadata, ``created``.
        """
        return self._pages('/servers/detail?name=%s'
                           % parse.quote(name_regex, safe=''), 'servers',
                           microversion=OPTIMIZER_MICROVERSION)

    def has_keypair(self, name):
        """Whether the requesting user has a key pair called ``name``."""
        try:
            self._call('GET', '/os-keypairs/%s' % parse.quote(name, safe=''))
        except ComputeError as exc:
            if exc.status_code == 404:
                return False
            raise
        return True

    def list_interfaces(self, server_id):
        """The server's ports (``net_id``, ``port_id``, ...), in order."""
        return self._call('GET', '/servers/%s/os-interface' % server_id)[
            'interfaceAttachments']

    # -- what the optimizer reads and does ----------------------------------
    def _pages(self, url, key, microversion=MICROVERSION, limit=1000,
               marker_key='id', offset=False, until_empty=False,
               max_items=None):
        """Every item of a paginated list.

        Pages by ``limit`` and ``marker`` (the last item's ``marker_key``),
        or by ``limit`` and ``offset``. Nova caps ``limit`` at its ``[api]
        max_limit`` without saying so, so a page is the last only when it
        is empty or shorter than the first one: a list that fits in one
        page costs one more (empty) request, and none is cut short. With
        ``until_empty`` only an empty page ends the list (Nova drops
        duplicates of cross-cell migrations from a page after applying
        the limit, so a short page is not the last); a marker seen twice
        ends it with an error, and so do more than ``max_items`` items.

        :raises ComputeError: the list cannot be read whole.
        """
        items = []
        marker = None
        sep = '&' if '?' in url else '?'
        first = None
        while True:
            page = url + '%slimit=%d' % (sep, limit)
            if offset and items:
                page += '&offset=%d' % len(items)
            elif marker is not None:
                page += '&marker=%s' % parse.quote(str(marker), safe='')
            batch = self._call('GET', page, microversion=microversion)[key]
            items.extend(batch)
            if max_items is not None and len(items) > max_items:
                raise ComputeError('%s lists more than %d items; not read '
                                   'whole' % (url, max_items))
            if first is None:
                first = len(batch)
            if not batch or (len(batch) < first and not until_empty):
                return items
            if until_empty and batch[-1][marker_key] == marker:
                raise ComputeError('%s repeats its page after marker %s'
                                   % (url, marker))
            marker = batch[-1][marker_key]

    def list_all_servers(self):
        """Every server of every project.

        With flavor extra specs (2.47+), pinned availability zone (2.96)
        and metadata.
        """
        return self._pages('/servers/detail?all_tenants=1', 'servers',
                           microversion=OPTIMIZER_MICROVERSION)

    def list_compute_services(self):
        """Every nova-compute service (Nova does not paginate services)."""
        return self._call('GET', '/os-services?binary=nova-compute',
                          microversion=OPTIMIZER_MICROVERSION)['services']

    def list_hypervisors(self):
        """Every hypervisor with its service host (2.53+), page by page."""
        return self._pages('/os-hypervisors/detail', 'hypervisors',
                           microversion=OPTIMIZER_MICROVERSION)

    def list_server_groups(self):
        """Every server group of every project (pages by offset)."""
        return self._pages('/os-server-groups?all_projects=True',
                           'server_groups',
                           microversion=OPTIMIZER_MICROVERSION, offset=True)

    def list_aggregates(self):
        """Host aggregates with their hosts and metadata."""
        return self._call('GET', '/os-aggregates',
                          microversion=OPTIMIZER_MICROVERSION)['aggregates']

    def set_service_status(self, service_id, disabled, reason=None):
        """Disable (with ``reason``) or enable a compute service (2.53+)."""
        body = {'status': 'disabled' if disabled else 'enabled'}
        if disabled and reason:
            body['disabled_reason'] = reason[:255]
        return self._call('PUT', '/os-services/%s' % service_id, body,
                          microversion=OPTIMIZER_MICROVERSION)['service']

    def abort_live_migration(self, server_id, migration_id):
        """Ask Nova to abort a live migration in progress.

        2.24+; 2.65+ also aborts one still queued.

        :raises ComputeError: refused, e.g. 409 when it is completing.
        """
        self._call('DELETE', '/servers/%s/migrations/%s'
                   % (server_id, migration_id), ok=(202,),
                   microversion=OPTIMIZER_MICROVERSION)

    def live_migrate(self, server_id, host):
        """Ask Nova to live-migrate to ``host`` through the scheduler.

        Never forced: the named host still passes the filters (ResQ's
        included). :returns: the request id, to find Nova's reason later.
        """
        resp = clients.request(
            self._adapter, 'POST', '/servers/%s/action' % server_id,
            LIVE_MIGRATION_MICROVERSION,
            {'os-migrateLive': {'host': host, 'block_migration': 'auto'}},
            ComputeUnavailable)
        if resp.status_code != 202:
            raise ComputeError(method='POST', url='/servers/%s/action'
                               % server_id, reason='%s %s' % (
                                   resp.status_code, _fault(resp)),
                               status_code=resp.status_code)
        return (resp.headers.get('x-openstack-request-id')
                or resp.headers.get('x-compute-request-id'))

    def live_migrations(self, server_id):
        """The server's live migrations, newest first (2.59+), all pages."""
        migrations = self._pages(
            '/os-migrations?instance_uuid=%s&migration_type='
            'live-migration' % server_id, 'migrations',
            microversion=OPTIMIZER_MICROVERSION, marker_key='uuid')
        return sorted(migrations, key=lambda m: (m.get('created_at') or '',
                                                 m.get('id') or 0),
                      reverse=True)

    def list_migrations(self, max_items=None):
        """Every migration Nova lists (those of servers that exist).

        All types and statuses, all pages (2.59+: with ``uuid``), up to an
        empty page. Nova leaves out the migrations of a cell it cannot
        reach without saying so: see :meth:`down_cell_services`.

        :raises ComputeError: more than ``max_items``, or a page repeated.
        """
        return self._pages('/os-migrations', 'migrations',
                           microversion=OPTIMIZER_MICROVERSION,
                           marker_key='uuid', until_empty=True,
                           max_items=max_items)

    def down_cell_services(self):
        """The services of cells Nova cannot reach (status UNKNOWN, 2.69+).

        While any is, Nova's lists leave that cell's records out.
        """
        return [s for s in self._call(
            'GET', '/os-services', microversion=OPTIMIZER_MICROVERSION)[
                'services'] if s.get('status') == 'UNKNOWN']

    def is_admin(self):
        """Whether the token carries the admin role; None: no Keystone.

        Nova answers ``GET /servers/{id}`` of another project's server
        with 404 unless the caller is admin.
        """
        try:
            session = self._adapter.session
            access = self._adapter.auth.get_access(session) \
                if self._adapter.auth is not None \
                else session.auth.get_access(session)
        except (AttributeError, ks_exc.MissingAuthPlugin):
            return None
        return 'admin' in [r.lower() for r in access.role_names]

    def instance_actions(self, server_id):
        """The server's instance actions (``action``, ``request_id``, ...)."""
        return self._call('GET', '/servers/%s/os-instance-actions'
                          % server_id,
                          microversion=OPTIMIZER_MICROVERSION)[
                              'instanceActions']

    def instance_action(self, server_id, request_id):
        """One instance action with its events (and their details)."""
        return self._call('GET', '/servers/%s/os-instance-actions/%s'
                          % (server_id, request_id),
                          microversion=OPTIMIZER_MICROVERSION)[
                              'instanceAction']

    def get_server_metadata(self, server_id):
        return self._call('GET', '/servers/%s/metadata' % server_id,
                          microversion=METADATA_MICROVERSION)['metadata']

    def update_server_metadata(self, server_id, values):
        """Merge ``values`` into the server's metadata (other keys stay)."""
        return self._call('POST', '/servers/%s/metadata' % server_id,
                          {'metadata': values},
                          microversion=METADATA_MICROVERSION)['metadata']

    def get_server(self, server_id, microversion=MICROVERSION):
        return self._call('GET', '/servers/%s' % server_id,
                          microversion=microversion)['server']

    def find_server(self, server_id):
        """The server, or None when Nova has none of that id (404)."""
        try:
            return self.get_server(server_id)
        except ComputeError as exc:
            if exc.status_code == 404:
                return None
            raise

    def wait_for_server(self, server_id, timeout):
        """Poll until the server is ACTIVE or ERROR, or ``timeout`` passes.

        :returns: the server document (``status`` says which).
        """
        deadline = time.monotonic() + timeout
        while True:
            server = self.get_server(server_id)
            if server['status'] in ('ACTIVE', 'ERROR'):
                return server
            if time.monotonic() >= deadline:
                return server
            time.sleep(self.poll_interval)


def _fault(resp):
    """The message of a compute API error body, else its text."""
    try:
        body = resp.json()
    except ValueError:
        return resp.text
    for value in body.values():
        if isinstance(value, dict) and 'message' in value:
            return value['message']
    return resp.text
