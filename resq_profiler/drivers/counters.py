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
"""Per-core counter readings of a contention run on a real host.

SLOMO's readings (:class:`resq_profiler.truth.Counters`) come from two
tools, whose outputs the contention command leaves in files:

* ``perf stat -x, -A -C <cores> -e LLC-loads,LLC-load-misses,LLC-stores,
  LLC-store-misses -o <perf_out>``: LLC references and misses per core
  (:func:`parse_perf`); the generic ``cache-references``/``cache-misses``
  events are taken when the LLC ones are not there;
* resctrl's monitoring data (CMT/MBM) of one monitoring group per core,
  ``mon_groups/cpu<N>`` under the profiler's group, read at the start and
  at the end of the window (:func:`parse_mon_data`)::

      # resq-contention mon_data start <unix time>
      cpu3/mon_data/mon_L3_00/llc_occupancy:1802240
      cpu3/mon_data/mon_L3_00/mbm_total_bytes:81264640
      # resq-contention mon_data end <unix time>
      cpu3/mon_data/mon_L3_00/llc_occupancy:2162688
      cpu3/mon_data/mon_L3_00/mbm_total_bytes:5290065920

  (what ``grep . cpu*/mon_data/mon_L3_*/{llc_occupancy,mbm_total_bytes}``
  prints in ``<group>/mon_groups``; ``pqos -I`` works on the same groups).
  Occupancy is the mean of the two snapshots, bandwidth the growth of
  ``mbm_total_bytes`` over the time between them.

The packet data DDIO writes for a core is its packet rate times the packet
size: the NF's measured throughput, a competitor's ordered rate, or what
the command prints as ``cpu<N>.io_bytes_per_s=<bytes/s>``.
"""

import math
import re

from resq_profiler import exception
from resq_profiler import truth

REF_EVENTS = (('LLC-loads', 'LLC-stores'), ('cache-references',))
MISS_EVENTS = (('LLC-load-misses', 'LLC-store-misses'), ('cache-misses',))
MON_FILES = ('llc_occupancy', 'mbm_total_bytes')
_MON_MARK = re.compile(r'^#\s*resq-contention mon_data (start|end)\s+'
                       r'([0-9.]+)\s*$')
_MON_LINE = re.compile(r'^(?:.*/)?cpu(\d+)/mon_data/mon_L3_(\d+)/'
                       r'(llc_occupancy|mbm_total_bytes):(.*)$')
_IO_LINE = re.compile(r'^\s*cpu(\d+)\.io_bytes_per_s\s*[=:]\s*'
                      r'([0-9.eE+-]+)\s*$', re.MULTILINE)


def _bad(what, why):
    return exception.MeasurementError(reason='%s: %s' % (what, why))


def parse_perf(text, source='perf output'):
    """``{cpu: {event: count}}`` from ``perf stat -x, -A`` output.

    :raises MeasurementError: when a count was not read (``<not
        counted>``, ``<not supported>``) or no per-CPU line is there.
    """
    out = {}
    for line in text.splitlines():
        if not line.strip() or line.startswith('#'):
            continue
        fields = line.split(',')
        if len(fields) < 4 or not fields[0].startswith('CPU'):
            continue
        try:
            cpu = int(fields[0][3:])
        except ValueError:
            continue
        value, event = fields[1].strip(), fields[3].strip()
        if value.startswith('<'):
            raise _bad(source, 'event %s on CPU %d was %s; check that the '
                       'core has it (perf list) and that no other tool '
                       'holds the counters' % (event, cpu, value))
        try:
            count = float(value)
        except ValueError:
            raise _bad(source, 'event %s on CPU %d has count %r, not a '
                       'number' % (event, cpu, value))
        out.setdefault(cpu, {})[event] = out.get(cpu, {}).get(
            event, 0.0) + count
    if not out:
        raise _bad(source, 'no per-CPU counts; run perf stat with -x, -A '
                   '-C <cores>')
    return out


