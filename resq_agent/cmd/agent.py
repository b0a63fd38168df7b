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
"""``resq-agent``: inspect the cache, reconcile once, show status, run.

``cleanup`` removes the agent's resctrl groups once it is stopped.
"""

import json
import sys
import time

from resq_agent import conf as agent_conf
from resq_agent import discovery
from resq_common import cmdline
from resq_profiler import exception

DESCRIPTION = '''The ResQ agent of a compute host: it discovers the L3
cache domains and their ways, reports them to Placement, gives each ResQ
instance its ways (resctrl classes of service) and keeps them as
instances come and go. Its subcommands inspect the host, run one
reconcile pass, print what is enforced, run NFVnice passes, run the
service, or remove its resctrl groups once it is stopped. JSON
documents go to standard output, logs to standard error.'''

# Rates are differences of two readings: the first pass measures nothing.
MIN_NFVNICE_PASSES = 2


def _inspect(conf):
    if conf.command.root:
        conf.set_override('resctrl_root', conf.command.root, 'resq_agent')
    if conf.command.sysfs_root:
        conf.set_override('sysfs_root', conf.command.sysfs_root,
                          'resq_agent')
    topology = discovery.discover_from_conf(conf)
    _print(discovery.describe(topology, conf.resq_agent.default_group_ways,
                              conf.resq_agent.default_group_io_ways,
                              conf.resq_agent.backend == 'resctrl'))
    return 0


def _manager(conf, hooks=()):
    from resq_agent import manager
    return manager.AgentManager.from_conf(conf, post_apply_hooks=hooks)


def reconcile_failures(summary):
    """What failed in a reconcile pass, a line each; none when all went.

    Instances refused a partition (``refused``, each with its reason) are
    the agent's decision, not a failure.
    """
    lines = []
    if summary.get('error'):
        lines.append('%s; nothing was changed: check that libvirtd runs and '
                     '[resq_agent] libvirt_uri' % summary['error'])
    if summary.get('placement_error'):
        lines.append('%s; the partitions were enforced from what the agent '
                     'knew (the last answers, the flavors)'
                     % summary['placement_error'])
    if summary.get('inventory_error'):
        lines.append('the cache inventory was not reported: %s'
                     % summary['inventory_error'])
    for error in summary.get('errors') or ():
        lines.append('enforcement: %s; the next reconcile retries' % error)
    return lines


def _reconcile(conf):
    summary = _manager(conf).reconcile()
    _print(summary)
    failures = reconcile_failures(summary)
    for line in failures:
        print('ERROR: %s' % line, file=sys.stderr)
    return 1 if failures else 0


def _status(conf):
    # Every dependency is asked at once, each within its own deadline, so
    # a status while libvirt, OVSDB and Placement all hang costs the
    # longest deadline, and says which hang.
    from resq_agent import health
    from resq_common import deadline
    probes = health.start(conf)
    mgr = _manager(conf)
    mgr.reconcile(enforce=False)
    doc = mgr.status()
    for probe in probes:
        probe.join()
    doc['dependencies'] = deadline.health()
    _print(doc)
    return 0


def _run(conf):
    # Imported here: the service pulls in oslo.messaging, which the other
    # subcommands do not need.
    from resq_agent import dma
    from resq_agent import service
    hooks = [dma.DmaSizer(conf)] if conf.resq_agent.dma_sizing else []
    mgr = _manager(conf, hooks)
    svc = service.AgentService(conf, mgr)
    # Start-up reconcile before anything else runs (idempotent if the
    # service does one too); then libvirt events and the service.
    mgr.reconcile()
    mgr.start()
    if conf.resq_agent.metrics_listen:
        from resq_agent import metrics as agent_metrics
        from resq_common import metrics
        metrics.serve(conf.resq_agent.metrics_listen,
                      agent_metrics.AgentCollector(mgr))
    svc.start()
    _run_periodic(conf, mgr, svc)
    try:
        svc.wait()
    finally:
        svc.stop()
        mgr.stop()
    return 0


def _run_periodic(conf, mgr, svc):
    """The host report's heartbeat and NFVnice passes, every interval.

    Their intervals are mutable: each wait reads the option again, and
    the host reporter, which keeps its interval, gets the new one from a
    mutate hook (SIGHUP, see AgentService.reload).
    """
    opts = conf.resq_agent
    if mgr.host_report is not None:
        def _new_interval(conf, fresh):
            mgr.host_report.interval = opts.host_report_interval

        conf.register_mutate_hook(_new_interval)
        if opts.host_report_interval:
            # The reporter spreads its heartbeats (jitter, a random first
            # wait) and backs off while resq-api is busy or away.
            svc.run_every('resq-agent-host-report',
                          mgr.host_report.next_wait,
                          mgr.host_report.heartbeat)
    if opts.nfvnice:
        svc.run_every('resq-agent-nfvnice', lambda: opts.nfvnice_interval,
                      _nfvnice_controller(conf, mgr.hypervisor).run_once)


def _nfvnice_controller(conf, hypervisor=None):
    from resq_agent.nfvnice import controller
    return controller.Controller.from_conf(conf, hypervisor)


