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
"""A compute host that looks like a CAT host, on a machine without RDT.

A real libvirtd, with real QEMU guests (KVM where ``/dev/kvm`` opens, TCG
otherwise), runs in a private mount namespace in which:

* ``/sys/fs/resctrl`` is the project's fake kernel served through FUSE
  (:mod:`resq_fake.resctrl_fuse`): files appear at ``mkdir``, bad
  masks are refused, classes of service and RMIDs run out, ``mon_data``
  can be read;
* every CPU's ``cache/index3`` in sysfs is the fake cache's, so libvirt's
  capabilities show the same bank, ways and CPUs as resctrl;
* ``/etc/libvirt``, ``/run/libvirt``, ``/var/lib/libvirt``,
  ``/var/cache/libvirt`` and ``/var/log/libvirt`` are the host's own
  copies under its state directory, so several hosts run side by side;
* ``/etc/passwd`` and ``/etc/group`` hold a ``libvirt-qemu`` user
  (libvirtd refuses to start without one).

The FUSE file system is mounted at ``<state>/resctrl`` before the
namespace is made and bound at ``/sys/fs/resctrl`` inside it, so both
sides see one file system: the agent can run inside the namespace
(``nsenter``) with the default paths, or outside with ``[resq_agent]
resctrl_root = <state>/resctrl`` and ``sysfs_root = <state>/sysfs``.
libvirtd's socket is ``<state>/run/sock/libvirt-sock``, outside any
private mount: the URI is ``qemu:///system?socket=<that path>``.

``python -m resq_fake.host up --state DIR`` starts one and returns
once libvirtd answers; ``down --state DIR`` stops its guests, libvirtd and
the file system; both are idempotent. Run as root.
"""

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid

from resq_fake import resctrl as fake_resctrl

LIBVIRT_DIRS = ('/etc/libvirt', '/run/libvirt', '/var/lib/libvirt',
                '/var/cache/libvirt', '/var/log/libvirt')
QEMU_CONF = """user = "root"
group = "root"
security_driver = "none"
dynamic_ownership = 0
remember_owner = 0
namespaces = []
stdio_handler = "file"
"""
LIBVIRTD_CONF = """unix_sock_dir = "%(sock_dir)s"
unix_sock_rw_perms = "0770"
auth_unix_rw = "none"
auth_unix_ro = "none"
log_outputs = "3:file:%(log)s"
host_uuid = "%(host_uuid)s"
%(sock_group)s"""
LIBVIRTD = '/usr/sbin/libvirtd'
FUSE_DEVICE = '/dev/fuse'
KVM_DEVICE = '/dev/kvm'


class HostError(Exception):
    """The host cannot be brought up here; the message says why."""


class Paths:
    """Where one host keeps what it owns, under its state directory."""

    def __init__(self, state):
        self.state = os.path.abspath(state)
        p = lambda *parts: os.path.join(self.state, *parts)  # noqa: E731
        self.resctrl = p('resctrl')
        self.backing = p('resctrl-backing')
        self.sysfs = p('sysfs')
        self.sock_dir = p('run', 'sock')
        self.sock = p('run', 'sock', 'libvirt-sock')
        self.pid = p('libvirtd.pid')
        self.fuse_pid = p('fuse.pid')
        self.log = p('libvirtd.log')
        self.passwd = p('etc-passwd')
        self.group = p('etc-group')
        self.hold = p('cgroup-hold')
        self.hostname = p('hostname')

    def private(self, system_dir):
        """The host's own copy of ``system_dir`` (``/etc/libvirt``...)."""
        return os.path.join(self.state, 'root', system_dir.lstrip('/'))

    @property
    def uri(self):
        return 'qemu:///system?socket=%s' % self.sock


def preflight():
    """What the host needs from this machine, as one error naming it.

    :returns: ``'kvm'`` where ``/dev/kvm`` opens, else ``'qemu'``.
    :raises HostError: no libvirtd, no FUSE device, not root.
    """
    if os.geteuid() != 0:
        raise HostError('run as root: the host mounts file systems in a '
                        'namespace of its own')
    if not os.access(LIBVIRTD, os.X_OK):
        raise HostError('%s is missing: apt-get install --no-install-'
                        'recommends libvirt-daemon libvirt-daemon-driver-qemu '
                        'libvirt-clients qemu-system-x86' % LIBVIRTD)
    try:
        os.close(os.open(FUSE_DEVICE, os.O_RDWR))
    except OSError as exc:
        raise HostError('%s cannot be opened (%s): the resctrl file system '
                        'is served through FUSE' % (FUSE_DEVICE,
                                                    exc.strerror))
    try:
        os.close(os.open(KVM_DEVICE, os.O_RDWR))
        return 'kvm'
    except OSError:
        return 'qemu'


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        f.write(text)


