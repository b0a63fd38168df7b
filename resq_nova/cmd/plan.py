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
"""``resq-plan``: admit a set of reserved SLO terms with the greedy.

Without ``--slo-file`` it profiles the NF catalog with the model driver
(into ``--profile-dir``, reusing profiles already there) and plans an
embedded example set: for every NF, terms at 0.9x, 2x and 4.5x its solo
throughput with its solo p95 latency at full load as the latency target,
plus one term per NF whose latency target is below the NF's floor, to
show a refusal.
"""

import json
import sys

from oslo_config import cfg

from resq_common import cmdline
from resq_nova.admission import greedy
from resq_nova.admission import slo
from resq_nova import conf as nova_conf
from resq_profiler import catalog
from resq_profiler import conf as prof_conf
from resq_profiler import exception
from resq_profiler import nfmodel
from resq_profiler import profiler
from resq_profiler import store as store_mod

EXAMPLE_MULTIPLES = (0.9, 2.0, 4.5)

DESCRIPTION = '''Admit a set of reserved SLO terms one at a time with the
greedy (ResQ section 5.3.1) on a cluster of N servers (--servers) of [resq]
server_cores cores and server_ways ways, and print each term's instances,
ways and servers, and every refusal with the constraint that failed. Without
--slo-file it profiles the NF catalog with the model driver (reusing the
profiles in the store) and plans an example set. Nothing is asked of a
cloud.'''

cli_opts = [
    cfg.StrOpt('slo-file', help='SLO set to plan (YAML or JSON, see the '
                                'docs); default: the embedded example set'),
    cfg.StrOpt('profile-dir', help='profile store (default: [resq] '
                                   'profile_dir)'),
    cfg.IntOpt('servers', default=20, min=1,
               help='servers in the cluster'),
    cfg.StrOpt('json', help='also write the plan as JSON to this file'),
]


def example_terms(store, conf, progress=True):
    """Profile the catalog (if needed) and build the example SLO set."""
    traffic = nfmodel.Traffic()
    terms = []
    names = catalog.names()
    for i, nf in enumerate(names, 1):
        prof_id = '%s-example' % nf.lower()
        if store.exists(prof_id):
            prof = store.get(prof_id)
            if progress:
                print('(%d/%d) profile %s: reusing %s' % (
                    i, len(names), nf, prof_id), flush=True)
        else:
            prof = profiler.run(conf, nf, traffic, driver_name='model',
                                profile_id=prof_id)
            store.put(prof)
            if progress:
                runs = prof.measurement['measurements']
                print('(%d/%d) profile %s: %d + %d measurements' % (
                    i, len(names), nf, runs['throughput'], runs['latency']),
                    flush=True)
        solo = prof.throughput_at(prof.max_ways)
        target_lat = prof.latency_at(1.0)
        for mult in EXAMPLE_MULTIPLES:
            terms.append(greedy.SLOTerm('%s-x%s' % (nf.lower(), mult), prof,
                                        mult * solo, target_lat))
        terms.append(greedy.SLOTerm('%s-too-fast' % nf.lower(), prof, solo,
                                    prof.latency_floor_us * 0.5))
    return terms


def plan(terms, servers, discount):
    """Admit ``terms`` one by one (online, as they arrive)."""
    admitted, refused = [], []
    for term in terms:
        try:
            sizing, placements = greedy.admit(term, servers, discount)
        except greedy.AdmissionRefused as exc:
            refused.append(exc)
            continue
        admitted.append((term, sizing, placements))
    return admitted, refused


def _report(admitted, refused, servers):
    print()
    print('%-22s %8s %4s %-18s %9s  %s' % ('term', 'target', 'K', 'ways',
                                           'capacity', 'servers'))
    for term, sizing, placements in admitted:
        print('%-22s %8.3f %4d %-18s %9.3f  %s' % (
            term.name, term.throughput_mpps, sizing.instances,
            ','.join(str(w) for w in sizing.ways), sizing.aggregate_mpps,
            ' '.join(sorted({p.server for p in placements}))))
    used = [s for s in servers if s.used_cores]
    print()
    print('%d terms admitted, %d refused; %d of %d servers in use '
          '(%d cores, %d ways)' % (
              len(admitted), len(refused), len(used), len(servers),
              sum(s.used_cores for s in used),
              sum(s.used_ways for s in used)))
    for exc in refused:
        print('  refused: %s' % exc)


def main(argv=None):
    conf = cmdline.parse(argv, 'resq-plan', DESCRIPTION,
                         (nova_conf.register_opts, prof_conf.register_opts),
                         cli_opts)
    store = store_mod.ProfileStore(conf.profile_dir or conf.resq.profile_dir)
    try:
        servers = greedy.make_cluster(conf.servers, conf.resq.server_cores,
                                      conf.resq.server_ways)
        if conf.slo_file:
            terms = slo.load_terms(conf.slo_file, store)
        else:
            terms = example_terms(store, conf)
        admitted, refused = plan(terms, servers, conf.resq.load_discount)
    except exception.ResQException as exc:
        print('ERROR: %s' % exc, file=sys.stderr)
        return 1
    _report(admitted, refused, servers)
    if conf.json:
        doc = {
            'admitted': [{'term': t.name, 'profile': t.profile.profile_id,
                          'instances': [{'server': p.server, 'ways': p.ways,
                                         'mpps': round(p.mpps, 6)}
                                        for p in pl]}
                         for t, _, pl in admitted],
            'refused': [{'term': e.term, 'constraint': e.constraint,
                         'reason': e.reason} for e in refused],
            'servers_used': sum(1 for s in servers if s.used_cores),
        }
        store_mod.atomic_write(conf.json, json.dumps(doc, indent=2) + '\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
