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
"""Latency sources of on-demand NFs: the plugin interface and its checks.

A source is a stevedore plugin in the ``resq_agent.latency_sources``
namespace, chosen with ``[resq_agent] ondemand_latency_source``. It is
built with the agent's configuration and answers :meth:`LatencySource.
sample` for one instance: the samples the NF reported since the last
call. :class:`Checked` wraps any source and turns every way a source can
go wrong into a :class:`SourceFailed` that names the source, the instance
and the problem: no sample for longer than ``[resq_agent]
ondemand_latency_max_age_s`` (stopped), a value that is not a finite
non-negative number (nonsense), more samples in one period than
``[resq_agent] ondemand_latency_max_samples`` (flood). The local scheduler
then keeps the masks it has.
"""

import dataclasses
import math

from stevedore import driver

from resq_common import exception

NAMESPACE = 'resq_agent.latency_sources'


class SourceFailed(exception.ResQException):
    msg_fmt = ('latency source %(source)s for instance %(uuid)s: '
               '%(reason)s')


@dataclasses.dataclass(frozen=True)
class Sample:
    """One report of an NF: when (Unix seconds) and how long (µs).

    ``load``, the CPU utilisation in [0, 1], is optional (Durner's policy
    uses it when there); so is ``mpps``, the NF's offered rate (SLOMO's
    sharing check uses it when there).
    """

    time: float
    latency_us: float
    load: float = None
    mpps: float = None


class LatencySource:
    """The interface of a latency source plugin."""

    name = None

    def __init__(self, conf):
        self.conf = conf

    def sample(self, instance_uuid):
        """Samples reported since the previous call, oldest first.

        :raises SourceFailed: when the source cannot be read at all.
        """
        raise NotImplementedError()

    def forget(self, keep):
        """Drop the state of instances not in ``keep``."""


def _number(value):
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))


class Checked:
    """A source whose answers are checked; one per source, per agent."""

    def __init__(self, source, max_age_s, max_samples, clock):
        self.source = source
        self.max_age_s = max_age_s
        self.max_samples = max_samples
        self.clock = clock
        self._last = {}      # uuid -> last good Sample

    @property
    def name(self):
        return self.source.name or type(self.source).__name__

    def latest(self, uuid):
        """The NF's latest sane sample.

        :raises SourceFailed: the source stopped, lies or floods.
        """
        def fail(reason):
            raise SourceFailed(source=self.name, uuid=uuid, reason=reason)

        samples = list(self.source.sample(uuid) or ())
        if len(samples) > self.max_samples:
            fail('%d samples in one period, more than the %d allowed '
                 '([resq_agent] ondemand_latency_max_samples): the NF '
                 'floods its source' % (len(samples), self.max_samples))
        for s in samples:
            if not _number(s.latency_us) or s.latency_us < 0:
                fail('latency %r µs is not a finite, non-negative number'
                     % (s.latency_us,))
            if not _number(s.time):
                fail('sample time %r is not a number' % (s.time,))
            if s.load is not None and (not _number(s.load)
                                       or not 0 <= s.load <= 1):
                fail('load %r is not a number between 0 and 1'
                     % (s.load,))
            if s.mpps is not None and (not _number(s.mpps) or s.mpps < 0):
                fail('offered rate %r Mpps is not a finite, non-negative '
                     'number' % (s.mpps,))
        if samples:
            # The newest; among equal times the one reported last.
            self._last[uuid] = max(reversed(samples), key=lambda s: s.time)
        last = self._last.get(uuid)
        now = self.clock()
        if last is None:
            fail('no sample yet; the NF must report its latency (see the '
                 'on-demand guide)')
        if now - last.time > self.max_age_s:
            fail('no sample for %.0f s (more than %.0f s, [resq_agent] '
                 'ondemand_latency_max_age_s): the source stopped' % (
                     now - last.time, self.max_age_s))
        return last

    def forget(self, keep):
        for uuid in set(self._last) - set(keep):
            del self._last[uuid]
        self.source.forget(keep)


def load(conf, clock):
    """The configured source, checked.

    :raises SourceFailed: naming the plugins there are, when the name is
        not one of them.
    """
    opts = conf.resq_agent
    try:
        mgr = driver.DriverManager(NAMESPACE, opts.ondemand_latency_source,
                                   invoke_on_load=True,
                                   invoke_args=(conf,))
    except Exception as exc:
        raise SourceFailed(
            source=opts.ondemand_latency_source, uuid='*',
            reason='cannot load it from the %s entry points (%s); set '
                   '[resq_agent] ondemand_latency_source to an installed '
                   'one, such as jsonlines' % (NAMESPACE, exc))
    src = mgr.driver
    if src.name is None:
        src.name = opts.ondemand_latency_source
    return Checked(src, opts.ondemand_latency_max_age_s,
                   opts.ondemand_latency_max_samples, clock)
