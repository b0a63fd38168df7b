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
provider), ``cell`` (its Nova cell: nothing moves between cells) and
``resources`` (``{resource class: amount}`` ResQ instances may hold on the
compute node, e.g. ``MEMORY_MB``, ``DISK_GB``: what Placement offers less
what other consumers hold); a domain's ``provider``, ``clos``,
``memory_mb`` and ``hugepages_mb`` (the NUMA cell's small-page and
huge-page memory ResQ instances may use); an instance's ``az`` (the zone
it is pinned to), ``reason`` (why it cannot move), ``name``,
``resources`` (what it holds on the compute node), ``memory_mb`` and
``hugepages`` (whether that memory comes from the cell's huge pages); a
group's ``id``. A capacity that is absent is not limited.
"""

import collections
import dataclasses
import re

from resq_common import exception
from resq_common import jsonutils

HARD_POLICIES = ('affinity', 'anti-affinity')
RC_RE = re.compile(r'[A-Z0-9_]{1,255}')
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
    # Memory of the domain's NUMA cell ResQ instances may use, in small
    # pages and in huge pages (None: not limited).
    memory_mb: int = None
    hugepages_mb: int = None

    def numa_caps(self):
        """``{'memory_mb'|'hugepages_mb': MB}`` that limit this domain."""
        return {k: v for k, v in (('memory_mb', self.memory_mb),
                                  ('hugepages_mb', self.hugepages_mb))
                if v is not None}


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
    cell: str = None
    # {resource class: amount} ResQ instances may hold on the node.
    resources: dict = dataclasses.field(default_factory=dict)

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
    memory_mb: int = 0
    hugepages: bool = False
    # {resource class: amount} held on the compute node.
    resources: dict = dataclasses.field(default_factory=dict)

    def numa_need(self):
        """``{'memory_mb'|'hugepages_mb': MB}`` taken from its NUMA cell."""
        if not self.memory_mb:
            return {}
        return {'hugepages_mb' if self.hugepages else 'memory_mb':
                self.memory_mb}


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

    def forced_open(self, fixed=()):
        """Hosts no plan can empty: other load, or an instance in ``fixed``.

        :param fixed: uuids of instances that stay where they are.
        """
        forced = {h.name for h in self.hosts if h.other_load}
        forced.update(i.host for i in self.instances if i.uuid in fixed)
        return forced

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
            if h.cell:
                host['cell'] = h.cell
            if h.resources:
                host['resources'] = dict(h.resources)
            doc['hosts'].append(host)
        for i in self.instances:
            inst = dataclasses.asdict(i)
            doc['instances'].append({
                k: v for k, v in inst.items() if v is not None
                and not (k in ('memory_mb', 'hugepages', 'resources')
                         and not v)})
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
    for key in ('clos', 'memory_mb', 'hugepages_mb'):
        if getattr(dom, key) is not None:
            doc[key] = getattr(dom, key)
    return doc


# -- reading ------------------------------------------------------------------

def load(path):
    """Read and validate a snapshot file.

    :raises SnapshotError: naming the file and what is wrong in it.
    """
    try:
        text = jsonutils.read_text(path)
    except OSError as exc:
        raise SnapshotError(source=path, reason='cannot be read (%s)'
                            % exc.strerror)
    except ValueError as exc:
        raise SnapshotError(source=path, reason=str(exc))
    return loads(text, path)


def loads(text, source='<memory>'):
    try:
        doc = jsonutils.loads(text)
    except ValueError as exc:
        raise SnapshotError(source=source, reason='is not JSON (%s)' % exc)
    except RecursionError:
        raise SnapshotError(source=source, reason='is nested too deeply '
                            'to be a snapshot')
    return from_dict(doc, source)


class _Reader:
    def __init__(self, source):
        self.source = source

    def fail(self, where, reason, field=None):
        # (``field``: the key under ``where``, joined only on failure: a
        # snapshot of 500,000 instances reads 6 million fields.)
        if field is not None:
            where = '%s.%s' % (where, field)
        raise SnapshotError(source=self.source, reason='%s: %s'
                            % (where, reason))

    def obj(self, value, where, required, optional=()):
        if not isinstance(value, dict):
            self.fail(where, 'must be an object, got %s'
                      % type(value).__name__)
        missing = [k for k in required if k not in value]
        if missing:
            self.fail(where, 'lacks %s (it needs %s)' % (
                ', '.join(repr(k) for k in missing), ', '.join(required)))
        return value

    def list(self, value, where):
        if not isinstance(value, list):
            self.fail(where, 'must be a list, got %s'
                      % type(value).__name__)
        return value

    def int(self, value, where, minimum=0, field=None):
        if type(value) is not int:
            if isinstance(value, bool) or not isinstance(value, int):
                self.fail(where, 'must be an integer, got %r' % (value,),
                          field)
        if value < minimum:
            self.fail(where, 'must be at least %d, got %d'
                      % (minimum, value), field)
        return value

    def bool(self, value, where, field=None):
        if not isinstance(value, bool):
            self.fail(where, 'must be true or false, got %r' % (value,),
                      field)
        return value

    def resources(self, value, where, field=None):
        """``{resource class: non-negative integer}``."""
        if value is None:
            return {}
        if field is not None:
            where = '%s.%s' % (where, field)
        self.obj(value, where, ())
        for rc, amount in value.items():
            if not RC_RE.fullmatch(rc):
                self.fail(where, '%r is not a resource class name (upper '
                          'case letters, digits and underscores)' % (rc,))
            self.int(amount, '%s.%s' % (where, rc))
        return dict(value)

    def opt_int(self, doc, key, where):
        return (self.int(doc[key], '%s.%s' % (where, key))
                if doc.get(key) is not None else None)

    def str(self, value, where, allow_none=False, field=None):
        if value is None and allow_none:
            return None
        if not isinstance(value, str) or not value:
            self.fail(where, 'must be a non-empty string, got %r'
                      % (value,), field)
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
                         clos=r.opt_int(d, 'clos', dw),
                         memory_mb=r.opt_int(d, 'memory_mb', dw),
                         hugepages_mb=r.opt_int(d, 'hugepages_mb', dw))
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
            uuid=r.str(h.get('uuid'), where + '.uuid', allow_none=True),
            cell=r.str(h.get('cell'), where + '.cell', allow_none=True),
            resources=r.resources(h.get('resources'),
                                  where + '.resources')))
    by_name = {h.name: h for h in hosts}
    instances = []
    seen = set()
    for n, i in enumerate(r.list(doc['instances'], 'instances')):
        where = 'instances[%d]' % n
        r.obj(i, where, ('uuid', 'host', 'domain', 'cores', 'ways', 'clos',
                         'migratable'))
        inst = Instance(
            uuid=r.str(i['uuid'], where, field='uuid'),
            host=r.str(i['host'], where, field='host'),
            domain=r.int(i['domain'], where, field='domain'),
            cores=r.int(i['cores'], where, 1, field='cores'),
            ways=r.int(i['ways'], where, 1, field='ways'),
            clos=r.int(i['clos'], where, field='clos'),
            migratable=r.bool(i['migratable'], where, field='migratable'),
            az=r.str(i.get('az'), where, allow_none=True, field='az'),
            reason=i.get('reason'), name=i.get('name'),
            memory_mb=r.int(i.get('memory_mb', 0), where,
                            field='memory_mb'),
            hugepages=r.bool(i.get('hugepages', False), where,
                             field='hugepages'),
            resources=r.resources(i.get('resources'), where,
                                  field='resources'))
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


def resource_usage(snap):
    """``({(host, domain): Counter(numa)}, {host: Counter(resources)})``."""
    numa = collections.defaultdict(collections.Counter)
    res = collections.defaultdict(collections.Counter)
    for inst in snap.instances:
        numa[inst.host, inst.domain].update(inst.numa_need())
        res[inst.host].update(inst.resources)
    return numa, res


def _over(snap, what):
    raise SnapshotError(
        source=snap.source, reason='%s; the optimizer plans from a '
        'consistent state only (check the allocations in Placement)' % what)


def check_capacity(snap):
    """:raises SnapshotError: when a domain or host is over-committed."""
    dom_use, clos_use = usage(snap)
    for (host_name, dom_id), (cores, ways, clos) in sorted(dom_use.items()):
        dom = snap.host(host_name).domain(dom_id)
        for what, used, cap in (('cores', cores, dom.cores),
                                ('ways', ways, dom.ways),
                                ('classes of service', clos, dom.clos)):
            if cap is not None and used > cap:
                _over(snap, 'cache domain %d of %s is already '
                      'over-committed: its instances use %d %s of %d'
                      % (dom_id, host_name, used, what, cap))
    for host_name, used in sorted(clos_use.items()):
        host = snap.host(host_name)
        if used > host.clos:
            _over(snap, 'host %s is already over-committed: its instances '
                  'hold %d classes of service of %d'
                  % (host_name, used, host.clos))
    numa_use, res_use = resource_usage(snap)
    # (In the snapshot's order: sorting half a million small tallies took
    # seconds.)
    for (host_name, dom_id), used in numa_use.items():
        caps = snap.host(host_name).domain(dom_id).numa_caps()
        for key, amount in used.items():
            if key in caps and amount > caps[key]:
                _over(snap, 'NUMA cell of cache domain %d of %s is already '
                      'over-committed: its instances use %d MB of %s of %d'
                      % (dom_id, host_name, amount, key, caps[key]))
    for host_name, used in res_use.items():
        caps = snap.host(host_name).resources
        for rc, amount in used.items():
            if rc in caps and amount > caps[rc]:
                _over(snap, 'host %s is already over-committed: its '
                      'instances hold %d %s of %d'
                      % (host_name, amount, rc, caps[rc]))
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


def cells(snap):
    """The snapshot per Nova cell: ``[(cell, Snapshot)]``, sorted.

    Nova never live-migrates an instance out of its cell, so each cell is
    planned on its own; a server group keeps only its members in the cell
    (members in other cells are on other hosts anyway).
    """
    names = sorted({h.cell for h in snap.hosts},
                   key=lambda c: (c is not None, c or ''))
    if len(names) <= 1:
        return [(names[0] if names else None, snap)]
    out = []
    for cell in names:
        hosts = [h for h in snap.hosts if h.cell == cell]
        in_cell = {h.name for h in hosts}
        insts = [i for i in snap.instances if i.host in in_cell]
        uuids = {i.uuid for i in insts}
        groups = []
        for g in snap.server_groups:
            members = [m for m in g.members if m in uuids]
            if members:
                groups.append(ServerGroup(g.policy, members, g.id))
        out.append((cell, Snapshot(hosts, insts, groups,
                                   '%s (cell %s)' % (snap.source, cell),
                                   snap.taken_at)))
    return out
