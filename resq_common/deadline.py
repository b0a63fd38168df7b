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
"""Calls to a dependency that may hang, each with a total deadline.

libvirt's ``virConnectOpen`` against a socket that accepts and never
answers blocks for good, and so does python-ovs's first connection; no
library timeout covers them. A :class:`Dependency` runs its calls on a
worker of its own and gives up waiting at the deadline: the caller (and
whatever lock it holds) is free again, the worker stays with the hung
call. While that call hangs, further calls fail at once instead of queuing
behind it: one deadline per hang, not one per call. When the hung call
returns at last, the dependency is usable again.

Every dependency's last outcome is kept in a process-wide registry, which
the agent's status shows (:func:`health`): which one hangs, since when,
and what failed last.
"""

import concurrent.futures
import queue
import threading
import time

from resq_common import exception

OK = 'ok'
FAILED = 'failed'
HUNG = 'hung'

_registry = {}
_registry_lock = threading.Lock()


class DependencyHung(exception.ResQException):
    msg_fmt = ('%(name)s did not answer within %(seconds)gs%(detail)s; '
               'what needs it waits for the next attempt, the rest of the '
               'agent goes on')


class DaemonPool:
    """A fixed pool of daemon threads running submitted calls.

    ``concurrent.futures.ThreadPoolExecutor`` joins its threads when the
    interpreter exits, so one hung call would keep ``resq-agent status``
    from ever exiting; these threads are daemons and are left behind.
    """

    def __init__(self, workers, name):
        self._queue = queue.SimpleQueue()
        self._threads = [threading.Thread(target=self._work, daemon=True,
                                          name='%s-%d' % (name, n))
                         for n in range(workers)]
        self._started = False
        self._start_lock = threading.Lock()

    def submit(self, fn, *args, **kwargs):
        with self._start_lock:
            if not self._started:
                for thread in self._threads:
                    thread.start()
                self._started = True
        future = concurrent.futures.Future()
        self._queue.put((future, fn, args, kwargs))
        return future

    def _work(self):
        while True:
            future, fn, args, kwargs = self._queue.get()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:
                future.set_exception(exc)
            else:
                future.set_result(result)


class Outcomes:
    """A dependency's last outcome: state, since when, detail, failures.

    On its own, for calls bounded elsewhere: Placement, Nova and resq-api
    requests run with keystoneauth under
    :func:`resq_common.conf.clients.call`'s own deadline.
    """

    def __init__(self, name):
        self.name = name
        self._lock = threading.Lock()
        self.state = None
        self.since = None
        self.detail = None
        self.failures = 0         # outcomes other than ok, ever

    def record(self, state, detail=None):
        """Note an outcome; ``since`` changes only with the state."""
        with self._lock:
            if state != self.state:
                self.since = time.time()
            self.state = state
            self.detail = detail
            if state != OK:
                self.failures += 1

    def health(self):
        with self._lock:
            return {'state': self.state, 'since': self.since,
                    'detail': self.detail, 'failures': self.failures}


class Dependency(Outcomes):
    """One dependency's calls, each bounded by ``deadline`` seconds.

    :param name: how status and errors call it (``libvirt``, ``ovsdb``).
    :param workers: calls that may run at once (1: calls are serialised,
        as a single libvirt connection would serialise them anyway).
    """

    def __init__(self, name, deadline, workers=1):
        super().__init__(name)
        self.deadline = float(deadline)
        self._pool = DaemonPool(workers, 'resq-%s' % name)
        self._hung = None             # the future that did not finish
        register(self)

    def call(self, fn, *args, **kwargs):
        """``fn(*args, **kwargs)`` on the dependency's worker.

        :raises DependencyHung: no answer within the deadline, or an
            earlier call still hangs.
        :raises: whatever ``fn`` raised.
        """
        with self._lock:
            hung = self._hung
        if hung is not None and not hung.done():
            raise DependencyHung(
                name=self.name, seconds=self.deadline,
                detail=' (hung since %s)' % time.strftime(
                    '%H:%M:%S', time.localtime(self.since)))
        future = self._pool.submit(fn, *args, **kwargs)
        try:
            result = future.result(timeout=self.deadline)
        except concurrent.futures.TimeoutError:
            with self._lock:
                self._hung = future
            self.record(HUNG, 'no answer within %gs' % self.deadline)
            future.add_done_callback(self._returned)
            raise DependencyHung(name=self.name, seconds=self.deadline,
                                 detail='')
        except Exception as exc:
            self.record(FAILED, str(exc) or type(exc).__name__)
            raise
        self.record(OK)
        return result

    def _returned(self, future):
        with self._lock:
            if self._hung is future:
                self._hung = None


def register(dep):
    with _registry_lock:
        _registry[dep.name] = dep


def unregister(dep):
    with _registry_lock:
        if _registry.get(dep.name) is dep:
            del _registry[dep.name]


def outcomes(name):
    """The registry's :class:`Outcomes` (or Dependency) called ``name``."""
    with _registry_lock:
        dep = _registry.get(name)
        if dep is None:
            dep = _registry[name] = Outcomes(name)
        return dep


def health():
    """``{name: {'state', 'since', 'detail'}}`` of every dependency used.

    ``state`` is None for one not asked yet.
    """
    with _registry_lock:
        deps = list(_registry.values())
    return {d.name: d.health() for d in sorted(deps, key=lambda d: d.name)}


def reset():
    """Forget every dependency (tests; a new process starts empty)."""
    with _registry_lock:
        _registry.clear()
