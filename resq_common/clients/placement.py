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
"""The one Placement client of resq-nova.

A method per operation, each with a named microversion; one response check
that turns failures into exceptions an operator can act on; idempotent
``ensure``/``set`` operations that retry when another writer (Nova's
resource tracker, another agent) bumped a provider's generation.
"""

from urllib import parse

from oslo_log import log as logging

from resq_common.conf import clients
from resq_common import exception

LOG = logging.getLogger(__name__)

# Microversions, named for what they give us.
MV_RESOURCE_CLASS_PUT = '1.7'      # PUT /resource_classes/{name}
MV_TRAITS = '1.6'                  # traits API
MV_PROVIDER_BODY = '1.20'          # POST /resource_providers returns it
MV_NESTED = '1.14'                 # parent_provider_uuid, in_tree
MV_ALLOCATIONS = '1.28'            # consumer generation in allocations
MV_ERROR_CODES = '1.23'            # 409s say placement.concurrent_update
MV_CANDIDATES = '1.34'             # suffixed groups (1.33), mappings (1.34)
MV_CONSUMER_TYPE = '1.38'          # consumer_type (INSTANCE, MIGRATION)
GENERATION_RETRIES = 5
CONFLICT_CODE = 'placement.concurrent_update'
# Placement's 400 for a resource class it does not know.
NO_SUCH_CLASS = 'No such resource class'


class PlacementError(exception.ResQException):
    msg_fmt = 'Placement %(method)s %(url)s failed: %(reason)s'


class PlacementUnavailable(PlacementError):
    msg_fmt = ('Placement is unreachable or did not answer within '
               '[placement] timeout (%(reason)s); check the [placement] '
               'options and that the service is running')


class ProviderNotFound(PlacementError):
    msg_fmt = 'Resource provider %(what)s does not exist in Placement'


class GenerationConflict(PlacementError):
    msg_fmt = ('Resource provider %(uuid)s kept changing under us '
               '(%(attempts)d attempts); another service writes it too often')


def register_opts(conf, group=clients.PLACEMENT):
    clients.register_opts(conf, group)


