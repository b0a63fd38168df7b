"""A compute host that looks like a CAT host, with real KVM guests.

Two hosts of :mod:`resq_fake.host` (a real libvirtd each, in a
private mount namespace over the FUSE resctrl), 64 MiB guests with no
disk, the real AgentManager on libvirt's lifecycle events:

* ``setup_s``: ``fake_host up`` of one host (libvirtd answering);
* ``boot_to_partition_s``: a guest's start requested to its group holding
  its mask and CPU (median of 5; the max too);
* ``delete_to_release_s``: the guest destroyed to its group gone;
* ``live_migration_s``: libvirt's live migration of a running guest from
  one host's libvirtd to the other's;
* ``rss_mb``: resident memory of libvirtd, the FUSE server and one guest's
  QEMU.

This is not yet the cloud's benchmark (no Nova: ``server create`` is
libvirt's create here).
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

import fixtures
import libvirt
from oslo_config import cfg

from resq_agent import conf as agent_conf
from resq_agent import discovery
from resq_agent import enforcer
from resq_agent import manager
from resq_agent import monitor
from resq_agent import privsep
from resq_agent import virt
from resq_common import resctrl
from resq_fake import host as fake_host
from tests.fixtures import compute_host


def _up(state):
    t0 = time.monotonic()
    subprocess.run([sys.executable, '-m', 'resq_fake.host', 'up',
                    '--state', state], check=True, capture_output=True)
    return time.monotonic() - t0


def _agent(conf, paths):
    conf.set_override('resctrl_root', paths.resctrl, 'resq_agent')
    conf.set_override('sysfs_root', paths.sysfs, 'resq_agent')
    conf.set_override('state_dir', paths.state, 'resq_agent')
    topo = discovery.discover(paths.resctrl, paths.sysfs)
    mgr = manager.AgentManager(
        conf, topo, enforcer.ResctrlEnforcer(paths.resctrl),
        virt.Hypervisor(paths.uri), monitor=monitor.Monitor(paths.resctrl, 0))
    mgr.reconcile()
    mgr.start(watch_libvirt=True)
    return mgr


def _wait(predicate, seconds=60):
    t0 = time.monotonic()
    while not predicate():
        if time.monotonic() - t0 > seconds:
            raise RuntimeError('timed out')
        time.sleep(0.01)
    return time.monotonic() - t0


def _rss_mb(pid):
    with open('/proc/%d/status' % pid) as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return round(int(line.split()[1]) / 1024.0, 1)
    return None


def _guest_xml(accel, uid, ways=4):
    return compute_host.guest_xml(accel, uid, (1,), ways)


def _cycle(conn, rt, accel):
    """One boot, partition, destroy, release: their two times."""
    uid = str(uuid.uuid4())
    dom = conn.defineXML(_guest_xml(accel, uid))
    t0 = time.monotonic()
    dom.create()
    owned = lambda: [g for g in rt.owned_groups()  # noqa: E731
                     if 'resq-' + uid in [g] + rt.mon_groups(g)]
    _wait(owned)
    boot = time.monotonic() - t0
    t1 = time.monotonic()
    dom.destroy()
    _wait(lambda: not owned())
    release = time.monotonic() - t1
    dom.undefine()
    return boot, release


def run(tmp):
    conf = cfg.ConfigOpts()
    agent_conf.register_opts(conf)
    conf([], project='resq')
    privsep.resctrl_pctxt.use_conf(conf)
    privsep.resctrl_pctxt.set_client_mode(False)
    hosts = [fake_host.Paths(os.path.join(tmp, n)) for n in ('h1', 'h2')]
    figures = {'setup_s': round(_up(hosts[0].state), 2)}
    _up(hosts[1].state)
    try:
        accel = fake_host.preflight()
        mgr = _agent(conf, hosts[0])
        rt = resctrl.Resctrl(hosts[0].resctrl)
        conn = libvirt.open(hosts[0].uri)
        cycles = [_cycle(conn, rt, accel) for _ in range(5)]
        boots = [b for b, _ in cycles]
        figures.update(
            boot_to_partition_s=round(statistics.median(boots), 3),
            boot_to_partition_max_s=round(max(boots), 3),
            delete_to_release_s=round(statistics.median(
                [r for _, r in cycles]), 3), accel=accel)
        mgr.stop()
        figures.update(_migrate(conn, libvirt.open(hosts[1].uri), accel,
                                hosts[0]))
    finally:
        for paths in hosts:
            fake_host.down(paths)
    return figures


def _migrate(src, dst, accel, paths):
    uid = str(uuid.uuid4())
    dom = src.defineXML(_guest_xml(accel, uid))
    dom.create()
    qemu = fake_host.qemu_pids(paths)
    rss = {'libvirtd': _rss_mb(fake_host.alive(paths.pid)),
           'fuse': _rss_mb(fake_host.alive(paths.fuse_pid)),
           'qemu_guest': _rss_mb(qemu[0]) if qemu else None}
    t0 = time.monotonic()
    moved = dom.migrate(dst, libvirt.VIR_MIGRATE_LIVE
                        | libvirt.VIR_MIGRATE_PERSIST_DEST
                        | libvirt.VIR_MIGRATE_UNDEFINE_SOURCE,
                        None, 'tcp://127.0.0.1', 0)
    took = time.monotonic() - t0
    moved.destroy()
    moved.undefine()
    return {'live_migration_s': round(took, 2), 'rss_mb': rss}


def main(argv):
    with fixtures.MonkeyPatch('resq_common.resctrl_writer.CHECK_FS_MAGIC',
                              False), tempfile.TemporaryDirectory() as tmp:
        figures = run(tmp)
    print('%-28s %s' % ('figure', 'value'))
    for key, value in sorted(figures.items()):
        print('%-28s %s' % (key, value))
    print(json.dumps(figures, sort_keys=True))
    return 0
