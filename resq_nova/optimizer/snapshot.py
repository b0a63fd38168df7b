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
"""The snapshot document: what the optimizer plans from. Pure.

::

    {"hosts": [{"name", "clos", "disabled", "domains": [
                  {"id", "cores", "ways", "reserved_ways"}]}],
     "instances": [{"uuid", "host", "domain", "cores", "ways", "clos",
                    "migratable"}],
     "server_groups": [{"policy", "members": [uuid, ...]}]}

``cores`` and ``ways`` of a domain are what ResQ instances may use there
(dedicated cores of the NUMA cell less those non-ResQ instances pin; the
LLC ways less the reserved ones, which ``reserved_ways`` records); ``clos``
of a host is how many classes of service its ResQ instances may hold.

Optional keys: a host's ``down`` (its compute service does not answer:
nothing moves to or from it), ``az`` (availability zone), ``other_load``
(non-ResQ instances: the host stays in use), ``uuid`` (compute node
provider) and a domain's ``provider``; an instance's ``az`` (the zone it is
pinned to), ``reason`` (why it cannot move) and ``name``; a group's ``id``.
"""

import dataclasses
import json

from resq_common import exception

HARD_POLICIES = ('affinity', 'anti-affinity')
SOFT_POLICIES = ('soft-affinity', 'soft-anti-affinity')


class SnapshotError(exception.ResQException):
    msg_fmt = 'snapshot %(source)s: %(reason)s'


@dataclasses.dataclass
class Domain:
    id: int
    cores: int
    ways: int
    reserved_ways: int = 0
    provider: str = None
    # Classes of service Placement offers in this domain (None: only the
    # host's count applies).
    clos: int = None


@dataclasses.dataclass
class Host:
    name: str
    clos: int
    domains: list
    disabled: bool = False
    down: bool = False
    az: str = None
    other_load: int = 0
    uuid: str = None

    def domain(self, domain_id):
        for dom in self.domains:
            if dom.id == domain_id:
                return dom
        return None

    @property
    def accepts(self):
        """Whether instances may move here."""
        return not (self.disabled or self.down)


@dataclasses.dataclass
class Instance:
    uuid: str
    host: str
    domain: int
    cores: int
    ways: int
    clos: int = 1
    migratable: bool = True
    az: str = None
    reason: str = None
    name: str = None


@dataclasses.dataclass
class ServerGroup:
    policy: str
    members: list
    id: str = None


@dataclasses.dataclass
class Snapshot:
    hosts: list
    instances: list
    server_groups: list
    source: str = '<memory>'
    taken_at: str = None

    def host(self, name):
        return self._hosts.get(name)

    def __post_init__(self):
        self._hosts = {h.name: h for h in self.hosts}

    def instance(self, uuid):
        for inst in self.instances:
            if inst.uuid == uuid:
                return inst
        return None

    def hosts_in_use(self):
        """Hosts holding any instance, ResQ or not."""
        used = {i.host for i in self.instances}
        return {h.name for h in self.hosts
                if h.name in used or h.other_load}

    def to_dict(self):
        doc = {'hosts': [], 'instances': [], 'server_groups': []}
        if self.taken_at:
            doc['taken_at'] = self.taken_at
        for h in self.hosts:
            host = {'name': h.name, 'clos': h.clos, 'disabled': h.disabled,
                    'down': h.down, 'az': h.az, 'other_load': h.other_load,
                    'domains': [_domain_dict(d) for d in h.domains]}
            if h.uuid:
                host['uuid'] = h.uuid
            doc['hosts'].append(host)
        for i in self.instances:
            inst = dataclasses.asdict(i)
            doc['instances'].append({k: v for k, v in inst.items()
                                     if v is not None})
        for g in self.server_groups:
            group = {'policy': g.policy, 'members': list(g.members)}
            if g.id:
                group['id'] = g.id
            doc['server_groups'].append(group)
        return doc


def _domain_dict(dom):
    doc = {'id': dom.id, 'cores': dom.cores, 'ways': dom.ways,
           'reserved_ways': dom.reserved_ways}
    if dom.provider:
        doc['provider'] = dom.provider
    if dom.clos is not None:
        doc['clos'] = dom.clos
    return doc


