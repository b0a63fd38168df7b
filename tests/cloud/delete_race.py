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
"""A server delete timed against a libvirtd restart, and what it leaves.

``python -m tests.cloud.delete_race --state DIR --host aio-2 --at PHASE
[--offset S] [--retry]`` (in the cloud tox environment, as root) boots a
ResQ server on ``--host``, restarts that host's libvirtd in the steps
:func:`resq_fake.host.restart_libvirtd` takes, sends the server's DELETE
``--offset`` seconds after step ``PHASE`` (before the restart when the
offset is negative and the phase is ``sigterm``), and follows it:

``sigterm``
    SIGTERM sent to the old libvirtd;
``exited``
    the old libvirtd gone, the new one not started;
``listening``
    the new libvirtd's socket exists (it accepts no client until its
    drivers are up);
``answering``
    the new libvirtd answers (``virsh version``).

It records, with times from the restart's start: every change of the
server in Nova (status, task state, fault), the deletes sent (with
``--retry``, a server left in ERROR is deleted again, as the soak does),
whether the host's libvirtd still has the server's domain after Nova
forgot it (``virsh list --all`` on the host's socket, once a second for
``--watch`` s), nova-api's and nova-compute's log lines naming the server.
One JSON object per attempt on stdout; a domain that outlived its server
is ``"leaked": true``.
"""

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

from resq_fake import host as fake_host

PHASES = ('sigterm', 'exited', 'listening', 'answering')
FLAVOR = 'resq.lpm.3w'
IMAGE = 'resq-empty'


class Clock:
    def __init__(self):
        self.t0 = time.monotonic()
        self.wall0 = time.time()

    def now(self):
        return round(time.monotonic() - self.t0, 3)


