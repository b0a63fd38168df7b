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
"""Durner et al.'s profile-free min-max LLC policy (their Algorithm 1).

No profile, only measurements: start with every NF sharing the lease;
each period, take the NF with the highest load. If it already has ways of
its own it gets one more; else it gets ``floor(occupancy / way size)``
exclusive ways (at least ``min_cbm_bits``). The allocation under which the
highest load was lowest is remembered, and when the exclusive ways reach
the lease minus the ways kept for the sharing NFs (two in the paper, at
least ``min_cbm_bits`` here), that best allocation is the answer.

Load is the NF's CPU utilisation when its latency source reports one
(``Reading.load``), else latency over target: NFs here busy-poll, so the
latency ratio is what rises when the LLC share is too small.

One :class:`DurnerPolicy` per lease and NF set; :meth:`step` is called
once per settled measurement period with the readings taken under the
allocation the previous step returned. Pure.
"""

import math

from resq_agent.ondemand import model

SHARED_WAYS = 2


def load_of(nf, reading):
    if reading.load is not None:
        return reading.load
    return reading.latency_us / nf.target_us


class DurnerPolicy:

    def __init__(self, lease, nfs):
        self.lease = lease.check()
        self.nfs = sorted(nfs, key=lambda n: n.uuid)
        self.keep = max(SHARED_WAYS, lease.min_cbm_bits, 1)
        self.ways = {}            # uuid -> exclusive ways, in grant order
        self.best_z = math.inf
        self.best = model.shared(lease, nfs)
        self.current = self.best
        self.done = False
        self.steps = 0

    def _plan(self):
        classes = [model.ClassOfService(w, (u,), 'isolated')
                   for u, w in self.ways.items()]
        rest = tuple(n.uuid for n in self.nfs if n.uuid not in self.ways)
        left = self.lease.ways - sum(self.ways.values())
        if rest:
            classes.append(model.ClassOfService(left, rest))
        else:
            last = classes[-1]
            classes[-1] = model.ClassOfService(last.ways + left,
                                               last.members, last.kind)
        return model.Plan(tuple(classes), rounds=self.steps)

    def step(self, readings):
        """The allocation for the next period.

        :param readings: ``{uuid: model.Reading}`` measured under
            :attr:`current`.
        """
        z = max(load_of(n, readings[n.uuid]) for n in self.nfs)
        if z < self.best_z:
            self.best_z, self.best = z, self.current
        if self.done:
            return self.best
        top = max(self.nfs, key=lambda n: (load_of(n, readings[n.uuid]),
                                           n.uuid))
        granted = sum(self.ways.values())
        if top.uuid in self.ways:
            want = 1
        else:
            want = max(int(math.floor(readings[top.uuid].occupancy_bytes
                                      / self.lease.way_bytes)),
                       self.lease.min_cbm_bits, 1)
        sharers = len(self.nfs) - len(self.ways) - (
            0 if top.uuid in self.ways else 1)
        keep = self.keep if sharers else 0
        new_class = top.uuid not in self.ways
        classes = len(self.ways) + (1 if new_class else 0) + (
            1 if sharers else 0)
        if (granted + want > self.lease.ways - keep
                or classes > self.lease.classes):
            # Every way or class is handed out: Algorithm 1's loop ends.
            self.done = True
            return self.best
        self.steps += 1
        self.ways[top.uuid] = self.ways.get(top.uuid, 0) + want
        self.current = self._plan()
        return self.current