def _host_uuid(paths):
    """This host's own UUID (libvirt refuses to migrate to itself)."""
    path = os.path.join(paths.state, 'host-uuid')
    if not os.path.exists(path):
        _write(path, '%s\n' % uuid.uuid4())
    with open(path) as f:
        return f.read().strip()


def _with_qemu_user(src, dst, line):
    with open(src) as f:
        text = f.read()
    if not any(ln.startswith('libvirt-qemu:') for ln in text.splitlines()):
        text = text.rstrip('\n') + '\n' + line + '\n'
    _write(dst, text)


def prepare(paths, args):
    """The state directory: libvirt's private copies, the fake trees."""
    for system_dir in LIBVIRT_DIRS:
        os.makedirs(paths.private(system_dir), exist_ok=True)
        os.makedirs(system_dir, exist_ok=True)
    etc = paths.private('/etc/libvirt')
    if os.path.isdir('/etc/libvirt') and not os.listdir(etc):
        shutil.copytree('/etc/libvirt', etc, dirs_exist_ok=True)
    _write(os.path.join(etc, 'qemu.conf'), QEMU_CONF)
    group = getattr(args, 'sock_group', None)
    _write(os.path.join(etc, 'libvirtd.conf'), LIBVIRTD_CONF % {
        'sock_dir': paths.sock_dir, 'log': paths.log,
        'host_uuid': _host_uuid(paths),
        'sock_group': 'unix_sock_group = "%s"\n' % group if group else ''})
    if getattr(args, 'hostname', None):
        _write(paths.hostname, args.hostname + '\n')
    os.makedirs(paths.sock_dir, exist_ok=True)
    _with_qemu_user('/etc/passwd', paths.passwd,
                    'libvirt-qemu:x:64055:64055:Libvirt Qemu:'
                    '/var/lib/libvirt:/usr/sbin/nologin')
    _with_qemu_user('/etc/group', paths.group, 'libvirt-qemu:x:64055:')
    cpus, layout = fake_resctrl.tree_layout(args)
    if not os.path.isdir(paths.sysfs):
        memory, huge = fake_resctrl.real_memory()
        cells = max(len(layout), 1)
        fake_resctrl.build_sysfs(
            paths.sysfs, layout, args.way_kib, args.ways, memory // cells,
            huge // cells, l2_domains=fake_resctrl.l2_layout(
                cpus, getattr(args, 'l2', 0)))
    os.makedirs(paths.resctrl, exist_ok=True)
    os.makedirs(paths.backing, exist_ok=True)
    return cpus, layout


def _tree_argv(args):
    argv = ['--ways', str(args.ways), '--domains', str(args.domains),
            '--num-closids', str(args.num_closids),
            '--num-rmids', str(args.num_rmids),
            '--min-cbm-bits', str(args.min_cbm_bits)]
    if args.cpus:
        argv += ['--cpus', args.cpus]
    if getattr(args, 'mba', 'none') != 'none':
        argv += ['--mba', args.mba]
    if getattr(args, 'l2', 0):
        argv += ['--l2', str(args.l2)]
    return argv


def alive(pid_file):
    """The pid ``pid_file`` names, if that process runs; else None."""
    try:
        with open(pid_file) as f:
            pid = int(f.read().strip())
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError):
        return None


def mount_resctrl(paths, args):
    """The fake kernel through FUSE at ``<state>/resctrl`` (idempotent)."""
    if os.path.ismount(paths.resctrl):
        return
    with open(paths.log + '.fuse', 'a') as log:
        proc = subprocess.Popen(
            [sys.executable, '-m', 'resq_fake.resctrl_fuse',
             paths.resctrl, '--backing', paths.backing, '--foreground']
            + _tree_argv(args),
            stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)
    _write(paths.fuse_pid, '%d\n' % proc.pid)
    _wait(lambda: os.path.ismount(paths.resctrl) or proc.poll() is not None,
          30, 'the resctrl file system at %s' % paths.resctrl)
    if proc.poll() is not None:
        raise HostError('the resctrl file system did not mount (exit %d); '
                        'see %s.fuse' % (proc.returncode, paths.log))


def _wait(predicate, seconds, what):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise HostError('%s did not come up in %d s' % (what, seconds))


def start_libvirtd(paths):
    """libvirtd in the namespace; returns once its socket answers."""
    if alive(paths.pid) and os.path.exists(paths.sock):
        return
    _launch_libvirtd(paths, [
        'unshare', '--mount', '--uts', '--propagation', 'private', '--',
        sys.executable, '-m', 'resq_fake.host', 'inside',
        '--state', paths.state], 'libvirtd exited')


