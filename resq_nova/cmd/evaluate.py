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
"""``resq-evaluate``: the cluster evaluation of ResQ §6 on resq-nova's code.

Profiles the NF catalog, builds the SLO sets, places each with every scheme,
measures what each placement really achieves on the simulated testbed
(:mod:`resq_profiler.truth`, which the profiles were measured from) and prints
servers used and SLO violations; optionally writes JSON and PNG figures.
"""

import json
import sys

from oslo_config import cfg

from resq_nova.admission import milp
from resq_nova import conf as nova_conf
from resq_nova.evaluation import figures
from resq_nova.evaluation import run
from resq_nova.evaluation import schemes
from resq_nova.evaluation import slosets
from resq_profiler import cmd
from resq_profiler import conf as prof_conf
from resq_profiler import exception
from resq_profiler import store as store_mod

cli_opts = [
    cfg.ListOpt('sets', default=['sensitive', 'insensitive', 'mixed'],
                help='SLO sets to evaluate: %s' % ', '.join(
                    sorted(slosets.SETS))),
    cfg.ListOpt('schemes', default=list(schemes.NAMES),
                help='schemes to compare: %s' % ', '.join(schemes.NAMES)),
    cfg.IntOpt('terms', default=200, help='SLO terms per set'),
    cfg.IntOpt('seed', default=0, help='seed of the SLO sets'),
    cfg.IntOpt('cores', default=9, help='cores per server'),
    cfg.IntOpt('ways', default=18,
               help='usable LLC ways per server (the other 2 are DDIO\'s)'),
    cfg.IntOpt('packet-bytes', default=64, help='packet size of the traffic'),
    cfg.FloatOpt('time-limit',
                 help='MILP time limit per set, seconds (default: '
                      '[resq_evaluation] time_limit)'),
    cfg.FloatOpt('mip-gap',
                 help='stop the MILP at this relative gap (default: '
                      '[resq_evaluation] mip_gap)'),
    cfg.StrOpt('slo-file',
               help='also evaluate the SLO set in this JSON file (set '
                    '"custom"; terms name catalog NFs)'),
    cfg.FloatOpt('noise-pct', default=run.DEFAULT_NOISE_PCT, min=0.0,
                 max=20.0,
                 help='measurement noise (percent, Gaussian) of the '
                      'profiling runs on the simulated testbed'),
    cfg.StrOpt('json', help='write the numbers as JSON to this file'),
    cfg.StrOpt('figures', help='write PNG figures into this directory'),
]


def _progress(message):
    print('... %s' % message, flush=True)


def main(argv=None):
    conf = cmd.parse_config(argv, 'resq-evaluate',
                            (prof_conf.register_opts,
                             nova_conf.register_opts), cli_opts)
    if conf.terms <= 0:
        print('ERROR: --terms must be positive, got %d' % conf.terms,
              file=sys.stderr)
        return 1
    try:
        doc = run.evaluate(conf, conf.sets, conf.schemes, terms=conf.terms,
                           seed=conf.seed, cores=conf.cores, ways=conf.ways,
                           packet_bytes=conf.packet_bytes,
                           time_limit=(conf.resq_evaluation.time_limit
                                       if conf.time_limit is None
                                       else conf.time_limit),
                           mip_gap=(conf.resq_evaluation.mip_gap
                                    if conf.mip_gap is None
                                    else conf.mip_gap),
                           config_limit=(conf.resq_optimizer.
                                         max_configurations_per_term),
                           slo_file=conf.slo_file, progress=_progress,
                           noise_pct=conf.noise_pct)
    except (ValueError, milp.SolverUnavailable,
            exception.ResQException) as exc:
        print('ERROR: %s' % exc, file=sys.stderr)
        return 1
    print()
    print(run.table(doc))
    if conf.figures:
        for path in figures.write(doc, conf.figures):
            print('figure written to %s' % path)
    if conf.json:
        store_mod.atomic_write(conf.json, json.dumps(doc, indent=2,
                                                     sort_keys=True) + '\n')
        print('numbers written to %s' % conf.json)
    return 0


if __name__ == '__main__':
    sys.exit(main())
