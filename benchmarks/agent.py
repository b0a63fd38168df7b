"""The compute-host agent's reaction time (issue 5).

On a temporary resctrl tree with two cache domains, libvirt's
test:///default driver holding Nova-shaped domains, and Placement
in-process (real allocations):

* ``reconcile_200_s``: a fresh agent reconciles 200 running instances from
  scratch (inventory report, libvirt listing, 200 allocation reads,
  layout, 200 resctrl groups written, 200 persistent cachetunes defined);
* ``event_to_applied_s``: with those 200 enforced, the time from starting
  one more instance (libvirt's lifecycle event) to its group's schemata
  being written (median of 10; the max is reported too);
* ``metrics_scrape_ms``: one rendering of the agent's Prometheus
  ``/metrics`` with those 200 instances (median of 20; target <= 50;
  ``metrics_scrape_max_ms`` the slowest, ``metrics_scrape_cpu_ms`` the
  median CPU time, which the machine's other load, ``load_avg_1m``,
  inflates less);
* ``partitions_per_domain``: on a 2-domain host with 16 classes of
  service (the fake kernel, which refuses a 17th group), how many
  instances the agent partitions in each domain when each asks for one
  (the fewest over the two domains), and ``clos_offered_per_domain``,
  the classes Placement is offered per domain (target 15; 7 when a class
  served one instance);
* ``hung_dependency_status_s``: ``resq-agent status`` (the real command,
  its default deadlines) while libvirt, OVSDB and Placement all accept
  connections and never answer; it must answer, naming the three;
* ``schemata_write_s``: one privileged schemata write of a group with its
  L3 and MB lines (issue 46: memory bandwidth), on a tree with Intel's
  percentage MBA (the writer reads ``info/MB`` and the mount's options and
  checks every value), against ``schemata_write_l3_s``, the same write of
  the L3 line alone on a tree without MBA, as every write was before
  (medians of :data:`WRITES` each, the two interleaved; one batch through
  ``apply_ops`` in-process, a new writer each, as a pass does; the trees
  in a tmpfs (``/dev/shm`` where there is one), their files plain files:
  the kernel's own handling is not in it, nor a disk file system's
  truncation, which resctrl's files do not have);
  ``schemata_write_mb_ratio`` (target <= 1.10) is their ratio;
* ``mba_feedback_error_pct``: a group's bandwidth against its MiB/s
  target under percentage MBA, closed from MBM readings
  (:mod:`resq_agent.mba_feedback`): the agent's ``proportional``
  controller beside ``kernel_step``, the kernel's mba_sc stepping, each
  the mean absolute error in percent of the target after five readings of
  each phase, ``mean`` and ``worst_seed`` over :data:`FEEDBACK_SEEDS`
  modelled groups (a linear throttle of 60-150 MiB/s per percent, 3 % MBM
  noise, a demand above the target, then below it, then above again). A
  percentage step of 10 moves a group by 10 % of its peak, which is
  17-50 % of these targets: most of either error is the step itself;
* with ``--through-daemon`` (root only), ``event_to_applied_daemon_s``:
  the same event -> partition time, measured in the same run, with every
  resctrl write going through a real ``resq-privsep-daemon`` that root
  started (the production boundary), and
  ``event_to_applied_daemon_ratio`` (target <= 1.10): its median over the
  median of the in-process events interleaved with it in the same run
  (``event_to_applied_inprocess_paired_s``; one agent, events alternating
  between the two, so both see the same tree and load), with the
  privileged batch's own time in each (``privileged_batch_*_ms``).

Real CPUs have 16 classes of service and about 20 ways, so no real host
runs 200 partitioned instances; the tree here has 2 x 128 ways and 256
classes of service so that every instance gets a partition and the agent
does all the work it would do for each.
"""

import collections
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

import libvirt
from oslo_config import cfg