def _launch_libvirtd(paths, argv, died):
    """Start ``argv`` (libvirtd, or what becomes it) as the host's pid.

    Returns once its socket answers; ``died`` begins the error when it
    exits first.
    """
    with open(paths.log + '.stderr', 'a') as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=log,
                                start_new_session=True)
    _write(paths.pid, '%d\n' % proc.pid)
    _wait(lambda: os.path.exists(paths.sock) or proc.poll() is not None,
          60, 'libvirtd (socket %s)' % paths.sock)
    if proc.poll() is not None:
        raise HostError('%s (%d); see %s and %s.stderr'
                        % (died, proc.returncode, paths.log, paths.log))
    _wait(lambda: subprocess.run(
        ['virsh', '-c', paths.uri, 'version'], capture_output=True
    ).returncode == 0 or proc.poll() is not None, 60,
        'libvirtd answering on %s' % paths.uri)
    return proc.pid


def _mount(*argv):
    subprocess.run(('mount',) + argv, check=True, capture_output=True)


def inside(paths):
    """In the new namespace: lay out the mounts, then become libvirtd."""
    if os.path.exists(paths.hostname):
        # Its own UTS namespace: libvirt (and Nova's hypervisor hostname,
        # the compute node's provider name in Placement) see this name.
        with open(paths.hostname) as f:
            socket.sethostname(f.read().strip())
    for system_dir in LIBVIRT_DIRS:
        _mount('--bind', paths.private(system_dir), system_dir)
    _mount('--bind', paths.passwd, '/etc/passwd')
    _mount('--bind', paths.group, '/etc/group')
    # A tmpfs over /sys/fs makes room for resctrl; cgroups move back.
    os.makedirs(paths.hold, exist_ok=True)
    moved = os.path.ismount('/sys/fs/cgroup')
    if moved:
        _mount('--move', '/sys/fs/cgroup', paths.hold)
    _mount('-t', 'tmpfs', '-o', 'mode=755', 'tmpfs', '/sys/fs')
    for name in ('cgroup', 'resctrl'):
        os.makedirs(os.path.join('/sys/fs', name), exist_ok=True)
    if moved:
        _mount('--move', paths.hold, '/sys/fs/cgroup')
    _mount('--bind', paths.resctrl, '/sys/fs/resctrl')
    cpu_dir = os.path.join(paths.sysfs, 'devices', 'system', 'cpu')
    for name in sorted(os.listdir(cpu_dir)):
        fake = os.path.join(cpu_dir, name, 'cache', 'index3')
        real = os.path.join('/sys/devices/system/cpu', name, 'cache',
                            'index3')
        if os.path.isdir(fake) and os.path.isdir(real):
            _mount('--bind', fake, real)
    # Its own pid file: several hosts run side by side.
    os.execv(LIBVIRTD, [LIBVIRTD, '-p', paths.pid + '.libvirtd', '-f',
                        os.path.join(paths.private('/etc/libvirt'),
                                     'libvirtd.conf')])


def restart_libvirtd(paths, holders=()):
    """Stop the host's libvirtd and start it again in the same namespaces.

    The guests keep running, as when an operator restarts libvirtd on a
    compute host. libvirtd is the process that made the namespaces; while
    it is down they live on in ``holders`` (pids inside them, such as
    nova-compute's) and in the guests' QEMU processes, and the new libvirtd
    enters them through one of those.
    """
    old = alive(paths.pid)
    if not old:
        raise HostError('host %s is not up (no libvirtd)' % paths.state)
    inside_ns = [p for p in list(holders) + qemu_pids(paths)
                 if p and p != old and _same_mount_ns(p, old)]
    if not inside_ns:
        raise HostError('nothing else runs in host %s\'s namespaces (no '
                        'guest, no nova-compute): restarting libvirtd would '
                        'lose them; take the host down and up instead'
                        % paths.state)
    _kill(old, 30)
    if os.path.exists(paths.sock):
        os.unlink(paths.sock)
    return _launch_libvirtd(paths, [
        'nsenter', '--target', str(inside_ns[0]), '--mount', '--uts', '--',
        LIBVIRTD, '-p', paths.pid + '.libvirtd', '-f',
        os.path.join(paths.private('/etc/libvirt'), 'libvirtd.conf')],
        'libvirtd exited after its restart')


def _same_mount_ns(pid, other):
    try:
        return (os.readlink('/proc/%d/ns/mnt' % pid)
                == os.readlink('/proc/%d/ns/mnt' % other))
    except OSError:
        return False


