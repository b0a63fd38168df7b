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
"""Admit an SLO file: plan it jointly, then create all of it or nothing.

Every check that can refuse the batch runs before anything is created:
the profiles, the terms' server names, the flavors that exist already, and
the joint plan. Then the flavors of every term are created (private to
the admitting project) and the servers booted, each on the host the plan
chose (Nova's scheduler still checks it). A failure part way is reported
action by action: the flavors created, the servers ACTIVE, the one that
failed and the ones not tried; nothing is claimed that did not happen.
"""

from oslo_log import log as logging

from resq_nova.admission.batch import planner
from resq_nova.admission import greedy
from resq_nova.deploy import deployment
from resq_nova.deploy import flavors
from resq_nova.deploy import heat
from resq_profiler import exception
from resq_profiler import store as store_mod

LOG = logging.getLogger(__name__)

ACTIVE = 'ACTIVE'
FAILED = 'FAILED'
NOT_TRIED = 'NOT TRIED'


class BatchFailed(exception.ResQException):
    """Creating the admitted batch failed part way; ``doc`` says how far."""

    msg_fmt = ('SLO file %(path)s was admitted but deploying it failed at '
               '%(what)s: %(reason)s; %(done)s')

    def __init__(self, path, what, reason, doc):
        servers = [s for t in doc['terms'] for s in t.get('servers', ())]
        active = [s['name'] for s in servers if s['status'] == ACTIVE]
        created = [f for t in doc['terms']
                   for f in t.get('flavors_created', ())]
        done = ('created flavors: %s; ACTIVE servers: %s; delete them '
                '(openstack server delete, openstack flavor delete) or fix '
                'the cause and boot the missing servers' % (
                    ', '.join(created) or 'none', ', '.join(active) or
                    'none'))
        super().__init__(path=path, what=what, reason=reason, done=done)
        self.doc = doc


def load_terms(store, specs):
    """The file's terms with their profiles.

    :raises greedy.BatchRefused: naming every term whose profile the store
        lacks.
    """
    terms, refusals = [], []
    for spec in specs:
        try:
            terms.append(deployment.load_term(
                store, spec.name, spec.profile, spec.throughput_mpps,
                spec.latency_p95_us, spec.packet_bytes, spec.max_instances,
                spec.mem_bw_mibps))
        except greedy.AdmissionRefused as exc:
            refusals.append(exc)
    if refusals:
        raise greedy.BatchRefused(refusals)
    return terms


def admit(path, specs, args, placement, compute, store, load_discount,
          time_limit=10.0):
    """Admit every term of an SLO file, or none.

    :param specs: the file's
        :class:`resq_nova.admission.batch.slo_file.TermSpec`.
    :param args: the command's options by attribute (``dry_run``,
        ``heat_template``, ``image``, ``network``, ``boot_timeout``).
    :returns: the batch document: ``slo_file``, ``method`` (``milp`` or
        ``greedy``) and ``terms``, each a single term's plan document
        (:meth:`resq_nova.admission.reserved.Plan.to_dict`) with its ``chain``
        and,
        once booted, ``flavors_created`` and ``servers`` (with their
        ``status``).
    :raises resq_nova.admission.greedy.BatchRefused: nothing was created.
    :raises BatchFailed: with ``doc`` set to what was done.
    :raises resq_profiler.exception.ResQException: bad profile, flavor
        mismatch, services failing (nothing was created).
    """
    options = flavors.FlavorOptions(
        args.vcpus, args.ram_mb, args.disk_gb, args.mem_page_size)
    terms = load_terms(store, specs)
    if not args.dry_run:
        errors = []
        for term in terms:
            try:
                deployment.check_no_servers(compute, term.name)
            except deployment.ServersExist as exc:
                errors.append(str(exc))
        if errors:
            raise deployment.ServersExist(message='; '.join(errors))
    chains = {s.name: s.chain for s in specs}
    # Hosts whose compute service is disabled take no instance; a batch
    # does not count hosts disabled as freed either (resq-optimizer
    # enable-freed gives them back).
    gate = deployment.HostGate.from_compute(compute)
    batch = planner.plan(placement, terms, options, chains, load_discount,
                         time_limit, exclude=gate.blocked | set(gate.freed))
    found = {}
    for the_plan in batch.plans:
        found.update(deployment.existing_flavors(compute, the_plan))
    doc = {'slo_file': path, 'method': batch.method, 'terms': []}
    for the_plan in batch.plans:
        term_doc = the_plan.to_dict(batch.names)
        term_doc['chain'] = chains.get(the_plan.term.name)
        for flavor in term_doc['flavors']:
            flavor['exists'] = flavor['name'] in found
        doc['terms'].append(term_doc)
    if args.dry_run:
        return doc
    if args.heat_template:
        deployment.share_flavors(doc, compute, found,
                                 getattr(args, 'stack_project', None))
        store_mod.atomic_write(args.heat_template, heat.dump(
            heat.batch_template(batch.plans, found, args.image,
                                args.network, chains, path)))
        doc['heat_template'] = args.heat_template
        return doc
    _deploy(path, batch, found, doc, args, compute)
    return doc


def _deploy(path, batch, found, doc, args, compute):
    project = compute.project_id()
    ids = {}
    for term_doc in doc['terms']:
        term_doc['flavors_created'] = []
    for the_plan, term_doc in zip(batch.plans, doc['terms']):
        mine = {n: f for n, f in found.items()
                if n in {fl.name for fl in the_plan.flavors}}
        try:
            made, created = deployment.ensure_flavors(compute, the_plan,
                                                      mine, project)
        except exception.ResQException as exc:
            term_doc['flavors_created'] = getattr(exc, 'created', [])
            _not_tried(batch, doc)
            raise BatchFailed(path, 'the flavors of SLO term %s'
                              % the_plan.term.name, str(exc), doc)
        term_doc['flavors_created'] = created
        ids.update(made)
    failure = None
    for the_plan, term_doc in zip(batch.plans, doc['terms']):
        term_doc['servers'] = []
        for inst in the_plan.instances:
            if failure:
                term_doc['servers'].append(_row(inst, NOT_TRIED))
                continue
            metadata = {'resq_term': the_plan.term.name,
                        'resq_ways': str(inst.ways)}
            if term_doc['chain']:
                metadata['resq_chain'] = term_doc['chain']
            try:
                server = deployment.boot_one(
                    compute, the_plan.term.name, inst, ids[inst.flavor],
                    args.image, args.network, args.boot_timeout,
                    host=batch.names.get(inst.host), metadata=metadata)
            except deployment.BootFailed as exc:
                row = _row(inst, FAILED)
                row['id'] = getattr(exc, 'server_id', None)
                row['error'] = exc.kwargs['reason']
                term_doc['servers'].append(row)
                failure = (inst.name, exc.kwargs['reason'])
                continue
            server['status'] = ACTIVE
            term_doc['servers'].append(server)
    if failure:
        raise BatchFailed(path, 'server %s' % failure[0], failure[1], doc)


def _row(inst, status):
    return {'name': inst.name, 'id': None, 'host': None, 'ways': inst.ways,
            'status': status}


def _not_tried(batch, doc):
    for the_plan, term_doc in zip(batch.plans, doc['terms']):
        term_doc['servers'] = [_row(i, NOT_TRIED)
                               for i in the_plan.instances]
