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
"""SLO admission against a real cluster: Placement, flavors, servers.

The thin side of :mod:`resq_nova.admission.reserved`: reads the cluster from
Placement, checks that existing flavors match before creating anything,
creates the missing flavors and boots the servers largest first, one at a
time, so the scheduler places them in first-fit-decreasing order.
"""

import dataclasses

from oslo_log import log as logging

from resq_common.clients import compute as compute_mod
from resq_nova.admission import greedy
from resq_nova.admission import reserved as admission
from resq_nova.deploy import flavors
from resq_profiler import exception

LOG = logging.getLogger(__name__)
IS_PUBLIC = 'os-flavor-access:is_public'


class FlavorMismatch(exception.ResQException):
    msg_fmt = ('flavor %(name)s exists but differs from what SLO term '
               '%(term)s needs: %(diff)s; delete it (openstack flavor delete '
               '%(name)s) or admit under another --term')


class ServersExist(exception.ResQException):
    msg_fmt = ('SLO term %(term)s already has servers: %(names)s; delete '
               'them or admit under another --term')


class BootFailed(exception.ResQException):
    msg_fmt = ('server %(name)s of SLO term %(term)s did not become ACTIVE '
               '(%(reason)s); %(count)d server(s) booted before it: '
               '%(booted)s')

    def __init__(self, term, name, reason, booted):
        super().__init__(term=term, name=name, reason=reason,
                         count=len(booted),
                         booted=', '.join('%s on %s' % (s['name'], s['host'])
                                          for s in booted) or 'none')
        self.booted = booted


def load_term(store, name, profile_id, throughput_mpps, latency_p95_us,
              packet_bytes=None, max_instances=None, mem_bw_mibps=None):
    """An SLO term whose profile comes from ``store``.

    ``mem_bw_mibps``: the memory bandwidth (MiB/s) each instance holds.

    :raises greedy.AdmissionRefused: ``profile`` when the store lacks it.
    """
    try:
        prof = store.get(profile_id)
    except exception.ResQException as exc:
        raise greedy.AdmissionRefused(name, greedy.PROFILE, str(exc))
    return greedy.SLOTerm(name, prof, throughput_mpps, latency_p95_us,
                          packet_bytes, max_instances, mem_bw_mibps or None)


class HostGate:
    """Which compute hosts admission may count, from Nova's services.

    A host whose compute service is disabled takes no instance (Nova's
    scheduler skips it), so admission does not count its room: except a
    host resq-optimizer disabled because a plan freed it
    (:data:`resq_common.clients.compute.FREED_REASON`), whose room admission
    counts when it needs it, enabling the host before anything boots.
    """

    def __init__(self, services, hypervisors):
        by_host = {s['host']: s for s in services}
        self.blocked = set()        # compute node provider uuids
        self.freed = {}             # provider uuid -> host name
        self.service_ids = {}
        for hyp in hypervisors:
            host = (hyp.get('service') or {}).get('host')
            svc = by_host.get(host)
            if svc is None or svc.get('status') != 'disabled':
                continue
            reason = svc.get('disabled_reason') or ''
            if reason.startswith(compute_mod.FREED_REASON):
                self.freed[hyp['id']] = host
                self.service_ids[host] = svc['id']
            else:
                self.blocked.add(hyp['id'])

    @classmethod
    def from_compute(cls, compute):
        return cls(compute.list_compute_services(),
                   compute.list_hypervisors())

    def enable(self, compute, hosts):
        """Enable freed ``hosts``; ``[{'host', 'outcome', 'detail'}]``.

        :raises HostNotEnabled: at the first host Nova would not enable
            (nothing is booted on a host that stays disabled).
        """
        done = []
        for host in sorted(hosts):
            try:
                compute.set_service_status(self.service_ids[host], False)
            except exception.ResQException as exc:
                raise HostNotEnabled(host=host, reason=exc, done=', '.join(
                    d['host'] for d in done) or 'none')
            LOG.info('Enabled %s again: admission needs the room a plan '
                     'freed there', host)
            done.append({'host': host, 'outcome': 'enabled',
                         'detail': 'admission needs its room'})
        return done