# -- reading ------------------------------------------------------------------

def load(path):
    """Read and validate a snapshot file.

    :raises SnapshotError: naming the file and what is wrong in it.
    """
    try:
        with open(path, encoding='utf-8') as f:
            text = f.read()
    except OSError as exc:
        raise SnapshotError(source=path, reason='cannot be read (%s)'
                            % exc.strerror)
    return loads(text, path)


def loads(text, source='<memory>'):
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise SnapshotError(source=source, reason='is not JSON (%s)' % exc)
    except RecursionError:
        raise SnapshotError(source=source, reason='is nested too deeply '
                            'to be a snapshot')
    return from_dict(doc, source)


class _Reader:
    def __init__(self, source):
        self.source = source

    def fail(self, where, reason):
        raise SnapshotError(source=self.source, reason='%s: %s'
                            % (where, reason))

    def obj(self, value, where, required, optional=()):
        if not isinstance(value, dict):
            self.fail(where, 'must be an object, got %s'
                      % type(value).__name__)
        missing = [k for k in required if k not in value]
        if missing:
            self.fail(where, 'lacks %s (a %s has %s)' % (
                ', '.join(repr(k) for k in missing), where.split('[')[0],
                ', '.join(required)))
        return value

    def list(self, value, where):
        if not isinstance(value, list):
            self.fail(where, 'must be a list, got %s'
                      % type(value).__name__)
        return value

    def int(self, value, where, minimum=0):
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(where, 'must be an integer, got %r' % (value,))
        if value < minimum:
            self.fail(where, 'must be at least %d, got %d'
                      % (minimum, value))
        return value

    def bool(self, value, where):
        if not isinstance(value, bool):
            self.fail(where, 'must be true or false, got %r' % (value,))
        return value

    def str(self, value, where, allow_none=False):
        if value is None and allow_none:
            return None
        if not isinstance(value, str) or not value:
            self.fail(where, 'must be a non-empty string, got %r'
                      % (value,))
        return value


def from_dict(doc, source='<memory>'):
    """Validate a snapshot document; :raises SnapshotError:"""
    r = _Reader(source)
    r.obj(doc, 'the document', ('hosts', 'instances', 'server_groups'))
    hosts = []
    names = set()
    for n, h in enumerate(r.list(doc['hosts'], 'hosts')):
        where = 'hosts[%d]' % n
        r.obj(h, where, ('name', 'clos', 'disabled', 'domains'))
        name = r.str(h['name'], where + '.name')
        if name in names:
            r.fail(where, 'host %s is listed twice' % name)
        names.add(name)
        domains = []
        for m, d in enumerate(r.list(h['domains'], where + '.domains')):
            dw = '%s.domains[%d]' % (where, m)
            r.obj(d, dw, ('id', 'cores', 'ways', 'reserved_ways'))
            dom = Domain(id=r.int(d['id'], dw + '.id'),
                         cores=r.int(d['cores'], dw + '.cores'),
                         ways=r.int(d['ways'], dw + '.ways'),
                         reserved_ways=r.int(d['reserved_ways'],
                                             dw + '.reserved_ways'),
                         provider=r.str(d.get('provider'), dw + '.provider',
                                        allow_none=True),
                         clos=(r.int(d['clos'], dw + '.clos')
                               if d.get('clos') is not None else None))
            if any(x.id == dom.id for x in domains):
                r.fail(dw, 'host %s lists domain %d twice' % (name, dom.id))
            domains.append(dom)
        hosts.append(Host(
            name=name, clos=r.int(h['clos'], where + '.clos'),
            domains=domains,
            disabled=r.bool(h['disabled'], where + '.disabled'),
            down=r.bool(h.get('down', False), where + '.down'),
            az=r.str(h.get('az'), where + '.az', allow_none=True),
            other_load=r.int(h.get('other_load', 0), where + '.other_load'),
            uuid=r.str(h.get('uuid'), where + '.uuid', allow_none=True)))
    by_name = {h.name: h for h in hosts}
    instances = []
    seen = set()
    for n, i in enumerate(r.list(doc['instances'], 'instances')):
        where = 'instances[%d]' % n
        r.obj(i, where, ('uuid', 'host', 'domain', 'cores', 'ways', 'clos',
                         'migratable'))
        inst = Instance(
            uuid=r.str(i['uuid'], where + '.uuid'),
            host=r.str(i['host'], where + '.host'),
            domain=r.int(i['domain'], where + '.domain'),
            cores=r.int(i['cores'], where + '.cores', 1),
            ways=r.int(i['ways'], where + '.ways', 1),
            clos=r.int(i['clos'], where + '.clos'),
            migratable=r.bool(i['migratable'], where + '.migratable'),
            az=r.str(i.get('az'), where + '.az', allow_none=True),
            reason=i.get('reason'), name=i.get('name'))
        if inst.uuid in seen:
            r.fail(where, 'instance %s is listed twice' % inst.uuid)
        seen.add(inst.uuid)
        host = by_name.get(inst.host)
        if host is None:
            r.fail(where, 'instance %s is on host %r, which the snapshot '
                   'does not list; add the host or remove the instance'
                   % (inst.uuid, inst.host))
        if host.domain(inst.domain) is None:
            r.fail(where, 'instance %s is in cache domain %d of %s, which '
                   'has domains %s' % (inst.uuid, inst.domain, inst.host,
                                       [d.id for d in host.domains]))
        instances.append(inst)
    groups = []
    for n, g in enumerate(r.list(doc['server_groups'], 'server_groups')):
        where = 'server_groups[%d]' % n
        r.obj(g, where, ('policy', 'members'))
        policy = r.str(g['policy'], where + '.policy')
        if policy not in HARD_POLICIES + SOFT_POLICIES:
            r.fail(where, 'unknown policy %r; Nova\'s are %s'
                   % (policy, ', '.join(HARD_POLICIES + SOFT_POLICIES)))
        members = [r.str(m, '%s.members[%d]' % (where, k))
                   for k, m in enumerate(r.list(g['members'],
                                                where + '.members'))]
        groups.append(ServerGroup(policy, members,
                                  r.str(g.get('id'), where + '.id',
                                        allow_none=True)))
    snap = Snapshot(hosts, instances, groups, source,
                    doc.get('taken_at'))
    check_capacity(snap)
    return snap


