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
"""The ``jsonlines`` latency source: one file per instance that the NF feeds.

An on-demand NF (or a sidecar that measures it) appends one JSON object a
line to ``<ondemand_latency_dir>/<instance uuid>.jsonl``::

    {"time": 1732372800.5, "latency_us": 41.7}
    {"time": 1732372801.5, "latency_us": 39.2, "load": 0.83, "mpps": 1.2}

``time`` is Unix seconds, ``latency_us`` the latency the target is about
(the p95 of the last interval, say), ``load`` optionally the CPU
utilisation in [0, 1], ``mpps`` optionally the rate offered to the NF
(with a SLOMO model, the scheduler predicts whether the NF keeps up with
it in a shared class). The agent reads only the lines added since its last
read and never more than ``MAX_READ`` bytes at a time (a flooding NF cannot
make the agent read without end); a file that shrank or was replaced is
read from its start. A line that is not a JSON object with those fields is
a failure of the source, reported with the line number, never skipped in
silence.
"""

import os

from resq_agent.ondemand import latency
from resq_common import jsonutils

MAX_READ = 1 << 20


class JsonLinesSource(latency.LatencySource):

    name = 'jsonlines'

    def __init__(self, conf):
        super().__init__(conf)
        self.directory = conf.resq_agent.ondemand_latency_dir
        self._pos = {}     # uuid -> (inode, offset, line number)

    def path(self, uuid):
        if not uuid or '/' in uuid or uuid.startswith('.'):
            raise latency.SourceFailed(source=self.name, uuid=uuid,
                                       reason='not an instance UUID')
        return os.path.join(self.directory, '%s.jsonl' % uuid)

    def sample(self, instance_uuid):
        path = self.path(instance_uuid)
        try:
            f = open(path, 'rb')
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise latency.SourceFailed(source=self.name, uuid=instance_uuid,
                                       reason='cannot read %s: %s' % (
                                           path, exc.strerror))
        with f:
            st = os.fstat(f.fileno())
            inode, offset, lineno = self._pos.get(instance_uuid, (None, 0, 0))
            if inode != st.st_ino or st.st_size < offset:
                offset, lineno = 0, 0
            f.seek(offset)
            data = f.read(MAX_READ)
            more = f.read(1)
        if more:
            # A flood: skip what is there, so the next period starts on
            # fresh samples instead of an ever-growing backlog.
            self._pos[instance_uuid] = (st.st_ino, st.st_size, 0)
            raise latency.SourceFailed(
                source=self.name, uuid=instance_uuid,
                reason='more than %d bytes since the last read of %s: the '
                       'NF floods its source; the backlog is skipped' % (
                           MAX_READ, path))
        end = data.rfind(b'\n') + 1
        out = []
        for raw in data[:end].splitlines():
            lineno += 1
            if not raw.strip():
                continue
            try:
                doc = jsonutils.loads(raw.decode('utf-8'))
                out.append(latency.Sample(doc['time'], doc['latency_us'],
                                          doc.get('load'), doc.get('mpps')))
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                self._pos[instance_uuid] = (st.st_ino, offset + end, lineno)
                raise latency.SourceFailed(
                    source=self.name, uuid=instance_uuid,
                    reason='%s line %d is not {"time": <s>, "latency_us": '
                           '<µs>}: %s' % (path, lineno, exc))
        self._pos[instance_uuid] = (st.st_ino, offset + end, lineno)
        return out

    def forget(self, keep):
        for uuid in set(self._pos) - set(keep):
            del self._pos[uuid]