class HostNotEnabled(exception.ResQException):
    msg_fmt = ('admission needs the room of %(host)s, which resq-optimizer '
               'disabled when a plan freed it, but Nova did not enable it: '
               '%(reason)s (enabled before it: %(done)s); nothing was '
               'booted')


def plan(placement, term, options, discount=greedy.DEFAULT_DISCOUNT,
         gate=None):
    """The plan on the cluster Placement sees, and its hosts' names.

    With a :class:`HostGate`, hosts whose compute service is disabled are
    left out; hosts disabled as freed by a plan are counted only when the
    term does not fit without them, and the plan's ``enable`` then names
    those it uses (the caller enables them before booting).

    :returns: ``(plan, {compute node provider uuid: host name})``.
    """
    body = placement.allocation_candidates(
        admission.request_groups(term.profile, options))
    enable = []
    if gate is None:
        result = admission.make_plan(term, body, options, discount)
    else:
        try:
            result = admission.make_plan(
                term, admission.without_roots(
                    body, gate.blocked | set(gate.freed)),
                options, discount)
        except greedy.AdmissionRefused:
            if not gate.freed:
                raise
            result = admission.make_plan(term, admission.without_roots(
                body, gate.blocked), options, discount)
            enable = sorted({gate.freed[i.host] for i in result.instances
                             if i.host in gate.freed})
    result = dataclasses.replace(result, enable=tuple(enable))
    names = {}
    for inst in result.instances:
        if inst.host not in names:
            names[inst.host] = placement.get_provider(inst.host)['name']
    return result, names


def existing_flavors(compute, the_plan):
    """The plan's flavors that exist already, checked against the plan.

    A term's flavors are private (:func:`ensure_flavors`): a public one of
    the same name is a mismatch too, as any project could boot reserved
    capacity with it.

    :returns: ``{flavor name: Nova's flavor}`` of the matching ones.
    :raises FlavorMismatch: when one exists with other specs or sizes, or
        public.
    """
    found = {}
    for flavor in the_plan.flavors:
        current = compute.find_flavor(flavor.name)
        if current is None:
            continue
        diff = flavors.differences(current, flavor)
        if current.get(IS_PUBLIC, True):
            diff.append('it is public, wanted private to the admitting '
                        'project')
        if diff:
            raise FlavorMismatch(name=flavor.name, term=the_plan.term.name,
                                 diff='; '.join(diff))
        found[flavor.name] = current
    return found


def check_no_servers(compute, term_name):
    """Refuse to admit a term twice: its server names must be free."""
    names = sorted(s['name'] for s in compute.list_servers(
        '^%s-[0-9]+$' % term_name.replace('.', '\\.')))
    if names:
        raise ServersExist(term=term_name, names=', '.join(names))


def ensure_flavors(compute, the_plan, found, project_id=None):
    """Create the flavors not in ``found``, private to ``project_id``.

    Idempotent: a flavor in ``found`` (checked by :func:`existing_flavors`)
    is reused, and the project gets access to it if it has none yet.

    :param project_id: the admitting project (default: the client's).
    :returns: ``({flavor name: flavor id}, [names created])``.
    :raises resq_profiler.exception.ResQException: with ``created`` set
        to the flavors created before the failure.
    """
    project_id = project_id or compute.project_id()
    ids = {name: flavor['id'] for name, flavor in found.items()}
    created = []
    for flavor in the_plan.flavors:
        if flavor.name in ids:
            if compute.add_flavor_access(ids[flavor.name], project_id):
                LOG.info('Gave project %s access to flavor %s (%s)',
                         project_id, flavor.name, ids[flavor.name])
            LOG.info('Reusing flavor %s (%s)', flavor.name, ids[flavor.name])
            continue
        try:
            made = compute.create_flavor(flavor.name, flavor.vcpus,
                                         flavor.ram_mb, flavor.disk_gb,
                                         flavor.extra_specs, project_id)
        except exception.ResQException as exc:
            exc.created = created       # what was done before it
            raise
        LOG.info('Created flavor %s (%s), private to project %s',
                 flavor.name, made['id'], project_id)
        ids[flavor.name] = made['id']
        created.append(flavor.name)
    return ids, created