def _nfvnice(conf):
    # Rates are differences of two readings: the first pass measures
    # nothing, so --passes is at least 2 (refused as it is parsed).
    ctl = _nfvnice_controller(conf)
    actions = []
    for n in range(conf.command.passes):
        if n:
            time.sleep(conf.resq_agent.nfvnice_interval)
        summary = ctl.run_once()
        actions += summary.get('actions', [])
    # The last pass's measurements, every pass's writes.
    summary['actions'] = actions
    _print(summary)
    failed = [a for a in summary.get('actions', ())
              if a.get('outcome') in ('failed', 'missing', 'foreign')]
    return 1 if 'error' in summary or summary['errors'] or failed else 0


def _cleanup(conf):
    from resq_agent import cleanup

    # A dry run reads only: it may look while the agent runs.
    if not conf.command.dry_run:
        try:
            cleanup.check_not_running()
        except cleanup.AgentRunning as exc:
            print('ERROR: %s' % exc, file=sys.stderr)
            return 1
    doc = cleanup.plan(conf.resq_agent.resctrl_root)
    doc['dry_run'] = conf.command.dry_run
    try:
        doc['openflow'] = cleanup.plan_openflow(
            conf.resq_agent.nfvnice_bridge)
    except Exception as exc:
        doc['openflow'] = cleanup.openflow_unread(
            conf.resq_agent.nfvnice_bridge, exc)
    ok = 'error' not in (doc['openflow'] or {})
    if not conf.command.dry_run:
        ok = cleanup.execute(doc) and ok
        if doc['openflow'] and 'error' not in doc['openflow']:
            ok = cleanup.execute_openflow(doc['openflow']) and ok
    _print(doc)
    # What failed, and how to fix it, where a person reads it (the JSON
    # has each step's error; the log may be a file).
    for line in cleanup.failures(doc):
        print('ERROR: %s' % line, file=sys.stderr)
    return 0 if ok else 1


def _print(doc):
    print(json.dumps(doc, indent=2, sort_keys=True))


def _add_parsers(subparsers):
    p = subparsers.add_parser(
        'inspect', help='print the cache topology and the Placement '
        'inventory the agent would report, as JSON')
    p.add_argument('--root', metavar='DIR', help='resctrl root (default: '
                   '[resq_agent] resctrl_root)')
    p.add_argument('--sysfs-root', metavar='DIR', help='sysfs root '
                   '(default: [resq_agent] sysfs_root)')
    p.set_defaults(func=_inspect)
    p = subparsers.add_parser('reconcile', help='one full pass: read '
                              'libvirt and Placement, enforce, print the '
                              'summary as JSON; exit 1, saying what on '
                              'standard error, if something failed')
    p.set_defaults(func=_reconcile)
    p = subparsers.add_parser('status', help='print what is enforced and '
                              'measured, as JSON (changes nothing)')
    p.set_defaults(func=_status)
    p = subparsers.add_parser(
        'nfvnice', help='run NFVnice passes (CPU shares, backpressure) '
        'nfvnice_interval seconds apart, print the last one (and every '
        'pass\'s actions) as JSON; exit '
        '1 if something could not be read or written')
    p.add_argument('--passes', type=cmdline.integer(
        MIN_NFVNICE_PASSES, why=': rates need two readings'),
        default=MIN_NFVNICE_PASSES, metavar='N',
        help='passes to run, at least %d: rates need two readings'
        % MIN_NFVNICE_PASSES)
    p.set_defaults(func=_nfvnice)
    p = subparsers.add_parser(
        'cleanup', help='remove the agent\'s resctrl groups from this host '
        'and give the default group every way again (after "resq-agent '
        'run" is stopped; refused while it runs); print the plan and each '
        'outcome as JSON, exit 1 if a step failed')
    p.add_argument('--dry-run', action='store_true',
                   help='print what would be removed; change nothing')
    p.set_defaults(func=_cleanup)
    p = subparsers.add_parser('run', help='run the agent service')
    p.set_defaults(func=_run)


def _parse_config(argv):
    # stdout carries the JSON documents; logs go to stderr.
    conf = cmdline.parse(argv, 'resq-agent', DESCRIPTION,
                         (agent_conf.register_opts,), commands=_add_parsers,
                         logs_to_stderr=True)
    # The privsep daemon gets the agent's options and config files.
    # Imported once the command line is good: oslo.privsep's daemon module
    # imports eventlet, which --help and a usage error do without.
    from resq_agent import privsep as agent_privsep

    agent_privsep.init(conf)
    return conf


def main(argv=None):
    conf = _parse_config(argv)
    try:
        return conf.command.func(conf)
    except exception.ResQException as exc:
        print('ERROR: %s' % exc, file=sys.stderr)
        return 1
    except ImportError as exc:
        if exc.name != 'libvirt':
            raise
        # libvirt-python is the [agent] extra's: API and scheduler hosts
        # install resq-nova without it.
        print('ERROR: libvirt-python is not installed: install resq-nova '
              'with its agent extra (pip install "resq-nova[agent]"; it '
              'builds against libvirt-dev and pkg-config)', file=sys.stderr)
        return 1


if __name__ == '__main__':
    sys.exit(main())
