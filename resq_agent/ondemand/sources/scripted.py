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
"""The ``scripted`` latency source: a test double that replays a script.

The script is a JSON file (``[resq_agent] ondemand_latency_script``) or a
dict given to the constructor: ``{"<instance uuid>": [step, ...]}``, where
each call of :meth:`sample` for that instance plays the next step: a number
(one sample of that many µs at the current time), a list of numbers (that
many samples), ``null`` (nothing: the NF went silent), or a string (the
source fails with that reason). The last step repeats. Numbers may be
negative or ``NaN`` on purpose: the checks must catch them. For tests and
for hosts without real NFs (devstack), never for production.
"""

import time

from resq_agent.ondemand import latency
from resq_common import jsonutils


class ScriptedSource(latency.LatencySource):

    name = 'scripted'

    def __init__(self, conf=None, script=None, clock=time.time):
        super().__init__(conf)
        if script is None:
            path = conf.resq_agent.ondemand_latency_script
            if not path:
                raise ValueError('the scripted latency source needs '
                                 '[resq_agent] ondemand_latency_script')
            script = jsonutils.loads(jsonutils.read_text(path, 1024 * 1024))
        self.script = {k.lower(): (v if isinstance(v, list) else [v])
                       for k, v in script.items()}
        self.clock = clock
        self.calls = {}

    def sample(self, instance_uuid):
        steps = self.script.get(instance_uuid, [None])
        i = self.calls.get(instance_uuid, 0)
        self.calls[instance_uuid] = i + 1
        step = steps[min(i, len(steps) - 1)]
        if isinstance(step, str):
            raise latency.SourceFailed(source=self.name, uuid=instance_uuid,
                                       reason=step)
        if step is None:
            return []
        now = self.clock()
        values = step if isinstance(step, list) else [step]
        return [latency.Sample(now, float(v)) for v in values]
