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
"""Cache occupancy and memory bandwidth of the instances' groups (CMT/MBM).

The kernel keeps, in every control group, ``mon_data/mon_L3_<id>/``
with ``llc_occupancy`` (bytes now) and ``mbm_total_bytes`` /
``mbm_local_bytes`` (byte counters since the group was made). Bandwidth is
the counter's increase over the time between two readings; the first
reading of a group has no bandwidth yet.

A monitoring group (``<group>/mon_groups/<mon>/``, :meth:`Monitor.sample`
with ``mon``) has the same files for the CPUs it was given: the on-demand
host gives every NF sharing a class of service one, so each NF's own
occupancy and bandwidth are known; a control group's counters include its
monitoring groups'.
"""

import os
import time

from resq_common import resctrl

FILES = ('llc_occupancy', 'mbm_total_bytes', 'mbm_local_bytes')
_CHUNK = 4096


def _read_text(path):
    """The text of a small file, as ``open(path).read()`` gives it.

    Through the file descriptor: a /metrics scrape reads three counters
    per domain of every instance, and a buffered text file object costs
    more to make than the read.
    """
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks = []
        while True:
            chunk = os.read(fd, _CHUNK)
            chunks.append(chunk)
            # A short read of a file (or of a kernfs one) is its end: a
            # counter takes one read, not a second that finds nothing.
            if len(chunk) < _CHUNK:
                break
    finally:
        os.close(fd)
    return b''.join(chunks).decode()


class Monitor:
    """Reads monitoring data of ``resq-`` groups under ``root``."""

    def __init__(self, root, min_interval_s=0.5, clock=time.monotonic):
        self.root = os.path.abspath(root)
        self.min_interval_s = min_interval_s
        self.clock = clock
        # {group: (time, {domain: {file: value}}, {domain: rates})}
        self._last = {}

    def read(self, group, mon=None):
        """``{domain id: {file: int}}`` of the counters the kernel has.

        :param mon: a monitoring group of ``group``: its counters.
        """
        base = os.path.join(self.root, resctrl.check_group_name(group))
        if mon is not None:
            base = os.path.join(base, resctrl.MON_GROUPS,
                                resctrl.check_group_name(mon))
        base = os.path.join(base, 'mon_data')
        result = {}
        try:
            names = sorted(os.listdir(base))
        except OSError:
            return result
        for name in names:
            if not name.startswith('mon_L3_'):
                continue
            values = {}
            domain = base + os.sep + name + os.sep
            for fname in FILES:
                try:
                    text = _read_text(domain + fname).strip()
                except OSError:
                    continue
                # "Unavailable" or "Error" when the RMID was recycled.
                if text.isdigit():
                    values[fname] = int(text)
            result[int(name[len('mon_L3_'):])] = values
        return result

    def sample(self, group, mon=None):
        """Occupancy and bandwidth of a group, summed over its domains.

        :param mon: a monitoring group of ``group``: its own figures.

        :returns: ``{'llc_occupancy_bytes', 'mbm_total_bytes_per_s',
            'mbm_local_bytes_per_s', 'per_domain'}``; rates are None until
            two readings exist.
        """
        now = self.clock()
        counters = self.read(group, mon)
        key = self.key(group, mon)
        last = self._last.get(key)
        if last is not None and (now - last[0] < self.min_interval_s
                                 or now <= last[0]):
            rates = last[2]
            now, counters_base = last[0], last[1]
        else:
            rates = {}
            for dom, values in counters.items():
                prev = last[1].get(dom, {}) if last else {}
                rates[dom] = {}
                for fname in ('mbm_total_bytes', 'mbm_local_bytes'):
                    if (last and fname in values and fname in prev
                            and values[fname] >= prev[fname]):
                        rates[dom][fname] = ((values[fname] - prev[fname])
                                             / (now - last[0]))
            counters_base = counters
            self._last[key] = (now, counters_base, rates)

        def total(fname, table):
            vals = [v[fname] for v in table.values() if fname in v]
            return sum(vals) if vals else None

        return {
            'llc_occupancy_bytes': total('llc_occupancy', counters),
            'mbm_total_bytes_per_s': total('mbm_total_bytes', rates),
            'mbm_local_bytes_per_s': total('mbm_local_bytes', rates),
            'per_domain': {str(d): dict(v, **{
                k + '_per_s': r for k, r in rates.get(d, {}).items()})
                for d, v in counters.items()},
        }

    @staticmethod
    def key(group, mon=None):
        """How a group's (or its monitoring group's) history is kept."""
        return group if mon is None else (group, mon)

    def forget(self, keep):
        """Drop the history of groups not in ``keep``.

        A monitoring group's key is ``(group, mon)``.
        """
        for group in list(self._last):
            if group not in keep:
                del self._last[group]
