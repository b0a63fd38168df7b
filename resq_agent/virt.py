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
"""Nova's instances as libvirt sees them (thin adapter over libvirt-python).

An instance is a domain carrying Nova's ``<nova:instance>`` metadata; its
UUID is the domain's. From the XML the agent takes the pinned pCPUs
(``<cputune><vcpupin cpuset=...>``) and the flavor's extra specs (Nova
writes them under ``<nova:flavor><nova:extraSpecs>``), hence
``resq:packet_bytes`` and the LLC request. Where the ways really are
(which cache domain, how many) is Placement's word, not the XML's.

One owner per partition: the agent's ``resq-`` resctrl group. A
``<cachetune>`` in the persistent definition would make libvirt create its
own group when the domain starts again, a second enforcer that wins over
the agent's, so the agent removes any it finds on the instances it
partitions (earlier releases wrote them) and re-enforces on the start
event.
"""

import dataclasses
import threading
import xml.etree.ElementTree as ET

import libvirt
from oslo_log import log as logging
from oslo_utils import uuidutils

from resq_agent import discovery
from resq_common import deadline
from resq_common import extra_specs as specs_mod

LOG = logging.getLogger(__name__)
NOVA_NS = 'http://openstack.org/xmlns/libvirt/nova/1.1'
ET.register_namespace('nova', NOVA_NS)
_N = '{%s}' % NOVA_NS
LIFECYCLE = {
    libvirt.VIR_DOMAIN_EVENT_DEFINED: 'defined',
    libvirt.VIR_DOMAIN_EVENT_UNDEFINED: 'undefined',
    libvirt.VIR_DOMAIN_EVENT_STARTED: 'started',
    libvirt.VIR_DOMAIN_EVENT_SUSPENDED: 'suspended',
    libvirt.VIR_DOMAIN_EVENT_RESUMED: 'resumed',
    libvirt.VIR_DOMAIN_EVENT_STOPPED: 'stopped',
    libvirt.VIR_DOMAIN_EVENT_SHUTDOWN: 'shutdown',
    libvirt.VIR_DOMAIN_EVENT_PMSUSPENDED: 'pmsuspended',
    libvirt.VIR_DOMAIN_EVENT_CRASHED: 'crashed',
}


def _quiet(ctx, err):
    # libvirt prints every error to stderr by default; the agent logs the
    # ones that matter itself (e.g. "domain not found" is normal).
    pass


libvirt.registerErrorHandler(_quiet, None)


@dataclasses.dataclass(frozen=True)
class Instance:
    uuid: str
    name: str
    flavor: str
    extra_specs: dict
    vcpu_pins: dict          # {vcpu: (pCPU, ...)}
    active: bool = True
    domain_id: int = None    # changes when the domain starts again

    @property
    def cpus(self):
        """Pinned pCPUs; empty when a vCPU floats (not pinned to one)."""
        if not self.vcpu_pins or any(len(c) != 1
                                     for c in self.vcpu_pins.values()):
            return ()
        return tuple(sorted({c[0] for c in self.vcpu_pins.values()}))

    @property
    def packet_bytes(self):
        value = self.extra_specs.get('resq:packet_bytes')
        try:
            return int(value) if value is not None else None
        except ValueError:
            return None

    @property
    def llc_ways(self):
        """Ways the flavor asks for (a hint while Placement is away)."""
        for key, value in self.extra_specs.items():
            if key.startswith('resources') and key.endswith(
                    ':' + specs_mod.RC_LLC_WAY):
                try:
                    return int(value)
                except ValueError:
                    return None
        return None

    @property
    def code_ways(self):
        """Of its ways, those the flavor wants for code (0: shared)."""
        value = self.extra_specs.get('resq:code_ways')
        try:
            return max(int(value), 0) if value is not None else 0
        except ValueError:
            return 0

    @property
    def mem_bw_mibps(self):
        """Memory bandwidth the flavor asks for, MiB/s (0: none)."""
        for key, value in self.extra_specs.items():
            if key.startswith('resources') and key.endswith(
                    ':' + specs_mod.RC_MEM_BW):
                try:
                    return max(int(value), 0)
                except ValueError:
                    return 0
        return 0