from resq_agent import conf as agent_conf
from resq_agent import discovery
from resq_agent import enforcer
from resq_agent import inventory
from resq_agent import manager
from resq_agent import mba_feedback
from resq_agent import metrics as agent_metrics
from resq_agent import monitor
from resq_agent import privsep
from resq_agent.privsep import resctrl as resctrl_priv
from resq_agent import virt
from resq_common import cache_domain
from resq_common import cbm
from resq_common.clients import placement as placement_client
from resq_common import metrics
from resq_common import resctrl
from resq_common import resctrl_writer
from tests.fixtures import hung as hung_fixture
from tests.fixtures import libvirt as libvirt_fixture
from tests.fixtures import placement as serial_placement
from tests.fixtures import resctrl as resctrl_fixture
from tests.fixtures import sysfs as sysfs_fixture

WAYS = 128
INSTANCES = 200
# Modelled groups the MBA feedback figures are taken over.
FEEDBACK_SEEDS = 20
EVENTS = 10
# Privileged schemata writes timed for schemata_write_s, of each kind.
WRITES = 1000
# Events of each half with --through-daemon, interleaved.
DAEMON_EVENTS = 12
CPUS = {0: tuple(range(0, 128)), 1: tuple(range(128, 256))}


@contextlib.contextmanager
def _fixtures(*fixtures_):
    """Set the fixtures up, yield them, clean them up in reverse."""
    done = []
    try:
        for fx in fixtures_:
            fx.setUp()
            done.append(fx)
        yield fixtures_
    finally:
        for fx in reversed(done):
            try:
                fx.cleanUp()
            except libvirt.libvirtError:
                pass


def _allocate(client, root, consumer, domain_id, ways, tries=5):
    """Allocate ``ways`` for ``consumer``, as Nova would.

    Retried as Placement's clients retry: on a generation conflict (the
    running agent's inventory report updates the provider at the same
    time), and on the in-process SQLite database's "transaction within a
    transaction" when two threads write at once.
    """
    rp = cache_domain.provider_uuid(root, domain_id)
    body = {'allocations': {rp: {'resources': {'CUSTOM_LLC_WAY': ways}}},
            'project_id': 'p', 'user_id': 'u', 'consumer_generation': None}
    for attempt in range(tries):
        resp = client._adapter.put('/allocations/%s' % consumer, json=body,
                                   microversion='1.28', raise_exc=False)
        if resp.status_code == 204:
            return
        if resp.status_code == 409 and 'consumer generation' in resp.text:
            # An earlier try that failed after its write went through.
            got = client._adapter.get('/allocations/%s' % consumer,
                                      microversion='1.28', raise_exc=False)
            have = got.json().get('allocations', {}) if got.ok else {}
            if have.get(rp, {}).get('resources') == {'CUSTOM_LLC_WAY': ways}:
                return
        if resp.status_code not in (409, 500):
            break
        time.sleep(0.1 * (attempt + 1))
    raise AssertionError('allocation of %s failed: %d %s'
                         % (consumer, resp.status_code, resp.text))


def _in_effect(tree, domain, cpu, ways):
    """Whether the partition is really in effect.

    The group holding the CPU (a CPU is in one group) has a mask of that
    many ways in its domain.
    """
    for group in tree.owned_groups():
        try:
            if cpu not in resctrl.parse_cpu_list(tree.read_cpus(group)):
                continue
            mask = tree.read_schemata(group).get('L3', {}).get(domain)
            return mask is not None and cbm.bits(mask) == ways
        except (OSError, ValueError):
            return False
    return False


def _wait_group(root, consumer, domain, cpu, ways, deadline_s=30):
    """Wait until the instance's CPU is in a group with its mask.

    Not until a group's schemata file exists: in a copied tree the file
    is created empty by the first write, before the mask and the CPUs.
    """
    tree = resctrl.Resctrl(root)
    end = time.monotonic() + deadline_s
    while not _in_effect(tree, domain, cpu, ways):
        if time.monotonic() > end:
            raise RuntimeError('instance %s (CPU %d) was never enforced'
                               % (consumer, cpu))
        time.sleep(0.0005)


