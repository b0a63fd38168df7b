"""NFVnice's fast path on a real Open vSwitch: the agent's period, and
what backpressure does to the chains it does not mean.

ovs-vswitchd runs on its dummy datapath (tests/fixtures/vswitchd.py) with
one entry port that 30 chains of four NFs share, told apart by VLAN, and
120 NF ports; libvirt's test driver holds the 120 instances, four per
pinned core. Every round the benchmark injects packets for every chain,
makes the first NF of a rotating third of the chains drop packets (the
dummy ports keep no ``tx_dropped``: that signal is injected, the rest is
the switch's), and times one ``Controller.run_once()`` with
``nfvnice_bridge`` set: port and meter counters over OpenFlow, rates,
measured costs, shares (libvirt), backpressure and the meter writes.

* ``pass_ms_p50``, ``pass_ms_p95``, ``pass_ms_max``: the pass.
* ``period_ms``: the shortest period of :data:`LADDER` at least twice the
  95th percentile pass, so NFVnice takes at most half of the agent's
  time: the period the agent really holds here.
* ``other_chain_loss_pct``: with chain 0 backpressured, the share of
  chain 1's packets (same entry port, same load) that its meter held
  back; ``congested_chain_held_pct``: the same for chain 0. (Counted by
  the meters, not at the NF ports: the dummy datapath's own upcall queue
  may drop some packets of a burst injected at once, whatever the
  agent does.)
"""

import json
import os
import statistics
import time
import uuid

from oslo_config import cfg

from resq_agent import conf as agent_conf
from resq_agent.nfvnice import controller
from resq_agent import ovs
from resq_agent import privsep
from resq_agent.privsep import openflow as privsep_openflow
from resq_agent import virt
from tests.fixtures import libvirt as libvirt_fixture
from tests.fixtures import vswitchd

LADDER = (5, 10, 20, 50, 100, 200, 500, 1000, 2000)


def _uuid(chain, pos):
    return str(uuid.UUID(int=(0xFA57 << 64) + chain * 16 + pos))


class _Dropping:
    """The privileged functions, with chosen NF ports dropping."""

    def __init__(self):
        self.dropping = {}        # port -> drops so far

    def __getattr__(self, name):
        return getattr(privsep_openflow, name)

    def port_stats(self):
        stats = privsep_openflow.port_stats()
        for name, counters in stats.items():
            counters['tx_dropped'] = self.dropping.get(name, 0)
        return stats


def _setup(switch, doms, chains, length):
    switch.add_port('dpdk0', 1)
    doc = {'chains': []}
    for c in range(chains):
        for p in range(length):
            switch.add_port('vhu%d-%d' % (c, p), 2 + c * length + p,
                            vm=_uuid(c, p))
            doms.add(_uuid(c, p), (c,))
        switch.ofctl('add-flow', 'priority=10,in_port=dpdk0,dl_vlan=%d,'
                     'actions=output:vhu%d-0' % (100 + c, c))
        doc['chains'].append({
            'name': 'chain%d' % c, 'entry_port': 'dpdk0',
            'match': 'dl_vlan=%d' % (100 + c),
            'instances': [_uuid(c, p) for p in range(length)]})
    return doc


def _conf(switch, path):
    conf = cfg.ConfigOpts()
    agent_conf.register_opts(conf)
    conf([], project='resq', default_config_files=[])
    for key, value in (('libvirt_uri', libvirt_fixture.URI),
                       ('ovsdb_connection', switch.ovsdb.connection),
                       ('nfvnice', True), ('nfvnice_chains_file', path),
                       ('nfvnice_bridge', switch.target),
                       ('backpressure', True), ('policing_min_kbps', 100),
                       ('backpressure_clear_passes', 1)):
        conf.set_override(key, value, 'resq_agent')
    privsep.openflow_pctxt.use_conf(conf)
    privsep.openflow_pctxt.set_client_mode(False)
    return conf


