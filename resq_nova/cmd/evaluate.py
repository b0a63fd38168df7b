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

from resq_common import cmdline
from resq_nova.admission import milp
from resq_nova import conf as nova_conf
from resq_nova.evaluation import figures
from resq_nova.evaluation import run
from resq_nova.evaluation import schemes
from resq_nova.evaluation import slosets
from resq_profiler import conf as prof_conf
from resq_profiler import exception
from resq_profiler import store as store_mod

DESCRIPTION = '''The cluster evaluation of ResQ (section 6) on resq-nova's
code: profile the NF catalog, build the SLO sets, place each with every
scheme, measure what each placement achieves on the simulated testbed and
print the servers used and the SLO violations; optionally write the
numbers as JSON and PNG figures. Nothing is asked of a cloud.'''

cli_opts = [
    cfg.ListOpt('sets', default=['sensitive', 'insensitive', 'mixed'],
                help='SLO sets to evaluate: %s' % ', '.join(
                    sorted(slosets.SETS))),
    cfg.ListOpt('schemes', default=list(schemes.NAMES),
                help='schemes to compare: %s' % ', '.join(schemes.NAMES)),
    cfg.IntOpt('terms', default=200, min=1, help='SLO terms per set'),
    cfg.IntOpt('seed', default=0,
               help='seed of every random draw: the SLO sets, the '
                    'profiler\'s measurement noise ([resq_profiler] '
                    'model_seed), the predictors\' noise, the on-demand '
                    'traffic'),
    cfg.StrOpt('seeds',
               help='evaluate every seed of A-B (e.g. 0-9; or A,B,C) and '
                    'report the spread (min/median/max) of each headline '
                    'number; the rest of the output is the first seed\'s. '
                    'Overrides --seed'),
    cfg.IntOpt('cores', default=9, help='cores per server'),
    cfg.IntOpt('ways', default=18,
               help='usable LLC ways per server (the other 2 are DDIO\'s)'),
    cfg.IntOpt('packet-bytes', default=64, min=64, max=9216,
               help='packet size of the traffic'),
    cfg.FloatOpt('time-limit',
                 help='MILP time limit per set, seconds (default: '
                      '[resq_evaluation] time_limit)'),
    cfg.FloatOpt('mip-gap',
                 help='stop the MILP at this relative gap (default: '
                      '[resq_evaluation] mip_gap)'),
    cfg.StrOpt('slo-file',
               help='also evaluate the SLO set in this JSON file (set '
                    '"custom"; terms name catalog NFs)'),
    cfg.StrOpt('slo-targets', default=run.BOTH,
               choices=(run.BOTH, slosets.BINDING, slosets.PAPER),
               help='latency targets of the SLO sets: "binding" (a third '
                    'of the terms target the solo p95 at 60 to 85 percent '
                    'load, so the target limits an instance\'s load), '
                    '"paper" '
                    '(every term targets the solo p95 at full load, as '
                    'ResQ section 6 does) or "both" (binding, then paper, '
                    'printed side by side with the paper\'s figures; the '
                    'JSON\'s top level is the binding setup, "setups" '
                    'holds both)'),
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
    conf = cmdline.parse(argv, 'resq-evaluate', DESCRIPTION,
                         (prof_conf.register_opts, nova_conf.register_opts),
                         cli_opts)
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
                           noise_pct=conf.noise_pct, seeds=conf.seeds,
                           slo_targets=conf.slo_targets)
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