def parse_domain(xml, active=True):
    """An :class:`Instance` from a domain's XML, or None if not Nova's."""
    root = ET.fromstring(xml)
    meta = root.find('./metadata/%sinstance' % _N)
    if meta is None:
        return None
    flavor = meta.find(_N + 'flavor')
    specs = {}
    if flavor is not None:
        for spec in flavor.findall('%sextraSpecs/%sextraSpec' % (_N, _N)):
            specs[spec.get('name')] = (spec.text or '').strip()
    pins = {}
    for pin in root.findall('./cputune/vcpupin'):
        pins[int(pin.get('vcpu'))] = discovery.parse_cpu_list(
            pin.get('cpuset', ''))
    dom_id = root.get('id')
    return Instance(uuid=root.findtext('uuid').strip().lower(),
                    name=root.findtext('name'),
                    flavor=flavor.get('name') if flavor is not None else '',
                    extra_specs=specs, vcpu_pins=pins, active=active,
                    domain_id=int(dom_id) if dom_id and dom_id.isdigit()
                    else None)


def with_cachetune(xml, vcpus, domain_id, size_bytes, cdp=False):
    """The domain XML with one ``<cachetune>`` (or none if size is 0)."""
    root = ET.fromstring(xml)
    cputune = root.find('cputune')
    if cputune is None:
        cputune = ET.SubElement(root, 'cputune')
    for old in cputune.findall('cachetune'):
        cputune.remove(old)
    if size_bytes:
        tune = ET.SubElement(cputune, 'cachetune',
                             vcpus=discovery.format_cpus(vcpus))
        for kind in (('code', 'data') if cdp else ('both',)):
            ET.SubElement(tune, 'cache', id=str(domain_id), level='3',
                          type=kind, size=str(size_bytes // 1024),
                          unit='KiB')
    return ET.tostring(root, encoding='unicode')


def cachetune_of(xml):
    """``[(vcpus, domain id, size bytes)]`` of a domain's cachetunes."""
    result = []
    for tune in ET.fromstring(xml).findall('./cputune/cachetune'):
        vcpus = discovery.parse_cpu_list(tune.get('vcpus', ''))
        for cache in tune.findall('cache'):
            result.append((vcpus, int(cache.get('id')), discovery.parse_size(
                cache.get('size', '0'), cache.get('unit', 'KiB'))))
    return sorted(set(result))


SHARE_PARAMS = ('cpu_shares', 'weight')


class SharesUnsupported(Exception):
    def __init__(self, uuid):
        super().__init__('instance %s does not run or its libvirt driver has '
                         'no CPU weight (cpu_shares) to set' % uuid)


def _message(exc):
    if isinstance(exc, libvirt.libvirtError):
        return exc.get_error_message()
    return str(exc)


def _uuid_of(dom):
    try:
        return dom.UUIDString().lower()
    except libvirt.libvirtError:
        return None


DEFAULT_TIMEOUT = 20


class Hypervisor:
    """The local libvirt, reconnecting when the connection drops.

    Every public method runs whole (connecting included) on the libvirt
    worker of a :class:`resq_common.deadline.Dependency`: a libvirtd that
    accepts connections and never answers costs a caller ``timeout``
    seconds once (:class:`resq_common.deadline.DependencyHung`), and
    nothing at all while that call still hangs.
    """

    def __init__(self, uri, timeout=DEFAULT_TIMEOUT):
        self.uri = uri
        self._conn = None
        self._lock = threading.Lock()
        self.dependency = deadline.Dependency('libvirt', timeout)

    def _connection(self):
        with self._lock:
            if self._conn is None or not self._conn.isAlive():
                self._conn = libvirt.open(self.uri)
            return self._conn

    def _bounded(self, fn, *args):
        return self.dependency.call(fn, *args)

    def hostname(self):
        return self._bounded(lambda: self._connection().getHostname())

    def capabilities(self):
        return self._bounded(lambda: self._connection().getCapabilities())

    def ping(self):
        """libvirt's version; raises when libvirt does not answer."""
        return self._bounded(lambda: self._connection().getLibVersion())

    def instances(self, unreadable=None):
        """Every running Nova instance (see :meth:`_instances`)."""
        return self._bounded(self._instances, unreadable)

    def instance(self, uuid):
        """The instance if it runs (see :meth:`_instance`)."""
        return self._bounded(self._instance, uuid)

    def drop_cachetune(self, uuid, attempts=3):
        """See :meth:`_drop_cachetune`."""
        return self._bounded(self._drop_cachetune, uuid, attempts)

    def cpu_shares(self, uuid):
        """See :meth:`_cpu_shares`."""
        return self._bounded(self._cpu_shares, uuid)

    def set_cpu_shares(self, uuid, shares):
        """See :meth:`_set_cpu_shares`."""
        return self._bounded(self._set_cpu_shares, uuid, shares)

    def cpu_times(self, uuids):
        """See :meth:`_cpu_times`."""
        return self._bounded(self._cpu_times, uuids)

    def has_job(self, uuid):
        """See :meth:`_has_job`."""
        return self._bounded(self._has_job, uuid)

    def _has_job(self, uuid):
        """Whether a job (a live migration away, say) runs on the domain.

        :returns: None when libvirt cannot say (no such domain, or the
            driver does not report jobs).
        """
        try:
            dom = self._connection().lookupByUUIDString(uuid)
            return dom.jobInfo()[0] != libvirt.VIR_DOMAIN_JOB_NONE
        except libvirt.libvirtError:
            return None

    def _instances(self, unreadable=None):
        """Every running Nova instance.

        A domain that goes away between the listing and the read is left
        out; one that cannot be read for another reason is left out too
        and its UUID added to ``unreadable`` (a set), so that the caller
        keeps what it knew of it instead of dropping its partition.

        :raises libvirt.libvirtError: when the listing itself fails.
        """
        result = []
        flags = libvirt.VIR_CONNECT_LIST_DOMAINS_ACTIVE
        for dom in self._connection().listAllDomains(flags):
            try:
                inst = parse_domain(dom.XMLDesc(0))
            except libvirt.libvirtError as exc:
                if exc.get_error_code() == libvirt.VIR_ERR_NO_DOMAIN:
                    continue
                uuid = _uuid_of(dom)
                LOG.warning('Cannot read domain %s from libvirt (%s); '
                            'keeping what is known of it', uuid,
                            exc.get_error_message())
                if unreadable is not None and uuid:
                    unreadable.add(uuid)
                continue
            except (ET.ParseError, ValueError, AttributeError) as exc:
                uuid = _uuid_of(dom)
                LOG.warning('Domain %s has XML the agent cannot read (%s); '
                            'keeping what is known of it', uuid, exc)
                if unreadable is not None and uuid:
                    unreadable.add(uuid)
                continue
            if inst is not None:
                result.append(inst)
        return result

    def _instance(self, uuid):
        """The instance if it runs, else None (also for a malformed UUID).

        :raises libvirt.libvirtError: when libvirt cannot be asked.
        """
        if not uuidutils.is_uuid_like(uuid):
            return None
        try:
            dom = self._connection().lookupByUUIDString(uuid)
            if not dom.isActive():
                return None
            return parse_domain(dom.XMLDesc(0))
        except libvirt.libvirtError as exc:
            if exc.get_error_code() == libvirt.VIR_ERR_NO_DOMAIN:
                return None
            raise

    def _drop_cachetune(self, uuid, attempts=3):
        """Remove ``<cachetune>`` from the persistent definition.

        The agent is the one owner of an instance's partition (its
        ``resq-`` resctrl group): a ``<cachetune>`` in the definition makes
        libvirt create a resctrl group of its own when the domain starts
        again, which wins over the agent's. The definition is read, edited
        and read again just before ``defineXML``; when someone else (Nova)
        changed it meanwhile the edit starts over, so their change is never
        overwritten.

        :returns: True when the definition changed.
        :raises RuntimeError: when it kept changing for ``attempts`` tries.
        """
        conn = self._connection()
        try:
            dom = conn.lookupByUUIDString(uuid)
        except libvirt.libvirtError:
            return False
        if not dom.isPersistent():
            return False
        flags = libvirt.VIR_DOMAIN_XML_INACTIVE
        for _ in range(attempts):
            xml = dom.XMLDesc(flags)
            if not cachetune_of(xml):
                return False
            new = with_cachetune(xml, (), 0, 0)
            if dom.XMLDesc(flags) != xml:
                continue
            conn.defineXML(new)
            return True
        raise RuntimeError('the libvirt definition of %s kept changing; '
                           'its <cachetune> is removed at the next '
                           'reconcile' % uuid)

    # -- CPU shares (NFVnice) ----------------------------------------------
    def _cpu_shares(self, uuid):
        """``(domain id, parameter, value)`` of a running domain's weight.

        QEMU and LXC call the cgroup CPU weight ``cpu_shares``; drivers
        with a proportional scheduler of their own (the test driver, Xen's
        credit scheduler) call it ``weight``. The domain id changes when
        the domain starts again, which resets the weight to its
        definition's.

        :returns: None when the domain does not run or has no weight.
        :raises libvirt.libvirtError: when libvirt cannot be asked.
        """
        try:
            dom = self._connection().lookupByUUIDString(uuid)
            if not dom.isActive():
                return None
            params = dom.schedulerParameters()
        except libvirt.libvirtError as exc:
            if exc.get_error_code() == libvirt.VIR_ERR_NO_DOMAIN:
                return None
            raise
        for name in SHARE_PARAMS:
            if name in params:
                return dom.ID(), name, params[name]
        return None

    def _cpu_times(self, uuids):
        """CPU time (ns) of the running domains among ``uuids``.

        ``{uuid: ns}``, all the domain's threads (its cgroup with QEMU).

        A domain that does not run, or whose driver reports no CPU time,
        is left out.
        """
        conn = self._connection()
        result = {}
        for uuid in uuids:
            try:
                dom = conn.lookupByUUIDString(uuid)
                if not dom.isActive():
                    continue
                stats = dom.getCPUStats(True)
            except libvirt.libvirtError as exc:
                if exc.get_error_code() == libvirt.VIR_ERR_NO_DOMAIN:
                    continue
                raise
            value = stats[0].get('cpu_time') if stats else None
            if isinstance(value, int) and value >= 0:
                result[uuid] = value
        return result

    def _set_cpu_shares(self, uuid, shares):
        """Set a running domain's CPU weight now (not its definition).

        The definition's ``<cputune><shares>`` is Nova's (flavor
        ``quota:cpu_shares``); the agent's value follows the traffic and
        is written again after the domain starts again.

        :returns: ``(outcome, value read back)``: ``applied`` when libvirt
            reports the new value, ``unconfirmed`` when the call succeeded
            but the driver reports another value (the test driver keeps no
            weight).
        :raises SharesUnsupported: when the domain has no CPU weight.
        :raises libvirt.libvirtError: when libvirt refuses the value.
        """
        found = self._cpu_shares(uuid)
        if found is None:
            raise SharesUnsupported(uuid=uuid)
        _, name, _ = found
        dom = self._connection().lookupByUUIDString(uuid)
        try:
            dom.setSchedulerParametersFlags({name: int(shares)},
                                            libvirt.VIR_DOMAIN_AFFECT_LIVE)
        except libvirt.libvirtError as exc:
            if exc.get_error_code() not in (libvirt.VIR_ERR_INVALID_ARG,
                                            libvirt.VIR_ERR_NO_SUPPORT):
                raise
            # Drivers without the flags variant: without flags the call
            # changes the running domain.
            dom.setSchedulerParameters({name: int(shares)})
        after = dom.schedulerParameters().get(name)
        return ('applied' if after == int(shares) else 'unconfirmed'), after


class EventWatcher:
    """Calls ``callback(instance uuid, event name)`` on lifecycle events.

    libvirt delivers events through its default event loop, run here in a
    daemon thread; the callback must return quickly (the manager's
    ``instance_changed`` queues and returns). A supervisor thread keeps the
    subscription: when libvirt is down at start, or libvirtd restarts (the
    connection closes or stops answering), it connects and subscribes again
    every ``retry_interval`` seconds and then calls ``on_reconnect()`` (the
    manager reconciles, as events may have been missed meanwhile).
    """

    _loop_started = False
    _loop_lock = threading.Lock()

    def __init__(self, uri, callback, on_reconnect=None, retry_interval=10,
                 check_interval=5, timeout=DEFAULT_TIMEOUT):
        self.uri = uri
        # Its own worker: a hung subscription never holds the agent's
        # libvirt calls (nor they it).
        self.dependency = deadline.Dependency('libvirt-events', timeout)
        self.callback = callback
        self.on_reconnect = on_reconnect
        self.retry_interval = retry_interval
        self.check_interval = check_interval
        self.subscriptions = 0           # how many times it subscribed
        self.connected = threading.Event()
        self._conn = None
        self._cb_id = None
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread = None

    @classmethod
    def _start_loop(cls):
        with cls._loop_lock:
            if cls._loop_started:
                return
            libvirt.virEventRegisterDefaultImpl()
            thread = threading.Thread(target=cls._run, name='libvirt-events',
                                      daemon=True)
            thread.start()
            cls._loop_started = True

    @staticmethod
    def _run():
        while True:
            libvirt.virEventRunDefaultImpl()

    def _on_event(self, conn, dom, event, detail, opaque):
        name = LIFECYCLE.get(event, str(event))
        try:
            self.callback(dom.UUIDString().lower(), name)
        except Exception:
            LOG.exception('Handling libvirt event %s of %s failed', name,
                          dom.UUIDString())

    def _on_close(self, conn, reason, opaque):
        LOG.warning('The libvirt connection to %s closed (reason %s, e.g. '
                    'libvirtd restarted); subscribing to its events again',
                    self.uri, reason)
        self.connection_lost()

    def connection_lost(self):
        """Drop the subscription and subscribe again (libvirt went away)."""
        self.connected.clear()
        self._wake.set()

    def start(self):
        """Subscribe (or keep trying in the background); never raises."""
        self._start_loop()
        self._stop.clear()
        self._wake.clear()
        subscribed = self._try_subscribe(log_failure=True)
        self._thread = threading.Thread(target=self._supervise,
                                        args=(subscribed,),
                                        name='libvirt-event-watcher',
                                        daemon=True)
        self._thread.start()

    def _try_subscribe(self, log_failure):
        try:
            self.dependency.call(self._subscribe)
        except (libvirt.libvirtError, deadline.DependencyHung) as exc:
            if log_failure:
                LOG.warning('Cannot watch libvirt events on %s (%s); '
                            'retrying every %s s, the periodic reconcile '
                            'enforces meanwhile', self.uri,
                            _message(exc), self.retry_interval)
            return False
        LOG.info('Watching libvirt (%s) domain lifecycle events', self.uri)
        self.connected.set()
        return True

    def _subscribe(self):
        conn = libvirt.open(self.uri)
        try:
            try:
                conn.registerCloseCallback(self._on_close, None)
            except libvirt.libvirtError:
                pass  # drivers without it: isAlive() polling covers them
            cb_id = conn.domainEventRegisterAny(
                None, libvirt.VIR_DOMAIN_EVENT_ID_LIFECYCLE, self._on_event,
                None)
        except BaseException:
            conn.close()
            raise
        self._conn, self._cb_id = conn, cb_id
        self.subscriptions += 1

    def _drop(self):
        conn, self._conn = self._conn, None
        if conn is None:
            return
        for call in (lambda: conn.domainEventDeregisterAny(self._cb_id),
                     conn.unregisterCloseCallback, conn.close):
            try:
                self.dependency.call(call)
            except (libvirt.libvirtError, deadline.DependencyHung):
                pass

    def _alive(self):
        conn = self._conn
        try:
            return bool(self.dependency.call(conn.isAlive))
        except (libvirt.libvirtError, deadline.DependencyHung):
            return False

    def _supervise(self, subscribed):
        failing = not subscribed
        while not self._stop.is_set():
            if not subscribed:
                self._wake.clear()
                if not self._try_subscribe(log_failure=not failing):
                    failing = True
                    self._stop.wait(self.retry_interval)
                    continue
                subscribed = True
                # Events were missed while nobody listened: catch up.
                if self.on_reconnect is not None:
                    try:
                        self.on_reconnect()
                    except Exception:
                        LOG.exception('Catching up after the libvirt '
                                      'connection came back failed')
            failing = False
            while not self._stop.is_set() and not self._wake.is_set():
                self._wake.wait(self.check_interval)
                if self._conn is not None and not self._alive():
                    LOG.warning('The libvirt connection to %s stopped '
                                'answering; subscribing again', self.uri)
                    break
            self.connected.clear()
            self._drop()
            subscribed = False

    def stop(self):
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self._drop()
