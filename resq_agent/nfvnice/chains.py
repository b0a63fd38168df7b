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
"""Service chains the agent applies backpressure to: a JSON file.

``[resq_agent] nfvnice_chains_file`` names it; the agent reads it again
whenever it changes, so operators (or an orchestrator) edit it while the
agent runs. Example::

    {"chains": [
       {"name": "edge-fw-nat",
        "entry_port": "dpdk0",
        "match": "dl_vlan=101",
        "instances": [
          {"uuid": "6f3c1a9e-...-0a01", "cycles_per_packet": 400,
           "priority": 2},
          "6f3c1a9e-...-0a02"]},
       {"name": "ids-only", "entry_port": "vhu-upstream",
        "instances": ["6f3c1a9e-...-0a03"]}]}

* ``name``: unique; written to ``external_ids:resq_policed`` of the entry
  port while the chain is throttled.
* ``entry_port``: the Open vSwitch interface where the chain's traffic
  enters the switch (a physical DPDK port, or the vhost-user port of the
  NF feeding the chain); backpressure polices traffic received there.
* ``instances``: the chain's NFs in order, Nova instance UUIDs, each
  optionally with ``cycles_per_packet``, its cost per packet, which the
  CPU shares use (from the NF's profile or a measurement; without one the
  NFs of a group count as equally costly). A chain of one NF is how an
  on-demand NF is policed when its demand exceeds what it can be given.
* ``max_kbps`` (optional): a cap on the chain's input (ResQ polices an
  on-demand NF's input at a user-specified cap); the entry is always
  policed at it, and backpressure only ever polices lower.
* ``match`` (optional): the OpenFlow match of the chain's own packets at
  its entry port (e.g. ``"dl_vlan=101"`` or ``"ip,nw_dst=10.1.0.0/16"``).
  With ``[resq_agent] nfvnice_bridge`` the chain gets its own meter
  (:mod:`resq_agent.nfvnice.openflow`): its entry rate is counted and
  backpressure throttles its packets only. Without a match the whole
  entry port is policed, every chain entering there with it.
* an instance's ``priority`` (optional, default 1): NFVnice's per-NF
  priority; it multiplies the NF's CPU share.
"""

import dataclasses
import math
import os

from oslo_utils import uuidutils

from resq_agent.nfvnice import openflow
from resq_common import exception
from resq_common import jsonutils


class InvalidChains(exception.ResQException):
    msg_fmt = ('Invalid chains file %(path)s: %(field)s: %(reason)s. Fix '
               'the file; until then the agent sets no new policers and '
               'keeps those in place (CPU shares keep working without the '
               'file\'s costs).')


@dataclasses.dataclass(frozen=True)
class Chain:
    name: str
    entry_port: str
    instances: tuple         # UUIDs, upstream first
    max_kbps: int = None     # the tenant's cap, always policed
    match: str = None        # OpenFlow match of the chain's packets


@dataclasses.dataclass(frozen=True)
class ChainSet:
    chains: tuple = ()
    costs: dict = dataclasses.field(default_factory=dict)   # uuid -> cycles
    priorities: dict = dataclasses.field(default_factory=dict)  # uuid -> p
    policed: bool = True     # backpressure decides; else caps only


