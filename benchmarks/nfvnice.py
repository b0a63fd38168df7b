"""One NFVnice pass of the agent, at scale.

A real ovsdb-server (started here, in a temporary directory) holds 120
vhost-user interfaces (os-vif's shape) and 30 entry ports; libvirt's
test:///default driver holds 120 Nova-shaped on-demand instances, four per
pinned core, in 30 chains of four. Each round the benchmark plays
ovs-vswitchd (publishes new statistics for every interface, in one
transaction), waits until the agent's OVSDB client has them, and times one
``Controller.run_once()``: read libvirt and the OVSDB, compute rates,
shares and chain decisions, write the shares that moved beyond the
hysteresis (libvirt) and the policers that changed (one OVSDB
transaction). The busiest NF of each chain rotates every round, so
nearly every share is rewritten each round (the worst case), and a third
of the chains drop packets three rounds out of six, so policers are set,
held, relaxed and released.

* ``pass_ms_median``, ``pass_ms_max``: the pass, over 20 rounds;
* ``share_writes_per_pass``, ``police_writes_per_pass``: the work done;
* ``compute_us_per_group``: the share computation alone for a group of 4.

There is no target in an issue; it tells how short ``[resq_agent]
nfvnice_interval`` can be (the default is 2 s).
"""

import json
import os
import statistics
import time
import uuid

from oslo_config import cfg

from resq_agent import conf as agent_conf
from resq_agent.nfvnice import controller
from resq_agent.nfvnice import shares
from resq_agent import ovs
from resq_agent import virt
from tests.fixtures import libvirt as libvirt_fixture
from tests.fixtures import ovsdb

CHAINS = 30
LENGTH = 4
ROUNDS = 20


def _uuid(chain, pos):
    return str(uuid.UUID(int=(chain + 1) * 100 + pos))


def _stats(chain, pos, rnd, counters):
    """Advance one vhost port's counters for round ``rnd``."""
    c = counters.setdefault(('vhu', chain, pos), {
        'tx_packets': 0, 'tx_dropped': 0, 'rx_packets': 0, 'rx_bytes': 0})
    # Alternate which NF of the chain is busiest.
    busy = (pos + rnd) % LENGTH == 0
    c['tx_packets'] += 40000 if busy else 10000
    if chain % 3 == 0 and pos == LENGTH - 1 and rnd % 6 < 3:
        c['tx_dropped'] += 2000
    return c


def _entry(chain, counters):
    c = counters.setdefault(('dpdk', chain), {
        'tx_packets': 0, 'tx_dropped': 0, 'rx_packets': 0, 'rx_bytes': 0})
    c['rx_packets'] += 40000
    c['rx_bytes'] += 40000 * 1500
    return c


def _build(server, doms):
    """Interfaces, instances and the chains file; returns its path."""
    chains_doc = {'chains': []}
    api = server.api
    with api.transaction(check_error=True) as txn:
        txn.add(api.add_br('br-int', datapath_type='netdev'))
        txn.add(api.add_br('br-phy', datapath_type='netdev'))
        for c in range(CHAINS):
            name = 'dpdk%d' % c
            txn.add(api.add_port('br-phy', name))
            txn.add(api.db_set('Interface', name, ('type', 'dpdk')))
            for p in range(LENGTH):
                name = 'vhu%d-%d' % (c, p)
                txn.add(api.add_port('br-int', name))
                txn.add(api.db_set(
                    'Interface', name, ('type', 'dpdkvhostuserclient'),
                    ('external_ids', {'vm-uuid': _uuid(c, p)})))
    for c in range(CHAINS):
        # Four NFs of a chain share one pinned core.
        for p in range(LENGTH):
            doms.add(_uuid(c, p), (c,))
        chains_doc['chains'].append({
            'name': 'chain%d' % c, 'entry_port': 'dpdk%d' % c,
            'instances': [{'uuid': _uuid(c, p),
                           'cycles_per_packet': 200 + 100 * p}
                          for p in range(LENGTH)]})
    path = os.path.join(server.dir, 'chains.json')
    with open(path, 'w') as f:
        json.dump(chains_doc, f)
    return path


