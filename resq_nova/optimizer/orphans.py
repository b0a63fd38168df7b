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
"""Cache ways held by the migrations of deleted servers, released.

While a server moves (live migration, resize, cold migration) Nova gives
the source host's allocation to the migration's Placement consumer and,
when the move ends, gives it back or drops it. A move Nova gives up on
keeps it: when the source's libvirtd goes away during a live migration,
nova-compute puts the server and the migration in ``error`` ("almost
certainly too late to rollback") and touches no allocation. Deleting the
server then removes the server's allocations, not its migration's, and
Nova's migration list stops showing that migration. On a ResQ host that
leaves cache ways, a class of service and a dedicated core held by no one
for good: only ``nova-manage placement audit --delete`` frees them.

The audit frees exactly those. A consumer holding ``CUSTOM_LLC_WAY`` on a
cache domain is released when Nova names it neither as a server (``GET
/servers/{uuid}`` answers 404: no server of that id exists or it was
deleted) nor as a migration (``GET /os-migrations``, the migrations of
every server that exists, read to an empty page), in two audits at least
``min_age`` seconds apart with the same consumer generation: all its
allocations are removed, as ``nova-manage placement audit --delete``
would, in one ``PUT /allocations/{consumer}`` with that generation, which
Placement refuses if anyone changed the consumer since. Placement's
allocations are read first and Nova second; Nova records a server or a
migration before it gives it any allocation, so one that starts during
the audit is always named. (Nova writes its migrations' consumers with the
type ``unknown``, not ``MIGRATION``: the type cannot tell them apart.)

Nothing is released when Nova's answers could be partial or blind:

* while a cell is down (its services ``UNKNOWN``), Nova's lists leave its
  servers and migrations out and answers 404 for some of its servers;
* when the credentials lack the admin role, Nova answers 404 for every
  other project's server;
* when the migration list is longer than ``max_migrations`` or repeats
  a page.

A migration Nova still lists is never touched, whatever its status: its
server exists, and where that server runs is for an operator to find; an
``error`` or ``failed`` one is logged with the steps. Every release is
logged with what the consumer held and where.
"""

import time

from oslo_log import log as logging

from resq_common import cache_domain
from resq_common.clients import placement as placement_client
from resq_common import extra_specs

LOG = logging.getLogger(__name__)

RELEASED, KEPT, FAILED = 'released', 'kept', 'failed'
# A migration list longer than this is not read whole, and the audit
# releases nothing (a tenant's failed resizes each leave a migration).
MAX_MIGRATIONS = 200000
# Statuses of a move Nova has ended without giving the allocation back.
_ENDED_BADLY = ('error', 'failed')


def ways_consumers(placement):
    """``{consumer: [(provider, ways)]}`` holding LLC ways anywhere."""
    held = {}
    for provider in placement.list_providers():
        root = provider.get('root_provider_uuid')
        if root is None or root == provider['uuid']:
            continue
        if cache_domain.domain_of(root, provider['uuid']) is None:
            continue
        try:
            allocs = placement.get_provider_allocations(provider['uuid'])
        except placement_client.ProviderNotFound:
            continue
        for consumer, resources in allocs.items():
            ways = resources.get(extra_specs.RC_LLC_WAY)
            if ways:
                held.setdefault(consumer, []).append(
                    (provider['uuid'], int(ways)))
    return held


