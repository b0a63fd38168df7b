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
"""Open vSwitch DPDK ports through ovsdbapp: the agent's thin OVS adapter.

The agent owns exactly these keys and never writes any other:

* ``options:n_rxq_desc`` and ``options:n_txq_desc`` on interfaces of type
  ``dpdk`` (physical ports, where the NIC DMAs into DDIO's ways). OVS
  applies them only to ``dpdk`` interfaces; a vhost-user port's ring size
  belongs to the guest's virtio device (QEMU ``rx_queue_size``).
* ``ingress_policing_rate``, ``ingress_policing_burst`` and
  ``external_ids:resq_policed`` on the entry port of a chain NFVnice's
  backpressure throttles (:mod:`resq_agent.nfvnice`), only where no
  operator set a policer.
* ``external_ids:resq_mbuf_budget`` on an instance's vhost-user interfaces,
  found by ``external_ids:vm-uuid`` which os-vif sets to the Nova instance
  UUID (next to ``iface-id``, the Neutron port). It is informational: it
  shows operators what the guest was told.

Every write compares first, so repeating a call changes nothing.
"""

import dataclasses
import os
import threading

from oslo_log import log as logging
from ovsdbapp.backend.ovs_idl import connection
from ovsdbapp.schema.open_vswitch import impl_idl

from resq_common import deadline
from resq_profiler import exception

LOG = logging.getLogger(__name__)

RX_KEY = 'n_rxq_desc'
TX_KEY = 'n_txq_desc'
BUDGET_KEY = 'resq_mbuf_budget'
VM_UUID_KEY = 'vm-uuid'
POLICED_KEY = 'resq_policed'
NIC_TYPES = ('dpdk',)
VHOST_TYPES = ('dpdkvhostuser', 'dpdkvhostuserclient')
# Ports behind which an instance receives packets: vhost-user (DPDK
# datapath) and the tap devices of the kernel datapath (type "" or
# "system" in the database, "tap" on the netdev datapath). On each, OVS's
# tx counters are the packets it delivered to the guest and tx_dropped the
# ones the guest's queue had no room for.
GUEST_TYPES = VHOST_TYPES + ('', 'system', 'tap')


@dataclasses.dataclass(frozen=True)
class NicPort:
    """A physical DPDK port.

    ``numa_id`` comes from ``status:numa_id`` (None when unknown),
    ``rx_queues`` from ``options:n_rxq``.
    """

    name: str
    numa_id: int = None
    rx_queues: int = 1


class OvsUnavailable(exception.ResQException):
    msg_fmt = ('Open vSwitch database %(connection)s is unreachable '
               '(%(reason)s); check [resq_agent] ovsdb_connection and that '
               'ovsdb-server runs. DPDK port rings stay as they are; the '
               'agent retries at the next reconcile.')


class _NoWaitTransaction(impl_idl.OvsVsctlTransaction):
    def pre_commit(self, txn):
        # Commands such as add_port record the interfaces they add here.
        txn.expected_ifaces = set()

    def do_post_commit(self, txn):
        pass


class NoWaitOvsdbIdl(impl_idl.OvsdbIdl):
    """ovsdbapp's Open vSwitch API committing like ``ovs-vsctl --no-wait``.

    The default transaction bumps ``next_cfg`` and blocks until
    ovs-vswitchd acknowledges it; the agent only needs the database
    written (vswitchd reconfigures on any change) and must not stall its
    reconcile on a busy or absent vswitchd.
    """

    # ovsdbapp keeps one connection per API class, the first one ever
    # made; an adapter (or a test) that talks to another server needs its
    # own, so keep it per instance.
    @property
    def ovsdb_connection(self):
        return self._connection

    @ovsdb_connection.setter
    def ovsdb_connection(self, value):
        self._connection = value

    def create_transaction(self, check_error=False, log_errors=True, **kw):
        return _NoWaitTransaction(self, self.ovsdb_connection,
                                  check_error=check_error,
                                  log_errors=log_errors)