def _counters(root, mgr):
    """CMT/MBM counters where the kernel keeps them, for each instance.

    A copied tree has no monitoring groups: they are laid out here, with
    every domain's three counters, as a real host's are read.
    """
    for a in mgr.status()['instances']:
        mon = os.path.join(root, 'resq-cos%d' % a['clos'], 'mon_groups',
                           'resq-' + a['uuid'], 'mon_data')
        for d in CPUS:
            path = os.path.join(mon, 'mon_L3_%02d' % d)
            os.makedirs(path, exist_ok=True)
            for name in ('llc_occupancy', 'mbm_total_bytes',
                         'mbm_local_bytes'):
                with open(os.path.join(path, name), 'w') as f:
                    f.write('%d\n' % (1 << 20))


def scrape_ms(mgr, root, times=20):
    """Milliseconds of one /metrics rendering of ``mgr``.

    With its monitor reading every instance's counters, as the running
    agent's does. :returns: ``(median, max, median CPU time)`` over
    ``times`` renderings (CPU time: what the machine's other load
    inflates less).
    """
    _counters(root, mgr)
    mgr.monitor = monitor.Monitor(root, 0)
    collector = agent_metrics.AgentCollector(mgr)
    took, cpu = [], []
    for _ in range(times):
        t0, c0 = time.monotonic(), time.process_time()
        text = metrics.render(collector)
        took.append((time.monotonic() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
    assert 'resq_instance_llc_occupancy_bytes{' in text, text[:2000]
    mgr.monitor = None
    return statistics.median(took), max(took), statistics.median(cpu)


def partitions_per_domain(conf):
    """``(partitions enforced in the fuller domain's worst, offered)``."""
    cpus = {0: tuple(range(0, 20)), 1: tuple(range(20, 40))}
    with _fixtures(sysfs_fixture.SysfsTree(domains=cpus, ways=20),
                   resctrl_fixture.ResctrlTree(ways=20, domains=(0, 1),
                                               num_closids=16, foreign=(),
                                               kernel=True),
                   libvirt_fixture.NovaDomains()) as (sysfs, tree, doms):
        conf.set_override('resctrl_root', tree.root, 'resq_agent')
        for d in (0, 1):
            for n in range(16):
                doms.add(str(uuid.UUID(int=(d << 16) + n + 1)),
                         (cpus[d][n],), ways=1)
        topo = discovery.discover(tree.root, sysfs.root)
        mgr = manager.AgentManager(
            conf, topo, enforcer.ResctrlEnforcer(tree.root),
            virt.Hypervisor(libvirt_fixture.URI))
        summary = mgr.reconcile()
        assert not summary['errors'], summary['errors'][:3]
        per_domain = collections.Counter(
            i['domain_id'] for i in mgr.status()['instances'])
        groups = [g for g in resctrl.Resctrl(tree.root).groups()]
        assert len(groups) <= 15, groups
        offered = min(
            c.inventory()['CUSTOM_LLC_CLOS']['total'] - 1
            for c in inventory.Inventory(None, 'cn1', 1).cache_domains(
                topo))
    return min(per_domain[0], per_domain[1]), offered


def hung_status():
    """Seconds ``resq-agent status`` takes while its dependencies hang."""
    with tempfile.TemporaryDirectory(dir='/tmp') as tmp:
        sysfs = sysfs_fixture.SysfsTree(domains={0: (0, 1), 1: (2, 3)})
        tree = resctrl_fixture.ResctrlTree(domains=(0, 1))
        libvirtd = hung_fixture.HungUnixSocket(os.path.join(tmp, 'lv.sock'))
        ovsdb = hung_fixture.HungUnixSocket(os.path.join(tmp, 'db.sock'))
        placement = hung_fixture.HungService()
        with _fixtures(sysfs, tree, libvirtd, ovsdb, placement):
            conf_file = os.path.join(tmp, 'agent.conf')
            with open(conf_file, 'w') as f:
                f.write('[resq_agent]\nresctrl_root = %s\nsysfs_root = %s\n'
                        'libvirt_uri = qemu+unix:///system?socket=%s\n'
                        'ovsdb_connection = unix:%s\n[placement]\n'
                        'endpoint_override = %s\n' % (
                            tree.root, sysfs.root, libvirtd.path,
                            ovsdb.path, placement.endpoint))
            started = time.monotonic()
            proc = subprocess.run(
                [sys.executable, '-m', 'resq_agent.cmd.agent',
                 '--config-file', conf_file, 'status'],
                capture_output=True, text=True, timeout=300)
            took = time.monotonic() - started
    if proc.returncode:
        raise RuntimeError('resq-agent status failed: %s' % proc.stderr)
    deps = json.loads(proc.stdout)['dependencies']
    states = {name: deps.get(name, {}).get('state')
              for name in ('libvirt', 'ovsdb', 'placement')}
    return took, states


def schemata_writes(conf, writes=WRITES):
    """Median seconds of ``(L3 alone, L3 + MB)`` schemata writes.

    Interleaved, so that both see the same machine load.
    """
    shm = '/dev/shm' if os.path.isdir('/dev/shm') else None
    with tempfile.TemporaryDirectory(dir=shm) as tmp, _fixtures(
            resctrl_fixture.ResctrlTree(ways=20, domains=(0, 1),
                                        root=os.path.join(tmp, 'l3')),
            resctrl_fixture.ResctrlTree(ways=20, domains=(0, 1),
                                        resources={'MB': {}},
                                        root=os.path.join(tmp, 'mb'))
    ) as trees:
        ops = ([['schemata', 'resq-cos1', 'resq-cos1', {0: 0xf, 1: 0xff}]],
               [['schemata', 'resq-cos1', 'resq-cos1', {0: 0xf, 1: 0xff},
                 {0: 30, 1: 100}]])
        took = ([], [])
        for i in range(2 * writes + 2):
            kind = i % 2
            conf.set_override('resctrl_root', trees[kind].root,
                              'resq_agent')
            if i < 2:
                resctrl_priv.create_group('resq-cos1')
            started = time.perf_counter()
            out = resctrl_priv.apply_ops(ops[kind])
            elapsed = time.perf_counter() - started
            assert out == [None], out
            if i >= 2:              # the first of each warms the caches
                took[kind].append(elapsed)
        assert 'MB:0=30;1=100' in trees[1].read('resq-cos1', 'schemata')
        assert 'MB' not in trees[0].read('resq-cos1', 'schemata')
        conf.clear_override('resctrl_root', 'resq_agent')
    return statistics.median(took[0]), statistics.median(took[1])


@contextlib.contextmanager
def _privileged_daemon(conf, tree_root, tmp):
    """A real resq-privsep-daemon on ``tree_root``; the agent connects.

    Root's file, the socket and the daemon's log live in ``tmp``; the
    context leaves in-process mode for the daemon's socket.
    """
    from resq_agent import privsep_boot

    root_conf = os.path.join(tmp, 'resq-agent-privsep.conf')
    sockdir = os.path.join(tmp, 'run')
    with open(root_conf, 'w') as f:
        f.write('[resq_agent]\nresctrl_root = %s\nresctrl_fake = true\n\n'
                '[resq_privsep_daemon]\nsocket_dir = %s\n'
                'client_user = root\n' % (tree_root, sockdir))
    os.chmod(tmp, 0o755)
    log = open(os.path.join(tmp, 'daemon.log'), 'w')
    proc = subprocess.Popen(privsep_boot.command(
        ['--context', 'resctrl', '--config-file', root_conf]),
        stdout=log, stderr=subprocess.STDOUT)
    sock = os.path.join(sockdir, 'resctrl.sock')
    try:
        deadline = time.monotonic() + 120
        while not os.path.exists(sock):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError('resq-privsep-daemon did not start: see '
                                   '%s' % log.name)
            time.sleep(0.1)
        conf.set_override('daemon_socket', sock, 'resq_privsep_resctrl')
        privsep.resctrl_pctxt.set_client_mode(True)
        yield proc
    finally:
        privsep.resctrl_pctxt.stop()
        privsep.resctrl_pctxt.set_client_mode(False)
        conf.clear_override('daemon_socket', 'resq_privsep_resctrl')
        proc.terminate()
        proc.wait(30)
        log.close()


def _events(client, root, doms, tree_root, domain, cpus, first, idle,
            modes=None):
    """Start one instance per CPU of ``cpus``; seconds to each partition.

    Each starts once the agent is idle (``idle()`` returns): a pass that
    follows an instance's start (its definition rewritten with its
    ``<cachetune>``) is not charged to the next instance.

    :param modes: with ``--through-daemon``, a callable that gets each
        event's index and sets where its privileged writes go, before the
        instance starts.
    """
    latencies = []
    for i, cpu in enumerate(cpus):
        consumer = str(uuid.UUID(int=first + i))
        dom_id = domain(i) if callable(domain) else domain
        _allocate(client, root, consumer, dom_id, 1)
        dom = doms.conn.defineXML(libvirt_fixture.nova_domain_xml(
            consumer, (cpu,), ways=1))
        doms.uuids.append(consumer)
        idle()
        if modes is not None:
            modes(i)
        t0 = time.monotonic()
        dom.create()
        _wait_group(tree_root, consumer, dom_id, cpu, 1)
        latencies.append(time.monotonic() - t0)
    return latencies


class _PrivilegedTimer:
    """Seconds of each pass's privileged batch, by where it went."""

    def __init__(self):
        self.seconds = collections.defaultdict(list)
        self.where = 'in-process'
        self._real = resctrl_priv.apply_ops

    def __call__(self, ops):
        started = time.monotonic()
        try:
            return self._real(ops)
        finally:
            self.seconds[self.where].append(time.monotonic() - started)


def _interleaved(client, root, doms, tree_root, make, conf, tmp):
    """Events alternating between in-process writes and the daemon.

    One running agent; event ``i`` goes in-process when ``i`` is even and
    through the daemon when odd, in cache domains taken in turn, so that
    both halves see the same tree, the same agent and the same machine
    load. :returns: (in-process latencies, daemon latencies, timer).
    """
    timer = _PrivilegedTimer()
    resctrl_priv.apply_ops = timer
    try:
        with _privileged_daemon(conf, tree_root, tmp):
            mgr = make()
            mgr.reconcile()
            mgr.start(watch_libvirt=True)

            def mode(i):
                daemon = bool(i % 2)
                timer.where = 'daemon' if daemon else 'in-process'
                privsep.resctrl_pctxt.set_client_mode(daemon)

            n = 2 * DAEMON_EVENTS
            lat = _events(client, root, doms, tree_root,
                          lambda i: (i // 2) % 2,
                          [CPUS[(i // 2) % 2][100 + (i // 4) * 2 + i % 2]
                           for i in range(n)], 20000, mgr.wait_idle,
                          modes=mode)
            mgr.stop()
    finally:
        resctrl_priv.apply_ops = timer._real
    return lat[0::2], lat[1::2], timer


def main(argv):
    through_daemon = '--through-daemon' in argv
    if through_daemon and os.geteuid() != 0:
        print('agent benchmark: --through-daemon needs root (the daemon is '
              'started by root)', file=sys.stderr)
        return 2
    privsep.resctrl_pctxt.set_client_mode(False)
    conf = cfg.ConfigOpts()
    agent_conf.register_opts(conf)
    conf([], project='resq')
    privsep.resctrl_pctxt.use_conf(conf)
    resctrl_writer.CHECK_FS_MAGIC = False
    with _fixtures(sysfs_fixture.SysfsTree(domains=CPUS, ways=WAYS,
                                           size='%dK' % (WAYS * 1536)),
                   resctrl_fixture.ResctrlTree(ways=WAYS, domains=(0, 1),
                                               num_closids=256),
                   serial_placement.SerialPlacement(),
                   libvirt_fixture.NovaDomains()) as (sysfs, tree, placement,
                                                      doms):
        conf.set_override('resctrl_root', tree.root, 'resq_agent')
        client = placement_client.PlacementClient.for_endpoint(
            placement.endpoint)
        root = client.ensure_provider(str(uuid.uuid4()), 'cn1')['uuid']
        topo = discovery.discover(tree.root, sysfs.root)
        inv = inventory.Inventory(client, 'cn1', 1)
        inv.report(topo)
        print('... defining %d instances' % INSTANCES, flush=True)
        for i in range(INSTANCES):
            consumer = str(uuid.UUID(int=i + 1))
            dom_id = i % 2
            _allocate(client, root, consumer, dom_id, 1)
            doms.add(consumer, (CPUS[dom_id][i // 2],), ways=1)

        def make():
            return manager.AgentManager(
                conf, topo, enforcer.ResctrlEnforcer(tree.root),
                virt.Hypervisor(libvirt_fixture.URI),
                inventory.Inventory(client, 'cn1', 1))

        started = time.monotonic()
        summary = make().reconcile()
        reconcile_s = time.monotonic() - started
        assert summary['instances'] == INSTANCES, summary
        assert not summary['refused'], summary['refused']
        assert not summary['errors'], summary['errors'][:3]

        mgr = make()
        mgr.reconcile()
        scrape, scrape_max, scrape_cpu = scrape_ms(mgr, tree.root)
        mgr.start(watch_libvirt=True)
        latencies = _events(client, root, doms, tree.root, 1,
                            [CPUS[1][114 + i] for i in range(EVENTS)], 10000,
                            mgr.wait_idle)
        mgr.stop()
        daemon_latencies = []
        if through_daemon:
            print('... %d events alternating in-process and through '
                  'resq-privsep-daemon' % (2 * DAEMON_EVENTS), flush=True)
            with tempfile.TemporaryDirectory() as tmp:
                paired, daemon_latencies, timer = _interleaved(
                    client, root, doms, tree.root, make, conf, tmp)
    event_s = statistics.median(latencies)
    print('... partitions per domain, 2 domains, 16 classes', flush=True)
    conf.clear_override('resctrl_root', 'resq_agent')
    partitions, offered = partitions_per_domain(conf)
    print('... resq-agent status with libvirt, OVSDB and Placement hung',
          flush=True)
    hung_s, hung_states = hung_status()
    print('... %d schemata writes of each kind, L3 alone and L3 + MB'
          % WRITES, flush=True)
    write_l3_s, write_mb_s = schemata_writes(conf)
    print()
    print('resq-agent on 2 cache domains x %d ways, %d instances, '
          'Placement in-process, libvirt test:///default'
          % (WAYS, INSTANCES))
    print('%-34s %10s %10s' % ('measure', 'seconds', 'target'))
    print('%-34s %10.3f %10s' % ('reconcile 200 from scratch', reconcile_s,
                                 '< 2'))
    print('%-34s %10.4f %10s' % ('event -> partition (median of %d)'
                                 % EVENTS, event_s, '< 1'))
    print('%-34s %10.4f %10s' % ('event -> partition (max)',
                                 max(latencies), ''))
    print('%-34s %10.1f %10s' % ('/metrics scrape, 200 instances (ms)',
                                 scrape, '<= 50'))
    print('%-34s %10d %10s' % ('partitions per domain (16 CLOS)',
                               partitions, '15'))
    print('%-34s %10d %10s' % ('CUSTOM_LLC_CLOS offered per domain',
                               offered, '15'))
    print('%-34s %10.1f %10s' % ('status, 3 dependencies hung', hung_s,
                                 '< 35'))
    print('   states reported: %s' % ', '.join(
        '%s %s' % kv for kv in sorted(hung_states.items())))
    print('%-34s %10.6f %10s' % ('schemata write, L3 alone (median)',
                                 write_l3_s, ''))
    print('%-34s %10.6f %10s' % ('schemata write, L3 + MB (median)',
                                 write_mb_s, ''))
    print('%-34s %10.3f %10s' % ('  L3 + MB / L3 alone (ratio)',
                                 write_mb_s / write_l3_s, '<= 1.10'))
    feedback = {}
    for name, cls in (('proportional', mba_feedback.ProportionalController),
                      ('kernel_step', mba_feedback.StepController)):
        errors = [mba_feedback.simulate(cls, seed)
                  for seed in range(FEEDBACK_SEEDS)]
        feedback[name] = {'mean': round(statistics.mean(errors), 2),
                          'worst_seed': round(max(errors), 2)}
        print('%-34s %10.2f %10s' % (
            'MBA feedback %s error %%' % name, feedback[name]['mean'],
            'worst %.2f' % feedback[name]['worst_seed']))
    figures = {'benchmark': 'agent',
               'mba_feedback_error_pct': feedback,
               'mba_feedback_seeds': FEEDBACK_SEEDS,
               'metrics_scrape_ms': round(scrape, 2),
               'metrics_scrape_max_ms': round(scrape_max, 2),
               'metrics_scrape_cpu_ms': round(scrape_cpu, 2),
               # The machine's load as it ended (others' benchmarks too).
               'load_avg_1m': round(os.getloadavg()[0], 2),
               'partitions_per_domain': partitions,
               'clos_offered_per_domain': offered,
               'hung_dependency_status_s': round(hung_s, 1),
               'hung_dependency_states': hung_states,
               'reconcile_200_s': round(reconcile_s, 3),
               'event_to_applied_s': round(event_s, 4),
               'event_to_applied_max_s': round(max(latencies), 4),
               'schemata_write_s': round(write_mb_s, 6),
               'schemata_write_l3_s': round(write_l3_s, 6),
               'schemata_write_mb_ratio': round(write_mb_s / write_l3_s, 3),
               'instances': INSTANCES, 'ways_per_domain': WAYS}
    if daemon_latencies:
        daemon_s = statistics.median(daemon_latencies)
        paired_s = statistics.median(paired)
        calls = {k: statistics.median(v) * 1000
                 for k, v in timer.seconds.items()}
        print('%-34s %10.4f %10s' % (
            '  interleaved, in-process (median of %d)' % len(paired),
            paired_s, ''))
        print('%-34s %10.4f %10s' % (
            '  interleaved, through the daemon', daemon_s, ''))
        print('%-34s %10.3f %10s' % (
            '  daemon / in-process (ratio)', daemon_s / paired_s,
            '<= 1.10'))
        print('%-34s %10.2f %10s' % (
            '  privileged batch, in-process (ms)',
            calls.get('in-process', 0), ''))
        print('%-34s %10.2f %10s' % (
            '  privileged batch, daemon (ms)', calls.get('daemon', 0), ''))
        figures.update({
            'event_to_applied_inprocess_paired_s': round(paired_s, 4),
            'event_to_applied_daemon_s': round(daemon_s, 4),
            'event_to_applied_daemon_max_s': round(max(daemon_latencies),
                                                   4),
            'event_to_applied_daemon_ratio': round(daemon_s / paired_s, 3),
            'privileged_batch_inprocess_ms': round(
                calls.get('in-process', 0), 2),
            'privileged_batch_daemon_ms': round(calls.get('daemon', 0), 2),
            'privileged_batches_per_event': round(
                len(timer.seconds.get('daemon', ())) / max(
                    1, len(daemon_latencies)), 2)})
    print(json.dumps(figures, sort_keys=True))
    return 0