class Auditor:
    """One pass: release what no server and no migration Nova lists holds."""

    def __init__(self, placement, compute, release=True,
                 why_not='[resq_optimizer] release_orphaned_migrations is '
                         'off', seen=None, min_age=0.0, max_migrations=None,
                 clock=time.monotonic, stopping=None):
        """An audit of Placement against Nova.

        :param why_not: with ``release`` false, the reason logged.
        :param seen: ``{consumer: (generation, first seen)}`` kept between
            audits; a consumer is released once it was judged orphaned
            ``min_age`` seconds before with the same generation (0: at
            once, as an operator's one-shot audit does).
        :param stopping: a callable; true stops the pass between consumers.
        """
        self.placement = placement
        self.compute = compute
        self.release = release
        self.why_not = why_not
        self.seen = {} if seen is None else seen
        self.min_age = min_age
        self.max_migrations = max_migrations
        self.clock = clock
        self.stopping = stopping or (lambda: False)

    def blind(self):
        """Why Nova's answers cannot be trusted to be whole now; or None."""
        down = self.compute.down_cell_services()
        if down:
            return ('Nova cannot reach the cell of %d service(s) (%s): its '
                    'lists leave that cell\'s servers and migrations out'
                    % (len(down), ', '.join(sorted(
                        '%s@%s' % (s.get('binary'), s.get('host'))
                        for s in down))[:300]))
        if self.compute.is_admin() is False:
            return ('the credentials of [nova] lack the admin role: Nova '
                    'hides other projects\' servers from them')
        return None

    def run(self):
        """Audit once.

        :returns: one record per consumer holding ways that is no server:
            ``consumer``, ``outcome`` (``released``, ``kept``, or
            ``failed``), ``detail``, ``held`` (``{provider: resources}``),
            and for a kept one the migration Nova lists (``migration``).
        :raises resq_common.clients.placement.PlacementError,
            resq_common.clients.compute.ComputeError: Placement or Nova
            could not be read (nothing was released).
        """
        started = self.clock()
        held = ways_consumers(self.placement)
        if not held:
            self.seen.clear()
            return []
        blind = self.blind()
        listed = {m.get('uuid'): m for m in self.compute.list_migrations(
            max_items=self.max_migrations)}
        # One list of every project's servers spares a request per server
        # holding ways; the others are asked about one by one (a soft-
        # deleted server, say, is not in the list but is still Nova's).
        servers = {s['id'] for s in self.compute.list_all_servers()}
        results = []
        orphaned = set()
        for consumer in sorted(held):
            if self.stopping():
                break
            if consumer in servers:
                continue
            migration = listed.get(consumer)
            info = self.placement.get_consumer(consumer)
            if info is None:
                continue            # released meanwhile
            if migration is not None:
                results.append(self._kept(consumer, info, migration))
            elif self.compute.find_server(consumer) is None:
                orphaned.add(consumer)
                results.append(self._orphan(consumer, info, blind))
        for consumer in set(self.seen) - orphaned:
            del self.seen[consumer]
        LOG.debug('Migration allocation audit: %d consumer(s) holding LLC '
                  'ways, %d orphaned or migrating in %.2f s', len(held),
                  len(results), self.clock() - started)
        return results

    def _orphan(self, consumer, info, blind):
        """Release it when nothing forbids it and it was seen before."""
        if blind:
            self.seen.pop(consumer, None)
            return self._not_released(consumer, info, blind)
        if not self.release:
            return self._not_released(consumer, info, self.why_not)
        generation = info.get('consumer_generation')
        now = self.clock()
        first = self.seen.get(consumer)
        if first is None or first[0] != generation:
            self.seen[consumer] = (generation, now)
            first = self.seen[consumer]
        if now - first[1] < self.min_age:
            return {'consumer': consumer, 'outcome': KEPT,
                    'held': info['allocations'],
                    'detail': 'no server or migration Nova lists; released '
                              'if still so in %.0f s' % (
                                  self.min_age - (now - first[1]))}
        del self.seen[consumer]
        return self._release(consumer, info)

    @staticmethod
    def _held_text(held):
        return '; '.join('%s on %s' % (', '.join(
            '%s=%s' % kv for kv in sorted(res.items())), rp)
            for rp, res in sorted(held.items()))

    def _kept(self, consumer, info, migration):
        status = migration.get('status')
        detail = ('migration %s of server %s (%s -> %s), %s in Nova'
                  % (consumer, migration.get('instance_uuid'),
                     migration.get('source_compute'),
                     migration.get('dest_compute'), status))
        if status in _ENDED_BADLY:
            LOG.warning(
                'The %s holds %s although the move ended; its server '
                'exists, so it is left for an operator: find where the '
                'server runs (virsh list on both hosts), then "nova-manage '
                'placement audit --delete" once the server is deleted or '
                'moved, or "nova-manage placement heal_allocations --force '
                '--instance %s" once Nova shows it where it runs', detail,
                self._held_text(info['allocations']),
                migration.get('instance_uuid'))
        return {'consumer': consumer, 'outcome': KEPT, 'detail': detail,
                'held': info['allocations'], 'migration': migration}

    def _not_released(self, consumer, info, why):
        LOG.warning('Consumer %s holds %s, and Nova lists it neither as a '
                    'server nor as a migration; not released: %s '
                    '("nova-manage placement audit --delete" frees it)',
                    consumer, self._held_text(info['allocations']), why)
        return {'consumer': consumer, 'outcome': KEPT,
                'held': info['allocations'],
                'detail': 'no server or migration Nova lists; not '
                          'released: %s' % why}

    def _release(self, consumer, info):
        held = info['allocations']
        what = self._held_text(held)
        try:
            self.placement.delete_allocations(
                consumer, info.get('consumer_generation'))
        except placement_client.PlacementError as exc:
            LOG.error('Could not release the allocations of consumer %s '
                      '(%s): %s; retrying at the next audit', consumer,
                      what, exc)
            return {'consumer': consumer, 'outcome': FAILED, 'held': held,
                    'detail': str(exc)}
        LOG.warning('Released the allocations of consumer %s: %s. Nova '
                    'lists it neither as a server nor as a migration (a '
                    'move of a since deleted server), and would have kept '
                    'them for good', consumer, what)
        return {'consumer': consumer, 'outcome': RELEASED, 'held': held,
                'detail': 'no server or migration Nova lists'}
