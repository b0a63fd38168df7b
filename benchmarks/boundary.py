"""The privilege boundary: attacks tried, and what the daemon costs.

Runs every attack of ``tests/host/boundary_attacks.py`` as an
unprivileged user (``resq-attacker``, created and removed again) against
a daemon with the defence under test turned off and against the real
``resq-privsep-daemon``:

* ``privileged_attacks_tried`` / ``privileged_attacks_succeeded``: how
  many attacks ran and how many made the real daemon do the attacker's
  bidding (target 0); ``weakened_attacks_succeeded``: how many worked
  against their weakened daemon (each should, or it proves nothing);
* ``daemon_capbnd`` / ``daemon_no_new_privs``: the running daemon's
  bounding set (``/proc/PID/status``, hex) and ``no_new_privs``;
* ``partition_calls_*_ms``: the median time of the privileged calls the
  agent makes to partition one new instance (shrink the default group,
  create the group, write its masks, assign its CPUs: the enforcer's
  order) through the real daemon's socket as the agent's user
  (``daemon``), through a stock oslo.privsep daemon the caller starts
  (``oslo``: ``privsep-helper`` through ``helper_command``, no sudo, the
  old way) and in-process (no boundary);

The agent's event to partition time through the daemon is measured by
``python -m benchmarks agent --through-daemon`` (the agent sends a pass's
writes as one batch, ``apply_ops``; the calls here are the single ones).

Needs root: ``python -m benchmarks boundary [--reps N]``.
"""

import argparse
import json
import sys

CALLS = ('write_default_l3_masks', 'create_group', 'write_l3_masks',
         'assign_cpus')


def main(argv):
    parser = argparse.ArgumentParser(prog='python -m benchmarks boundary')
    parser.add_argument('--reps', type=int, default=200,
                        help='partitions timed per mode (default 200)')
    args = parser.parse_args(argv)
    sys.dont_write_bytecode = True
    from tests.host import boundary_attacks as ba

    why = ba.Lab.unavailable()
    if why:
        print('boundary benchmark: %s' % why, file=sys.stderr)
        return 2
    with ba.Lab() as lab:
        print('... %d attacks, each against a weakened and the real daemon'
              % len(ba.ATTACKS), flush=True)
        outcomes = ba.run_all(lab)
        print('... the running daemon\'s status', flush=True)
        status = ba.real_daemon_status(lab)
        print('... %d partitions each through the daemon, oslo\'s '
              'daemon and in-process, taking turns' % args.reps, flush=True)
        timings = ba.time_partitions(lab, args.reps)
    errors = [o for o in outcomes if o.against_real is None]
    real_hits = [o for o in outcomes if o.against_real]
    weak_hits = [o for o in outcomes if o.against_weakened]
    daemon_ms = timings['daemon']['median_ms']
    inproc_ms = timings['inprocess']['median_ms']

    print()
    print('%-24s %-10s %-10s' % ('attack', 'weakened', 'real'))
    for o in outcomes:
        def word(v):
            return 'error' if v is None else ('ROOT' if v else 'refused')
        print('%-24s %-10s %-10s' % (o.name, word(o.against_weakened),
                                     word(o.against_real)))
    for o in outcomes:
        print('  %s: %s' % (o.name, o.detail))
    print()
    print('daemon pid %d: NoNewPrivs %s, CapBnd %s, CapEff %s; child: %s'
          % (status['pid'], status['NoNewPrivs'], status['CapBnd'],
             status['CapEff'], ', '.join(
                 'NoNewPrivs %s CapBnd %s' % (c['NoNewPrivs'], c['CapBnd'])
                 for c in status['children']) or 'none'))
    print()
    print('one partition\'s privileged calls (%s), median of %d'
          % (' + '.join(CALLS), args.reps))
    print('%-34s %10s %10s' % ('path', 'median ms', 'p90 ms'))
    for mode, label in (('daemon', 'resq-privsep-daemon socket'),
                        ('oslo', 'oslo privsep-helper (old way)'),
                        ('inprocess', 'in-process (no boundary)')):
        print('%-34s %10.3f %10.3f' % (label, timings[mode]['median_ms'],
                                       timings[mode]['p90_ms']))
    figures = {
        'benchmark': 'boundary',
        'privileged_attacks_tried': len(outcomes),
        'privileged_attacks_succeeded': len(real_hits),
        'privileged_attacks_succeeded_names': [o.name for o in real_hits],
        'weakened_attacks_succeeded': len(weak_hits),
        'attack_errors': [o.name for o in errors],
        'attacks': {o.name: {'weakened': o.against_weakened,
                             'real': o.against_real} for o in outcomes},
        'daemon_capbnd': status['CapBnd'],
        'daemon_no_new_privs': int(status['NoNewPrivs']),
        'daemon_child_capbnd': [c['CapBnd'] for c in status['children']],
        'daemon_child_no_new_privs': [int(c['NoNewPrivs'])
                                      for c in status['children']],
        'partition_calls': list(CALLS),
        'partition_reps': args.reps,
        'partition_calls_daemon_ms': round(daemon_ms, 3),
        'partition_calls_oslo_ms': round(timings['oslo']['median_ms'], 3),
        'partition_calls_inprocess_ms': round(inproc_ms, 3),
    }
    print(json.dumps(figures, sort_keys=True))
    return 0
