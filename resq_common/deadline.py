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

Each remote service (Placement, Nova, resq-api) has a bounded pool of its
own (:func:`capacity`): a service that hangs holds its own workers only,
and once every one of them holds a hung call, further calls to it fail at
once while the other services' calls go on.
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
_capacities = {}
_registry_lock = threading.Lock()


class DependencyHung(exception.ResQException):
    msg_fmt = ('%(name)s did not answer within %(seconds)gs%(detail)s; '
               'what needs it waits for the next attempt, the rest of the '
               'agent goes on')


class Saturated(exception.ResQException):
    msg_fmt = ('%(name)s: %(stuck)d calls hang past their deadline, the '
               'oldest since %(since)s, holding all %(workers)d of its '
               'workers; this one was not sent, calls to other services '
               'go on')


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

    def shutdown(self):
        """Let every worker end once it is idle (a hung one: when it returns).

        Calls still queued are run first; nothing should be submitted after.
        """
        with self._start_lock:
            if self._started:
                for _ in self._threads:
                    self._queue.put(None)

    def _work(self):
        while True:
            item = self._queue.get()
            if item is None:
                return
            future, fn, args, kwargs = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:
                future.set_exception(exc)
            else:
                future.set_result(result)


class Capacity:
    """Calls to one dependency on a bounded pool of its own.

    A call the caller gave up on at its deadline (:meth:`abandon`) keeps
    its worker until it returns (until its socket gives up, for a remote
    call): it costs this dependency a worker and no other dependency
    anything. While every worker holds such a call, :meth:`submit` refuses
    at once rather than queue a call no worker will take.

    :param name: the dependency, as errors name it (``placement``).
    :param workers: calls that may run at once.
    """

    def __init__(self, name, workers):
        self.name = name
        self.workers = workers
        self._pool = DaemonPool(workers, 'resq-%s' % name)
        self._lock = threading.Lock()
        self._stuck = {}              # abandoned future -> when

    def submit(self, fn, *args, **kwargs):
        """A future of ``fn(*args, **kwargs)`` run on one of the workers.

        :raises Saturated: every worker holds an abandoned call.
        """
        with self._lock:
            stuck = len(self._stuck)
            oldest = min(self._stuck.values(), default=None)
        if stuck >= self.workers:
            raise Saturated(name=self.name, stuck=stuck,
                            workers=self.workers, since=time.strftime(
                                '%H:%M:%S', time.localtime(oldest)))
        return self._pool.submit(fn, *args, **kwargs)

    def abandon(self, future):
        """The caller stopped waiting for ``future``.

        Still queued, it is dropped; running, it holds its worker, and
        counts as stuck, until it returns.
        """
        if future.cancel():
            return
        with self._lock:
            self._stuck[future] = time.time()
        future.add_done_callback(self._returned)

    def stuck(self):
        """How many abandoned calls still hold a worker."""
        with self._lock:
            return len(self._stuck)

    def since(self):
        """When the oldest call still stuck was abandoned, or None."""
        with self._lock:
            return min(self._stuck.values(), default=None)

    def shutdown(self):
        self._pool.shutdown()

    def _returned(self, future):
        with self._lock:
            self._stuck.pop(future, None)


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
        self._capacity = Capacity(name, workers)
        register(self)

    def call(self, fn, *args, **kwargs):
        """``fn(*args, **kwargs)`` on the dependency's worker.

        :raises DependencyHung: no answer within the deadline, or earlier
            calls still hang on every worker.
        :raises: whatever ``fn`` raised.
        """
        try:
            future = self._capacity.submit(fn, *args, **kwargs)
        except Saturated:
            raise DependencyHung(
                name=self.name, seconds=self.deadline,
                detail=' (hung since %s)' % time.strftime(
                    '%H:%M:%S', time.localtime(self._capacity.since())))
        try:
            result = future.result(timeout=self.deadline)
        except concurrent.futures.TimeoutError:
            self.record(HUNG, 'no answer within %gs' % self.deadline)
            self._capacity.abandon(future)
            raise DependencyHung(name=self.name, seconds=self.deadline,
                                 detail='')
        except Exception as exc:
            self.record(FAILED, str(exc) or type(exc).__name__)
            raise
        self.record(OK)
        return result


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


def capacity(name, workers):
    """The bounded pool of calls to the remote service ``name``.

    Made at its first use with ``workers`` workers (their threads start at
    the first call); later uses get the same pool, whatever ``workers``
    they give.
    """
    with _registry_lock:
        cap = _capacities.get(name)
        if cap is None:
            cap = _capacities[name] = Capacity(name, workers)
        return cap


def health():
    """``{name: {'state', 'since', 'detail'}}`` of every dependency used.

    ``state`` is None for one not asked yet.
    """
    with _registry_lock:
        deps = list(_registry.values())
    return {d.name: d.health() for d in sorted(deps, key=lambda d: d.name)}


def reset():
    """Forget every dependency (tests; a new process starts empty).

    The remote services' pools are shut down: their idle workers end, a
    hung one when its call returns.
    """
    with _registry_lock:
        _registry.clear()
        capacities = list(_capacities.values())
        _capacities.clear()
    for cap in capacities:
        cap.shutdown()
