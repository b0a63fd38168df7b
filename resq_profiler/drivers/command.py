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
"""The ``command`` driver: measure a real NF process under CAT.

For every measurement the driver gives the profiler's resctrl group a
contiguous mask of the requested number of ways (from the lowest way up,
away from the I/O ways DDIO uses at the top), binds the profiling core to
it, starts the NF pinned to that core, puts the process into the group
before it runs a single instruction of the NF (the child waits on a pipe
until the parent has written its PID to ``tasks``), lets it run, stops it
with SIGINT and parses its output.
"""

import json
import math
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import threading

from oslo_log import log as logging

from resq_common import cbm
from resq_common import resctrl
from resq_profiler.conf import profiler as profiler_conf
from resq_profiler import drivers
from resq_profiler.drivers import counters
from resq_profiler import exception
from resq_profiler import nfmodel
import resq_profiler.privsep.resctrl

LOG = logging.getLogger(__name__)

# SLOMO's contention runs on a real host (doc/source/admin/slomo.rst);
# the options live with the profiler's others.
CONTENTION_OPTS = profiler_conf.contention_opts


def register_opts(conf):
    conf.register_opts(CONTENTION_OPTS, group='resq_profiler')


_KV_RE = re.compile(r'^\s*(throughput_mpps|latency_p95_us)\s*[=:]\s*'
                    r'([0-9.eE+-]+)\s*$', re.MULTILINE)
_TESTPMD_TX_RE = re.compile(r'Tx-pps:\s+(\d+)')
_TESTPMD_BLOCK = 'Port statistics ='
_GATE_SHIM = (
    'import os, sys\n'
    'fd = int(sys.argv[1])\n'
    'go = os.read(fd, 1)\n'
    'os.close(fd)\n'
    'if go != b"g":\n'
    '    sys.exit(125)\n'
    'try:\n'
    '    os.execvp(sys.argv[2], sys.argv[2:])\n'
    'except OSError as exc:\n'
    '    print("cannot start %s: %s" % (sys.argv[2], exc.strerror))\n'
    '    sys.exit(127)\n')


def parse_keyvalue(text):
    found = {}
    for key, value in _KV_RE.findall(text):
        try:
            found[key] = float(value)
        except ValueError:
            continue
    return found.get('throughput_mpps'), found.get('latency_p95_us')


def parse_testpmd(text):
    """Mean forwarded Mpps over testpmd's periodic statistics blocks.

    Every ``--stats-period`` block lists each port's Tx-pps since the
    previous block; the first block (warm-up) is skipped, as are blocks
    that are all zero (before forwarding started).
    """
    totals = []
    for block in text.split(_TESTPMD_BLOCK)[1:]:
        pps = [int(v) for v in _TESTPMD_TX_RE.findall(block)]
        if pps and sum(pps) > 0:
            totals.append(sum(pps))
    if len(totals) > 1:
        totals = totals[1:]
    if not totals:
        return None, None
    return sum(totals) / len(totals) / 1e6, None


PARSERS = {'keyvalue': parse_keyvalue, 'testpmd': parse_testpmd}
_HINTS = {
    'keyvalue': ' (expected lines "throughput_mpps=<x>" and '
                '"latency_p95_us=<y>")',
    'testpmd': ' (no periodic statistics block with traffic: pass '
               '"--stats-period 1" and give it a command_duration_s of a '
               'few seconds more than its start-up time)',
}


