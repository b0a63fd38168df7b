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
"""The agent's messaging service: RPC server, Nova notification listener,
periodic reconcile and periodic monitoring notifications.

Enforcement never waits for RabbitMQ. The periodic reconcile runs on its
own thread from the start; the RPC server and the listener are started by
a connector thread that first checks the broker accepts connections (an
oslo.messaging server started against a dead broker blocks in its own
retry loop and cannot be stopped), and retries every
``messaging_retry_interval`` seconds until it does. Once connected,
oslo.messaging reconnects by itself when the broker goes away and returns.
"""

import signal
import socket
import threading

from oslo_log import log as logging
import oslo_messaging

from resq_agent import notifications
from resq_agent.ondemand import escalation
from resq_agent import rpc

LOG = logging.getLogger(__name__)

# Seconds a periodic task whose interval was set to 0 by a reload waits
# before it reads the interval again.
IDLE_S = 1.0


def compute_host(conf):
    return conf.resq_agent.compute_host or socket.gethostname()


def broker_hosts(conf, url=None):
    """``[(hostname, port)]`` of the transport URL's brokers."""
    parsed = oslo_messaging.TransportURL.parse(conf, url)
    return [(h.hostname or 'localhost', h.port or 5672)
            for h in parsed.hosts] or [('localhost', 5672)]


def broker_reachable(hosts, timeout=2.0):
    """True when any broker accepts a TCP connection; the error otherwise.

    :returns: ``(True, None)`` or ``(False, reason)``.
    """
    reasons = []
    for host, port in hosts:
        try:
            socket.create_connection((host, port), timeout=timeout).close()
            return True, None
        except OSError as exc:
            reasons.append('%s:%s: %s' % (host, port, exc.strerror or exc))
    return False, '; '.join(reasons)


