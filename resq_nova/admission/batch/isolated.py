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
"""The batch MILP in a child process, for processes eventlet patched.

Pyomo's HiGHS interface captures the solver's output by redirecting file
descriptors from helper threads; where eventlet patched threads and files
(Nova's functional harness, anything that runs Nova's services in-process)
that fails and can garble standard output. :func:`solve` then runs
:func:`resq_nova.admission.milp.solve` in a fresh interpreter with the same
arguments and returns its result, or raises what it raised.
"""

import os
import pickle
import subprocess
import sys
import tempfile

from resq_nova.admission import milp


def needed():
    """Whether this process must solve in a child (eventlet patched it)."""
    patcher = sys.modules.get('eventlet.patcher')
    return bool(patcher and patcher.is_monkey_patched('thread'))


def solve(*args, **kwargs):
    """:func:`resq_nova.admission.milp.solve` in a child process.

    :raises ValueError: as the MILP does (no plan in the time limit).
    :raises resq_nova.admission.milp.SolverUnavailable: also when the child
        fails.
    """
    with tempfile.TemporaryDirectory(prefix='resq-milp-') as tmp:
        request = os.path.join(tmp, 'request')
        answer = os.path.join(tmp, 'answer')
        with open(request, 'wb') as f:
            pickle.dump((args, kwargs), f)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            p for p in sys.path if p))
        proc = subprocess.run(
            [sys.executable, '-m', __name__, request, answer], env=env,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, check=False)
        if proc.returncode != 0 or not os.path.exists(answer):
            raise milp.SolverUnavailable(
                'the MILP child process failed (exit %s): %s' % (
                    proc.returncode,
                    proc.stderr.decode(errors='replace').strip()[-500:]))
        with open(answer, 'rb') as f:
            ok, value = pickle.load(f)
    if not ok:
        raise value
    return value


def main(argv=None):
    request, answer = sys.argv[1:] if argv is None else argv
    with open(request, 'rb') as f:
        args, kwargs = pickle.load(f)
    try:
        result = (True, milp.solve(*args, **kwargs))
    except (ValueError, milp.SolverUnavailable) as exc:
        result = (False, exc)
    with open(answer, 'wb') as f:
        pickle.dump(result, f)
    return 0


if __name__ == '__main__':
    sys.exit(main())