def share_flavors(doc, compute, found, project_id):
    """Give a Heat stack's project access to the existing flavors it uses.

    A template creates the flavors that do not exist yet (private to the
    stack's project, ``tenants: OS::project_id``) and names the ones that
    do; those are private to the projects that admitted them, so the
    stack's project needs access before the stack can boot with them.

    :param found: ``{name: flavor}`` from :func:`existing_flavors`.
    :param project_id: the stack's project (``--stack-project``); with it
        sets ``doc['stack_project']`` and ``doc['flavors_shared']`` (the
        names the project was given access to, or had); without it, adds
        to ``doc['warnings']`` one warning per existing flavor saying what
        to do.
    """
    if project_id:
        doc['stack_project'] = project_id
        doc['flavors_shared'] = []
    for name in sorted(found):
        if not project_id:
            doc.setdefault('warnings', []).append(
                'flavor %s exists and is private: the project the stack is '
                'created in needs access to it (run again with '
                '--stack-project <project id>, or "openstack flavor set '
                '--project <project id> %s")' % (name, name))
            continue
        if compute.add_flavor_access(found[name]['id'], project_id):
            LOG.info('Gave project %s access to flavor %s (%s) for its '
                     'stack', project_id, name, found[name]['id'])
        doc['flavors_shared'].append(name)


def boot_one(compute, term_name, inst, flavor_id, image, network, timeout,
             host=None, metadata=None):
    """Boot one instance of a plan and wait until it is ACTIVE.

    :param host: the compute host to ask for (the scheduler still checks
        it); ``None`` lets the scheduler choose.
    :returns: ``{'name', 'id', 'host', 'ways'}``.
    :raises BootFailed: naming the server and why (``server_id`` set when
        Nova created it), with nothing in ``booted``.
    """
    server_id = None
    try:
        server_id = compute.create_server(inst.name, flavor_id, image,
                                          network, host=host,
                                          metadata=metadata)
        server = compute.wait_for_server(server_id, timeout)
    except exception.ResQException as exc:
        failed = BootFailed(term_name, inst.name, str(exc), [])
        failed.server_id = server_id
        raise failed
    if server['status'] != 'ACTIVE':
        reason = (server.get('fault') or {}).get('message') or (
            'status %s after %ss' % (server['status'], timeout))
        failed = BootFailed(term_name, inst.name,
                            '%s, id %s' % (reason, server_id), [])
        failed.server_id = server_id
        failed.status = server['status']
        raise failed
    LOG.info('Server %s (%s) is ACTIVE on %s', inst.name, server_id,
             server.get('OS-EXT-SRV-ATTR:host'))
    return {'name': inst.name, 'id': server_id,
            'host': server.get('OS-EXT-SRV-ATTR:host'), 'ways': inst.ways}


def boot(compute, the_plan, flavor_ids, image, network, timeout):
    """Boot the servers largest first, each ACTIVE before the next.

    Waiting keeps the order: the scheduler sees each instance's ways
    allocated before it places the next, which is first-fit decreasing.

    :returns: ``[{'name', 'id', 'host', 'ways'}]`` in boot order.
    :raises BootFailed: naming the server, why, and what was booted.
    """
    booted = []
    for inst in the_plan.instances:
        try:
            booted.append(boot_one(compute, the_plan.term.name, inst,
                                   flavor_ids[inst.flavor], image, network,
                                   timeout))
        except BootFailed as exc:
            raise BootFailed(the_plan.term.name, inst.name,
                             exc.kwargs['reason'], booted)
    return booted