class CommandDriver(drivers.Driver):
    name = 'command'

    def __init__(self, conf, nf, traffic):
        super().__init__(conf, nf, traffic)
        group = conf.resq_profiler
        self.opts = group
        if not group.command:
            raise exception.MeasurementError(
                reason='the command driver needs [resq_profiler] command '
                '(the NF command line to run)')
        try:
            self.argv_template = shlex.split(group.command)
        except ValueError as exc:
            raise exception.MeasurementError(
                reason='[resq_profiler] command cannot be parsed: %s' % exc)
        self.parse = PARSERS[group.command_output]
        self._ready_re = None
        if group.command_ready_pattern:
            try:
                self._ready_re = re.compile(group.command_ready_pattern)
            except re.error as exc:
                raise exception.MeasurementError(
                    reason='[resq_profiler] command_ready_pattern is not a '
                    'regular expression: %s' % exc)
        self.tree = resctrl.Resctrl(group.resctrl_root).check()
        self.info = self.tree.info()
        resctrl.check_group_name(group.resctrl_group)
        if not group.resctrl_group.startswith(resctrl.PROFILER_PREFIX):
            raise exception.MeasurementError(
                reason='[resq_profiler] resctrl_group %r must start with %r: '
                'resq-agent removes the other resq- groups no instance owns'
                % (group.resctrl_group, resctrl.PROFILER_PREFIX))
        domains = self.tree.domains()
        if group.cache_domain not in domains:
            raise exception.MeasurementError(
                reason='[resq_profiler] cache_domain %d is not a cache domain '
                'of %s (domains: %s)' % (group.cache_domain, self.tree.root,
                                         domains))
        self.total_ways = cbm.bits(self.info['cbm_mask'])
        self.way_size = _way_size(self.opts.cpu, self.total_ways)
        self._runs = 0
        self.last_output = None
        self._group_made = False

    # -- platform ---------------------------------------------------------
    def platform(self):
        return {'llc_ways': self.total_ways,
                'way_size_bytes': self.way_size,
                'cpu_model': _cpu_model()}

    def way_range(self):
        return list(range(self.info['min_cbm_bits'], self.total_ways + 1))

    def mbufs(self):
        if self.opts.mbufs:
            return self.opts.mbufs
        ddio = self.opts.io_ways * self.way_size
        return max(nfmodel.ddio_buffers(ddio, self.traffic.packet_bytes),
                   1024)

    # -- measuring --------------------------------------------------------
    def throughput(self, ways):
        return self.saturate(ways)[0]

    def saturate(self, ways):
        mpps, lat = self._run(ways, 1.0, 0.0)
        if mpps is None:
            raise exception.MeasurementError(
                reason='%s printed no throughput (%s format)'
                % (self.argv_template[0], self.opts.command_output))
        return mpps, lat

    def latency(self, ways, load_fraction, peak_mpps):
        _, lat = self._run(ways, load_fraction, load_fraction * peak_mpps)
        if lat is None:
            raise exception.MeasurementError(
                reason='%s printed no p95 latency at load %.0f%% (%s '
                'format); the latency curve needs a command that reports '
                '"latency_p95_us", e.g. a wrapper around the NF and its '
                'traffic generator' % (
                    self.argv_template[0], load_fraction * 100,
                    self.opts.command_output))
        return lat

    def _apply_mask(self, ways):
        group = self.opts.resctrl_group
        mask = cbm.make(0, ways)
        if not self._group_made:
            resq_profiler.privsep.resctrl.create_group(group)
            self._group_made = True
        resq_profiler.privsep.resctrl.write_l3_masks(
            group, {self.opts.cache_domain: mask})
        resq_profiler.privsep.resctrl.assign_cpus(group, [self.opts.cpu])
        return mask

    def _argv(self, ways, load_fraction, load_mpps):
        self._runs += 1
        values = {
            'cpu': self.opts.cpu,
            'housekeeping_cpu': self.opts.housekeeping_cpu,
            'mbufs': self.mbufs(),
            'duration_s': self.opts.command_duration_s,
            'load_mpps': round(load_mpps, 6),
            'load_fraction': round(load_fraction, 6),
            'packet_bytes': self.traffic.packet_bytes,
            'flows': self.traffic.flows,
            'ways': ways,
            'file_prefix': 'resq-prof-%d-%d' % (os.getpid(), self._runs),
        }
        try:
            return [arg.format(**values) for arg in self.argv_template]
        except (KeyError, IndexError, ValueError) as exc:
            raise exception.MeasurementError(
                reason='[resq_profiler] command has an unknown placeholder '
                '%s; known: %s' % (exc, ', '.join(sorted(values))))

    def _run(self, ways, load_fraction, load_mpps):
        mask = self._apply_mask(ways)
        argv = self._argv(ways, load_fraction, load_mpps)
        output, returncode = self._launch(argv, mask)
        mpps, lat = self.parse(output)
        if mpps is None and lat is None:
            raise exception.MeasurementError(
                reason='%s exited %s and printed nothing parseable as %s '
                'output%s; last lines:\n%s' % (
                    argv[0], returncode, self.opts.command_output,
                    _HINTS.get(self.opts.command_output, ''),
                    _tail(output)))
        for value, what in ((mpps, 'throughput'), (lat, 'latency')):
            if value is not None and (not math.isfinite(value)
                                      or value <= 0):
                raise exception.MeasurementError(
                    reason='%s reported a %s of %r, which is not a '
                    'positive number' % (argv[0], what, value))
        return mpps, lat

    def _launch(self, argv, mask, cpus=None):
        """Run ``argv`` in the group; ``(output, exit status)``.

        :param cpus: the cores it may run on (default the profiling core).
        """
        LOG.debug('Running %s with L3 mask %s', argv, cbm.fmt(mask))
        gate_r, gate_w = os.pipe()
        cpu = set(cpus or (self.opts.cpu,))
        # The shim blocks on the gate pipe and then execs the NF in place,
        # keeping its PID: the NF's first instruction already runs under
        # the group's mask. (A blocking preexec_fn cannot do this: Popen
        # waits for the exec before returning the PID.)
        shim = [sys.executable, '-c', _GATE_SHIM, str(gate_r)] + argv
        try:
            proc = subprocess.Popen(
                shim, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, text=True, errors='replace',
                preexec_fn=lambda: os.sched_setaffinity(0, cpu),
                pass_fds=(gate_r,))
        except OSError as exc:
            os.close(gate_r)
            os.close(gate_w)
            raise exception.MeasurementError(
                reason='cannot start %s: %s' % (argv[0], exc.strerror))
        os.close(gate_r)
        try:
            resq_profiler.privsep.resctrl.assign_task(
                self.opts.resctrl_group, proc.pid)
        except Exception:
            os.close(gate_w)
            proc.kill()
            proc.communicate()
            raise
        os.write(gate_w, b'g')
        os.close(gate_w)
        output = self._collect(proc, argv)
        self.last_output = output
        return output, proc.returncode

    def _collect(self, proc, argv):
        """Run the measurement window and return everything printed.

        The window of ``command_duration_s`` starts when the output first
        matches ``command_ready_pattern`` (start-up and warm-up are not
        measured), or at once without a pattern; then the command gets
        SIGINT. A command may also end by itself earlier.
        """
        lines = []
        ready = threading.Event()
        matched = []
        pattern = self._ready_re

        def reader():
            for line in proc.stdout:
                lines.append(line)
                if not matched and pattern and pattern.search(line):
                    matched.append(line)
                    ready.set()
            ready.set()  # end of output: stop waiting either way

        thread = threading.Thread(target=reader, daemon=True)
        if pattern is None:
            ready.set()
        thread.start()

        def abort(why):
            proc.kill()
            proc.wait()
            thread.join()
            raise exception.MeasurementError(
                reason='%s %s within %.0f s; last lines:\n%s' % (
                    argv[0], why, self.opts.command_grace_s,
                    _tail(''.join(lines))))

        if not ready.wait(self.opts.command_grace_s) or (
                pattern is not None and not matched):
            abort('printed nothing matching command_ready_pattern %r'
                  % pattern.pattern)
        try:
            proc.wait(timeout=self.opts.command_duration_s)
            interrupted = False
        except subprocess.TimeoutExpired:
            interrupted = True
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=self.opts.command_grace_s)
            except subprocess.TimeoutExpired:
                abort('was killed: it did not exit after SIGINT')
        thread.join()
        out = ''.join(lines)
        ok = (0, -signal.SIGINT) if interrupted else (0,)
        if proc.returncode not in ok:
            raise exception.MeasurementError(
                reason='%s exited with status %s %s; last lines:\n%s' % (
                    argv[0], proc.returncode,
                    'after SIGINT' if interrupted
                    else 'before the measurement ended', _tail(out)))
        return out

    # -- contention (SLOMO) -----------------------------------------------
    def contention_run(self, competitors, with_nf=True, ways=None):
        """One contention run through ``contention_command``.

        The profiler's group gets a mask of ``ways`` ways and every core
        of the run (the profiling core, one of ``contention_cpus`` per
        competitor); the command gets the run spec and leaves the counter
        files (:mod:`.counters`).
        """
        register_opts(self.conf)
        ways = self.check_class_ways(ways)
        template = self._contention_template()
        cores = list(self.opts.contention_cpus)
        if len(competitors) > len(cores):
            raise exception.MeasurementError(
                reason='a contention run with %d competitors needs as many '
                '[resq_profiler] contention_cpus, %d given'
                % (len(competitors), len(cores)))
        cores = cores[:len(competitors)]
        if self.opts.cpu in cores:
            raise exception.MeasurementError(
                reason='[resq_profiler] contention_cpus must not include '
                'the profiling core %d' % self.opts.cpu)
        cpus = ([self.opts.cpu] if with_nf else []) + cores
        mask = self._apply_mask(ways)
        resq_profiler.privsep.resctrl.assign_cpus(
            self.opts.resctrl_group, [self.opts.cpu] + cores)
        with tempfile.TemporaryDirectory(prefix='resq-contention-') as tmp:
            paths = {k: os.path.join(tmp, k) for k in
                     ('spec', 'perf_out', 'mon_out')}
            spec = self._contention_spec(competitors, with_nf, ways, cores,
                                         paths)
            with open(paths['spec'], 'w', encoding='utf-8') as f:
                json.dump(spec, f, indent=1, sort_keys=True)
            argv = self._contention_argv(template, spec, paths)
            output, status = self._launch(argv, mask, cpus)
            texts = {}
            for key in ('perf_out', 'mon_out'):
                try:
                    with open(paths[key], encoding='utf-8',
                              errors='replace') as f:
                        texts[key] = f.read()
                except OSError:
                    raise exception.MeasurementError(
                        reason='%s exited %s without writing {%s}; last '
                        'lines:\n%s' % (argv[0], status, key,
                                        _tail(output)))
        mpps = self._contention_mpps(output, argv) if with_nf else None
        io = {c['cpu']: c['packet_mpps'] * 1e6 * c['packet_bytes']
              for c in spec['competitors']}
        if with_nf:
            io[self.opts.cpu] = mpps * 1e6 * self.traffic.packet_bytes
        io.update(counters.io_overrides(output))
        read = counters.readings(
            texts['perf_out'], texts['mon_out'], io, cpus,
            sources=('%s {perf_out}' % argv[0], '%s {mon_out}' % argv[0]))
        if with_nf:
            return mpps, read[0], read[1:]
        return None, None, read

    def _contention_template(self):
        if not self.opts.contention_command:
            raise exception.MeasurementError(
                reason='the command driver runs SLOMO contention runs only '
                'with [resq_profiler] contention_command set (see '
                'doc/source/admin/slomo.rst for its protocol)')
        try:
            return shlex.split(self.opts.contention_command)
        except ValueError as exc:
            raise exception.MeasurementError(
                reason='[resq_profiler] contention_command cannot be '
                'parsed: %s' % exc)

    def _contention_spec(self, competitors, with_nf, ways, cores, paths):
        nf = None
        if with_nf:
            nf = {'name': self.nf, 'cpu': self.opts.cpu,
                  'packet_bytes': self.traffic.packet_bytes,
                  'flows': self.traffic.flows, 'mbufs': self.mbufs()}
        return {
            'format': 'resq-contention-run', 'format_version': 1,
            'ways': ways, 'duration_s': self.opts.command_duration_s,
            'group_dir': os.path.join(self.tree.root,
                                      self.opts.resctrl_group),
            'monitoring_groups': ['cpu%d' % c for c in (
                [self.opts.cpu] if with_nf else []) + cores],
            'nf': nf,
            'competitors': [{
                'cpu': cpu, 'name': c.name, 'refs_per_s': c.refs_per_s,
                'buffer_bytes': int(c.buffer_bytes),
                'packet_mpps': c.packet_mpps if c.does_io else 0.0,
                'packet_bytes': c.packet_bytes,
                'dma_buffers': c.dma_buffers if c.does_io else 0}
                for cpu, c in zip(cores, competitors)],
            'perf_out': paths['perf_out'], 'mon_out': paths['mon_out'],
        }

    def _contention_argv(self, template, spec, paths):
        self._runs += 1
        cpus = [c['cpu'] for c in spec['competitors']]
        values = {
            'spec': paths['spec'], 'perf_out': paths['perf_out'],
            'mon_out': paths['mon_out'], 'ways': spec['ways'],
            'cpu': self.opts.cpu, 'with_nf': int(spec['nf'] is not None),
            'cpus': ','.join(str(c) for c in (
                [self.opts.cpu] if spec['nf'] else []) + cpus),
            'competitor_cpus': ','.join(str(c) for c in cpus),
            'duration_s': self.opts.command_duration_s,
            'packet_bytes': self.traffic.packet_bytes,
            'flows': self.traffic.flows, 'mbufs': self.mbufs(),
            'group_dir': spec['group_dir'],
        }
        try:
            return [arg.format(**values) for arg in template]
        except (KeyError, IndexError, ValueError) as exc:
            raise exception.MeasurementError(
                reason='[resq_profiler] contention_command has an unknown '
                'placeholder %s; known: %s' % (exc,
                                               ', '.join(sorted(values))))

    def _contention_mpps(self, output, argv):
        mpps, _ = self.parse(output)
        if mpps is None or not math.isfinite(mpps) or mpps <= 0:
            raise exception.MeasurementError(
                reason='%s printed no positive NF throughput (%s format) '
                'for a contention run; last lines:\n%s' % (
                    argv[0], self.opts.command_output, _tail(output)))
        return mpps

    def close(self):
        if self._group_made:
            resq_profiler.privsep.resctrl.remove_group(
                self.opts.resctrl_group)
            self._group_made = False


def _tail(text, lines=8):
    return '\n'.join((text or '').strip().splitlines()[-lines:]) or '(none)'


def _way_size(cpu, ways):
    """Bytes per LLC way: the core's L3 size over the way count."""
    path = '/sys/devices/system/cpu/cpu%d/cache/index3/size' % cpu
    try:
        with open(path, encoding='ascii') as f:
            text = f.read().strip().upper()
        units = {'K': 1024, 'M': 1024 * 1024}
        size = int(text[:-1]) * units[text[-1]] if text[-1] in units else (
            int(text))
        return max(size // ways, 1)
    except (OSError, ValueError, IndexError):
        return nfmodel.Platform().way_size_bytes


def _cpu_model():
    try:
        with open('/proc/cpuinfo', encoding='ascii', errors='replace') as f:
            for line in f:
                if line.startswith('model name'):
                    return line.split(':', 1)[1].strip()
    except OSError:
        pass
    return 'unknown'