def up(paths, args):
    accel = preflight()
    cpus, layout = prepare(paths, args)
    mount_resctrl(paths, args)
    start_libvirtd(paths)
    return accel, cpus, layout


def enter_argv(paths, holders=()):
    """The command prefix that runs a program in the host's namespaces.

    Inside, ``/sys/fs/resctrl`` and the CPU cache sysfs are the host's,
    and the host name is its own: nova-compute and resq-agent run there
    with the kernel's default paths. libvirtd made the namespaces; when it
    has died they live on in ``holders`` (pids of processes started in
    them, such as nova-compute's) and in the guests, and are entered
    through one of those.
    """
    pid = alive(paths.pid) or inside_pid(paths, holders)
    if not pid:
        raise HostError('host %s is not up (no libvirtd, and no guest or '
                        'other process of it runs)' % paths.state)
    return ['nsenter', '--target', str(pid), '--mount', '--uts', '--']


def inside_pid(paths, holders=()):
    """A live process in the host's namespaces other than libvirtd, or None.

    One of ``holders`` or a guest whose mount namespace is not the
    caller's (each host has its own).
    """
    try:
        ours = os.readlink('/proc/self/ns/mnt')
    except OSError:
        return None
    for pid in [p for p in holders if p] + qemu_pids(paths):
        try:
            if os.readlink('/proc/%d/ns/mnt' % pid) != ours:
                return pid
        except OSError:
            continue
    return None


def qemu_pids(paths):
    """The pids of the host's running guests (QEMU's pid files)."""
    run = os.path.join(paths.private('/run/libvirt'), 'qemu')
    pids = []
    for name in os.listdir(run) if os.path.isdir(run) else ():
        if name.endswith('.pid'):
            pid = alive(os.path.join(run, name))
            if pid:
                pids.append(pid)
    return pids


def _kill(pid, seconds=10):
    try:
        os.kill(pid, signal.SIGTERM)
    except OSError:
        return
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except OSError:
            return
        time.sleep(0.1)
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def down(paths):
    """Guests, libvirtd, then the file system; what is gone stays gone."""
    for pid in qemu_pids(paths):
        _kill(pid)
    for pid_file in (paths.pid, paths.fuse_pid):
        pid = alive(pid_file)
        if pid:
            _kill(pid)
        if os.path.exists(pid_file):
            os.unlink(pid_file)
    if os.path.ismount(paths.resctrl):
        for cmd in (['fusermount3', '-u', '-z'], ['fusermount', '-u', '-z'],
                    ['umount', '-l']):
            if subprocess.run(cmd + [paths.resctrl],
                              capture_output=True).returncode == 0:
                break
    if os.path.exists(paths.sock):
        os.unlink(paths.sock)


def _parser():
    p = argparse.ArgumentParser(
        prog='python -m resq_fake.host',
        description='A compute host that looks like a CAT host: libvirtd '
                    'in a private mount namespace over a FUSE resctrl.')
    sub = p.add_subparsers(dest='command', required=True)
    for name in ('up', 'down', 'inside'):
        cmd = sub.add_parser(name)
        cmd.add_argument('--state', required=True,
                         help='the host\'s own directory')
        if name == 'up':
            fake_resctrl.add_tree_options(cmd)
            cmd.add_argument('--way-kib', type=int,
                             default=fake_resctrl.DEFAULT_WAY_KIB)
            cmd.add_argument('--hostname',
                             help='the host name inside its namespaces '
                                  '(libvirt\'s, so Nova\'s hypervisor '
                                  'hostname); default: the machine\'s')
            cmd.add_argument('--sock-group',
                             help='the group that may use libvirtd\'s '
                                  'socket besides root')
    return p


def main(argv=None):
    args = _parser().parse_args(argv)
    paths = Paths(args.state)
    try:
        if args.command == 'inside':
            inside(paths)
        elif args.command == 'down':
            down(paths)
            print('host %s is down' % paths.state)
        else:
            accel, cpus, layout = up(paths, args)
            print('host %s is up: %s on %s; resctrl at %s (%d domain(s) '
                  'of %d ways)' % (paths.state, accel, paths.uri,
                                   paths.resctrl, len(layout), args.ways))
    except (HostError, fake_resctrl.InvalidTree) as exc:
        print('ERROR: %s' % exc, file=sys.stderr)
        return 2
    except subprocess.CalledProcessError as exc:
        print('ERROR: %s failed: %s' % (' '.join(exc.cmd), (
            exc.stderr or b'').decode(errors='replace').strip()),
            file=sys.stderr)
        return 2
    return 0


if __name__ == '__main__':
    sys.exit(main())