def _publish(api, ports, rnd, counters):
    """Play ovs-vswitchd: new statistics, then wait until seen."""
    with api.transaction(check_error=True) as txn:
        for c in range(CHAINS):
            txn.add(api.db_set('Interface', 'dpdk%d' % c, (
                'statistics', dict(_entry(c, counters)))))
            for p in range(LENGTH):
                txn.add(api.db_set(
                    'Interface', 'vhu%d-%d' % (c, p), (
                        'statistics', dict(_stats(c, p, rnd, counters)))))
    want = counters[('dpdk', CHAINS - 1)]['rx_packets']
    for _ in range(400):
        seen = ports.interfaces().get('dpdk%d' % (CHAINS - 1))
        if seen and seen.statistics.get('rx_packets') == want:
            return
        time.sleep(0.01)


def _rounds(conf, server):
    """``(pass seconds, share writes, policer writes)`` per round."""
    ports = ovs.OvsPorts(server.connection, 10)
    now = [0.0]
    ctl = controller.Controller(conf, virt.Hypervisor(
        libvirt_fixture.URI), ports, clock=lambda: now[0])
    counters = {}
    times, share_writes, police_writes = [], [], []
    try:
        for rnd in range(ROUNDS + 1):
            _publish(server.api, ports, rnd, counters)
            now[0] += 1.0
            t0 = time.monotonic()
            summary = ctl.run_once()
            elapsed = time.monotonic() - t0
            assert not summary['errors'], summary['errors']
            if rnd == 0:
                continue
            times.append(elapsed)
            share_writes.append(sum(1 for a in summary['actions']
                                    if a['action'] == 'cpu_shares'))
            police_writes.append(sum(1 for a in summary['actions']
                                     if a['action'] == 'police'))
    finally:
        ports.close()
    return times, share_writes, police_writes


def main(argv):
    conf = cfg.ConfigOpts()
    agent_conf.register_opts(conf)
    conf([], project='resq')
    server = ovsdb.OvsdbServer()
    doms = libvirt_fixture.NovaDomains()
    fixtures_ = [server, doms]
    for fx in fixtures_:
        fx.setUp()
    try:
        print('... %d instances, %d chains' % (CHAINS * LENGTH, CHAINS),
              flush=True)
        path = _build(server, doms)
        conf.set_override('nfvnice_chains_file', path, 'resq_agent')
        conf.set_override('backpressure', True, 'resq_agent')
        conf.set_override('backpressure_clear_passes', 1, 'resq_agent')
        times, share_writes, police_writes = _rounds(conf, server)
    finally:
        for fx in reversed(fixtures_):
            fx.cleanUp()
    group = [shares.Demand(str(i), 1000.0 * (i + 1), 300.0)
             for i in range(LENGTH)]
    n = 20000
    t0 = time.monotonic()
    for _ in range(n):
        shares.compute(group)
    compute_us = (time.monotonic() - t0) / n * 1e6
    med = statistics.median(times) * 1000
    print()
    print('NFVnice pass: %d instances (%d per core), %d chains, real '
          'ovsdb-server, libvirt test:///default'
          % (CHAINS * LENGTH, LENGTH, CHAINS))
    print('%-36s %10s' % ('measure', 'value'))
    print('%-36s %10.1f' % ('pass ms (median of %d)' % ROUNDS, med))
    print('%-36s %10.1f' % ('pass ms (max)', max(times) * 1000))
    print('%-36s %10.1f' % ('CPU share writes per pass (mean)',
                            statistics.mean(share_writes)))
    print('%-36s %10.1f' % ('policer writes per pass (mean)',
                            statistics.mean(police_writes)))
    print('%-36s %10.1f' % ('share computation us per group',
                            compute_us))
    figures = {'benchmark': 'nfvnice',
               'instances': CHAINS * LENGTH, 'chains': CHAINS,
               'pass_ms_median': round(med, 2),
               'pass_ms_max': round(max(times) * 1000, 2),
               'share_writes_per_pass': round(
                   statistics.mean(share_writes), 2),
               'police_writes_per_pass': round(
                   statistics.mean(police_writes), 2),
               'compute_us_per_group': round(compute_us, 2)}
    print(json.dumps(figures, sort_keys=True))
    return 0
