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
"""Building the trace machinery with the machine's gcc, into a cache dir.

Three things are built from ``harness/``, each once per content of its
sources (the file name carries their hash, so an edited source builds
anew and a stale binary is never used):

* ``nf``: the NF harness, linked with DPDK (``pkg-config libdpdk``);
* ``resqtrace-amd64-linux``: the Valgrind tool, linked the way Valgrind
  links its own tools (static, against ``libcoregrind`` and ``libvex``,
  which Debian's ``valgrind`` package ships), in a directory that
  ``VALGRIND_LIB`` points at, beside links to the system's preload
  library and suppressions;
* ``llcsim.so``: the cache simulator, loaded by :mod:`.llc`.

Builds go to a temporary name and are renamed into place, so concurrent
test processes may build at once.
"""

import glob
import hashlib
import os
import shutil
import subprocess
import tempfile

HARNESS = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       'harness')
HEADER = 'resq_trace.h'

# Where Valgrind's tool libraries and run-time files are on Debian and on
# rpm systems (valgrind-devel).
_VALGRIND_LIB_DIRS = ('/usr/lib/x86_64-linux-gnu/valgrind',
                      '/usr/libexec/valgrind', '/usr/lib64/valgrind',
                      '/usr/lib/valgrind')
_VALGRIND_INCLUDE = '/usr/include/valgrind'

# Valgrind's own flags for an amd64-linux tool (its Makefile.tool.am).
_TOOL_CFLAGS = ['-O2', '-g', '-m64', '-fno-stack-protector',
                '-fno-strict-aliasing', '-fno-builtin',
                '-fomit-frame-pointer', '-fno-pic', '-fno-PIE',
                '-DVGA_amd64=1', '-DVGO_linux=1', '-DVGP_amd64_linux=1',
                '-DVGPV_amd64_linux_vanilla=1']
_TOOL_LDFLAGS = ['-m64', '-static', '-nodefaultlibs', '-nostartfiles',
                 '-u', '_start', '-no-pie', '-Wl,--build-id=none',
                 '-Wl,-Ttext-segment=0x58000000']

TOOL = 'resqtrace'
TOOL_BINARY = TOOL + '-amd64-linux'


class BuildError(Exception):
    """The machine lacks what a build needs, or the build failed."""


def cache_dir(path=None):
    """The cache directory, made if missing.

    ``path``, else ``$RESQ_TRACE_CACHE``, else
    ``$XDG_CACHE_HOME/resq-nova/trace`` (``~/.cache`` by default).
    """
    path = path or os.environ.get('RESQ_TRACE_CACHE')
    if not path:
        base = os.environ.get('XDG_CACHE_HOME') or os.path.join(
            os.path.expanduser('~'), '.cache')
        path = os.path.join(base, 'resq-nova', 'trace')
    os.makedirs(path, exist_ok=True)
    return path


def source_hash(*names):
    """SHA-256 (hex) over the named harness sources and the header."""
    h = hashlib.sha256()
    for name in sorted(set(names + (HEADER,))):
        with open(os.path.join(HARNESS, name), 'rb') as f:
            h.update(name.encode() + b'\0' + f.read() + b'\0')
    return h.hexdigest()


def _run(cmd):
    try:
        out = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as exc:
        raise BuildError('%s: %s' % (cmd[0], exc))
    if out.returncode:
        raise BuildError('%s failed (%d): %s' % (
            ' '.join(cmd[:3]), out.returncode, out.stderr[-2000:]))
    return out.stdout


def _valgrind_dir(pattern):
    for d in _VALGRIND_LIB_DIRS:
        if glob.glob(os.path.join(d, pattern)):
            return d
    return None