def parse(doc, path='<memory>'):
    """A :class:`ChainSet` from a decoded document.

    :raises InvalidChains: naming the field that is wrong.
    """
    def bad(field, reason):
        return InvalidChains(path=path, field=field, reason=reason)

    if not isinstance(doc, dict) or not isinstance(doc.get('chains'), list):
        raise bad('chains', 'the document must be an object with a list '
                  '"chains"')
    chains, costs, priorities, names = [], {}, {}, set()
    for i, entry in enumerate(doc['chains']):
        where = 'chains[%d]' % i
        if not isinstance(entry, dict):
            raise bad(where, 'must be an object with name, entry_port and '
                      'instances')
        name = entry.get('name')
        if not isinstance(name, str) or not name.strip():
            raise bad(where + '.name', 'must be a non-empty string')
        if name in names:
            raise bad(where + '.name', 'chain %r is defined twice; names '
                      'must be unique' % name)
        names.add(name)
        port = entry.get('entry_port')
        if not isinstance(port, str) or not port.strip():
            raise bad(where + '.entry_port', 'must be the name of an Open '
                      'vSwitch interface (ovs-vsctl list-ifaces BRIDGE)')
        members = entry.get('instances')
        if not isinstance(members, list) or not members:
            raise bad(where + '.instances', 'must be a non-empty list of '
                      'Nova instance UUIDs, upstream first')
        uuids = []
        for j, member in enumerate(members):
            field = '%s.instances[%d]' % (where, j)
            cost = priority = None
            if isinstance(member, dict):
                uuid = member.get('uuid')
                cost = member.get('cycles_per_packet')
                if cost is not None and not _positive(cost):
                    raise bad(field + '.cycles_per_packet', 'must be a '
                              'positive number of CPU cycles, got %r' % cost)
                priority = member.get('priority')
                if priority is not None and not _positive(priority):
                    raise bad(field + '.priority', 'must be a positive '
                              'number (1 is the default; 2 gets twice the '
                              'CPU at the same load), got %r' % (priority,))
            else:
                uuid = member
            if not isinstance(uuid, str) or not uuidutils.is_uuid_like(uuid):
                raise bad(field, 'must be a Nova instance UUID (or an '
                          'object with "uuid"), got %r' % (uuid,))
            uuid = uuid.lower()
            if uuid in uuids:
                raise bad(field, 'instance %s appears twice in the chain'
                          % uuid)
            uuids.append(uuid)
            if cost is not None:
                if uuid in costs and costs[uuid] != cost:
                    raise bad(field + '.cycles_per_packet', 'instance %s '
                              'has cost %r in another chain; give one '
                              'cost per NF' % (uuid, costs[uuid]))
                costs[uuid] = float(cost)
            if priority is not None:
                if priorities.get(uuid, priority) != priority:
                    raise bad(field + '.priority', 'instance %s has priority '
                              '%r in another chain; give one priority per '
                              'NF' % (uuid, priorities[uuid]))
                priorities[uuid] = float(priority)
        cap = entry.get('max_kbps')
        if cap is not None and (isinstance(cap, bool)
                                or not isinstance(cap, int) or cap <= 0):
            raise bad(where + '.max_kbps', 'must be a positive whole number '
                      'of kbit/s (or left out for no cap), got %r' % (cap,))
        match = entry.get('match')
        if match is not None:
            try:
                match = openflow.check_match(match)
            except openflow.InvalidMatch as exc:
                raise bad(where + '.match', str(exc))
        chains.append(Chain(name, port, tuple(uuids), cap, match))
    return ChainSet(tuple(chains), costs, priorities)


def _positive(value):
    return (not isinstance(value, bool) and isinstance(value, (int, float))
            and math.isfinite(value) and value > 0)


class ChainFile:
    """The chains file, read again when its modification time changes."""

    def __init__(self, path):
        self.path = path
        self._stamp = None
        self._chains = ChainSet()
        self.error = None

    def load(self):
        """The current :class:`ChainSet`.

        :raises InvalidChains: when the file is unreadable or invalid (its
            previous content is not used any more either: the operator
            changed it, the old chains may be wrong now).
        """
        if not self.path:
            return ChainSet()
        try:
            st = os.stat(self.path)
        except OSError as exc:
            self._stamp, self._chains = None, ChainSet()
            raise InvalidChains(path=self.path, field='(file)',
                                reason='cannot be read (%s); create it or '
                                'unset nfvnice_chains_file' % exc.strerror)
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        if stamp == self._stamp and self.error is None:
            return self._chains
        try:
            with open(self.path) as f:
                doc = jsonutils.load(f)
        except (OSError, ValueError) as exc:
            self.error = str(exc)
            raise InvalidChains(path=self.path, field='(file)',
                                reason='is not valid JSON (%s)' % exc)
        try:
            self._chains = parse(doc, self.path)
        except InvalidChains as exc:
            self.error = str(exc)
            raise
        self._stamp, self.error = stamp, None
        return self._chains
