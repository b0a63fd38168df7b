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
"""Measurement drivers: how the profiler gets one throughput or latency.

A driver is loaded by name from the ``resq_profiler.drivers`` entry point
group (``model`` and ``command`` ship with resq-nova).
"""

import abc

from stevedore import driver as stevedore_driver

from resq_profiler import exception

NAMESPACE = 'resq_profiler.drivers'


class Driver(metaclass=abc.ABCMeta):
    """One way of running an NF at an LLC allocation and a load."""

    name = None

    def __init__(self, conf, nf, traffic):
        """Prepare to measure ``nf``.

        :param conf: an oslo.config ``ConfigOpts`` with [resq_profiler].
        :param nf: the NF name.
        :param traffic: a :class:`resq_profiler.nfmodel.Traffic`.
        """
        self.conf = conf
        self.nf = nf
        self.traffic = traffic

    @abc.abstractmethod
    def platform(self):
        """``{'llc_ways', 'way_size_bytes', 'cpu_model'}`` measured on."""

    def way_range(self):
        """The allocations this driver can measure, smallest first."""
        return list(range(1, self.platform()['llc_ways'] + 1))

    @abc.abstractmethod
    def throughput(self, ways):
        """Saturation throughput (Mpps) alone with ``ways`` LLC ways."""

    @abc.abstractmethod
    def latency(self, ways, load_fraction, peak_mpps):
        """p95 latency (µs) at ``load_fraction`` of ``peak_mpps``."""

    def saturate(self, ways):
        """One saturating run: ``(Mpps, p95 µs at full load or None)``.

        A driver whose saturating run also reports the latency returns it,
        and the profiler uses it as the latency curve's full-load point
        instead of measuring it again. The default measures throughput only.
        """
        return self.throughput(ways), None

    def contention_run(self, competitors, with_nf=True, ways=None):
        """One run next to synthetic competitors, with counter readings.

        What SLOMO's training measures (:mod:`resq_profiler.slomo`): the
        NF saturated on its core while each competitor streams over its
        buffer (and does packet I/O, if it has a packet rate) on a core of
        its own, all in one class of service of ``ways`` ways, and every
        core's counters (:class:`resq_profiler.truth.Counters`).

        :param competitors: :class:`resq_profiler.truth.Synthetic` objects.
        :param with_nf: ``False`` runs the competitors alone (to read their
            own counters).
        :param ways: ways of the class they all share, from the lowest way
            up; ``None`` is the whole LLC.
        :returns: ``(Mpps or None, NF counters or None, [competitor
            counters])``.
        :raises resq_profiler.exception.MeasurementError: when the driver
            cannot run competitors.
        """
        raise exception.MeasurementError(
            reason='the %r profiling driver cannot run synthetic competitors '
            'with counter readings, which SLOMO training needs; train with '
            'the model driver or the command driver (with [resq_profiler] '
            'contention_command), see doc/source/admin/slomo.rst'
            % self.name)

    def check_class_ways(self, ways):
        """``ways`` checked against the platform (``None``: all ways).

        :raises resq_profiler.exception.MeasurementError: when the platform
            cannot have a class of that many ways.
        """
        allowed = self.way_range()
        if ways is None:
            return allowed[-1]
        if isinstance(ways, bool) or not isinstance(ways, int) or not (
                allowed[0] <= ways <= allowed[-1]):
            raise exception.MeasurementError(
                reason='a contention run needs a class of %d to %d ways on '
                'this platform, got %r' % (allowed[0], allowed[-1], ways))
        return ways

    def close(self):
        """Release whatever the driver holds (groups, processes)."""


def load(name, conf, nf, traffic):
    """Instantiate driver ``name``.

    :raises resq_profiler.exception.MeasurementError: for unknown names.
    """
    try:
        mgr = stevedore_driver.DriverManager(
            NAMESPACE, name, invoke_on_load=True,
            invoke_args=(conf, nf, traffic))
    except stevedore_driver.NoMatches:
        raise exception.MeasurementError(
            reason='unknown profiling driver %r; choose one of: %s'
            % (name, ', '.join(available())))
    return mgr.driver


def available():
    from stevedore import extension
    return sorted(extension.ExtensionManager(NAMESPACE).names())
