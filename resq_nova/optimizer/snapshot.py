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
huge-page memory ResQ instances may use) and ``mem_bw_mibps`` (the memory
bandwidth, MiB/s, ResQ instances may hold there: Placement's
``CUSTOM_MEM_BW_MIBPS`` inventory less reserved less what other consumers
hold); an instance's ``az`` (the zone it is pinned to), ``reason`` (why it
cannot move), ``name``, ``resources`` (what it holds on the compute node),
``memory_mb`` and ``hugepages`` (whether that memory comes from the cell's
huge pages) and ``mem_bw_mibps`` (the memory bandwidth it holds from its
cache domain); a group's ``id``. A capacity that is absent is not limited.

Memory bandwidth is a second dimension of a cache domain, as its NUMA
memory is: :meth:`Domain.numa_caps` and :meth:`Instance.numa_need` carry
it beside the memory, so every planner (the MILP, the heuristics, the
bounds, the move ordering) that keeps a domain's memory also keeps its
bandwidth.
"""

import collections
import dataclasses
import operator
import re

from resq_common import exception
from resq_common import jsonutils
from resq_nova.optimizer import common

HARD_POLICIES = ('affinity', 'anti-affinity')
# The key of memory bandwidth (MiB/s) in a domain's and an instance's
# document, and in numa_caps() and numa_need().
MEM_BW = 'mem_bw_mibps'
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
    # Memory bandwidth (MiB/s) ResQ instances may hold here (None: not
    # limited).
    mem_bw_mibps: int = None

    def numa_caps(self):
        """What limits the domain besides cores, ways and classes.

        ``{'memory_mb'|'hugepages_mb': MB, 'mem_bw_mibps': MiB/s}``, the
        capacities that are limited only.
        """
        return {k: v for k, v in (('memory_mb', self.memory_mb),
                                  ('hugepages_mb', self.hugepages_mb),
                                  (MEM_BW, self.mem_bw_mibps))
                if v is not None}

    @property
    def limited(self):
        """Whether :meth:`numa_caps` has anything in it."""
        return (self.memory_mb is not None or self.hugepages_mb is not None
                or self.mem_bw_mibps is not None)


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
    # Memory bandwidth (MiB/s) held from its cache domain.
    mem_bw_mibps: int = 0
    # {resource class: amount} held on the compute node.
    resources: dict = dataclasses.field(default_factory=dict)

    def numa_need(self):
        """What it takes from its domain besides cores, ways and classes.

        ``{'memory_mb'|'hugepages_mb': MB, 'mem_bw_mibps': MiB/s}`` of
        its NUMA cell's memory and its domain's memory bandwidth (only
        what it needs: empty without either).
        """
        need = {}
        if self.memory_mb:
            need['hugepages_mb' if self.hugepages else 'memory_mb'] = \
                self.memory_mb
        if self.mem_bw_mibps:
            need[MEM_BW] = self.mem_bw_mibps
        return need


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

    def __reduce__(self):
        # (Pickled by columns: a cell goes to a planning process this way,
        # and 50,000 instances unpickled one object at a time took a
        # second there, most of it the garbage collector's.)
        return _unpack, (_pack(self),)

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
                and not (k in ('memory_mb', 'hugepages', 'resources',
                               MEM_BW) and not v)})
        for g in self.server_groups:
            group = {'policy': g.policy, 'members': list(g.members)}
            if g.id:
                group['id'] = g.id
            doc['server_groups'].append(group)
        return doc


# The fields _pack makes columns of, in the order of the dataclasses'
# arguments (a host's domains are its third, and resources are the last of
# a host and of an instance: _unpack puts them there).
_HOST_FIELDS = tuple(f.name for f in dataclasses.fields(Host)
                     if f.name not in ('domains', 'resources'))
_DOMAIN_FIELDS = tuple(f.name for f in dataclasses.fields(Domain))
_INST_FIELDS = tuple(f.name for f in dataclasses.fields(Instance)
                     if f.name != 'resources')


def _pack(snap):
    """``snap`` as columns of plain values (see Snapshot.__reduce__).

    Resources (``{class: amount}``), of which a cloud has few different
    ones, are a table and an index into it per host and instance.
    """
    table, index = [], {}

    def ref(res):
        key = tuple(sorted(res.items()))
        got = index.get(key)
        if got is None:
            got = index[key] = len(table)
            table.append(key)
        return got

    def columns(objs, fields):
        return [list(c) for c in zip(*map(operator.attrgetter(*fields),
                                          objs))] or [[] for _ in fields]

    dom = operator.attrgetter(*_DOMAIN_FIELDS)
    hosts = columns(snap.hosts, _HOST_FIELDS)
    hosts.append([ref(h.resources) for h in snap.hosts])
    hosts.append([tuple(map(dom, h.domains)) for h in snap.hosts])
    insts = columns(snap.instances, _INST_FIELDS)
    insts.append([ref(i.resources) for i in snap.instances])
    groups = [(g.policy, tuple(g.members), g.id) for g in snap.server_groups]
    return (hosts, insts, groups, table, snap.source, snap.taken_at)


def _unpack(packed):
    """The snapshot :func:`_pack` made columns of."""
    hosts, insts, groups, table, source, taken_at = packed
    with common.no_gc():
        *fields, res, doms = hosts
        host_list = [
            Host(*row[:2], [Domain(*d) for d in domains], *row[2:],
                 dict(table[r]))
            for *row, r, domains in zip(*fields, res, doms)]
        *fields, res = insts
        inst_list = [Instance(*row, dict(table[r]))
                     for *row, r in zip(*fields, res)]
        return Snapshot(host_list, inst_list,
                        [ServerGroup(p, list(m), i) for p, m, i in groups],
                        source, taken_at)


def _domain_dict(dom):
    doc = {'id': dom.id, 'cores': dom.cores, 'ways': dom.ways,
           'reserved_ways': dom.reserved_ways}
    if dom.provider:
        doc['provider'] = dom.provider
    for key in ('clos', 'memory_mb', 'hugepages_mb', MEM_BW):
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
    """Validate a snapshot document; :raises SnapshotError:

    Hosts and instances of the usual types take a fast path (a snapshot
    of 100,000 hosts holds half a million instances); anything else, and
    every error, goes through the field-by-field reader, so a document
    gets the same instances and the same error message either way. The
    cyclic garbage collector waits meanwhile (:func:`common.no_gc`).
    """
    with common.no_gc():
        return _from_dict(doc, source)


def _from_dict(doc, source):
    r = _Reader(source)
    r.obj(doc, 'the document', ('hosts', 'instances', 'server_groups'))
    hosts = []
    names = set()
    for n, h in enumerate(r.list(doc['hosts'], 'hosts')):
        host = _fast_host(h)
        if host is None or host.name in names:
            host = _read_host(r, h, n, names)
        names.add(host.name)
        hosts.append(host)
    instances, summed = _read_instances(
        r, r.list(doc['instances'], 'instances'), hosts)
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
    if _over_committed(snap, *summed):
        # (Names the first fault as check_capacity always has.)
        check_capacity(snap)
    return snap


def _read_instances(r, docs, hosts):
    """``(instances, (use, numa, res, where))`` of the document's list.

    What the instances use is summed as they are read, for
    :func:`_over_committed`.
    """
    # {host: ({domain id: [cores, ways, classes of service]}, [classes])}
    use = {h.name: ({d.id: [0, 0, 0] for d in h.domains}, [0])
           for h in hosts}
    numa = {}           # (host, domain, key) -> MB
    res = {}            # host -> {resource class: amount}
    instances = []
    append = instances.append
    seen = {}           # uuid -> host
    rcs = set()
    new = Instance
    for n, i in enumerate(docs):
        # The fast path, inline (half a million of them); the reader
        # for anything else.
        if type(i) is dict and i.keys() >= _INST_KEYS:
            uuid, host, dom, cores, ways, clos, migratable = (
                i['uuid'], i['host'], i['domain'], i['cores'], i['ways'],
                i['clos'], i['migratable'])
            get = i.get
            az, memory, huge, rsc, bw = (get('az'), get('memory_mb', 0),
                                         get('hugepages', False),
                                         get('resources'), get(MEM_BW, 0))
            if (type(uuid) is str and uuid and type(host) is str and host
                    and type(dom) is int and dom >= 0
                    and type(cores) is int and cores >= 1
                    and type(ways) is int and ways >= 1
                    and type(clos) is int and clos >= 0
                    and (migratable is True or migratable is False)
                    and (az is None or (type(az) is str and az))
                    and type(memory) is int and memory >= 0
                    and (huge is False or huge is True)
                    and type(bw) is int and bw >= 0
                    and (rsc is None or _resources_ok(rsc, rcs))):
                inst = new(uuid, host, dom, cores, ways, clos, migratable,
                           az, get('reason'), get('name'), memory, huge,
                           bw, dict(rsc) if rsc else {})
            else:
                inst = _read_instance(r, i, n)
        else:
            inst = _read_instance(r, i, n)
        uuid, host = inst.uuid, inst.host
        if uuid in seen:
            r.fail('instances[%d]' % n, 'instance %s is listed twice'
                   % uuid)
        seen[uuid] = host
        here = use.get(host)
        if here is None:
            r.fail('instances[%d]' % n, 'instance %s is on host %r, which '
                   'the snapshot does not list; add the host or remove the '
                   'instance' % (uuid, host))
        dom = here[0].get(inst.domain)
        if dom is None:
            doms = next(h for h in hosts if h.name == host).domains
            r.fail('instances[%d]' % n, 'instance %s is in cache domain %d '
                   'of %s, which has domains %s'
                   % (uuid, inst.domain, host, [d.id for d in doms]))
        clos = inst.clos
        dom[0] += inst.cores
        dom[1] += inst.ways
        dom[2] += clos
        here[1][0] += clos
        if inst.memory_mb:
            key = (host, inst.domain,
                   'hugepages_mb' if inst.hugepages else 'memory_mb')
            numa[key] = numa.get(key, 0) + inst.memory_mb
        if inst.mem_bw_mibps:
            key = (host, inst.domain, MEM_BW)
            numa[key] = numa.get(key, 0) + inst.mem_bw_mibps
        if inst.resources:
            held = res.get(host)
            if held is None:
                held = res[host] = {}
            for rc, amount in inst.resources.items():
                held[rc] = held.get(rc, 0) + amount
        append(inst)
    return instances, (use, numa, res, seen)


_HOST_KEYS = frozenset(('name', 'clos', 'disabled', 'domains'))
_HOST_OPTIONAL = frozenset(('down', 'az', 'other_load', 'uuid', 'cell',
                            'resources'))
_DOMAIN_KEYS = frozenset(('id', 'cores', 'ways', 'reserved_ways'))
_INST_KEYS = frozenset(('uuid', 'host', 'domain', 'cores', 'ways', 'clos',
                        'migratable'))


def _opt_str(value):
    return value is None or (type(value) is str and value != '')


def _opt_nat(value):
    return value is None or (type(value) is int and value >= 0)


def _resources_ok(value, rcs):
    """Whether ``value`` is None or ``{resource class: natural}``."""
    if value is None:
        return True
    if type(value) is not dict:
        return False
    for rc, amount in value.items():
        if type(amount) is not int or amount < 0:
            return False
        if rc not in rcs:
            if type(rc) is not str or not RC_RE.fullmatch(rc):
                return False
            rcs.add(rc)
    return True


def _fast_host(h):
    """The host of document ``h`` when all of it has the usual types."""
    if type(h) is not dict or not h.keys() >= _HOST_KEYS:
        return None
    name, clos, disabled, docs = h['name'], h['clos'], h['disabled'], \
        h['domains']
    get = h.get
    down, other = get('down', False), get('other_load', 0)
    az, uuid, cell, res = get('az'), get('uuid'), get('cell'), \
        get('resources')
    if not (type(name) is str and name and type(clos) is int and clos >= 0
            and (disabled is True or disabled is False)
            and (down is True or down is False)
            and type(other) is int and other >= 0
            and _opt_str(az) and _opt_str(uuid) and _opt_str(cell)
            and _resources_ok(res, set()) and type(docs) is list):
        return None
    domains = []
    ids = set()
    for d in docs:
        if type(d) is not dict or not d.keys() >= _DOMAIN_KEYS:
            return None
        did, cores, ways, reserved = d['id'], d['cores'], d['ways'], \
            d['reserved_ways']
        dget = d.get
        provider, dclos, mem, huge, bw = dget('provider'), dget('clos'), \
            dget('memory_mb'), dget('hugepages_mb'), dget(MEM_BW)
        if not (type(did) is int and did >= 0 and type(cores) is int
                and cores >= 0 and type(ways) is int and ways >= 0
                and type(reserved) is int and reserved >= 0
                and _opt_str(provider) and _opt_nat(dclos)
                and _opt_nat(mem) and _opt_nat(huge)
                and _opt_nat(bw)) or did in ids:
            return None
        ids.add(did)
        domains.append(Domain(did, cores, ways, reserved, provider, dclos,
                              mem, huge, bw))
    return Host(name, clos, domains, disabled, down, az, other, uuid, cell,
                dict(res) if res else {})


def _read_host(r, h, n, names):
    """Host ``n`` of the document, field by field; :raises SnapshotError:"""
    where = 'hosts[%d]' % n
    r.obj(h, where, ('name', 'clos', 'disabled', 'domains'))
    name = r.str(h['name'], where + '.name')
    if name in names:
        r.fail(where, 'host %s is listed twice' % name)
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
                     hugepages_mb=r.opt_int(d, 'hugepages_mb', dw),
                     mem_bw_mibps=r.opt_int(d, MEM_BW, dw))
        if any(x.id == dom.id for x in domains):
            r.fail(dw, 'host %s lists domain %d twice' % (name, dom.id))
        domains.append(dom)
    return Host(
        name=name, clos=r.int(h['clos'], where + '.clos'),
        domains=domains,
        disabled=r.bool(h['disabled'], where + '.disabled'),
        down=r.bool(h.get('down', False), where + '.down'),
        az=r.str(h.get('az'), where + '.az', allow_none=True),
        other_load=r.int(h.get('other_load', 0), where + '.other_load'),
        uuid=r.str(h.get('uuid'), where + '.uuid', allow_none=True),
        cell=r.str(h.get('cell'), where + '.cell', allow_none=True),
        resources=r.resources(h.get('resources'), where + '.resources'))


def _read_instance(r, i, n):
    """Instance ``n`` of the document, field by field."""
    where = 'instances[%d]' % n
    r.obj(i, where, ('uuid', 'host', 'domain', 'cores', 'ways', 'clos',
                     'migratable'))
    return Instance(
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
        mem_bw_mibps=r.int(i.get(MEM_BW, 0), where, field=MEM_BW),
        resources=r.resources(i.get('resources'), where,
                              field='resources'))


def _over_committed(snap, use, numa, res, where):
    """Whether :func:`check_capacity` would refuse ``snap``.

    From the use summed while reading: ``use`` ({host: ({domain:
    [cores, ways, clos]}, [clos])}), ``numa`` ({(host, domain, key): MB}),
    ``res`` ({host: {resource class: amount}}) and ``where`` ({uuid:
    host}).
    """
    for h in snap.hosts:
        doms, clos = use[h.name]
        if clos[0] > h.clos:
            return True
        for d in h.domains:
            cores, ways, dclos = doms[d.id]
            if cores > d.cores or ways > d.ways or (
                    d.clos is not None and dclos > d.clos):
                return True
    for (name, dom_id, key), amount in numa.items():
        cap = getattr(snap.host(name).domain(dom_id), key)
        if cap is not None and amount > cap:
            return True
    for name, used in res.items():
        caps = snap.host(name).resources
        if any(rc in caps and amount > caps[rc]
               for rc, amount in used.items()):
            return True
    for g in snap.server_groups:
        if g.policy != 'anti-affinity':
            continue
        hosts = [where[m] for m in g.members if m in where]
        if len(hosts) != len(set(hosts)):
            return True
    return False


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
            if key in caps and amount > caps[key] and key == MEM_BW:
                _over(snap, 'cache domain %d of %s is already '
                      'over-committed: its instances hold %d MiB/s of '
                      'memory bandwidth of %d'
                      % (dom_id, host_name, amount, caps[key]))
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
    (members in other cells are on other hosts anyway). One pass over the
    hosts, the instances and the groups' members.
    """
    names = sorted({h.cell for h in snap.hosts},
                   key=lambda c: (c is not None, c or ''))
    if len(names) <= 1:
        return [(names[0] if names else None, snap)]
    with common.no_gc():
        hosts = {cell: [] for cell in names}
        cell_of = {}
        for h in snap.hosts:
            hosts[h.cell].append(h)
            cell_of[h.name] = h.cell
        insts = {cell: [] for cell in names}
        inst_cell = {}
        for i in snap.instances:
            cell = cell_of[i.host]
            insts[cell].append(i)
            inst_cell[i.uuid] = cell
        groups = {cell: [] for cell in names}
        for g in snap.server_groups:
            members = {}
            for m in g.members:
                cell = inst_cell.get(m, members)
                if cell is not members:
                    members.setdefault(cell, []).append(m)
            for cell in names:
                if cell in members:
                    groups[cell].append(ServerGroup(g.policy, members[cell],
                                                    g.id))
        return [(cell, Snapshot(hosts[cell], insts[cell], groups[cell],
                                '%s (cell %s)' % (snap.source, cell),
                                snap.taken_at))
                for cell in names]
