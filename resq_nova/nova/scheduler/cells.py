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
"""Which cache domain serves each NUMA cell, as the agents found it.

Nova pins a dedicated-CPU instance to a NUMA cell; the instance's ways
must come from the cache those cores share. The cell id and the L3 cache
id agree only on some platforms: with sub-NUMA clustering two cells share
one cache, and on hosts whose cells span several caches no cache serves a
whole cell. Each agent publishes ``CUSTOM_RESQ_NUMA_<cell>`` on the
cache-domain provider whose cache the cell's cores share
(:mod:`resq_common.cache_domain`); the map here is read from
Placement with one request per cell id (providers with that trait, with
their parents, the compute nodes) and kept for ``[resq]
cell_map_refresh_s``.

A compute node absent from the map (its agent predates the traits, or
Placement could not be read) is taken to have cache domain ``N`` serve
cell ``N``, as on Intel Xeons without sub-NUMA clustering.
"""

import threading
import time

from oslo_log import log as logging

from resq_common import cache_domain

LOG = logging.getLogger(__name__)

# Placement microversions: GET /traits (1.6), ?required= (1.18) with
# parent_provider_uuid in the answer (1.14).
VERSION = '1.18'
# After a failure the last map (or the id fallback) serves this long.
RETRY_AFTER_S = 60


class CellMap:
    """``{compute node uuid: {cell: cache-domain provider uuid}}``."""

    def __init__(self, client_factory, refresh_s=60, clock=time.monotonic):
        """A map read through ``client_factory()``.

        :param client_factory: ``() -> keystoneauth-like client`` with
            ``get(url, version=...)``; called when first needed.
        """
        self._client_factory = client_factory
        self._client = None
        self.refresh_s = refresh_s
        self._clock = clock
        self._cells = {}
        self._next = 0.0
        self._lock = threading.Lock()

    def hosts(self):
        """``{compute node uuid: {cell: provider uuid or None}}`` now.

        ``None`` for a cell means the host's agent says no cache domain
        holds all of its cores. A host that is not in the map gets the id
        fallback from the caller (:func:`cache_domain.provider_uuid`).
        """
        return self._cells

    def refresh_if_due(self):
        """Read the map again when it is older than ``refresh_s``.

        Never raises: a failed read keeps the last map for
        :data:`RETRY_AFTER_S` and says why in the log.
        """
        if self._clock() < self._next:
            return
        if not self._lock.acquire(blocking=False):
            return      # another request is reading it; use the last map
        try:
            try:
                self._cells = self._read()
                self._next = self._clock() + self.refresh_s
            except Exception as exc:
                LOG.warning('ResQFilter cannot read which cache domain '
                            'serves each NUMA cell from Placement (%s); '
                            'using the last map (%d hosts), and cell N = '
                            'cache N for the others, for %d s', exc,
                            len(self._cells), RETRY_AFTER_S)
                self._next = self._clock() + RETRY_AFTER_S
        finally:
            self._lock.release()

    def _get(self, url):
        if self._client is None:
            self._client = self._client_factory()
        resp = self._client.get(url, version=VERSION)
        if resp.status_code != 200:
            raise ValueError('GET %s: %s %s' % (url, resp.status_code,
                                                resp.text[:200]))
        return resp.json()

    def _read(self):
        traits = self._get('/traits?name=startswith:%s'
                           % cache_domain.TRAIT_NUMA_PREFIX)['traits']
        cells = {}
        for trait in sorted(traits):
            try:
                cell = int(trait[len(cache_domain.TRAIT_NUMA_PREFIX):])
            except ValueError:
                continue
            rps = self._get('/resource_providers?required=%s'
                            % trait)['resource_providers']
            for rp in rps:
                parent = rp.get('parent_provider_uuid')
                if not parent:
                    continue
                host = cells.setdefault(parent, {})
                if cell in host and host[cell] != rp['uuid']:
                    LOG.warning('Two cache domains of compute node %s '
                                'claim NUMA cell %d (%s and %s); the '
                                'filter gives that cell no ResQ instance '
                                'until the agent reports one',
                                parent, cell, host[cell], rp['uuid'])
                    host[cell] = None
                elif cell not in host:
                    host[cell] = rp['uuid']
        return cells