def _isolation(switch, conf, ports):
    """Backpressure chain 0, offer chains 0 and 1 the same load.

    A new agent (its first pass clears and reinstalls every meter), so no
    chain is still held back from the timed rounds.
    """
    ops = _Dropping()
    ctl = controller.Controller(conf, virt.Hypervisor(libvirt_fixture.URI),
                                ports, openflow_ops=ops)
    ctl.run_once()
    ops.dropping = {'vhu0-0': 10 ** 6}
    switch.receive('dpdk0', [vswitchd.frame(100, 1000)] * 100)
    summary = ctl.run_once()
    assert summary['chains']['chain0']['rate_kbps'], summary['chains']
    meters = (ctl.meters.meter_of('chain0'), ctl.meters.meter_of('chain1'))
    before = privsep_openflow.meter_stats()
    offered = 1000
    frames = []
    for _ in range(offered):
        frames += [vswitchd.frame(100, 1000), vswitchd.frame(101, 1000)]
    switch.receive('dpdk0', frames)
    after = privsep_openflow.meter_stats()
    held = []
    for meter in meters:
        packets = after[meter][0] - before[meter][0]
        dropped = after[meter][2] - before[meter][2]
        held.append(100.0 * dropped / packets if packets else None)
    # Chain 1's packets its meter held back (the agent's doing), and
    # chain 0's.
    return held[1], held[0]


def measure(chains=30, length=4, rounds=20):
    """The figures of the module's docstring, as a dict."""
    switch, doms = vswitchd.VSwitch(), libvirt_fixture.NovaDomains()
    switch.setUp()
    doms.setUp()
    try:
        doc = _setup(switch, doms, chains, length)
        path = os.path.join(switch.dir, 'chains.json')
        with open(path, 'w') as f:
            json.dump(doc, f)
        conf = _conf(switch, path)
        ports = ovs.OvsPorts(switch.ovsdb.connection, 10)
        ops = _Dropping()
        ctl = controller.Controller(
            conf, virt.Hypervisor(libvirt_fixture.URI), ports,
            openflow_ops=ops)
        times, writes = [], []
        for rnd in range(rounds + 1):
            frames = [vswitchd.frame(100 + c, 500) for c in range(chains)]
            switch.receive('dpdk0', frames * 4)
            ops.dropping = {'vhu%d-0' % c: 100 * rnd
                            for c in range(rnd % 3, chains, 3)}
            t0 = time.monotonic()
            summary = ctl.run_once()
            elapsed = time.monotonic() - t0
            assert not summary['errors'], summary['errors']
            if rnd:
                times.append(elapsed * 1000)
                writes.append(sum(1 for a in summary['actions']
                                  if a['action'] in ('meter', 'cpu_shares')))
        other, held = _isolation(switch, conf, ports)
        ports.close()
    finally:
        privsep.openflow_pctxt.set_client_mode(True)
        doms.cleanUp()
        switch.cleanUp()
    times.sort()
    p95 = times[min(len(times) - 1, int(round(0.95 * (len(times) - 1))))]
    period = next((p for p in LADDER if p >= 2 * p95), LADDER[-1])
    return {'instances': chains * length, 'chains': chains,
            'pass_ms_p50': round(statistics.median(times), 2),
            'pass_ms_p95': round(p95, 2),
            'pass_ms_max': round(times[-1], 2),
            'writes_per_pass': round(statistics.mean(writes), 1),
            'period_ms': period,
            'other_chain_loss_pct': round(other, 2),
            'congested_chain_held_pct': round(held, 2)}


def main(argv):
    if argv and argv[0] == '--profile':
        import cProfile
        import pstats
        prof = cProfile.Profile()
        prof.runcall(measure, rounds=5)
        pstats.Stats(prof).sort_stats('cumulative').print_stats(25)
        return 0
    figures = measure()
    print()
    print('NFVnice fast path: %d instances, %d chains on one entry port, '
          'real ovs-vswitchd (dummy datapath), libvirt test:///default'
          % (figures['instances'], figures['chains']))
    for key in ('pass_ms_p50', 'pass_ms_p95', 'pass_ms_max',
                'writes_per_pass', 'period_ms', 'other_chain_loss_pct',
                'congested_chain_held_pct'):
        print('%-32s %10s' % (key, figures[key]))
    figures['benchmark'] = 'nfvnice_fastpath'
    print(json.dumps(figures, sort_keys=True))
    return 0