class AgentService:
    """Runs the agent's messaging around an :class:`AgentManager`.

    :param conf: ConfigOpts with ``[resq_agent]`` and oslo.messaging's
        options (``[DEFAULT] transport_url``, ``[oslo_messaging_rabbit]``).
    :param manager: has ``reconcile()``, ``status()`` and
        ``instance_changed(uuid, event_type)``.
    :param host: Nova's compute host name (default: ``compute_host``).
    """

    def __init__(self, conf, manager, host=None):
        self.conf = conf
        self.manager = manager
        self.host = host or compute_host(conf)
        opts = conf.resq_agent
        self.hosts = {self.host, getattr(opts, 'hypervisor_hostname', None)}
        self._stop = threading.Event()
        self._threads = []
        self.rpc_server = None
        self.listener = None
        self.notifier = None
        self.escalator = None
        self.connected = threading.Event()
        self._broker_down = False      # seen by the connector
        self._monitor_down = False     # seen by the monitoring thread
        self._reload = threading.Event()  # set by SIGHUP

    # -- life cycle ---------------------------------------------------------
    def start(self):
        rpc.register_opts(self.conf)
        self.transport = oslo_messaging.get_rpc_transport(self.conf)
        self.notification_transport = (
            oslo_messaging.get_notification_transport(self.conf))
        self._brokers = broker_hosts(self.conf)
        self._notification_brokers = broker_hosts(
            self.conf, self.conf.oslo_messaging_notifications.transport_url)
        opts = self.conf.resq_agent
        self.notifier = notifications.StatusNotifier(
            self.conf, self.notification_transport, self.host)
        hooks = getattr(self.manager, 'misplaced_hooks', None)
        if hooks is not None:
            hooks.append(self.notifier.misplaced)
        self.escalator = escalation.Escalator(
            self.conf, self.transport, self.notification_transport,
            self.host)
        self._spawn('resq-agent-messaging', self._connect)
        # The intervals are read again before each wait: SIGHUP changes
        # them (they are mutable); one that is 0 at start needs a restart.
        if opts.reconcile_interval:
            self._spawn('resq-agent-reconcile', self._every,
                        lambda: opts.reconcile_interval, self._reconcile)
        if opts.status_notification_interval:
            self._spawn('resq-agent-monitor', self._every,
                        lambda: opts.status_notification_interval,
                        self.send_status)
        LOG.info('resq-agent service started for host %s (RPC topic %s)',
                 self.host, opts.rpc_topic)

    def stop(self):
        self._stop.set()
        for server in (self.rpc_server, self.listener):
            if server is not None:
                try:
                    server.stop()
                    server.wait()
                except Exception:
                    LOG.exception('Error stopping %s', server)
        for thread in self._threads:
            thread.join(timeout=10)
        self._threads = []
        for transport in ('transport', 'notification_transport'):
            if getattr(self, transport, None) is not None:
                getattr(self, transport).cleanup()
                setattr(self, transport, None)
        LOG.info('resq-agent service stopped')

    def wait(self):
        """Block until :meth:`stop` or SIGTERM; SIGHUP calls :meth:`reload`.

        The signal handler only sets a flag: the configuration is read
        again here, in the main thread, not inside the handler.
        """
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, lambda *_: self._stop.set())
            signal.signal(signal.SIGHUP, lambda *_: self._reload.set())
        while not self._stop.wait(1.0):
            if self._reload.is_set():
                self._reload.clear()
                self.reload()

    def reload(self):
        """Read the configuration files again (SIGHUP).

        Only the options marked mutable change; oslo.config logs each
        change and warns about every other option that changed in the
        files, which keeps its value until the agent restarts. The
        periodic tasks read their intervals before each wait, and the
        mutate hooks (``conf.register_mutate_hook``) pass the new values
        to what keeps a copy.

        :returns: ``{(group, option): (old, new)}`` of what changed.
        """
        LOG.info('SIGHUP: reading the configuration files again')
        try:
            return self.conf.mutate_config_files()
        except Exception as exc:
            LOG.error('The configuration files could not be read again '
                      '(%s); the running configuration stays', exc)
            return {}

    def _spawn(self, name, target, *args):
        thread = threading.Thread(target=target, args=args, name=name,
                                  daemon=True)
        thread.start()
        self._threads.append(thread)

    def run_every(self, name, interval, func):
        """Call ``func()`` every ``interval`` seconds until :meth:`stop`.

        :param interval: seconds, or a callable returning them, called
            before each wait (so a mutable option's new value is used).
            While it returns 0 or less, ``func`` is not called.
        """
        self._spawn(name, self._every, interval, func)

    def _every(self, interval, func):
        while True:
            seconds = interval() if callable(interval) else interval
            if self._stop.wait(seconds if seconds > 0 else IDLE_S):
                return
            if seconds <= 0:
                continue
            try:
                func()
            except Exception:
                LOG.exception('%s failed; trying again in %s s',
                              func.__name__, seconds)

    # -- messaging ----------------------------------------------------------
    def _connect(self):
        opts = self.conf.resq_agent
        while not self._stop.is_set():
            ok, reason = broker_reachable(self._brokers)
            if ok:
                try:
                    self._start_servers()
                    self.connected.set()
                    if self._broker_down:
                        LOG.info('Message broker reachable again; RPC and '
                                 'Nova notifications are back')
                    LOG.info('Listening for RPC on %s.%s%s', opts.rpc_topic,
                             self.host, ' and for Nova notifications on '
                             '%s' % opts.nova_notification_topic
                             if self.listener else '')
                    return
                except Exception as exc:
                    reason = exc
            self._broker_down = True
            LOG.warning('Message broker unreachable (%s): no RPC and no Nova '
                        'notifications; enforcement goes on from libvirt '
                        'events and the periodic reconcile. Retrying in '
                        '%d s.', reason, opts.messaging_retry_interval)
            self._stop.wait(opts.messaging_retry_interval)

    def _start_servers(self):
        if self.rpc_server is None:
            server = rpc.get_server(self.conf, self.transport, self.manager,
                                    self.host)
            server.start()
            self.rpc_server = server
        if (self.listener is None
                and self.conf.resq_agent.listen_nova_notifications):
            listener = notifications.get_nova_listener(
                self.conf, self.notification_transport, self.manager,
                self.host, self.hosts)
            listener.start()
            self.listener = listener

    # -- periodic tasks -------------------------------------------------------
    def _reconcile(self):
        summary = self.manager.reconcile()
        LOG.debug('Periodic reconcile: %s', summary)
        self.send_escalations()

    def send_escalations(self):
        """Escalate the on-demand NFs the local scheduler gave up on."""
        ondemand = getattr(self.manager, 'ondemand', None)
        if ondemand is None or self.escalator is None:
            return 0
        return self.escalator.send(ondemand.take_escalations())

    def send_status(self):
        """Send the monitoring notifications once.

        Skipped while the broker is unreachable, with one log line per
        outage rather than one traceback per instance.

        :returns: True when sent.
        """
        ok, reason = broker_reachable(self._notification_brokers)
        if not ok:
            if not self._monitor_down:
                LOG.warning('Message broker unreachable (%s); monitoring '
                            'notifications are skipped until it is back',
                            reason)
            self._monitor_down = True
            return False
        if self._monitor_down:
            LOG.info('Message broker reachable again; monitoring '
                     'notifications resume')
            self._monitor_down = False
        self.notifier.send(self.manager.status())
        return True