def missing():
    """Why the harness cannot be built and traced here, or None."""
    if not shutil.which('gcc'):
        return 'gcc is not installed'
    if not shutil.which('valgrind'):
        return 'valgrind is not installed'
    if not os.path.exists(os.path.join(_VALGRIND_INCLUDE, 'valgrind.h')):
        return 'valgrind.h is not installed'
    if not os.path.exists(os.path.join(_VALGRIND_INCLUDE,
                                       'pub_tool_basics.h')):
        return "Valgrind's tool headers are not installed"
    if not _valgrind_dir('libcoregrind-amd64-linux.a'):
        return "Valgrind's libcoregrind is not installed"
    if not _valgrind_dir('vgpreload_core-amd64-linux.so'):
        return "Valgrind's vgpreload_core is not installed"
    try:
        subprocess.run(['pkg-config', '--exists', 'libdpdk'], check=True,
                       capture_output=True)
    except (OSError, subprocess.CalledProcessError):
        return 'DPDK (pkg-config libdpdk, package dpdk-dev) is not installed'
    return None


def missing_compiler():
    """Why the simulator cannot be built here, or None."""
    return None if shutil.which('gcc') else 'gcc is not installed'


def _install(tmp, final):
    os.chmod(tmp, 0o755)
    os.replace(tmp, final)
    return final


def _tmp_in(directory):
    fd, tmp = tempfile.mkstemp(dir=directory, prefix='.build-')
    os.close(fd)
    return tmp


def simulator(directory=None):
    """The path of ``llcsim.so``, built if needed."""
    directory = cache_dir(directory)
    final = os.path.join(directory, 'llcsim-%s.so' % source_hash(
        'llcsim.c')[:16])
    if os.path.exists(final):
        return final
    why = missing_compiler()
    if why:
        raise BuildError(why)
    tmp = _tmp_in(directory)
    try:
        _run(['gcc', '-O2', '-shared', '-fPIC', '-I', HARNESS, '-o', tmp,
              os.path.join(HARNESS, 'llcsim.c')])
        return _install(tmp, final)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def harness(directory=None):
    """The path of the ``nf`` harness, built if needed."""
    directory = cache_dir(directory)
    final = os.path.join(directory, 'nf-%s' % source_hash('nf.c')[:16])
    if os.path.exists(final):
        return final
    why = missing()
    if why:
        raise BuildError(why)
    flags = _run(['pkg-config', '--cflags', '--libs', 'libdpdk']).split()
    tmp = _tmp_in(directory)
    try:
        _run(['gcc', '-O2', '-g', '-Wall', '-I', HARNESS, '-o', tmp,
              os.path.join(HARNESS, 'nf.c')] + flags)
        return _install(tmp, final)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def tool(directory=None):
    """A directory for ``VALGRIND_LIB`` holding the resqtrace tool."""
    directory = cache_dir(directory)
    final = os.path.join(directory, 'vglib-%s' % source_hash(
        'vgtool.c')[:16])
    if os.path.exists(os.path.join(final, TOOL_BINARY)):
        return final
    why = missing()
    if why:
        raise BuildError(why)
    libs = _valgrind_dir('libcoregrind-amd64-linux.a')
    run_dir = _valgrind_dir('vgpreload_core-amd64-linux.so')
    work = tempfile.mkdtemp(dir=directory, prefix='.build-')
    try:
        obj = os.path.join(work, 'vgtool.o')
        _run(['gcc'] + _TOOL_CFLAGS + ['-I', _VALGRIND_INCLUDE, '-I',
                                       HARNESS, '-c', '-o', obj,
                                       os.path.join(HARNESS, 'vgtool.c')])
        _run(['gcc'] + _TOOL_LDFLAGS + [
            '-o', os.path.join(work, TOOL_BINARY), obj,
            os.path.join(libs, 'libcoregrind-amd64-linux.a'),
            os.path.join(libs, 'libvex-amd64-linux.a'), '-lgcc',
            os.path.join(libs, 'libgcc-sup-amd64-linux.a')])
        os.unlink(obj)
        # The core loads its preload library and suppressions from
        # VALGRIND_LIB as well.
        for name in ('vgpreload_core-amd64-linux.so', 'default.supp'):
            src = os.path.join(run_dir, name)
            if os.path.exists(src):
                os.symlink(src, os.path.join(work, name))
        try:
            os.rename(work, final)
        except OSError:
            # Another process built it first.
            if not os.path.exists(os.path.join(final, TOOL_BINARY)):
                raise
        return final
    finally:
        if os.path.exists(work):
            shutil.rmtree(work)