def virsh(uri, *args, timeout=20):
    try:
        proc = subprocess.run(['virsh', '-c', uri] + list(args),
                              capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, 'virsh timed out'
    return proc.returncode, (proc.stdout + proc.stderr).strip()


def domain_state(uri, uuid):
    """The domain's state as virsh says it (``running``, ``shut off``...).

    None when libvirtd has no such domain, ``'?: ...'`` when it does not
    answer.
    """
    rc, out = virsh(uri, 'domstate', uuid)
    if rc == 0:
        return out.splitlines()[0].strip()
    if 'ailed to get domain' in out or 'Domain not found' in out:
        return None
    return '?: ' + out[-120:]


def phased_restart(paths, holders, mark, hold=0.0):
    """:func:`resq_fake.host.restart_libvirtd`, step by step.

    ``mark(phase)`` is called at each of :data:`PHASES`; libvirtd stays
    down ``hold`` s between ``exited`` and its start.
    """
    old = fake_host.alive(paths.pid)
    if not old:
        raise fake_host.HostError('host %s has no libvirtd' % paths.state)
    inside = [p for p in list(holders) + fake_host.qemu_pids(paths)
              if p and p != old and fake_host._same_mount_ns(p, old)]
    if not inside:
        raise fake_host.HostError('nothing else runs in the namespaces')
    mark('sigterm')
    os.kill(old, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(old, 0)
        except OSError:
            break
        time.sleep(0.01)
    else:
        os.kill(old, signal.SIGKILL)
    mark('exited')
    time.sleep(hold)
    if os.path.exists(paths.sock):
        os.unlink(paths.sock)
    with open(paths.log + '.stderr', 'a') as log:
        proc = subprocess.Popen(
            ['nsenter', '--target', str(inside[0]), '--mount', '--uts', '--',
             fake_host.LIBVIRTD, '-p', paths.pid + '.libvirtd', '-f',
             os.path.join(paths.private('/etc/libvirt'), 'libvirtd.conf')],
            stdout=log, stderr=log, start_new_session=True)
    with open(paths.pid, 'w') as f:
        f.write('%d\n' % proc.pid)
    while not os.path.exists(paths.sock):
        if proc.poll() is not None:
            raise fake_host.HostError('libvirtd exited (%d)' % proc.returncode)
        time.sleep(0.005)
    mark('listening')
    while subprocess.run(['virsh', '-c', paths.uri, 'version'],
                         capture_output=True).returncode:
        time.sleep(0.05)
    mark('answering')
    return proc.pid


def log_lines(path, patterns, since_wall):
    """Lines of ``path`` naming one of ``patterns``, from ``since_wall``."""
    found = []
    try:
        with open(path, errors='replace') as f:
            for line in f:
                if any(p in line for p in patterns):
                    m = re.match(r'(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+)',
                                 line)
                    if m:
                        t = time.mktime(time.strptime(
                            m.group(1).split('.')[0], '%Y-%m-%d %H:%M:%S'))
                        if t < since_wall - 1:
                            continue
                    found.append(line.rstrip()[:400])
    except OSError:
        pass
    return found


#: ``--retry``: deletes sent while the server stays in ERROR, this far
#: apart (a minute in all, past any --hold the docs use).
RETRIES = 30
RETRY_INTERVAL_S = 2.0


def attempt(aio, state, conn, host, phase, offset, retry, watch, name,
            hold=0.0, source=None, resize=None):
    """One attempt; see the module's doc.

    With ``resize`` (a flavor) the server boots on ``source`` and is
    resized at ``phase`` + ``offset`` (Nova's scheduler takes it to
    ``host``, the only other host with room), then deleted once it is in
    ERROR; the domains of both hosts are followed.
    """
    clock = Clock()
    paths = state.host(host)
    record = {'host': host, 'phase': phase, 'offset': offset, 'hold': hold,
              'source': source, 'resize': resize,
              'events': [], 'deletes': [], 'nova': [], 'domain': [],
              'source_domain': []}

    def event(what):
        record['events'].append((clock.now(), what))

    server = conn.compute.create_server(
        name=name, flavor_id=conn.compute.find_flavor(FLAVOR).id,
        image_id=conn.image.find_image(IMAGE).id, networks='none',
        availability_zone='nova:%s' % (source or host))
    server = conn.compute.wait_for_server(server, wait=300)
    uuid = server.id
    record['server'] = uuid
    record['instance_name'] = server.instance_name
    clock = Clock()  # times from here: the restart's start
    record['domain_before'] = domain_state(paths.uri, uuid)

    def send_delete(why):
        t = clock.now()
        try:
            conn.compute.delete_server(uuid)
            record['deletes'].append((t, why, 'accepted', clock.now()))
        except Exception as exc:
            record['deletes'].append((t, why, '%s: %s' % (
                type(exc).__name__, str(exc)[:200]), clock.now()))

    fired = threading.Event()

    def send_resize(why):
        t = clock.now()
        try:
            conn.compute.resize_server(uuid, conn.compute.find_flavor(
                resize).id)
            event('resize %s accepted (sent at %.3f)' % (why, t))
        except Exception as exc:
            event('resize %s: %s: %s' % (why, type(exc).__name__,
                                         str(exc)[:200]))

    def mark(name_):
        event(name_)
        if name_ == phase and offset >= 0 and not fired.is_set():
            fired.set()

            def later():
                time.sleep(offset)
                if resize:
                    send_resize('at %s%+.2fs' % (phase, offset))
                else:
                    send_delete('at %s%+.2fs' % (phase, offset))
            threading.Thread(target=later, daemon=True).start()

    stop = threading.Event()
    gone_at = []

    def follow():
        from openstack import exceptions
        last = None
        retries = 0
        while not stop.is_set():
            try:
                s = conn.compute.get_server(uuid)
                now = (s.status, s.task_state, s.vm_state,
                       (s.fault or {}).get('message'), s.compute_host)
            except exceptions.NotFoundException:
                now = None
            except Exception as exc:
                now = ('unread', str(exc)[:100])
            if now != last:
                record['nova'].append((clock.now(), now))
                last = now
            if now is None:
                gone_at.append(clock.now())
                return
            if (resize and now[0] == 'ERROR' and not now[1]
                    and not record['deletes']):
                send_delete('after the resize left it in ERROR')
            elif (retry and now[0] == 'ERROR' and not now[1]
                    and record['deletes'] and retries < RETRIES):
                # Until libvirtd answers again a retried delete fails as
                # the first did: keep trying past --hold.
                retries += 1
                time.sleep(RETRY_INTERVAL_S)
                send_delete('retry %d after ERROR' % retries)
            time.sleep(0.2)
    follower = threading.Thread(target=follow, daemon=True)
    follower.start()
    holder = fake_host.alive(state.pid('nova-compute-%s' % host))
    if phase == 'sigterm' and offset < 0:
        if resize:
            send_resize('%.2fs before sigterm' % -offset)
        else:
            send_delete('%.2fs before sigterm' % -offset)
        time.sleep(-offset)
    phased_restart(paths, [holder] if holder else [], mark, hold)
    follower.join(timeout=240)
    stop.set()
    # Nova forgot it (or we gave up): does libvirtd still have it?
    t_end = time.monotonic() + watch
    last, last_src = object(), object()
    src_uri = state.host(source).uri if source else None
    while time.monotonic() < t_end:
        st = domain_state(paths.uri, uuid)
        if st != last:
            record['domain'].append((clock.now(), st))
            last = st
        if src_uri:
            st_src = domain_state(src_uri, uuid)
            if st_src != last_src:
                record['source_domain'].append((clock.now(), st_src))
                last_src = st_src
        if st is None and gone_at and (not src_uri or last_src is None):
            break
        time.sleep(1)
    record['gone_from_nova_at'] = gone_at[0] if gone_at else None
    record['leaked'] = bool(gone_at) and (
        last is not None or (src_uri is not None and last_src is not None))
    pats = [uuid]
    record['nova_compute_log'] = log_lines(
        state.log('nova-compute-%s' % host), pats, clock.wall0 - 60)
    if source:
        record['source_compute_log'] = log_lines(
            state.log('nova-compute-%s' % source), pats, clock.wall0 - 60)
    record['nova_api_log'] = [
        line for line in log_lines(state.log('nova-api'), pats,
                                   clock.wall0 - 60)
        if 'host' in line and 'down' in line or 'deleting state' in line
        or 'does not have host' in line]
    return record


def main(argv=None):
    p = argparse.ArgumentParser(prog='python -m tests.cloud.delete_race',
                                description=__doc__.split('\n')[0])
    p.add_argument('--state', required=True)
    p.add_argument('--host', required=True)
    p.add_argument('--at', choices=PHASES, default='sigterm')
    p.add_argument('--offset', type=float, default=0.0)
    p.add_argument('--retry', action='store_true',
                   help='delete again every %g s while the server is in '
                        'ERROR, up to %d times' % (RETRY_INTERVAL_S, RETRIES))
    p.add_argument('--watch', type=int, default=60)
    p.add_argument('--repeat', type=int, default=1)
    p.add_argument('--source', help='with --resize: the host it boots on')
    p.add_argument('--resize', metavar='FLAVOR',
                   help='resize the server (from --source) instead of '
                        'deleting it, then delete it once in ERROR')
    p.add_argument('--hold', type=float, default=0.0,
                   help='seconds libvirtd stays down between its stop '
                        'and its start')
    args = p.parse_args(argv)
    from tests.cloud import aio
    state = aio.State(args.state)
    aio.use_hosts(state)
    conn = aio.connection()
    leaked = stuck = 0
    for i in range(args.repeat):
        rec = attempt(aio, state, conn, args.host, args.at, args.offset,
                      args.retry, args.watch,
                      'race-%s-%d-%d' % (args.at, int(args.offset * 100), i),
                      args.hold, args.source, args.resize)
        print(json.dumps(rec), flush=True)
        leaked += rec['leaked']
        stuck += rec['gone_from_nova_at'] is None
    if stuck:
        print('%d server(s) not deleted: see their nova-compute log (a '
              'wedged nova-compute stops logging for it)' % stuck,
              file=sys.stderr)
    if leaked:
        print('%d domain(s) outlived their server by %d s or more'
              % (leaked, args.watch), file=sys.stderr)
    return 1 if leaked or stuck else 0


if __name__ == '__main__':
    sys.exit(main())
