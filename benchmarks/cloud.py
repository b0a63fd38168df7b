"""The all-in-one cloud (tests/cloud/aio.py), measured.

* ``setup_s``: ``aio up`` from nothing (databases dropped, state removed)
  to the cloud answering with its example flavors made (target <= 1800);
* ``boot_to_partition_s``: ``server create`` with the example ResQ flavor
  (Nova API, scheduler with ResQ's filter, nova-compute on libvirt, a real
  KVM guest) to the guest's resctrl group holding its mask and CPUs
  (median of 3, the max too; target <= 60);
* ``delete_to_release_s``: ``server delete`` to its group gone;
* ``rss_mb``: resident memory by service (each service's process tree);
* ``tempest_passed`` / ``tempest_failed``: the tempest plugin on the cloud.

Runs as root in the ``cloud`` tox environment (``tox -e bench -- cloud``
builds it and re-runs itself there). ``--keep`` leaves the cloud up.
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import time

from resq_common import cbm
from resq_fake import host as fake_host

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLOUD_PYTHON = os.path.join(REPO, '.tox', 'cloud', 'bin', 'python')


def _tox():
    """A command that runs tox: the bench environment has none of its own.

    tools/bootstrap.sh installs tox for the interpreter the environments
    were made from; a ``tox`` on the PATH does too.
    """
    found = shutil.which('tox')
    if found:
        return [found]
    for python in (sys.executable, getattr(sys, '_base_executable', None),
                   shutil.which('python3')):
        if python and subprocess.run(
                [python, '-c', 'import tox'], capture_output=True,
                check=False).returncode == 0:
            return [python, '-m', 'tox']
    raise RuntimeError('the cloud benchmark makes the cloud tox environment '
                       'first, and no tox was found (on the PATH or for %s); '
                       'run bash tools/bootstrap.sh, which installs it'
                       % getattr(sys, '_base_executable', sys.executable))


def in_cloud_env():
    """Whether this Python is the cloud tox environment's.

    The services' commands are beside it; the bench environment has
    Nova's code too, for the functional harness, but not keystone-manage.
    """
    return os.path.exists(os.path.join(os.path.dirname(sys.executable),
                                       'keystone-manage'))


def _in_cloud_env(argv, name='cloud'):
    """Re-run benchmark ``name`` in the cloud tox environment.

    That environment has the services; it is made first when missing.
    """
    if not os.path.exists(CLOUD_PYTHON):
        subprocess.run(_tox() + ['-e', 'cloud', '--notest'], cwd=REPO,
                       check=True)
    # The whole command line again: --record is the first process's
    # option, and this one must keep it (execv leaves no first process).
    recorded = [a for a in sys.argv[1:] if a in ('--record', '--record-as')]
    if recorded and '--record-as' in sys.argv[1:]:
        i = sys.argv.index('--record-as')
        recorded = sys.argv[i:i + 2]
    os.execv(CLOUD_PYTHON, [CLOUD_PYTHON, '-m', 'benchmarks', name]
             + recorded + list(argv))


def _wait(predicate, seconds, what):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise RuntimeError('%s: not within %d s' % (what, seconds))


def _group_of(state, hosts, uuid):
    """``(class group path)`` holding the guest's monitoring group."""
    for host in hosts:
        root = state.host(host).resctrl
        for name in os.listdir(root):
            mon = os.path.join(root, name, 'mon_groups', 'resq-' + uuid)
            if name.startswith('resq-cos') and os.path.isdir(mon):
                return os.path.join(root, name)
    return None


def _partitioned(state, hosts, uuid, ways):
    group = _group_of(state, hosts, uuid)
    if not group:
        return None
    with open(os.path.join(group, 'schemata')) as f:
        masks = [part.split('=')[1] for line in f if line.startswith('L3')
                 for part in line.strip()[3:].split(';')]
    with open(os.path.join(group, 'cpus_list')) as f:
        cpus = f.read().strip()
    if cpus and any(cbm.bits(cbm.parse(m)) == ways for m in masks):
        return group
    return None


