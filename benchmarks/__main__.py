"""Run one benchmark: python -m benchmarks NAME [--record] [ARGS...].

``--record`` keeps the benchmark's final JSON object (the last line of
its output that is one) for the docs: with ``recorded_at`` (UTC date),
``commit`` (``git rev-parse HEAD``; ``modified`` says whether tracked
files differed from it), ``machine`` (``nproc`` and the CPU's model
name) and ``command`` (the benchmark's arguments) added, it
is written to ``doc/source/figures/bench-<name>.json``, where ``<name>`` is the
object's ``benchmark`` key or else NAME (``--record-as NAME`` sets it,
for a second record of one benchmark). The docs quote it as
``:num:`bench/<name>/<key>``` (``doc/source/_exts/resq_figures.py``).
"""

import datetime
import importlib
import io
import json
import os
import subprocess
import sys

BENCHMARKS = {
    'agent': 'benchmarks.agent',
    'api': 'benchmarks.api',
    'boundary': 'benchmarks.boundary',
    'cloud': 'benchmarks.cloud',
    'cloud-soak': 'benchmarks.cloud_soak',
    'host': 'benchmarks.host',
    'milp': 'benchmarks.milp',
    'nfvnice': 'benchmarks.nfvnice',
    'nfvnice_fastpath': 'benchmarks.nfvnice_fastpath',
    'optimizer': 'benchmarks.optimizer',
    'scheduler': 'benchmarks.scheduler',
    'profiler': 'benchmarks.profiler',
    'prediction': 'benchmarks.prediction',
    'ondemand': 'benchmarks.ondemand',
    'seeds': 'benchmarks.seeds',
    'trace': 'benchmarks.trace',
}

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Where --record writes, relative to the repository root.
RECORD_DIR = os.path.join('doc', 'source', 'figures')

# The keys --record adds to the benchmark's object.
RECORD_KEYS = ('recorded_at', 'commit', 'machine')


class _Tee(io.TextIOBase):
    """Writes through to ``stream`` and keeps a copy of the text."""

    def __init__(self, stream):
        self.stream = stream
        self.copy = io.StringIO()

    def write(self, text):
        self.copy.write(text)
        return self.stream.write(text)

    def flush(self):
        self.stream.flush()


def last_json_object(text):
    """The last line of ``text`` that is a JSON object, or None."""
    for line in reversed(text.splitlines()):
        line = line.strip()
        if not line.startswith('{'):
            continue
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def machine(cpuinfo='/proc/cpuinfo'):
    """``{"nproc", "model"}`` of this machine."""
    model = 'unknown CPU'
    try:
        with open(cpuinfo) as f:
            for line in f:
                key, _, value = line.partition(':')
                if key.strip() == 'model name':
                    model = value.strip()
                    break
    except OSError:
        pass
    return {'nproc': os.cpu_count() or 1, 'model': model,
            'description': '%d-CPU %s' % (os.cpu_count() or 1, model)}


def commit(root=None):
    """``git rev-parse HEAD`` of the repository, or ``"unknown"``."""
    root = root or ROOT
    try:
        out = subprocess.run(['git', 'rev-parse', 'HEAD'], cwd=root,
                             capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return 'unknown'
    return out.stdout.strip() or 'unknown'


def modified(root=None):
    """Whether tracked files differ from ``HEAD`` (None: unknown)."""
    try:
        out = subprocess.run(['git', 'status', '--porcelain',
                              '--untracked-files=no'], cwd=root or ROOT,
                             capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return bool(out.stdout.strip())


def record(name, figures, root=None, now=None, command=None):
    """Write ``figures`` with the run's provenance; returns the path.

    ``command``, when given, is the command line that ran the benchmark
    (kept as ``command``, for the docs to quote).
    """
    root = root or ROOT
    doc = dict(figures)
    if command:
        doc['command'] = command
    now = now or datetime.datetime.now(datetime.timezone.utc)
    doc['recorded_at'] = now.strftime('%Y-%m-%d')
    doc['commit'] = commit(root)
    # A run on a tree with uncommitted changes is not quite the commit's.
    doc['modified'] = modified(root)
    doc['machine'] = machine()
    name = str(doc.get('benchmark') or name)
    directory = os.path.join(root, RECORD_DIR)
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, 'bench-%s.json' % name)
    with open(path, 'w') as f:
        f.write(json.dumps(doc, indent=1, sort_keys=True) + '\n')
    return path


def _record_options(argv):
    """``(argv without them, record?, record name or None)``.

    ``--record-as NAME`` records under NAME (two runs of one benchmark
    with different arguments, e.g. ``optimizer --gap-study --big``).
    """
    rest, name, recording = [], None, False
    args = iter(argv)
    for a in args:
        if a == '--record':
            recording = True
        elif a == '--record-as':
            recording, name = True, next(args, None)
            if not name:
                raise ValueError('--record-as needs a name')
        else:
            rest.append(a)
    return rest, recording, name


def main(argv):
    try:
        argv, recording, record_as = _record_options(argv)
    except ValueError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    if not argv or argv[0] not in BENCHMARKS:
        print('usage: tox -e bench -- NAME [--record | --record-as NAME] '
              '[ARGS]; NAME is one of: %s' % ', '.join(sorted(BENCHMARKS)),
              file=sys.stderr)
        return 2
    module = importlib.import_module(BENCHMARKS[argv[0]])
    if not recording:
        return module.main(argv[1:])
    tee = _Tee(sys.stdout)
    saved, sys.stdout = sys.stdout, tee
    try:
        status = module.main(argv[1:])
    finally:
        sys.stdout = saved
    if status:
        print('--record: the benchmark failed (status %s); nothing '
              'recorded' % status, file=sys.stderr)
        return status
    figures = last_json_object(tee.copy.getvalue())
    if figures is None:
        print('--record: benchmark %s printed no JSON object line; '
              'nothing recorded (make it print one as its last line)'
              % argv[0], file=sys.stderr)
        return 1
    if record_as:
        figures['benchmark'] = record_as
    command = ' '.join(['python -m benchmarks'] + argv)
    print('recorded to %s' % record(argv[0], figures, command=command))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
