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
"""The optimizer's single-writer lock, through tooz.

One optimizer at a time acts on a cloud (plans from the live state,
applies): optimizers on several controllers share a tooz backend chosen
by ``[resq_optimizer] coordination_url`` (``redis://`` across hosts; the
default ``file://`` under ``state_dir`` on one host). The lock is taken
without waiting: a second optimizer is told who holds it and does
nothing.
"""

import os
import socket

from oslo_log import log as logging
from tooz import coordination

from resq_common import exception

LOG = logging.getLogger(__name__)

LOCK_NAME = b'resq-optimizer'


class OptimizerBusy(exception.ResQException):
    msg_fmt = ('another resq-optimizer is acting on this cloud (it holds '
               'the lock %(lock)s at %(url)s); wait for it to finish or stop '
               'it')


class CoordinationUnavailable(exception.ResQException):
    msg_fmt = ('the optimizer lock\'s backend %(url)s cannot be used '
               '(%(reason)s); check [resq_optimizer] coordination_url and '
               'that the backend is running')


def member_id():
    """This process's name among the optimizers: ``<host>:<pid>``."""
    return '%s:%d' % (socket.gethostname(), os.getpid())


def default_url(state_dir):
    return 'file://%s' % os.path.join(os.path.abspath(state_dir), 'locks')


def _redact(url):
    # A redis URL may carry a password: never print it.
    if '@' in url:
        scheme, _, rest = url.partition('://')
        return '%s://***@%s' % (scheme, rest.rpartition('@')[2])
    return url


class Lock:
    """A non-blocking tooz lock, as a context manager.

    A coordinator is started on entry and stopped on exit, so a process
    that crashes loses the lock (file: the kernel drops the flock; redis:
    the key expires after tooz's lock timeout).
    """

    def __init__(self, url, name=LOCK_NAME):
        self.url = url
        self.name = name
        self._coord = None
        self._lock = None

    def __enter__(self):
        try:
            coord = coordination.get_coordinator(
                self.url, member_id().encode('utf-8'))
            coord.start(start_heart=True)
        except (coordination.ToozError, ValueError, OSError) as exc:
            raise CoordinationUnavailable(url=_redact(self.url), reason=exc)
        lock = coord.get_lock(self.name)
        try:
            acquired = lock.acquire(blocking=False)
        except coordination.ToozError as exc:
            coord.stop()
            raise CoordinationUnavailable(url=_redact(self.url), reason=exc)
        if not acquired:
            coord.stop()
            raise OptimizerBusy(lock=self.name.decode(),
                                url=_redact(self.url))
        self._coord, self._lock = coord, lock
        return self

    def __exit__(self, *exc):
        lock, coord = self._lock, self._coord
        self._lock = self._coord = None
        try:
            if lock is not None:
                lock.release()
        except coordination.ToozError as err:
            LOG.warning('Releasing the optimizer lock at %s failed: %s '
                        '(it expires with its holder)', _redact(self.url),
                        err)
        finally:
            if coord is not None:
                coord.stop()
        return False