class PlacementClient:
    """Placement over a keystoneauth adapter."""

    def __init__(self, adapter):
        self._adapter = adapter

    @classmethod
    def from_conf(cls, conf, group=clients.PLACEMENT, strict=True):
        """:raises resq_common.conf.clients.MissingCredentials:"""
        return cls(clients.load_adapter(conf, group, 'placement', strict))

    @classmethod
    def for_endpoint(cls, endpoint, token='admin',
                     timeout=clients.DEFAULT_TIMEOUT):
        """A client for a no-auth Placement (tests, standalone)."""
        return cls(clients.noauth_adapter(endpoint, 'placement',
                                          {'x-auth-token': token}, timeout))

    # -- the one response check -------------------------------------------
    def _call(self, method, url, microversion, body=None, ok=(200,),
              missing=None):
        resp = clients.request(self._adapter, method, url, microversion,
                               body, PlacementUnavailable)
        if resp.status_code in ok:
            return resp.json() if resp.content else None
        if resp.status_code == 404 and missing is not None:
            raise ProviderNotFound(method=method, url=url, what=missing)
        reason = '%s %s' % (resp.status_code, _errors(resp))
        if resp.status_code == 409:
            cls = _Conflict if _code(resp) == CONFLICT_CODE else Conflict
            raise cls(method=method, url=url, reason=reason)
        raise PlacementError(method=method, url=url, reason=reason)

    # -- operations ---------------------------------------------------------
    def ensure_resource_class(self, name):
        self._call('PUT', '/resource_classes/%s' % name,
                   MV_RESOURCE_CLASS_PUT, ok=(201, 204))

    def ensure_trait(self, name):
        self._call('PUT', '/traits/%s' % name, MV_TRAITS, ok=(201, 204))

    def get_provider(self, uuid):
        try:
            return self._call('GET', '/resource_providers/%s' % uuid,
                              MV_NESTED, missing=uuid)
        except ProviderNotFound:
            return None

    def find_provider(self, name):
        """The provider called ``name`` (e.g. a hypervisor hostname)."""
        found = self._call('GET', '/resource_providers?name=%s' % name,
                           MV_NESTED)['resource_providers']
        if not found:
            raise ProviderNotFound(method='GET', url='/resource_providers',
                                   what='named %r' % name)
        return found[0]

    def tree(self, root_uuid):
        """Every provider in the tree rooted at ``root_uuid``."""
        return self._call('GET', '/resource_providers?in_tree=%s'
                          % root_uuid, MV_NESTED)['resource_providers']

    def ensure_provider(self, uuid, name, parent_uuid=None):
        """Create the provider unless it exists; return it (idempotent)."""
        current = self.get_provider(uuid)
        if current is not None:
            if (current['name'] != name or current.get(
                    'parent_provider_uuid') != parent_uuid):
                raise PlacementError(
                    method='GET', url='/resource_providers/%s' % uuid,
                    reason='provider exists as %r under %s, expected %r '
                    'under %s' % (current['name'],
                                  current.get('parent_provider_uuid'), name,
                                  parent_uuid))
            return current
        body = {'uuid': uuid, 'name': name}
        if parent_uuid:
            body['parent_provider_uuid'] = parent_uuid
        try:
            return self._call('POST', '/resource_providers',
                              MV_PROVIDER_BODY, body, ok=(200,))
        except Conflict:
            # Someone created it between our GET and POST.
            return self.ensure_provider(uuid, name, parent_uuid)

    def _replace(self, uuid, what, value):
        """Replace a provider's ``what`` (inventories or traits).

        PUT at the provider's current generation; while another writer wins
        the race, read the new generation and try again.
        """
        url = '/resource_providers/%s/%s' % (uuid, what)
        for attempt in range(1, GENERATION_RETRIES + 1):
            provider = self.get_provider(uuid)
            if provider is None:
                raise ProviderNotFound(method='GET', url=url, what=uuid)
            try:
                return self._call(
                    'PUT', url, MV_ERROR_CODES,
                    {'resource_provider_generation': provider['generation'],
                     what: value}, missing=uuid)
            except _Conflict:
                LOG.debug('Generation conflict on %s (attempt %d)', uuid,
                          attempt)
        raise GenerationConflict(method='PUT', url=uuid, uuid=uuid,
                                 attempts=GENERATION_RETRIES)

    def get_inventories(self, uuid):
        return self._call('GET', '/resource_providers/%s/inventories' % uuid,
                          MV_NESTED, missing=uuid)['inventories']

    def set_inventories(self, uuid, inventories):
        """Replace the provider's inventory (retries generation conflicts).

        Resource classes are created first; an empty dict clears it.
        """
        for rc in inventories:
            if rc.startswith('CUSTOM_'):
                self.ensure_resource_class(rc)
        if self.get_inventories(uuid) != inventories:
            self._replace(uuid, 'inventories', inventories)

    def get_traits(self, uuid):
        return sorted(self._call('GET', '/resource_providers/%s/traits'
                                 % uuid, MV_TRAITS, missing=uuid)['traits'])

    def set_traits(self, uuid, traits):
        traits = sorted(set(traits))
        for trait in traits:
            if trait.startswith('CUSTOM_'):
                self.ensure_trait(trait)
        if self.get_traits(uuid) != traits:
            self._replace(uuid, 'traits', traits)

    def update_owned_traits(self, uuid, owns, traits):
        """Make the traits ``owns`` accepts exactly ``traits``; keep others.

        For a provider others write too (the compute node's, whose traits
        Nova's resource tracker keeps): its traits are read with their
        generation and written back with only the owned ones changed, at
        that generation, so a concurrent writer's change is never lost
        (a generation conflict reads again and retries).

        :param owns: ``owns(trait)``: whether the caller publishes it.
        :returns: the provider's traits after the change.
        """
        traits = set(traits)
        for trait in sorted(traits):
            if trait.startswith('CUSTOM_'):
                self.ensure_trait(trait)
        url = '/resource_providers/%s/traits' % uuid
        for attempt in range(1, GENERATION_RETRIES + 1):
            body = self._call('GET', url, MV_TRAITS, missing=uuid)
            current = set(body['traits'])
            wanted = {t for t in current if not owns(t)} | traits
            if wanted == current:
                return sorted(current)
            try:
                self._call('PUT', url, MV_TRAITS, {
                    'resource_provider_generation':
                        body['resource_provider_generation'],
                    'traits': sorted(wanted)}, missing=uuid)
                return sorted(wanted)
            except _Conflict:
                LOG.debug('Generation conflict on the traits of %s '
                          '(attempt %d)', uuid, attempt)
        raise GenerationConflict(method='PUT', url=url, uuid=uuid,
                                 attempts=GENERATION_RETRIES)

    def get_usages(self, uuid):
        return self._call('GET', '/resource_providers/%s/usages' % uuid,
                          MV_NESTED, missing=uuid)['usages']

    def get_allocations(self, consumer_uuid):
        """``{provider uuid: {resource class: amount}}`` of a consumer."""
        body = self._call('GET', '/allocations/%s' % consumer_uuid,
                          MV_ALLOCATIONS)
        return {rp: alloc['resources']
                for rp, alloc in body.get('allocations', {}).items()}

    def get_consumer(self, consumer_uuid):
        """A consumer's allocations with its type, or None if it holds none.

        :returns: ``{'allocations': {provider: {class: amount}},
            'consumer_type': 'INSTANCE' | 'MIGRATION' | ..., 'project_id',
            'user_id', 'consumer_generation'}``.
        """
        body = self._call('GET', '/allocations/%s' % consumer_uuid,
                          MV_CONSUMER_TYPE)
        if not body.get('allocations'):
            return None
        return dict(body, allocations={
            rp: alloc['resources']
            for rp, alloc in body['allocations'].items()})

    def delete_allocations(self, consumer_uuid, generation):
        """Remove every allocation of a consumer, if it did not change.

        One ``PUT /allocations/{consumer}`` with no allocation and the
        consumer generation read before, so a consumer someone changed
        since is left alone.

        :raises Conflict: the consumer changed (or was made) meanwhile.
        """
        body = self._call('GET', '/allocations/%s' % consumer_uuid,
                          MV_ALLOCATIONS)
        if not body.get('allocations'):
            return
        self._call('PUT', '/allocations/%s' % consumer_uuid,
                   MV_ALLOCATIONS, {
                       'allocations': {}, 'project_id': body['project_id'],
                       'user_id': body['user_id'],
                       'consumer_generation': generation}, ok=(204,))

    def move_resources(self, consumer_uuid, from_rp, to_rp, classes,
                       retries=3):
        """Move a consumer's ``classes`` from one provider to another.

        One ``PUT /allocations/{consumer}`` with the consumer's generation,
        so the move is atomic and never overwrites a concurrent change
        (Nova's own claims): on a generation conflict the allocations are
        read again and the move retried. Idempotent: a consumer that holds
        nothing of ``classes`` on ``from_rp`` is left as it is.

        :returns: the consumer's allocations after the move, as
            :meth:`get_allocations` gives them.
        :raises Conflict: ``to_rp`` has no room (Placement's reason), or
            the consumer kept changing.
        """
        for _ in range(retries):
            body = self._call('GET', '/allocations/%s' % consumer_uuid,
                              MV_ALLOCATIONS)
            allocs = {rp: dict(a['resources'])
                      for rp, a in body.get('allocations', {}).items()}
            moving = {rc: n for rc, n in allocs.get(from_rp, {}).items()
                      if rc in classes}
            if not moving:
                return allocs
            for rc, n in moving.items():
                del allocs[from_rp][rc]
                dest = allocs.setdefault(to_rp, {})
                dest[rc] = dest.get(rc, 0) + n
            if not allocs[from_rp]:
                del allocs[from_rp]
            put = {'allocations': {rp: {'resources': res}
                                   for rp, res in allocs.items()},
                   'project_id': body['project_id'],
                   'user_id': body['user_id'],
                   'consumer_generation': body.get('consumer_generation')}
            try:
                self._call('PUT', '/allocations/%s' % consumer_uuid,
                           MV_ALLOCATIONS, put, ok=(204,))
                return allocs
            except _Conflict:
                continue
        raise Conflict(method='PUT', url='/allocations/%s' % consumer_uuid,
                       reason='the consumer\'s allocations changed during '
                              '%d attempts' % retries)

    def list_providers(self):
        """Every resource provider (with its root and parent)."""
        return self._call('GET', '/resource_providers',
                          MV_NESTED)['resource_providers']

    def get_provider_allocations(self, uuid):
        """``{consumer uuid: {resource class: amount}}`` on one provider.

        :raises ProviderNotFound: when the provider does not exist.
        """
        body = self._call('GET', '/resource_providers/%s/allocations' % uuid,
                          MV_NESTED, missing=uuid)
        return {consumer: alloc['resources']
                for consumer, alloc in body.get('allocations', {}).items()}

    def delete_provider(self, uuid):
        try:
            self._call('DELETE', '/resource_providers/%s' % uuid, MV_NESTED,
                       ok=(204,), missing=uuid)
        except ProviderNotFound:
            pass

    def allocation_candidates(self, groups, group_policy=None, limit=None):
        """``GET /allocation_candidates`` for granular request groups.

        :param groups: ``{suffix: {'resources': {rc: amount}, 'required':
            [trait, ...]}}``; the suffix ``''`` is the unsuffixed group.
        :param group_policy: ``none`` or ``isolate`` (Placement needs one
            with more than one suffixed group).
        :returns: Placement's body: ``allocation_requests`` (with
            ``mappings``: which provider serves which group) and
            ``provider_summaries`` (capacity, usage and traits of every
            provider in the candidate trees).
        """
        query = []
        for suffix, group in sorted(groups.items()):
            resources = group.get('resources') or {}
            if resources:
                query.append(('resources%s' % suffix, ','.join(
                    '%s:%d' % (rc, amount)
                    for rc, amount in sorted(resources.items()))))
            if group.get('required'):
                query.append(('required%s' % suffix,
                              ','.join(sorted(group['required']))))
        if group_policy:
            query.append(('group_policy', group_policy))
        if limit:
            query.append(('limit', str(limit)))
        try:
            return self._call('GET', '/allocation_candidates?%s'
                              % parse.urlencode(query), MV_CANDIDATES)
        except PlacementError as exc:
            # A custom class no provider has ever had (no agent has
            # reported LLC inventory yet) is a 400 to Placement; to the
            # caller it is what it means: no candidate anywhere.
            if not str(exc).startswith('Placement GET') or \
                    NO_SUCH_CLASS not in str(exc):
                raise
            LOG.info('No allocation candidates: %s', exc)
            return {'allocation_requests': [], 'provider_summaries': {}}


class Conflict(PlacementError):
    """409 for another reason than a generation (e.g. a duplicate)."""


class _Conflict(PlacementError):
    """A generation conflict: retry with a fresh generation."""


def _errors(resp):
    try:
        return '; '.join(e.get('detail', '') for e in
                         resp.json().get('errors', [])) or resp.text
    except ValueError:
        return resp.text


def _code(resp):
    try:
        return resp.json()['errors'][0].get('code')
    except (ValueError, KeyError, IndexError):
        return None