class OvsPorts:
    """The DPDK interfaces of the local Open vSwitch.

    :param connection_string: ovsdbapp form, ``unix:PATH`` or
        ``tcp:IP:PORT``.
    :param timeout: seconds per OVSDB transaction.
    """

    def __init__(self, connection_string, timeout=10):
        self.connection_string = connection_string
        self.timeout = timeout
        self._api = None
        self._lock = threading.Lock()
        # python-ovs's first connection has no timeout of its own (it
        # waits for the schema for good): every OVSDB call, connecting
        # included, runs on this dependency's worker with a deadline.
        self.dependency = deadline.Dependency('ovsdb', timeout)

    @classmethod
    def from_conf(cls, conf):
        """An adapter for ``[resq_agent] ovsdb_connection``, or None."""
        opts = conf.resq_agent
        if not opts.ovsdb_connection:
            return None
        return cls(opts.ovsdb_connection, opts.ovsdb_timeout)

    def _bounded(self, fn, *args):
        try:
            return self.dependency.call(fn, *args)
        except OvsUnavailable:
            raise
        except Exception as exc:
            raise OvsUnavailable(connection=self.connection_string,
                                 reason=exc or type(exc).__name__)

    def _open(self):
        kind, _, path = self.connection_string.partition(':')
        if kind == 'unix' and not os.path.exists(path):
            # Said here, once, rather than by python-ovs's ERROR line at
            # every attempt.
            raise OvsUnavailable(connection=self.connection_string,
                                 reason='no socket at %s' % path)
        idl = connection.OvsdbIdl.from_server(self.connection_string,
                                              'Open_vSwitch')
        return NoWaitOvsdbIdl(connection.Connection(idl,
                                                    timeout=self.timeout))

    def _connect(self):
        with self._lock:
            if self._api is not None:
                return self._api
        api = self._bounded(self._open)
        with self._lock:
            if self._api is None:
                self._api = api
                return api
        # Another thread connected meanwhile: keep one connection.
        api.ovsdb_connection.stop()
        return self._api

    def close(self):
        with self._lock:
            api, self._api = self._api, None
        if api is not None:
            api.ovsdb_connection.stop()

    def ping(self):
        """Connect and read; raises :class:`OvsUnavailable` otherwise."""
        self._interfaces(NIC_TYPES)

    @staticmethod
    def _transact(api, commands):
        with api.transaction(check_error=True) as txn:
            for cmd in commands:
                txn.add(cmd)
        return [cmd.result for cmd in commands]

    def _run(self, *commands):
        """Execute commands in one transaction; reads return their results.

        An established connection reconnects by itself when ovsdb-server
        comes back; only a failed first connection is retried from scratch.
        """
        return self._bounded(self._transact, self._connect(), commands)

    def _interfaces(self, types):
        api = self._connect()
        rows = self._run(api.db_find(
            'Interface',
            columns=['name', 'type', 'options', 'status', 'external_ids']))
        return sorted((r for r in rows[0] if r['type'] in types),
                      key=lambda r: r['name'])

    # -- reading --------------------------------------------------------
    def nic_ports(self):
        """Physical DPDK ports as :class:`NicPort` objects."""
        ports = []
        for row in self._interfaces(NIC_TYPES):
            numa = row['status'].get('numa_id')
            ports.append(NicPort(
                row['name'],
                int(numa) if numa and numa.lstrip('-').isdigit() else None,
                _int(row['options'].get('n_rxq'), 1)))
        return sorted(ports, key=lambda p: p.name)

    def rings(self):
        """``{name: (n_rxq_desc, n_txq_desc)}`` of the physical ports.

        None where unset: OVS then uses 2048.
        """
        return {r['name']: (_int(r['options'].get(RX_KEY)),
                            _int(r['options'].get(TX_KEY)))
                for r in self._interfaces(NIC_TYPES)}

    def instance_ports(self):
        """``{instance uuid: [vhost-user interface names]}``."""
        found = {}
        for row in self._interfaces(VHOST_TYPES):
            uuid = row['external_ids'].get(VM_UUID_KEY)
            if uuid:
                found.setdefault(uuid, []).append(row['name'])
        return found

    # -- writing ----------------------------------------------------------
    def set_rings(self, rings):
        """Set both ring sizes of each named physical port.

        :param rings: ``{port name: descriptors}``.
        :returns: the names whose options changed.
        """
        current = self.rings()
        api = self._connect()
        cmds, changed = [], []
        for name, desc in sorted(rings.items()):
            if name not in current:
                LOG.warning('DPDK port %s disappeared before its rings '
                            'could be sized', name)
                continue
            if current[name] == (desc, desc):
                continue
            cmds.append(api.db_set('Interface', name, (
                'options', {RX_KEY: str(desc), TX_KEY: str(desc)})))
            changed.append(name)
        if cmds:
            self._run(*cmds)
        return changed

    def set_instance_budgets(self, budgets):
        """Record guest budgets on the instances' vhost-user interfaces.

        :param budgets: ``{instance uuid: mbufs}``; the key is removed from
            interfaces of instances that have no budget any more.
        :returns: the interface names that changed.
        """
        api = self._connect()
        cmds, changed = [], []
        for row in self._interfaces(VHOST_TYPES):
            uuid = row['external_ids'].get(VM_UUID_KEY)
            have = row['external_ids'].get(BUDGET_KEY)
            want = budgets.get(uuid)
            if want is not None and have != str(want):
                cmds.append(api.db_set('Interface', row['name'], (
                    'external_ids', {BUDGET_KEY: str(want)})))
            elif want is None and have is not None:
                cmds.append(api.db_remove('Interface', row['name'],
                                          'external_ids', BUDGET_KEY))
            else:
                continue
            changed.append(row['name'])
        if cmds:
            self._run(*cmds)
        return changed

    # -- NFVnice: statistics and ingress policing -----------------------------
    def interfaces(self):
        """Every interface as ``{name: InterfaceState}``.

        ``statistics`` is what ovs-vswitchd last published (every few
        seconds, ``other_config:stats-update-interval``).
        """
        api = self._connect()
        # Reads come from the client's replica, which outlives the server:
        # statistics must be live, not the last ones before it went away.
        # python-ovs exposes the session state only on the (private)
        # session object; without it, trust the replica.
        session = getattr(api.ovsdb_connection.idl, '_session', None)
        if session is not None and not session.is_connected():
            raise OvsUnavailable(connection=self.connection_string,
                                 reason='not connected, statistics would be '
                                 'stale')
        rows = self._run(api.db_find(
            'Interface', columns=['name', 'type', 'statistics',
                                  'external_ids', 'ingress_policing_rate',
                                  'ingress_policing_burst']))[0]
        return {r['name']: InterfaceState(
            r['name'], r['type'], dict(r['statistics']),
            dict(r['external_ids']), r['ingress_policing_rate'],
            r['ingress_policing_burst']) for r in rows}

    def set_policing(self, wanted):
        """Set or remove the agent's ingress policers.

        The agent owns a policer when the interface carries
        ``external_ids:resq_policed`` (the chain's name); it never changes
        or removes a policer an operator set (a rate without the key).

        :param wanted: ``{interface name: (rate kbps, burst kb, chain)}``;
            the agent's policers on other interfaces are removed.
        :returns: ``[(name, outcome, detail)]``, outcome one of ``set``,
            ``released``, ``missing`` (no such interface) or ``foreign``
            (an operator's policer is there).
        """
        api = self._connect()
        current = self.interfaces()
        cmds, results = [], []
        for name, (rate, burst, chain) in sorted(wanted.items()):
            row = current.get(name)
            if row is None:
                results.append((name, 'missing', chain))
                continue
            owner = row.external_ids.get(POLICED_KEY)
            if owner is None and row.policing_rate:
                results.append((name, 'foreign', chain))
                continue
            if (row.policing_rate, row.policing_burst, owner) == (
                    rate, burst, chain):
                continue
            cmds.append(api.db_set(
                'Interface', name, ('ingress_policing_rate', int(rate)),
                ('ingress_policing_burst', int(burst)),
                ('external_ids', {POLICED_KEY: chain})))
            results.append((name, 'set', chain))
        for name, row in sorted(current.items()):
            owner = row.external_ids.get(POLICED_KEY)
            if owner is None or name in wanted:
                continue
            cmds.append(api.db_set('Interface', name,
                                   ('ingress_policing_rate', 0),
                                   ('ingress_policing_burst', 0)))
            cmds.append(api.db_remove('Interface', name, 'external_ids',
                                      POLICED_KEY))
            results.append((name, 'released', owner))
        if cmds:
            self._run(*cmds)
        return results


@dataclasses.dataclass(frozen=True)
class InterfaceState:
    name: str
    type: str
    statistics: dict
    external_ids: dict
    policing_rate: int = 0
    policing_burst: int = 0

    @property
    def instance_uuid(self):
        return self.external_ids.get(VM_UUID_KEY)


def _int(value, default=None):
    try:
        return int(value)
    except (TypeError, ValueError):
        return default
