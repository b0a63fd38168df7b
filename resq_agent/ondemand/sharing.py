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
"""

from oslo_log import log as logging

from resq_profiler.slomo import store as store_mod

LOG = logging.getLogger(__name__)


class SlomoSharing:
    """A ``may_share`` predicate for :func:`.maxmin.plan`."""

    def __init__(self, directory, platform=None):
        self.store = store_mod.ModelStore(directory)
        self.platform = platform
        self._models = {}

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

    def __call__(self, nfs, readings):
        """Uuids of the NFs predicted not to keep up in one shared class."""
        models = {n.uuid: self.model(n.profile) for n in nfs}
        if any(m is None for m in models.values()):
            return set()
        cannot = set()
        for n in nfs:
            rate = readings[n.uuid].mpps if n.uuid in readings else None
            if rate is None:
                continue
            others = [models[o.uuid].contentiousness for o in nfs
                      if o.uuid != n.uuid]
            predicted = models[n.uuid].predict_mpps(others)
            if predicted < rate:
                LOG.info('On-demand NF %s: SLOMO predicts %.3f Mpps next to '
                         '%d sharer(s), below the %.3f Mpps offered; it '
                         'gets a class of its own', n.uuid, predicted,
                         len(others), rate)
                cannot.add(n.uuid)
        return cannot