def _events_sum(counts, choices, cpu, source):
    for names in choices:
        if all(n in counts for n in names):
            return sum(counts[n] for n in names)
    raise _bad(source, 'CPU %d has none of the events %s (found %s)' % (
        cpu, ' or '.join('+'.join(n) for n in choices),
        ', '.join(sorted(counts)) or 'none'))


def parse_mon_data(text, source='mon_data output'):
    """``(seconds, {cpu: (occupancy bytes, mbm bytes/s)})``.

    :raises MeasurementError: for a missing snapshot or reading, a value
        resctrl could not read (``Unavailable``), or a window of no time.
    """
    snaps = {}
    when = {}
    current = None
    for line in text.splitlines():
        mark = _MON_MARK.match(line.strip())
        if mark:
            current = mark.group(1)
            when[current] = float(mark.group(2))
            snaps[current] = {}
            continue
        m = _MON_LINE.match(line.strip())
        if not m or current is None:
            continue
        cpu, name, value = int(m.group(1)), m.group(3), m.group(4).strip()
        if not value.isdigit():
            raise _bad(source, 'cpu%d %s reads %r: resctrl could not '
                       'monitor it (too few RMIDs, or monitoring is off)'
                       % (cpu, name, value))
        reading = snaps[current].setdefault(cpu, {})
        # Domains (mon_L3_<nn>) of one core's group add up.
        reading[name] = reading.get(name, 0) + int(value)
    for mark in ('start', 'end'):
        if mark not in snaps:
            raise _bad(source, 'no "# resq-contention mon_data %s <time>" '
                       'snapshot' % mark)
    seconds = when['end'] - when['start']
    if not seconds > 0:
        raise _bad(source, 'the end snapshot is not after the start one')
    out = {}
    for cpu, end in snaps['end'].items():
        start = snaps['start'].get(cpu, {})
        missing = [n for n in MON_FILES if n not in end or n not in start]
        if missing:
            raise _bad(source, 'cpu%d lacks %s in a snapshot'
                       % (cpu, ', '.join(missing)))
        occupancy = (start['llc_occupancy'] + end['llc_occupancy']) / 2.0
        mbm = end['mbm_total_bytes'] - start['mbm_total_bytes']
        if mbm < 0:
            # The counter wrapped or the group was recreated.
            raise _bad(source, 'cpu%d mbm_total_bytes went down; measure '
                       'again' % cpu)
        out[cpu] = (occupancy, mbm / seconds)
    return seconds, out


def io_overrides(text):
    """``{cpu: io bytes/s}`` the command printed, if any."""
    return {int(cpu): float(v) for cpu, v in _IO_LINE.findall(text or '')}


def readings(perf_text, mon_text, io_by_cpu, cpus, seconds=None,
             sources=('perf output', 'mon_data output')):
    """One :class:`resq_profiler.truth.Counters` per core of ``cpus``.

    :param io_by_cpu: ``{cpu: packet bytes/s DDIO writes for it}``.
    :param seconds: the window perf counted over; default the time
        between the mon_data snapshots.
    """
    perf = parse_perf(perf_text, sources[0])
    window, mon = parse_mon_data(mon_text, sources[1])
    seconds = seconds or window
    out = []
    for cpu in cpus:
        if cpu not in perf:
            raise _bad(sources[0], 'no counts for CPU %d (cores: %s)' % (
                cpu, ', '.join(str(c) for c in sorted(perf))))
        if cpu not in mon:
            raise _bad(sources[1], 'no monitoring group cpu%d' % cpu)
        refs = _events_sum(perf[cpu], REF_EVENTS, cpu, sources[0])
        misses = _events_sum(perf[cpu], MISS_EVENTS, cpu, sources[0])
        occupancy, mbm = mon[cpu]
        io = io_by_cpu.get(cpu, 0.0)
        values = (refs / seconds, misses / seconds, occupancy, mbm, io)
        if not all(math.isfinite(v) and v >= 0 for v in values):
            raise _bad(sources[0], 'CPU %d read %r' % (cpu, values))
        out.append(truth.Counters(*values))
    return out
