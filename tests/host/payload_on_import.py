"""An attacker's module with an import-time effect (tests/host only).

``boundary_attacks`` asks a privileged daemon to call
``tests.host.payload_on_import.x``. A daemon that imports the module a
caller names before checking it is one of its functions runs the code
below as root. Merely present (or imported by the tests themselves) it
does nothing: it acts only inside a privileged daemon's process (its
command line names a privsep context) and only while a lab has written
root's own :data:`TARGET`, which says where to leave the evidence.
"""

import json
import os
import subprocess
import sys

# Written (root-owned) by boundary_attacks.Lab, removed at its cleanup.
TARGET = '/run/resq-boundary/payload.json'


def _in_a_daemon():
    return any(a in ('--context', '--privsep_context')
               or a.startswith('--privsep_context=') for a in sys.argv)


def _run():
    if not _in_a_daemon():
        return
    try:
        st = os.stat(TARGET, follow_symlinks=False)
    except OSError:
        return
    if st.st_uid != 0:
        return
    with open(TARGET) as f:
        target = json.load(f)
    marker = target.get('marker')
    if marker:
        with open(marker, 'w') as f:
            f.write('euid=%d pid=%d argv=%r\n'
                    % (os.geteuid(), os.getpid(), sys.argv))
    caps = target.get('exec_caps')
    if caps:
        # What a program the daemon runs gets: its capabilities.
        subprocess.run(['/bin/sh', '-c',
                        'grep Cap /proc/self/status > "$0"', caps],
                       check=False)


_run()


def x():
    """Not an entrypoint of any context."""
