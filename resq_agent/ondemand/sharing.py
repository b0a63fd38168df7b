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
"""Which on-demand NFs may share a class: SLOMO's models decide.

The max-min procedure (:mod:`.maxmin`) shares violating NFs that miss
little. With ``[resq_agent] ondemand_slomo_dir`` set, each NF whose flavor
names a profile (``resq:profile``) with a valid SLOMO model there
(:mod:`resq_profiler.slomo`) and whose latency source reports its offered
rate (``mpps``) is checked: predicted next to the other sharers, can it
carry that rate? If not, it is isolated instead. An NF without a model or
a rate, or next to a sharer without a model (whose pressure is unknown),
is not judged: the paper's rule stands for it. A model that is corrupt, of
another version or for another platform is refused with the reason in the
log once, as if there were none.

The prediction is for the class the sharers would get, not the whole LLC:
the caller passes its ways, or else it is the ways their measured
occupancy fills (what :func:`.maxmin.plan` gives the sharers' class). A
model trained on the whole LLC only (format version 1) cannot answer for a
smaller class: it judges nobody, and the log says to retrain it.
"""

from oslo_log import log as logging

from resq_profiler.slomo import document
from resq_profiler.slomo import store as store_mod

LOG = logging.getLogger(__name__)


class SlomoSharing:
    """A ``may_share`` predicate for :func:`.maxmin.plan`."""

    def __init__(self, directory, platform=None):
        self.store = store_mod.ModelStore(directory)
        self.platform = platform
        self._models = {}
        self._warned = set()

    def model(self, profile_id):
        if not profile_id:
            return None
        if profile_id not in self._models:
            self._models[profile_id] = self.store.get_or_isolate(
                profile_id, self.platform)
        return self._models[profile_id]

    def forget(self):
        """Read the models again at the next check (they were retrained)."""
        self._models = {}
        self._warned = set()

    def class_ways(self, nfs, readings, models):
        """The ways of the class ``nfs`` would share, from their occupancy.

        Their measured occupancy in ways, rounded to the nearest way, at
        least one and at most the LLC (as :func:`.maxmin.plan` sizes the
        sharers' class); ``None`` (the whole LLC) when nothing measured
        their occupancy.
        """
        platform = next(iter(models.values())).platform
        way_bytes = platform['way_size_bytes']
        used = sum(readings[n.uuid].occupancy_bytes for n in nfs
                   if n.uuid in readings)
        if used <= 0:
            return None
        return min(max(int(used / way_bytes + 0.5), 1),
                   platform['llc_ways'])

    def __call__(self, nfs, readings, ways=None):
        """Uuids of the NFs predicted not to keep up in one shared class.

        :param ways: ways of the class they would share; ``None``: the
            ways their occupancy fills (:meth:`class_ways`).
        """
        models = {n.uuid: self.model(n.profile) for n in nfs}
        if not models or any(m is None for m in models.values()):
            return set()
        if ways is None:
            ways = self.class_ways(nfs, readings, models)
        cannot = set()
        for n in nfs:
            rate = readings[n.uuid].mpps if n.uuid in readings else None
            if rate is None:
                continue
            others = [models[o.uuid].contentiousness for o in nfs
                      if o.uuid != n.uuid]
            try:
                predicted = models[n.uuid].predict_mpps(others, ways)
            except document.ClassSizeUnsupported as exc:
                self._unsupported(n.profile, exc)
                return set()
            except ValueError as exc:
                LOG.warning('On-demand NFs %s: no SLOMO prediction for a '
                            'class of %s ways: %s', ', '.join(
                                sorted(o.uuid for o in nfs)), ways, exc)
                return set()
            if predicted < rate:
                LOG.info('On-demand NF %s: SLOMO predicts %.3f Mpps next to '
                         '%d sharer(s) in %s ways, below the %.3f Mpps '
                         'offered; it gets a class of its own', n.uuid,
                         predicted, len(others), ways or 'all', rate)
                cannot.add(n.uuid)
        return cannot

    def _unsupported(self, profile_id, exc):
        """Log once per model that it cannot judge classes; retrain it."""
        if profile_id not in self._warned:
            self._warned.add(profile_id)
            LOG.warning('%s', exc)