def usage(snap):
    """``({(host, domain): [cores, ways, clos]}, {host: clos})`` in use."""
    dom_use = {}
    clos_use = {}
    for inst in snap.instances:
        use = dom_use.setdefault((inst.host, inst.domain), [0, 0, 0])
        use[0] += inst.cores
        use[1] += inst.ways
        use[2] += inst.clos
        clos_use[inst.host] = clos_use.get(inst.host, 0) + inst.clos
    return dom_use, clos_use


def check_capacity(snap):
    """:raises SnapshotError: when a domain or host is over-committed."""
    dom_use, clos_use = usage(snap)
    for (host_name, dom_id), (cores, ways, clos) in sorted(dom_use.items()):
        dom = snap.host(host_name).domain(dom_id)
        for what, used, cap in (('cores', cores, dom.cores),
                                ('ways', ways, dom.ways),
                                ('classes of service', clos, dom.clos)):
            if cap is not None and used > cap:
                raise SnapshotError(
                    source=snap.source, reason='cache domain %d of %s is '
                    'already over-committed: its instances use %d %s of %d; '
                    'the optimizer plans from a consistent state only (check '
                    'the allocations in Placement)'
                    % (dom_id, host_name, used, what, cap))
    for host_name, used in sorted(clos_use.items()):
        host = snap.host(host_name)
        if used > host.clos:
            raise SnapshotError(
                source=snap.source, reason='host %s is already '
                'over-committed: its instances hold %d classes of service '
                'of %d' % (host_name, used, host.clos))
    by_uuid = {i.uuid: i for i in snap.instances}
    for g in snap.server_groups:
        if g.policy != 'anti-affinity':
            continue
        hosts = [by_uuid[m].host for m in g.members if m in by_uuid]
        if len(hosts) != len(set(hosts)):
            raise SnapshotError(
                source=snap.source, reason='anti-affinity group %s already '
                'has two members on one host (%s)'
                % (g.id or g.members, ', '.join(sorted(
                    {h for h in hosts if hosts.count(h) > 1}))))
