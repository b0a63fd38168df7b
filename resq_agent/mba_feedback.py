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
"""Holding a group near a MiB/s target with percentage MBA. Pure.

Intel's memory bandwidth allocation without the ``mba_MBps`` mount option
takes a percentage: a delay each core adds to its memory requests, not a
bandwidth. A group's bandwidth at a given percentage depends on what it
runs. Where the kernel has L3 bandwidth monitoring (MBM) but the operator
did not mount with ``mba_MBps``, the agent can close the loop itself from
the MBM readings it already takes, as the kernel's software controller
(mba_sc) does inside the kernel.

Two controllers, one interface (:meth:`step`: a reading in, the next
percentage out):

:class:`StepController`
    What the kernel's mba_sc does (``update_mba_bw`` in
    ``arch/x86/kernel/cpu/resctrl/monitor.c``, once a second from the MBM
    overflow handler): above the target, one ``bandwidth_gran`` step down;
    below it, one step up. From 100 % to 20 % takes eight seconds with
    10 % steps, and at a steady demand it keeps stepping across the target
    (the reading swings by a step's worth of bandwidth).

:class:`ProportionalController`
    The agent's. The throttle is close to linear in the request rate
    (``info/MB/delay_linear`` is 1 on Intel), so a bandwidth-bound group's
    bandwidth is about ``k * percent``; each reading gives ``k`` and the
    next percentage is the step that brings ``k * percent`` to the target
    from below, clamped to ``[min_bandwidth, 100]``. It lands in one or
    two readings, and holds still while the reading is within one step's
    worth of the target (no limit cycle). A group that uses less than its
    target at 100 % is demand-bound: it stays at 100 %.

Neither can be exact: the percentage moves in steps of ``bandwidth_gran``,
so the bandwidth moves in steps of ``k * bandwidth_gran``; the agent's
``mba_feedback_error_pct`` (``tox -e bench -- agent``) measures both on a
modelled group.
"""

import math
import random

MAX_PERCENT = 100


class _Base:

    def __init__(self, target_mibps, min_bandwidth=10, bandwidth_gran=10,
                 start=MAX_PERCENT):
        if target_mibps <= 0:
            raise ValueError('a bandwidth target is a positive number of '
                             'MiB/s, got %r' % (target_mibps,))
        if not 1 <= bandwidth_gran <= MAX_PERCENT or not (
                0 <= min_bandwidth <= MAX_PERCENT):
            raise ValueError('bandwidth_gran must be 1-100 and '
                             'min_bandwidth 0-100, got %r and %r'
                             % (bandwidth_gran, min_bandwidth))
        self.target = float(target_mibps)
        self.gran = int(bandwidth_gran)
        self.low = max(self._up(min_bandwidth), self.gran)
        self.percent = min(max(self._up(start), self.low), MAX_PERCENT)

    def _up(self, percent):
        """``percent`` rounded up to a step, as the kernel rounds."""
        return int(math.ceil(percent / self.gran) * self.gran)

    def _clamp(self, percent):
        return min(max(percent, self.low), MAX_PERCENT)


class StepController(_Base):
    """One ``bandwidth_gran`` step a reading, toward the target."""

    def step(self, measured_mibps):
        if measured_mibps > self.target and self.percent > self.low:
            self.percent = self._clamp(self.percent - self.gran)
        elif measured_mibps < self.target and self.percent < MAX_PERCENT:
            self.percent = self._clamp(self.percent + self.gran)
        return self.percent


class ProportionalController(_Base):
    """To the step that puts the group at or below its target, at once."""

    def step(self, measured_mibps):
        if measured_mibps <= 0:
            # Nothing measured (idle, or MBM's first interval): no
            # evidence; keep the limit.
            return self.percent
        per_percent = measured_mibps / self.percent
        # Within one step's worth below the target: as close as steps go.
        if self.target - per_percent * self.gran < measured_mibps \
                <= self.target:
            return self.percent
        if measured_mibps < self.target and self.percent >= MAX_PERCENT:
            return self.percent  # demand-bound: it uses less than allowed
        wanted = self.target / per_percent
        # The highest step whose bandwidth stays at or below the target.
        self.percent = self._clamp(int(wanted // self.gran) * self.gran)
        return self.percent


def error_pct(readings, target_mibps):
    """Mean absolute error of ``readings`` against the target, percent."""
    readings = list(readings)
    if not readings:
        return None
    return 100.0 * sum(abs(r - target_mibps) for r in readings) / (
        len(readings) * target_mibps)


def simulate(controller_cls, seed, readings=60, settle=5, noise=0.03):
    """A controller on a modelled group; its error after ``settle``.

    The group (one seed's draw): ``k`` MiB/s per percent (60-150, the
    linear throttle), a demand that the limit binds (1.2-2x the target)
    for the first half and that drops below the target, then rises again
    (so the limit must open and close), readings with +/-``noise``
    relative MBM noise, the target 20-60 % of the group's peak.

    :returns: the mean absolute error of the readings after the first
        ``settle`` of each phase, percent of the target.
    """
    rng = random.Random(seed)
    per_percent = rng.uniform(60, 150)
    target = per_percent * rng.uniform(20, 60)
    heavy = target * rng.uniform(1.2, 2.0)
    light = target * rng.uniform(0.5, 0.9)
    ctl = controller_cls(target)
    phases = [heavy] * (readings // 2) + [light] * (readings // 4)
    phases += [heavy] * (readings - len(phases))
    errors, since = [], 0
    for i, demand in enumerate(phases):
        if i and demand != phases[i - 1]:
            since = 0
        bw = min(demand, per_percent * ctl.percent)
        bw *= 1 + rng.uniform(-noise, noise)
        # The target binds only while the group wants more than it.
        wanted = min(demand, target)
        if since >= settle:
            errors.append(abs(bw - wanted) / target * 100.0)
        since += 1
        ctl.step(bw)
    return sum(errors) / len(errors)