def _cycle(aio, state, conn, flavor, image):
    ways = int(flavor.extra_specs.get('resources_LLC:CUSTOM_LLC_WAY')
               or flavor.name.rsplit('.', 1)[1].rstrip('w'))
    t0 = time.monotonic()
    server = conn.compute.create_server(
        name='bench', flavor_id=flavor.id, image_id=image, networks='none')
    _wait(lambda: _partitioned(state, aio.HOSTS, server.id, ways), 120,
          'partition of %s' % server.id)
    boot = time.monotonic() - t0
    conn.compute.wait_for_server(server, wait=120)
    t0 = time.monotonic()
    conn.compute.delete_server(server)
    _wait(lambda: not _group_of(state, aio.HOSTS, server.id), 120,
          'release of %s' % server.id)
    release = time.monotonic() - t0
    conn.compute.wait_for_delete(server, wait=120)
    return boot, release


def _tree_rss_mb(pid):
    """Resident memory of ``pid`` and its descendants, in MiB."""
    out = subprocess.run(['ps', '-e', '-o', 'pid=,ppid=,rss='],
                         capture_output=True, text=True).stdout
    rows = [tuple(int(x) for x in line.split()) for line in out.splitlines()]
    tree, todo = {pid}, [pid]
    while todo:
        parent = todo.pop()
        for child, ppid, _rss in rows:
            if ppid == parent and child not in tree:
                tree.add(child)
                todo.append(child)
    return round(sum(rss for p, _pp, rss in rows if p in tree) / 1024.0, 1)


def _rss(aio, state):
    figures = {}
    for dirpath, _dirs, files in os.walk(state.path('run')):
        for name in files:
            if name.endswith('.pid'):
                pid = fake_host.alive(os.path.join(dirpath, name))
                if pid:
                    node = os.path.relpath(dirpath, state.path('run'))
                    key = name[:-4] if node == '.' else '%s@%s' % (
                        name[:-4], node)
                    figures[key] = _tree_rss_mb(pid)
    for host in aio.HOSTS:
        pid = fake_host.alive(state.host(host).pid)
        if pid:
            figures['libvirtd@%s' % host] = _tree_rss_mb(pid)
    return figures


def run(aio, state, keep):
    aio.use_hosts(state)  # a cloud left up is taken down with its hosts
    aio.down(state, purge=True)
    aio.use_hosts(state)  # RESQ_CLOUD_HOSTS, or the default
    try:
        # Inside: a start that fails half-way is torn down too.
        t0 = time.monotonic()
        aio.up(state)
        figures = {'setup_s': round(time.monotonic() - t0, 1),
                   'hosts': len(aio.HOSTS)}
        conn = aio.connection()
        flavor = next(f for f in conn.compute.flavors(is_public=None)
                      if f.name.startswith('resq.'))
        flavor = conn.compute.get_flavor(flavor.id)
        image = conn.image.find_image('resq-empty').id
        boots, releases = [], []
        for _ in range(3):
            boot, release = _cycle(aio, state, conn, flavor, image)
            boots.append(boot)
            releases.append(release)
        figures.update(
            boot_to_partition_s=round(statistics.median(boots), 2),
            boot_to_partition_max_s=round(max(boots), 2),
            delete_to_release_s=round(statistics.median(releases), 2),
            delete_to_release_max_s=round(max(releases), 2))
        rss = _rss(aio, state)
        figures['rss_mb'] = rss
        figures['rss_total_mb'] = round(sum(rss.values()), 1)
        _rc, counts = aio.tempest(state)
        figures['tempest_passed'] = counts['passed']
        figures['tempest_failed'] = counts['failed']
        figures['tempest_skipped'] = counts['skipped']
    finally:
        if not keep:
            aio.down(state)
    return figures


def main(argv):
    # The services' commands are in the cloud environment only.
    if not in_cloud_env():
        return _in_cloud_env(argv, 'cloud')
    from tests.cloud import aio
    state = aio.State(os.path.join(REPO, '.tox', 'cloud-state'))
    figures = run(aio, state, '--keep' in argv)
    print('%-28s %s' % ('figure', 'value'))
    for key, value in sorted(figures.items()):
        if key != 'rss_mb':
            print('%-28s %s' % (key, value))
    for key, value in sorted(figures['rss_mb'].items()):
        print('  rss %-24s %s MiB' % (key, value))
    print(json.dumps(figures, sort_keys=True))
    return 0
